# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""node_drain.Drain against an in-memory API: what gets evicted, retried, restarted, skipped, forced, and reported."""

from __future__ import annotations

import copy
import json
import threading
import time

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.options import DrainOptions
from ansible_collections.nodeops.rollout.plugins.module_utils.runners import node_drain as drain
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fake_kube import FakeKube, api_error, make_node, make_pod, pdb_429

FAST = {"poll_interval": 0.01, "retry_max_delay": 0.05}


def options(**params):
    merged = dict(FAST)
    merged.update(params)
    return DrainOptions(merged)


def run(kube, names, check_mode=False, diff=False, **params):
    return drain.Drain(kube, names, options(**params), check_mode=check_mode, diff=diff,
                       now_text=lambda: "2024-05-01T12:00:00Z").run()


def cluster(*names, linger=1):
    kube = FakeKube(linger=linger)
    for name in names:
        kube.add_node(make_node(name))
    return kube


def budget(name, labels, namespace="shop", **spec):
    spec["selector"] = {"matchLabels": labels}
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def single_replica(kube, node, strategy=None):
    dep = {"metadata": {"name": "worker", "namespace": "shop"}, "spec": {"replicas": 1, "template": {"metadata": {}}}}
    if strategy:
        dep["spec"]["strategy"] = strategy
    kube.deployments["shop/worker"] = dep
    kube.replicasets.append({"metadata": {"name": "worker-rs", "namespace": "shop",
                                          "ownerReferences": [{"kind": "Deployment", "name": "worker", "controller": True}]},
                             "spec": {"replicas": 1, "template": {"metadata": {}}}})
    kube.add_pod(make_pod("worker-1", node, owner=("ReplicaSet", "worker-rs"), labels={"app": "worker"}))
    return dep


WEB_TG = {"name": "web", "arn": "arn:tg/web", "target_type": "instance", "deregistration_delay": 60}
PODS_TG = {"name": "pods", "arn": "arn:tg/pods", "target_type": "ip", "deregistration_delay": 60}


class TargetGroups:
    """The target groups as a load balancer controller changes them: each read answers the next of ``answers`` (the
    last for good), and records whether any pod had been evicted by then."""

    def __init__(self, kube, answers):
        self.kube, self.answers, self.reads = kube, list(answers), []

    def __call__(self):
        self.reads.append(any(verb == "evict_pod" for verb, _target in self.kube.mutating()))
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def drain_behind(kube, answers, timeout="60s"):
    """A drain of n1 and n2 behind the target group web, on a clock that moves only when the drain sleeps."""
    targets = TargetGroups(kube, answers)
    slept = []
    result = drain.Drain(kube, ["n1", "n2"], options(exclude_from_load_balancers=True, target_leave_timeout=timeout),
                         now_text=lambda: "2024-05-01T12:00:00Z", target_groups=[WEB_TG], read_targets=targets,
                         sleep=slept.append, clock=lambda: float(sum(slept))).run()
    return result, targets, slept


def test_no_pod_is_evicted_before_the_labelled_nodes_have_left_their_target_groups():
    kube = cluster("n1", "n2")
    kube.add_pod(make_pod("web-1", "n1"))
    kube.add_pod(make_pod("web-2", "n2"))
    # the controller deregisters n1 first, then n2; an instance of another group stays healthy, and is not waited for
    answers = [{"arn:tg/web": {"i-n1": "healthy", "i-n2": "healthy", "i-other": "healthy"}},
               {"arn:tg/web": {"i-n1": "draining", "i-n2": "healthy", "i-other": "healthy"}},
               {"arn:tg/web": {"i-n1": "draining", "i-n2": "draining", "i-other": "healthy"}}]
    result, targets, slept = drain_behind(kube, answers)
    assert [result["nodes"][name]["status"] for name in ("n1", "n2")] == ["drained", "drained"]
    # three reads, all before the first eviction, half a second apart
    assert targets.reads == [False, False, False] and slept[:2] == [drain.LEAVE_POLL_SECONDS] * 2
    assert result["load_balancers"] == {"waited_seconds": 1.0, "still_serving": {}, "timed_out": False}


def test_a_node_that_never_leaves_is_drained_once_the_wait_is_over_and_named():
    kube = cluster("n1", "n2")
    kube.add_pod(make_pod("web-1", "n1"))
    answers = [{"arn:tg/web": {"i-n1": "draining", "i-n2": "healthy"}}]
    result, targets, slept = drain_behind(kube, answers, timeout="5s")
    assert result["nodes"]["n1"]["status"] == "drained" and kube.pods == {}
    assert result["load_balancers"] == {"waited_seconds": 5.0, "still_serving": {"n2": ["web"]}, "timed_out": True}
    # ten reads half a second apart, then the pods went
    assert len(targets.reads) == 11 and not any(targets.reads)


def test_a_drain_without_target_groups_waits_for_nothing_and_one_whose_nodes_are_out_waits_no_more():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1"))
    assert run(kube, ["n1"], exclude_from_load_balancers=True)["load_balancers"] is None
    kube = cluster("n1", "n2")
    result, targets, _slept = drain_behind(kube, [{"arn:tg/web": {}}])
    assert result["load_balancers"] == {"waited_seconds": 0.0, "still_serving": {}, "timed_out": False} and len(targets.reads) == 1


