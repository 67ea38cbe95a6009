# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Every decision of a rollout that needs no I/O.

This module is pure: it imports only the standard library, reads plain dicts and returns plain dicts, so
modules and the role can exchange its results as data and unit tests can check every rule directly.

Data shapes
-----------
Kubernetes objects are dicts in the API's JSON form (``metadata``, ``spec``, ``status``, camelCase keys), as the
REST API returns them or as ``ApiClient.sanitize_for_serialization`` produces them.

An *instance* is::

    {"instance_id": "i-0abc", "az": "eu-west-1a", "lifecycle_state": "InService", "health_status": "Healthy",
     "launch_template": {"id": "lt-0123", "name": "workers", "version": "4"} or None,
     "image_id": "ami-0123", "launch_time": "2024-05-01T12:00:00Z", "tags": {"key": "value"},
     "node": None or {"name": "ip-10-0-1-2.ec2.internal", "ready": True, "schedulable": True,
                      "taints": [...], "labels": {...}, "annotations": {...}}}

A *target* is ``{"launch_template_id": "lt-0123", "version": 5}`` where the version is the explicit, resolved
version number (never ``$Latest``/``$Default``); it may also carry ``"image_id"``.

Every bad input raises :class:`PlanError` with one message that names the field and the values allowed.
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.errors import RolloutError

# The EKS managed node group quota on maxUnavailable (UpdateNodegroupConfig accepts 1..100 nodes).
EKS_MAX_UNAVAILABLE_QUOTA = 100

# Node annotation that asks for a node to be replaced even when its launch template is current.
ANNOTATION_NEEDS_UPDATE = "nodeops.rollout/needs-update"
# Instance tag of an instance detached from its group for surge by an earlier run.
TAG_DETACHED = "nodeops.rollout/detached"
# EC2 tag holding the launch template version an instance was really launched with.
TAG_EC2_LAUNCH_TEMPLATE_VERSION = "aws:ec2launchtemplate:version"

# Pod annotations that ask not to be evicted, with the value that means "do not".
ANNOTATION_MIRROR = "kubernetes.io/config.mirror"
DO_NOT_DISRUPT_ANNOTATIONS = (
    ("karpenter.sh/do-not-disrupt", "true"),
    ("cluster-autoscaler.kubernetes.io/safe-to-evict", "false"),
    ("nodeops.rollout/do-not-evict", "true"),
)

# Owner kinds whose pods form a replicated workload; one replica means downtime when its pod moves.
REPLICATED_OWNER_KINDS = ("ReplicaSet", "Deployment", "StatefulSet", "ReplicationController")

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

# Auto Scaling lifecycle states in which an instance belongs to the group's capacity.
_ACTIVE_STATES = ("InService", "Pending", "Pending:Wait", "Pending:Proceed")
_FALSE_WORDS = ("", "false", "0", "no", "off", "none", "null")

# Blocker kinds reported by eviction_preflight and their severity: an "error" stops the drain under the
# current options, a "warning" lets it finish with a cost (downtime, slower progress, a budget bypassed).
BLOCKER_KINDS = ("pdb_zero", "pdb_insufficient", "multiple_pdbs", "naked_pod", "emptydir", "do_not_disrupt",
                 "single_replica", "tolerates_all")


class PlanError(RolloutError, ValueError):
    """Bad input to a planning function; the message names the field and the values allowed."""


# ---------------------------------------------------------------------------------------------------------
# Small validators
# ---------------------------------------------------------------------------------------------------------

def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int_at_least(value, field, minimum):
    if not _is_int(value) or value < minimum:
        raise PlanError("%s: %r is not allowed; use an integer >= %d" % (field, value, minimum))
    return value


