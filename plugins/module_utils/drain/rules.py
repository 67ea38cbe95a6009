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

from ansible_collections.nodeops.rollout.plugins.module_utils.core.permissions import kube_refusal, kube_refusal_text
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import int_or_percent, scaled_value
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.budgets import pdb_key, pdbs_selecting
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import controller_of

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
DEFAULT_GRACE_SECONDS = 30

_MULTIPLE_PDBS_TEXT = "more than one poddisruptionbudget"
_BUDGET_CAUSE_RE = re.compile(r"disruption budget\s+([^\s]+)\s+needs", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------------------
# Single-replica Deployments: restart through the rolling update instead of evicting
# ---------------------------------------------------------------------------------------------------------

def _int_or_percent(value, default, total, round_up):
    parsed = int_or_percent(default if value is None else value)
    if parsed is None:
        return None
    return max(0, scaled_value(parsed, total, round_up))


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


def restart_plan(pod, replicasets, deployments, exclusive_claims=()):
    """Whether the pod should leave its node through its Deployment's rolling update instead of an eviction.

    ``replicasets`` and ``deployments`` map ``namespace/name`` to objects; ``exclusive_claims`` names the pod's
    PersistentVolumeClaims that one node at a time may attach (ReadWriteOnce, ReadWriteOncePod: the new pod of a
    restart could never attach them while this one holds them, so such a pod is evicted). Returns None when the pod does not
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
    elif exclusive_claims:
        entry["reason"] = ("Deployment %s has one replica whose pod mounts the ReadWriteOnce claim(s) %s: the new pod of a "
                           "restart could never attach the volume while this one holds it; %s"
                           % (key, ", ".join(exclusive_claims), evicted))
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
    a request that will never succeed as sent). An ``error`` the authorizer gave (403: the identity may not evict or
    delete pods, or restart a Deployment) says so in its message and carries ``permission`` (``permissions.kube_refusal``).
    """
    permission = kube_refusal(code, status)
    if permission is not None:
        return {"kind": "error", "message": kube_refusal_text(permission), "pdb": None, "permission": permission}
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


# ---------------------------------------------------------------------------------------------------------
# Grace periods and what is left on a node
# ---------------------------------------------------------------------------------------------------------

def pod_grace_seconds(pod, grace_period=None):
    """Seconds the pod has to stop: the drain's grace_period when set, else the pod's own (default 30)."""
    if grace_period is not None:
        return grace_period
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return value if isinstance(value, int) and value >= 0 else DEFAULT_GRACE_SECONDS


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
