# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What is outdated: which instances of a group must be replaced for a target launch template version, and why.

Pure. An *instance* is::

    {"instance_id": "i-0abc", "az": "eu-west-1a", "lifecycle_state": "InService", "health_status": "Healthy",
     "launch_template": {"id": "lt-0123", "name": "workers", "version": "4"} or None,
     "image_id": "ami-0123", "launch_time": "2024-05-01T12:00:00Z", "tags": {"key": "value"},
     "node": None or {"name": "ip-10-0-1-2.ec2.internal", "ready": True, "schedulable": True,
                      "taints": [...], "labels": {...}, "annotations": {...}}}

(``clients.aws.instance_record`` builds it). A *target* is ``{"launch_template_id": "lt-0123", "version": 5}`` where the
version is the explicit, resolved version number (never ``$Latest``/``$Default``); it may also carry ``"image_id"``, and
with a ``max_node_age`` (seconds) the ``launched_before`` time it settles (:func:`aged_target`): an instance launched
before it is outdated on the target's own version (the reason ``age``).
"""

from __future__ import annotations

from datetime import timedelta, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.core.tags import TAG_INSTANCE_DETACHED
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import INT_RE, PlanError, is_int, parse_time, truthy


# Node annotation that asks for a node to be replaced even when its launch template is current.
ANNOTATION_NEEDS_UPDATE = "nodeops.rollout/needs-update"


# EC2 tag holding the launch template version an instance was really launched with.
TAG_EC2_LAUNCH_TEMPLATE_VERSION = "aws:ec2launchtemplate:version"


# Auto Scaling lifecycle states in which an instance belongs to the group's capacity.
_ACTIVE_STATES = ("InService", "Pending", "Pending:Wait", "Pending:Proceed")
# Auto Scaling lifecycle states of an instance put in Standby: still a member of the group, but not part of its desired
# capacity and out of its load balancers (someone is looking at it).
STANDBY_STATES = ("EnteringStandby", "Standby")

# Lifecycle states of the instances of a warm pool begin with this: prepared beside the group, no capacity, no node.
WARM_PREFIX = "Warmed:"

# What a rollout does with outdated instances in Standby, as Instance Refresh's StandbyInstances preference:
# ``ignore`` leaves them as they are (and reports them), ``terminate`` drains and terminates them without replacement
# (they are not part of the desired capacity), ``wait`` waits for them to return to service and replaces them then.
STANDBY_POLICIES = ("ignore", "terminate", "wait")
DEFAULT_STANDBY_POLICY = "ignore"

# The reason an instance launched more than max_node_age ago is outdated on the target's own version: how each such
# reason begins (the plan lists these nodes apart).
AGE_REASON = "age"
# The shortest max_node_age allowed: a node younger than a rollout takes would be replaced again by the next run.
MIN_NODE_AGE = 3600


def _explicit_version(value):
    """The version as a canonical digit string, or None when it is symbolic ($Latest/$Default) or missing."""
    if is_int(value) and value >= 1:
        return str(value)
    if isinstance(value, str) and INT_RE.match(value.strip()) and int(value.strip()) >= 1:
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
    checked = {"launch_template_id": template_id.strip(), "version": version, "image_id": image_id or None}
    if target.get("launched_before") is not None:
        checked["launched_before"] = _time_text(parse_time(target["launched_before"], "target.launched_before"))
        checked["max_node_age"] = target.get("max_node_age")
    return checked


def _time_text(stamp):
    return stamp.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def aged_target(target, max_node_age, now):
    """``target`` with, for a ``max_node_age`` in seconds (None: no rotation by age), the time before which an instance
    is outdated whatever it runs: ``launched_before`` (``now``, an aware datetime, less the age) and ``max_node_age``.
    Settled once by the module that resolves the target, so that every later read of the run compares with one time
    and the instances the run launches are never aged by it."""
    if max_node_age is None:
        return dict(target)
    return dict(target, launched_before=_time_text(now - timedelta(seconds=int(max_node_age))), max_node_age=int(max_node_age))


def age_reason(instance, target):
    """The reason ``age`` (text) when the instance was launched before the target's ``launched_before``, else None."""
    cutoff, launched = target.get("launched_before"), instance.get("launch_time")
    if cutoff is None or not launched or parse_time(launched, "launch_time") >= parse_time(cutoff, "launched_before"):
        return None
    return "%s: launched %s, before %s (max_node_age %ss)" % (AGE_REASON, launched, cutoff, target.get("max_node_age", "?"))


def checked_instances(instances, field="instances"):
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


def instance_is_warm(instance):
    """Whether the instance waits in the group's warm pool (lifecycle ``Warmed:*``)."""
    return (instance.get("lifecycle_state") or "").startswith(WARM_PREFIX)


def instance_in_standby(instance):
    """Whether the instance is in Standby (or entering it)."""
    return (instance.get("lifecycle_state") or "") in STANDBY_STATES


def check_standby_policy(policy, field="standby_instances"):
    """The policy for outdated instances in Standby; one of :data:`STANDBY_POLICIES` (None: the default)."""
    if policy is None:
        return DEFAULT_STANDBY_POLICY
    if policy not in STANDBY_POLICIES:
        raise PlanError("%s: %r is not allowed; use one of %s" % (field, policy, ", ".join(STANDBY_POLICIES)))
    return policy


