"""A fleet of six clusters in three waves, run as AWX job slicing runs it: three ansible-runner processes at once, each
over its slice of the inventory (hosts sorted by name, slice k holding every third from the k-th), one ledger in DynamoDB.

The first run: the canary's wave, its soak and its gate (run once, by whichever worker got there first), then the second
wave, where one cluster is stopped by a PodDisruptionBudget that lets nothing go: the wave's budget (0 failures) is spent,
and no worker starts a cluster of the third wave (their sandboxes see no request of the collection that changes
anything). The second run (a new AWX workflow job) skips the clusters already rolled (no change on them), retries the
failed one with the pinned target, then rolls the third wave at most two clusters at once across the three processes.
Then one process over the whole inventory (fleet_workers 1, its run named by the process) rolls a new plan back to the
first image in the same order under the same cap. When each cluster rolled is read from ansible-runner's own events, not
from the ledger. Every cluster's invariant report
is clean; the fleet's page is checked in Chromium; the wall times against the sum of the clusters' rollouts are written
to .build/fleet/fleet.json.
"""

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import boto3
import pytest
import yaml

from sandbox.drive.handle import BIN, ROOT, SandboxHandle, collections_path, promised_floor
from tests.integration.browser import probe
from tests.integration.modules.conftest import assert_safe
from tests.integration.workloads import hold_for_now, let_go

CLUSTERS = ("c-1", "c-2", "c-3", "c-4", "c-5", "c-6")
GROUPS = {"canary": ["c-1"], "early": ["c-2", "c-3"]}
FAILING = "c-3"
WAVES = [{"name": "canary", "clusters": ["canary"], "soak": "5s"},
         {"name": "early", "clusters": ["early"], "max_concurrency": 2},
         {"name": "rest", "clusters": ["c-*"], "max_concurrency": "67%"}]
SLICES = 3
NODES, AZS, MAX_UNAVAILABLE = 4, 2, 2
GROUP = "sandbox-nodes"
TABLE = "nodeops-fleet"
DEMO = os.path.join(ROOT, "sandbox", "workloads", "demo.yaml")
RECORD = os.path.join(ROOT, ".build", "fleet")
ROLLING_TASK = "Rolling update | check every setting"
RECORDED_TASK = "Fleet | record the cluster's outcome in the ledger"
GATE = """---
- name: Gate | the canary cluster's nodes are all Ready (a health check of the operator's)
  ansible.builtin.lineinfile:
    path: "%s"
    line: "{{ inventory_hostname }} {{ fleet__run }}"
    create: true
    mode: "0644"
  delegate_to: localhost
"""


def start_clusters(tmp_path_factory):
    def start(name):
        return name, SandboxHandle.start(str(tmp_path_factory.mktemp(name)), nodes=NODES, azs=AZS, groups=1, speed=20.0,
                                         workloads=[DEMO])

    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = [pool.submit(start, name) for name in CLUSTERS]
    handles, errors = {}, []
    for future in futures:
        try:
            name, handle = future.result()
            handles[name] = handle
        except Exception as exc:  # pylint: disable=broad-except
            errors.append(exc)
    if errors:
        for handle in handles.values():
            handle.stop()
        raise errors[0]
    return handles


def host_vars(name, handle, work, image=None):
    target = {"image_id": handle.state["amis"][image]} if image else {"ssm_parameter": handle.state["ssm_parameter"]}
    return {"ansible_python_interpreter": sys.executable,
            "rolling_update_aws": {"region": handle.state["region"], "endpoint_url": handle.state["aws_url"],
                                   "access_key": "testing", "secret_key": "testing"},
            "rolling_update_k8s": {"kubeconfig": handle.collection_kubeconfig},
            "rolling_update_node_groups": [dict(target, name=GROUP)],
            "rolling_update_report_file": os.path.join(work, "result-%s.json" % name)}


