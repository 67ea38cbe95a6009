# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""drain/rules.py: restart instead of evict and what eviction answers mean; with the pre-flight of a drain (drain/preflight.py)
and the retry delays (backoff.py) as node_drain uses them."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.backoff import retry_after_seconds, retry_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.drain import rules as drain_rules
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.preflight import drain_preflight, static_blockers


def deployment(name="worker", replicas=1, strategy=None, paused=False, restarted_at=None, namespace="shop"):
    spec = {"replicas": replicas, "template": {"metadata": {"labels": {"app": name}}}}
    if replicas is None:
        del spec["replicas"]
    if strategy is not None:
        spec["strategy"] = strategy
    if paused:
        spec["paused"] = True
    if restarted_at:
        spec["template"]["metadata"]["annotations"] = {drain_rules.RESTARTED_AT: restarted_at}
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def replicaset(name="worker-abc", owner="worker", restarted_at=None, namespace="shop"):
    rs = {"metadata": {"name": name, "namespace": namespace,
                       "ownerReferences": [{"kind": "Deployment", "name": owner, "controller": True}]},
          "spec": {"template": {"metadata": {}}}}
    if restarted_at:
        rs["spec"]["template"]["metadata"]["annotations"] = {drain_rules.RESTARTED_AT: restarted_at}
    return rs


def pod(name="worker-abc-1", owner_kind="ReplicaSet", owner="worker-abc", namespace="shop", labels=None, phase="Running",
        ready=True, volumes=None, annotations=None, grace=None):
    metadata = {"name": name, "namespace": namespace, "uid": "uid-" + name, "labels": labels or {}}
    if owner_kind:
        metadata["ownerReferences"] = [{"kind": owner_kind, "name": owner, "controller": True}]
    if annotations:
        metadata["annotations"] = annotations
    spec = {"nodeName": "n1"}
    if volumes:
        spec["volumes"] = volumes
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"metadata": metadata, "spec": spec,
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def maps(dep, rs=None):
    rs = rs or replicaset()
    return {"shop/%s" % rs["metadata"]["name"]: rs}, {"shop/%s" % dep["metadata"]["name"]: dep}


# ---- rollout capacity ---------------------------------------------------------------------------

@pytest.mark.parametrize("strategy, replicas, surge, unavailable", [
    (None, 1, 1, 0),                                                     # defaults 25%/25%: up 1, down 0
    (None, 4, 1, 1),
    (None, 10, 3, 2),
    ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}, 1, 0, 1),
    ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "0%", "maxUnavailable": "25%"}}, 1, 0, 1),  # both 0 -> 1
    ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50%"}}, 1, 1, 0),
    ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": "100%"}}, 1, 2, 1),
    ({"type": "Recreate"}, 1, 0, 1),
])
def test_rollout_capacity_resolves_as_the_deployment_controller(strategy, replicas, surge, unavailable):
    capacity = drain_rules.rollout_capacity(deployment(replicas=replicas, strategy=strategy))
    assert (capacity["max_surge"], capacity["max_unavailable"]) == (surge, unavailable)


def test_missing_replicas_means_one():
    assert drain_rules.rollout_capacity(deployment(replicas=None))["replicas"] == 1


# ---- restart plan -------------------------------------------------------------------------------

def test_single_replica_default_strategy_is_restarted_with_zero_downtime():
    rs, deps = maps(deployment())
    entry = drain_rules.restart_plan(pod(), rs, deps)
    assert entry["restart"] and entry["zero_downtime"] and not entry["pending"]
    assert entry["deployment"] == "shop/worker"
    assert "restarted through its rolling update" in entry["reason"]


def test_a_single_replica_holding_a_read_write_once_claim_is_evicted_not_restarted():
    rs, deps = maps(deployment())
    entry = drain_rules.restart_plan(pod(), rs, deps, exclusive_claims=["data"])
    assert not entry["restart"] and not entry["zero_downtime"]
    assert "mounts the ReadWriteOnce claim(s) data: the new pod of a restart could never attach the volume" in entry["reason"]
    assert "downtime until the replacement is Ready" in entry["reason"]


def rolling(max_unavailable=None, max_surge=None):
    fields = {}
    if max_unavailable is not None:
        fields["maxUnavailable"] = max_unavailable
    if max_surge is not None:
        fields["maxSurge"] = max_surge
    return {"type": "RollingUpdate", "rollingUpdate": fields}


