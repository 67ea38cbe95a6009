# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The implicit budget: a workload of two or more replicas that no PodDisruptionBudget covers keeps a Ready pod.

Kubernetes lets a drain evict every pod of such a workload at once (kubectl drain does, two nodes drained together take
both pods of a two-replica Deployment); the collection holds each eviction until the workload keeps enough Ready pods
without it. The budget is ``minAvailable: 1`` or, where the workload's own rolling update is stricter, at most as many
pods unavailable as that rolling update allows (at least one, so that a drain can go on):

- a Deployment (its pods owned through a ReplicaSet): ``spec.strategy.rollingUpdate.maxUnavailable`` (default 25%),
  a percentage of ``spec.replicas`` rounded down as the Deployment controller resolves it; strategy Recreate has no
  rolling update to follow, so ``minAvailable: 1``;
- a StatefulSet: ``spec.updateStrategy.rollingUpdate.maxUnavailable`` (default 1), a percentage rounded up as the
  StatefulSet controller resolves it; strategy OnDelete, or a StatefulSet not read, 1;
- a ReplicaSet no Deployment owns: ``minAvailable: 1``.

The API server does not know the budget: the drain reads the workload's pods (:func:`implicit_status`) and paces the
evictions through the same gates as real budgets (``drain.pacing``). Pure.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import int_or_percent, is_int, scaled_value
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import controller_of, pod_is_ready, pod_is_terminating

# Gate keys of implicit budgets start with this: a PodDisruptionBudget's key is namespace/name, never this.
IMPLICIT_PREFIX = "implicit:"

OPTION_TEXT = "rolling_update_implicit_budget=false turns it off"


def _replicas(obj):
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else value


def _deployment_unavailable(deployment, replicas):
    """What the Deployment's rolling update lets be unavailable (ResolveFenceposts), or None for Recreate."""
    strategy = (deployment.get("spec") or {}).get("strategy") or {}
    if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
        return None
    rolling = strategy.get("rollingUpdate") or {}
    unavailable = int_or_percent("25%" if rolling.get("maxUnavailable") is None else rolling["maxUnavailable"])
    surge = int_or_percent("25%" if rolling.get("maxSurge") is None else rolling["maxSurge"])
    if unavailable is None:
        return None
    count = max(0, scaled_value(unavailable, replicas, False))
    if count == 0 and surge is not None and scaled_value(surge, replicas, True) == 0:
        count = 1   # both 0: the controller takes maxUnavailable 1
    return count


def _statefulset_unavailable(statefulset, replicas):
    """What the StatefulSet's rolling update lets be unavailable: maxUnavailable (default 1), rounded up, at least 1."""
    strategy = (statefulset.get("spec") or {}).get("updateStrategy") or {}
    if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
        return None
    value = int_or_percent(((strategy.get("rollingUpdate") or {}).get("maxUnavailable")) or 1)
    if value is None:
        return 1
    return max(1, scaled_value(value, replicas, True))


def _budget(kind, namespace, name, replicas, rolling_unavailable, selector, owners):
    # minAvailable 1 allows replicas - 1 unavailable; a stricter rolling update allows fewer, never fewer than 1
    allowed = replicas - 1 if rolling_unavailable is None else min(replicas - 1, max(1, rolling_unavailable))
    workload = "%s/%s" % (namespace, name)
    return {"key": "%s%s %s" % (IMPLICIT_PREFIX, kind, workload), "kind": kind, "workload": workload,
            "namespace": namespace, "replicas": replicas, "max_unavailable": allowed,
            "desired_healthy": replicas - allowed, "from_rolling_update": rolling_unavailable is not None and allowed < replicas - 1,
            "selector": selector, "owners": owners}


