# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/goals.py: every goal one method behind one interface; what each acts on, reads and commands."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.goals import GOALS, goal_for, planned_waves
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.steps import cancel_step, checkpoint_counts, next_step
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.rollout.test_steps import NOW, ids_of, inst, new, old

SETTINGS = {"post_drain_delay": 30, "canary": True, "skip": [], "taint_key": None, "limit": None, "standby": "ignore",
            "bake_seconds": 0, "checkpoints": (), "join_timeout": 600}


def view(instances, outdated, size, unavailable=1, owed=0, holds=None):
    return {"instances": instances, "outdated_ids": outdated, "original_size": size, "max_unavailable": unavailable,
            "surge_owed": owed, "desired_capacity": len(instances), "now": NOW, "holds": holds, "pinned": {}}


def test_a_goal_that_is_not_one_is_refused_naming_the_field_and_the_goals():
    with pytest.raises(PlanError) as caught:
        goal_for("blue-green", SETTINGS)
    assert "goal: 'blue-green' is not allowed; use one of replace, cancel, relaunch" in str(caught.value)


def test_only_the_upgrade_is_stopped_from_outside_and_keeps_its_new_nodes_from_the_autoscaler():
    assert {name: (goal_for(name, SETTINGS).stoppable, goal_for(name, SETTINGS).protects_new_nodes) for name in GOALS} == {
        "replace": (True, True), "cancel": (False, False), "relaunch": (False, False)}


def test_replace_is_the_upgrade_s_rule_with_the_settings_given():
    group = old(3)
    goal = goal_for("replace", SETTINGS)
    assert goal.targets(group, [], ids_of(group), NOW) == ids_of(group)
    assert goal.reads(group, ids_of(group)) == set(ids_of(group))
    command = goal.step(view(group, ids_of(group), 3))
    assert command == next_step(group, ids_of(group), 3, 1, 0, 3, NOW, post_drain_delay=30)
    # a canary of one: nothing is up to date yet
    assert command["action"] == "run" and len(command["drain"]) == 1


def test_replace_drains_only_the_limit_it_is_given():
    group = old(3) + new(1)
    goal = goal_for("replace", dict(SETTINGS, limit=["o1"]))
    command = goal.step(view(group, ids_of(group[:3]), 4, unavailable=2))
    assert [entry["instance_id"] for entry in command["drain"]] == ["o1"] and sorted(command["outside"]) == ["o0", "o2"]


def test_a_drained_node_waits_for_the_replace_post_drain_delay_but_not_for_the_relaunch_one():
    assert goal_for("replace", SETTINGS).post_drain_delay == 30
    assert goal_for("cancel", SETTINGS).post_drain_delay == 30
    assert goal_for("relaunch", SETTINGS).post_drain_delay == 0


def test_relaunch_acts_on_the_up_to_date_instances_that_never_became_ready_nodes_and_pays_no_surge_back():
    group = new(2) + [inst("u9", node=None)]
    goal = goal_for("relaunch", SETTINGS)
    assert goal.targets(group, ids_of(group), [], NOW) == ["u9"]
    command = goal.step(view(group, ["u9"], 3, owed=1))
    # no node to drain: terminated at once, without a decrement (the group launches another in its place), although
    # a surge is owed
    assert command["action"] == "run" and command["terminate"] == ["u9"] and command["decrement"] == 0
    assert command == next_step(group, ["u9"], 3, 1, 0, 3, NOW, post_drain_delay=0, canary=False)


def test_cancel_reads_every_instance_and_gives_back_the_surge_owed():
    group = old(3) + [inst("u0", node=None)]
    goal = goal_for("cancel", SETTINGS)
    assert goal.reads(group, ["o0"]) == set(ids_of(group))
    command = goal.step(view(group, ids_of(group[:3]), 3, owed=1))
    assert command["terminate"] == ["u0"] and command["decrement"] == 1
    assert command == cancel_step(group, ids_of(group[:3]), 3, 1, 1, 4, NOW, post_drain_delay=30)


def test_every_goal_answers_for_one_read_with_the_same_fields():
    group = old(3) + new(1)
    fields = [set(goal_for(name, SETTINGS).step(view(group, ids_of(group[:3]), 3)))
              for name in GOALS]
    # a cancel also says what it gave back that still leaves the group
    assert fields[0] == fields[2] == fields[1] - {"leaving"}


def closed_form(outdated, max_unavailable, surge, up_to_date=0, canary=True, counts=(), taken=0):
    """The waves by arithmetic, written apart from the engine as the oracle of the property below: the surge plus
    max_unavailable while the surge serves, less as the last terminations pay it back (only as many decrement as the
    surge owed exceeds the outdated nodes that stay); a canary of one first when nothing is up to date and nothing is
    surged; no wave across a checkpoint."""
    owed = extra = surge
    left, ready, sizes = outdated, bool(up_to_date or surge), []
    while left:
        take = min(left, extra + max_unavailable) if ready or not canary else 1
        ahead = [count for count in counts if count > taken]
        if ahead:
            take = min(take, min(ahead) - taken)
        taken += take
        paid = max(0, min(take, owed - (left - take)))
        owed, extra, left, ready = owed - paid, extra - paid, left - take, True
        sizes.append(take)
    return sizes


@settings(deadline=None, max_examples=300)
@given(st.integers(min_value=0, max_value=14), st.integers(min_value=1, max_value=4), st.integers(min_value=0, max_value=6),
       st.integers(min_value=0, max_value=3), st.booleans(),
       st.lists(st.fixed_dictionaries({"percent": st.integers(min_value=1, max_value=100),
                                       "wait_seconds": st.sampled_from([0, 60, 600])}), max_size=3))
def test_the_plan_s_waves_are_the_steps_the_engine_takes_on_a_simulated_group(  # pylint: disable=too-many-arguments
        outdated, unavailable, surge, up_to_date, canary, checkpoints):
    goal = goal_for("replace", dict(SETTINGS, canary=canary, checkpoints=checkpoints, bake_seconds=300))
    waves = planned_waves(goal, outdated, unavailable, surge, up_to_date)
    surge = min(surge, outdated)
    assert waves == closed_form(outdated, unavailable, surge, up_to_date, canary,
                                checkpoint_counts(checkpoints, outdated + up_to_date), up_to_date)
    assert sum(waves) == outdated


def test_the_plan_s_model_of_a_full_surge_drains_every_node_at_once_and_a_canary_first_without_one():
    goal = goal_for("replace", SETTINGS)
    assert planned_waves(goal, 30, 3, 30) == [30]
    assert planned_waves(goal, 6, 2, 0) == [1, 2, 2, 1]
    assert planned_waves(goal_for("replace", dict(SETTINGS, canary=False)), 6, 2, 0) == [2, 2, 2]


def test_the_plan_s_model_launches_what_the_group_lacks_of_its_size_before_its_first_step():
    goal = goal_for("replace", SETTINGS)
    # the cluster-autoscaler took a node of a group of 3 with a decrement: nothing is left to drain, and the scale
    # down's plan has no step (the model once waited for a launch that never came, and failed the run)
    assert planned_waves(goal, 0, 1, 0, 2, original_size=3) == []
    assert planned_waves(goal, 0, 1, 1, 2, original_size=3) == []
    # two outdated nodes of a group of 4: the two it launches are up to date and Ready, so no canary is needed
    assert planned_waves(goal, 2, 1, 0, 0, original_size=4) == [1, 1]
    # a group above its original size (a scale-in of the autoscaler's lowered it) drains what the floor lets go
    assert planned_waves(goal, 3, 1, 1, 0, original_size=2) == [3]