# A restart bypasses the Eviction API, so it is used only when the rolling update keeps the old pod until the new one
# is Ready: maxUnavailable resolving to 0 (percent rounded down) and maxSurge to >= 1 (percent rounded up), as the
# Deployment controller's ResolveFenceposts does (both 0 -> maxUnavailable 1), and not paused. Otherwise: evict.
@pytest.mark.parametrize("strategy, paused, restart, unavailable, surge", [
    (None, False, True, 0, 1),                                  # defaults 25%/25% of 1: down 0, up 1
    (rolling(0, 1), False, True, 0, 1),
    (rolling("0%", 1), False, True, 0, 1),
    (rolling("25%", 1), False, True, 0, 1),                     # 25% of 1 rounds down to 0
    (rolling("50%", "25%"), False, True, 0, 1),                 # 50% of 1 rounds down; 25% rounds up
    (rolling(0, "25%"), False, True, 0, 1),
    (rolling(0, 2), False, True, 0, 2),
    (rolling(1, 0), False, False, 1, 0),
    (rolling(1, 1), False, False, 1, 1),                        # surges, but may stop the old pod first
    (rolling(1, "25%"), False, False, 1, 1),
    (rolling("100%", 1), False, False, 1, 1),
    (rolling("25%", 0), False, False, 1, 0),                    # both resolve to 0: maxUnavailable becomes 1
    (rolling("0%", 0), False, False, 1, 0),
    (rolling("0%", "0%"), False, False, 1, 0),
    ({"type": "Recreate"}, False, False, 1, 0),
    (rolling(0, 1), True, False, 0, 1),                         # paused: the restart would not roll out
    (None, True, False, 0, 1),
])
def test_single_replica_is_restarted_only_when_the_old_pod_stays_until_ready(strategy, paused, restart, unavailable, surge):
    rs, deps = maps(deployment(strategy=strategy, paused=paused))
    entry = drain_rules.restart_plan(pod(), rs, deps)
    assert entry["restart"] is restart
    assert entry["zero_downtime"] is restart
    assert (entry["max_unavailable"], entry["max_surge"]) == (unavailable, surge)
    assert entry["deployment"] == "shop/worker" and "Deployment shop/worker" in entry["reason"]
    if restart:
        assert "restarted through its rolling update" in entry["reason"]
    else:
        assert "not restarted" in entry["reason"] and "PodDisruptionBudget decides" in entry["reason"]
        assert "downtime" in entry["reason"]


@pytest.mark.parametrize("strategy, words", [
    (rolling(1, 0), "maxUnavailable 1, maxSurge 0"),
    (rolling(1, 1), "maxUnavailable 1, maxSurge 1"),
    (rolling("100%", "25%"), "maxUnavailable 100% (resolves to 1), maxSurge 25% (resolves to 1)"),
    (rolling("25%", 0), "maxUnavailable 25% (resolves to 1), maxSurge 0"),
    (rolling(None, 0), "maxUnavailable 25% (resolves to 1), maxSurge 0"),   # the API's default, as resolved
    ({"type": "Recreate"}, "strategy Recreate"),
])
def test_an_evicted_single_replica_names_its_max_unavailable_and_max_surge(strategy, words):
    rs, deps = maps(deployment(strategy=strategy))
    entry = drain_rules.restart_plan(pod(), rs, deps)
    assert not entry["restart"] and words in entry["reason"]


def test_rollout_capacity_says_whether_the_old_pod_is_kept():
    keeps = drain_rules.rollout_capacity(deployment(strategy=rolling("25%", "25%")))
    assert keeps["keeps_old_pod"] and (keeps["max_unavailable_value"], keeps["max_surge_value"]) == ("25%", "25%")
    assert not drain_rules.rollout_capacity(deployment(strategy=rolling(1, 1)))["keeps_old_pod"]
    assert not drain_rules.rollout_capacity(deployment(paused=True))["keeps_old_pod"]
    assert not drain_rules.rollout_capacity(deployment(strategy={"type": "Recreate"}))["keeps_old_pod"]
    assert not drain_rules.rollout_capacity(deployment(strategy=rolling("lots", 1)))["keeps_old_pod"]  # unreadable: evict


def test_multi_replica_deployment_is_evicted():
    rs, deps = maps(deployment(replicas=3))
    entry = drain_rules.restart_plan(pod(), rs, deps)
    assert not entry["restart"] and entry["replicas"] == 3


def test_pods_not_from_a_deployment_have_no_restart_plan():
    rs, deps = maps(deployment())
    assert drain_rules.restart_plan(pod(owner_kind="StatefulSet", owner="db"), rs, deps) is None
    assert drain_rules.restart_plan(pod(owner_kind=None), rs, deps) is None
    assert drain_rules.restart_plan(pod(owner="unknown-rs"), rs, deps) is None
    bare_rs = {"metadata": {"name": "worker-abc", "namespace": "shop"}}
    assert drain_rules.restart_plan(pod(), {"shop/worker-abc": bare_rs}, deps) is None


