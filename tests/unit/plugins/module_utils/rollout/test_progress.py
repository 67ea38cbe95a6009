# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Where an upgrade is, in one line: replaced of total, the step, elapsed, and the time left from the plan's model
corrected by the pace so far."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.filter.rollout_progress import FilterModule
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan import estimate_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.progress import rollout_progress
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.goals import goal_for, planned_waves

TIMINGS = {"boot_seconds": 100, "drain_seconds": 50, "post_drain_delay": 10, "validate_seconds": 0}
START = "2026-11-25T07:00:00Z"


def planned(outdated, unavailable, surge, up_to_date=0):
    """The waves the upgrade's method takes on the plan's model of a group."""
    return planned_waves(goal_for("replace", {"canary": True}), outdated, unavailable, surge, up_to_date)


def step(outdated_left, terminate=(), drain=(), delayed=(), action="run", max_unavailable=1, owed=2):
    return {"action": action, "outdated_left": outdated_left, "terminate": list(terminate), "delayed": list(delayed),
            "drain": [{"node": name} for name in drain], "group": {"max_unavailable": max_unavailable, "surge_owed": owed}}


def model(outdated, owed):
    waves = planned(outdated, 1, owed, 1)
    return estimate_duration(waves, 100, 50, 10, 0, owed, surge_ready=True)


def test_before_any_node_is_replaced_the_time_left_is_the_plan_s_model_of_what_is_left():
    progress = rollout_progress(step(6, drain=["a", "b", "c"]), 1, 0, 6, START, "2026-11-25T07:02:00Z",
                                upgrade_started_at="2026-11-25T07:01:00Z", surge=2, timings=TIMINGS, name="workers")
    assert progress["left_seconds"] == model(6, 2) and progress["pace"] is None
    assert progress["line"] == ("workers: step 1: 0 of 6 nodes replaced, draining 3, 2m 00s elapsed, about %s left by the plan"
                                % ("%dm %02ds" % divmod(int(model(6, 2)), 60)))


def test_once_nodes_are_replaced_the_model_is_scaled_by_the_measured_pace():
    # 3 replaced now, 3 left to drain; the upgrade took twice what the model gives the first 3 up to their termination
    # (their waves but for the boot of their replacements, which starts now)
    done = model(6, 2) - model(3, 2) - TIMINGS["boot_seconds"]
    now = "2026-11-25T07:%02d:%02dZ" % divmod(60 + 2 * done, 60)
    progress = rollout_progress(step(6, terminate=["i-1", "i-2", "i-3"]), 4, 3, 6, START, now,
                                upgrade_started_at="2026-11-25T07:01:00Z", surge=2, timings=TIMINGS)
    assert progress["pace"] == 2.0 and progress["model_left_seconds"] == model(3, 2) + TIMINGS["boot_seconds"]
    assert progress["left_seconds"] == 2 * (model(3, 2) + TIMINGS["boot_seconds"])
    assert "3 of 6 nodes replaced" in progress["line"] and "at the pace so far" in progress["line"]


def test_done_and_a_last_post_drain_delay():
    assert rollout_progress(step(0, action="done"), 9, 6, 6, START, "2026-11-25T07:09:00Z")["line"] == (
        "step 9: 6 of 6 nodes replaced, 9m 00s elapsed, done")
    # every node drained, one still in its post-drain delay: what is left is that delay
    last = rollout_progress(step(1, delayed=["i-6"]), 8, 5, 6, START, START, timings=TIMINGS)
    assert last["model_left_seconds"] == 10


def test_survey_strings_are_read_and_bad_values_named():
    progress = FilterModule().filters()["rollout_progress"](step(2), "3", "1", "4", START, START, surge="1")
    assert progress["step"] == 3 and progress["total"] == 4
    with pytest.raises(PlanError, match="number: 0 is not allowed"):
        rollout_progress(step(2), 0, 0, 2, START, START)
    with pytest.raises(PlanError, match="started_at: 'soon' is not allowed"):
        rollout_progress(step(2), 1, 0, 2, "soon", START)


