"""The upgrade and plan playbooks over two clusters from one inventory, each cluster with two node groups.

Two sandboxes (two clusters, each with the Auto Scaling groups sandbox-nodes and sandbox-nodes-2) are hosts of
the inventory group ``clusters``, each with its own AWS endpoint and kubeconfig; one group rolls to an AMI id,
the other to the AMI an SSM parameter names. Nothing about either cluster comes from the environment.

``ansible-playbook playbooks/upgrade.yml`` must replace every node of both groups of both clusters within every
invariant the sandbox reports; ``playbooks/plan.yml`` with the same inventory must print the plan and change
nothing. The invariant reports, the results and the wall time are written to .build/role-e2e/ for the record.
"""

import json
import os
import subprocess
import sys
import time

import pytest
import yaml

from sandbox.drive.handle import BIN, ROOT, SandboxHandle, collections_path, promised_floor
from tests.integration.awx_artifact import AWX_DOC, artifact, report_lines, shown_json
from tests.integration.doc_outputs import check_or_refresh, fenced

# On the real kube-scheduler, whose default topology spread favours an untainted node, the pods evicted from the first
# group would land on the second group's outdated nodes and move twice, were those not soft-tainted at the start of
# the run (roles/rolling_update/tasks/main.yml): the reference stage runs this test too.
pytestmark = pytest.mark.reference   # also run on the reference backend (scripts/test.sh reference)

CLUSTERS = ("cluster-a", "cluster-b")
GROUPS = ("sandbox-nodes", "sandbox-nodes-2")
NODES_PER_GROUP = 4
AZS = 2
MAX_UNAVAILABLE = 2
# The role's surge when rolling_update_max_surge is empty (docs/how-a-rollout-works.md): the EKS rule, the larger of
# twice the group's AZs and the batch size, never more than the outdated instances.
SURGE = min(max(2 * AZS, MAX_UNAVAILABLE), NODES_PER_GROUP)
TAINT_PREFIX = "nodeops.rollout/"
RECORD_DIR = os.path.join(ROOT, ".build", "role-e2e")
DEMO = os.path.join(ROOT, "sandbox", "workloads", "demo.yaml")


def start_clusters(tmp_path_factory):
    handles = {}
    try:
        for name in CLUSTERS:
            handles[name] = SandboxHandle.start(str(tmp_path_factory.mktemp(name)), nodes=NODES_PER_GROUP, azs=AZS,
                                                groups=len(GROUPS), speed=20.0, workloads=[DEMO])
    except BaseException:
        for handle in handles.values():
            handle.stop()
        raise
    return handles


def write_inventory(path, handles, report_dir=None):
    """One inventory for both clusters: each host carries its own auth and its two node groups."""
    hosts = {}
    for name, handle in handles.items():
        host = {
            "ansible_python_interpreter": sys.executable,
            "rolling_update_aws": {"region": handle.state["region"], "endpoint_url": handle.state["aws_url"],
                                   "access_key": "testing", "secret_key": "testing"},
            "rolling_update_k8s": {"kubeconfig": handle.collection_kubeconfig},
            "rolling_update_node_groups": [
                {"name": GROUPS[0], "image_id": handle.state["amis"]["new"]},
                {"name": GROUPS[1], "ssm_parameter": handle.state["ssm_parameter"]},
            ],
        }
        if report_dir:
            host["rolling_update_report_file"] = os.path.join(report_dir, "result-%s.json" % name)
        hosts[name] = host
    inventory = {"clusters": {
        "hosts": hosts,
        "vars": {"rolling_update_max_unavailable": MAX_UNAVAILABLE, "rolling_update_post_drain_delay": 1,
                 "rolling_update_validate_interval": "1s", "rolling_update_validate_passes": 1,
                 "rolling_update_node_ready_timeout": "5m", "rolling_update_drain_timeout": "2m"},
    }}
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(inventory, fh, sort_keys=False)
    return path