def test_a_restart_already_rolling_out_is_pending_not_repeated():
    rs, deps = maps(deployment(restarted_at="2024-05-01T12:00:00Z"), replicaset(restarted_at="2024-05-01T11:00:00Z"))
    assert drain_rules.restart_plan(pod(), rs, deps)["pending"]
    rs, deps = maps(deployment(restarted_at="2024-05-01T12:00:00Z"), replicaset(restarted_at="2024-05-01T12:00:00Z"))
    assert not drain_rules.restart_plan(pod(), rs, deps)["pending"]


def test_restart_patch_is_what_kubectl_rollout_restart_sends():
    assert drain_rules.restart_patch("2024-05-01T12:00:00Z") == {
        "spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "2024-05-01T12:00:00Z"}}}}}


# ---- eviction answers ---------------------------------------------------------------------------

PDB_429 = {"kind": "Status", "status": "Failure", "reason": "TooManyRequests", "code": 429,
           "message": "Cannot evict pod as it would violate the pod's disruption budget.",
           "details": {"causes": [{"reason": "DisruptionBudget",
                                   "message": "The disruption budget web needs 2 healthy pods and has 2 currently"}]}}
MULTI_500 = {"kind": "Status", "status": "Failure", "code": 500, "reason": "InternalError",
             "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}


def test_429_with_a_budget_cause_names_the_budget():
    answer = drain_rules.eviction_answer(429, PDB_429)
    assert answer["kind"] == "pdb" and answer["pdb"] == "web"
    assert "needs 2 healthy pods" in answer["message"] and "disruption budget" in answer["message"]


def test_429_without_a_budget_is_throttling():
    assert drain_rules.eviction_answer(429, {"message": "Too many requests, please try again later."})["kind"] == "throttled"


def test_500_with_two_budgets_is_its_own_kind():
    assert drain_rules.eviction_answer(500, MULTI_500)["kind"] == "multiple_pdbs"


@pytest.mark.parametrize("code, status, kind", [
    (201, {}, "done"), (200, {}, "done"), (404, {"message": "pods \"x\" not found"}, "gone"),
    (409, {"message": "Precondition failed: UID in precondition: a, UID in object meta: b"}, "gone"),
    (409, {"message": "Operation cannot be fulfilled"}, "retry"),
    (500, {"message": "etcd leader changed"}, "retry"), (503, {}, "retry"), (None, {"message": "connection reset"}, "retry"),
    (403, {"message": "pods \"x\" is forbidden"}, "error"), (422, {"message": "invalid"}, "error"),
])
def test_every_other_answer(code, status, kind):
    assert drain_rules.eviction_answer(code, status)["kind"] == kind


def test_an_answer_of_the_authorizer_is_an_error_naming_the_permission():
    answer = drain_rules.eviction_answer(403, {"reason": "Forbidden", "message": 'pods "x" is forbidden: User "u" cannot create '
                                                                                 'resource "pods/eviction" in API group "" in the namespace "shop"'})
    assert answer["kind"] == "error" and answer["permission"]["resource"] == "pods/eviction"
    assert answer["message"].startswith('permission denied: Kubernetes refused create pods/eviction (core API group) in namespace "shop"')


def test_retry_after_header():
    assert retry_after_seconds({"Retry-After": "5"}) == 5.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


# ---- retry delay ---------------------------------------------------------------------------------

def test_retry_delay_grows_is_capped_and_never_zero():
    lows = [retry_delay(attempt, cap=16.0, jitter=lambda: 0.0) for attempt in range(1, 10)]
    highs = [retry_delay(attempt, cap=16.0, jitter=lambda: 1.0) for attempt in range(1, 10)]
    assert all(delay >= 0.5 for delay in lows)
    assert highs[:5] == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert max(highs) == 16.0


def test_retry_after_is_a_floor():
    assert retry_delay(1, retry_after=7, cap=4.0, jitter=lambda: 1.0) == 7.0
    assert retry_delay(3, retry_after=0, cap=16.0, jitter=lambda: 1.0) == 4.0


def test_the_cap_scales_the_whole_curve():
    assert [retry_delay(a, cap=1.6, jitter=lambda: 1.0) for a in (1, 2, 3, 4, 5, 6)] == \
        pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 1.6])


def test_tiny_caps_still_wait():
    assert retry_delay(1, cap=0.01, jitter=lambda: 0.0) >= 0.05