def test_a_node_is_cordoned_and_every_movable_pod_evicted_daemonset_and_mirror_pods_left_alone():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1"))
    kube.add_pod(make_pod("web-2", "n1"))
    kube.add_pod(make_pod("agent", "n1", namespace="kube-system", owner=("DaemonSet", "agent")))
    kube.add_pod(make_pod("static", "n1", namespace="kube-system", owner=None, annotations={"kubernetes.io/config.mirror": "x"}))
    kube.add_pod(make_pod("job-1", "n1", owner=("Job", "nightly"), phase="Succeeded"))
    result = run(kube, ["n1"])
    node = result["nodes"]["n1"]
    assert node["status"] == "drained" and node["cordoned"] and result["changed"]
    assert sorted(node["evicted"]) == ["shop/web-1", "shop/web-2"]
    assert node["deleted"] == ["shop/job-1"]
    assert sorted(item["pod"] for item in node["skipped"]) == ["kube-system/agent", "kube-system/static"]
    assert kube.nodes["n1"]["spec"]["unschedulable"] is True
    assert sorted(kube.pods) == ["kube-system/agent", "kube-system/static"]
    assert result["drained"] == ["n1"] and result["msg"].startswith("1 node(s) drained")
    # when the drain began (before the cordon), when this node's began and ended: a report draws the bar from them
    assert result["started_at"] <= node["started_at"] <= node["drained_at"]


@pytest.mark.parametrize("exclude", [True, False])
def test_the_load_balancer_exclusion_label_goes_on_with_the_cordon_before_any_eviction(exclude):
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1"))
    patches = []
    original = kube.patch_node

    def patch_node(name, patch):
        patches.append(copy.deepcopy(patch))
        return original(name, patch)

    kube.patch_node = patch_node
    result = run(kube, ["n1"], exclude_from_load_balancers=exclude)
    assert result["nodes"]["n1"]["status"] == "drained" and result["nodes"]["n1"]["cordoned"]
    cordon, drained = patches
    assert cordon["spec"]["unschedulable"] is True
    assert (cordon["metadata"].get("labels") or {}) == ({"node.kubernetes.io/exclude-from-external-load-balancers": "true"} if exclude else {})
    assert drained == {"metadata": {"annotations": {"nodeops.rollout/drained-at": result["nodes"]["n1"]["drained_at"]}}}
    verbs = [verb for verb, _target in kube.mutating()]
    assert verbs.index("patch_node") < verbs.index("evict_pod")
    labels = kube.nodes["n1"]["metadata"]["labels"]
    assert (labels.get("node.kubernetes.io/exclude-from-external-load-balancers") == "true") is exclude


def test_a_drained_node_drains_again_without_change():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1"))
    run(kube, ["n1"])
    again = run(kube, ["n1"])
    assert not again["changed"] and again["nodes"]["n1"]["status"] == "drained"


def test_refused_evictions_are_retried_with_backoff_until_the_budget_allows():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1", labels={"app": "web"}))
    kube.pdbs.append(budget("web", {"app": "web"}, minAvailable=2))
    kube.eviction_script["shop/web-1"] = [pdb_429(), pdb_429(), pdb_429(), None]
    started = time.monotonic()
    result = run(kube, ["n1"], retry_max_delay=1.6)
    node = result["nodes"]["n1"]
    assert node["status"] == "drained" and node["evicted"] == ["shop/web-1"]
    assert node["eviction_retries"] == 3 and node["blocking"] == []
    assert [entry[0] for entry in kube.requests if entry[0] == "evict_pod"] == ["evict_pod"] * 4
    # never a hot loop: each refusal closed the budget for at least half the first delay (1.6 / 16 / 2 s)
    assert time.monotonic() - started >= 3 * 0.05


def twelve_pods_behind_one_budget(kube):
    """Twelve pods on n1 behind one budget that allows 2 disruptions at a time, enforced by the fake."""
    kube.enforce_pdbs = True
    for index in range(12):
        kube.add_pod(make_pod("web-%d" % index, "n1", labels={"app": "web"}))
    pdb = budget("web", {"app": "web"}, maxUnavailable=2)
    pdb["status"] = {"disruptionsAllowed": 2}
    kube.pdbs.append(pdb)


def test_evictions_are_paced_by_the_budget_instead_of_refused_pod_by_pod():
    kube = cluster("n1", linger=2)
    twelve_pods_behind_one_budget(kube)
    result = run(kube, ["n1"], retry_max_delay=0.05)
    node = result["nodes"]["n1"]
    assert node["status"] == "drained" and len(node["evicted"]) == 12
    evictions = [entry for entry in kube.requests if entry[0] == "evict_pod"]
    reads = [entry for entry in kube.requests if entry[0] == "get_pdb"]
    # two at a time as the budget allows; the budget is read between waves instead of refusing every other pod
    assert len(evictions) <= 12 + 3 and node["eviction_retries"] <= 3
    assert reads and all(target == "shop/web" for _verb, target in reads)


def test_nodes_sharing_a_budget_read_it_one_at_a_time_and_are_never_refused():
    """Four nodes drain at once, their twelve pods behind one budget allowing 2: a count read from the budget is spent
    once between them (not once per node), so the budget refuses nothing."""
    names = ("n1", "n2", "n3", "n4")
    kube = cluster(*names, linger=2)
    kube.enforce_pdbs = True
    for name in names:
        for index in range(3):
            kube.add_pod(make_pod("web-%s-%d" % (name, index), name, labels={"app": "web"}))
    pdb = budget("web", {"app": "web"}, maxUnavailable=2)
    pdb["status"] = {"disruptionsAllowed": 2}
    kube.pdbs.append(pdb)
    result = run(kube, list(names), retry_max_delay=0.05)
    assert result["drained"] == list(names)
    evictions = [entry for entry in kube.requests if entry[0] == "evict_pod"]
    assert len(evictions) == 12
    assert sum(node["eviction_retries"] for node in result["nodes"].values()) == 0


class WatchedBudgets(FakeKube):
    """A cluster whose budgets can be watched: the watch sends a budget's new state whenever its status changes."""

    closed = False

    def list_pdbs_versioned(self):
        return self.list_pdbs(), "1"

    def open_pdb_watch(self, resource_version, timeout_seconds):  # pylint: disable=unused-argument
        kube = self

        class Response:
            def stream(self, amt=None, decode_content=False):  # pylint: disable=unused-argument
                seen = {}
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and not kube.closed:
                    with kube.lock:
                        budgets = copy.deepcopy(kube.pdbs)
                    for budget in budgets:
                        key = budget["metadata"]["name"]
                        if seen.get(key) != budget.get("status"):
                            seen[key] = budget.get("status")
                            yield json.dumps({"type": "MODIFIED", "object": budget}).encode() + b"\n"
                    time.sleep(0.002)

            def release_conn(self):
                pass

        return Response()


