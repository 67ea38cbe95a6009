"""node_drain end to end on the sandbox: budgets respected, timeouts, concurrency, pre-flight, zero-downtime restarts."""

import time

import pytest
import yaml

from tests.integration.modules.conftest import assert_holds_workload, assert_safe

FAST = {"poll_interval": 0.2, "retry_max_delay": 1.0}
SHUTDOWN = "sandbox.nodeops.io/shutdown-seconds"


# ---- scenario helpers -------------------------------------------------------------------------------

def wait_for(check, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s" % what)
        time.sleep(0.2)


def namespace(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def deployment(ns, name, replicas, annotations=None, strategy=None, volumes=False, shutdown=None, grace=None):
    pod_annotations = dict(annotations or {})
    if shutdown is not None:
        pod_annotations[SHUTDOWN] = str(shutdown)
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "registry.example/%s:1" % name}]}}
    if pod_annotations:
        template["metadata"]["annotations"] = pod_annotations
    if volumes:
        template["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    if grace is not None:
        template["spec"]["terminationGracePeriodSeconds"] = grace
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template}
    if strategy:
        spec["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def budget(ns, name, app, **spec):
    spec["selector"] = {"matchLabels": {"app": app}}
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def naked_pod(ns, name, node):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.example/%s:1" % name}]}}


def ready_on(sandbox, ns, node=None):
    pods = sandbox.core().list_namespaced_pod(ns).items
    return [p for p in pods if not p.metadata.deletion_timestamp and (node is None or p.spec.node_name == node)
            and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])]


def pin(sandbox, node, objects, ns, expect):
    """Create ``objects`` so that their pods land on ``node``: every other node is cordoned meanwhile."""
    core = sandbox.core()
    others = [n.metadata.name for n in core.list_node().items if n.metadata.name != node and not n.spec.unschedulable]
    for name in others:
        core.patch_node(name, {"spec": {"unschedulable": True}})
    try:
        sandbox.apply(yaml.safe_dump_all(objects))
        wait_for(lambda: len(ready_on(sandbox, ns, node)) >= expect, what="%d Ready pods of %s on %s" % (expect, ns, node))
    finally:
        for name in others:
            core.patch_node(name, {"spec": {"unschedulable": None}})


def uncordon(sandbox, *names):
    for name in names:
        sandbox.core().patch_node(name, {"spec": {"unschedulable": None}})


def run_module(sandbox, name, args, check=False, diff=False):
    return sandbox.run_module(name, check=check, diff=diff, module_args=args)


def drain(sandbox, nodes, check=False, diff=False, **args):
    params = dict(FAST, nodes=list(nodes))
    params.update(args)
    return run_module(sandbox, "node_drain", params, check=check, diff=diff)


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=6, azs=3, speed=20)


@pytest.fixture(scope="module")
def names(sandbox):
    return sorted(node.metadata.name for node in sandbox.core().list_node().items)


# ---- the tests ----------------------------------------------------------------------------------------

def test_preflight_names_every_blocker_kind_without_a_single_mutating_request(sandbox, names):
    node = names[0]
    ns = "preflight"
    pin(sandbox, node, [
        namespace(ns),
        deployment(ns, "zero", 2), budget(ns, "zero", "zero", minAvailable=2),
        deployment(ns, "tight", 3), budget(ns, "tight", "tight", maxUnavailable=1),
        deployment(ns, "twice", 2), budget(ns, "twice-a", "twice", minAvailable=1), budget(ns, "twice-b", "twice", maxUnavailable=1),
        deployment(ns, "keep", 2, annotations={"karpenter.sh/do-not-disrupt": "true"}),
        deployment(ns, "cache", 2, volumes=True),
        deployment(ns, "solo", 1, strategy={"type": "Recreate"}),
        deployment(ns, "single", 1),
        naked_pod(ns, "naked", node),
    ], ns, expect=14)
    assert_holds_workload(sandbox, node)
    since = sandbox.now() + 0.01  # after the newest event so far (which may be a request of the previous test)
    result = drain(sandbox, [node], check=True, diff=True)
    assert result["rc"] == 0, result["output"]
    assert sandbox.mutating_requests(since=since) == []
    assert not sandbox.core().read_node(node).spec.unschedulable

    report = result["nodes"][node]
    kinds = {}
    for blocker in report["blocking"]:
        kinds.setdefault(blocker["kind"], set()).add(blocker["pod"].split("/")[1].rsplit("-", 2)[0]
                                                     if blocker["pod"] != ns + "/naked" else "naked")
    assert kinds["pdb_zero"] == {"zero"}
    assert kinds["pdb_insufficient"] == {"tight"}
    assert kinds["multiple_pdbs"] == {"twice"}
    assert kinds["naked_pod"] == {"naked"}
    assert kinds["do_not_disrupt"] == {"keep"}
    assert kinds["emptydir"] == {"cache"}
    assert kinds["single_replica"] == {"solo"}
    by_kind = {b["kind"]: b for b in report["blocking"]}
    assert by_kind["multiple_pdbs"]["pdb"] == "preflight/twice-a, preflight/twice-b"
    assert by_kind["pdb_zero"]["pdb"] == "preflight/zero" and "allows 0 disruptions" in by_kind["pdb_zero"]["message"]
    assert [r["deployment"] for r in report["restarted"]] == ["preflight/single"]
    assert report["predicted"] == "blocked" and report["outcome"].startswith("blocked by")
    assert not result["preflight_ok"]
    assert '+    "unschedulable": true' in result["output"]