# ---- blockers ------------------------------------------------------------------------------------

def pdb(name, labels, namespace="shop", **spec):
    spec["selector"] = {"matchLabels": labels}
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def test_two_budgets_on_one_pod_block_eviction_but_not_a_restart_or_a_delete():
    web = pod(labels={"app": "web"})
    budgets = [pdb("a", {"app": "web"}, minAvailable=1), pdb("b", {"app": "web"}, maxUnavailable=1)]
    decision = {"action": "evict", "blocks": []}
    blockers = static_blockers(web, decision, budgets)
    assert [b["kind"] for b in blockers] == ["multiple_pdbs"]
    assert blockers[0]["pdb"] == "shop/a, shop/b" and "HTTP 500" in blockers[0]["reason"]
    assert static_blockers(web, decision, budgets, restarted=True) == []
    assert static_blockers(web, decision, budgets, disable_eviction=True) == []


def test_option_blockers_are_passed_through():
    decision = {"action": "block", "blocks": [{"kind": "naked_pod", "reason": "not managed by a controller; set force"}]}
    assert static_blockers(pod(owner_kind=None), decision, []) == [
        {"kind": "naked_pod", "reason": "not managed by a controller; set force", "pdb": None}]


def test_grace_seconds():
    assert drain_rules.pod_grace_seconds(pod(grace=120)) == 120
    assert drain_rules.pod_grace_seconds(pod()) == 30
    assert drain_rules.pod_grace_seconds(pod(grace=120), grace_period=0) == 0


# ---- pre-flight ----------------------------------------------------------------------------------

def test_preflight_moves_restartable_pods_out_of_the_budget_and_downtime_findings():
    worker = pod("worker-abc-1", labels={"app": "worker"})
    web = [pod("web-1", owner="web-rs", labels={"app": "web"}), pod("web-2", owner="web-rs", labels={"app": "web"})]
    budgets = [pdb("worker", {"app": "worker"}, minAvailable=1), pdb("web", {"app": "web"}, minAvailable=2)]
    rs, deps = maps(deployment())
    restarts = {"shop/worker-abc-1": drain_rules.restart_plan(worker, rs, deps)}
    report = drain_preflight({"n1": [worker] + web}, [worker] + web, budgets, {}, {}, restarts)["n1"]
    assert report["would_restart"] == [{"pod": "shop/worker-abc-1", "deployment": "shop/worker",
                                        "reason": restarts["shop/worker-abc-1"]["reason"], "zero_downtime": True}]
    assert "shop/worker-abc-1" not in report["would_evict"]
    kinds = sorted((b["pod"], b["kind"]) for b in report["blockers"])
    assert kinds == [("shop/web-1", "pdb_zero"), ("shop/web-2", "pdb_zero")]
    assert report["predicted"] == "blocked"
    assert report["outcome"].startswith("blocked by 2 pod(s) (shop/web-1, shop/web-2): the drain would fail")


def test_preflight_outcome_follows_timeout_action():
    naked = pod("naked", owner_kind=None)
    skip = drain_preflight({"n1": [naked]}, [naked], [], {}, {}, {}, timeout_action="skip")["n1"]
    assert "left cordoned and skipped" in skip["outcome"]
    force = drain_preflight({"n1": [naked]}, [naked], [], {}, {}, {}, timeout_action="force", timeout_seconds=60)["n1"]
    assert "deleted without eviction" in force["outcome"] and "60s" in force["outcome"]


def test_preflight_flags_single_replica_without_restart_as_downtime():
    worker = pod("worker-abc-1", labels={"app": "worker"})
    report = drain_preflight({"n1": [worker]}, [worker], [], {}, {"shop/ReplicaSet/worker-abc": 1}, {})["n1"]
    assert report["predicted"] == "downtime"
    assert report["outcome"].startswith("drained, with downtime for single-replica workload(s) ReplicaSet/worker-abc")


def single_replica_preflight(strategy, budget_spec, timeout_action="fail"):
    worker = pod("worker-abc-1", labels={"app": "worker"})
    budgets = [pdb("worker", {"app": "worker"}, **budget_spec)] if budget_spec else []
    rs, deps = maps(deployment(strategy=strategy))
    restarts = {"shop/worker-abc-1": drain_rules.restart_plan(worker, rs, deps)}
    return drain_preflight({"n1": [worker]}, [worker], budgets, {}, {"shop/ReplicaSet/worker-abc": 1}, restarts,
                           timeout_action=timeout_action)["n1"]


