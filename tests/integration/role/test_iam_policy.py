"""docs/iam-policy.json, proven by moto's own authorizer (``up --iam``): the collection signs its AWS requests with the keys
of an IAM user that has nothing but the policy, as moto evaluates it (each statement's actions; moto checks no
Resource and no Condition, and makes none of the checks AWS makes itself when a group is pointed at a launch template:
docs/iam.md says so, and the document keeps them).

- Every path runs to its end with those keys (tests/integration/every_path.py: the plan, a run refused by the lock, an
  upgrade stopped by a PodDisruptionBudget, its rollback, a pause, the cancel, upgrade_serial over the inventory plugin,
  an upgrade), and an upgrade with every option that asks AWS for more: the cluster reached through ``eks_cluster``
  (DescribeCluster and a token signed with the same keys), the target read from an SSM parameter, the surge by
  ``detach``, an abort alarm watched. What each path asked of AWS (the sandbox's request log) is matched to the
  statements that allow it; a request no statement allows fails the test.
- Each statement those paths use taken out, one at a time, on the shortest path that uses it: the run stops, naming the
  action refused and the statement that allows it, with its lock released, nothing cordoned that is not drained and the
  invariants held; the next run with the whole policy finishes the group.

The tables of docs/iam.md are what these runs did, compared (or written, with NODEOPS_REFRESH_DOCS=1).
"""

import json
import os

import pytest

from sandbox.aws import iam
from sandbox.drive.handle import install_collection_loader
from tests.integration.controls import QUICK, assert_invariants, group_view, lock_holder, node_marks, result_of
from tests.integration.doc_outputs import check_or_refresh
from tests.integration.every_path import PATHS as COMMON_PATHS, Paths
from tests.integration.serial_runs import DEMO

install_collection_loader()
from ansible_collections.nodeops.rollout.plugins.module_utils.core import permissions  # noqa: E402 pylint: disable=wrong-import-position

NODES, AZS, MAX_UNAVAILABLE = 3, 3, 1
GENERATOR = "tests/integration/role/test_iam_policy.py"
OPTIONS = "eks_cluster, ssm_parameter, detach, alarm"
PATHS = COMMON_PATHS + (OPTIONS,)
ALARM = "shop-latency"
SERVICES = {"elbv2": "elasticloadbalancing", "monitoring": "cloudwatch"}   # the sandbox's service names -> IAM's
# the statements moto is given (iam.evaluated_policy): those AWS evaluates only in its own checks are not among them
EVALUATED = [statement["Sid"] for statement in iam.evaluated_policy(iam.docs_policy())["Statement"]]
USED = {}      # path -> {statement Sid: {action}}
WITHOUT = {}   # Sid -> what the run without it did


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    handle = start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[DEMO], iam=True, kube="embedded")
    handle.aws("cloudwatch").put_metric_alarm(
        AlarmName=ALARM, MetricName="p99", Namespace="shop", Statistic="Maximum", Period=60, EvaluationPeriods=1,
        Threshold=0.5, ComparisonOperator="GreaterThanThreshold")
    return handle


def used_statements(sandbox, since):
    """What the collection asked of AWS since ``since``: ``{Sid: {action}}``; an action no statement allows fails."""
    out = {}
    for event in sandbox.events():
        if event["kind"] != "aws.request" or event["t"] < since or not str(event.get("client")).startswith("nodeops.rollout"):
            continue
        action = "%s:%s" % (SERVICES.get(event["service"], event["service"]), event["action"])
        sids = [sid for sid in permissions.aws_statements(action) if sid in EVALUATED]
        assert sids, "no statement of docs/iam-policy.json allows %s: %s" % (action, event)
        for sid in sids:
            out.setdefault(sid, set()).add(action)
    return out