@pytest.mark.reference
def test_a_budget_blocked_drain_proceeds_as_replacements_become_ready(sandbox, names):
    node = names[1]
    ns = "blocked"
    pin(sandbox, node, [namespace(ns), deployment(ns, "web", 3), budget(ns, "web", "web", minAvailable=2)], ns, expect=3)
    assert_holds_workload(sandbox, node)
    started = sandbox.now()
    result = drain(sandbox, [node])
    assert result["rc"] == 0, result["output"]
    outcome = result["nodes"][node]
    assert outcome["status"] == "drained" and len(outcome["evicted"]) == 3 and outcome["blocking"] == []
    events = [e for e in sandbox.events() if e["t"] >= started and e.get("owner") == "Deployment/%s/web" % ns]
    evictions = sorted(e["t"] for e in events if e["kind"] == "pod.terminating" and e.get("how") == "evicted")
    replacements = sorted(e["t"] for e in events if e["kind"] == "pod.ready" and e.get("node") != node)
    assert len(evictions) == 3
    # the budget allows one eviction at a time: each later one waited for a replacement to be Ready elsewhere
    for index, moment in enumerate(evictions[1:], start=1):
        assert sum(1 for t in replacements if t <= moment) >= index, "eviction %d came before a replacement was Ready" % index
    report = sandbox.report()
    assert report["deployments"]["%s/web" % ns]["min_ready_pods"] >= 2
    assert_safe(report)
    uncordon(sandbox, node)


def test_single_replica_deployment_moves_without_downtime_and_recreate_is_reported(sandbox, names):
    node = names[2]
    ns = "solo"
    pin(sandbox, node, [namespace(ns), deployment(ns, "worker", 1), budget(ns, "worker", "worker", minAvailable=1),
                        deployment(ns, "batch", 1, strategy={"type": "Recreate"})], ns, expect=2)
    assert_holds_workload(sandbox, node)
    result = drain(sandbox, [node])
    assert result["rc"] == 0, result["output"]
    outcome = result["nodes"][node]
    assert [(r["deployment"], r["ready"]) for r in outcome["restarted"]] == [("solo/worker", True)]
    # (pods of earlier tests may have landed on this node too: look at this test's namespace only)
    assert [e.split("/")[1].rsplit("-", 2)[0] for e in outcome["evicted"] if e.startswith(ns + "/")] == ["batch"]
    assert outcome["downtime"] and "Recreate" in outcome["downtime"][0]["reason"]
    report = sandbox.report()
    assert report["deployments"]["solo/worker"]["zero_ready_seconds"] == 0
    assert report["deployments"]["solo/batch"]["zero_ready_seconds"] > 0  # the downtime the result announced
    assert [r for r in ready_on(sandbox, ns) if r.metadata.labels["app"] == "worker"][0].spec.node_name != node
    assert_safe(report)
    uncordon(sandbox, node)


def test_timeout_action_fail_names_every_pod_and_the_budget_holding_it(sandbox, names):
    node = names[3]
    ns = "stuck"
    pin(sandbox, node, [namespace(ns), deployment(ns, "db", 2), budget(ns, "db", "db", minAvailable=2)], ns, expect=2)
    assert_holds_workload(sandbox, node)
    result = drain(sandbox, [node], timeout=3)
    assert result["rc"] != 0
    outcome = result["nodes"][node]
    assert outcome["status"] == "failed" and len(outcome["remaining"]) == 2
    assert all(pod.startswith(ns + "/") for pod in outcome["remaining"])
    assert {b["pdb"] for b in outcome["blocking"]} == {"stuck/db"}
    for pod in outcome["remaining"]:
        assert pod in result["msg"]
    assert "PodDisruptionBudget stuck/db allows 0 disruption(s): it needs 2 healthy pods and has 2" in result["msg"]
    assert sandbox.core().read_node(node).spec.unschedulable is True
    assert len(ready_on(sandbox, ns, node)) == 2
    assert_safe(sandbox.report())