@pytest.mark.parametrize("strategy", [rolling(1, 0), rolling(1, 1), rolling("100%", 1), {"type": "Recreate"}])
def test_preflight_of_a_single_replica_that_cannot_be_restarted_safely_is_blocked_by_its_budget(strategy):
    report = single_replica_preflight(strategy, {"minAvailable": 1})
    assert report["would_restart"] == [] and report["would_evict"] == ["shop/worker-abc-1"]
    assert report["predicted"] == "blocked"
    assert report["outcome"] == "blocked by 1 pod(s) (shop/worker-abc-1): the drain would fail"
    by_kind = dict((b["kind"], b) for b in report["blockers"])
    assert sorted(by_kind) == ["pdb_zero", "single_replica"]
    zero, single = by_kind["pdb_zero"], by_kind["single_replica"]
    assert zero["severity"] == "error" and zero["pdb"] == "shop/worker" and zero["deployment"] == "shop/worker"
    assert "PodDisruptionBudget shop/worker allows 0 disruptions" in zero["reason"]
    assert single["severity"] == "warning" and single["owner"] == "Deployment/worker"
    for reason in (zero["reason"], single["reason"]):
        assert "Deployment shop/worker" in reason and "not restarted" in reason
        if strategy["type"] == "Recreate":
            assert "strategy Recreate" in reason
        else:
            assert "maxUnavailable" in reason and "maxSurge" in reason
    assert "PodDisruptionBudget shop/worker decides" in single["reason"]


def test_preflight_of_max_unavailable_1_max_surge_0_names_both_and_the_budget():
    report = single_replica_preflight(rolling(1, 0), {"minAvailable": 1}, timeout_action="skip")
    single = [b for b in report["blockers"] if b["kind"] == "single_replica"][0]
    assert single["reason"] == (
        "Deployment shop/worker has one replica and a rolling update with maxUnavailable 1, maxSurge 0: a restart would "
        "let the controller stop the pod before its replacement is Ready; not restarted: its pod is evicted, so its "
        "PodDisruptionBudget decides; downtime until the replacement is Ready (PodDisruptionBudget shop/worker decides "
        "when it may go)")
    assert report["outcome"] == "blocked by 1 pod(s) (shop/worker-abc-1): the node would be left cordoned and skipped"


def test_preflight_of_a_budget_that_lets_the_single_replica_go_predicts_downtime_naming_the_deployment():
    report = single_replica_preflight(rolling(1, 1), {"maxUnavailable": 1})
    assert report["would_restart"] == [] and report["would_evict"] == ["shop/worker-abc-1"]
    assert report["predicted"] == "downtime"
    assert report["outcome"] == ("drained, with downtime for single-replica workload(s) Deployment/worker until their "
                                 "replacement is Ready")
    single = [b for b in report["blockers"] if b["kind"] == "single_replica"][0]
    assert "maxUnavailable 1, maxSurge 1" in single["reason"] and "PodDisruptionBudget shop/worker decides" in single["reason"]


def test_preflight_of_a_single_replica_without_a_budget_says_so():
    report = single_replica_preflight(rolling(1, 0), None)
    assert report["predicted"] == "downtime"
    single = [b for b in report["blockers"] if b["kind"] == "single_replica"][0]
    assert single["reason"].endswith("(no PodDisruptionBudget covers it)")


@pytest.mark.parametrize("strategy", [None, rolling(0, 1), rolling("25%", "25%")])
def test_preflight_restarts_a_single_replica_that_keeps_its_old_pod_whatever_its_budget(strategy):
    report = single_replica_preflight(strategy, {"minAvailable": 1})
    assert [r["pod"] for r in report["would_restart"]] == ["shop/worker-abc-1"] and report["would_evict"] == []
    assert report["blockers"] == [] and report["predicted"] == "ok"
    assert "maxUnavailable" in report["would_restart"][0]["reason"] and report["would_restart"][0]["zero_downtime"]


def test_preflight_of_a_clean_node():
    web = pod("web-1", owner="web-rs", labels={"app": "web"})
    report = drain_preflight({"n1": [web]}, [web], [], {}, {"shop/ReplicaSet/web-rs": 3}, {})["n1"]
    assert report["predicted"] == "ok" and report["outcome"] == "drained: 1 pod(s) moved"


def test_not_drained_message_names_every_pod_and_why():
    text = drain_rules.not_drained_message("n1", [{"pod": "shop/web-1", "why": "eviction refused by PodDisruptionBudget shop/web"},
                                                  {"pod": "shop/db-0", "why": None}], 900.4, "timeout")
    assert text == ("node n1 not drained after 900s (timeout): 2 pod(s) still there: shop/web-1 (eviction refused by "
                    "PodDisruptionBudget shop/web); shop/db-0")