def playbook_env():
    """The environment of an operator's shell: collections found, but no cluster's endpoint, key or kubeconfig."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "K8S_AUTH_")) and k not in ("KUBECONFIG", "ANSIBLE_PYTHON_INTERPRETER")}
    env.update({"ANSIBLE_COLLECTIONS_PATH": collections_path(), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_RETRY_FILES_ENABLED": "0", "PATH": BIN + os.pathsep + env.get("PATH", "")})
    return env


def run_playbook(playbook, inventory, log_path, timeout=1800, env=None):
    started = time.monotonic()
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", inventory, os.path.join(ROOT, "playbooks", playbook)],
                          cwd=ROOT, env=dict(playbook_env(), **(env or {})), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, check=False)
    seconds = time.monotonic() - started
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as fh:
        fh.write(proc.stdout)
    return proc.returncode, proc.stdout, seconds


# ---- what a user would look at afterwards ----------------------------------------------------------------------

def key_numbers(report):
    return {
        "pdb_violations": report["pdb_violations"],
        "killed_without_eviction": report["killed_without_eviction"],
        "deleted_without_eviction": report["deleted_without_eviction"],
        "min_ready_schedulable_nodes": report["min_ready_schedulable_nodes"],
        "ready_schedulable_nodes_at_start": report["ready_schedulable_nodes_at_start"],
        "evictions": report["evictions"],
        "deployments": report["deployments"],
        "nodes_replaced": report["nodes_replaced"],
        "rollout_requests_per_replaced_node": report["rollout_requests_per_replaced_node"],
        "asg_sizes": {group: [(h["min"], h["max"], h["desired"]) for h in history]
                      for group, history in report["asg_size_history"].items()},
    }


def assert_safe(name, report):
    """No budget violated, no pod ended without an eviction, the node floor the docs promise held (N - max_unavailable
    Ready schedulable nodes per group, tainted and cordoned nodes not counted), each pod moved at most once."""
    assert report["window"]["opened_by_client"], "%s: the rollout made no change at all" % name
    assert report["pdb_violations"] == 0, (name, report["pdb_violation_details"])
    assert report["killed_without_eviction"] == 0, (name, report["killed_without_eviction_details"])
    assert report["deleted_without_eviction"] == 0, (name, report["deleted_without_eviction_details"])
    for group in GROUPS:
        at_start = report["ready_schedulable_nodes_at_start"][group]
        assert at_start == NODES_PER_GROUP, (name, group, at_start)
        assert report["min_ready_schedulable_nodes"][group] >= at_start - MAX_UNAVAILABLE, \
            (name, group, report["min_ready_schedulable_nodes"])
        # "Capacity during the upgrade": never below original size - max_unavailable, whatever the surge
        assert report["min_ready_schedulable_nodes"][group] >= promised_floor(NODES_PER_GROUP, MAX_UNAVAILABLE), \
            (name, group, "below the Ready schedulable nodes the docs promise", report["min_ready_schedulable_nodes"])
    evictions = report["evictions"]
    assert evictions["max_evictions_per_pod"] <= 1, (name, evictions)
    assert evictions["evicted_born_during_rollout"] == 0, (name, evictions)
    for deployment, numbers in report["deployments"].items():
        assert numbers["zero_ready_seconds"] == 0, (name, deployment, numbers)


def max_raises(history):
    raises, previous = 0, history[0]["max"]
    for entry in history:
        if entry["max"] > previous:
            raises += 1
        previous = entry["max"]
    return raises


def assert_rolled(name, handle, report):
    """Every instance on the target, sizes back, and nothing of the rollout left on groups or nodes."""
    autoscaling, ec2 = handle.aws("autoscaling"), handle.aws("ec2")
    described = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=list(GROUPS))["AutoScalingGroups"]
    assert sorted(g["AutoScalingGroupName"] for g in described) == sorted(GROUPS)
    node_names = []
    for group in described:
        group_name = group["AutoScalingGroupName"]
        history = report["asg_size_history"][group_name]
        original = history[0]
        assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == \
            (original["min"], original["max"], original["desired"]), (name, group_name, history)
        assert max_raises(history) == 1, (name, group_name, "surged more than once", history)
        assert not group.get("SuspendedProcesses"), (name, group_name, group["SuspendedProcesses"])
        leftover = [t["Key"] for t in group.get("Tags") or [] if t["Key"].startswith(TAINT_PREFIX)]
        assert leftover == [], (name, group_name, "state tags left", leftover)

        version = str(group["LaunchTemplate"]["Version"])
        assert version.isdigit() and int(version) > 1, (name, group_name, group["LaunchTemplate"])
        instances = group["Instances"]
        assert len(instances) == original["desired"], (name, group_name, instances)
        assert {i["LifecycleState"] for i in instances} == {"InService"}, (name, group_name, instances)
        assert {str(i["LaunchTemplate"]["Version"]) for i in instances} == {version}, (name, group_name, instances)
        reservations = ec2.describe_instances(InstanceIds=[i["InstanceId"] for i in instances])["Reservations"]
        described_instances = [i for r in reservations for i in r["Instances"]]
        assert {i["ImageId"] for i in described_instances} == {handle.state["amis"]["new"]}, (name, group_name)
        node_names += [i["PrivateDnsName"] for i in described_instances]

    nodes = handle.core().list_node().items
    assert sorted(n.metadata.name for n in nodes) == sorted(node_names), (name, "nodes and instances differ")
    for node in nodes:
        ready = [c.status for c in node.status.conditions or [] if c.type == "Ready"]
        assert ready == ["True"], (name, node.metadata.name, "not Ready")
        assert not node.spec.unschedulable, (name, node.metadata.name, "left cordoned")
        taints = [t.key for t in node.spec.taints or [] if t.key.startswith(TAINT_PREFIX)]
        assert taints == [], (name, node.metadata.name, taints)
        assert "node.kubernetes.io/exclude-from-external-load-balancers" not in (node.metadata.labels or {}), \
            (name, node.metadata.name, "left out of load balancers")
    for deployment in handle.apps().list_deployment_for_all_namespaces().items:
        assert (deployment.status.ready_replicas or 0) == deployment.spec.replicas, \
            (name, deployment.metadata.name, deployment.status)
    assert report["nodes_replaced"] == NODES_PER_GROUP * len(GROUPS), (name, report["nodes_replaced"])
    assert report["evictions"]["evicted_pre_existing"] > 0, (name, report["evictions"])


# ---- tests ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def upgraded(tmp_path_factory):
    """Both clusters rolled by one ansible-playbook run of the upgrade playbook."""
    handles = start_clusters(tmp_path_factory)
    try:
        work = str(tmp_path_factory.mktemp("upgrade"))
        inventory = write_inventory(os.path.join(work, "inventory.yml"), handles, report_dir=work)
        # the job's artifact printed at the end, as AWX would keep it (docs/awx.md shows it)
        rc, output, seconds = run_playbook("upgrade.yml", inventory, os.path.join(RECORD_DIR, "upgrade-2x2.log"),
                                           env={"ANSIBLE_SHOW_CUSTOM_STATS": "true"})
        reports = {name: handle.report() for name, handle in handles.items()}
        results = {}
        for name in CLUSTERS:
            path = os.path.join(work, "result-%s.json" % name)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as fh:
                    results[name] = json.load(fh)
        record = {"playbook": "playbooks/upgrade.yml", "clusters": len(CLUSTERS), "groups_per_cluster": len(GROUPS),
                  "nodes_per_group": NODES_PER_GROUP, "azs": AZS, "max_unavailable": MAX_UNAVAILABLE,
                  "speed": 20.0, "rc": rc, "wall_seconds": round(seconds, 1),
                  "reports": {name: key_numbers(report) for name, report in reports.items()},
                  "results": {name: [{k: g.get(k) for k in ("name", "status", "nodes_replaced", "evictions", "seconds",
                                                            "phase_seconds")} for g in result["node_groups"]]
                              for name, result in results.items()}}
        os.makedirs(RECORD_DIR, exist_ok=True)
        with open(os.path.join(RECORD_DIR, "two-clusters.json"), "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=2, sort_keys=True)
        print("\n2x2 rollout: rc %d in %.1f s wall\n%s" % (rc, seconds, json.dumps(record["reports"], indent=1, sort_keys=True)))
        yield {"handles": handles, "rc": rc, "output": output, "reports": reports, "results": results}
    finally:
        for handle in handles.values():
            handle.stop()


def test_upgrade_rolls_both_groups_of_both_clusters_within_every_invariant(upgraded):
    assert upgraded["rc"] == 0, upgraded["output"][-4000:]
    for name, handle in upgraded["handles"].items():
        report = upgraded["reports"][name]
        assert_safe(name, report)
        assert_rolled(name, handle, report)


def test_upgrade_result_lists_both_groups_replaced_per_cluster(upgraded):
    assert upgraded["rc"] == 0, upgraded["output"][-4000:]
    assert sorted(upgraded["results"]) == sorted(CLUSTERS)
    for name, result in upgraded["results"].items():
        groups = result["node_groups"]
        assert [g["name"] for g in groups] == list(GROUPS), (name, groups)
        assert [g["status"] for g in groups] == ["replaced", "replaced"], (name, groups)
        assert [int(g["nodes_replaced"]) for g in groups] == [NODES_PER_GROUP, NODES_PER_GROUP], (name, groups)
        assert result["changed"] is True
        for group in groups:
            assert group["batches"], (name, group["name"], "no batch recorded")
            assert int(group["evictions"]) > 0 or group["restarted"], (name, group["name"], group)
    assert "cluster-a" in upgraded["output"] and "cluster-b" in upgraded["output"]
    recap = upgraded["output"][upgraded["output"].rindex("PLAY RECAP"):]
    for name in CLUSTERS:
        assert "%s " % name in recap and "failed=0" in recap.split(name, 1)[1].splitlines()[0], recap


def test_the_awx_doc_shows_this_run_s_artifact_and_what_the_report_playbook_prints_of_it(upgraded, tmp_path):
    """docs/awx.md's sample artifact is this run's ``rolling_update_results`` (trimmed as the doc says; the evictions
    depend on where the scheduler put the pods and are not compared), and the lines of its workflow playbook
    ``playbooks/report.yml`` are what that playbook prints with this artifact as its extra variables."""
    assert upgraded["rc"] == 0, upgraded["output"][-4000:]
    stats = artifact(upgraded["output"])
    assert stats["rolling_update_results"] == upgraded["results"], "the artifact is not each cluster's result file"
    check_or_refresh(AWX_DOC, "artifact", fenced(shown_json(stats), "json"),
                     loose=((r'"evictions": \d+', '"evictions": N'),))
    lines = report_lines(stats, str(tmp_path), playbook_env())
    assert [line.strip() for line in lines] == ['"msg": "%s / %s: replaced, %d nodes replaced"' % (cluster, group, NODES_PER_GROUP)
                                                for cluster in CLUSTERS for group in GROUPS], lines
    check_or_refresh(AWX_DOC, "report-replaced", fenced("\n".join(lines)))


def test_plan_prints_the_plan_of_both_clusters_and_changes_nothing(tmp_path_factory):
    handles = start_clusters(tmp_path_factory)
    try:
        since = {name: handle.now() for name, handle in handles.items()}
        work = str(tmp_path_factory.mktemp("plan"))
        inventory = write_inventory(os.path.join(work, "inventory.yml"), handles, report_dir=work)
        rc, output = run_playbook("plan.yml", inventory, os.path.join(RECORD_DIR, "plan-2x2.log"))[:2]
        assert rc == 0, output[-4000:]
        for name in CLUSTERS:  # the report file holds the plan: check mode does not keep it from being written
            with open(os.path.join(work, "result-%s.json" % name), encoding="utf-8") as fh:
                result = json.load(fh)
            assert [(g["name"], g["status"], g["plan_only"]) for g in result["node_groups"]] == \
                [(group, "planned", True) for group in GROUPS], (name, result)
            for group in result["node_groups"]:
                assert int(group["plan"]["surge"]) == SURGE and len(group["plan"]["outdated"]) == NODES_PER_GROUP, group
        for name, handle in handles.items():
            mutating = handle.mutating_requests(since=since[name])
            assert mutating == [], (name, mutating[:5])
            autoscaling = handle.aws("autoscaling")
            for group in autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=list(GROUPS))["AutoScalingGroups"]:
                assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == (NODES_PER_GROUP,) * 3
                assert str(group["LaunchTemplate"]["Version"]) in ("1", "$Default", "$Latest"), group["LaunchTemplate"]
            listed = handle.core().list_node().items
            assert listed and all(not n.spec.unschedulable and not n.spec.taints for n in listed), name
        for name in handles:
            assert "ok: [%s]" % name in output
        # Per group: the outdated nodes, the surge and the batches, and the blockers line.
        for group in GROUPS:
            assert output.count("%s: %d outdated of %d instances" % (group, NODES_PER_GROUP, NODES_PER_GROUP)) == len(CLUSTERS), output[-6000:]
        assert output.count("surge %d, max unavailable %d" % (SURGE, MAX_UNAVAILABLE)) == len(CLUSTERS) * len(GROUPS), output[-6000:]
        assert output.count('"blockers: ') == len(CLUSTERS) * len(GROUPS), output[-6000:]
        nodes = [n.metadata.name for handle in handles.values() for n in handle.core().list_node().items]
        assert nodes and all(node in output for node in nodes), "a node missing from the printed batches"
    finally:
        for handle in handles.values():
            handle.stop()