def implicit_budget(pod, replicasets, deployments, statefulsets=None, statefulset_pods=None):
    """The implicit budget of the pod's workload, or None when it has none (fewer than two replicas, no workload known).

    ``replicasets``, ``deployments`` and ``statefulsets`` map ``namespace/name`` to the objects as read;
    ``statefulset_pods`` maps ``namespace/name`` of a StatefulSet that was not read to its live pods' count (its
    replicas; its rolling update then counts as the strictest, one at a time). The caller checks that no
    PodDisruptionBudget covers the pod. Returns ``{"key", "kind", "workload", "namespace", "replicas",
    "max_unavailable", "desired_healthy", "from_rolling_update", "selector", "owners"}``: ``key`` names the budget's
    gate, ``owners`` the ``(kind, name)`` controllers whose pods are the workload's (a Deployment's: its ReplicaSets
    known now), ``selector`` the workload's label selector (to list its pods).
    """
    owner = controller_of(pod)
    if owner is None:
        return None
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    kind, name = owner.get("kind"), owner.get("name")
    if kind == "ReplicaSet":
        replicaset = (replicasets or {}).get("%s/%s" % (namespace, name))
        if replicaset is None:
            return None
        parent = controller_of(replicaset)
        if parent is not None and parent.get("kind") == "Deployment":
            deployment = (deployments or {}).get("%s/%s" % (namespace, parent.get("name")))
            if deployment is None:
                return None
            replicas = _replicas(deployment)
            if not is_int(replicas) or replicas < 2:
                return None
            owners = sorted(("ReplicaSet", (rs.get("metadata") or {}).get("name")) for key, rs in (replicasets or {}).items()
                            if key.startswith(namespace + "/") and deployment_of(rs) == parent.get("name"))
            return _budget("Deployment", namespace, parent.get("name"), replicas, _deployment_unavailable(deployment, replicas),
                           (deployment.get("spec") or {}).get("selector"), owners)
        if parent is not None:
            return None   # a ReplicaSet some other controller manages: that controller's rules, not ours
        replicas = _replicas(replicaset)
        if not is_int(replicas) or replicas < 2:
            return None
        return _budget("ReplicaSet", namespace, name, replicas, None, (replicaset.get("spec") or {}).get("selector"),
                       [("ReplicaSet", name)])
    if kind == "StatefulSet":
        key = "%s/%s" % (namespace, name)
        statefulset = (statefulsets or {}).get(key)
        if statefulset is not None:
            replicas = _replicas(statefulset)
            unavailable = _statefulset_unavailable(statefulset, replicas) if is_int(replicas) else None
            selector = (statefulset.get("spec") or {}).get("selector")
        else:
            replicas = (statefulset_pods or {}).get(key)
            unavailable, selector = 1, None
        if not is_int(replicas) or replicas < 2:
            return None
        return _budget("StatefulSet", namespace, name, replicas, unavailable, selector, [("StatefulSet", name)])
    return None


def deployment_of(replicaset):
    """The name of the Deployment that controls the ReplicaSet, or None."""
    parent = controller_of(replicaset)
    return parent.get("name") if parent is not None and parent.get("kind") == "Deployment" else None


def selector_text(selector):
    """The workload selector's ``matchLabels`` as a list call's label selector (``app=worker``), or None: the pods it
    lists are a superset, filtered by their owner (:func:`workload_pods`)."""
    labels = (selector or {}).get("matchLabels") if isinstance(selector, dict) else None
    if not isinstance(labels, dict) or not labels:
        return None
    return ",".join("%s=%s" % (key, labels[key]) for key in sorted(labels))


def workload_pods(budget, pods, replicasets=None):
    """The pods of ``pods`` that belong to the budget's workload: controlled by one of its ``owners`` or, for a
    Deployment, by any ReplicaSet of ``replicasets`` (``namespace/name`` -> object) the Deployment controls."""
    owners = set(tuple(owner) for owner in budget["owners"])
    deployment = budget["workload"].split("/", 1)[1] if budget["kind"] == "Deployment" else None
    found = []
    for pod in pods:
        if ((pod.get("metadata") or {}).get("namespace") or "default") != budget["namespace"]:
            continue
        owner = controller_of(pod)
        if owner is None:
            continue
        mine = (owner.get("kind"), owner.get("name")) in owners
        if not mine and deployment and owner.get("kind") == "ReplicaSet":
            replicaset = (replicasets or {}).get("%s/%s" % (budget["namespace"], owner.get("name")))
            mine = replicaset is not None and deployment_of(replicaset) == deployment
        if mine:
            found.append(pod)
    return found


