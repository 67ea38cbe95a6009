# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The plan of one group's rollout as data (what ``node_group_info`` returns as ``plan``): it composes
``rollout.sizes`` (batch size, surge), ``rollout.outdated`` (what to replace) and ``rollout.batches`` (in which order),
estimates how long it takes, and prices the surge: how long and how many extra instance-minutes at the surge
configured, at EKS's default and at 100 %. Pure.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.batches import plan_batches
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import (
    AGE_REASON,
    check_standby_policy,
    checked_instances,
    instance_in_standby,
    instance_is_active,
    node_name_of,
    normalize_target,
    outdated_instances,
    standby_instances,
    up_to_date_instances,
    warm_instances,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, ceil_percent, int_at_least, is_int, parse_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.sizes import max_unavailable_count, outdated_taint_effect, surge_count
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.goals import REPLACE, goal_for, planned_steps
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.steps import capacity_floor, capacity_view, checkpoint_counts, decrement_for
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.targets import instance_target_groups, plan_target_groups


# Tasks of the role that call a module outside the steps once the group is locked (setup, scale up, scale down), and
# in each step (renew the lock, decide, terminate or validate and drain): what Ansible's own time per task is counted for.
FIXED_TASKS = 10
SCALE_DOWN_TASKS = 4
TASKS_PER_STEP = 3


def wave_timeline(waves, boot_seconds, drain_seconds, post_drain_delay, validate_seconds, surge=0, surge_ready=False,
                  deregistration_delay=0, task_seconds=0, holds=()):
    """The rollout of ``waves`` (lists of instances, or their sizes; :func:`goals.planned_waves`) as consecutive spans of
    time, the model :func:`estimate_duration` sums: ``[{"wave", "what", "start", "end", "surge_up"}]`` in seconds from
    the start, ``wave`` the wave's number (None outside the waves) and ``surge_up`` the surge instances up during the
    span (instances above the group's desired size).

    The model follows the pipeline of ``rollout.steps``: when ``surge`` > 0, new instances boot once up front and are
    validated (``surge``; not when ``surge_ready``: the surge is up already, as for the rest of a rollout under way);
    each wave then drains (its nodes in parallel) and waits the post-drain delay, or what is left of its target groups'
    ``deregistration_delay`` (which starts with the drain) when that is longer (``drain``, which also validates the
    previous wave's replacements first); its terminations that do not pay the surge back are replaced, and the next
    wave waits for the replacements to boot (``replace``). A termination that pays the surge back takes its instance
    off ``surge_up`` from the end of its wave's ``drain``. ``holds``: seconds of bake or checkpoint after each wave
    (:func:`wave_holds`; ``hold``). Ansible's own time, ``task_seconds`` per task: ``FIXED_TASKS`` (``setup`` before
    the surge and ``finish``, only the scale down's when ``surge_ready``) and ``TASKS_PER_STEP`` in each step: a wave
    takes a step that drains and one that terminates (in its ``drain``), and one more step ends the upgrade
    (``finish``). Durations accept what :func:`parse_duration` accepts; spans of no time are left out, but every wave
    has its ``drain``.
    """
    boot = parse_duration(boot_seconds, "boot_seconds")
    drain = parse_duration(drain_seconds, "drain_seconds")
    delay = max(parse_duration(post_drain_delay, "post_drain_delay"),
                parse_duration(deregistration_delay, "deregistration_delay") - drain)
    validate = parse_duration(validate_seconds, "validate_seconds")
    task = parse_duration(task_seconds, "task_seconds")
    owed = int_at_least(surge, "surge", 0)
    if not isinstance(waves, (list, tuple)):
        raise PlanError("waves: %r is not allowed; use a list of waves" % (waves,))
    holds = list(holds or ())
    sizes = []
    left_over = sum(holds[len(waves):])
    for index, wave in enumerate(waves):
        size = wave if is_int(wave) else (len(wave) if isinstance(wave, (list, tuple)) else None)
        if size is None or size < 0:
            raise PlanError("waves[%d]: %r is not allowed; use a list of instances or a count" % (index, wave))
        hold = holds[index] if index < len(holds) else 0
        if size:
            sizes.append((size, hold))
        else:
            left_over += hold
    spans = []

    def span(wave, what, seconds, up):
        start = spans[-1]["end"] if spans else 0
        if seconds or what == "drain":
            spans.append({"wave": wave, "what": what, "start": start, "end": start + seconds, "surge_up": up})

    if sizes and not surge_ready:
        span(None, "setup", task * (FIXED_TASKS - SCALE_DOWN_TASKS), 0)
        if owed:
            span(None, "surge", boot + validate, owed)
    left = sum(size for size, hold in sizes)
    for index, (size, hold) in enumerate(sizes):
        span(index + 1, "drain", (validate if index else 0) + drain + delay + task * TASKS_PER_STEP * 2, owed)
        paid = decrement_for(size, left, owed)
        owed -= paid
        left -= size
        if size > paid:
            span(index + 1, "replace", boot, owed)
        span(index + 1, "hold", hold, owed)
    if sizes:
        span(None, "finish", task * (TASKS_PER_STEP + SCALE_DOWN_TASKS), owed)
    span(None, "hold", left_over, owed)
    return spans


def estimate_duration(waves, boot_seconds, drain_seconds, post_drain_delay, validate_seconds, surge=0,
                      surge_ready=False, deregistration_delay=0, task_seconds=0, holds=()):
    """Predicted seconds for a rollout of ``waves``: the end of its :func:`wave_timeline` (the same arguments)."""
    spans = wave_timeline(waves, boot_seconds, drain_seconds, post_drain_delay, validate_seconds, surge=surge,
                          surge_ready=surge_ready, deregistration_delay=deregistration_delay, task_seconds=task_seconds,
                          holds=holds)
    return spans[-1]["end"] if spans else 0


def extra_instance_minutes(timeline):
    """The instances above the group's desired size integrated over a :func:`wave_timeline`, in instance-minutes: what
    the surge costs beyond the group's own instances."""
    return sum((span["end"] - span["start"]) * span["surge_up"] for span in timeline) / 60.0


# The surges an operator weighs, in the order a choice that comes to the same count names them.
SURGE_CHOICES = ("configured", "terminate first", "EKS default", "100%")


def surge_choices(configured, eks_default, outdated_count):
    """The surges to price: the ``configured`` one, none (the strategy ``terminate_first``), EKS's default
    (``eks_default``: :func:`sizes.surge_count` of None) and 100 % (a new instance for every outdated one in the
    group, all at once), each capped as the plan caps the surge at the ``outdated_count`` in the group. Choices that
    come to the same count are one entry naming them all: ``[{"surge", "choices": ["configured", "EKS default",
    ...]}]``, the smallest surge first; none when nothing is outdated in the group."""
    outdated_count = int_at_least(outdated_count, "outdated_count", 0)
    if not outdated_count:
        return []
    counts = {}
    for choice, count in zip(SURGE_CHOICES, (configured, 0, eks_default, outdated_count)):
        counts.setdefault(min(int_at_least(count, "surge", 0), outdated_count), []).append(choice)
    return [{"surge": count, "choices": counts[count]} for count in sorted(counts)]


def surge_costs(choices, waves, timings, deregistration_delay=0):
    """Each of :func:`surge_choices` priced: its ``eta_seconds`` (:func:`estimate_duration`), ``wave_count``,
    ``extra_instance_minutes`` (:func:`extra_instance_minutes`, to a tenth) and ``fewest_ready``, the fewest Ready
    schedulable nodes the group keeps at it. ``waves`` gives for each choice's surge ``(waves, holds, fewest_ready)``,
    the waves the rollout drains at that surge, the hold after each and the fewest Ready
    (:func:`rollout.goals.planned_steps`); ``timings``: the plan's."""
    priced = []
    for choice in choices:
        drained, holds, fewest = waves[choice["surge"]]
        timeline = wave_timeline(drained, timings["boot_seconds"], timings["drain_seconds"],
                                 timings["post_drain_delay"], timings["validate_seconds"], surge=choice["surge"],
                                 deregistration_delay=deregistration_delay, task_seconds=timings["task_seconds"],
                                 holds=holds)
        priced.append(dict(choice, eta_seconds=timeline[-1]["end"] if timeline else 0,
                           wave_count=sum(1 for wave in drained if (wave if is_int(wave) else len(wave))),
                           extra_instance_minutes=round(extra_instance_minutes(timeline), 1), fewest_ready=fewest))
    return priced


def wave_holds(sizes, taken, bake_seconds=0, counts=None):
    """Seconds the rollout holds after each wave of ``sizes``: the bake time, or a checkpoint's wait when the wave
    reaches one (``counts``: ``steps.checkpoint_counts``; ``taken``: of the original size before the first wave)."""
    holds = []
    for size in sizes:
        taken += size
        holds.append(max(bake_seconds, (counts or {}).get(taken, 0)))
    return holds


def plan_step_seconds(boot_seconds, drain_seconds, post_drain_delay, validate_seconds, task_seconds=0):
    """The predicted duration of one step, from the start of a drain to its replacements validated: what a maintenance
    window must still hold for the rollout to start the next one. A wave takes two of the role's steps, each
    ``TASKS_PER_STEP`` tasks of ``task_seconds``."""
    parts = ((boot_seconds, "boot_seconds"), (drain_seconds, "drain_seconds"), (post_drain_delay, "post_drain_delay"),
             (validate_seconds, "validate_seconds"))
    return (sum(parse_duration(value, field) for value, field in parts)
            + 2 * TASKS_PER_STEP * parse_duration(task_seconds, "task_seconds"))


def _plan_entry(instance):
    return {"instance_id": instance["instance_id"], "az": instance.get("az"), "node": node_name_of(instance),
            "launch_time": instance.get("launch_time"), "lifecycle_state": instance.get("lifecycle_state")}


def rollout_plan(instances, target, max_unavailable=None, max_surge=None, az_count=None, group_size=None,
                 boot_seconds=180, drain_seconds=90, post_drain_delay=60, validate_seconds=30, taint_effect="NoSchedule",
                 target_groups=(), task_seconds=1, standby="ignore", termination_hooks=(), warm_pool=None, bake_seconds=0,
                 checkpoints=()):
    """The whole rollout of one group as data: what ``node_group_info`` returns as ``plan``.

    ``group_size`` defaults to the instances in service or pending; ``az_count`` to the number of their AZs.
    ``max_unavailable`` and ``max_surge`` are the user's settings (see :func:`max_unavailable_count` and
    :func:`surge_count`); ``target_groups``: the group's target groups (``clients.aws.target_group_record``). The
    surge actually used never exceeds the number of outdated instances still in the group: launching more new instances
    than will be replaced only costs money and time. ``standby`` is what the rollout does with outdated instances in
    Standby (``rollout.outdated.STANDBY_POLICIES``): with ``terminate`` or ``wait`` they are outdated too, but in no wave
    (they are no capacity; ``wait`` replaces them once back in service). ``termination_hooks``
    (``clients.aws.termination_hooks``) are passed through: each may hold a terminated instance in ``Terminating:Wait``
    up to its heartbeat timeout, which the rollout waits for at its end. ``warm_pool`` is the group's warm pool
    (``clients.aws.warm_pool``): its instances built from another version than the target are ``outdated`` in
    ``warm_pool``, and the rollout terminates them before the surge so that no new instance comes from them.

    Returns ``{"group_size", "az_count", "azs", "target", "max_unavailable", "batch_size", "surge",
    "surge_requested", "outdated": [{"instance_id", "az", "node", "launch_time", "lifecycle_state", "reason",
    "reasons"}], "outdated_count", "up_to_date": [instance ids], "up_to_date_count", "canary",
    "batches": [{"index", "canary", "instance_ids", "azs", "nodes"}], "batch_count", "eta_seconds",
    "surge_choices": [{"surge", "choices", "eta_seconds", "wave_count", "extra_instance_minutes", "fewest_ready"}],
    "timings",
    "taint_effect", "target_groups", "standby": {"policy", "instances": [{"instance_id", "az", "node", "outdated",
    "reasons"}]}, "protected": [outdated instance ids protected from scale in], "termination_hooks", "warm_pool": None
    or {"min_size", "max_group_prepared_capacity", "pool_state", "instances", "outdated": [instance ids]},
    "bake_seconds", "checkpoints", "capacity": {"taking_pods", "not_counted", "tolerated_taints", "floor"}, "aged": None or
    {"launched_before", "max_node_age", "instances"}}`` (``aged``: the outdated instances older than the target's
    ``max_node_age``, :func:`_aged`; ``capacity``:
    :func:`rollout.steps.capacity_view`; ``taint_effect``: :func:`outdated_taint_effect` of the requested one;
    ``target_groups``: :func:`rollout.targets.plan_target_groups`; each batch also says the ``hold_seconds`` after it,
    its bake time or checkpoint wait). ``surge_choices`` prices the surge the plan uses, none (terminate first), EKS's
    default and 100 %, each by the waves the rollout would drain at it and the fewest Ready nodes it keeps
    (:func:`surge_costs`).
    """
    standby = check_standby_policy(standby)
    target = normalize_target(target)
    checked_instances(instances)
    active = [instance for instance in instances if instance_is_active(instance)]
    azs = sorted(set(instance.get("az") for instance in active if instance.get("az")))
    if group_size is None:
        group_size = len(active)
    group_size = int_at_least(group_size, "group_size", 0)
    if az_count is None:
        az_count = len(azs)
    az_count = int_at_least(az_count, "az_count", 0)
    timings = {"boot_seconds": parse_duration(boot_seconds, "boot_seconds"),
               "drain_seconds": parse_duration(drain_seconds, "drain_seconds"),
               "post_drain_delay": parse_duration(post_drain_delay, "post_drain_delay"),
               "validate_seconds": parse_duration(validate_seconds, "validate_seconds"),
               "task_seconds": parse_duration(task_seconds, "task_seconds")}

    unavailable = max_unavailable_count(max_unavailable, group_size)
    surge_requested = surge_count(max_surge, az_count, unavailable, group_size)
    outdated = outdated_instances(instances, target, standby=standby)
    up_to_date = up_to_date_instances(instances, target)
    in_group_outdated = sum(1 for instance in outdated if instance_is_active(instance))
    surge = min(surge_requested, in_group_outdated)
    # Surged instances come up (and are validated) before the first old node is drained, so they are the canary:
    # a canary of one is only needed when nothing is up to date and nothing is surged.
    counts = checkpoint_counts(checkpoints, group_size)
    taken = max(0, group_size - in_group_outdated)
    bake = int_at_least(bake_seconds, "bake_seconds", 0)
    drained = [instance for instance in outdated if not instance_in_standby(instance)]

    # the waves are the steps the upgrade's own method takes on the plan's model of the group
    upgrade = goal_for(REPLACE, {"canary": True, "checkpoints": checkpoints or ()})

    def waves_at(count):
        planned = planned_steps(upgrade, in_group_outdated, unavailable, count, len(up_to_date), original_size=group_size)
        sizes = planned["waves"]
        return plan_batches(drained, sizes), wave_holds(sizes, taken, bake, counts), planned["fewest_ready"]

    at_surge = waves_at(surge)
    batches, holds, _fewest = at_surge
    canary = bool(batches) and not up_to_date and not surge
    deregistration_delay = max([tg["deregistration_delay"] for tg in instance_target_groups(target_groups)] or [0])
    choices = surge_choices(surge, surge_count(None, az_count, unavailable, group_size), in_group_outdated)
    waves = dict((choice["surge"], at_surge if choice["surge"] == surge else waves_at(choice["surge"])) for choice in choices)

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
                        "nodes": [node_name_of(instance) for instance in batch],
                        "hold_seconds": holds[index] if index < len(holds) else 0})
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
                                         timings["post_drain_delay"], timings["validate_seconds"], surge=surge,
                                         deregistration_delay=deregistration_delay,
                                         task_seconds=timings["task_seconds"], holds=holds),
        "surge_choices": surge_costs(choices, waves, timings, deregistration_delay),
        "timings": timings,
        "bake_seconds": bake_seconds,
        "checkpoints": [dict(checkpoint, count=max(1, ceil_percent(checkpoint["percent"], group_size)))
                        for checkpoint in checkpoints or ()],
        # once new instances exist (the read after the surge), they are what takes the pods of a hard taint: a surge the
        # group could not place in full (no capacity in an AZ) leaves the taint soft
        "taint_effect": outdated_taint_effect(taint_effect, len(up_to_date) if up_to_date else surge, len(entries)),
        "target_groups": plan_target_groups(target_groups),
        "standby": {"policy": standby, "instances": standby_instances(instances, target)},
        "protected": [instance["instance_id"] for instance in outdated if instance.get("protected_from_scale_in")],
        "termination_hooks": [dict(hook) for hook in termination_hooks or ()],
        "warm_pool": _warm_pool(warm_pool, target),
        # the nodes that can take pods now, and those that cannot (not Ready, cordoned, a taint the pods do not tolerate),
        # and how many of the first the floor keeps
        "capacity": dict(capacity_view(instances), floor=capacity_floor(group_size, unavailable)),
        "aged": _aged(entries, target),
    }


def _aged(entries, target):
    """The outdated instances launched before the target's ``launched_before`` (rotation by age), apart: ``None``
    without a ``max_node_age``, else ``{"launched_before", "max_node_age", "instances": [{"instance_id", "node",
    "launch_time", "only_age"}]}`` (``only_age``: up to date but for its age)."""
    if target.get("launched_before") is None:
        return None
    aged = []
    for entry in entries:
        ages = [reason for reason in entry["reasons"] if reason.startswith(AGE_REASON + ":")]
        if ages:
            aged.append({"instance_id": entry["instance_id"], "node": entry.get("node"), "launch_time": entry.get("launch_time"),
                         "only_age": len(ages) == len(entry["reasons"])})
    return {"launched_before": target["launched_before"], "max_node_age": target.get("max_node_age"), "instances": aged}


def _warm_pool(pool, target):
    if pool is None:
        return None
    instances = warm_instances(pool.get("instances") or [], target)
    return {"min_size": pool.get("min_size"), "max_group_prepared_capacity": pool.get("max_group_prepared_capacity"),
            "pool_state": pool.get("pool_state"), "instances": instances,
            "outdated": [entry["instance_id"] for entry in instances if entry["outdated"]]}
