# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The sizes of an Auto Scaling group during a rollout: what a surge sets, what paying it back decrements,
and what a restore puts back. Pure: plain numbers and dicts in, plain dicts out, :class:`PlanError` (naming
the option) on bad input.

Sizes are dicts ``{"min_size", "max_size", "desired_capacity"}``.
"""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import BOOLEANS_FALSE, BOOLEANS_TRUE

from ansible_collections.nodeops.rollout.plugins.module_utils.plan import (
    PlanError,
    max_unavailable_count,
    next_batch,
    parse_int_or_percent,
    surge_count,
)


_TRUE_WORDS = frozenset(word.lower() for word in BOOLEANS_TRUE if isinstance(word, str) and not word.isdigit())
_FALSE_WORDS = frozenset(word.lower() for word in BOOLEANS_FALSE if isinstance(word, str) and not word.isdigit())


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _whole(value, field, minimum=0):
    if not _is_int(value) or value < minimum:
        raise PlanError("%s: %r is not allowed; use a whole number >= %d" % (field, value, minimum))
    return value


def sizes_of(group):
    """The sizes of a group as DescribeAutoScalingGroups returns it."""
    return {"min_size": group["MinSize"], "max_size": group["MaxSize"], "desired_capacity": group["DesiredCapacity"]}


def check_surge_syntax(value, field="surge"):
    """Refuse a surge that is neither a whole number >= 0 nor a percentage 0%-100% (before anything is read)."""
    if value is None:
        return None
    return parse_int_or_percent(value, field, allow_zero=True)


def resolve_surge(value, group_size, az_count, max_unavailable=None):
    """The surge as a number of instances.

    ``None`` is the EKS default, the larger of twice the number of Availability Zones and maxUnavailable
    (``max_unavailable`` resolved against ``group_size``, one node by default); a percentage is of
    ``group_size``, rounded up; a whole number is taken as is (0: no extra instances).
    """
    unavailable = max_unavailable_count(max_unavailable, group_size)
    return surge_count(value, az_count, unavailable, group_size, field="surge")


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


def restore_sizes(state, current):
    """The sizes that end a rollout, and whether someone else moved desired meanwhile.

    Without interference desired is the original desired plus the surge still owed: the group goes back to
    its original min, max and desired. When desired differs (a cluster-autoscaler scaled the group during the
    rollout), only the rollout's own outstanding surge is taken back, as EKS does, and the maximum stays high
    enough for the autoscaler's nodes. A restore already under way (``restore_sizes`` recorded) keeps the
    sizes it chose, so an interrupted restore never takes the surge back twice. The rollout never changes the
    minimum size: the group's current minimum is kept, and desired never goes below it.

    Returns ``{"min_size", "max_size", "desired_capacity", "expected_desired_capacity", "autoscaler_moved",
    "autoscaler_delta", "scale_in"}`` where ``scale_in`` is how many instances the group will remove to reach
    the new desired capacity (chosen by its termination policy, so not drained by the rollout).
    """
    low = current["min_size"]
    original_max = state["original_max_size"]
    original_desired = state["original_desired_capacity"]
    owed = state["surge_owed"] if state.get("method", "scale") == "scale" else 0
    expected = original_desired + owed
    current_desired = current["desired_capacity"]
    recorded = state.get("restore_sizes")
    if recorded:
        result = dict(recorded)
        moved = recorded["desired_capacity"] != original_desired
    elif current_desired == expected:
        desired = max(low, original_desired)
        result = {"min_size": low, "max_size": max(original_max, desired), "desired_capacity": desired}
        moved = False
    else:
        desired = max(low, current_desired - owed)
        result = {"min_size": low, "max_size": max(original_max, desired), "desired_capacity": desired}
        moved = True
    result["expected_desired_capacity"] = expected
    result["autoscaler_moved"] = moved
    delta = result["desired_capacity"] - original_desired if recorded else current_desired - expected
    result["autoscaler_delta"] = delta if moved else 0
    result["scale_in"] = max(0, current_desired - result["desired_capacity"])
    return result


def decrement_count(value, listed, field="decrement_desired_capacity"):
    """How many of the ``listed`` instances decrement desired when terminated.

    ``true`` means all of them, ``false`` none, a whole number N the first N of them (the role passes the
    smaller of the batch and the surge still owed). Text forms of both are accepted as Ansible passes them.
    """
    listed = _whole(listed, "instance_ids")
    error = PlanError("%s: %r is not allowed; use true, false or a whole number between 0 and %d (the number of instance_ids)"
                      % (field, value, listed))
    if isinstance(value, bool):
        return listed if value else 0
    if value is None:
        return 0
    if isinstance(value, str):
        text = value.strip().lower()
        # Digits are a count ("1" is one instance, not "true"); words are booleans.
        if text.isdigit():
            value = int(text)
        elif text in _TRUE_WORDS:
            return listed
        elif text in _FALSE_WORDS:
            return 0
        else:
            raise error
    if not _is_int(value) or value < 0 or value > listed:
        raise error
    return value


def choose_decrements(instance_ids, members, count):
    """The first ``count`` of ``instance_ids`` (in the order listed) that are members of the group; only a
    member's termination can decrement desired."""
    chosen = []
    for instance_id in instance_ids:
        if len(chosen) >= count:
            break
        if instance_id in members:
            chosen.append(instance_id)
    return chosen


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
    if state is not None and state.get("method", "scale") == "scale" and count > state["surge_owed"]:
        raise PlanError(
            "decrement_desired_capacity: decrementing %d is more than the surge still owed (%d) by rollout %s on Auto Scaling "
            "group '%s'; the group would end below its original size: decrement at most %d"
            % (count, state["surge_owed"], state["rollout_id"], group_name, state["surge_owed"]))


def owed_after(state, decremented):
    """The surge still owed after ``decremented`` decrementing terminations."""
    return max(0, state["surge_owed"] - decremented)


def detach_candidates(outdated, count):
    """The outdated instances to detach for a surge of ``count``: spread across Availability Zones, oldest
    first in each (plan.next_batch with a full batch). Never more than there are outdated instances."""
    count = _whole(count, "surge")
    if not count or not outdated:
        return []
    return next_batch(outdated, 1, count)


def group_settled(instances, desired):
    """Whether a group has exactly ``desired`` instances in service and none launching or leaving."""
    states = [instance.get("LifecycleState") for instance in instances]
    in_service = sum(1 for state in states if state == "InService")
    return in_service == desired and len(states) == desired