def drain_behind_one_budget(kube, watch):
    twelve_pods_behind_one_budget(kube)
    result = drain.Drain(kube, ["n1"], options(retry_max_delay=0.05), watch=watch,
                         now_text=lambda: "2024-05-01T12:00:00Z").run()
    kube.closed = True
    assert result["drained"] == ["n1"] and len(result["nodes"]["n1"]["evicted"]) == 12
    return len([entry for entry in kube.requests if entry[0] == "get_pdb"])


def test_a_watched_budget_allowing_nothing_is_read_again_when_it_changes_not_every_poll():
    """Each pod takes 12 looks at its node to go: a budget at 0 is read at every look without a watch of the budgets,
    and with one only when the watch shows a disruption freed, or every fourth poll interval."""
    polled = drain_behind_one_budget(cluster("n1", linger=12), watch=False)
    kube = WatchedBudgets(linger=12)
    kube.add_node(make_node("n1"))
    watched = drain_behind_one_budget(kube, watch=True)
    # 12 pods two at a time: 6 rounds of 12 polls; about 3 reads a round with the watch, 10 without
    assert 3 * watched < polled


def test_retry_after_from_the_server_is_honoured():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1"))
    kube.eviction_script["shop/web-1"] = [api_error(429, "Too many requests", "TooManyRequests", headers={"Retry-After": "0.3"}), None]
    started = time.monotonic()
    result = run(kube, ["n1"], retry_max_delay=0.01)
    assert result["nodes"]["n1"]["status"] == "drained"
    assert time.monotonic() - started >= 0.3


def test_timeout_fail_names_every_pod_still_there_and_the_budget_holding_it():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1", labels={"app": "web"}))
    kube.add_pod(make_pod("api-1", "n1", owner=("ReplicaSet", "api-rs")))
    kube.pdbs.append(budget("web", {"app": "web"}, minAvailable=2))
    kube.eviction_script["shop/web-1"] = [pdb_429()]
    result = run(kube, ["n1"], timeout=1)
    node = result["nodes"]["n1"]
    assert result["failed"] and result["failed_nodes"] == ["n1"]
    assert node["status"] == "failed" and node["remaining"] == ["shop/web-1"]
    assert node["blocking"][0]["pod"] == "shop/web-1" and node["blocking"][0]["pdb"] == "shop/web"
    assert "needs 2 healthy pods" in node["blocking"][0]["message"]
    assert result["msg"].startswith("node n1 not drained after 1s (timeout): 1 pod(s) still there: shop/web-1 "
                                    "(eviction refused by PodDisruptionBudget shop/web")
    assert node["evicted"] == ["shop/api-1"]
    assert kube.nodes["n1"]["spec"]["unschedulable"] is True


def test_a_budget_known_to_allow_nothing_gets_no_eviction_and_is_named_at_the_timeout():
    kube = cluster("n1")
    kube.enforce_pdbs = True
    kube.add_pod(make_pod("db-0", "n1", labels={"app": "db"}))
    pdb = budget("db", {"app": "db"}, minAvailable=1)
    pdb["status"] = {"disruptionsAllowed": 0, "desiredHealthy": 1, "currentHealthy": 1}
    kube.pdbs.append(pdb)
    result = run(kube, ["n1"], timeout=1, poll_interval=0.2)
    assert [entry for entry in kube.requests if entry[0] == "evict_pod"] == []
    assert 2 <= len([entry for entry in kube.requests if entry[0] == "get_pdb"]) <= 7  # read once per poll interval
    assert "shop/db-0 (waiting: PodDisruptionBudget shop/db allows 0 disruption(s): it needs 1 healthy pods and has 1)" in result["msg"]
    assert result["nodes"]["n1"]["blocking"][0]["pdb"] == "shop/db"


def test_timeout_skip_leaves_the_node_cordoned_and_goes_on():
    kube = cluster("n1", "n2")
    kube.add_pod(make_pod("web-1", "n1", labels={"app": "web"}))
    kube.add_pod(make_pod("web-2", "n2", labels={"app": "web"}))
    kube.pdbs.append(budget("web", {"app": "web"}, minAvailable=2))
    kube.eviction_script["shop/web-1"] = [pdb_429()]
    result = run(kube, ["n1", "n2"], timeout=1, timeout_action="skip")
    assert "failed" not in result
    assert result["skipped_nodes"] == ["n1"] and result["drained"] == ["n2"]
    assert result["nodes"]["n1"]["status"] == "skipped" and "shop/web-1" in result["nodes"]["n1"]["message"]
    assert kube.nodes["n1"]["spec"]["unschedulable"] is True


def test_timeout_force_deletes_what_is_left():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1", labels={"app": "web"}))
    kube.eviction_script["shop/web-1"] = [pdb_429()]
    result = run(kube, ["n1"], timeout=1, timeout_action="force")
    node = result["nodes"]["n1"]
    assert node["status"] == "drained" and node["forced"] and node["deleted"] == ["shop/web-1"]
    assert "shop/web-1" not in kube.pods


def test_unevictable_pods_fail_before_anything_changes():
    kube = cluster("n1", "n2")
    kube.add_pod(make_pod("naked", "n1", owner=None))
    kube.add_pod(make_pod("cache", "n2", volumes=[{"name": "tmp", "emptyDir": {}}]))
    kube.add_pod(make_pod("keep", "n2", annotations={"karpenter.sh/do-not-disrupt": "true"}))
    kube.add_pod(make_pod("web-1", "n2"))
    result = run(kube, ["n1", "n2"])
    assert result["failed"] and not result["changed"]
    assert kube.mutating() == []
    assert "nothing was changed" in result["msg"]
    for words in ("shop/naked on n1: not managed by a controller; set force", "shop/cache on n2: uses emptyDir; set delete_emptydir_data",
                  'shop/keep on n2: annotated karpenter.sh/do-not-disrupt: "true"; set force'):
        assert words in result["msg"]
    kinds = sorted(b["kind"] for b in result["nodes"]["n2"]["blocking"])
    assert kinds == ["do_not_disrupt", "emptydir"]


