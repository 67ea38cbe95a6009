# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""drain/implicit.py: the implicit budget of a workload of two or more replicas that no PodDisruptionBudget covers."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.implicit import (
    finding_text,
    implicit_budget,
    implicit_status,
    selector_text,
    unknown_replicasets,
    workload_pods,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.preflight import drain_preflight, eviction_preflight
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import pod


def deployment(name="worker", replicas=2, strategy=None, namespace="shop"):
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": name}}}
    if strategy is not None:
        spec["strategy"] = strategy
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def replicaset(name="worker-abc", deployment_name="worker", replicas=2, namespace="shop"):
    metadata = {"name": name, "namespace": namespace}
    if deployment_name:
        metadata["ownerReferences"] = [{"kind": "Deployment", "name": deployment_name, "controller": True}]
    return {"metadata": metadata, "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "worker"}}}}


def worker(name, rs="worker-abc", ready=True, node="node-1", deleting=False, uid=None):
    body = pod(name, namespace="shop", owner=("ReplicaSet", rs), labels={"app": "worker"}, ready=ready, node=node,
               deleting=deleting)
    body["metadata"]["uid"] = uid or "uid-" + name
    return body


def budget_of(dep, *replicasets, pod_=None):
    sets = {"shop/%s" % rs["metadata"]["name"]: rs for rs in replicasets or (replicaset(),)}
    return implicit_budget(pod_ or worker("worker-0"), sets, {"shop/%s" % dep["metadata"]["name"]: dep})


# ---- which workloads have one, and how strict --------------------------------------------------------------------

def test_a_two_replica_deployment_keeps_one_ready_pod():
    budget = budget_of(deployment(replicas=2))
    assert budget["key"] == "implicit:Deployment shop/worker"
    assert (budget["replicas"], budget["max_unavailable"], budget["desired_healthy"]) == (2, 1, 1)
    assert budget["owners"] == [("ReplicaSet", "worker-abc")]


def test_single_replica_deployments_and_unknown_workloads_have_none():
    assert budget_of(deployment(replicas=1)) is None
    assert implicit_budget(worker("worker-0"), {}, {}) is None                       # its ReplicaSet was not read
    assert implicit_budget(pod("naked", owner=None), {}, {}) is None
    assert implicit_budget(pod("agent", owner=("DaemonSet", "agent")), {}, {}) is None


@pytest.mark.parametrize("replicas, rolling, unavailable", [
    (4, None, 1),                                   # default 25% of 4 rounds down to 1
    (10, None, 2),                                  # 25% of 10 rounds down to 2: stricter than minAvailable 1
    (3, None, 1),                                   # 25% of 3 rounds down to 0 (maxSurge 1): at least one may go
    (10, {"maxUnavailable": "35%"}, 3),             # rounded down as the controller does
    (10, {"maxUnavailable": 0, "maxSurge": 0}, 1),  # both 0: the controller takes 1
    (5, {"maxUnavailable": 9}, 4),                  # looser than minAvailable 1: minAvailable 1 holds
])
def test_a_deployment_rolling_update_stricter_than_one_ready_pod_is_followed(replicas, rolling, unavailable):
    strategy = {"type": "RollingUpdate", "rollingUpdate": rolling} if rolling else None
    budget = budget_of(deployment(replicas=replicas, strategy=strategy))
    assert budget["max_unavailable"] == unavailable
    assert budget["desired_healthy"] == replicas - unavailable


def test_a_recreate_deployment_keeps_one_ready_pod():
    budget = budget_of(deployment(replicas=6, strategy={"type": "Recreate"}))
    assert (budget["max_unavailable"], budget["desired_healthy"], budget["from_rolling_update"]) == (5, 1, False)


def test_a_replicaset_without_deployment_and_a_statefulset():
    alone = replicaset("batch", deployment_name=None, replicas=3)
    budget = implicit_budget(pod("batch-0", namespace="shop", owner=("ReplicaSet", "batch")), {"shop/batch": alone}, {})
    assert budget["key"] == "implicit:ReplicaSet shop/batch" and budget["desired_healthy"] == 1

    member = pod("db-0", namespace="shop", owner=("StatefulSet", "db"))
    # not read: its live pods are its replicas, one at a time
    budget = implicit_budget(member, {}, {}, statefulset_pods={"shop/db": 3})
    assert (budget["key"], budget["replicas"], budget["max_unavailable"], budget["desired_healthy"]) == \
        ("implicit:StatefulSet shop/db", 3, 1, 2)
    # read: its rolling update's maxUnavailable (default 1), a percentage rounded up
    sts = {"metadata": {"name": "db", "namespace": "shop"},
           "spec": {"replicas": 10, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "15%"}}}}
    assert implicit_budget(member, {}, {}, statefulsets={"shop/db": sts})["max_unavailable"] == 2
    sts["spec"]["updateStrategy"] = {}
    assert implicit_budget(member, {}, {}, statefulsets={"shop/db": sts})["max_unavailable"] == 1
    assert implicit_budget(member, {}, {}, statefulset_pods={"shop/db": 1}) is None


