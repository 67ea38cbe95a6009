# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a rollout tells about a node in Kubernetes Events, as Cluster API and Karpenter do: ``kubectl describe node``
then shows that the rollout cordoned or tainted the node and why (the run and its target), how each drain ended and
what blocked it, and that the instance is being terminated. Pure: the wording and the Event objects; writing them is
``clients.event_writer``.

The Events are core/v1 ``Event`` objects in the ``default`` namespace (where node events live) whose
``involvedObject`` is the Node (kind, name, uid; no namespace), as ``kubectl describe node`` lists them: it searches
core/v1 Events by ``involvedObject.name/namespace/kind/uid``. They are written in the legacy form (``firstTimestamp``,
``lastTimestamp``, ``count``, ``source``), which every API server accepts and every kubectl shows, with
``reportingComponent`` set too.
"""

from __future__ import annotations

COMPONENT = "nodeops.rollout"
NAMESPACE = "default"
# kube-apiserver keeps notes of events.k8s.io Events to 1 KiB; ours stay within it whatever API reads them
MESSAGE_LIMIT = 1024
# blocking pods named in one message, the others counted
BLOCKERS_NAMED = 5

# reasons (CamelCase, as every Kubernetes component writes them) and their types
CORDONED = "RolloutCordoned"
UNCORDONED = "RolloutUncordoned"
TAINTED = "RolloutTainted"
UNTAINTED = "RolloutUntainted"
DRAIN_SUCCEEDED = "DrainSucceeded"
DRAIN_BLOCKED = "DrainBlocked"
DRAIN_FAILED = "DrainFailed"
TERMINATING = "RolloutTerminating"
# what a user should read into a taint the rollout put on, by its effect
TAINT_MEANS = {"NoSchedule": "no new pod is scheduled here", "PreferNoSchedule": "new pods go to other nodes where they can",
               "NoExecute": "pods that do not tolerate it are evicted"}


def event_context(events_option, lock_option):
    """``{"enabled", "run", "target"}`` from a module's ``events`` and ``lock`` options: the run is ``events.run``,
    else the lock's holder (the run's identity); ``target`` is what the rollout rolls to, as the caller words it."""
    events_option = events_option or {}
    run = events_option.get("run") or (lock_option or {}).get("holder")
    return {"enabled": events_option.get("enabled", True) is not False, "run": run or None,
            "target": events_option.get("target") or None}


def why(context):
    """`` by rollout run R, rolling to T`` (each part only when known)."""
    text = ""
    if context.get("run"):
        text += " by rollout run %s" % context["run"]
    else:
        text += " by nodeops.rollout"
    if context.get("target"):
        text += ", rolling to %s" % context["target"]
    return text


def target_text(launch_template_id=None, version=None, image_id=None):
    """How a target is named in a message: ``launch template lt-0abc version 7 (ami-0123)``."""
    if launch_template_id is None and version is None:
        return None
    text = "launch template %s version %s" % (launch_template_id or "?", version if version is not None else "?")
    return text + (" (%s)" % image_id if image_id else "")


def _cut(message):
    return message if len(message) <= MESSAGE_LIMIT else message[:MESSAGE_LIMIT - 3] + "..."


def edit_events(node_name, changes, context):
    """The Events of one node_taint change of ``node_name`` (``changes``: node_edits' texts): one for a cordon or an
    uncordon, one for the taints added, one for those removed. Labels and annotations are bookkeeping: no Event."""
    found = []
    added = [change[len("taint "):-len(" added")] for change in changes if change.startswith("taint ") and change.endswith(" added")]
    removed = [change[len("taint "):-len(" removed")] for change in changes if change.startswith("taint ") and change.endswith(" removed")]
    if "cordoned" in changes:
        found.append(cordon_event(node_name, context))
    if "uncordoned" in changes:
        found.append(("Normal", UNCORDONED, _cut("Marked schedulable again%s" % why(context))))
    if added:
        effects = set(text.rsplit(":", 1)[-1] for text in added)
        found.append(("Normal", TAINTED, _cut("Tainted %s%s: %s" % (", ".join(added), why(context), "; ".join(
            TAINT_MEANS[effect] for effect in ("NoSchedule", "PreferNoSchedule", "NoExecute") if effect in effects)))))
    if removed:
        found.append(("Normal", UNTAINTED, _cut("Taint %s removed%s" % (", ".join(removed), why(context)))))
    return found


def cordon_event(node_name, context, draining=False):  # pylint: disable=unused-argument
    """The Event of a cordon made by the rollout."""
    return ("Normal", CORDONED, _cut("Cordoned%s%s" % (why(context), ", to be drained" if draining else "")))


def _blocker_text(blocking):
    text = blocking.get("pod") or "?"
    if blocking.get("pdb"):
        text += " (PodDisruptionBudget %s)" % blocking["pdb"]
    if blocking.get("message"):
        text += ": %s" % blocking["message"]
    return text


def blockers_text(blocking):
    """The blocking pods and budgets of a drain result, the first :data:`BLOCKERS_NAMED` named."""
    named = [_blocker_text(item) for item in blocking[:BLOCKERS_NAMED]]
    if len(blocking) > BLOCKERS_NAMED:
        named.append("and %d more" % (len(blocking) - BLOCKERS_NAMED))
    return "; ".join(named)


def drain_event(node_name, result, context):  # pylint: disable=unused-argument
    """The Event of one node's drain outcome (``result``: its entry in node_drain's result)."""
    status = result.get("status")
    seconds = int(round(result.get("seconds") or 0))
    if status == "drained":
        moved = "%d pod(s) evicted" % len(result.get("evicted") or [])
        if result.get("restarted"):
            moved += ", %d restarted on new nodes" % len(result["restarted"])
        if result.get("deleted"):
            moved += ", %d deleted" % len(result["deleted"])
        forced = " (timeout_action=force deleted pods without eviction)" if result.get("forced") else ""
        return ("Normal", DRAIN_SUCCEEDED, _cut("Drained in %ds%s: %s%s" % (seconds, why(context), moved, forced)))
    blocking = result.get("blocking") or []
    remaining = result.get("remaining") or []
    if status == "skipped":
        left = "quarantined (label nodeops.rollout/quarantined) and left cordoned" if result.get("quarantined") else "left cordoned"
        head = "Drain skipped after %ds%s, node %s" % (seconds, why(context), left)
        reason, kind = DRAIN_BLOCKED, "Warning"
    elif status == "not started":
        head = "Drain not started%s, nothing was changed: %s" % (
            why(context), "pods that cannot leave this node under the drain's options" if blocking
            else "another node of the same drain holds pods that cannot leave it")
        reason, kind = DRAIN_BLOCKED, "Warning"
    else:
        head = "Drain failed after %ds%s" % (seconds, why(context))
        reason, kind = (DRAIN_BLOCKED if blocking else DRAIN_FAILED), "Warning"
    if blocking:
        head += "; blocked by %s" % blockers_text(blocking)
    elif status == "not started":
        pass
    elif remaining:
        head += "; %d pod(s) still there: %s" % (len(remaining), ", ".join(remaining[:BLOCKERS_NAMED]))
    elif result.get("message"):
        head += ": %s" % result["message"]
    return (kind, reason, _cut(head))


def termination_event(instance_id, group_name, decremented, context):
    """The Event of an instance terminated through its Auto Scaling group."""
    how = "desired capacity decremented" if decremented else "the group launches a replacement"
    return ("Normal", TERMINATING, _cut("Terminating instance %s through Auto Scaling group %s (%s)%s"
                                        % (instance_id, group_name, how, why(context))))


def event_body(node, event, now_text, instance=None):
    """The core/v1 Event of ``event`` (``(type, reason, message)``) about ``node`` (the Node object as read), at
    ``now_text`` (RFC 3339); ``instance`` names who reports it (``reportingInstance``)."""
    kind, reason, message = event
    metadata = node.get("metadata") or {}
    name = metadata.get("name")
    involved = {"apiVersion": "v1", "kind": "Node", "name": name}
    if metadata.get("uid"):
        involved["uid"] = metadata["uid"]
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": "%s." % name, "namespace": NAMESPACE},
        "involvedObject": involved,
        "reason": reason, "message": message, "type": kind,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT, "reportingInstance": (instance or COMPONENT)[:128],
        "firstTimestamp": now_text, "lastTimestamp": now_text, "count": 1,
    }