def every_option(sandbox, image="new"):
    """An upgrade's arguments with every option that asks AWS for more than a plain one: ``(node_groups, extra,
    host_vars)``; the SSM parameter holds ``image`` (the sandbox's new or old AMI)."""
    sandbox.aws("ssm").put_parameter(Name=sandbox.state["ssm_parameter"], Value=sandbox.state["amis"][image], Type="String",
                                     Overwrite=True)
    return ([{"name": "sandbox-nodes", "ssm_parameter": sandbox.state["ssm_parameter"]}],
            ["rolling_update_surge_method=detach", "rolling_update_abort_alarms=" + ALARM],
            {"rolling_update_k8s": {"eks_cluster": sandbox.state["eks_cluster"]}})


def test_every_path_runs_to_its_end_with_only_the_policy(sandbox, tmp_path):
    with open(os.path.join(sandbox.state_dir, "aws.env"), encoding="utf-8") as fh:
        assert "AWS_ACCESS_KEY_ID=testing" not in fh.read()
    paths = Paths(sandbox, tmp_path, lambda since: used_statements(sandbox, since))
    paths.every_path(NODES)

    # every option that asks AWS for more, to the new image (every_path ends on the first): the Kubernetes API reached
    # through EKS with a token of the same keys, the target from the SSM parameter, the surge detached, the alarm watched
    since = sandbox.now()
    node_groups, extra, host_vars = every_option(sandbox, "new")
    rc, out, result = paths.run(OPTIONS, extra=extra, node_groups=node_groups, host_vars=host_vars)
    assert rc == 0 and result["status"] == "replaced" and result["nodes_replaced"] == NODES, out[-3000:]
    assert result["target"]["ssm_parameter"] == sandbox.state["ssm_parameter"], result["target"]
    identities = {event.get("identity") for event in sandbox.events() if event["kind"] == "k8s.request" and event["t"] >= since
                  and str(event.get("client")).startswith("nodeops.rollout")}
    assert identities == {sandbox.env["AWS_ACCESS_KEY_ID"]}, identities
    assert lock_holder(sandbox) is None and node_marks(sandbox) == {} and group_view(sandbox)["state_tags"] == {}
    USED.update(paths.used)
    print("invariants", assert_invariants(sandbox.report(), NODES, MAX_UNAVAILABLE))


def test_the_plan_lists_what_the_run_asks_of_aws_and_finds_a_missing_read_with_no_change(sandbox, tmp_path):
    node_groups, extra, host_vars = every_option(sandbox, "old")
    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, check=True, extra=QUICK + extra, node_groups=node_groups, host_vars=host_vars)
    assert rc == 0, out[-3000:]
    assert ("AWS (statements of docs/iam-policy.json): reads granted, this plan made them: ReadGroupsInstancesLaunchTemplatesAndImages, "
            "ReadAmiIdsFromSsmParameters, ConnectToEksClusters, ReadAbortAlarms; writes, checked by AWS only when made: "
            "SurgeTerminateAndRestoreNodeGroups, RecordRolloutStateInGroupTags") in out, out[-3000:]
    assert "DetachMethodTagDetachedInstances, DetachMethodTerminateDetachedInstances" in out
    # the abort alarms may not be read: the plan says so, naming the statement, and changes nothing
    policy = iam.docs_policy()
    policy["Statement"] = [statement for statement in policy["Statement"] if statement.get("Sid") != "ReadAbortAlarms"]
    iam.put_policy(sandbox.aws("iam"), policy)
    report = tmp_path / "plan.json"
    try:
        rc, out = sandbox.run_role_playbook(tmp_path, check=True, report=report, extra=QUICK + extra, node_groups=node_groups,
                                            host_vars=host_vars)
    finally:
        iam.put_policy(sandbox.aws("iam"), iam.docs_policy())
    assert rc != 0 and "cloudwatch:DescribeAlarms" in out and "statement ReadAbortAlarms of docs/iam-policy.json" in out, out[-3000:]
    assert result_of(report)["permission"]["verb"] == "cloudwatch:DescribeAlarms"
    assert sandbox.mutating_requests(since=since) == []


