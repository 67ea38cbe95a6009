# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Whether a set of nodes is healthy enough for a rollout to go on, and what exactly is wrong when it is not.

Pure: nodes and pods are dicts in the API's JSON form; no kubernetes import. The I/O half is ``validate.py``,
which lists nodes and pods, calls :func:`evaluate` and repeats it until enough consecutive passes.
"""

from __future__ import annotations

import re
from datetime import datetime

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import parse_time
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import pod_is_finished, pod_is_ready, pod_is_terminating, pod_key

CRITICAL_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")

# What cluster_validate reports of a node, and what node_group_info reports of an instance's node.
HEALTH_FIELDS = ("name", "instance_id", "az", "ready", "ready_since", "not_ready_reason", "schedulable", "deleting")
INSTANCE_NODE_FIELDS = ("name", "provider_id", "ready", "ready_since", "schedulable", "taints", "labels", "annotations")

_INSTANCE_ID_RE = re.compile(r"^i-[0-9a-zA-Z]+$")


class HealthError(RolloutError, ValueError):
    """Bad input; the message names the field and what is allowed."""


def parse_provider_id(provider_id):
    """``(az, instance_id)`` from an AWS providerID; ``(None, None)`` for anything else.

    The one reader of providerIDs (the termination gate finds an instance's node with it): ``aws:///<az>/<id>`` as
    the AWS cloud provider writes it, and the forms seen beside it, ``aws:///<id>``, ``aws://<az>/<id>`` and a
    trailing ``/``. The instance id must look like one (``i-`` and letters or digits), so a Fargate or another
    provider's node names no instance.
    """
    if not isinstance(provider_id, str) or not provider_id.strip().startswith("aws://"):
        return None, None
    parts = [part for part in provider_id.strip()[len("aws://"):].split("/") if part]
    if not parts or not _INSTANCE_ID_RE.match(parts[-1]):
        return None, None
    return (parts[-2] if len(parts) >= 2 else None), parts[-1]


def instance_id_of(provider_id):
    """``aws:///us-east-1a/i-0abc`` -> ``i-0abc`` (None for other providers); see :func:`parse_provider_id`."""
    return parse_provider_id(provider_id)[1]


# Taints the node lifecycle controller keeps on a node while the node is not fit for pods (not-ready, unreachable,
# memory-pressure, network-unavailable, ...); the cordon's own taint (unschedulable) is read as the cordon.
_CONDITION_TAINT_PREFIX = "node.kubernetes.io/"
_CORDON_TAINT = "node.kubernetes.io/unschedulable"


def node_ready(node):
    """``(ready, reason)``: the node's Ready condition, and its reason/message when it is not True.

    A node whose Ready condition is True but which still carries a NoSchedule or NoExecute taint of the node
    lifecycle controller (``node.kubernetes.io/not-ready`` lingers for a while after the kubelet reports Ready) takes
    no pod yet, so it is not ready for a rollout either: the new nodes are counted only once pods can land on them.
    """
    for condition in (node.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            if condition.get("status") == "True":
                lingering = ["%s:%s" % (taint.get("key"), taint.get("effect")) for taint in (node.get("spec") or {}).get("taints") or []
                             if isinstance(taint, dict) and str(taint.get("key") or "").startswith(_CONDITION_TAINT_PREFIX)
                             and taint.get("key") != _CORDON_TAINT and taint.get("effect") in ("NoSchedule", "NoExecute")]
                if lingering:
                    return False, "Ready, but still tainted %s by the node controller" % ", ".join(lingering)
                return True, None
            reason = condition.get("reason") or "Ready=%s" % condition.get("status")
            if condition.get("message"):
                reason = "%s: %s" % (reason, condition["message"])
            return False, reason
    return False, "no Ready condition reported yet"


# The effects that keep a pod that does not tolerate the taint off a node (PreferNoSchedule only makes it a last choice).
KEEPING_OFF_EFFECTS = ("NoSchedule", "NoExecute")
# The rollout's own taints (``rollout.marks``: the outdated and queued taints) are the rollout at work, not a node that
# cannot take pods: what they take out of service the floor counts by the drains (a cordon), never by the taint.
ROLLOUT_TAINT_PREFIX = "nodeops.rollout/"


def _taint_text(taint):
    return "%s%s:%s" % (taint.get("key"), "=%s" % taint["value"] if taint.get("value") else "", taint.get("effect"))


def _taint_id(taint):
    return (taint.get("key"), taint.get("value") or None, taint.get("effect"))


def group_taints(nodes):
    """The NoSchedule/NoExecute taints every one of ``nodes`` (summaries with ``taints``) carries, ``[{"key", "value",
    "effect"}]``: the taints of the group itself (a launch template's ``--register-with-taints`` of a dedicated or GPU
    pool), which the pods that run there tolerate. A taint only some nodes carry - a startup taint still on the new
    nodes (a CNI's or CSI driver's ``agent-not-ready``), an operator's ``dedicated=...`` on one old node - is not: it keeps
    those nodes from counting as capacity (:func:`keeping_pods_off`). None of the node controller's or the rollout's."""
    shared = None
    for node in nodes:
        if not isinstance(node, dict):
            continue
        ids = set(_taint_id(taint) for taint in node.get("taints") or [] if isinstance(taint, dict)
                  and taint.get("effect") in KEEPING_OFF_EFFECTS and not _not_capacity_taint_exempt(taint))
        shared = ids if shared is None else shared & ids
    return [{"key": key, "value": value, "effect": effect} for key, value, effect in sorted(shared or (), key=str)]


def _not_capacity_taint_exempt(taint, own_keys=()):
    key = str(taint.get("key") or "")
    return key.startswith(_CONDITION_TAINT_PREFIX) or key.startswith(ROLLOUT_TAINT_PREFIX) or key in own_keys


def keeping_pods_off(taints, tolerated=(), own_keys=()):
    """The taints of a node (``[{"key", "value", "effect"}]``) that keep the pods a rollout moves off it, as text
    (``key=value:Effect``): every NoSchedule or NoExecute taint but the node controller's (read as not Ready by
    :func:`node_ready`), the rollout's own (``nodeops.rollout/*`` and ``own_keys``, a custom taint key) and those in
    ``tolerated`` (:func:`group_taints`: the group's own, which its pods tolerate). A node with any is no capacity: Ready
    and not cordoned, it still takes none of the pods to move."""
    allowed = set(_taint_id(taint) for taint in tolerated or () if isinstance(taint, dict))
    return [_taint_text(taint) for taint in taints or () if isinstance(taint, dict) and taint.get("effect") in KEEPING_OFF_EFFECTS
            and not _not_capacity_taint_exempt(taint, own_keys) and _taint_id(taint) not in allowed]


def ready_since(node):
    """When the node's Ready condition last turned True (its ``lastTransitionTime``, as the API writes it), or None while
    the node is not Ready."""
    return _ready_condition_since(node) if node_ready(node)[0] else None


def node_summary(node, fields=HEALTH_FIELDS):
    """The facts a rollout reads of one Node (API JSON form), the one reader of them: ``fields`` of ``{"name",
    "provider_id", "instance_id", "az", "ready", "ready_since", "not_ready_reason", "schedulable", "deleting", "taints",
    "labels", "annotations"}`` (``HEALTH_FIELDS`` for cluster_validate, ``INSTANCE_NODE_FIELDS`` for node_group_info)."""
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    az, instance_id = parse_provider_id(spec.get("providerID"))
    labels = metadata.get("labels") or {}
    for label in ZONE_LABELS:
        if labels.get(label):
            az = labels[label]
            break
    ready, reason = node_ready(node)
    facts = {
        "name": metadata.get("name"),
        "provider_id": spec.get("providerID"),
        "instance_id": instance_id,
        "az": az,
        "ready": ready,
        "ready_since": ready_since(node) if "ready_since" in fields else None,
        "not_ready_reason": reason,
        "schedulable": not spec.get("unschedulable"),
        "deleting": bool(metadata.get("deletionTimestamp")),
        "taints": [{"key": taint.get("key"), "value": taint.get("value"), "effect": taint.get("effect")}
                   for taint in spec.get("taints") or []],
        "labels": dict(labels),
        "annotations": dict(metadata.get("annotations") or {}),
    }
    return {field: facts[field] for field in fields}


def nodes_by_instance(nodes):
    """``{instance id: node summary}`` for every node (API JSON form, as KubeApi.list_nodes returns them) whose
    providerID names an EC2 instance."""
    found = {}
    for node in nodes:
        summary = node_summary(node, INSTANCE_NODE_FIELDS)
        instance_id = instance_id_of(summary["provider_id"])
        if instance_id:
            found[instance_id] = summary
    return found


def failed_to_join(instances, up_to_date_ids, now, join_timeout):
    """The up-to-date instances in service that have had ``join_timeout`` seconds since launch and still are no Ready
    node: ``[{"instance_id", "az", "node", "launch_time", "reason"}]``, oldest first.

    ``instances``: ``clients.aws.instance_record`` shape with the node joined (``{"name", "ready"}`` or None); ``now``: an aware
    datetime. A run that launched them has waited that long and stopped with NodeCreationFailure; the next run replaces
    them once (a broken image fails again, and stops again) instead of waiting for nodes that will never come."""
    wanted = set(up_to_date_ids)
    found = []
    for instance in instances:
        if (instance["instance_id"] not in wanted or instance.get("lifecycle_state") != "InService"
                or instance.get("detached") or not instance.get("launch_time")):
            continue
        node = instance.get("node")
        if isinstance(node, dict) and node.get("ready"):
            continue
        age = (now - datetime.fromisoformat(instance["launch_time"].replace("Z", "+00:00"))).total_seconds()
        if age < join_timeout:
            continue
        found.append({"instance_id": instance["instance_id"], "az": instance.get("az"),
                      "node": node.get("name") if isinstance(node, dict) else None, "launch_time": instance["launch_time"],
                      "reason": ("node %s not Ready %ds after launch" % (node.get("name"), age) if isinstance(node, dict)
                                 else "no node registered %ds after launch" % age)})
    return sorted(found, key=lambda entry: entry["launch_time"])


def check_instance_ids(instance_ids, field="instance_ids"):
    """Validate a list of EC2 instance ids (``i-...``), returned without duplicates in their order."""
    if not isinstance(instance_ids, (list, tuple)) or not instance_ids:
        raise HealthError("%s: %r is not allowed; use a non-empty list of EC2 instance ids (i-...)" % (field, instance_ids))
    seen = []
    for index, value in enumerate(instance_ids):
        if not isinstance(value, str) or not _INSTANCE_ID_RE.match(value.strip()):
            raise HealthError("%s[%d]: %r is not allowed; use an EC2 instance id (i-...)" % (field, index, value))
        if value.strip() not in seen:
            seen.append(value.strip())
    return seen


def _pod_problem(pod):
    status = pod.get("status") or {}
    phase = status.get("phase") or "Unknown"
    spec = pod.get("spec") or {}
    where = " on %s" % spec["nodeName"] if spec.get("nodeName") else " (not scheduled)"
    reasons = []
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("status") != "True" and condition.get("reason"):
            reasons.append("%s: %s" % (condition.get("type"), condition["reason"]))
    return "%s%s%s" % (phase, where, ", " + "; ".join(reasons) if reasons else "")


def _critical_pods(pods, node_names):
    """The critical pods a validation of ``node_names`` looks at: system-cluster-critical pods wherever they are,
    system-node-critical pods on ``node_names``; pods being deleted or finished are not."""
    names = set(node_names or ())
    for pod in pods:
        spec = pod.get("spec") or {}
        priority = spec.get("priorityClassName")
        if priority not in CRITICAL_PRIORITY_CLASSES:
            continue
        if pod_is_terminating(pod) or pod_is_finished(pod):
            continue
        if priority == "system-node-critical" and spec.get("nodeName") not in names:
            continue
        yield pod


def critical_pods_not_ready(pods, node_names):
    """Critical pods that are not Ready: ``[{"pod", "priority_class", "node", "problem"}]``.

    system-cluster-critical pods count wherever they are; system-node-critical pods count on ``node_names``
    (the nodes under validation: a node-critical pod elsewhere, on a node being drained, is not their concern).
    Pods being deleted or finished are ignored.
    """
    result = [{"pod": pod_key(pod), "priority_class": (pod.get("spec") or {}).get("priorityClassName"),
               "node": (pod.get("spec") or {}).get("nodeName"), "problem": _pod_problem(pod)}
              for pod in _critical_pods(pods, node_names) if not pod_is_ready(pod)]
    return sorted(result, key=lambda entry: entry["pod"])


def _ready_condition_since(obj):
    """When the object's Ready condition last turned True (its ``lastTransitionTime``), or None when the condition is not
    True or says no time."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return (condition.get("lastTransitionTime") or None) if condition.get("status") == "True" else None
    return None


def healthy_since(good, critical_pods, node_names):
    """When the healthy state a validation saw began, as the API records it: the latest Ready transition of the
    ``good`` nodes (summaries with ``ready_since``) and of the critical pods it looks at - or None when one of them
    records no time (the state's age is then unknown). The state has held, unbroken, since then: a node or pod that
    flapped carries its later transition."""
    moments = [summary.get("ready_since") for summary in good]
    if critical_pods is not None:
        moments.extend(_ready_condition_since(pod) for pod in _critical_pods(critical_pods, node_names))
    if not moments or any(not moment for moment in moments):
        return None
    return max(moments, key=lambda moment: parse_time(moment, "lastTransitionTime"))


def evaluate(nodes, instance_ids=None, expected_count=None, label_selector=None, each_az=False, azs=None,
             schedulable=True, critical_pods=None, tolerated_taints=None):
    """One validation pass.

    ``nodes``: the nodes to look at (with ``instance_ids``, every node of the cluster; with a label selector, the
    nodes the API returned for it). With ``instance_ids`` every instance must have a node (matched by providerID),
    Ready, and schedulable when ``schedulable``. With ``expected_count`` at least that many of ``nodes`` must be
    Ready (and schedulable when ``schedulable``). ``each_az``: every AZ in ``azs`` (default: the AZs of the
    expected nodes found) has at least one such node. ``critical_pods``: pods to check with
    :func:`critical_pods_not_ready`, or None to skip the check. When ``schedulable``, a node counts only once it can take
    pods: a Ready node that carries a NoSchedule or NoExecute taint (:func:`keeping_pods_off`: neither the rollout's own
    nor one of ``tolerated_taints``, the group's own taints) is not Ready for the validation, its reason naming the taint -
    a startup taint (a CNI's or CSI driver's ``agent-not-ready``) that its agent has not lifted yet.

    Returns ``{"ok", "nodes", "missing", "not_ready", "unschedulable", "azs_without_ready_node",
    "critical_pods_not_ready", "ready_count", "expected_count", "message", "healthy_since"}``; ``healthy_since``
    (:func:`healthy_since`) only when ``ok``.
    """
    summaries = []
    for node in nodes:
        summary = node_summary(node)
        kept_off = keeping_pods_off((node.get("spec") or {}).get("taints"), tolerated_taints) if schedulable else []
        if summary["ready"] and summary["schedulable"] and kept_off:
            summary["ready"] = False
            summary["not_ready_reason"] = "Ready, but tainted %s, which keeps the pods to move off it" % ", ".join(kept_off)
            summary["ready_since"] = None
        summaries.append(summary)
    if instance_ids is not None:
        by_instance = {}
        for summary in summaries:
            if summary["instance_id"] and not summary["deleting"]:
                by_instance.setdefault(summary["instance_id"], summary)
        expected = [by_instance[instance_id] for instance_id in instance_ids if instance_id in by_instance]
        missing = [instance_id for instance_id in instance_ids if instance_id not in by_instance]
        expected_count = len(instance_ids)
    else:
        expected = [summary for summary in summaries if not summary["deleting"]]
        missing = []

    not_ready = [summary["name"] for summary in expected if not summary["ready"]]
    unschedulable = [summary["name"] for summary in expected if schedulable and not summary["schedulable"]]
    good = [summary for summary in expected if summary["ready"] and (summary["schedulable"] or not schedulable)]
    ready_count = len(good)

    zones = sorted(set(azs)) if azs else sorted(set(summary["az"] for summary in expected if summary["az"]))
    azs_without = []
    if each_az:
        covered = set(summary["az"] for summary in good)
        azs_without = [zone for zone in zones if zone not in covered]

    critical = []
    if critical_pods is not None:
        critical = critical_pods_not_ready(critical_pods, [summary["name"] for summary in expected])

    problems = []
    if missing:
        problems.append("%d of %d instance(s) have no node registered: %s" % (len(missing), expected_count, ", ".join(missing)))
    if instance_ids is None and ready_count < expected_count:
        problems.append("%d node(s)%s Ready%s, %d expected" % (
            ready_count, " matching %s" % label_selector if label_selector else "",
            " and schedulable" if schedulable else "", expected_count))
    for summary in expected:
        if not summary["ready"]:
            problems.append("node %s (%s) not Ready: %s" % (summary["name"], summary["instance_id"] or "no instance id",
                                                            summary["not_ready_reason"]))
    if unschedulable:
        problems.append("node(s) cordoned: %s" % ", ".join(unschedulable))
    if azs_without:
        problems.append("no Ready%s node in AZ(s) %s" % (" schedulable" if schedulable else "", ", ".join(azs_without)))
    for entry in critical:
        problems.append("critical pod %s (%s) not Ready: %s" % (entry["pod"], entry["priority_class"], entry["problem"]))

    ok = not problems
    if ok:
        message = "valid: %d node(s) Ready%s" % (ready_count, " and schedulable" if schedulable else "")
        if zones:
            message += " in %s" % ", ".join(zones)
        if critical_pods is not None:
            message += "; critical pods Ready"
    else:
        message = "not valid: " + "; ".join(problems)
    return {
        "ok": ok,
        "nodes": {summary["name"]: summary for summary in expected},
        "missing": missing,
        "not_ready": not_ready,
        "unschedulable": unschedulable,
        "azs_without_ready_node": azs_without,
        "critical_pods_not_ready": critical,
        "ready_count": ready_count,
        "expected_count": expected_count,
        "message": message,
        "healthy_since": healthy_since(good, critical_pods, [summary["name"] for summary in expected]) if ok else None,
    }