def test_options_unblock_those_pods():
    kube = cluster("n1")
    kube.add_pod(make_pod("naked", "n1", owner=None))
    kube.add_pod(make_pod("cache", "n1", volumes=[{"name": "tmp", "emptyDir": {}}]))
    kube.add_pod(make_pod("keep", "n1", annotations={"karpenter.sh/do-not-disrupt": "true"}))
    result = run(kube, ["n1"], force=True, delete_emptydir_data=True)
    assert sorted(result["nodes"]["n1"]["evicted"]) == ["shop/cache", "shop/keep", "shop/naked"]


def test_unevictable_pods_with_skip_skip_their_node_at_once_without_evicting_there():
    kube = cluster("n1", "n2")
    kube.add_pod(make_pod("naked", "n1", owner=None))
    kube.add_pod(make_pod("web-1", "n1"))
    kube.add_pod(make_pod("web-2", "n2"))
    result = run(kube, ["n1", "n2"], timeout_action="skip")
    assert result["skipped_nodes"] == ["n1"] and result["drained"] == ["n2"]
    assert [entry[1] for entry in kube.requests if entry[0] == "evict_pod"] == ["shop/web-2"]
    assert "pods that cannot be evicted" in result["nodes"]["n1"]["message"]


def test_unevictable_pods_with_force_are_deleted_after_the_rest():
    kube = cluster("n1")
    kube.add_pod(make_pod("naked", "n1", owner=None))
    kube.add_pod(make_pod("web-1", "n1"))
    result = run(kube, ["n1"], timeout_action="force")
    node = result["nodes"]["n1"]
    assert node["status"] == "drained" and node["evicted"] == ["shop/web-1"] and node["deleted"] == ["shop/naked"]
    assert [entry[0] for entry in kube.requests if entry[0] in ("evict_pod", "delete_pod")] == ["evict_pod", "delete_pod"]


def test_two_budgets_on_a_pod_found_at_eviction_are_reported_as_a_blocker():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1", labels={"app": "web"}))
    kube.eviction_script["shop/web-1"] = [api_error(500, "This pod has more than one PodDisruptionBudget, which the eviction "
                                                         "subresource does not support.", "InternalError")]
    result = run(kube, ["n1"], timeout=30)
    node = result["nodes"]["n1"]
    assert node["status"] == "failed" and node["blocking"][0]["kind"] == "multiple_pdbs"
    assert "more than one PodDisruptionBudget" in result["msg"]
    assert node["seconds"] < 5  # nothing to wait for: failed as soon as the rest was done


def test_an_eviction_the_identity_may_not_make_names_the_permission_and_its_rule():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1", labels={"app": "web"}))
    kube.eviction_script["shop/web-1"] = [api_error(403, 'pods "web-1" is forbidden: User "rollout" cannot create resource '
                                                         '"pods/eviction" in API group "" in the namespace "shop"', "Forbidden")]
    result = run(kube, ["n1"], timeout=30)
    node = result["nodes"]["n1"]
    [blocking] = node["blocking"]
    assert node["status"] == "failed" and blocking["kind"] == "api_error"
    assert (blocking["permission"]["verb"], blocking["permission"]["resource"]) == ("create", "pods/eviction")
    assert ('permission denied: Kubernetes refused create pods/eviction (core API group) in namespace "shop" to User "rollout"; '
            'granted by ClusterRole nodeops-rollout rule') in result["msg"]
    assert node["seconds"] < 5  # a refusal of permission is not retried


def test_two_budgets_known_up_front_fail_before_changes():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1", labels={"app": "web"}))
    kube.pdbs += [budget("a", {"app": "web"}, minAvailable=1), budget("b", {"app": "web"}, maxUnavailable=1)]
    result = run(kube, ["n1"])
    assert result["failed"] and kube.mutating() == []
    assert "selected by 2 PodDisruptionBudgets (shop/a, shop/b)" in result["msg"]


def test_single_replica_deployment_is_restarted_not_evicted():
    kube = cluster("n1", "n2")
    single_replica(kube, "n1")
    kube.restart_moves["shop/worker"] = ("shop/worker-1", make_pod("worker-2", "n2", owner=("ReplicaSet", "worker-rs2")))
    result = run(kube, ["n1"])
    node = result["nodes"]["n1"]
    assert node["status"] == "drained" and node["evicted"] == []
    assert node["restarted"] == [{"pod": "shop/worker-1", "deployment": "shop/worker", "ready": True}]
    patches = [target for verb, target in kube.requests if verb == "patch_deployment"]
    assert patches == ["shop/worker"]
    annotations = kube.deployments["shop/worker"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"kubectl.kubernetes.io/restartedAt": "2024-05-01T12:00:00Z"}


def test_single_replica_that_cannot_surge_is_evicted_and_reported_as_downtime():
    kube = cluster("n1")
    single_replica(kube, "n1", strategy={"type": "Recreate"})
    result = run(kube, ["n1"])
    node = result["nodes"]["n1"]
    assert node["evicted"] == ["shop/worker-1"] and node["restarted"] == []
    assert node["downtime"][0]["pod"] == "shop/worker-1" and "Recreate" in node["downtime"][0]["reason"]


def with_claim(kube, pod_key, claim="data", zone="us-east-1a", modes=("ReadWriteOnce",)):
    """Give the pod a PersistentVolumeClaim bound to a volume pinned to ``zone``."""
    kube.pods[pod_key]["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    kube.claims.append({"metadata": {"name": claim, "namespace": "shop"}, "spec": {"volumeName": "pv-" + claim, "accessModes": list(modes)},
                        "status": {"phase": "Bound", "accessModes": list(modes)}})
    kube.volumes.append({"metadata": {"name": "pv-" + claim}, "spec": {"accessModes": list(modes), "nodeAffinity": {"required": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}}})


