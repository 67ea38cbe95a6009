"""node_drain end to end on the sandbox: a single-replica Deployment is restarted only when its rolling update keeps
the old pod until the new one is Ready (maxUnavailable 0, maxSurge >= 1); otherwise its pod is evicted and its
PodDisruptionBudget decides. A restart never trades the budget for a move."""

import pytest

from tests.integration.modules.conftest import assert_safe
from tests.integration.modules.test_node_drain import budget, deployment, drain, namespace, pin, ready_on, uncordon

pytestmark = pytest.mark.reference   # also run on the reference backend (scripts/test.sh reference)


def rolling(max_unavailable, max_surge):
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable, "maxSurge": max_surge}}


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    # four nodes: one per scenario below, each drained node with three others to receive its pods
    return start_sandbox(nodes=4, azs=3, speed=20)


@pytest.fixture(scope="module")
def names(sandbox):
    return sorted(node.metadata.name for node in sandbox.core().list_node().items)


def guarded_worker(sandbox, node, ns, strategy):
    """One replica of ``ns/worker`` on ``node`` behind a PodDisruptionBudget of minAvailable 1; its pod."""
    pin(sandbox, node, [namespace(ns), deployment(ns, "worker", 1, strategy=strategy),
                        budget(ns, "worker", "worker", minAvailable=1)], ns, expect=1)
    [pod] = worker_pods(sandbox, ns)
    assert pod.spec.node_name == node
    return pod


def worker_pods(sandbox, ns):
    return [p for p in ready_on(sandbox, ns) if p.metadata.labels.get("app") == "worker"]


def key(pod):
    return "%s/%s" % (pod.metadata.namespace, pod.metadata.name)


# the restart would let the controller stop the only pod before its replacement is Ready
UNSAFE = [("unsafe-surge", rolling(1, 1), "maxUnavailable 1, maxSurge 1"),
          ("unsafe-nosurge", rolling(1, 0), "maxUnavailable 1, maxSurge 0")]


def test_preflight_lists_a_single_replica_it_cannot_restart_safely_as_blocked_naming_deployment_and_budget(sandbox, names):
    node = names[0]
    pods = dict((ns, guarded_worker(sandbox, node, ns, strategy)) for ns, strategy, _words in UNSAFE)
    since = sandbox.now() + 0.01
    for action in ("fail", "skip"):
        check = drain(sandbox, [node], check=True, timeout=3, timeout_action=action)
        assert check["rc"] == 0, check["output"]
        plan = check["nodes"][node]
        # not "no downtime": nothing restarted, the pods would be evicted and their budgets refuse
        assert plan["restarted"] == []
        assert plan["predicted"] == "blocked" and not check["preflight_ok"]
        assert "blocked" in check["msg"] and node in check["msg"]
        for ns, _strategy, fenceposts in UNSAFE:
            assert key(pods[ns]) in plan["evicted"] and key(pods[ns]) in plan["outcome"]
            [downtime] = [d for d in plan["downtime"] if d["pod"] == key(pods[ns])]
            [zero] = [b for b in plan["blocking"] if b["pod"] == key(pods[ns]) and b["kind"] == "pdb_zero"]
            assert zero["pdb"] == "%s/worker" % ns and zero["severity"] == "error"
            for reason in (downtime["reason"], zero["message"]):
                assert "Deployment %s/worker" % ns in reason and fenceposts in reason
                assert "PodDisruptionBudget %s/worker" % ns in reason
        assert plan["outcome"].endswith("the drain would fail" if action == "fail" else "left cordoned and skipped")
    assert sandbox.mutating_requests(since=since) == []


@pytest.mark.parametrize("index, ns, strategy, fenceposts, action", [
    (1, "drain-" + UNSAFE[0][0], UNSAFE[0][1], UNSAFE[0][2], "skip"),
    (2, "drain-" + UNSAFE[1][0], UNSAFE[1][1], UNSAFE[1][2], "fail"),
])
def test_a_drain_evicts_instead_of_restarting_so_the_budget_holds_the_node_and_is_never_violated(
        sandbox, names, index, ns, strategy, fenceposts, action):
    node = names[index]
    old = guarded_worker(sandbox, node, ns, strategy)
    result = drain(sandbox, [node], timeout=3, timeout_action=action)
    report = sandbox.report()
    assert_safe(report)  # no PodDisruptionBudget violated, no pod ended without an eviction
    assert report["deployments"]["%s/worker" % ns]["zero_ready_seconds"] == 0
    outcome = result["nodes"][node]
    assert outcome["restarted"] == [], "a restart bypasses the budget"
    template = sandbox.apps().read_namespaced_deployment("worker", ns).spec.template
    assert "kubectl.kubernetes.io/restartedAt" not in (template.metadata.annotations or {})
    # the eviction was refused (429): the node is held, blocked by the budget, and the pod is still up where it was
    if action == "skip":
        assert result["rc"] == 0, result["output"]
        assert result["skipped_nodes"] == [node] and outcome["status"] == "skipped"
        text = outcome["message"]
    else:
        assert result["rc"] != 0 and result["failed_nodes"] == [node] and outcome["status"] == "failed"
        text = result["msg"]
    assert key(old) in outcome["remaining"] and key(old) not in outcome["evicted"]
    assert [b["pdb"] for b in outcome["blocking"] if b["pod"] == key(old)] == ["%s/worker" % ns]
    assert "PodDisruptionBudget %s/worker" % ns in text and "Deployment %s/worker" % ns in text and fenceposts in text
    [down] = [d for d in outcome["downtime"] if d["pod"] == key(old)]
    assert down["deployment"] == "%s/worker" % ns and fenceposts in down["reason"]
    assert [(p.metadata.uid, p.spec.node_name) for p in worker_pods(sandbox, ns)] == [(old.metadata.uid, node)]
    uncordon(sandbox, node)


def test_a_single_replica_that_keeps_its_old_pod_until_the_new_one_is_ready_is_restarted_without_downtime(sandbox, names):
    node = names[3]
    ns = "safe"
    old = guarded_worker(sandbox, node, ns, rolling(0, 1))

    check = drain(sandbox, [node], check=True)
    assert check["rc"] == 0, check["output"]
    plan = check["nodes"][node]
    [restart] = [r for r in plan["restarted"] if r["pod"] == key(old)]
    assert restart["deployment"] == "safe/worker" and restart["zero_downtime"]
    assert "maxUnavailable 0, maxSurge 1" in restart["reason"]  # the pre-flight says why the restart is safe
    assert not [d for d in plan["downtime"] if d["pod"] == key(old)]
    assert not [b for b in plan["blocking"] if b["pod"] == key(old)]

    result = drain(sandbox, [node])
    assert result["rc"] == 0, result["output"]
    outcome = result["nodes"][node]
    assert outcome["status"] == "drained"
    assert [(r["deployment"], r["ready"]) for r in outcome["restarted"]] == [("safe/worker", True)]
    assert key(old) not in outcome["evicted"]
    [new] = worker_pods(sandbox, ns)
    assert new.metadata.uid != old.metadata.uid and new.spec.node_name != node
    report = sandbox.report()
    assert report["deployments"]["safe/worker"]["zero_ready_seconds"] == 0
    assert_safe(report)
    uncordon(sandbox, node)