def pods_to_move(sandbox, node):
    """The running pods of ``node`` a drain moves (not its DaemonSets')."""
    pods = sandbox.core().list_pod_for_all_namespaces(field_selector="spec.nodeName=%s" % node).items
    return ["%s/%s" % (pod.metadata.namespace, pod.metadata.name) for pod in pods
            if pod.status.phase in ("Pending", "Running") and pod.metadata.deletion_timestamp is None
            and not any(owner.kind == "DaemonSet" for owner in pod.metadata.owner_references or [])]


def shortest_path(sid):
    """The path a statement's removal is tried on: the plain upgrade when it uses the statement, else the upgrade with
    every option."""
    return "upgrade" if sid in USED["upgrade"] else OPTIONS


def test_each_statement_the_paths_use_taken_out_stops_the_run_and_the_whole_policy_finishes_it(sandbox, tmp_path):
    used = [sid for sid in EVALUATED if any(sid in each for each in USED.values())]
    assert used, USED
    image = "old"
    for sid in used:
        if shortest_path(sid) == OPTIONS:
            node_groups, extra, host_vars = every_option(sandbox, image)
        else:
            node_groups, extra, host_vars = [{"name": "sandbox-nodes", "image_id": sandbox.state["amis"][image]}], [], None
        policy = iam.docs_policy()
        policy["Statement"] = [statement for statement in policy["Statement"] if statement.get("Sid") != sid]
        iam.put_policy(sandbox.aws("iam"), policy)
        report = tmp_path / "without.json"
        try:
            if report.exists():
                report.unlink()
            rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK + extra, node_groups=node_groups,
                                                host_vars=host_vars)
        finally:
            iam.put_policy(sandbox.aws("iam"), iam.docs_policy())
        assert rc != 0 and "statement %s of docs/iam-policy.json" % sid in out, out[-3000:]
        assert lock_holder(sandbox) is None
        # nothing cordoned that is not drained: a node the run cordoned has no pod left but its DaemonSets'
        for name, marks in node_marks(sandbox).items():
            if "cordoned" in json.dumps(marks):
                assert pods_to_move(sandbox, name) == [], (name, marks)
        # the group's result (and its page) says which permission was refused and which statement allows it
        result = result_of(report)
        assert result["status"] == "failed" and result["permission"]["kind"] == "aws", result
        assert result["permission"]["granted_by"] == "statement %s of docs/iam-policy.json" % sid, result["permission"]
        assert (tmp_path / "without.html").exists()
        WITHOUT[sid] = "%s: stops at '%s': %s" % (shortest_path(sid), result["failed_task"], result["reason"])
        # the whole policy again: the next run finishes the group
        rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK + extra, node_groups=node_groups,
                                            host_vars=host_vars)
        assert rc == 0 and result_of(report)["status"] in ("replaced", "up to date"), out[-3000:]
        assert node_marks(sandbox) == {} and group_view(sandbox)["state_tags"] == {}
        image = "old" if image == "new" else "new"
    print("invariants", assert_invariants(sandbox.report(), NODES, MAX_UNAVAILABLE))


def test_the_tables_of_docs_iam_md_are_what_the_runs_did():
    assert set(USED) == set(PATHS), sorted(USED)
    sids = [sid for sid, _actions in permissions.IAM_STATEMENTS]
    rows = ["| Statement of docs/iam-policy.json | %s |" % " | ".join(PATHS), "|---|" + "---|" * len(PATHS)]
    for sid in sids:
        cells = [", ".join(sorted(action.split(":", 1)[1] for action in USED[path].get(sid, ()))) or "-" for path in PATHS]
        rows.append("| %s | %s |" % (sid, " | ".join(cells)))
    check_or_refresh("docs/iam.md", "used by path", "\n".join(rows), generator=GENERATOR)
    rows = ["| Statement of docs/iam-policy.json | The run without it |", "|---|---|"]
    for sid in sids:
        if sid not in EVALUATED:
            what = "AWS evaluates it when UpdateAutoScalingGroup points the group at a launch template; moto does not"
        else:
            what = WITHOUT.get(sid, "not used by these paths (see above)")
        rows.append("| %s | %s |" % (sid, what))
    check_or_refresh("docs/iam.md", "without each statement", "\n".join(rows), generator=GENERATOR)
