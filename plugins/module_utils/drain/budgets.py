# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""PodDisruptionBudgets, as the disruption controller and the eviction handler compute them: which budget selects
a pod, how many disruptions it allows, which pods count as healthy. Pure.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, ceil_percent, int_at_least, int_or_percent, is_int
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import pod_is_ready, pod_is_terminating, pod_key, pod_owner_key


_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def label_selector_matches(selector, labels, field="selector"):
    """Whether a LabelSelector (``matchLabels`` and ``matchExpressions``) selects an object with ``labels``.

    An empty selector selects everything. Operators: In, NotIn (also true when the label is absent), Exists,
    DoesNotExist.
    """
    if not isinstance(selector, dict):
        raise PlanError("%s: %r is not allowed; use a label selector (matchLabels/matchExpressions)" % (field, selector))
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if key not in labels or labels[key] != value:
            return False
    for index, expression in enumerate(selector.get("matchExpressions") or []):
        where = "%s.matchExpressions[%d]" % (field, index)
        if not isinstance(expression, dict):
            raise PlanError("%s: %r is not allowed; use {key, operator, values}" % (where, expression))
        key = expression.get("key")
        operator = expression.get("operator")
        values = expression.get("values") or []
        if operator not in _SELECTOR_OPERATORS:
            raise PlanError("%s.operator: %r is not allowed; use one of %s" % (where, operator, ", ".join(_SELECTOR_OPERATORS)))
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def pdb_key(pdb):
    """``namespace/name`` of a PodDisruptionBudget."""
    return pod_key(pdb)


def pdb_selects(pdb, pod):
    """Whether the PodDisruptionBudget covers the pod (policy/v1 semantics).

    Same namespace, and the selector matches the pod's labels: an empty selector ``{}`` selects every pod of
    the namespace, a null (missing) selector selects none.
    """
    pdb_meta = pdb.get("metadata") or {}
    pod_meta = pod.get("metadata") or {}
    if (pdb_meta.get("namespace") or "default") != (pod_meta.get("namespace") or "default"):
        return False
    selector = (pdb.get("spec") or {}).get("selector")
    if selector is None:
        return False
    return label_selector_matches(selector, pod_meta.get("labels"), "PodDisruptionBudget %s: spec.selector" % pdb_key(pdb))


def pdbs_selecting(pod, pdbs):
    """The PodDisruptionBudgets that cover the pod, in the order of ``pdbs`` (a list, or a BudgetIndex of them)."""
    if isinstance(pdbs, BudgetIndex):
        return pdbs.selecting(pod)
    return [pdb for pdb in pdbs if pdb_selects(pdb, pod)]


class BudgetIndex(list):
    """A list of PodDisruptionBudgets that finds the ones covering a pod without testing every budget of the cluster.

    A budget whose selector has ``matchLabels`` can only cover a pod of its namespace that carries one of those labels
    with its value: it is filed under one of them, and a pod is tested against the budgets filed under its own labels
    and those with no ``matchLabels`` (expressions only, an empty selector, or one that is not a selector, which
    pdb_selects refuses). With a budget per workload, finding a pod's budgets no longer grows with the budgets' count:
    a drain pre-flight of 21 000 pods under 1 050 budgets made 22 million tests before. The list is not to be changed
    once made."""

    def __init__(self, pdbs=()):
        super().__init__(pdbs)
        self._filed = {}    # (namespace, label, value) -> [(position, pdb)]
        self._tested = {}   # namespace -> [(position, pdb)]: tested against every pod of the namespace
        for position, pdb in enumerate(self):
            namespace = ((pdb.get("metadata") or {}).get("namespace") or "default") if isinstance(pdb, dict) else None
            selector = (pdb.get("spec") or {}).get("selector") if isinstance(pdb, dict) else None
            labels = selector.get("matchLabels") if isinstance(selector, dict) else None
            key = min(labels) if isinstance(labels, dict) and labels and all(isinstance(k, str) for k in labels) else None
            if key is not None and isinstance(labels[key], str):
                self._filed.setdefault((namespace, key, labels[key]), []).append((position, pdb))
            else:
                self._tested.setdefault(namespace, []).append((position, pdb))

    def selecting(self, pod):
        """pdbs_selecting(pod, self), from the budgets filed under the pod's labels."""
        return [pdb for _position, pdb in self._covering(pod)]

    def pods_selected(self, pods):
        """``[[pods]]``: for each budget, by its position, the pods of ``pods`` it covers, in their order."""
        selected = [[] for _pdb in self]
        for pod in pods:
            for position, _pdb in self._covering(pod):
                selected[position].append(pod)
        return selected

    def _covering(self, pod):
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        candidates = list(self._tested.get(namespace, ())) + list(self._tested.get(None, ()))
        for label, value in (meta.get("labels") or {}).items():
            if isinstance(value, str):
                candidates.extend(self._filed.get((namespace, label, value), ()))
        candidates.sort(key=lambda entry: entry[0])
        return [(position, pdb) for position, pdb in candidates if pdb_selects(pdb, pod)]