def slice_inventory(path, hosts, handles, work, image=None):
    """What AWX gives slice k: its hosts only, in every group they belong to."""
    inventory = {"clusters": {"hosts": {name: host_vars(name, handles[name], work, image) for name in hosts}, "children": {}}}
    for group, members in GROUPS.items():
        inside = [name for name in members if name in hosts]
        if inside:
            inventory["clusters"]["children"][group] = {"hosts": {name: {} for name in inside}}
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(inventory, fh, sort_keys=False)


def extra_vars(store, work, job, **more):
    # the gate after the canary's wave: a task file of the operator's, by its absolute path
    waves = [dict(WAVES[0], gate=os.path.join(work, "gate.yml"))] + WAVES[1:]
    found = {"fleet_name": "fleet-1", "fleet_store": store, "fleet_waves": waves, "fleet_workers": SLICES,
             "fleet_poll_interval": "1s", "fleet_page_file": os.path.join(work, "fleet.html"),
             "awx_workflow_job_id": job,
             "rolling_update_max_unavailable": MAX_UNAVAILABLE, "rolling_update_post_drain_delay": 1,
             "rolling_update_validate_interval": "1s", "rolling_update_validate_passes": 1,
             "rolling_update_node_ready_timeout": "5m", "rolling_update_drain_timeout": "20s"}
    found.update(more)
    return {key: value for key, value in found.items() if value is not None}


def runner_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "K8S_AUTH_")) and k != "KUBECONFIG"}
    env.update({"ANSIBLE_COLLECTIONS_PATH": collections_path(), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "0",
                "PATH": BIN + os.pathsep + env.get("PATH", "")})
    return env


def run_slices(handles, work, store, job, slices=SLICES, name=None, image=None, **more):
    """The job's slices, each an ansible-runner process over its own inventory, all at once (as AWX starts them);
    ``(wall seconds, [(rc, private data dir)])``."""
    names = sorted(handles)
    started = time.monotonic()
    procs = []
    for k in range(slices):
        private = os.path.join(work, "job-%s-slice-%d" % (name or job, k + 1))
        os.makedirs(os.path.join(private, "env"), exist_ok=True)
        inventory = os.path.join(private, "inventory.yml")
        slice_inventory(inventory, names[k::slices], handles, work, image)
        with open(os.path.join(private, "env", "extravars"), "w", encoding="utf-8") as fh:
            json.dump(extra_vars(store, work, job, **more), fh)
        log = open(os.path.join(private, "stdout.txt"), "w", encoding="utf-8")  # pylint: disable=consider-using-with
        # as many forks as the worker has clusters: one waiting for its wave holds a fork (the role refuses fewer)
        procs.append((subprocess.Popen([os.path.join(BIN, "ansible-runner"), "run", private, "--playbook",
                                        os.path.join(ROOT, "playbooks", "fleet.yml"), "--inventory", inventory,
                                        "--forks", str(len(names[k::slices]))],
                                       cwd=work, env=runner_env(), stdout=log, stderr=subprocess.STDOUT), private, log))
    out = []
    for proc, private, log in procs:
        out.append((proc.wait(timeout=1500), private))
        log.close()
    return time.monotonic() - started, out


def rolled_when(private_dirs):
    """``{cluster: (start, end)}`` in seconds since the epoch, from ansible-runner's events: the first task of the
    rolling_update role on the host, to the end of the task that records its outcome."""
    spans = {}
    for private in private_dirs:
        events_dir = os.path.join(private, "artifacts")
        for root, _dirs, files in os.walk(events_dir):
            if not root.endswith("job_events"):
                continue
            for name in files:
                with open(os.path.join(root, name), encoding="utf-8") as fh:
                    event = json.load(fh)
                data = event.get("event_data") or {}
                host, task = data.get("host"), data.get("task")
                moment = datetime.fromisoformat(event["created"]).timestamp()
                if event["event"] == "runner_on_start" and task == ROLLING_TASK:
                    span = spans.setdefault(host, [moment, None])
                    span[0] = min(span[0], moment)
                if event["event"] in ("runner_on_ok", "runner_on_failed") and task == RECORDED_TASK:
                    spans.setdefault(host, [moment, None])[1] = moment
    return {host: tuple(span) for host, span in spans.items()}