def test_in_batches_of_a_play_s_serial_the_nodes_left_are_counted_in_those_batches():
    # 5 left in batches of 2: three waves, each drained, delayed and booted (nothing paid back: no surge owed)
    progress = rollout_progress(step(5, owed=0), 2, 1, 6, START, START, timings=TIMINGS, batch="2")
    assert progress["model_left_seconds"] == 3 * (50 + 10 + 100)
    with pytest.raises(PlanError, match="batch: 0 is not allowed"):
        rollout_progress(step(5), 2, 1, 6, START, START, batch=0)


def _clock(seconds):
    return "2026-11-25T07:%02d:%02dZ" % divmod(int(seconds), 60)


def serial_run(keep_steps=True):
    """The serial playbook over 6 outdated nodes, a canary of 1 then batches of 2, each batch at the model's pace
    (drain 50 s, delay 10 s, boot 100 s): the progress line of every step, as the role asks for it - the upgrade's clock
    started again at each batch (upgrade_started_at), the group's steps so far passed on (``steps``) when
    ``keep_steps``."""
    lines, recorded, replaced, now, number = [], [], 0, 60, 1
    left_ids = ["i-%d" % n for n in range(6)]
    for size in (1, 2, 2, 1):
        batch_start = now
        mine, others = left_ids[:size], left_ids[size:]
        for action, terminate, drain, took in (("run", [], mine, 60), ("run", mine, [], 100), ("done", [], [], 0)):
            if terminate:
                replaced += len(terminate)
            outdated = len(left_ids) - (len(mine) if action == "done" else 0)
            entry = {"action": action, "outdated_left": outdated, "terminate": terminate, "delayed": [], "decrement": 0,
                     "drain": [{"node": name} for name in drain], "outside": others if action == "done" else list(others),
                     "group": {"max_unavailable": 2, "surge_owed": 0}}
            lines.append((now, rollout_progress(entry, number, replaced, 6, START, _clock(now), upgrade_started_at=_clock(batch_start),
                                                timings=TIMINGS, name="workers", batch=2,
                                                steps=list(recorded) if keep_steps else None)))
            recorded.append({"index": number, "started_at": _clock(now), "decided_at": _clock(now), "terminated": terminate,
                             "decrement": 0})
            number += 1
            now += took
        left_ids = others
        now += 20   # the play moves on to the next batch's hosts
    return lines


def test_a_serial_batch_s_end_says_batch_done_with_the_group_s_time_left_and_the_estimate_does_not_jump():
    lines = serial_run()
    ends = [progress for _step, progress in lines if progress["line"].endswith("done") or "batch done" in progress["line"]]
    assert [progress["batch_done"] for progress in ends] == [True, True, True, False]
    assert "1 of 6 nodes replaced, batch done," in ends[0]["line"] and "left" in ends[0]["line"]
    assert ends[-1]["line"] == "workers: step 12: 6 of 6 nodes replaced, 12m 40s elapsed, done"
    assert [progress for _step, progress in lines[:-1] if progress["line"].endswith(" done")] == []
    # the time left never falls faster than the time passing (with a step's slack), from the first replacement on
    timed = [(now, progress["left_seconds"]) for now, progress in lines if progress["replaced"]]
    assert len(timed) > 2, timed
    for (before, left_before), (after, left_after) in zip(timed, timed[1:-1]):
        assert left_before - left_after <= (after - before) + 60, (before, left_before, after, left_after)
    # without the group's steps the clock of each batch starts again, and the estimate jumps
    jumpy = [(now, progress["left_seconds"]) for now, progress in serial_run(keep_steps=False) if progress["replaced"]]
    assert any(left_before - left_after > (after - before) + 60
               for (before, left_before), (after, left_after) in zip(jumpy, jumpy[1:-1]))


