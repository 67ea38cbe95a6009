# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""PodDisruptionBudgets, as the disruption controller and the eviction handler compute them: which budget selects
a pod, how many disruptions it allows, which pods count as healthy. Pure.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.backoff import retry_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import pod_is_ready, pod_is_terminating, pod_key, pod_owner_key
from ansible_collections.nodeops.rollout.plugins.module_utils.values import PlanError, ceil_percent, int_at_least, int_or_percent, is_int


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
    """The PodDisruptionBudgets that cover the pod."""
    return [pdb for pdb in pdbs if pdb_selects(pdb, pod)]


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


def paced_by_budget(pod):
    """Whether an eviction of ``pod`` waits at its budget's gate (:class:`BudgetGates`).

    Only a Ready pod surely takes one of the budget's disruptions. A running pod that is not Ready takes none
    when the budget is healthy or its ``unhealthyPodEvictionPolicy`` is AlwaysAllow (``eviction_needs_budget``),
    so a budget at 0 disruptions can still let it go: the Eviction API is asked, and a refusal closes the gate
    as any other does.
    """
    return pod_is_ready(pod)


class BudgetGates:
    """How many evictions each PodDisruptionBudget can take now, so that a budget is not hammered with evictions
    it will refuse.

    A budget with no gate is open. A refusal (429) closes it for a backoff delay (:func:`retry_delay`, growing with
    each refusal in a row). Once the delay is over the caller reads the budget's ``status.disruptionsAllowed`` (one
    request instead of one refused eviction per pod), and the gate lets that many evictions through before the
    budget is read again. While a read finds 0, the budget is read again every ``check_interval`` seconds (the
    drain's poll interval: a replacement becoming Ready frees a disruption at any moment, and a read costs one
    request whatever the number of pods waiting); without ``check_interval`` the backoff applies to reads too.

    The nodes of one drain share the gates, so a budget is read by one caller at a time, and only once every
    eviction it let through has its answer: the eviction handler takes a disruption off ``status.disruptionsAllowed``
    when it admits an eviction, so a read made while evictions are in flight (or by two nodes at once, each then
    spending the whole count) counts disruptions twice and ends in refusals. Callers that meet a gate being read or
    waiting for answers try again after ``settle`` seconds.
    Pure bookkeeping: the caller supplies the clock and does the reading.
    """

    def __init__(self, cap=16.0, jitter=None, check_interval=None, settle=0.1):
        self.cap = cap
        self.jitter = jitter
        self.check_interval = check_interval
        self.settle = settle
        self.gates = {}

    @staticmethod
    def _gate(tokens=0):
        return {"until": 0.0, "attempts": 0, "tokens": tokens, "inflight": 0, "reading": False}

    def seed(self, pdb, disruptions_allowed):
        """Start with what the budget's status said when the drain began (a hint; the Eviction API decides)."""
        if isinstance(disruptions_allowed, int) and not isinstance(disruptions_allowed, bool) and disruptions_allowed >= 0:
            self.gates[pdb] = self._gate(disruptions_allowed)

    def decide(self, pdb, now):
        """``("go", None)``: send one eviction now; ``("wait", t)``: not before ``t``; ``("check", None)``: read the
        budget first (:meth:`reading`, then :meth:`checked`)."""
        gate = self.gates.get(pdb) if pdb else None
        if gate is None:
            return "go", None
        if now < gate["until"]:
            return "wait", gate["until"]
        if gate["tokens"] > 0:
            return "go", None
        if gate["reading"] or gate["inflight"] > 0:
            return "wait", now + self.settle
        return "check", None

    def reading(self, pdb):
        """The caller that got ``"check"`` reads the budget: nobody else does until :meth:`checked`."""
        self.gates.setdefault(pdb, self._gate())["reading"] = True

    def forget(self, pdb):
        """The budget is gone: its pods are free to go."""
        self.gates.pop(pdb, None)

    def sent(self, pdb):
        """One eviction of the budget's pods is on its way: it uses one of the disruptions counted, and the budget is
        not read again before its answer (:meth:`answered`)."""
        gate = self.gates.get(pdb) if pdb else None
        if gate is not None:
            gate["tokens"] = max(0, gate["tokens"] - 1)
            gate["inflight"] += 1

    def answered(self, pdb):
        """An eviction let through by :meth:`sent` has its answer, whatever it was."""
        gate = self.gates.get(pdb) if pdb else None
        if gate is not None and gate["inflight"] > 0:
            gate["inflight"] -= 1

    def accepted(self, pdb):
        """The budget took an eviction: the backoff starts over."""
        gate = self.gates.get(pdb) if pdb else None
        if gate is not None:
            gate["attempts"] = 0

    def refused(self, pdb, now, retry_after=None):
        """The budget refused an eviction (429): closed until the backoff delay is over; returns that time."""
        gate = self.gates.setdefault(pdb, self._gate())
        gate["attempts"] += 1
        gate["tokens"] = 0
        gate["until"] = max(gate["until"], now + retry_delay(gate["attempts"], retry_after, self.cap, self.jitter))
        return gate["until"]

    def checked(self, pdb, disruptions_allowed, now):
        """The budget was read: let ``disruptions_allowed`` evictions through, or wait again when it is 0.

        ``None`` (unknown) lets one eviction through to ask the Eviction API itself.
        """
        gate = self.gates.setdefault(pdb, self._gate())
        gate["reading"] = False
        if disruptions_allowed is None:  # the budget could not be read, or has no status yet: let one eviction probe it
            gate["tokens"] = 1
            return "go", None
        if isinstance(disruptions_allowed, int) and not isinstance(disruptions_allowed, bool) and disruptions_allowed > 0:
            gate["tokens"] = disruptions_allowed
            return "go", None
        gate["attempts"] += 1
        gate["tokens"] = 0
        if self.check_interval:
            gate["until"] = now + self.check_interval
        else:
            gate["until"] = now + retry_delay(gate["attempts"], None, self.cap, self.jitter)
        return "wait", gate["until"]