def test_a_single_replica_pod_holding_a_read_write_once_volume_is_evicted_not_restarted():
    kube = cluster("n1")
    kube.add_node(make_node("n2", az="us-east-1a"))
    single_replica(kube, "n1")
    with_claim(kube, "shop/worker-1")
    preflight = run(kube, ["n1"], check_mode=True)["nodes"]["n1"]
    assert preflight["restarted"] == [] and preflight["evicted"] == ["shop/worker-1"]
    assert [item["pod"] for item in preflight["downtime"]] == ["shop/worker-1"]
    assert "ReadWriteOnce claim(s) data: the new pod of a restart could never attach" in preflight["downtime"][0]["reason"]
    zonal = [b for b in preflight["blocking"] if b["kind"] == "zonal_volume"]
    assert zonal and "volume pv-data (claim data) is pinned to us-east-1a" in zonal[0]["message"] and zonal[0]["severity"] == "warning"
    node = run(kube, ["n1"])["nodes"]["n1"]
    assert node["evicted"] == ["shop/worker-1"] and node["restarted"] == []
    assert not [target for verb, target in kube.requests if verb == "patch_deployment"]
    # a ReadWriteMany volume can be attached by the new pod on another node: restarted as before
    many = cluster("n1", "n2")
    single_replica(many, "n1")
    with_claim(many, "shop/worker-1", modes=("ReadWriteMany",))
    many.restart_moves["shop/worker"] = ("shop/worker-1", make_pod("worker-2", "n2", owner=("ReplicaSet", "worker-rs2")))
    assert run(many, ["n1"])["nodes"]["n1"]["restarted"][0]["pod"] == "shop/worker-1"


def test_a_pod_whose_pinned_volume_could_start_nowhere_stops_the_drain_before_any_change():
    kube = cluster("n1")
    kube.add_node(make_node("n2", az="us-east-1b"))
    kube.add_pod(make_pod("db-1", "n1"))
    with_claim(kube, "shop/db-1", zone="us-east-1a")
    check = run(kube, ["n1"], check_mode=True, new_node_zones=["us-east-1b", "us-east-1c"])
    errors = [b for b in check["nodes"]["n1"]["blocking"] if b["kind"] == "volume_without_node"]
    assert errors[0]["severity"] == "error" and check["nodes"]["n1"]["predicted"] == "blocked"
    result = run(kube, ["n1"], timeout_action="skip", new_node_zones=["us-east-1b", "us-east-1c"])
    assert result.get("failed") and result["changed"] is False and not kube.mutating()
    assert "shop/db-1 on n1: volume pv-data (claim data) is pinned to us-east-1a, where no schedulable node stays and the " \
           "group launches no new node (its zones: us-east-1b, us-east-1c)" in result["msg"]
    # a zone new nodes come in is a home; without new_node_zones the pod is only reported: it waits for a node there
    home = run(kube, ["n1"], check_mode=True, new_node_zones=["us-east-1a"])["nodes"]["n1"]["blocking"]
    assert [b["kind"] for b in home if b["kind"] in ("zonal_volume", "volume_without_node")] == ["zonal_volume"]
    warned = run(kube, ["n1"], check_mode=True)["nodes"]["n1"]["blocking"]
    assert [b["severity"] for b in warned if b["kind"] == "volume_without_node"] == ["warning"]


def test_on_a_node_that_is_not_ready_pods_past_their_grace_are_deleted_with_grace_0_and_named():
    from datetime import datetime, timezone  # pylint: disable=import-outside-toplevel
    kube = FakeKube(linger=10 ** 6)   # no kubelet confirms an evicted pod gone
    kube.add_node(make_node("lost", ready=False))
    kube.nodes["lost"]["status"]["conditions"] = [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                                                   "message": "Kubelet stopped posting node status."}]
    kube.add_pod(make_pod("web-1", "lost"))
    kube.add_pod(make_pod("agent", "lost", namespace="kube-system", owner=("DaemonSet", "agent")))
    # the evictions' deletionTimestamp is 12:00:00 (the fake's); 9 s later nothing is due, 11 s later it is
    early = drain.Drain(kube, ["lost"], options(timeout="1s"), now_text=lambda: "2024-05-01T12:00:00Z",
                        utc_now=lambda: datetime(2024, 5, 1, 12, 0, 9, tzinfo=timezone.utc)).run()
    assert early["nodes"]["lost"]["force_deleted"] == [] and "shop/web-1" in kube.pods
    result = drain.Drain(kube, ["lost"], options(), now_text=lambda: "2024-05-01T12:00:00Z",
                         utc_now=lambda: datetime(2024, 5, 1, 12, 0, 11, tzinfo=timezone.utc)).run()
    node = result["nodes"]["lost"]
    assert node["status"] == "drained" and sorted(kube.pods) == ["kube-system/agent"]
    assert [entry["pod"] for entry in node["force_deleted"]] == ["shop/web-1"]
    assert node["force_deleted"][0]["reason"].startswith(
        "node lost is not Ready (NodeStatusUnknown: Kubelet stopped posting node status.): no kubelet confirmed the pod gone")


def test_on_a_ready_node_no_pod_is_deleted_with_grace_0():
    from datetime import datetime, timezone  # pylint: disable=import-outside-toplevel
    kube = FakeKube(linger=10 ** 6)
    kube.add_node(make_node("n1"))
    kube.add_pod(make_pod("web-1", "n1"))
    result = drain.Drain(kube, ["n1"], options(timeout="1s"), now_text=lambda: "2024-05-01T12:00:00Z",
                         utc_now=lambda: datetime(2024, 5, 1, 13, 0, 0, tzinfo=timezone.utc)).run()
    assert result["nodes"]["n1"]["force_deleted"] == [] and result.get("failed") and "shop/web-1" in kube.pods