def test_steps_must_be_a_list():
    with pytest.raises(PlanError, match="steps: 'x' is not allowed"):
        rollout_progress(step(2), 1, 0, 2, START, START, steps="x")


def test_with_nodes_still_to_drain_the_time_left_is_never_less_than_the_quickest_wave_so_far():
    # the serial playbook over 4 nodes (a canary of 1, then batches of 2) on a group ten times quicker than the plan's
    # model but whose replacements boot long after each termination: the time since a termination must not eat the
    # time of the waves still to come (it read "3 of 4 nodes replaced ... about 0s left")
    timings = {"boot_seconds": 180, "drain_seconds": 90, "post_drain_delay": 2, "validate_seconds": 30}
    lines, recorded, replaced, now, number, terminated_at = [], [], 0, 60, 1, [60]
    left_ids = ["i-%d" % n for n in range(4)]
    for size in (1, 2, 1):
        batch_start, mine, others = now, left_ids[:size], left_ids[size:]
        for action, terminate, drain, took in (("run", [], mine, 8), ("run", mine, [], 60), ("done", [], [], 0)):
            replaced += len(terminate)
            if terminate:
                terminated_at.append(now)
            entry = {"action": action, "outdated_left": len(left_ids) - (len(mine) if action == "done" else 0),
                     "terminate": terminate, "delayed": [], "decrement": 0, "drain": [{"node": name} for name in drain],
                     "outside": list(others), "group": {"max_unavailable": 2, "surge_owed": 0}}
            progress = rollout_progress(entry, number, replaced, 4, START, _clock(now), upgrade_started_at=_clock(batch_start),
                                        timings=timings, name="workers", batch=2, steps=list(recorded))
            quickest = min(b - a for a, b in zip(terminated_at, terminated_at[1:])) if len(terminated_at) > 1 else 0
            lines.append((len(others) if action != "done" else len(left_ids) - size, quickest, progress))
            recorded.append({"index": number, "started_at": _clock(now), "decided_at": _clock(now), "terminated": terminate,
                             "decrement": 0})
            number, now = number + 1, now + took
        left_ids = others
        now += 30
    still_to_drain = [(quickest, progress) for waiting, quickest, progress in lines if waiting and progress["pace"] is not None]
    assert still_to_drain, lines
    for quickest, progress in still_to_drain:
        assert progress["left_seconds"] >= quickest > 0, progress["line"]
    assert "4 of 4 nodes replaced" in lines[-1][2]["line"] and lines[-1][2]["line"].endswith(" done")


def test_a_pace_faster_than_the_plan_never_shows_less_than_the_post_drain_delays_still_to_wait():
    # 5 of 6 replaced ten times faster than the model; the last node is drained and waits out its post-drain delay, a
    # wait on the wall clock: "about 0s left" would be wrong, the delay is left
    done = model(6, 2) - model(1, 2)
    now = "2026-11-25T07:01:%02dZ" % int(done / 10)
    last = rollout_progress(step(1, delayed=["i-6"]), 8, 5, 6, START, now, upgrade_started_at="2026-11-25T07:01:00Z",
                            surge=2, timings=TIMINGS, steps=[{"decided_at": now, "terminated": ["i-5"], "decrement": 1}])
    assert last["pace"] is not None and last["pace"] < 1 and last["left_seconds"] >= TIMINGS["post_drain_delay"]


def test_a_step_blocking_pods_held_says_which_and_how_long():
    held = dict(step(6, drain=["a"]), held_by_pods=["ops/backup-1"], waited_seconds=95)
    line = rollout_progress(held, 1, 0, 6, START, "2026-11-25T07:02:00Z", upgrade_started_at="2026-11-25T07:01:00Z", surge=2,
                            timings=TIMINGS, name="workers")["line"]
    assert line.endswith("by the plan; held 1m 35s by ops/backup-1"), line
