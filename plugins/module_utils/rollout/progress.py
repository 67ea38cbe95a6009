# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Where a group's upgrade is, in words a person reads at a glance: nodes replaced of the total, the step's number,
the time elapsed and the time left. Pure.

The time left is the plan's model (``rollout.plan.estimate_duration`` over ``rollout.steps.wave_sizes`` of what is
left) corrected by the pace measured so far: once a node is replaced, the model's time for what is left is scaled by
the upgrade's measured seconds over the model's seconds for what is done.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan import estimate_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import human_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.steps import wave_sizes
from ansible_collections.nodeops.rollout.plugins.module_utils.values import PlanError, int_at_least, parse_time

DEFAULT_TIMINGS = {"boot_seconds": 180, "drain_seconds": 90, "post_drain_delay": 60, "validate_seconds": 30}


def _count(value, field, minimum=0):
    """An integer, also given as text (role facts and survey answers can be strings)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return int_at_least(value, field, minimum)


def _model(outdated, max_unavailable, surge, timings, surge_ready, batch=None):
    if batch:
        # the serial playbook's batches: at most ``batch`` nodes at a time, whatever the surge lends
        waves = [batch] * (outdated // batch) + ([outdated % batch] if outdated % batch else [])
    else:
        waves = wave_sizes(outdated, max_unavailable, surge, up_to_date_count=1 if surge_ready else 0)
    return estimate_duration(waves, timings["boot_seconds"], timings["drain_seconds"], timings["post_drain_delay"],
                             timings["validate_seconds"], surge, surge_ready=surge_ready)


def _seconds_between(start, end, field):
    return max(0.0, (parse_time(end, "now") - parse_time(start, field)).total_seconds())


def rollout_progress(step, number, replaced, total, started_at, now, upgrade_started_at=None, surge=0, timings=None,
                     name=None, batch=None):
    """The progress of one group's upgrade after step ``number`` was decided (``step``: ``rollout_step``'s ``step``).

    ``replaced``: instances terminated so far, this step's included; ``total``: outdated instances when the upgrade
    began; ``started_at``, ``upgrade_started_at`` and ``now``: ISO 8601 times (the group's rollout began, its upgrade
    phase began, now); ``surge``: the surge the upgrade began with; ``timings``: the plan's (``plan.timings``);
    ``batch``: the nodes replaced at a time when a play's ``serial`` sets it (nodeops.rollout.upgrade_serial).

    Returns ``{"step", "replaced", "total", "draining", "elapsed_seconds", "left_seconds", "model_left_seconds",
    "pace", "line"}`` (``pace``: measured over modelled seconds, None before a node is replaced).
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
    max_unavailable = _count(group.get("max_unavailable") or 1, "max_unavailable", 1)
    owed = _count(group.get("surge_owed") or 0, "surge_owed")
    draining = len(step.get("drain") or [])
    # drained already (terminated now, or in their post-drain delay) are not waves any more
    undrained = max(0, int(step.get("outdated_left") or 0) - len(step.get("terminate") or []) - len(step.get("delayed") or []))
    model_left = _model(undrained, max_unavailable, owed, merged, True, batch)
    if not undrained and step.get("delayed"):
        model_left = merged["post_drain_delay"]
    elapsed = _seconds_between(started_at, now, "started_at")
    upgrade_elapsed = _seconds_between(upgrade_started_at or started_at, now, "upgrade_started_at")
    pace = None
    left = model_left
    done_model = _model(total, max_unavailable, surge, merged, True, batch) - model_left
    if replaced and done_model > 0 and upgrade_elapsed > 0:
        pace = upgrade_elapsed / done_model
        left = model_left * pace
    if step.get("action") == "done":
        left, model_left = 0.0, 0.0
    # a cancel's steps give instances back (rollout_step's goal)
    line = "%sstep %d: %d of %d nodes %s%s, %s elapsed, %s" % (
        ("%s: " % name) if name else "", number, replaced, total, "given back" if step.get("goal") == "cancel" else "replaced",
        ", draining %d" % draining if draining else "", human_duration(elapsed),
        "done" if step.get("action") == "done" else "about %s left" % human_duration(left))
    if pace is not None and step.get("action") != "done" and model_left:
        line += " (the plan's %s at the pace so far)" % human_duration(model_left)
    return {"step": number, "replaced": replaced, "total": total, "draining": draining, "elapsed_seconds": round(elapsed, 1),
            "left_seconds": round(left, 1), "model_left_seconds": round(model_left, 1),
            "pace": None if pace is None else round(pace, 3), "line": line}