def instance_is_detached(instance):
    """Whether an earlier run detached the instance for surge (tag ``nodeops.rollout/detached``)."""
    return truthy((instance.get("tags") or {}).get(TAG_INSTANCE_DETACHED))


def _instance_is_gone(instance):
    return (instance.get("lifecycle_state") or "").startswith("Terminat")


def node_name_of(instance):
    node = instance.get("node")
    return node.get("name") if isinstance(node, dict) else None


def launched_version(instance):
    """The explicit launch template version the instance was launched from (a digit string), or None: what the group
    reports for it, or when that is symbolic, the EC2 tag ``aws:ec2launchtemplate:version``."""
    version = _explicit_version((instance.get("launch_template") or {}).get("version"))
    if version is None:
        version = _explicit_version((instance.get("tags") or {}).get(TAG_EC2_LAUNCH_TEMPLATE_VERSION))
    return version


def previous_version(instances, target):
    """The version of the target's launch template that most of the group's other active instances were launched from
    (an int; the highest on a tie), or None: what the group launched before it was pointed at ``target``."""
    target = normalize_target(target)
    counts = {}
    for instance in instances:
        if not (instance_is_active(instance) or instance_is_detached(instance)) \
                or (instance.get("launch_template") or {}).get("id") != target["launch_template_id"]:
            continue
        version = launched_version(instance)
        if version is not None and version != target["version"]:
            counts[int(version)] = counts.get(int(version), 0) + 1
    if not counts:
        return None
    return max(counts, key=lambda version: (counts[version], version))


def outdated_reasons(instance, target):
    """Every reason the instance must be replaced (an empty list when it is up to date).

    An instance is outdated when it was launched from another launch template or another version than the
    target, when its node carries the annotation ``nodeops.rollout/needs-update`` with a true value, or when
    an earlier run detached it for surge (tag ``nodeops.rollout/detached``), or when it was launched before the target's
    ``launched_before`` (rotation by age, :func:`aged_target`). When the group reported a
    symbolic version (``$Latest``/``$Default``) for the instance, the EC2 tag ``aws:ec2launchtemplate:version``
    gives the real one; failing that, the instance is up to date only if its AMI equals the target's
    ``image_id`` (when given).
    """
    target = normalize_target(target)
    reasons = []
    if instance_is_detached(instance):
        reasons.append("detached from the group for surge by an earlier run (tag %s)" % TAG_INSTANCE_DETACHED)
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
        version = launched_version(instance)
        if version is None:
            same_image = target["image_id"] is not None and instance.get("image_id") == target["image_id"]
            if not same_image:
                reasons.append("launched from launch template %s version %r, which cannot be compared with "
                               "target version %s" % (template_id, raw_version, target["version"]))
        elif version != target["version"]:
            reasons.append("launched from launch template %s version %s; target version is %s"
                           % (template_id, version, target["version"]))
    node = instance.get("node")
    if isinstance(node, dict) and truthy((node.get("annotations") or {}).get(ANNOTATION_NEEDS_UPDATE)):
        reasons.append("node %s is annotated %s" % (node.get("name"), ANNOTATION_NEEDS_UPDATE))
    aged = age_reason(instance, target)
    if aged:
        reasons.append(aged)
    return reasons


def outdated_instances(instances, target, standby=DEFAULT_STANDBY_POLICY):
    """The instances to replace, each a copy of the input dict with ``reason`` (text) and ``reasons`` (list).

    Only instances in service or pending are considered, plus instances tagged as detached for surge by an
    earlier run whatever their state, and with ``standby`` ``terminate`` or ``wait`` the outdated instances in
    Standby; instances terminating or terminated are never outdated (they are leaving already). Input order is kept.
    """
    target = normalize_target(target)
    standby = check_standby_policy(standby)
    result = []
    for instance in checked_instances(instances):
        if _instance_is_gone(instance):
            continue
        if instance_in_standby(instance):
            if standby == "ignore":
                continue
        elif not instance_is_active(instance) and not instance_is_detached(instance):
            continue
        reasons = outdated_reasons(instance, target)
        if reasons:
            entry = dict(instance)
            entry["reasons"] = reasons
            entry["reason"] = "; ".join(reasons)
            result.append(entry)
    return result


def _compared(instances, target):
    target = normalize_target(target)
    return [{"instance_id": instance["instance_id"], "az": instance.get("az"), "node": node_name_of(instance),
             "lifecycle_state": instance.get("lifecycle_state"), "outdated": bool(reasons), "reasons": reasons}
            for instance, reasons in ((instance, outdated_reasons(instance, target)) for instance in checked_instances(instances))]


def standby_instances(instances, target):
    """Every instance in Standby: ``[{"instance_id", "az", "node", "lifecycle_state", "outdated", "reasons"}]`` (input
    order kept)."""
    return _compared([instance for instance in instances if instance_in_standby(instance)], target)


def warm_instances(instances, target):
    """The instances of a warm pool (``Warmed:*`` lifecycle states), compared with the target as :func:`standby_instances`
    does: a warm instance built from another version would serve the group as an outdated one."""
    return _compared([instance for instance in instances if instance_is_warm(instance)], target)


def up_to_date_instances(instances, target):
    """The instances in service or pending that match the target and need nothing (input order kept)."""
    target = normalize_target(target)
    return [dict(instance) for instance in checked_instances(instances)
            if instance_is_active(instance) and not outdated_reasons(instance, target)]