UNSAFE_RESTART = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}


def guarded_single_replica(kube, node, strategy):
    """A single-replica Deployment behind a budget of minAvailable 1, which allows 0 disruptions."""
    single_replica(kube, node, strategy=strategy)
    kube.enforce_pdbs = True
    pdb = budget("worker", {"app": "worker"}, minAvailable=1)
    pdb["status"] = {"disruptionsAllowed": 0, "desiredHealthy": 1, "currentHealthy": 1}
    kube.pdbs.append(pdb)


def test_a_single_replica_whose_restart_could_stop_it_first_is_evicted_so_its_budget_holds_it():
    kube = cluster("n1", "n2")
    guarded_single_replica(kube, "n1", UNSAFE_RESTART)
    result = run(kube, ["n1"], timeout=1, poll_interval=0.2)
    node = result["nodes"]["n1"]
    assert not [entry for entry in kube.requests if entry[0] == "patch_deployment"]  # never restarted
    assert "shop/worker-1" in kube.pods and node["restarted"] == [] and node["evicted"] == []
    assert result["failed"] and node["status"] == "failed" and node["remaining"] == ["shop/worker-1"]
    assert node["blocking"][0]["pdb"] == "shop/worker"
    assert [d["pod"] for d in node["downtime"]] == ["shop/worker-1"]
    for text in (node["downtime"][0]["reason"], node["blocking"][0]["message"], result["msg"]):
        assert "Deployment shop/worker" in text and "maxUnavailable 1, maxSurge 1" in text and "shop/worker" in text
    assert "PodDisruptionBudget shop/worker decides" in node["downtime"][0]["reason"]
    assert "shop/worker-1 (waiting: PodDisruptionBudget shop/worker allows 0 disruption(s)" in result["msg"]