def test_timeout_action_skip_leaves_the_node_cordoned_and_drains_the_others(sandbox, names):
    stuck, free = names[3], names[4]
    pin(sandbox, free, [namespace("free"), deployment("free", "app", 2)], "free", expect=2)
    assert_holds_workload(sandbox, stuck)
    assert_holds_workload(sandbox, free)
    result = drain(sandbox, [stuck, free], timeout=3, timeout_action="skip")
    assert result["rc"] == 0, result["output"]
    assert result["skipped_nodes"] == [stuck] and result["drained"] == [free]
    assert result["nodes"][stuck]["status"] == "skipped" and "left cordoned" in result["nodes"][stuck]["message"]
    assert sandbox.core().read_node(stuck).spec.unschedulable is True
    assert_safe(sandbox.report())
    uncordon(sandbox, stuck, free)


def drain_intervals(events, since, namespaces):
    """Per node, in simulated seconds: [first eviction, last of its evicted pods gone] for pods of ``namespaces``."""
    spans = {}
    evicted = {}
    for e in events:
        if e["t"] < since or not str(e.get("pod") or "").startswith(namespaces):
            continue
        if e["kind"] == "pod.terminating" and e.get("how") == "evicted":
            evicted[e["uid"]] = e["node"]
            spans.setdefault(e["node"], [e["t"], None])
        elif e["kind"] == "pod.deleted" and e["uid"] in evicted:
            span = spans[evicted[e["uid"]]]
            span[1] = max(span[1] or e["t"], e["t"])
    return spans


def test_three_nodes_drain_concurrently(sandbox, names):
    trio = [names[1], names[2], names[4]]
    namespaces = tuple("trio-%d/" % index for index in range(len(trio)))
    for index, node in enumerate(trio):
        ns = "trio-%d" % index
        pin(sandbox, node, [namespace(ns), deployment(ns, "app", 8, shutdown=60, grace=60)], ns, expect=8)
        assert_holds_workload(sandbox, node)
    since = sandbox.now()
    result = drain(sandbox, trio)
    assert result["rc"] == 0, result["output"]
    for index, node in enumerate(trio):
        assert len([pod for pod in result["nodes"][node]["evicted"] if pod.startswith("trio-%d/" % index)]) == 8
    # Measured in the sandbox's simulated time, not wall time: each node's pods take their 60 s to shut down, and the
    # three drains overlap: every node's first eviction came before any node's last evicted pod was gone. Drained one
    # after the other, the second node's first eviction would follow the first node's last pod.
    spans = drain_intervals(sandbox.events(), since, namespaces)
    assert sorted(spans) == sorted(trio), spans
    assert all(end is not None and end - start >= 60 for start, end in spans.values()), spans
    latest_start = max(start for start, _end in spans.values())
    earliest_end = min(end for _start, end in spans.values())
    assert latest_start < earliest_end, "the drains did not overlap in simulated time: %s" % spans
    assert_safe(sandbox.report())
    uncordon(sandbox, *trio)


@pytest.mark.reference
def test_a_pod_under_two_budgets_stops_the_drain_before_any_change_naming_both(sandbox, names):
    node = names[5]
    ns = "doubly"
    pin(sandbox, node, [namespace(ns), deployment(ns, "cache", 2), budget(ns, "cache-a", "cache", maxUnavailable=1),
                        budget(ns, "cache-b", "cache", maxUnavailable=1)], ns, expect=2)
    result = drain(sandbox, [node], timeout=3)
    assert result["rc"] != 0
    outcome = result["nodes"][node]
    # the Eviction API would refuse both pods (HTTP 500): the drain sees it in the budgets and changes nothing
    assert outcome["status"] == "not started" and not outcome["cordoned"]
    assert sorted(outcome["remaining"]) == sorted("%s/%s" % (ns, p.metadata.name) for p in ready_on(sandbox, ns, node))
    assert {b["kind"] for b in outcome["blocking"]} == {"multiple_pdbs"}
    assert all(b["pdb"] == "doubly/cache-a, doubly/cache-b" for b in outcome["blocking"]), outcome["blocking"]
    assert "selected by 2 PodDisruptionBudgets (doubly/cache-a, doubly/cache-b)" in result["msg"]
    assert not sandbox.core().read_node(node).spec.unschedulable
    assert len(ready_on(sandbox, ns, node)) == 2
    assert_safe(sandbox.report())
    # Take the whole workload away. Left behind, its budget stayed at 0 disruptions for minutes on the real
    # kube-controller-manager after the second budget went, and a later drain of this node waited out its timeout.
    for name in ("cache-a", "cache-b"):
        sandbox.policy().delete_namespaced_pod_disruption_budget(name, ns)
    sandbox.apps().delete_namespaced_deployment("cache", ns)
    wait_for(lambda: not sandbox.core().list_namespaced_pod(ns).items, what="the pods of doubly/cache to go")


