# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Decisions of a drain that need no I/O: which pods are restarted instead of evicted, what an eviction
answer means, how long to wait before retrying, what blocks a node for good, and what the pre-flight predicts.

Pure: plain dicts in the API's JSON form in, plain dicts out; the pod classification comes from ``drain.pods``, the
PDB arithmetic from ``drain.budgets``, the blockers from ``drain.preflight``. The I/O half is ``node_drain.py``.
"""

from __future__ import annotations

import re

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.retry import backoff_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.budgets import pdb_key, pdb_selects
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import controller_of, pod_is_ready, pod_key
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.preflight import eviction_preflight

TIMEOUT_ACTIONS = ("fail", "skip", "force")
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
DEFAULT_GRACE_SECONDS = 30

# Blocker kinds that no amount of waiting resolves under the options given.
PERMANENT_KINDS = ("naked_pod", "emptydir", "do_not_disrupt", "multiple_pdbs", "api_error")

_MULTIPLE_PDBS_TEXT = "more than one poddisruptionbudget"
_BUDGET_CAUSE_RE = re.compile(r"disruption budget\s+([^\s]+)\s+needs", re.IGNORECASE)
_INT_RE = re.compile(r"^\s*([0-9]+)\s*$")
_PERCENT_RE = re.compile(r"^\s*([0-9]+)%\s*$")


# ---------------------------------------------------------------------------------------------------------
# Single-replica Deployments: restart through the rolling update instead of evicting
# ---------------------------------------------------------------------------------------------------------

def _int_or_percent(value, default, total, round_up):
    if value is None:
        value = default
    if isinstance(value, int) and not isinstance(value, bool):
        return max(0, value)
    text = str(value)
    match = _INT_RE.match(text)
    if match:
        return int(match.group(1))
    match = _PERCENT_RE.match(text)
    if match:
        scaled = int(match.group(1)) * total
        return -(-scaled // 100) if round_up else scaled // 100
    return None


def rollout_capacity(deployment):
    """The Deployment's effective rolling update numbers, resolved as the Deployment controller resolves them.

    Returns ``{"strategy", "replicas", "paused", "max_surge", "max_unavailable", "max_surge_value",
    "max_unavailable_value", "keeps_old_pod"}``. As ``ResolveFenceposts`` in the controller
    (pkg/controller/deployment/util): maxSurge (default 25%) rounds up and maxUnavailable (default 25%) rounds
    down, both of spec.replicas (default 1); when both come out 0, maxUnavailable is 1. A Recreate strategy
    surges 0 and stops every pod first. Values that cannot be read are None. ``*_value`` are the fields as
    written (or their default), for messages.

    ``keeps_old_pod`` is True only when a rollout can never take a pod away before its replacement is Ready:
    strategy RollingUpdate, maxUnavailable resolving to 0 (so maxSurge resolves to at least 1) and not paused.
    """
    spec = deployment.get("spec") or {}
    replicas = spec.get("replicas")
    if replicas is None:
        replicas = 1
    strategy = spec.get("strategy") or {}
    kind = strategy.get("type") or "RollingUpdate"
    paused = bool(spec.get("paused"))
    if kind != "RollingUpdate":
        return {"strategy": kind, "replicas": replicas, "paused": paused, "max_surge": 0, "max_unavailable": replicas,
                "max_surge_value": None, "max_unavailable_value": None, "keeps_old_pod": False}
    rolling = strategy.get("rollingUpdate") or {}
    # the API server defaults each missing field to 25%
    surge_value = "25%" if rolling.get("maxSurge") is None else rolling["maxSurge"]
    unavailable_value = "25%" if rolling.get("maxUnavailable") is None else rolling["maxUnavailable"]
    surge = _int_or_percent(surge_value, "25%", replicas, True)
    unavailable = _int_or_percent(unavailable_value, "25%", replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    keeps_old_pod = not paused and unavailable == 0 and surge is not None and surge >= 1
    return {"strategy": kind, "replicas": replicas, "paused": paused, "max_surge": surge, "max_unavailable": unavailable,
            "max_surge_value": surge_value, "max_unavailable_value": unavailable_value, "keeps_old_pod": keeps_old_pod}


def fenceposts_text(capacity):
    """``maxUnavailable 1, maxSurge 0`` as the Deployment has them, with what a percentage or a default resolves to."""
    if capacity["strategy"] != "RollingUpdate":
        return "strategy %s" % capacity["strategy"]
    parts = []
    for label, value, resolved in (("maxUnavailable", capacity["max_unavailable_value"], capacity["max_unavailable"]),
                                   ("maxSurge", capacity["max_surge_value"], capacity["max_surge"])):
        text = "%s %s" % (label, value)
        if str(value) != str(resolved):
            text += " (resolves to %s)" % ("an unreadable value" if resolved is None else resolved)
        parts.append(text)
    return ", ".join(parts)


def _template_restarted_at(obj):
    template = (obj.get("spec") or {}).get("template") or {}
    return ((template.get("metadata") or {}).get("annotations") or {}).get(RESTARTED_AT)


def restart_plan(pod, replicasets, deployments):
    """Whether the pod should leave its node through its Deployment's rolling update instead of an eviction.

    ``replicasets`` and ``deployments`` map ``namespace/name`` to objects. Returns None when the pod does not
    belong to a Deployment (through its ReplicaSet); otherwise ``{"deployment", "replicas", "strategy",
    "max_unavailable", "max_surge", "restart", "pending", "zero_downtime", "reason"}``:

    - ``restart`` is True only for a Deployment of one replica whose rolling update keeps the old pod until the
      new one is Ready (:func:`rollout_capacity`'s ``keeps_old_pod``: RollingUpdate, maxUnavailable resolving to
      0, maxSurge to at least 1, not paused). A restart bypasses the Eviction API, so it is used only when it
      cannot take the workload down; any other single-replica pod is evicted and its PodDisruptionBudget decides
      (a budget that needs the pod refuses with 429 and the drain waits, skips or fails by its timeout_action);
    - ``pending`` is True when a restart of the Deployment is already rolling out and will replace this pod
      (its ReplicaSet's template carries an older restartedAt than the Deployment's): wait, do not restart again;
    - ``zero_downtime`` equals ``restart`` (kept for callers that read it).
    """
    owner = controller_of(pod)
    if owner is None or owner.get("kind") != "ReplicaSet":
        return None
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    replicaset = replicasets.get("%s/%s" % (namespace, owner.get("name")))
    if replicaset is None:
        return None
    parent = controller_of(replicaset)
    if parent is None or parent.get("kind") != "Deployment":
        return None
    key = "%s/%s" % (namespace, parent.get("name"))
    deployment = deployments.get(key)
    if deployment is None:
        return None
    capacity = rollout_capacity(deployment)
    entry = {"deployment": key, "replicas": capacity["replicas"], "strategy": capacity["strategy"],
             "max_unavailable": capacity["max_unavailable"], "max_surge": capacity["max_surge"], "restart": False,
             "pending": False, "zero_downtime": False, "reason": None}
    if capacity["replicas"] != 1:
        entry["reason"] = "Deployment %s has %s replicas; evicted within its PodDisruptionBudget" % (key, capacity["replicas"])
        return entry
    evicted = "not restarted: its pod is evicted, so its PodDisruptionBudget decides; downtime until the replacement is Ready"
    if capacity["strategy"] != "RollingUpdate":
        entry["reason"] = ("Deployment %s has one replica and strategy %s, which stops the old pod before starting the "
                           "new one; %s" % (key, capacity["strategy"], evicted))
    elif capacity["paused"]:
        entry["reason"] = ("Deployment %s has one replica but is paused, so a restart would not roll out; %s" % (key, evicted))
    elif not capacity["keeps_old_pod"]:
        entry["reason"] = ("Deployment %s has one replica and a rolling update with %s: a restart would let the "
                           "controller stop the pod before its replacement is Ready; %s" % (key, fenceposts_text(capacity), evicted))
    if entry["reason"]:
        return entry
    entry["restart"] = True
    entry["zero_downtime"] = True
    wanted = _template_restarted_at(deployment)
    entry["pending"] = bool(wanted) and wanted != _template_restarted_at(replicaset)
    entry["reason"] = ("Deployment %s has one replica: restarted through its rolling update (%s), the new pod is Ready "
                       "on another node before this one stops" % (key, fenceposts_text(capacity)))
    return entry


def eviction_reason(entry, pod, pdbs):
    """Why a single-replica Deployment's pod is evicted rather than restarted, naming the budget that decides.

    ``entry`` is a :func:`restart_plan` result with ``restart`` False and one replica.
    """
    names = [pdb_key(pdb) for pdb in pdbs_selecting(pod, pdbs)]
    if names:
        budget = "PodDisruptionBudget %s decides when it may go" % ", ".join(names)
    else:
        budget = "no PodDisruptionBudget covers it"
    return "%s (%s)" % (entry["reason"], budget)


def restart_patch(timestamp):
    """The patch ``kubectl rollout restart`` sends: a new restartedAt on the pod template."""
    return {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: timestamp}}}}}


# ---------------------------------------------------------------------------------------------------------
# Eviction answers
# ---------------------------------------------------------------------------------------------------------

def budget_from_status(status):
    """The PodDisruptionBudget named in a 429 Status (its DisruptionBudget cause), or None."""
    details = (status or {}).get("details") or {}
    for cause in details.get("causes") or []:
        if not isinstance(cause, dict):
            continue
        match = _BUDGET_CAUSE_RE.search(str(cause.get("message") or ""))
        if match:
            return match.group(1)
    return None


def _status_text(status):
    status = status or {}
    parts = [str(status.get("message") or "").strip()]
    for cause in ((status.get("details") or {}).get("causes") or []):
        if isinstance(cause, dict) and cause.get("message"):
            parts.append(str(cause["message"]).strip())
    return " ".join(part for part in parts if part)


def eviction_answer(code, status):
    """What an Eviction (or DELETE) answer means: ``{"kind", "message", "pdb"}``.

    ``kind``: ``done`` (2xx), ``gone`` (404; or 409 on the UID precondition: a new pod took the name), ``pdb``
    (429 from a PodDisruptionBudget), ``throttled`` (other 429), ``multiple_pdbs`` (500 "more than one
    PodDisruptionBudget"), ``retry`` (other 5xx, a 409 of another kind, no answer), ``error`` (anything else:
    a request that will never succeed as sent).
    """
    message = _status_text(status)
    lowered = message.lower()
    if code is not None and 200 <= code < 300:
        return {"kind": "done", "message": message, "pdb": None}
    if code == 404:
        return {"kind": "gone", "message": message, "pdb": None}
    if code == 409:
        kind = "gone" if "precondition" in lowered or "uid" in lowered else "retry"
        return {"kind": kind, "message": message, "pdb": None}
    if code == 429:
        pdb = budget_from_status(status)
        causes = [cause.get("reason") for cause in ((status or {}).get("details") or {}).get("causes") or [] if isinstance(cause, dict)]
        if pdb or "DisruptionBudget" in causes or "disruption budget" in lowered:
            return {"kind": "pdb", "message": message, "pdb": pdb}
        return {"kind": "throttled", "message": message, "pdb": None}
    if code == 500 and _MULTIPLE_PDBS_TEXT in lowered:
        return {"kind": "multiple_pdbs", "message": message, "pdb": None}
    if code is None or code == 0 or code >= 500:
        return {"kind": "retry", "message": message, "pdb": None}
    return {"kind": "error", "message": message, "pdb": None}


def retry_after_seconds(headers):
    """The Retry-After header as seconds (None when absent or not a number of seconds)."""
    if not headers:
        return None
    for name in headers:
        if str(name).lower() == "retry-after":
            try:
                value = float(str(headers[name]).strip())
            except ValueError:
                return None
            return value if value >= 0 else None
    return None


def retry_delay(attempt, retry_after=None, cap=16.0, jitter=None):
    """Seconds before retry number ``attempt`` (>= 1) of a refused eviction.

    Capped exponential backoff with jitter (``backoff_delay``): the delay starts at 1/16 of the cap (1 s with
    the default cap of 16 s) and doubles up to the cap; a Retry-After from the server is honoured as a lower bound.
    Never 0, so a refused eviction is never retried in a hot loop.
    """
    cap = float(cap)
    delay = backoff_delay(max(1, attempt), base=cap / 16.0, cap=cap, jitter=jitter)
    if retry_after is not None:
        delay = max(delay, float(retry_after))
    return max(delay, 0.05)


# ---------------------------------------------------------------------------------------------------------
# Blockers and the pre-flight
# ---------------------------------------------------------------------------------------------------------

def pdbs_selecting(pod, pdbs):
    """The PodDisruptionBudgets that cover the pod."""
    return [pdb for pdb in pdbs if pdb_selects(pdb, pod)]


def static_blockers(pod, decision, pdbs, disable_eviction=False, restarted=False):
    """Why the pod can never leave the node under the options given: ``[{"kind", "reason", "pdb"}]``.

    ``decision`` is ``classify_pod``'s answer. Besides the option blockers (emptyDir, naked pods,
    do-not-disrupt), a pod selected by more than one PodDisruptionBudget is refused by the Eviction API (HTTP 500),
    unless it leaves through its Deployment's rolling update (``restarted``) or is deleted (``disable_eviction``).
    """
    result = [{"kind": block["kind"], "reason": block["reason"], "pdb": None} for block in decision.get("blocks") or []]
    if decision.get("action") == "evict" and not disable_eviction and not restarted:
        matching = pdbs_selecting(pod, pdbs)
        if len(matching) > 1:
            names = ", ".join(pdb_key(pdb) for pdb in matching)
            result.append({"kind": "multiple_pdbs", "pdb": names,
                           "reason": "selected by %d PodDisruptionBudgets (%s); the Eviction API refuses such pods "
                                     "(HTTP 500) until one of them is removed" % (len(matching), names)})
    return result


def pod_grace_seconds(pod, grace_period=None):
    """Seconds the pod has to stop: the drain's grace_period when set, else the pod's own (default 30)."""
    if grace_period is not None:
        return grace_period
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return value if isinstance(value, int) and value >= 0 else DEFAULT_GRACE_SECONDS


def predicted_outcome(node_report, timeout_action, timeout_seconds):
    """One sentence predicting how the drain of a node ends, from its pre-flight report."""
    errors = [blocker for blocker in node_report["blockers"] if blocker["severity"] == "error"]
    moved = len(node_report["would_evict"]) + len(node_report["would_delete"]) + len(node_report.get("would_restart") or [])
    if errors:
        pods = sorted(set(blocker["pod"] for blocker in errors))
        if timeout_action == "skip":
            return ("blocked by %d pod(s) (%s): the node would be left cordoned and skipped"
                    % (len(pods), ", ".join(pods)))
        if timeout_action == "force":
            return ("blocked by %d pod(s) (%s): they would be deleted without eviction once the rest is drained or "
                    "after %ds" % (len(pods), ", ".join(pods), timeout_seconds))
        return "blocked by %d pod(s) (%s): the drain would fail" % (len(pods), ", ".join(pods))
    if node_report["predicted"] == "downtime":
        owners = sorted(set(blocker.get("owner") or blocker["pod"] for blocker in node_report["blockers"]
                            if blocker["kind"] == "single_replica"))
        return "drained, with downtime for single-replica workload(s) %s until their replacement is Ready" % ", ".join(owners)
    waits = [blocker for blocker in node_report["blockers"] if blocker["kind"] == "pdb_insufficient"]
    if waits:
        return ("drained: %d pod(s) moved, evictions waiting for replacements to become Ready within their "
                "PodDisruptionBudgets" % moved)
    return "drained: %d pod(s) moved" % moved


def _explain_eviction(node_report, key, entry, pod, pdbs):
    """Name the Deployment, its maxUnavailable/maxSurge and the budget in the findings of a single-replica pod that
    is evicted because a restart could take the workload down."""
    reason = eviction_reason(entry, pod, pdbs)
    owner = "Deployment/%s" % entry["deployment"].split("/", 1)[1]
    found = False
    for blocker in node_report["blockers"]:
        if blocker["pod"] != key:
            continue
        if blocker["kind"] == "single_replica":
            blocker.update(reason=reason, owner=owner, deployment=entry["deployment"])
            found = True
        elif blocker["kind"] in ("pdb_zero", "pdb_insufficient"):
            blocker["reason"] = "%s; %s" % (blocker["reason"], entry["reason"])
            blocker["deployment"] = entry["deployment"]
    if not found:
        node_report["blockers"].append({"pod": key, "kind": "single_replica", "reason": reason, "pdb": None,
                                        "severity": "warning", "owner": owner, "deployment": entry["deployment"]})


def drain_preflight(node_pods_by_node, all_pods, pdbs, options, replicas_by_owner, restarts, timeout_action="fail",
                    timeout_seconds=900):
    """``eviction_preflight`` with what :func:`restart_plan` decided for the pods of Deployments.

    ``restarts`` maps pod keys to :func:`restart_plan` results. A pod whose entry has ``restart`` True appears
    under ``would_restart`` (``{"pod", "deployment", "reason", "zero_downtime"}``) and its budget and
    single-replica findings are dropped: the rolling update keeps the workload up and does not go through the
    Eviction API. A single-replica pod whose entry has ``restart`` False stays under ``would_evict``: its
    ``single_replica`` finding (and its budget's ``pdb_zero``/``pdb_insufficient``, if any) names the Deployment,
    its maxUnavailable/maxSurge and the budget that decides. Each node also gets ``outcome``, one sentence
    predicting the end of its drain under ``timeout_action``.
    """
    report = eviction_preflight(node_pods_by_node, all_pods, pdbs, options, replicas_by_owner)
    dropped = ("pdb_zero", "pdb_insufficient", "single_replica", "multiple_pdbs")
    pods_by_key = dict((pod_key(pod), pod) for pods in node_pods_by_node.values() for pod in pods)
    for node_report in report.values():
        node_report["would_restart"] = []
        for key in list(node_report["would_evict"]) + list(node_report["would_delete"]):
            entry = restarts.get(key)
            if not entry:
                continue
            if not entry.get("restart"):
                if entry.get("replicas") == 1 and key in node_report["would_evict"]:
                    _explain_eviction(node_report, key, entry, pods_by_key[key], pdbs or [])
                continue
            for bucket in ("would_evict", "would_delete"):
                if key in node_report[bucket]:
                    node_report[bucket].remove(key)
            node_report["would_restart"].append({"pod": key, "deployment": entry["deployment"], "reason": entry["reason"],
                                                 "zero_downtime": entry["zero_downtime"]})
            node_report["blockers"] = [blocker for blocker in node_report["blockers"]
                                       if not (blocker["pod"] == key and blocker["kind"] in dropped)]
        severities = [blocker["severity"] for blocker in node_report["blockers"]]
        if "error" in severities:
            node_report["predicted"] = "blocked"
        elif any(blocker["kind"] == "single_replica" for blocker in node_report["blockers"]):
            node_report["predicted"] = "downtime"
        else:
            node_report["predicted"] = "ok"
        node_report["outcome"] = predicted_outcome(node_report, timeout_action, timeout_seconds)
    return report


def remaining_text(entry):
    """``namespace/name (why it is still there)`` for a failure message."""
    why = entry.get("why")
    return "%s (%s)" % (entry["pod"], why) if why else entry["pod"]


def not_drained_message(node, remaining, seconds, action):
    """The message naming every pod still on a node and what holds it."""
    head = "node %s not drained after %ds" % (node, int(round(seconds)))
    if action:
        head += " (%s)" % action
    if not remaining:
        return head
    return "%s: %d pod(s) still there: %s" % (head, len(remaining), "; ".join(remaining_text(entry) for entry in remaining))


# ---------------------------------------------------------------------------------------------------------
# Pacing evictions by budget
# ---------------------------------------------------------------------------------------------------------

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
    Pure bookkeeping: the caller supplies the clock and does the reading.
    """

    def __init__(self, cap=16.0, jitter=None, check_interval=None):
        self.cap = cap
        self.jitter = jitter
        self.check_interval = check_interval
        self.gates = {}

    def seed(self, pdb, disruptions_allowed):
        """Start with what the budget's status said when the drain began (a hint; the Eviction API decides)."""
        if isinstance(disruptions_allowed, int) and not isinstance(disruptions_allowed, bool) and disruptions_allowed >= 0:
            self.gates[pdb] = {"until": 0.0, "attempts": 0, "tokens": disruptions_allowed}

    def decide(self, pdb, now):
        """``("go", None)``: send one eviction now; ``("wait", t)``: not before ``t``; ``("check", None)``: read the budget first."""
        gate = self.gates.get(pdb) if pdb else None
        if gate is None:
            return "go", None
        if now < gate["until"]:
            return "wait", gate["until"]
        if gate["tokens"] > 0:
            return "go", None
        return "check", None

    def forget(self, pdb):
        """The budget is gone: its pods are free to go."""
        self.gates.pop(pdb, None)

    def sent(self, pdb):
        """One eviction of the budget's pods is on its way: it uses one of the disruptions counted."""
        gate = self.gates.get(pdb) if pdb else None
        if gate is not None and gate["tokens"] > 0:
            gate["tokens"] -= 1

    def accepted(self, pdb):
        """The budget took an eviction: the backoff starts over."""
        gate = self.gates.get(pdb) if pdb else None
        if gate is not None:
            gate["attempts"] = 0

    def refused(self, pdb, now, retry_after=None):
        """The budget refused an eviction (429): closed until the backoff delay is over; returns that time."""
        gate = self.gates.setdefault(pdb, {"until": 0.0, "attempts": 0, "tokens": 0})
        gate["attempts"] += 1
        gate["tokens"] = 0
        gate["until"] = max(gate["until"], now + retry_delay(gate["attempts"], retry_after, self.cap, self.jitter))
        return gate["until"]

    def checked(self, pdb, disruptions_allowed, now):
        """The budget was read: let ``disruptions_allowed`` evictions through, or wait again when it is 0.

        ``None`` (unknown) lets one eviction through to ask the Eviction API itself.
        """
        gate = self.gates.setdefault(pdb, {"until": 0.0, "attempts": 0, "tokens": 0})
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