# ---- its status: the workload's Ready pods cluster-wide --------------------------------------------------------------

def test_disruptions_allowed_count_ready_pods_minus_those_going():
    budget = budget_of(deployment())
    two = [worker("worker-0"), worker("worker-1", node="node-2")]
    status = implicit_status(budget, two)
    assert (status["disruptionsAllowed"], status["currentHealthy"], status["desiredHealthy"]) == (1, 2, 1)
    assert status["implicit"] == ("implicit budget of Deployment shop/worker (2 replicas, no PodDisruptionBudget): "
                                  "1 disruption allowed")
    # one evicted (terminating), its replacement not Ready yet: nothing more may go
    now = [worker("worker-0", deleting=True), worker("worker-1", node="node-2"), worker("worker-2", ready=False, node="node-9")]
    status = implicit_status(budget, now)
    assert status["disruptionsAllowed"] == 0
    assert status["implicit"] == ("implicit budget of Deployment shop/worker (2 replicas, no PodDisruptionBudget): "
                                  "0 disruptions allowed until another pod is Ready")
    # an eviction this drain made that a stale view still shows running does not count
    assert implicit_status(budget, two, evicted={"uid-worker-0"})["disruptionsAllowed"] == 0
    # the replacement Ready: the next may go
    now[2] = worker("worker-2", node="node-9")
    assert implicit_status(budget, now)["disruptionsAllowed"] == 1


def test_a_stricter_rolling_update_is_named_in_the_wait():
    budget = budget_of(deployment(replicas=10))
    pods = [worker("worker-%d" % n) for n in range(8)]
    text = implicit_status(budget, pods)["implicit"]
    assert text == ("implicit budget of Deployment shop/worker (10 replicas, no PodDisruptionBudget, at most 2 unavailable "
                    "as its rolling update): 0 disruptions allowed: it needs 8 Ready pods and has 8, until another pod "
                    "is Ready")


def test_the_workload_pods_are_those_of_its_replicasets_old_and_new():
    dep = deployment()
    budget = budget_of(dep)
    listed = [worker("worker-0"), worker("worker-1", rs="worker-new"), worker("other-0", rs="other-abc")]
    assert unknown_replicasets(budget, listed, {"shop/worker-abc": replicaset()})
    sets = {"shop/worker-abc": replicaset(), "shop/worker-new": replicaset("worker-new"),
            "shop/other-abc": replicaset("other-abc", deployment_name="other")}
    assert [p["metadata"]["name"] for p in workload_pods(budget, listed, sets)] == ["worker-0", "worker-1"]
    assert not unknown_replicasets(budget, listed, sets)
    assert selector_text(dep["spec"]["selector"]) == "app=worker"
    assert selector_text({"matchExpressions": [{"key": "app", "operator": "Exists"}]}) is None


# ---- the plan's finding ----------------------------------------------------------------------------------------------

def test_the_preflight_warns_of_each_workload_and_says_how_it_is_paced():
    dep = deployment()
    pods = [worker("worker-0", node="node-1"), worker("worker-1", node="node-2")]
    budget = budget_of(dep)
    implicit = {"shop/worker-0": budget, "shop/worker-1": budget}
    report = eviction_preflight({"node-1": pods[:1], "node-2": pods[1:]}, pods, [], implicit=implicit)
    for node in ("node-1", "node-2"):
        (finding,) = report[node]["blockers"]
        assert finding["kind"] == "implicit_budget" and finding["severity"] == "warning"
        assert finding["reason"] == ("Deployment shop/worker: 2 replicas, no PodDisruptionBudget: drained one pod at a "
                                     "time, each waiting for another pod Ready (implicit budget; "
                                     "rolling_update_implicit_budget=false turns it off)")
        assert finding["owner"] == "Deployment/worker"
        assert report[node]["predicted"] == "ok"
    full = drain_preflight({"node-1": pods[:1]}, pods, [], {}, None, {}, implicit=implicit)
    assert full["node-1"]["outcome"] == ("drained: 1 pod(s) moved, the evictions of workloads without a "
                                         "PodDisruptionBudget each waiting for another pod Ready (implicit budget)")
    # turned off (no implicit budgets given): no finding, as before
    assert eviction_preflight({"node-1": pods[:1]}, pods, [])["node-1"]["blockers"] == []


def test_the_finding_of_a_stricter_rolling_update():
    assert finding_text(budget_of(deployment(replicas=10))) == (
        "Deployment shop/worker: 10 replicas, no PodDisruptionBudget, at most 2 unavailable as its rolling update: "
        "drained at most 2 pods at a time, 8 of them kept Ready (implicit budget; rolling_update_implicit_budget=false "
        "turns it off)")