def unknown_replicasets(budget, pods, replicasets):
    """Whether some pod of ``pods`` (listed with the budget's selector) is controlled by a ReplicaSet not in
    ``replicasets``: a Deployment's new ReplicaSet the drain has not read yet."""
    if budget["kind"] != "Deployment":
        return False
    for pod in pods:
        owner = controller_of(pod)
        if owner is not None and owner.get("kind") == "ReplicaSet" and \
                "%s/%s" % (budget["namespace"], owner.get("name")) not in (replicasets or {}):
            return True
    return False


def implicit_status(budget, pods, evicted=()):
    """The implicit budget's status now, in a PodDisruptionBudget status's words: ``{"disruptionsAllowed",
    "desiredHealthy", "currentHealthy", "expectedPods", "implicit"}``.

    ``pods``: the workload's pods (:func:`workload_pods`), cluster-wide; ``evicted``: uids of pods this drain evicted,
    not counted even while a stale view shows them running. Healthy pods are Ready and not terminating, as the
    disruption controller counts them; the budget allows healthy minus desired, never below 0.
    """
    evicted = set(evicted)
    healthy = sum(1 for pod in pods if pod_is_ready(pod) and not pod_is_terminating(pod)
                  and (pod.get("metadata") or {}).get("uid") not in evicted)
    allowed = max(0, healthy - budget["desired_healthy"])
    status = {"disruptionsAllowed": allowed, "desiredHealthy": budget["desired_healthy"], "currentHealthy": healthy,
              "expectedPods": budget["replicas"]}
    status["implicit"] = implicit_wait_text(budget, status)
    return status


def budget_name(budget):
    """``implicit budget of Deployment shop/worker (2 replicas, no PodDisruptionBudget)``."""
    extra = ""
    if budget["from_rolling_update"]:
        extra = ", at most %d unavailable as its rolling update" % budget["max_unavailable"]
    return "implicit budget of %s %s (%d replicas, no PodDisruptionBudget%s)" % (
        budget["kind"], budget["workload"], budget["replicas"], extra)


def implicit_wait_text(budget, status):
    """What a pod held by the budget waits for: ``implicit budget of Deployment shop/worker (2 replicas, no
    PodDisruptionBudget): 0 disruptions allowed until another pod is Ready``."""
    allowed = status["disruptionsAllowed"]
    text = "%s: %d disruption%s allowed" % (budget_name(budget), allowed, "" if allowed == 1 else "s")
    if allowed:
        return text
    if budget["desired_healthy"] <= 1:
        return text + " until another pod is Ready"
    return text + ": it needs %d Ready pods and has %d, until another pod is Ready" % (
        budget["desired_healthy"], status["currentHealthy"])


def finding_text(budget):
    """The plan's warning: ``Deployment shop/worker: 2 replicas, no PodDisruptionBudget: drained one pod at a time,
    each waiting for another pod Ready (implicit budget; rolling_update_implicit_budget=false turns it off)``."""
    if budget["max_unavailable"] == 1:
        pace = "drained one pod at a time, each waiting for another pod Ready"
    else:
        pace = "drained at most %d pods at a time, %d of them kept Ready" % (budget["max_unavailable"], budget["desired_healthy"])
    source = ", at most %d unavailable as its rolling update" % budget["max_unavailable"] if budget["from_rolling_update"] else ""
    return "%s %s: %d replicas, no PodDisruptionBudget%s: %s (implicit budget; %s)" % (
        budget["kind"], budget["workload"], budget["replicas"], source, pace, OPTION_TEXT)
