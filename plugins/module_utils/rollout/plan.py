# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The plan of one group's rollout as data (what ``node_group_info`` returns as ``plan``): it composes
``rollout.sizes`` (batch size, surge), ``rollout.outdated`` (what to replace) and ``rollout.batches`` (in which order),
and estimates how long it takes. Pure.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.batches import plan_batches
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import (
    checked_instances,
    instance_is_active,
    node_name_of,
    normalize_target,
    outdated_instances,
    up_to_date_instances,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.sizes import max_unavailable_count, outdated_taint_effect, surge_count
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.steps import checkpoint_counts, decrement_for, wave_sizes
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.targets import instance_target_groups, plan_target_groups
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.values import PlanError, ceil_percent, int_at_least, is_int, parse_duration


def estimate_duration(waves, boot_seconds, drain_seconds, post_drain_delay, validate_seconds, surge=0, surge_ready=False,
                      deregistration_delay=0, holds=()):
    """Predicted seconds for a rollout of ``waves`` (lists of instances, or their sizes; :func:`steps.wave_sizes`).

    The model follows the pipeline of ``rollout.steps``: when ``surge`` > 0, new instances boot once up front and are
    validated (unless ``surge_ready``: the surge is up already, as for the rest of a rollout under way); each wave then
    drains (its nodes in parallel) and waits the post-drain delay, or what is left of its target groups'
    ``deregistration_delay`` (which starts with the drain) when that is longer; its terminations that do not pay the
    surge back are replaced, and the next wave waits for the replacements to boot and validates them. ``holds``: seconds
    of bake or checkpoint after each wave (:func:`wave_holds`). Durations accept what :func:`parse_duration` accepts.
    """
    boot = parse_duration(boot_seconds, "boot_seconds")
    drain = parse_duration(drain_seconds, "drain_seconds")
    delay = max(parse_duration(post_drain_delay, "post_drain_delay"),
                parse_duration(deregistration_delay, "deregistration_delay") - drain)
    validate = parse_duration(validate_seconds, "validate_seconds")
    owed = int_at_least(surge, "surge", 0)
    if not isinstance(waves, (list, tuple)):
        raise PlanError("waves: %r is not allowed; use a list of waves" % (waves,))
    sizes = []
    for index, wave in enumerate(waves):
        size = wave if is_int(wave) else (len(wave) if isinstance(wave, (list, tuple)) else None)
        if size is None or size < 0:
            raise PlanError("waves[%d]: %r is not allowed; use a list of instances or a count" % (index, wave))
        if size:
            sizes.append(size)
    left = sum(sizes)
    total = boot + validate if owed and sizes and not surge_ready else 0
    for index, size in enumerate(sizes):
        total += (validate if index else 0) + drain + delay
        paid = decrement_for(size, left, owed)
        owed -= paid
        left -= size
        if size > paid:
            total += boot
    return total + sum(holds or ())


def wave_holds(sizes, taken, bake_seconds=0, counts=None):
    """Seconds the rollout holds after each wave of ``sizes``: the bake time, or a checkpoint's wait when the wave
    reaches one (``counts``: ``steps.checkpoint_counts``; ``taken``: of the original size before the first wave)."""
    holds = []
    for size in sizes:
        taken += size
        holds.append(max(bake_seconds, (counts or {}).get(taken, 0)))
    return holds


def plan_step_seconds(boot_seconds, drain_seconds, post_drain_delay, validate_seconds):
    """The predicted duration of one step, from the start of a drain to its replacements validated: what a maintenance
    window must still hold for the rollout to start the next one."""
    parts = ((boot_seconds, "boot_seconds"), (drain_seconds, "drain_seconds"), (post_drain_delay, "post_drain_delay"),
             (validate_seconds, "validate_seconds"))
    return sum(parse_duration(value, field) for value, field in parts)


def _plan_entry(instance):
    return {"instance_id": instance["instance_id"], "az": instance.get("az"), "node": node_name_of(instance),
            "launch_time": instance.get("launch_time"), "lifecycle_state": instance.get("lifecycle_state")}


def rollout_plan(instances, target, max_unavailable=None, max_surge=None, az_count=None, group_size=None,
                 boot_seconds=180, drain_seconds=90, post_drain_delay=60, validate_seconds=30, taint_effect="NoSchedule",
                 target_groups=(), bake_seconds=0, checkpoints=()):
    """The whole rollout of one group as data: what ``node_group_info`` returns as ``plan``.

    ``group_size`` defaults to the instances in service or pending; ``az_count`` to the number of their AZs.
    ``max_unavailable`` and ``max_surge`` are the user's settings (see :func:`max_unavailable_count` and
    :func:`surge_count`); ``target_groups``: the group's target groups (``rollout.targets.target_group_record``). The
    surge actually used never exceeds the number of outdated instances still in the group: launching more new instances
    than will be replaced only costs money and time.

    Returns ``{"group_size", "az_count", "azs", "target", "max_unavailable", "batch_size", "surge",
    "surge_requested", "outdated": [{"instance_id", "az", "node", "launch_time", "lifecycle_state", "reason",
    "reasons"}], "outdated_count", "up_to_date": [instance ids], "up_to_date_count", "canary",
    "batches": [{"index", "canary", "instance_ids", "azs", "nodes"}], "batch_count", "eta_seconds",
    "timings", "taint_effect", "target_groups", "bake_seconds", "checkpoints"}`` (``taint_effect``:
    :func:`outdated_taint_effect` of the requested one; ``target_groups``: :func:`rollout.targets.plan_target_groups`;
    each batch also says the ``hold_seconds`` after it, its bake time or checkpoint wait).
    """
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
               "validate_seconds": parse_duration(validate_seconds, "validate_seconds")}

    unavailable = max_unavailable_count(max_unavailable, group_size)
    surge_requested = surge_count(max_surge, az_count, unavailable, group_size)
    outdated = outdated_instances(instances, target)
    up_to_date = up_to_date_instances(instances, target)
    in_group_outdated = sum(1 for instance in outdated if instance_is_active(instance))
    surge = min(surge_requested, in_group_outdated)
    # Surged instances come up (and are validated) before the first old node is drained, so they are the canary:
    # a canary of one is only needed when nothing is up to date and nothing is surged.
    counts = checkpoint_counts(checkpoints, group_size)
    taken = max(0, group_size - in_group_outdated)
    sizes = wave_sizes(in_group_outdated, unavailable, surge, len(up_to_date), counts=counts, taken=taken)
    holds = wave_holds(sizes, taken, int_at_least(bake_seconds, "bake_seconds", 0), counts)
    batches = plan_batches(outdated, sizes)
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
                                         deregistration_delay=max([tg["deregistration_delay"]
                                                                   for tg in instance_target_groups(target_groups)] or [0]),
                                         holds=holds),
        "timings": timings,
        "bake_seconds": bake_seconds,
        "checkpoints": [dict(checkpoint, count=max(1, ceil_percent(checkpoint["percent"], group_size)))
                        for checkpoint in checkpoints or ()],
        "taint_effect": outdated_taint_effect(taint_effect, surge, len(entries)),
        "target_groups": plan_target_groups(target_groups),
    }