def most_at_once(spans):
    points = sorted([(start, 1) for start, _end in spans] + [(end, -1) for _start, end in spans], key=lambda p: (p[0], p[1]))
    now = best = 0
    for _moment, step in points:
        now += step
        best = max(best, now)
    return best


def changes(handle, since):
    """What the collection changed on the cluster since ``since`` (the fleet's ledger, kept in c-1's account, apart)."""
    return [event for event in handle.mutating_requests(since=since) if event.get("service") != "dynamodb"]


def on_image(handle, image):
    autoscaling, ec2 = handle.aws("autoscaling"), handle.aws("ec2")
    group = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    ids = [i["InstanceId"] for i in group["Instances"]]
    images = {i["ImageId"] for r in ec2.describe_instances(InstanceIds=ids)["Reservations"] for i in r["Instances"]}
    return images == {handle.state["amis"][image]} and len(ids) == NODES


def assert_clean(name, handle):
    report = handle.report()
    assert_safe(report)
    assert report["min_ready_schedulable_nodes"][GROUP] >= promised_floor(NODES, MAX_UNAVAILABLE), (name, report["min_ready_schedulable_nodes"])
    assert report["evictions"]["max_evictions_per_pod"] <= 1, (name, report["evictions"])
    for deployment, figures in report["deployments"].items():
        assert figures["zero_ready_seconds"] == 0, (name, deployment, figures)
    return report


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    handles = start_clusters(tmp_path_factory)
    try:
        work = str(tmp_path_factory.mktemp("fleet"))
        with open(os.path.join(work, "gate.yml"), "w", encoding="utf-8") as fh:
            fh.write(GATE % os.path.join(work, "gate-runs.txt"))
        # the ledger's table, made once by the operator, here in the first cluster's account
        ledger_account = handles["c-1"].state
        store = {"table": TABLE, "region": ledger_account["region"], "endpoint_url": ledger_account["aws_url"],
                 "access_key": "testing", "secret_key": "testing"}
        dynamodb = boto3.client("dynamodb", region_name=store["region"], endpoint_url=store["endpoint_url"],
                                aws_access_key_id="testing", aws_secret_access_key="testing")
        dynamodb.create_table(TableName=TABLE, AttributeDefinitions=[{"AttributeName": "fleet", "AttributeType": "S"}],
                              KeySchema=[{"AttributeName": "fleet", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")
        # the plan: the fleet's waves and its time, nothing changed anywhere
        everything = os.path.join(work, "inventory.yml")
        slice_inventory(everything, sorted(handles), handles, work)
        since = {name: handle.now() for name, handle in handles.items()}
        plan = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", everything, os.path.join(ROOT, "playbooks", "plan.yml"),
                               "-e", json.dumps(extra_vars(store, work, "100"))],
                              cwd=work, env=runner_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        planned = (plan, {name: handle.mutating_requests(since=since[name]) for name, handle in handles.items()})
        # the failing cluster's budget lets none of web's three pods go while a fourth never starts (a budget that could
        # never allow one would stop that cluster's upgrade before any change, not in its drain)
        handles[FAILING].policy().patch_namespaced_pod_disruption_budget("web", "shop", {"spec": {"minAvailable": 3}})
        hold_for_now(handles[FAILING], "shop", "web")
        since = {name: handle.now() for name, handle in handles.items()}
        first = run_slices(handles, work, store, "101")
        after_first = {name: (on_image(handle, "new"), changes(handle, since[name])) for name, handle in handles.items()}
        with open(os.path.join(work, "gate-runs.txt"), encoding="utf-8") as fh:
            gate_runs = fh.read().splitlines()
        handles[FAILING].policy().patch_namespaced_pod_disruption_budget("web", "shop", {"spec": {"minAvailable": 2}})
        let_go(handles[FAILING], "shop", "web")
        since = {name: handle.now() for name, handle in handles.items()}
        second = run_slices(handles, work, store, "102")
        after_second = {name: (on_image(handle, "new"), changes(handle, since[name])) for name, handle in handles.items()}
        report = subprocess.run([os.path.join(BIN, "ansible-playbook"), os.path.join(ROOT, "playbooks", "fleet_report.yml"),
                                 "-e", json.dumps(extra_vars(store, work, "103"))],
                                cwd=work, env=runner_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        # one ansible-playbook process (no AWX: the run is named by the process), a new plan back to the first image
        back = run_slices(handles, work, store, None, slices=1, name="one-process", image="old", fleet_name="fleet-back",
                          fleet_workers=1, fleet_page_file=os.path.join(work, "fleet-back.html"))
        back_on = {name: on_image(handle, "old") for name, handle in handles.items()}
        reports = {name: assert_clean(name, handle) for name, handle in handles.items()}
        yield {"work": work, "plan": planned, "back": (back, back_on), "first": first, "second": second,
               "after_first": after_first, "after_second": after_second, "gate_runs": gate_runs, "report": report,
               "reports": reports}
    finally:
        for handle in handles.values():
            handle.stop()


def output_of(private):
    with open(os.path.join(private, "stdout.txt"), encoding="utf-8") as fh:
        return fh.read()


def test_the_plan_shows_the_waves_and_the_fleets_time_and_changes_nothing(fleet):
    plan, changed = fleet["plan"]
    assert plan.returncode == 0, plan.stdout[-4000:]
    assert "fleet: 6 clusters in 3 waves, about " in plan.stdout, plan.stdout[-4000:]
    assert "wave canary: c-1 - 1 at once, 0 failures allowed, soak 5s, then gate " in plan.stdout
    assert "wave early: c-2, c-3 - 2 at once, 0 failures allowed: " in plan.stdout
    assert "wave rest: c-4, c-5, c-6 - 2 at once, 0 failures allowed: " in plan.stdout
    assert sorted(changed) == list(CLUSTERS) and all(requests == [] for requests in changed.values()), changed


def test_the_budget_spent_in_wave_two_starts_wave_three_on_no_worker(fleet):
    _wall, slices = fleet["first"]
    outputs = "\n".join(output_of(private) for _rc, private in slices)
    # the slice that ran the failing cluster fails; the others end well, their third-wave cluster not started
    assert sorted(rc for rc, _private in slices) == [0, 0, 2], outputs[-6000:]
    rolled = fleet["after_first"]
    assert rolled["c-1"][0] and rolled["c-2"][0], outputs[-6000:]
    assert not rolled[FAILING][0]
    for name in ("c-4", "c-5", "c-6"):
        assert not rolled[name][0] and rolled[name][1] == [], (name, rolled[name][1][:5])
    # the gate after the canary's wave ran once, on one worker, for the whole fleet
    assert len(fleet["gate_runs"]) == 1 and fleet["gate_runs"][0].endswith(" 101"), fleet["gate_runs"]
    spans = rolled_when([private for _rc, private in slices])
    assert sorted(spans) == ["c-1", "c-2", "c-3"], spans
    # the canary's wave ended and soaked (5 s) before the second wave began (its end as the ledger stamped it comes a
    # moment before the task's end reaches ansible-runner's events: a second allowed); its two clusters rolled at once
    assert min(spans["c-2"][0], spans["c-3"][0]) >= spans["c-1"][1] + 5 - 1, spans
    assert most_at_once([spans["c-2"], spans["c-3"]]) == 2, spans


def test_the_next_run_skips_what_rolled_retries_the_failure_and_caps_the_last_wave(fleet):
    _wall, slices = fleet["second"]
    outputs = "\n".join(output_of(private) for _rc, private in slices)
    assert [rc for rc, _private in slices] == [0, 0, 0], outputs[-6000:]
    assert sorted(fleet["after_second"]) == list(CLUSTERS)
    for name, (rolled, _requests) in fleet["after_second"].items():
        assert rolled, (name, outputs[-6000:])
    # the clusters the first run finished are not touched again
    assert fleet["after_second"]["c-1"][1] == [] and fleet["after_second"]["c-2"][1] == []
    spans = rolled_when([private for _rc, private in slices])
    assert sorted(spans) == [FAILING, "c-4", "c-5", "c-6"], spans
    last = [spans[name] for name in ("c-4", "c-5", "c-6")]
    assert min(start for start, _end in last) >= spans[FAILING][1], spans
    # 67% of three clusters is two at a time, across three processes
    assert most_at_once(last) == 2, spans
    record(fleet, spans)


def test_one_process_keeps_the_same_order_and_cap(fleet):
    (wall, slices), back_on = fleet["back"]
    (rc, private), = slices
    assert rc == 0, output_of(private)[-6000:]
    assert sorted(back_on) == list(CLUSTERS) and all(back_on.values()), back_on
    spans = rolled_when([private])
    assert sorted(spans) == list(CLUSTERS), spans
    early, rest = [spans["c-2"], spans["c-3"]], [spans[name] for name in ("c-4", "c-5", "c-6")]
    assert min(start for start, _end in early) >= spans["c-1"][1] + 5 - 1, spans
    assert min(start for start, _end in rest) >= max(end for _start, end in early), spans
    assert most_at_once(early) == 2 and most_at_once(rest) == 2, spans
    path = os.path.join(RECORD, "fleet.json")
    figures = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            figures = json.load(fh)
    figures["one_process"] = {"wall_seconds": round(wall, 1),
                              "sum_of_rollouts": round(sum(end - start for start, end in spans.values()), 1)}
    os.makedirs(RECORD, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(figures, fh, indent=1, sort_keys=True)
    print(json.dumps(figures["one_process"]))


def test_every_clusters_invariant_report_is_clean(fleet):
    assert sorted(fleet["reports"]) == list(CLUSTERS)
    for name, report in fleet["reports"].items():
        assert report["pdb_violations"] == 0 and report["killed_without_eviction"] == 0, name


def test_the_fleet_page_shows_every_cluster_rolled_and_the_first_runs_stop(fleet):
    assert fleet["report"].returncode == 0, fleet["report"].stdout[-4000:]
    page = os.path.join(fleet["work"], "fleet.html")
    seen = probe(page, """function (document) {
        var rows = Array.prototype.slice.call(document.querySelectorAll('tr.cluster'));
        return {states: rows.map(function (r) { return r.getAttribute('data-state'); }),
                banner: document.getElementById('stop').innerText,
                waves: Array.prototype.slice.call(document.querySelectorAll('section.wave')).map(function (s) { return s.getAttribute('data-wave'); }),
                links: document.querySelectorAll('a[href$=".html"]').length,
                width: document.documentElement.scrollWidth};
    }""", fleet["work"])
    assert seen["states"] == ["succeeded"] * 6, seen
    assert seen["waves"] == ["canary", "early", "rest"], seen
    assert "Every cluster is on its pinned target" in seen["banner"], seen
    assert seen["links"] == 6, seen
    with open(page, encoding="utf-8") as fh:
        text = fh.read()
    # the first run's stop stays on the page
    assert "earlier runs: 101 (started " in text and "stopped: the failure budget of wave early is spent: c-3 failed (0 allowed)" in text


def record(fleet, spans):
    first_wall, _slices = fleet["first"]
    second_wall, slices = fleet["second"]
    first_spans = rolled_when([private for _rc, private in fleet["first"][1]])
    rollouts = {"first": {name: round(end - start, 1) for name, (start, end) in first_spans.items()},
                "second": {name: round(end - start, 1) for name, (start, end) in spans.items()}}
    figures = {"clusters": len(CLUSTERS), "slices": SLICES, "nodes_per_cluster": NODES, "speed": 20.0,
               "first_run": {"wall_seconds": round(first_wall, 1), "sum_of_rollouts": round(sum(rollouts["first"].values()), 1)},
               "second_run": {"wall_seconds": round(second_wall, 1), "sum_of_rollouts": round(sum(rollouts["second"].values()), 1)},
               "rollout_seconds": rollouts}
    os.makedirs(RECORD, exist_ok=True)
    with open(os.path.join(RECORD, "fleet.json"), "w", encoding="utf-8") as fh:
        json.dump(figures, fh, indent=1, sort_keys=True)
    print(json.dumps(figures, sort_keys=True))