def _pdb_value(value, field):
    """A PDB's minAvailable/maxUnavailable: an integer >= 0 or a percentage 0%..100% (as API validation)."""
    parsed = int_or_percent(value)
    # a string must be a percentage (an IntOrString holding "3" is refused by API validation)
    if parsed is None or parsed[1] < 0 or (parsed[0] == "percent") != isinstance(value, str) or (parsed[0] == "percent" and parsed[1] > 100):
        raise PlanError("%s: %r is not allowed; use an integer >= 0 or a percentage between 0%% and 100%%" % (field, value))
    return parsed


def pdb_desired_healthy(pdb, expected_pods):
    """How many healthy pods the budget requires, given ``expected_pods`` (as the disruption controller).

    ``maxUnavailable`` (checked first) gives expected minus the allowance, the percentage rounded up, never
    below 0; ``minAvailable`` gives its integer, or its percentage of expected rounded up. A budget with
    neither requires 0.
    """
    expected = int_at_least(expected_pods, "expected_pods", 0)
    spec = pdb.get("spec") or {}
    where = "PodDisruptionBudget %s: spec." % pdb_key(pdb)
    if spec.get("maxUnavailable") is not None:
        kind, number = _pdb_value(spec["maxUnavailable"], where + "maxUnavailable")
        allowance = ceil_percent(number, expected) if kind == "percent" else number
        return max(0, expected - allowance)
    if spec.get("minAvailable") is not None:
        kind, number = _pdb_value(spec["minAvailable"], where + "minAvailable")
        return ceil_percent(number, expected) if kind == "percent" else number
    return 0


def pod_is_healthy_for_pdb(pod, disrupted_pods=()):
    """Counted healthy by the disruption controller: Ready, not being deleted, not just evicted.

    ``disrupted_pods`` holds the names of pods the eviction handler recorded in ``status.disruptedPods``
    (evicted, deletion not yet observed); they no longer count. The kubelet reports Ready only while the
    pod runs, so this is "running and ready".
    """
    if pod_is_terminating(pod):
        return False
    if (pod.get("metadata") or {}).get("name") in disrupted_pods:
        return False
    return pod_is_ready(pod)


def _uses_fixed_expected(pdb):
    """Whether the controller counts matching pods (integer minAvailable) instead of the workloads' scale."""
    spec = pdb.get("spec") or {}
    return spec.get("maxUnavailable") is None and is_int(spec.get("minAvailable"))


def pdb_status(pdb, pods, expected_pods=None):
    """The budget's status as the disruption controller would write it, computed from ``pods``.

    Returns ``{"pdb", "matching_pods", "expected_pods", "desired_healthy", "current_healthy",
    "disruptions_allowed"}``. Expected pods are the pods the budget selects; pass ``expected_pods`` when the
    workloads' scale is known (the controller uses the scale for maxUnavailable and percentage minAvailable;
    for an integer minAvailable it always counts the selected pods, so the override is ignored there).
    Disruptions allowed are healthy minus desired, and 0 when that is negative or nothing is expected.
    """
    matching = [pod for pod in pods if pdb_selects(pdb, pod)]
    if expected_pods is None or _uses_fixed_expected(pdb):
        expected = len(matching)
    else:
        expected = int_at_least(expected_pods, "expected_pods", 0)
    desired = pdb_desired_healthy(pdb, expected)
    disrupted = set(((pdb.get("status") or {}).get("disruptedPods") or {}).keys())
    healthy = sum(1 for pod in matching if pod_is_healthy_for_pdb(pod, disrupted))
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    return {"pdb": pdb_key(pdb), "matching_pods": [pod_key(pod) for pod in matching], "expected_pods": expected,
            "desired_healthy": desired, "current_healthy": healthy, "disruptions_allowed": allowed}


def eviction_needs_budget(pod, status, pdb=None):
    """Whether evicting the pod consumes one of the budget's disruptions, as the eviction handler decides.

    Pods that are terminating, Pending, Succeeded or Failed are deleted without consulting any budget.
    A Ready pod needs one. A running pod that is not Ready needs none when the budget's
    ``unhealthyPodEvictionPolicy`` is AlwaysAllow, or when the budget is satisfied (healthy >= desired > 0);
    otherwise it needs one like any other. ``status`` is a :func:`pdb_status` result.
    """
    if pod_is_terminating(pod) or (pod.get("status") or {}).get("phase") in ("Pending", "Succeeded", "Failed"):
        return False
    if pod_is_ready(pod):
        return True
    policy = ((pdb or {}).get("spec") or {}).get("unhealthyPodEvictionPolicy")
    if policy == "AlwaysAllow":
        return False
    return not (status["current_healthy"] >= status["desired_healthy"] > 0)


def eviction_skips_pdbs(pod):
    return pod_is_terminating(pod) or (pod.get("status") or {}).get("phase") in ("Pending", "Succeeded", "Failed")


def expected_pods_from_owners(pods, replicas_by_owner):
    """The workloads' scale behind ``pods``: each known controller's replicas once, plus 1 per other pod."""
    total = 0
    seen = set()
    for pod in pods:
        key = pod_owner_key(pod)
        if key is not None and key in replicas_by_owner:
            if key not in seen:
                seen.add(key)
                total += int_at_least(replicas_by_owner[key], "replicas_by_owner[%s]" % key, 0)
        else:
            total += 1
    return total