def _truthy(value):
    """Return whether an annotation or tag value means yes: anything but empty/false/0/no/off/none."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() not in _FALSE_WORDS


def _ceil_percent(percent, total):
    """``percent`` of ``total`` rounded up, in integers only (no float error at exact boundaries)."""
    return -(-percent * total // 100)


def _floor_percent(percent, total):
    return percent * total // 100


# ---------------------------------------------------------------------------------------------------------
# Sizes: maxUnavailable, maxSurge and what the group needs to surge
# ---------------------------------------------------------------------------------------------------------

_INT_RE = re.compile(r"^[0-9]+$")
_PERCENT_RE = re.compile(r"^([0-9]+)%$")


def parse_int_or_percent(value, field, allow_zero=False):
    """Read a count written as an integer (``3``, ``"3"``) or a percentage (``"25%"``).

    Returns ``("int", n)`` or ``("percent", p)``. Integers must be >= 1 and percentages between 1% and 100%
    (with ``allow_zero``, 0 and 0% are accepted too). Booleans, floats, negative numbers and other strings
    are refused with a message naming ``field``.
    """
    low = 0 if allow_zero else 1
    error = PlanError("%s: %r is not allowed; use an integer >= %d or a percentage between %d%% and 100%%"
                      % (field, value, low, low))
    if _is_int(value):
        if value < low:
            raise error
        return ("int", value)
    if not isinstance(value, str):
        raise error
    text = value.strip()
    if _INT_RE.match(text):
        number = int(text)
        if number < low:
            raise error
        return ("int", number)
    match = _PERCENT_RE.match(text)
    if match:
        number = int(match.group(1))
        if number < low or number > 100:
            raise error
        return ("percent", number)
    raise error


def max_unavailable_count(value, group_size, field="max_unavailable"):
    """How many nodes may be out of service at once (the batch size).

    ``None`` means the EKS default of one node. An integer is taken as is; a percentage is of ``group_size``,
    rounded down. The result is at least 1 and at most the EKS quota of 100. An integer larger than the group
    is allowed and simply means the whole group at once.
    """
    group_size = _int_at_least(group_size, "group_size", 0)
    if value is None:
        return 1
    kind, number = parse_int_or_percent(value, field)
    count = _floor_percent(number, group_size) if kind == "percent" else number
    return max(1, min(EKS_MAX_UNAVAILABLE_QUOTA, count))


def surge_count(value, az_count, max_unavailable, group_size, field="max_surge"):
    """How many extra instances to launch before draining.

    ``None`` means the EKS default: the larger of twice the number of Availability Zones and
    ``max_unavailable`` (the resolved count). An integer is taken as is, 0 meaning no surge; a percentage is
    of ``group_size``, rounded up.
    """
    az_count = _int_at_least(az_count, "az_count", 0)
    max_unavailable = _int_at_least(max_unavailable, "max_unavailable", 1)
    group_size = _int_at_least(group_size, "group_size", 0)
    if value is None:
        return max(2 * az_count, max_unavailable)
    kind, number = parse_int_or_percent(value, field, allow_zero=True)
    if kind == "percent":
        return _ceil_percent(number, group_size)
    return number


def outdated_taint_effect(requested, surge, outdated_count):
    """The effect of the taint put on every outdated node once the surge is Ready.

    ``requested`` (``NoSchedule`` by default) holds only when the surge replaces every outdated node: a hard taint
    then leaves the new nodes, at least as many as the old ones, to take every pod. A smaller surge would leave fewer
    Ready schedulable nodes than the group's original size (a ``NoSchedule`` node takes no new pod), so the taint is
    ``PreferNoSchedule`` then (kops's soft taint): the scheduler still sends evicted pods to new nodes first, each
    batch is taken out by its drain's cordon, and the group keeps its original size of schedulable nodes while the
    surge still owed covers the batch. Without a surge no new node exists yet, which is the same rule.
    """
    if requested not in TAINT_EFFECTS:
        raise PlanError("taint_effect: %r is not allowed; use one of %s" % (requested, ", ".join(TAINT_EFFECTS)))
    if requested == "PreferNoSchedule" or surge >= outdated_count:
        return requested
    return "PreferNoSchedule"


def surge_fits(original_max, desired, surge, hard_limit=None):
    """Check that the group can grow by ``surge`` and return the sizes to set.

    As EKS does, both the maximum and the desired capacity grow by the surge, so whatever headroom the group
    had for its autoscaler is kept during the rollout. ``hard_limit`` (the largest maximum the operator allows,
    or a quota) caps the new maximum; when even the desired capacity plus the surge does not fit under it the
    error says which maximum would be needed and which surge would fit.

    Returns ``{"max_size", "desired_capacity", "max_size_needed", "surge"}``.
    """
    original_max = _int_at_least(original_max, "max_size", 0)
    desired = _int_at_least(desired, "desired_capacity", 0)
    surge = _int_at_least(surge, "max_surge", 0)
    if desired > original_max:
        raise PlanError("desired_capacity: %d is not allowed; it must be between 0 and the group's max_size (%d)"
                        % (desired, original_max))
    needed = desired + surge
    new_max = original_max + surge
    if hard_limit is not None:
        hard_limit = _int_at_least(hard_limit, "max_size_limit", 0)
        if needed > hard_limit:
            room = max(0, hard_limit - desired)
            raise PlanError(
                "max_surge: a surge of %d on a desired capacity of %d needs a maximum size of at least %d, above "
                "max_size_limit %d; lower max_surge to %d or less (0 means no surge) or raise max_size_limit to %d"
                % (surge, desired, needed, hard_limit, room, needed))
        new_max = max(original_max, min(new_max, hard_limit))
    return {"max_size": new_max, "desired_capacity": needed, "max_size_needed": needed,
            "surge": surge}


# ---------------------------------------------------------------------------------------------------------
# Instances: outdated or up to date
# ---------------------------------------------------------------------------------------------------------

_TIME_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?$", re.IGNORECASE)


def parse_time(value, field):
    """Read an ISO 8601 time (``2024-05-01T12:00:00Z``, offsets and fractions allowed) or a datetime.

    Times without an offset are taken as UTC. Returns an aware UTC datetime.
    """
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)
    error = PlanError("%s: %r is not allowed; use an ISO 8601 time such as '2024-05-01T12:00:00Z'" % (field, value))
    match = _TIME_RE.match(value.strip()) if isinstance(value, str) else None
    if not match:
        raise error
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    stamp = None
    try:
        micro = int((fraction or "0")[:6].ljust(6, "0"))
        stamp = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micro,
                         tzinfo=timezone.utc)
    except ValueError:
        pass
    if stamp is None:
        raise error
    if offset and offset.upper() != "Z":
        digits = offset[1:].replace(":", "")
        delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        stamp = stamp - delta if offset[0] == "+" else stamp + delta
    return stamp


def _explicit_version(value):
    """The version as a canonical digit string, or None when it is symbolic ($Latest/$Default) or missing."""
    if _is_int(value) and value >= 1:
        return str(value)
    if isinstance(value, str) and _INT_RE.match(value.strip()) and int(value.strip()) >= 1:
        return str(int(value.strip()))
    return None


def normalize_target(target):
    """Validate a target and return ``{"launch_template_id", "version", "image_id"}`` with the version as a string.

    The version must be explicit: resolve ``$Latest``/``$Default`` to a number before planning, otherwise a
    later run could compare instances against a different version than the one they were launched with.
    """
    if not isinstance(target, dict):
        raise PlanError("target: %r is not allowed; use a dict with launch_template_id and version" % (target,))
    template_id = target.get("launch_template_id")
    if not isinstance(template_id, str) or not template_id.strip():
        raise PlanError("target.launch_template_id: %r is not allowed; use the launch template id (lt-...)"
                        % (template_id,))
    raw_version = target.get("version")
    version = _explicit_version(raw_version)
    if version is None:
        raise PlanError("target.version: %r is not allowed; use the explicit version number (an integer >= 1); "
                        "resolve $Latest or $Default first" % (raw_version,))
    image_id = target.get("image_id")
    return {"launch_template_id": template_id.strip(), "version": version, "image_id": image_id or None}


def _checked_instances(instances, field="instances"):
    if not isinstance(instances, (list, tuple)):
        raise PlanError("%s: %r is not allowed; use a list of instance dicts" % (field, instances))
    seen = set()
    for index, instance in enumerate(instances):
        if not isinstance(instance, dict):
            raise PlanError("%s[%d]: %r is not allowed; each instance must be a dict" % (field, index, instance))
        instance_id = instance.get("instance_id")
        if not isinstance(instance_id, str) or not instance_id:
            raise PlanError("%s[%d].instance_id: %r is not allowed; every instance needs its id (i-...)"
                            % (field, index, instance_id))
        if instance_id in seen:
            raise PlanError("%s[%d].instance_id: %r is not allowed; each instance must be listed once"
                            % (field, index, instance_id))
        seen.add(instance_id)
    return instances


def instance_is_active(instance):
    """Whether the instance counts toward the group's capacity: lifecycle state InService or Pending*."""
    return (instance.get("lifecycle_state") or "") in _ACTIVE_STATES


def instance_is_detached(instance):
    """Whether an earlier run detached the instance for surge (tag ``nodeops.rollout/detached``)."""
    return _truthy((instance.get("tags") or {}).get(TAG_DETACHED))


def _instance_is_gone(instance):
    return (instance.get("lifecycle_state") or "").startswith("Terminat")


def _node_name(instance):
    node = instance.get("node")
    return node.get("name") if isinstance(node, dict) else None


def outdated_reasons(instance, target):
    """Every reason the instance must be replaced (an empty list when it is up to date).

    An instance is outdated when it was launched from another launch template or another version than the
    target, when its node carries the annotation ``nodeops.rollout/needs-update`` with a true value, or when
    an earlier run detached it for surge (tag ``nodeops.rollout/detached``). When the group reported a
    symbolic version (``$Latest``/``$Default``) for the instance, the EC2 tag ``aws:ec2launchtemplate:version``
    gives the real one; failing that, the instance is up to date only if its AMI equals the target's
    ``image_id`` (when given).
    """
    target = normalize_target(target)
    reasons = []
    tags = instance.get("tags") or {}
    if instance_is_detached(instance):
        reasons.append("detached from the group for surge by an earlier run (tag %s)" % TAG_DETACHED)
    template = instance.get("launch_template") or {}
    template_id = template.get("id")
    if not template_id:
        reasons.append("not launched from a launch template; target is %s version %s"
                       % (target["launch_template_id"], target["version"]))
    elif template_id != target["launch_template_id"]:
        reasons.append("launched from launch template %s; target is %s version %s"
                       % (template_id, target["launch_template_id"], target["version"]))
    else:
        raw_version = template.get("version")
        version = _explicit_version(raw_version)
        if version is None:
            version = _explicit_version(tags.get(TAG_EC2_LAUNCH_TEMPLATE_VERSION))
        if version is None:
            same_image = target["image_id"] is not None and instance.get("image_id") == target["image_id"]
            if not same_image:
                reasons.append("launched from launch template %s version %r, which cannot be compared with "
                               "target version %s" % (template_id, raw_version, target["version"]))
        elif version != target["version"]:
            reasons.append("launched from launch template %s version %s; target version is %s"
                           % (template_id, version, target["version"]))
    node = instance.get("node")
    if isinstance(node, dict) and _truthy((node.get("annotations") or {}).get(ANNOTATION_NEEDS_UPDATE)):
        reasons.append("node %s is annotated %s" % (node.get("name"), ANNOTATION_NEEDS_UPDATE))
    return reasons


def outdated_instances(instances, target):
    """The instances to replace, each a copy of the input dict with ``reason`` (text) and ``reasons`` (list).

    Only instances in service or pending are considered, plus instances tagged as detached for surge by an
    earlier run whatever their state; instances terminating or terminated are never outdated (they are
    leaving already). Input order is kept.
    """
    target = normalize_target(target)
    result = []
    for instance in _checked_instances(instances):
        if _instance_is_gone(instance):
            continue
        if not instance_is_active(instance) and not instance_is_detached(instance):
            continue
        reasons = outdated_reasons(instance, target)
        if reasons:
            entry = dict(instance)
            entry["reasons"] = reasons
            entry["reason"] = "; ".join(reasons)
            result.append(entry)
    return result


def up_to_date_instances(instances, target):
    """The instances in service or pending that match the target and need nothing (input order kept)."""
    target = normalize_target(target)
    return [dict(instance) for instance in _checked_instances(instances)
            if instance_is_active(instance) and not outdated_reasons(instance, target)]


# ---------------------------------------------------------------------------------------------------------
# Batches: canary first, then spread across Availability Zones
# ---------------------------------------------------------------------------------------------------------

_LATEST = datetime.max.replace(tzinfo=timezone.utc)


def _az_queues(outdated):
    """Outdated instances grouped by AZ, each queue oldest launch first (then by instance id)."""
    _checked_instances(outdated, "outdated")
    queues = {}
    for index, instance in enumerate(outdated):
        launch_time = instance.get("launch_time")
        stamp = _LATEST if launch_time in (None, "") else parse_time(launch_time, "outdated[%d].launch_time" % index)
        queues.setdefault(instance.get("az") or "", []).append((stamp, instance["instance_id"], instance))
    for queue in queues.values():
        queue.sort(key=lambda item: (item[0], item[1]))
        queue.reverse()  # pop() from the end takes the oldest
    return queues


def _take(queues, size):
    """Take up to ``size`` instances round robin over AZs, the AZs with the most outdated instances first."""
    order = sorted((az for az in queues if queues[az]), key=lambda az: (-len(queues[az]), az))
    batch = []
    while len(batch) < size and order:
        for az in order:
            if len(batch) >= size:
                break
            batch.append(queues[az].pop()[2])
        order = [az for az in order if queues[az]]
    return batch


def batch_limit(up_to_date_count, batch_size):
    """How many instances the next batch may take: 1 (a canary) while nothing is up to date, else batch_size."""
    up_to_date_count = _int_at_least(up_to_date_count, "up_to_date_count", 0)
    batch_size = _int_at_least(batch_size, "batch_size", 1)
    return 1 if up_to_date_count == 0 else batch_size


def next_batch(outdated, up_to_date_count, batch_size):
    """The instances to replace next.

    While no instance is up to date the batch is a canary of one, which limits the damage if the new launch
    template does not produce working nodes. Otherwise the batch takes up to ``batch_size`` instances
    round robin across Availability Zones, starting with the AZs that have the most outdated instances, so a
    batch never takes two instances from one AZ while another AZ with outdated instances is untouched. Within
    an AZ the oldest launch goes first, then the lowest instance id, so the order is deterministic.
    """
    limit = batch_limit(up_to_date_count, batch_size)
    return _take(_az_queues(outdated), limit)


def plan_batches(outdated, up_to_date_count, batch_size):
    """Every batch of the rollout in order (the canary first when nothing is up to date yet).

    Assumes each batch's replacements come up, as the rollout only continues when they do. Every outdated
    instance appears in exactly one batch.
    """
    done = _int_at_least(up_to_date_count, "up_to_date_count", 0)
    _int_at_least(batch_size, "batch_size", 1)
    queues = _az_queues(outdated)
    batches = []
    remaining = len(outdated)
    while remaining:
        batch = _take(queues, batch_limit(done, batch_size))
        batches.append(batch)
        done += len(batch)
        remaining -= len(batch)
    return batches


# ---------------------------------------------------------------------------------------------------------
# Pods: drain classification
# ---------------------------------------------------------------------------------------------------------

def pod_key(pod):
    """``namespace/name`` of a pod (or any namespaced object)."""
    metadata = pod.get("metadata") or {}
    return "%s/%s" % (metadata.get("namespace") or "default", metadata.get("name") or "")


def controller_of(pod):
    """The pod's controller ownerReference (the one with ``controller: true``), or None."""
    for reference in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(reference, dict) and reference.get("controller") is True:
            return reference
    return None


def owner_key(namespace, kind, name):
    """Key of ``replicas_by_owner`` maps: ``namespace/Kind/name`` of a pod's controller."""
    return "%s/%s/%s" % (namespace or "default", kind, name)


def pod_owner_key(pod):
    """``namespace/Kind/name`` of the pod's controller, or None for a pod no controller manages."""
    reference = controller_of(pod)
    if reference is None:
        return None
    return owner_key((pod.get("metadata") or {}).get("namespace"), reference.get("kind"), reference.get("name"))


def pod_is_terminating(pod):
    """Whether the pod is being deleted (``metadata.deletionTimestamp`` is set)."""
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_is_finished(pod):
    """Whether the pod has run to completion (phase Succeeded or Failed)."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_is_ready(pod):
    """Whether the pod's Ready condition is True."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def pod_uses_emptydir(pod):
    """Whether the pod mounts an emptyDir volume (its data is lost when the pod leaves the node)."""
    return any(isinstance(volume, dict) and volume.get("emptyDir") is not None
               for volume in (pod.get("spec") or {}).get("volumes") or [])


def do_not_disrupt_annotation(pod):
    """The annotation asking not to evict the pod, as ``key: "value"`` text, or None."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    for key, value in DO_NOT_DISRUPT_ANNOTATIONS:
        if str(annotations.get(key, "")).strip().lower() == value:
            return '%s: "%s"' % (key, value)
    return None


def tolerates_every_taint(pod, effect="NoSchedule"):
    """Whether the pod tolerates every taint of ``effect`` (a toleration ``operator: Exists`` with no key)."""
    for toleration in (pod.get("spec") or {}).get("tolerations") or []:
        if not isinstance(toleration, dict) or toleration.get("key"):
            continue
        if toleration.get("operator") != "Exists":
            continue
        if not toleration.get("effect") or toleration.get("effect") == effect:
            return True
    return False


def drain_options(options):
    """Validate drain options and return them with defaults filled in.

    ``force`` (evict pods no controller manages and pods annotated do-not-disrupt), ``delete_emptydir_data``
    (evict pods using emptyDir), ``disable_eviction`` (DELETE pods instead of evicting them, which bypasses
    PodDisruptionBudgets), ``taint_effect`` (the effect of the rollout's taint, for ``tolerates_all``).
    ``pod_selector`` is accepted and ignored here: the API applies it when listing pods.
    """
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise PlanError("options: %r is not allowed; use a dict of drain options" % (options,))
    result = {}
    for name in ("force", "delete_emptydir_data", "disable_eviction"):
        value = options.get(name)
        if value is None:
            value = False
        if not isinstance(value, bool):
            raise PlanError("options.%s: %r is not allowed; use true or false" % (name, value))
        result[name] = value
    effect = options.get("taint_effect") or "NoSchedule"
    if effect not in TAINT_EFFECTS:
        raise PlanError("options.taint_effect: %r is not allowed; use one of %s" % (effect, ", ".join(TAINT_EFFECTS)))
    result["taint_effect"] = effect
    result["pod_selector"] = options.get("pod_selector")
    return result


def classify_pod(pod, options=None):
    """Decide what draining does with one pod; see :func:`classify_pods`."""
    if not isinstance(pod, dict):
        raise PlanError("pod: %r is not allowed; use a pod object (dict)" % (pod,))
    opts = drain_options(options)
    metadata = pod.get("metadata") or {}
    entry = {"pod": pod_key(pod), "namespace": metadata.get("namespace") or "default", "name": metadata.get("name"),
             "node": (pod.get("spec") or {}).get("nodeName"), "action": None, "reason": None, "blocks": []}

    def decide(action, reason):
        entry["action"] = action
        entry["reason"] = reason
        return entry

    if pod_is_terminating(pod):
        return decide("skip", "already terminating")
    if ANNOTATION_MIRROR in (metadata.get("annotations") or {}):
        return decide("skip", "mirror pod of a static pod (managed by the kubelet)")
    controller = controller_of(pod)
    if controller is not None and controller.get("kind") == "DaemonSet":
        return decide("skip", "managed by DaemonSet %s" % controller.get("name"))
    if pod_is_finished(pod):
        return decide("delete", "finished (phase %s); removed by DELETE, it holds no disruption budget"
                      % pod["status"]["phase"])
    blocks = []
    if pod_uses_emptydir(pod) and not opts["delete_emptydir_data"]:
        blocks.append({"kind": "emptydir", "reason": "uses emptyDir; set delete_emptydir_data"})
    if controller is None and not opts["force"]:
        blocks.append({"kind": "naked_pod", "reason": "not managed by a controller; set force"})
    annotation = do_not_disrupt_annotation(pod)
    if annotation and not opts["force"]:
        blocks.append({"kind": "do_not_disrupt", "reason": "annotated %s; set force" % annotation})
    if blocks:
        entry["blocks"] = blocks
        return decide("block", ", and ".join(block["reason"] for block in blocks))
    if opts["disable_eviction"]:
        return decide("delete", "disable_eviction is set: deleted without the Eviction API, "
                                "PodDisruptionBudgets are not consulted")
    return decide("evict", "evicted through the Eviction API within its PodDisruptionBudgets")


def classify_pods(pods, node_name, options=None):
    """Decide what draining ``node_name`` does with each of its pods.

    Pods not bound to ``node_name`` (``spec.nodeName``) are left out; pass ``node_name=None`` to classify
    every pod given. Each result is ``{"pod", "namespace", "name", "node", "action", "reason", "blocks"}`` with
    ``action`` one of:

    - ``skip``: pods the drain leaves alone: DaemonSet pods, mirror pods (annotation
      ``kubernetes.io/config.mirror``), and pods already terminating (``metadata.deletionTimestamp`` set),
      reason "already terminating" -- the caller still waits for those to be gone before it calls the node
      drained;
    - ``delete``: finished pods (phase Succeeded or Failed), removed by DELETE since they hold no disruption
      budget; with ``disable_eviction`` every pod that would be evicted is deleted instead;
    - ``evict``: evicted through the Eviction API, which enforces PodDisruptionBudgets;
    - ``block``: the drain cannot move the pod under the current options; ``blocks`` lists each cause as
      ``{"kind", "reason"}``: an emptyDir volume without ``delete_emptydir_data`` ("uses emptyDir; set
      delete_emptydir_data"), no controller without ``force`` ("not managed by a controller; set force"), or a
      do-not-disrupt annotation (``karpenter.sh/do-not-disrupt: "true"``,
      ``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"``, ``nodeops.rollout/do-not-evict: "true"``)
      without ``force``. ``reason`` joins them.
    """
    if not isinstance(pods, (list, tuple)):
        raise PlanError("pods: %r is not allowed; use a list of pod objects" % (pods,))
    opts = drain_options(options)
    results = []
    for index, pod in enumerate(pods):
        if not isinstance(pod, dict):
            raise PlanError("pods[%d]: %r is not allowed; use a pod object (dict)" % (index, pod))
        if node_name is not None and (pod.get("spec") or {}).get("nodeName") != node_name:
            continue
        results.append(classify_pod(pod, opts))
    return results


# ---------------------------------------------------------------------------------------------------------
# PodDisruptionBudgets, as the disruption controller and the eviction handler compute them
# ---------------------------------------------------------------------------------------------------------

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


def _pdb_value(value, field):
    """A PDB's minAvailable/maxUnavailable: an integer >= 0 or a percentage 0%..100% (as API validation)."""
    error = PlanError("%s: %r is not allowed; use an integer >= 0 or a percentage between 0%% and 100%%" % (field, value))
    if _is_int(value):
        if value < 0:
            raise error
        return ("int", value)
    match = _PERCENT_RE.match(value.strip()) if isinstance(value, str) else None
    if not match or int(match.group(1)) > 100:
        raise error
    return ("percent", int(match.group(1)))


def pdb_desired_healthy(pdb, expected_pods):
    """How many healthy pods the budget requires, given ``expected_pods`` (as the disruption controller).

    ``maxUnavailable`` (checked first) gives expected minus the allowance, the percentage rounded up, never
    below 0; ``minAvailable`` gives its integer, or its percentage of expected rounded up. A budget with
    neither requires 0.
    """
    expected = _int_at_least(expected_pods, "expected_pods", 0)
    spec = pdb.get("spec") or {}
    where = "PodDisruptionBudget %s: spec." % pdb_key(pdb)
    if spec.get("maxUnavailable") is not None:
        kind, number = _pdb_value(spec["maxUnavailable"], where + "maxUnavailable")
        allowance = _ceil_percent(number, expected) if kind == "percent" else number
        return max(0, expected - allowance)
    if spec.get("minAvailable") is not None:
        kind, number = _pdb_value(spec["minAvailable"], where + "minAvailable")
        return _ceil_percent(number, expected) if kind == "percent" else number
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
    return spec.get("maxUnavailable") is None and _is_int(spec.get("minAvailable"))


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
        expected = _int_at_least(expected_pods, "expected_pods", 0)
    desired = pdb_desired_healthy(pdb, expected)
    disrupted = set(((pdb.get("status") or {}).get("disruptedPods") or {}).keys())
    healthy = sum(1 for pod in matching if pod_is_healthy_for_pdb(pod, disrupted))
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    return {"pdb": pdb_key(pdb), "matching_pods": [pod_key(pod) for pod in matching], "expected_pods": expected,
            "desired_healthy": desired, "current_healthy": healthy, "disruptions_allowed": allowed}


def pdb_disruptions_allowed(pdb, pods, expected_pods=None):
    """How many of the budget's pods may be evicted now (``status.disruptionsAllowed``); see :func:`pdb_status`."""
    return pdb_status(pdb, pods, expected_pods)["disruptions_allowed"]


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


def _eviction_skips_pdbs(pod):
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
                total += _int_at_least(replicas_by_owner[key], "replicas_by_owner[%s]" % key, 0)
        else:
            total += 1
    return total


# ---------------------------------------------------------------------------------------------------------
# Pre-flight: every blocker of a batch, before anything is tainted or drained
# ---------------------------------------------------------------------------------------------------------

def _blocker(pod, kind, reason, severity, pdb=None, **extra):
    entry = {"pod": pod, "kind": kind, "reason": reason, "pdb": pdb, "severity": severity}
    entry.update(extra)
    return entry


def _pdb_zero_reason(status, bypassed):
    text = ("PodDisruptionBudget %s allows 0 disruptions: it needs %d healthy pods and has %d"
            % (status["pdb"], status["desired_healthy"], status["current_healthy"]))
    if 0 < status["expected_pods"] <= status["desired_healthy"]:
        text += ("; with %d expected pods it can never allow one (relax minAvailable/maxUnavailable or add replicas)"
                 % status["expected_pods"])
    if bypassed:
        text += "; disable_eviction deletes the pod anyway and breaks the budget"
    return text


def _pdb_insufficient_reason(status, needed, bypassed):
    text = ("PodDisruptionBudget %s allows %d disruption(s) but %d of its pods are on the nodes drained together"
            % (status["pdb"], status["disruptions_allowed"], needed))
    if bypassed:
        return text + "; disable_eviction deletes them all anyway and breaks the budget"
    return text + "; the drain waits for replacements to become Ready between evictions"


def _live_owner_counts(pods):
    counts = {}
    for pod in pods:
        if pod_is_terminating(pod) or pod_is_finished(pod):
            continue
        key = pod_owner_key(pod)
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
    return counts


def eviction_preflight(node_pods_by_node, all_pods, pdbs, options=None, replicas_by_owner=None):
    """Everything that would stop or hurt draining a batch of nodes together, found before touching them.

    ``node_pods_by_node`` maps each node of the batch to its pods; ``all_pods`` holds the pods of the
    cluster (or at least of the namespaces involved), used for the budgets' healthy counts and replica counts;
    ``pdbs`` the PodDisruptionBudgets; ``options`` the drain options (see :func:`drain_options`);
    ``replicas_by_owner`` optionally maps ``namespace/Kind/name`` of pod controllers (see :func:`owner_key`) to
    the workload's desired replicas, which makes ``single_replica`` and the budgets' expected pods exact
    (without it, live pods are counted).

    Returns, per node, ``{"would_evict": [pod], "would_delete": [pod], "skipped": [{"pod", "reason"}],
    "blockers": [{"pod", "kind", "reason", "pdb", "severity"}], "predicted": "ok" | "blocked" | "downtime"}``.

    Blocker kinds (severity ``error`` stops the drain, ``warning`` lets it finish at a cost):

    - ``pdb_zero`` (error): a budget selecting the pod allows 0 disruptions now;
    - ``pdb_insufficient`` (warning): the budget allows fewer disruptions than the batch has of its pods, so
      evictions wait for replacements to become Ready;
    - ``multiple_pdbs`` (error): more than one budget selects the pod; the Eviction API answers 500;
    - ``naked_pod``, ``emptydir``, ``do_not_disrupt`` (error): the pod is blocked under the current options;
    - ``single_replica`` (warning): the pod's workload has one replica, so it is down until the replacement
      is Ready (it carries ``owner``);
    - ``tolerates_all`` (warning): the pod tolerates every taint and may be scheduled back onto a tainted node.

    With ``disable_eviction`` budgets are not enforced: ``pdb_zero`` and ``pdb_insufficient`` become warnings
    and ``multiple_pdbs`` does not apply. ``predicted`` is "blocked" when a node has an error, "downtime"
    when it has a ``single_replica`` warning, else "ok".
    """
    if not isinstance(node_pods_by_node, dict):
        raise PlanError("node_pods_by_node: %r is not allowed; use a dict of node name -> list of pods" % (node_pods_by_node,))
    opts = drain_options(options)
    if replicas_by_owner is not None and not isinstance(replicas_by_owner, dict):
        raise PlanError("replicas_by_owner: %r is not allowed; use a dict of namespace/Kind/name -> replicas" % (replicas_by_owner,))
    bypassed = opts["disable_eviction"]
    pool = list(all_pods or [])
    known = set(pod_key(pod) for pod in pool)
    for node_name, pods in node_pods_by_node.items():
        if not isinstance(pods, (list, tuple)):
            raise PlanError("node_pods_by_node[%s]: %r is not allowed; use a list of pods" % (node_name, pods))
        for pod in pods:
            if pod_key(pod) not in known:
                known.add(pod_key(pod))
                pool.append(pod)

    pdbs = list(pdbs or [])
    statuses = {}
    for pdb in pdbs:
        expected = None
        if replicas_by_owner:
            expected = expected_pods_from_owners([pod for pod in pool if pdb_selects(pdb, pod)], replicas_by_owner)
        statuses[pdb_key(pdb)] = pdb_status(pdb, pool, expected)
    live_counts = _live_owner_counts(pool)

    report = {}
    needs = {}  # pdb key -> [(node, pod key)]
    for node_name, pods in node_pods_by_node.items():
        node_report = {"would_evict": [], "would_delete": [], "skipped": [], "blockers": [], "predicted": "ok"}
        report[node_name] = node_report
        for pod in pods:
            decision = classify_pod(pod, opts)
            key = decision["pod"]
            action = decision["action"]
            if action == "skip":
                node_report["skipped"].append({"pod": key, "reason": decision["reason"]})
                continue
            if action == "delete" and pod_is_finished(pod):
                node_report["would_delete"].append(key)
                continue
            if action == "evict":
                node_report["would_evict"].append(key)
            elif action == "delete":
                node_report["would_delete"].append(key)
            for block in decision["blocks"]:
                node_report["blockers"].append(_blocker(key, block["kind"], block["reason"], "error"))

            matching = [pdb for pdb in pdbs if pdb_selects(pdb, pod)]
            if len(matching) > 1 and not bypassed and not _eviction_skips_pdbs(pod):
                names = ", ".join(pdb_key(pdb) for pdb in matching)
                node_report["blockers"].append(_blocker(
                    key, "multiple_pdbs", "selected by %d PodDisruptionBudgets (%s); the Eviction API refuses such "
                    "pods with HTTP 500" % (len(matching), names), "error", names))
            elif len(matching) == 1 or (matching and bypassed):
                for pdb in matching:
                    if eviction_needs_budget(pod, statuses[pdb_key(pdb)], pdb):
                        needs.setdefault(pdb_key(pdb), []).append((node_name, key))

            owner = controller_of(pod)
            if owner is not None and owner.get("kind") in REPLICATED_OWNER_KINDS:
                okey = pod_owner_key(pod)
                if replicas_by_owner and okey in replicas_by_owner:
                    replicas = replicas_by_owner[okey]
                else:
                    replicas = live_counts.get(okey, 1)
                replicas = _int_at_least(replicas, "replicas_by_owner[%s]" % okey, 0)
                if replicas <= 1:
                    node_report["blockers"].append(_blocker(
                        key, "single_replica", "%s %s/%s has %d replica; the workload has no Ready pod until the "
                        "replacement is Ready" % (owner.get("kind"), decision["namespace"], owner.get("name"), replicas),
                        "warning", owner="%s/%s" % (owner.get("kind"), owner.get("name"))))
            if tolerates_every_taint(pod, opts["taint_effect"]):
                node_report["blockers"].append(_blocker(
                    key, "tolerates_all", "tolerates every taint (operator Exists without a key); its replacement may "
                    "be scheduled back onto a tainted node", "warning"))

    for key_of_pdb, entries in needs.items():
        status = statuses[key_of_pdb]
        allowed = status["disruptions_allowed"]
        if allowed == 0:
            kind, severity, reason = "pdb_zero", "warning" if bypassed else "error", _pdb_zero_reason(status, bypassed)
        elif allowed < len(entries):
            kind, severity, reason = "pdb_insufficient", "warning", _pdb_insufficient_reason(status, len(entries), bypassed)
        else:
            continue
        for node_name, key in entries:
            report[node_name]["blockers"].append(_blocker(key, kind, reason, severity, key_of_pdb))

    for node_report in report.values():
        severities = [blocker["severity"] for blocker in node_report["blockers"]]
        if "error" in severities:
            node_report["predicted"] = "blocked"
        elif any(blocker["kind"] == "single_replica" for blocker in node_report["blockers"]):
            node_report["predicted"] = "downtime"
    return report


# ---------------------------------------------------------------------------------------------------------
# Time: retries, durations, ETA
# ---------------------------------------------------------------------------------------------------------

def backoff_delay(attempt, base=1.0, cap=30.0, jitter=None):
    """Seconds to wait before retry number ``attempt`` (0 for the first try, which does not wait).

    Capped exponential backoff with full jitter: the ceiling is ``base * 2**(attempt-1)``, at most ``cap``, and
    the delay is drawn uniformly between half of ``base`` (half of ``cap`` if smaller) and that ceiling, so
    a retry never fires at once (no hot loop) and concurrent retries spread out. ``jitter`` is a callable
    returning a number in [0, 1) (``random.random`` by default), injectable for tests.
    """
    attempt = _int_at_least(attempt, "attempt", 0)
    if not _is_number(base) or base <= 0:
        raise PlanError("base: %r is not allowed; use a number of seconds > 0" % (base,))
    if not _is_number(cap) or cap <= 0:
        raise PlanError("cap: %r is not allowed; use a number of seconds > 0" % (cap,))
    if attempt == 0:
        return 0.0
    ceiling = min(float(cap), float(base) * float(1 << min(attempt - 1, 62)))
    floor = min(float(base), float(cap)) / 2.0
    draw = (jitter or random.random)()
    if not _is_number(draw) or not 0 <= draw <= 1:
        raise PlanError("jitter: returned %r, which is not allowed; it must return a number between 0 and 1" % (draw,))
    return floor + (ceiling - floor) * draw


_DURATION_RE = re.compile(r"^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$")


def parse_duration(value, field, minimum=0):
    """Read a duration as whole seconds: an integer (``90``) or a string ``"90"``, ``"90s"``, ``"15m"``, ``"1h30m"``.

    Units h, m and s may be combined in that order. Negative numbers, fractions, booleans and other units
    are refused with a message naming ``field``, as is a duration shorter than ``minimum`` seconds (1 for a
    timeout or an interval, where 0 makes no sense). This is the one parser of durations: the modules and the
    role (through the ``nodeops.rollout.duration_seconds`` filter) use it.
    """
    allowed = "use a number of seconds (90) or a duration such as '90s', '15m' or '1h30m'"
    if minimum:
        allowed += ", of at least %d second%s" % (minimum, "" if minimum == 1 else "s")
    error = PlanError("%s: %r is not allowed; %s" % (field, value, allowed))
    if _is_int(value):
        seconds = value
    elif isinstance(value, str):
        text = value.strip().lower()
        match = _DURATION_RE.match(text)
        if _INT_RE.match(text):
            seconds = int(text)
        elif not text or not match:
            raise error
        else:
            hours, minutes, secs = (int(group) if group else 0 for group in match.groups())
            seconds = hours * 3600 + minutes * 60 + secs
    else:
        raise error
    if seconds < max(minimum, 0):
        raise error
    return seconds


def estimate_duration(batches, boot_seconds, drain_seconds, post_drain_delay, validate_seconds, surge=0):
    """Predicted seconds for a rollout of ``batches`` (lists of instances, or their sizes).

    The model follows the rollout: when ``surge`` > 0, new instances boot once up front; each batch then
    drains (its nodes in parallel), waits the post-drain delay, and terminates. Instances covered by the surge
    still owed are not replaced (the surge is paid back); a batch needing replacements waits for them to boot.
    Every batch ends with a validation. Durations accept what :func:`parse_duration` accepts.
    """
    boot = parse_duration(boot_seconds, "boot_seconds")
    drain = parse_duration(drain_seconds, "drain_seconds")
    delay = parse_duration(post_drain_delay, "post_drain_delay")
    validate = parse_duration(validate_seconds, "validate_seconds")
    owed = _int_at_least(surge, "surge", 0)
    if not isinstance(batches, (list, tuple)):
        raise PlanError("batches: %r is not allowed; use a list of batches" % (batches,))
    total = boot if owed and batches else 0
    for index, batch in enumerate(batches):
        size = batch if _is_int(batch) else (len(batch) if isinstance(batch, (list, tuple)) else None)
        if size is None or size < 0:
            raise PlanError("batches[%d]: %r is not allowed; use a list of instances or a count" % (index, batch))
        if size == 0:
            continue
        total += drain + delay
        paid = min(owed, size)
        owed -= paid
        if size > paid:
            total += boot
        total += validate
    return total


# ---------------------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------------------

def _plan_entry(instance):
    return {"instance_id": instance["instance_id"], "az": instance.get("az"), "node": _node_name(instance),
            "launch_time": instance.get("launch_time"), "lifecycle_state": instance.get("lifecycle_state")}


def rollout_plan(instances, target, max_unavailable=None, max_surge=None, az_count=None, group_size=None,
                 boot_seconds=180, drain_seconds=90, post_drain_delay=60, validate_seconds=30, taint_effect="NoSchedule"):
    """The whole rollout of one group as data: what ``node_group_info`` returns as ``plan``.

    ``group_size`` defaults to the instances in service or pending; ``az_count`` to the number of their AZs.
    ``max_unavailable`` and ``max_surge`` are the user's settings (see :func:`max_unavailable_count` and
    :func:`surge_count`). The surge actually used never exceeds the number of outdated instances still in the
    group: launching more new instances than will be replaced only costs money and time.

    Returns ``{"group_size", "az_count", "azs", "target", "max_unavailable", "batch_size", "surge",
    "surge_requested", "outdated": [{"instance_id", "az", "node", "launch_time", "lifecycle_state", "reason",
    "reasons"}], "outdated_count", "up_to_date": [instance ids], "up_to_date_count", "canary",
    "batches": [{"index", "canary", "instance_ids", "azs", "nodes"}], "batch_count", "eta_seconds",
    "timings", "taint_effect"}`` (``taint_effect``: :func:`outdated_taint_effect` of the requested one).
    """
    target = normalize_target(target)
    _checked_instances(instances)
    active = [instance for instance in instances if instance_is_active(instance)]
    azs = sorted(set(instance.get("az") for instance in active if instance.get("az")))
    if group_size is None:
        group_size = len(active)
    group_size = _int_at_least(group_size, "group_size", 0)
    if az_count is None:
        az_count = len(azs)
    az_count = _int_at_least(az_count, "az_count", 0)
    timings = {"boot_seconds": parse_duration(boot_seconds, "boot_seconds"),
               "drain_seconds": parse_duration(drain_seconds, "drain_seconds"),
               "post_drain_delay": parse_duration(post_drain_delay, "post_drain_delay"),
               "validate_seconds": parse_duration(validate_seconds, "validate_seconds")}

    unavailable = max_unavailable_count(max_unavailable, group_size)
    surge_requested = surge_count(max_surge, az_count, unavailable, group_size)
    outdated = outdated_instances(instances, target)
    up_to_date = up_to_date_instances(instances, target)
    in_group_outdated = sum(1 for instance in outdated if instance_is_active(instance))
    surge = min(surge_requested, in_group_outdated)
    # Surged instances come up (and are validated) before the first old node is drained, so they are the canary:
    # a canary batch of one is only needed when nothing is up to date and nothing is surged.
    batches = plan_batches(outdated, len(up_to_date) + surge, unavailable)
    canary = bool(batches) and not up_to_date and not surge

    entries = []
    for instance in outdated:
        entry = _plan_entry(instance)
        entry["reason"] = instance["reason"]
        entry["reasons"] = list(instance["reasons"])
        entries.append(entry)
    planned = []
    for index, batch in enumerate(batches):
        planned.append({"index": index + 1, "canary": canary and index == 0,
                        "instance_ids": [instance["instance_id"] for instance in batch],
                        "azs": [instance.get("az") for instance in batch],
                        "nodes": [_node_name(instance) for instance in batch]})
    return {
        "group_size": group_size,
        "az_count": az_count,
        "azs": azs,
        "target": target,
        "max_unavailable": unavailable,
        "batch_size": unavailable,
        "surge": surge,
        "surge_requested": surge_requested,
        "outdated": entries,
        "outdated_count": len(entries),
        "up_to_date": [instance["instance_id"] for instance in up_to_date],
        "up_to_date_count": len(up_to_date),
        "canary": canary,
        "batches": planned,
        "batch_count": len(planned),
        "eta_seconds": estimate_duration(batches, timings["boot_seconds"], timings["drain_seconds"],
                                         timings["post_drain_delay"], timings["validate_seconds"], surge),
        "timings": timings,
        "taint_effect": outdated_taint_effect(taint_effect, surge, len(entries)),
    }