def _running(core, ns, selector, node, count):
    pods = [p for p in core.list_namespaced_pod(ns, label_selector=selector).items
            if p.status.phase == "Running" and p.spec.node_name == node and not p.metadata.deletion_timestamp]
    return pods if len(pods) == count else None


@pytest.mark.reference
def test_a_running_pod_that_never_turns_ready_is_evicted_while_its_budget_is_healthy(sandbox, names):
    """The Eviction API lets an unhealthy pod go when its budget is healthy (unhealthyPodEvictionPolicy IfHealthyBudget,
    the default): two Ready pods elsewhere keep the budget's minAvailable 2, so the warming pods do not block."""
    home, node = names[0], names[5]
    ns = "warming"
    ready = deployment(ns, "ready", 2)
    # two replicas: a Deployment of one would be restarted through its rolling update rather than evicted
    warming = deployment(ns, "warming", 2, annotations={"sandbox.nodeops.io/ready-seconds": "never"})
    for spec in (ready, warming):
        spec["spec"]["template"]["metadata"]["labels"]["group"] = "mixed"
    mixed = budget(ns, "mixed", "mixed", minAvailable=2)
    mixed["spec"]["selector"] = {"matchLabels": {"group": "mixed"}}
    pin(sandbox, home, [namespace(ns), ready], ns, expect=2)
    core = sandbox.core()
    others = [n for n in names if n != node]
    for name in others:
        core.patch_node(name, {"spec": {"unschedulable": True}})
    try:
        sandbox.apply(yaml.safe_dump_all([warming, mixed]))
        stuck = wait_for(lambda: _running(core, ns, "app=warming", node, 2), what="the two warming pods to run")
    finally:
        uncordon(sandbox, *others)
    wait_for(lambda: [b for b in [sandbox.policy().read_namespaced_pod_disruption_budget("mixed", ns)]
                      if b.status and b.status.expected_pods == 4 and b.status.current_healthy == 2],
             what="the budget to count 2 healthy pods of 4")
    assert sandbox.policy().read_namespaced_pod_disruption_budget("mixed", ns).status.disruptions_allowed == 0
    result = drain(sandbox, [node], timeout=30)
    assert result["rc"] == 0, result["output"]
    assert {"%s/%s" % (ns, p.metadata.name) for p in stuck} <= set(result["nodes"][node]["evicted"])
    ends = [e for e in sandbox.events() if e["kind"] == "pod.terminating" and e.get("uid") in {p.metadata.uid for p in stuck}]
    assert [e["how"] for e in ends] == ["evicted", "evicted"]
    assert len(ready_on(sandbox, ns, home)) == 2   # the Ready pods the budget guards never moved
    assert_safe(sandbox.report())
    uncordon(sandbox, node)


@pytest.mark.reference
def test_invariants_hold_for_every_non_force_drain(sandbox):
    assert_safe(sandbox.report())


@pytest.fixture(scope="module")
def force_sandbox(start_sandbox):
    return start_sandbox(nodes=3, azs=3, speed=20)


def test_timeout_action_force_deletes_what_the_budget_holds(force_sandbox):
    sandbox = force_sandbox
    node = sorted(n.metadata.name for n in sandbox.core().list_node().items)[0]
    ns = "forced"
    pin(sandbox, node, [namespace(ns), deployment(ns, "db", 2), budget(ns, "db", "db", minAvailable=2),
                        naked_pod(ns, "naked", node)], ns, expect=3)
    assert_holds_workload(sandbox, node)
    result = drain(sandbox, [node], timeout=3, timeout_action="force")
    assert result["rc"] == 0, result["output"]
    outcome = result["nodes"][node]
    assert outcome["status"] == "drained" and outcome["forced"]
    assert len(outcome["deleted"]) == 3 and "forced/naked" in outcome["deleted"]
    assert ready_on(sandbox, ns, node) == []
    report = sandbox.report()
    assert report["pdb_violations"] >= 1  # force breaks the budget on purpose, and the report shows it
    assert report["deleted_without_eviction"] == 3