def test_a_single_replica_refused_with_429_names_the_deployment_and_skips_the_node():
    kube = cluster("n1", "n2")
    single_replica(kube, "n1", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    kube.pdbs.append(budget("worker", {"app": "worker"}, minAvailable=1))
    kube.eviction_script["shop/worker-1"] = [pdb_429("worker")]
    result = run(kube, ["n1"], timeout=1, timeout_action="skip")
    node = result["nodes"]["n1"]
    assert "failed" not in result and result["skipped_nodes"] == ["n1"] and node["status"] == "skipped"
    assert not [entry for entry in kube.requests if entry[0] == "patch_deployment"]
    assert "eviction refused by PodDisruptionBudget shop/worker" in node["message"]
    assert "Deployment shop/worker" in node["message"] and "maxUnavailable 1, maxSurge 0" in node["message"]


def test_check_mode_lists_an_unsafe_single_replica_restart_as_blocked_downtime():
    kube = cluster("n1", "n2")
    guarded_single_replica(kube, "n1", UNSAFE_RESTART)
    result = run(kube, ["n1"], check_mode=True)
    assert kube.mutating() == []
    node = result["nodes"]["n1"]
    assert node["restarted"] == [] and node["evicted"] == ["shop/worker-1"]
    assert node["predicted"] == "blocked" and not result["preflight_ok"]
    assert [d["pod"] for d in node["downtime"]] == ["shop/worker-1"]
    assert "maxUnavailable 1, maxSurge 1" in node["downtime"][0]["reason"]
    zero = [b for b in node["blocking"] if b["kind"] == "pdb_zero"][0]
    assert zero["pdb"] == "shop/worker" and "Deployment shop/worker" in zero["message"]
    # one replica under minAvailable 1, and its restart refused: nothing gets past it but force or skip, which the
    # result says for the upgrade to stop on before any change
    assert zero["stops_upgrade"] is True
    assert [(stop["node"], stop["pod"], stop["pdb"]) for stop in result["would_stop"]] == [("n1", "shop/worker-1", "shop/worker")]
    assert [entry["value"] for entry in result["would_stop"][0]["gets_past"]] == ["force", "skip"]
    assert run(cluster("n1", "n2"), ["n1"], check_mode=True)["would_stop"] == []


def test_restart_can_be_turned_off():
    kube = cluster("n1")
    single_replica(kube, "n1")
    result = run(kube, ["n1"], restart_single_replica=False, implicit_budget=False)
    assert result["nodes"]["n1"]["evicted"] == ["shop/worker-1"]
    assert not [entry for entry in kube.requests if entry[0] in ("list_replicasets", "patch_deployment")]


def test_a_deployment_gone_meanwhile_falls_back_to_eviction():
    kube = cluster("n1")
    single_replica(kube, "n1")
    drainer = drain.Drain(kube, ["n1"], options())
    drainer.read()
    del kube.deployments["shop/worker"]
    drainer.pool = None
    result = drainer.run()
    assert result["nodes"]["n1"]["evicted"] == ["shop/worker-1"]


def test_check_mode_is_a_preflight_without_a_single_mutating_request():
    kube = cluster("n1", "n2")
    kube.add_pod(make_pod("web-1", "n1", labels={"app": "web"}))
    kube.add_pod(make_pod("web-2", "n2", labels={"app": "web"}))
    kube.add_pod(make_pod("naked", "n2", owner=None))
    kube.pdbs.append(budget("web", {"app": "web"}, minAvailable=2))
    single_replica(kube, "n1")
    result = run(kube, ["n1", "n2"], check_mode=True, diff=True)
    assert kube.mutating() == []
    n1, n2 = result["nodes"]["n1"], result["nodes"]["n2"]
    assert n1["restarted"][0]["pod"] == "shop/worker-1" and n1["evicted"] == ["shop/web-1"]
    assert ("shop/web-1", "pdb_zero", "error") in [(b["pod"], b["kind"], b["severity"]) for b in n1["blocking"]]
    assert ("shop/naked", "naked_pod") in [(b["pod"], b["kind"]) for b in n2["blocking"]]
    assert n1["predicted"] == "blocked" and "the drain would fail" in n1["outcome"]
    assert result["changed"] and not result["preflight_ok"]
    assert result["diff"][1]["after"] == {"unschedulable": True, "pods": ["shop/naked", "shop/web-2"]}


def test_a_drain_in_diff_mode_shows_each_node_cordoned_and_emptied():
    # --diff on a real drain (AWX's "Show Changes"): the diff is of the nodes as they were before the cordon
    kube = cluster("n1")
    kube.add_node(make_node("n2", unschedulable=True))
    kube.add_pod(make_pod("web-1", "n1"))
    kube.add_pod(make_pod("web-2", "n2"))
    result = run(kube, ["n1", "n2"], diff=True)
    assert result["drained"] == ["n1", "n2"] and "failed" not in result
    assert result["diff"] == [
        {"before_header": "node n1", "after_header": "node n1",
         "before": {"unschedulable": False, "pods": ["shop/web-1"]}, "after": {"unschedulable": True, "pods": []}},
        {"before_header": "node n2", "after_header": "node n2",
         "before": {"unschedulable": True, "pods": ["shop/web-2"]}, "after": {"unschedulable": True, "pods": []}}]


def test_nodes_are_drained_concurrently():
    kube = cluster("n1", "n2", "n3", linger=1)
    for name in ("n1", "n2", "n3"):
        kube.add_pod(make_pod("web-" + name, name))
    # No wall-clock bound: each node's drain, once it lists its node's pods, waits at a barrier until the other two
    # are listing theirs too. Concurrent drains all get there; drains one after another leave the first one waiting
    # alone and the barrier breaks (its timeout only bounds how long a failure takes to show).
    together = threading.Barrier(3, timeout=10)
    arrived = set()
    real_list = kube.list_pods

    def list_all_at_once(node=None, **kwargs):
        if node and threading.current_thread() is not threading.main_thread() and node not in arrived:
            arrived.add(node)
            together.wait()
        return real_list(node=node, **kwargs)

    kube.list_pods = list_all_at_once
    result = run(kube, ["n1", "n2", "n3"])
    assert result["drained"] == ["n1", "n2", "n3"]
    assert arrived == {"n1", "n2", "n3"} and not together.broken


def test_grace_period_zero_is_sent_not_dropped():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1"))
    run(kube, ["n1"], grace_period=0)
    assert kube.evictions == [("shop/web-1", {"grace_period": 0, "uid": "uid-shop-web-1"})]


@pytest.mark.parametrize("grace_period, seconds", [("30s", 30), ("2m", 120), ("45", 45), (45, 45), ("0s", 0)])
def test_grace_period_takes_a_duration(grace_period, seconds):
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1"))
    run(kube, ["n1"], grace_period=grace_period)
    assert kube.evictions == [("shop/web-1", {"grace_period": seconds, "uid": "uid-shop-web-1"})]


def test_a_new_pod_with_the_same_name_counts_as_gone_and_is_drained_too():
    kube = cluster("n1", linger=1)
    kube.add_pod(make_pod("db-0", "n1", owner=("StatefulSet", "db")))
    original = kube.list_pods
    state = {"calls": 0}

    def list_and_recreate(**kwargs):
        state["calls"] += 1 if kwargs.get("node") else 0   # the looks at the node, not the StatefulSet's pods counted
        if state["calls"] == 3:  # the evicted db-0 is gone and the StatefulSet made a new db-0 (new UID) on this node
            kube.terminating.pop("shop/db-0", None)
            pod = make_pod("db-0", "n1", owner=("StatefulSet", "db"))
            pod["metadata"]["uid"] = "uid-second"
            kube.add_pod(pod)
        return original(**kwargs)

    kube.list_pods = list_and_recreate
    result = run(kube, ["n1"])
    assert result["nodes"]["n1"]["status"] == "drained"
    assert result["nodes"]["n1"]["evicted"] == ["shop/db-0", "shop/db-0"]


def test_pod_selector_limits_the_drain():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1", labels={"app": "web"}))
    kube.add_pod(make_pod("api-1", "n1", labels={"app": "api"}))
    result = run(kube, ["n1"], pod_selector="app=web")
    assert result["nodes"]["n1"]["evicted"] == ["shop/web-1"]
    assert "shop/api-1" in kube.pods


def test_disable_eviction_deletes():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1"))
    result = run(kube, ["n1"], disable_eviction=True)
    assert result["nodes"]["n1"]["deleted"] == ["shop/web-1"] and result["nodes"]["n1"]["evicted"] == []


def test_a_missing_node_fails_before_anything_changes():
    kube = cluster("n1")
    with pytest.raises(drain.NodeNotFound):
        run(kube, ["n1", "ghost"])
    assert kube.mutating() == []


# ---- the implicit budget: a workload of two or more replicas without a PodDisruptionBudget keeps a Ready pod --------

class ReplacingKube(FakeKube):
    """A Deployment ``shop/worker`` of ``replicas`` pods, no budget: each evicted pod gets a replacement on node n9,
    Ready after ``ready_after`` lists of the namespace (never with None). Each eviction records how many of the
    workload's pods were Ready and not terminating when it was admitted."""

    def __init__(self, replicas=2, ready_after=2, strategy=None, **kwargs):
        super().__init__(**kwargs)
        self.ready_after = ready_after
        self.ready_at_eviction = []
        self.born = {}   # replacement key -> namespace lists left before it is Ready
        spec = {"replicas": replicas, "selector": {"matchLabels": {"app": "worker"}}, "template": {"metadata": {}}}
        if strategy:
            spec["strategy"] = strategy
        self.deployments["shop/worker"] = {"metadata": {"name": "worker", "namespace": "shop"}, "spec": spec}
        self.replicasets.append({"metadata": {"name": "worker-rs", "namespace": "shop",
                                              "ownerReferences": [{"kind": "Deployment", "name": "worker", "controller": True}]},
                                 "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "worker"}}}})

    def ready_workers(self):
        return sum(1 for pod in self.pods.values() if (pod["metadata"].get("labels") or {}).get("app") == "worker"
                   and not pod["metadata"].get("deletionTimestamp") and pod["status"]["conditions"][0]["status"] == "True")

    def evict_pod(self, namespace, name, uid=None, grace_period=None):
        with self.lock:
            before = self.ready_workers()
            answer = super().evict_pod(namespace, name, uid, grace_period)
            self.ready_at_eviction.append(before)
            if (self.pods["%s/%s" % (namespace, name)]["metadata"].get("labels") or {}).get("app") == "worker":
                new = make_pod("%s-new" % name, "n9", owner=("ReplicaSet", "worker-rs"), labels={"app": "worker"})
                new["status"]["conditions"][0]["status"] = "False"
                self.add_pod(new)
                self.born["shop/%s-new" % name] = self.ready_after
            return answer

    def list_pods(self, node=None, namespace=None, label_selector=None, resource_version=None):
        if namespace and not node:
            with self.lock:
                for key in list(self.born):
                    if self.born[key] is None:
                        continue
                    self.born[key] -= 1
                    if self.born[key] <= 0:
                        self.pods[key]["status"]["conditions"][0]["status"] = "True"
                        del self.born[key]
        return super().list_pods(node=node, namespace=namespace, label_selector=label_selector,
                                 resource_version=resource_version)


def two_workers_on_two_nodes(**kwargs):
    kube = ReplacingKube(**kwargs)
    for name in ("n1", "n2", "n9"):
        kube.add_node(make_node(name))
    kube.add_pod(make_pod("worker-a", "n1", owner=("ReplicaSet", "worker-rs"), labels={"app": "worker"}))
    kube.add_pod(make_pod("worker-b", "n2", owner=("ReplicaSet", "worker-rs"), labels={"app": "worker"}))
    return kube


def test_two_nodes_drained_at_once_never_take_the_last_ready_pod_of_a_workload_without_budget():
    kube = two_workers_on_two_nodes()
    result = run(kube, ["n1", "n2"])
    assert result["drained"] == ["n1", "n2"]
    # each eviction left a Ready pod: the second waited for the first one's replacement
    assert kube.ready_at_eviction == [2, 2]
    reads = [target for verb, target in kube.requests if verb == "list_pods" and target == "shop"]
    assert reads   # the workload's pods were counted from the cluster, not from this drain's own evictions


def test_turned_off_the_two_pods_go_at_once_as_kubernetes_allows():
    kube = two_workers_on_two_nodes()
    result = run(kube, ["n1", "n2"], implicit_budget=False)
    assert result["drained"] == ["n1", "n2"]
    assert sorted(kube.ready_at_eviction) == [1, 2]   # the second eviction took the last Ready pod


def test_a_later_drain_does_not_take_the_last_ready_pod_either():
    """Across steps: the first node's pod is gone and its replacement is not Ready yet when the next drain starts; the
    budget is read from the cluster, so the second node's pod waits."""
    kube = two_workers_on_two_nodes(ready_after=3)
    assert run(kube, ["n1"])["drained"] == ["n1"]
    assert kube.born   # the replacement is not Ready yet
    assert run(kube, ["n2"])["drained"] == ["n2"]
    assert kube.ready_at_eviction == [2, 2]


def test_a_pod_the_implicit_budget_holds_is_named_at_the_timeout_and_skip_goes_on():
    kube = two_workers_on_two_nodes(ready_after=None)
    result = run(kube, ["n1", "n2"], timeout=1, poll_interval=0.2, timeout_action="skip")
    assert len(kube.ready_at_eviction) == 1 and kube.ready_at_eviction == [2]
    held = [name for name in ("n1", "n2") if result["nodes"][name]["status"] == "skipped"]
    assert len(held) == 1 and result["drained"] == [name for name in ("n1", "n2") if name not in held]
    node = result["nodes"][held[0]]
    assert node["blocking"][0]["kind"] == "implicit_budget" and node["blocking"][0]["pdb"] is None
    assert node["blocking"][0]["message"] == ("implicit budget of Deployment shop/worker (2 replicas, no "
                                              "PodDisruptionBudget): 0 disruptions allowed until another pod is Ready")
    assert "waiting: implicit budget of Deployment shop/worker" in node["message"]


def test_a_rolling_update_stricter_than_one_ready_pod_keeps_that_many():
    """Ten replicas, the default maxUnavailable 25% (2): at most two at once are not Ready, spread over two nodes."""
    kube = ReplacingKube(replicas=10, ready_after=2)
    for name in ("n1", "n2", "n9"):
        kube.add_node(make_node(name))
    for index in range(10):
        kube.add_pod(make_pod("worker-%d" % index, "n1" if index < 5 else "n2", owner=("ReplicaSet", "worker-rs"),
                              labels={"app": "worker"}))
    result = run(kube, ["n1", "n2"])
    assert result["drained"] == ["n1", "n2"]
    assert len(kube.ready_at_eviction) == 10 and min(kube.ready_at_eviction) >= 9   # 8 Ready kept after each


def test_check_mode_names_the_workload_and_its_pacing():
    kube = two_workers_on_two_nodes()
    result = run(kube, ["n1", "n2"], check_mode=True)
    for name in ("n1", "n2"):
        (finding,) = result["nodes"][name]["blocking"]
        assert finding["kind"] == "implicit_budget" and finding["severity"] == "warning"
        assert finding["message"].startswith("Deployment shop/worker: 2 replicas, no PodDisruptionBudget: drained one pod")
    assert kube.mutating() == []
    off = run(two_workers_on_two_nodes(), ["n1", "n2"], check_mode=True, implicit_budget=False)
    assert sorted(off["nodes"]) == ["n1", "n2"] and all(node["blocking"] == [] for node in off["nodes"].values())
