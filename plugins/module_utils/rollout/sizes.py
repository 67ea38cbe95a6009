# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The sizes of a rollout, in one place: how many nodes at once (``max_unavailable_count``, the batch size), how many
extra nodes (``surge_count``, ``resolve_surge``), what a surge sets on the group, what paying it back decrements, and
what a restore puts back. Pure: plain numbers and dicts in, plain dicts out, :class:`PlanError` (naming the option) on
bad input.

Sizes are dicts ``{"min_size", "max_size", "desired_capacity"}``.
"""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import BOOLEANS_FALSE, BOOLEANS_TRUE

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import TAINT_EFFECTS
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.batches import next_batch
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import (
    PlanError,
    ceil_percent,
    floor_percent,
    int_at_least,
    is_int,
    parse_int_or_percent,
)


# The EKS managed node group quota on maxUnavailable (UpdateNodegroupConfig accepts 1..100 nodes).
EKS_MAX_UNAVAILABLE_QUOTA = 100
# The effects a rollout may put on its outdated nodes (NoExecute would evict without a budget).
OUTDATED_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule")


def max_unavailable_count(value, group_size, field="max_unavailable"):
    """How many nodes may be out of service at once (the batch size).

    ``None`` means the EKS default of one node. An integer is taken as is; a percentage is of ``group_size``,
    rounded down. The result is at least 1 and at most the EKS quota of 100. An integer larger than the group
    is allowed and simply means the whole group at once.
    """
    group_size = int_at_least(group_size, "group_size", 0)
    if value is None:
        return 1
    kind, number = parse_int_or_percent(value, field)
    count = floor_percent(number, group_size) if kind == "percent" else number
    return max(1, min(EKS_MAX_UNAVAILABLE_QUOTA, count))


def base_size(state, desired_capacity):
    """The size a group's counts are resolved against (max_unavailable's percentage, the capacity floor): its desired
    capacity before the rollout, as the rollout's state recorded it (``original_desired_capacity``), else the group's
    desired capacity now (no rollout recorded yet)."""
    return state["original_desired_capacity"] if state else desired_capacity


def surge_count(value, az_count, max_unavailable, group_size, field="max_surge"):
    """How many extra instances to launch before draining.

    ``None`` means the EKS default: the larger of twice the number of Availability Zones and
    ``max_unavailable`` (the resolved count). An integer is taken as is, 0 meaning no surge; a percentage is
    of ``group_size``, rounded up.
    """
    az_count = int_at_least(az_count, "az_count", 0)
    group_size = int_at_least(group_size, "group_size", 0)
    if value is None:
        return max(2 * az_count, max_unavailable)
    kind, number = parse_int_or_percent(value, field, allow_zero=True)
    if kind == "percent":
        return ceil_percent(number, group_size)
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


DECREMENT_OWED = "owed"
_OPTION_TRUE_WORDS = frozenset(word.lower() for word in BOOLEANS_TRUE if isinstance(word, str) and not word.isdigit())
_OPTION_FALSE_WORDS = frozenset(word.lower() for word in BOOLEANS_FALSE if isinstance(word, str) and not word.isdigit())


def _whole(value, field, minimum=0):
    if not is_int(value) or value < minimum:
        raise PlanError("%s: %r is not allowed; use a whole number >= %d" % (field, value, minimum))
    return value


# Auto Scaling lifecycle states of an instance that is leaving or has left its group.
LEAVING_PREFIXES = ("Terminat", "Detach")


def sizes_of(group):
    """The sizes of a group as DescribeAutoScalingGroups returns it, and ``members``, the ids of its instances that are not
    leaving it (what :func:`surge_owed_now` needs to know whether a decrement it was about to make happened)."""
    return {"min_size": group["MinSize"], "max_size": group["MaxSize"], "desired_capacity": group["DesiredCapacity"],
            "members": sorted(instance["InstanceId"] for instance in group.get("Instances") or []
                              if not (instance.get("LifecycleState") or "").startswith(LEAVING_PREFIXES))}


def check_surge_syntax(value, field="surge"):
    """Refuse a surge that is neither a whole number >= 0 nor a percentage 0%-100% (before anything is read)."""
    if value is None:
        return None
    return parse_int_or_percent(value, field, allow_zero=True)


def resolve_surge(value, group_size, az_count, max_unavailable=1):
    """The surge as a number of instances.

    ``None`` is the EKS default, the larger of twice the number of Availability Zones and maxUnavailable
    (``max_unavailable``, the group's resolved count, one node by default); a percentage is of ``group_size``, rounded
    up; a whole number is taken as is (0: no extra instances).
    """
    return surge_count(value, az_count, max_unavailable, group_size, field="surge")


def surged_sizes(current, surge, max_size_limit=None):
    """The sizes that raise a group by ``surge`` instances, as EKS does: max and desired both grow by the surge.

    ``max_size_limit`` is the largest maximum size the operator allows for the group (an account quota, a
    budget): the new maximum is capped at it, and a surge whose desired capacity does not fit under it is
    refused with the surge that would fit. Returns the new sizes plus ``surged_max_size`` (the new maximum).
    """
    surge = _whole(surge, "surge")
    low = _whole(current["min_size"], "min_size")
    high = _whole(current["max_size"], "max_size")
    desired = _whole(current["desired_capacity"], "desired_capacity")
    if not low <= desired <= high:
        raise PlanError("desired_capacity: %d is outside the group's min size %d and max size %d; fix the group first"
                        % (desired, low, high))
    needed = desired + surge
    new_max = high + surge
    if max_size_limit is not None:
        limit = _whole(max_size_limit, "max_size_limit")
        if needed > limit:
            raise PlanError(
                "surge: %d more instances on a desired capacity of %d need a maximum size of %d, above max_size_limit %d; "
                "use a surge of at most %d, or raise max_size_limit to %d"
                % (surge, desired, needed, limit, max(0, limit - desired), needed))
        new_max = max(high, min(new_max, limit))
    return {"min_size": low, "max_size": new_max, "desired_capacity": needed, "surged_max_size": new_max}


def surge_applied(state, current):
    """Whether the sizes of a recorded surge are in place (a rerun must not surge again, but must finish a surge
    recorded just before an interruption).

    The recorded ``surged_max_size`` is the marker when the surge raised the maximum; when the maximum did not
    move (the surge fit in the group's headroom under ``max_size_limit``) desired must be up by the surge owed.
    """
    if state.get("method") == "detach" or not state.get("surge"):
        return True
    surged_max = state.get("surged_max_size")
    if surged_max is None:
        # Recorded by a run that did not write the marker: trust the sizes only if max grew at all.
        return current["max_size"] > state["original_max_size"]
    if surged_max > state["original_max_size"]:
        return current["max_size"] >= surged_max
    return current["desired_capacity"] >= state["original_desired_capacity"] + state["surge_owed"]


def resume_sizes(state, current):
    """The sizes that complete a recorded surge that was interrupted before the group was resized."""
    desired = min(current["desired_capacity"] + state["surge_owed"], state["surged_max_size"])
    return {"min_size": current["min_size"], "max_size": max(current["max_size"], state["surged_max_size"]),
            "desired_capacity": max(desired, current["min_size"])}


def surge_owed_now(state, current):
    """The surge a recorded rollout still owes, from what the group holds now.

    The recorded counter, one less when the instance recorded as ``paying`` (written just before a termination that
    decrements desired) is no longer a member of the group (``current["members"]``): the decrement happened, and a run
    killed before it could lower the counter is not paid back twice. Never more than desired stands above the group's
    minimum size, which no decrement may cross.

    Only the rollout's own decrements pay its surge back. Another actor's (a cluster-autoscaler scaling in an instance
    with a decrement, an instance put in Standby with one) is that actor's decision and is not fought: the surge is still
    owed, so the group ends that much below its original desired capacity, as the actor wanted. Neither is an
    autoscaler's scale-out ours to take back.
    """
    if state is None or state.get("method", "scale") != "scale":
        return 0
    owed = state["surge_owed"]
    paying = state.get("paying")
    if paying and "members" in current and paying not in current["members"]:
        owed -= 1
    return max(0, min(owed, current["desired_capacity"] - current["min_size"]))


def restore_sizes(state, current):
    """The sizes that end a rollout. A restore never scales in: desired stays where it is.

    The surge is paid back before (by draining and terminating named instances with a decrement, through the
    termination gate), so desired is then the original desired, or what a cluster-autoscaler made of it during
    the rollout, which is left alone as EKS does. The maximum goes back to the original maximum, or stays as
    high as desired needs; the minimum is never changed.

    Returns ``{"min_size", "max_size", "desired_capacity", "owed", "autoscaler_moved", "autoscaler_delta"}``;
    ``owed`` above 0 means the surge has not been paid back yet and the restore must not happen.
    """
    desired = current["desired_capacity"]
    owed = surge_owed_now(state, current)
    delta = desired - owed - state["original_desired_capacity"]
    return {"min_size": current["min_size"], "max_size": max(state["original_max_size"], desired), "desired_capacity": desired,
            "owed": owed, "autoscaler_moved": delta != 0, "autoscaler_delta": delta}


def payback_choice(instances, up_to_date_ids, owed):
    """The up-to-date instances to drain and terminate (decrementing desired) to pay back ``owed`` instances of surge.

    Only members in service whose node is known qualify (the gate needs a node to see drained). One at a time from
    the Availability Zone that holds the most of them, so the group stays spread; the newest launch first in each,
    as it has had the least time to gather pods. Returns ``[{"instance_id", "az", "node"}]`` (node names).
    """
    owed = _whole(owed, "owed")
    wanted = set(up_to_date_ids)
    queues = {}
    for instance in instances:
        node = instance.get("node")
        if instance["instance_id"] not in wanted or instance.get("lifecycle_state") != "InService" or not isinstance(node, dict):
            continue
        queues.setdefault(instance.get("az") or "", []).append(instance)
    for queue in queues.values():
        queue.sort(key=lambda instance: (instance.get("launch_time") or "", instance["instance_id"]))
    chosen = []
    while len(chosen) < owed and any(queues.values()):
        az = max(sorted(queues), key=lambda zone: len(queues[zone]))
        instance = queues[az].pop()
        chosen.append({"instance_id": instance["instance_id"], "az": instance.get("az"), "node": instance["node"]["name"]})
    return chosen


def decrement_count(value, listed, field="decrement_desired_capacity"):
    """How many of the ``listed`` instances decrement desired when terminated.

    ``true`` means all of them, ``false`` none, a whole number N the first N of them. Text forms of both are
    accepted as Ansible passes them. ``owed`` (returned as :data:`DECREMENT_OWED`) means as many as the surge the
    recorded rollout still owes when they are terminated (:func:`surge_owed_now`, decided from the group as it is
    then): what the role passes, so a run killed between a termination and its tag write never pays back twice.
    """
    listed = _whole(listed, "instance_ids")
    error = PlanError("%s: %r is not allowed; use true, false, owed or a whole number between 0 and %d (the number of "
                      "instance_ids)" % (field, value, listed))
    if isinstance(value, bool):
        return listed if value else 0
    if value is None:
        return 0
    if isinstance(value, str):
        text = value.strip().lower()
        # Digits are a count ("1" is one instance, not "true"); words are booleans.
        if text.isdigit():
            value = int(text)
        elif text == DECREMENT_OWED:
            return DECREMENT_OWED
        elif text in _OPTION_TRUE_WORDS:
            return listed
        elif text in _OPTION_FALSE_WORDS:
            return 0
        else:
            raise error
    if not is_int(value) or value < 0 or value > listed:
        raise error
    return value


def check_decrement(current, count, state=None, group_name="the group"):
    """Refuse a decrement that AWS would refuse (desired below min) or that would take back more than the surge
    still owed by the recorded rollout (the group would end below its original size)."""
    if count <= 0:
        return
    if current["desired_capacity"] - count < current["min_size"]:
        raise PlanError(
            "decrement_desired_capacity: decrementing %d would take the desired capacity of Auto Scaling group '%s' from %d "
            "below its min size %d; decrement at most %d" % (count, group_name, current["desired_capacity"], current["min_size"],
                                                             max(0, current["desired_capacity"] - current["min_size"])))
    owed = surge_owed_now(state, current)
    if state is not None and state.get("method", "scale") == "scale" and count > owed:
        raise PlanError(
            "decrement_desired_capacity: decrementing %d is more than the surge still owed (%d) by rollout %s on Auto Scaling "
            "group '%s'; the group would end below the size the rollout found it at (and another actor left it): decrement "
            "at most %d, or pass 'owed'"
            % (count, owed, state["rollout_id"], group_name, owed))


def detach_candidates(outdated, count):
    """The outdated instances to detach for a surge of ``count``: spread across Availability Zones, oldest
    first in each (plan.next_batch with a full batch). Never more than there are outdated instances."""
    count = _whole(count, "surge")
    if not count or not outdated:
        return []
    return next_batch(outdated, 1, count)


def group_settled(instances, desired):
    """Whether a group has exactly ``desired`` instances in service and none launching.

    Instances in Standby are not part of the desired capacity, and instances leaving (a termination lifecycle hook can
    hold one in ``Terminating:Wait`` for hours) no longer are: neither is waited for."""
    states = [instance.get("LifecycleState") or "" for instance in instances]
    in_service = sum(1 for state in states if state == "InService")
    launching = sum(1 for state in states if state.startswith("Pending"))
    return in_service == desired and not launching
