# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Where a group's upgrade is, in words a person reads at a glance: nodes replaced of the total, the step's number,
the time elapsed and the time left. Pure.

The time left is the plan's model (``rollout.plan.estimate_duration`` over ``rollout.goals.planned_waves`` of what is
left) corrected by the pace measured so far: once a node is replaced, the model's time for what is left is scaled by
the upgrade's measured seconds over the model's seconds for what is done. The time since the latest termination counts
down what followed it only: the nodes not drained yet always have their waves' time left, at that pace.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, int_at_least, parse_time
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan import estimate_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import human_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.goals import REPLACE, goal_for, planned_waves

DEFAULT_TIMINGS = {"boot_seconds": 180, "drain_seconds": 90, "post_drain_delay": 60, "validate_seconds": 30}


def _count(value, field, minimum=0):
    """An integer, also given as text (role facts and survey answers can be strings)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return int_at_least(value, field, minimum)


def _waves(outdated, max_unavailable, surge, surge_ready, batch=None, canary=False):
    if batch:
        # the serial playbook's batches: a canary of one first (its play's serial is [1, batch]), then at most ``batch``
        # nodes at a time, whatever the surge lends
        first = [1] if canary and outdated else []
        rest = outdated - len(first)
        return first + [batch] * (rest // batch) + ([rest % batch] if rest % batch else [])
    return planned_waves(goal_for(REPLACE, {"canary": True}), outdated, max_unavailable, surge, up_to_date_count=1 if surge_ready else 0)


def _model(outdated, max_unavailable, surge, timings, surge_ready, batch=None, canary=False):
    waves = _waves(outdated, max_unavailable, surge, surge_ready, batch, canary)
    return estimate_duration(waves, timings["boot_seconds"], timings["drain_seconds"], timings["post_drain_delay"],
                             timings["validate_seconds"], surge, surge_ready=surge_ready)


def _seconds_between(start, end, field):
    return max(0.0, (parse_time(end, "now") - parse_time(start, field)).total_seconds())


def _last_termination(steps, step, now, since):
    """``(when, replaced)`` of the latest termination: now for a step that terminates, else the latest ``decided_at`` of
    the recorded ``steps`` that terminated (not before ``since``, the upgrade's start), else now; ``replaced``: its
    terminations were not all paid back, so their replacements boot (the model's wave ends with that boot)."""
    if step.get("terminate") or not steps:
        return now, len(step.get("terminate") or []) > int(step.get("decrement") or 0)
    found = [(parse_time(entry["decided_at"], "steps[].decided_at"), entry) for entry in steps
             if isinstance(entry, dict) and entry.get("terminated") and entry.get("decided_at")]
    found = [(moment, entry) for moment, entry in found if since is None or moment >= parse_time(since, "upgrade_started_at")]
    if not found:
        return now, False
    moment, entry = max(found, key=lambda pair: pair[0])
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), len(entry["terminated"]) > int(entry.get("decrement") or 0)


def _upgrade_start(upgrade_started_at, steps):
    """When the group's upgrade began: its first recorded step's start when ``steps`` (the group's steps so far, as
    ``step_record`` keeps them) has one earlier than ``upgrade_started_at`` - the serial playbook starts the upgrade's
    clock again at each batch, its steps carry on - else ``upgrade_started_at``."""
    if steps in (None, ""):
        return upgrade_started_at
    if not isinstance(steps, (list, tuple)):
        raise PlanError("steps: %r is not allowed; use the group's recorded steps (a list)" % (steps,))
    begun = [entry.get("started_at") or entry.get("decided_at") for entry in steps if isinstance(entry, dict)]
    begun = [(parse_time(value, "steps[].started_at"), value) for value in begun if value]
    if not begun:
        return upgrade_started_at
    first = min(begun)
    if upgrade_started_at and parse_time(upgrade_started_at, "upgrade_started_at") <= first[0]:
        return upgrade_started_at
    return first[1]


def rollout_progress(step, number, replaced, total, started_at, now, upgrade_started_at=None, surge=0, timings=None,
                     name=None, batch=None, steps=None):
    """The progress of one group's upgrade after step ``number`` was decided (``step``: ``rollout_step``'s ``step``).

    ``replaced``: instances terminated so far, this step's included; ``total``: outdated instances when the upgrade
    began; ``started_at``, ``upgrade_started_at`` and ``now``: ISO 8601 times (the group's rollout began, its upgrade
    phase began, now); ``surge``: the surge the upgrade began with; ``timings``: the plan's (``plan.timings``);
    ``batch``: the nodes replaced at a time when a play's ``serial`` sets it (nodeops.rollout.upgrade_serial);
    ``steps``: the group's steps recorded so far (``rolling_update__steps``), whose first start is the upgrade's start
    across the serial playbook's batches.

    A step ``done`` while outdated instances are left outside its ``limit`` (``step.outside``: the serial playbook's
    other batches) ends the batch, not the group: the line says ``batch done`` and the group's time left.

    Returns ``{"step", "replaced", "total", "draining", "elapsed_seconds", "left_seconds", "model_left_seconds",
    "pace", "batch_done", "line"}`` (``pace``: measured over modelled seconds, None before a node is replaced).
    """
    step = step or {}
    number = _count(number, "number", 1)
    replaced = _count(replaced, "replaced")
    total = max(_count(total, "total"), replaced)
    surge = _count(surge or 0, "surge")
    batch = _count(batch, "batch", 1) if batch not in (None, "") else None
    merged = dict(DEFAULT_TIMINGS)
    merged.update({key: value for key, value in (timings or {}).items() if key in DEFAULT_TIMINGS and value is not None})
    if not isinstance(step, dict):
        raise PlanError("step: %r is not allowed; use the step rollout_step returned" % (step,))
    group = step.get("group") or {}
    # the group's resolved count, as rollout_step worked it out
    max_unavailable = group.get("max_unavailable") or 1
    owed = _count(group.get("surge_owed") or 0, "surge_owed")
    draining = len(step.get("drain") or [])
    # drained already (terminated now, or in their post-drain delay) are not waves any more
    undrained = max(0, int(step.get("outdated_left") or 0) - len(step.get("terminate") or []) - len(step.get("delayed") or []))
    # the serial playbook's canary is still to come while no node of the group is drained
    model_left = _model(undrained, max_unavailable, owed, merged, True, batch, canary=undrained >= total)
    undrained_model = model_left
    if not undrained and step.get("delayed"):
        model_left = merged["post_drain_delay"]
    elapsed = _seconds_between(started_at, now, "started_at")
    upgrade_start = _upgrade_start(upgrade_started_at, steps) or started_at
    # the pace is measured up to the latest termination, where the model's waves end; since then the time left counts
    # down as the time passes, instead of the pace swelling with a wave in progress that the model does not count yet
    paced_until, booting = _last_termination(steps, step, now, upgrade_start)
    paced_elapsed = _seconds_between(upgrade_start, paced_until, "upgrade_started_at")
    done = step.get("action") == "done"
    batch_done = done and bool(step.get("outside"))
    pace = None
    left = model_left
    whole = _model(total, max_unavailable, surge, merged, True, batch, canary=True)
    # at a termination the model's wave is done but for its replacements' boot
    done_model = whole - model_left - (merged["boot_seconds"] if booting else 0)
    if replaced and done_model > 0 and paced_elapsed > 0:
        pace = paced_elapsed / done_model
        # the whole group at that pace, less the time the upgrade has taken; but never less than the waves of the nodes
        # not drained yet at that pace (their drains begin with this step or later): the time since the latest
        # termination counts down what followed it (a post-drain delay, a boot, a serial batch's end), not the waves
        # to come, which would otherwise show nodes to go and seconds left
        # - and never less than the post-drain delays still to wait, a wait on the wall clock whatever the pace (one for
        # each wave of the nodes not drained yet, and one for the drained nodes waiting out theirs)
        waits = len(_waves(undrained, max_unavailable, owed, True, batch, canary=undrained >= total)) + (1 if step.get("delayed") else 0)
        left = max(whole * pace - _seconds_between(upgrade_start, now, "upgrade_started_at"), undrained_model * pace,
                   waits * merged["post_drain_delay"], 0.0)
        model_left = whole - done_model
    if done and not batch_done:
        left, model_left = 0.0, 0.0
    # a cancel's steps give instances back (rollout_step's goal)
    line = "%sstep %d: %d of %d nodes %s%s%s, %s elapsed, %s" % (
        ("%s: " % name) if name else "", number, replaced, total, "given back" if step.get("goal") == "cancel" else "replaced",
        ", draining %d" % draining if draining else "", ", batch done" if batch_done else "", human_duration(elapsed),
        "about %s left" % human_duration(left) if not done or batch_done else "done")
    if pace is not None and (batch_done or not done) and model_left:
        line += " (the plan's %s at the pace so far)" % human_duration(model_left)
    elif not done and not replaced:
        # no node replaced yet: the plan's model is all there is (its timings, not this cluster's pace)
        line += " by the plan"
    if step.get("held_by_pods"):
        # rolling_update_blocking_pods held this step back
        line += "; held %s by %s" % (human_duration(step.get("waited_seconds") or 0), ", ".join(step["held_by_pods"]))
    if step.get("held_by_alerts"):
        # rolling_update_pause_alerts held this step back
        line += "; paused %s by alert %s" % (human_duration(step.get("waited_seconds") or 0), ", ".join(step["held_by_alerts"]))
    return {"step": number, "replaced": replaced, "total": total, "draining": draining, "elapsed_seconds": round(elapsed, 1),
            "left_seconds": round(left, 1), "model_left_seconds": round(model_left, 1),
            "pace": None if pace is None else round(pace, 3), "batch_done": batch_done, "line": line}
