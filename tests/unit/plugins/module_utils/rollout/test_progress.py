# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Where an upgrade is, in one line: replaced of total, the step, elapsed, and the time left from the plan's model
corrected by the pace so far."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.filter.rollout_progress import FilterModule
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan import estimate_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.progress import rollout_progress
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.steps import wave_sizes
from ansible_collections.nodeops.rollout.plugins.module_utils.values import PlanError

TIMINGS = {"boot_seconds": 100, "drain_seconds": 50, "post_drain_delay": 10, "validate_seconds": 0}
START = "2026-11-25T07:00:00Z"


def step(outdated_left, terminate=(), drain=(), delayed=(), action="run", max_unavailable=1, owed=2):
    return {"action": action, "outdated_left": outdated_left, "terminate": list(terminate), "delayed": list(delayed),
            "drain": [{"node": name} for name in drain], "group": {"max_unavailable": max_unavailable, "surge_owed": owed}}


def model(outdated, owed):
    waves = wave_sizes(outdated, 1, owed, 1)
    return estimate_duration(waves, 100, 50, 10, 0, owed, surge_ready=True)


def test_before_any_node_is_replaced_the_time_left_is_the_plan_s_model_of_what_is_left():
    progress = rollout_progress(step(6, drain=["a", "b", "c"]), 1, 0, 6, START, "2026-11-25T07:02:00Z",
                                upgrade_started_at="2026-11-25T07:01:00Z", surge=2, timings=TIMINGS, name="workers")
    assert progress["left_seconds"] == model(6, 2) and progress["pace"] is None
    assert progress["line"] == ("workers: step 1: 0 of 6 nodes replaced, draining 3, 2m 00s elapsed, about %s left"
                                % ("%dm %02ds" % divmod(int(model(6, 2)), 60)))


def test_once_nodes_are_replaced_the_model_is_scaled_by_the_measured_pace():
    # 3 replaced, 3 left to drain; the upgrade took twice what the model gives the first 3
    done = model(6, 2) - model(3, 2)
    now = "2026-11-25T07:%02d:%02dZ" % divmod(60 + 2 * done, 60)
    progress = rollout_progress(step(6, terminate=["i-1", "i-2", "i-3"]), 4, 3, 6, START, now,
                                upgrade_started_at="2026-11-25T07:01:00Z", surge=2, timings=TIMINGS)
    assert progress["pace"] == 2.0 and progress["model_left_seconds"] == model(3, 2)
    assert progress["left_seconds"] == 2 * model(3, 2)
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
