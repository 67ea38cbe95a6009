# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/plan.py: the whole plan of one group as data, and its duration estimate."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan import (
    estimate_duration, extra_instance_minutes, plan_step_seconds, rollout_plan, surge_choices, surge_costs, wave_holds,
    wave_timeline)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.sizes import outdated_taint_effect
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.goals import goal_for, planned_waves
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import TARGET, assert_plan_error, instance


def waves(outdated, unavailable, surge, up_to_date=0):
    """The waves the upgrade's method takes on the plan's model of a group."""
    return planned_waves(goal_for("replace", {"canary": True}), outdated, unavailable, surge, up_to_date)


def test_estimate_duration():
    assert estimate_duration([], 180, 90, 60, 30, surge=3) == 0
    # No surge: every wave drains, waits, and waits for its replacements to boot; the next one validates them first.
    assert estimate_duration([[1], [1, 2, 3]], 100, 10, 5, 1) == (10 + 5 + 100) + (1 + 10 + 5 + 100)
    # Surge 4: boot and validate once up front; 5 outdated left, so the first wave (1) is replaced, the second (4)
    # pays the surge back with all its terminations: no boot to wait for at the end.
    assert estimate_duration([1, 4], 100, 10, 5, 1, surge=4) == (100 + 1) + (10 + 5 + 100) + (1 + 10 + 5)
    assert estimate_duration([2], "3m", "1m", "0", "30s", surge=1) == (180 + 30) + (60 + 0) + 180
    # the rest of a rollout under way: the surge is up already
    assert estimate_duration([1, 4], 100, 10, 5, 1, surge=4, surge_ready=True) == (10 + 5 + 100) + (1 + 10 + 5)
    # a target group's deregistration delay starts with the drain: what is left of it after the drain, when longer
    # than the post-drain delay, is waited instead
    assert estimate_duration([[1], [1, 2, 3]], 100, 10, 5, 1, deregistration_delay=300) == (10 + 290 + 100) + (1 + 10 + 290 + 100)
    assert estimate_duration([1], 100, 10, 5, 1, deregistration_delay=12) == 10 + 5 + 100
    # each task of the role outside the waits: ten, and three per step (two per wave and the last)
    assert estimate_duration([2], "3m", "1m", "0", "30s", surge=1, task_seconds="2s") == (180 + 30) + (60 + 0) + 180 + 2 * (10 + 3 * 3)
    assert estimate_duration([], 180, 90, 60, 30, task_seconds=5) == 0
    assert_plan_error(lambda: estimate_duration([1], 1, 1, 1, 1, task_seconds="busy"), "task_seconds")
    assert_plan_error(lambda: estimate_duration([1], "soon", 1, 1, 1), "boot_seconds")
    assert_plan_error(lambda: estimate_duration([1], 1, 1, 1, 1, surge=-1), "surge")
    assert_plan_error(lambda: estimate_duration(["x"], 1, 1, 1, 1), "waves[0]")


@pytest.mark.parametrize("outdated, unavailable, surge, up_to_date, expected", [
    (30, 3, 6, 0, [9, 9, 9, 3]),     # 9 while the surge serves; the third wave pays back 3 of 6, the fourth the rest
    (30, 3, 30, 0, [30]),            # a full surge: every node at once
    (30, 1, 6, 0, [7, 7, 7, 7, 2]),
    (6, 2, 0, 0, [1, 2, 2, 1]),      # no surge: a canary of one first
    (6, 2, 0, 1, [2, 2, 2]),         # something is up to date already: no canary
    (0, 1, 0, 0, []),
])
def test_wave_sizes(outdated, unavailable, surge, up_to_date, expected):
    assert waves(outdated, unavailable, surge, up_to_date) == expected


# the model plays every step of the engine: no deadline, which a loaded machine's pace would decide
@settings(deadline=None, max_examples=50)
@given(st.integers(min_value=0, max_value=30), st.integers(min_value=1, max_value=10), st.integers(min_value=0, max_value=30))
def test_waves_cover_every_outdated_node_and_a_bigger_surge_never_adds_waves(outdated, unavailable, surge):
    sizes = waves(outdated, unavailable, surge)
    assert sum(sizes) == outdated and all(size >= 1 for size in sizes)
    assert all(size <= surge + unavailable for size in sizes[1:]) and len(waves(outdated, unavailable, surge + 1)) <= len(sizes)


@settings(deadline=None, max_examples=50)
@given(st.integers(min_value=1, max_value=30), st.integers(min_value=1, max_value=5), st.integers(min_value=0, max_value=30))
def test_estimate_duration_a_full_surge_boots_once(outdated, unavailable, surge):
    sizes = waves(outdated, unavailable, surge)
    with_surge = estimate_duration(sizes, 120, 60, 30, 10, surge=surge)
    if surge >= outdated:
        assert with_surge == 120 + 10 + (len(sizes) - 1) * 10 + len(sizes) * (60 + 30)
    assert with_surge >= 60 + 30


# ---------------------------------------------------------------------------------------------------------
# The timeline of the estimate, and the surge priced
# ---------------------------------------------------------------------------------------------------------

def spans(timeline):
    return [(span["wave"], span["what"], span["start"], span["end"], span["surge_up"]) for span in timeline]


def test_the_timeline_is_the_estimate_s_model_with_the_surge_up_in_each_span():
    # 6 outdated, max unavailable 1, surge 2: waves of 3 and 3 (planned_waves); the first pays nothing back (3 outdated
    # stay after it), the second pays the 2 back and has 1 replacement to boot. Default timings, a second per task.
    timeline = wave_timeline([3, 3], 180, 90, 60, 30, surge=2, task_seconds=1)
    assert spans(timeline) == [
        (None, "setup", 0, 6, 0),              # six tasks before the surge boots (setup, scale up)
        (None, "surge", 6, 216, 2),            # boot 180 and validate 30, the 2 surge instances up
        (1, "drain", 216, 372, 2),             # drain 90, post-drain delay 60, the tasks of two steps
        (1, "replace", 372, 552, 2),           # its 3 terminations replaced: boot 180
        (2, "drain", 552, 738, 2),             # validate 30 first, then as the first
        (2, "replace", 738, 918, 0),           # 2 of its 3 terminations paid the surge back
        (None, "finish", 918, 925, 0)]         # the last step and the scale down
    assert estimate_duration([3, 3], 180, 90, 60, 30, surge=2, task_seconds=1) == 925
    # 2 instances above desired from the surge's boot to the second wave's terminations: 2 x 732 s
    assert extra_instance_minutes(timeline) == 2 * 732 / 60.0 == 24.4


def test_the_timeline_of_a_surge_up_already_starts_with_it_and_holds_keep_the_surge_still_owed():
    timeline = wave_timeline([1, 4], 100, 10, 5, 1, surge=4, surge_ready=True, holds=[20, 0, 7])
    assert spans(timeline) == [(1, "drain", 0, 15, 4), (1, "replace", 15, 115, 4), (1, "hold", 115, 135, 4),
                               (2, "drain", 135, 151, 4), (None, "hold", 151, 158, 0)]
    assert estimate_duration([1, 4], 100, 10, 5, 1, surge=4, surge_ready=True, holds=[20, 0, 7]) == 158
    assert extra_instance_minutes(timeline) == 4 * 151 / 60.0
    assert wave_timeline([], 180, 90, 60, 30, surge=3) == [] and extra_instance_minutes([]) == 0
    # without surge nothing is ever above the group's desired size
    assert extra_instance_minutes(wave_timeline([1, 2, 2, 1], 180, 90, 60, 30)) == 0


@pytest.mark.parametrize("configured, eks_default, outdated, expected", [
    # the default for 6 nodes in 3 AZs is all of them; terminate first, no surge, is always priced
    (6, 6, 6, [(0, ["terminate first"]), (6, ["configured", "EKS default", "100%"])]),
    (6, 6, 18, [(0, ["terminate first"]), (6, ["configured", "EKS default"]), (18, ["100%"])]),
    (0, 6, 18, [(0, ["configured", "terminate first"]), (6, ["EKS default"]), (18, ["100%"])]),
    (30, 6, 18, [(0, ["terminate first"]), (6, ["EKS default"]), (18, ["configured", "100%"])]),  # capped as the plan caps it
    (2, 6, 0, []),
])
def test_surge_choices_name_each_count_once(configured, eks_default, outdated, expected):
    choices = surge_choices(configured, eks_default, outdated)
    assert [(choice["surge"], choice["choices"]) for choice in choices] == expected


def test_surge_costs_price_each_choice_by_its_own_waves():
    timings = {"boot_seconds": 180, "drain_seconds": 90, "post_drain_delay": 60, "validate_seconds": 30,
               "task_seconds": 1}
    choices = surge_choices(2, 6, 6)
    # each surge's waves, holds and fewest Ready nodes (rollout.goals.planned_steps), passed through
    priced = surge_costs(choices, {0: ([1] * 6, [0] * 6, 5), 2: ([3, 3], [0, 0], 5), 6: ([6], [0], 6)}, timings)
    assert priced == [
        # six waves of one: each a drain, the post-drain delay and a boot (330 s), a validation between two (30 s), and
        # the role's tasks of 1 s
        {"surge": 0, "choices": ["terminate first"], "eta_seconds": 6 * 330 + 5 * 30 + 49, "wave_count": 6,
         "extra_instance_minutes": 0.0, "fewest_ready": 5},
        {"surge": 2, "choices": ["configured"], "eta_seconds": 925, "wave_count": 2, "extra_instance_minutes": 24.4,
         "fewest_ready": 5},
        {"surge": 6, "choices": ["EKS default", "100%"], "eta_seconds": 379, "wave_count": 1,
         "extra_instance_minutes": 36.6, "fewest_ready": 6}]


def test_the_plan_prices_the_surge_of_six_nodes_in_three_azs():
    instances = group([("i-%s%d" % (az, n), "eu-west-1" + az, "4", n) for az in "abc" for n in range(2)])
    # EKS's default, max(2 x 3 AZs, 1) = 6, is every outdated node: one row, one wave of 6; the 6 surge instances are up
    # from their boot to the wave's terminations, 210 + 156 s
    # The 6 new nodes are Ready before the wave drains the 6 old ones: 12 - 6 = 6 Ready, the group's size. Terminate
    # first: a canary of one, then one at a time, each of the 6 waves draining, waiting and booting its replacement,
    # nothing above the group's size, and 6 - 1 = 5 Ready while a wave is out (the floor).
    terminate_first = {"surge": 0, "eta_seconds": 6 * (90 + 60 + 180) + 5 * 30 + (10 + 3 * 13), "wave_count": 6,
                       "extra_instance_minutes": 0.0, "fewest_ready": 5}
    assert rollout_plan(instances, TARGET, max_unavailable=1)["surge_choices"] == [
        dict(terminate_first, choices=["terminate first"]),
        {"surge": 6, "choices": ["configured", "EKS default", "100%"], "eta_seconds": 379, "wave_count": 1,
         "extra_instance_minutes": 36.6, "fewest_ready": 6}]
    plan = rollout_plan(instances, TARGET, max_unavailable=1, max_surge=0)
    assert plan["surge_choices"] == [
        dict(terminate_first, choices=["configured", "terminate first"]),
        {"surge": 6, "choices": ["EKS default", "100%"], "eta_seconds": 379, "wave_count": 1,
         "extra_instance_minutes": 36.6, "fewest_ready": 6}]
    assert plan["surge_choices"][0]["eta_seconds"] == plan["eta_seconds"]


def test_the_plan_prices_100_percent_apart_from_the_default_of_a_bigger_group():
    instances = group([("i-%s%d" % (az, n), "eu-west-1" + az, "4", n) for az in "abc" for n in range(6)])
    first, default, full = rollout_plan(instances, TARGET, max_unavailable=1)["surge_choices"]
    # terminate first: 18 waves of one, 17 of 18 Ready while each is out
    assert (first["surge"], first["choices"], first["wave_count"], first["fewest_ready"]) == (0, ["terminate first"], 18, 17)
    # surge 6 over 18: waves of 7, 7 and 4; the second pays 2 back, the last the other 4; the first wave leaves
    # 24 - 7 = 17 Ready, the floor (the surge lets more drain at once, never the group go lower)
    assert (default["surge"], default["choices"], default["wave_count"]) == (6, ["configured", "EKS default"], 3)
    assert default["fewest_ready"] == 17
    assert default["eta_seconds"] == 6 + 210 + (156 + 180) + (186 + 180) + 186 + 7 == 1111
    assert default["extra_instance_minutes"] == round((6 * (210 + 156 + 180 + 186) + 4 * (180 + 186)) / 60.0, 1) == 97.6
    # 100 %: 18 new instances at once, one wave, no replacement to boot
    assert (full["surge"], full["choices"], full["wave_count"], full["eta_seconds"]) == (18, ["100%"], 1, 379)
    assert full["fewest_ready"] == 18   # 36 - 18: blue-green's arithmetic, every new node up before the old drain
    assert full["extra_instance_minutes"] == 18 * (210 + 156) / 60.0 == 109.8


# ---------------------------------------------------------------------------------------------------------
# The whole plan
# ---------------------------------------------------------------------------------------------------------

def group(specs):
    return [instance(instance_id, az, version=version, minutes=minutes) for instance_id, az, version, minutes in specs]


def test_rollout_plan_defaults_surge_then_one_at_a_time():
    instances = group([("i-%s%d" % (az, n), "eu-west-1" + az, "4", n) for az in "abc" for n in range(2)])
    result = rollout_plan(instances, TARGET)
    assert result["group_size"] == 6 and result["az_count"] == 3 and result["azs"] == ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
    assert result["max_unavailable"] == 1 and result["batch_size"] == 1
    assert result["surge_requested"] == 6 and result["surge"] == 6
    # the surged nodes are up and validated before any old node is drained: they are the canary, no batch of one;
    # with 12 Ready nodes over a floor of 5, all 6 old nodes drain in one wave
    assert result["canary"] is False and result["batch_count"] == 1 and result["outdated_count"] == 6
    assert result["batches"][0]["index"] == 1 and result["batches"][0]["canary"] is False
    assert result["batches"][0]["azs"] == ["eu-west-1a", "eu-west-1b", "eu-west-1c"] * 2
    assert result["target"] == {"launch_template_id": "lt-new", "version": "5", "image_id": None}
    # All six replacements are surged up front: one boot and a validation, then one drain and its delay; every
    # termination pays the surge back, so nothing is left to boot.
    # Ansible's own second per task: ten tasks outside the steps, three in each of three steps (drain, terminate, done).
    assert result["eta_seconds"] == 180 + 30 + 90 + 60 + (10 + 3 * 3)
    assert result["timings"] == {"boot_seconds": 180, "drain_seconds": 90, "post_drain_delay": 60, "validate_seconds": 30,
                                 "task_seconds": 1}
    json.dumps(result)


def test_rollout_plan_without_surge_starts_with_a_canary_of_one():
    instances = group([("i-%s%d" % (az, n), "eu-west-1" + az, "4", n) for az in "abc" for n in range(2)])
    result = rollout_plan(instances, TARGET, max_unavailable=2, max_surge=0)
    assert result["surge"] == 0 and result["canary"] is True
    assert [len(batch["instance_ids"]) for batch in result["batches"]] == [1, 2, 2, 1]
    assert [batch["canary"] for batch in result["batches"]] == [True, False, False, False]


def test_rollout_plan_percentages_and_existing_up_to_date_nodes():
    instances = group([("i-%s%d" % (az, n), "eu-west-1" + az, "4", n) for az in "abc" for n in range(2)])
    instances += group([("i-new", "eu-west-1a", "5", 99)])
    result = rollout_plan(instances, TARGET, max_unavailable="50%", max_surge=0, drain_seconds="2m")
    assert result["group_size"] == 7 and result["max_unavailable"] == 3   # 3.5 rounds down
    assert result["canary"] is False and result["up_to_date"] == ["i-new"] and result["up_to_date_count"] == 1
    assert [len(batch["instance_ids"]) for batch in result["batches"]] == [3, 3]
    assert all(len(set(batch["azs"])) == 3 for batch in result["batches"])
    assert result["surge"] == 0
    assert result["eta_seconds"] == (120 + 60 + 180) + (30 + 120 + 60 + 180) + (10 + 3 * 5)
    outdated = result["outdated"][0]
    assert set(outdated) == {"instance_id", "az", "node", "launch_time", "lifecycle_state", "reason", "reasons"}
    assert "target version is 5" in outdated["reason"]


def test_rollout_plan_never_surges_more_than_it_replaces():
    instances = group([("i-a", "eu-west-1a", "4", 0), ("i-b", "eu-west-1b", "4", 0), ("i-c", "eu-west-1b", "5", 0)])
    result = rollout_plan(instances, TARGET, az_count=3)
    assert result["surge_requested"] == 6 and result["surge"] == 2
    detached = instance("i-d", state="Detached", tags={"nodeops.rollout/detached": "true"})
    result = rollout_plan([detached] + instances, TARGET)
    assert result["outdated_count"] == 3 and result["surge"] == 2  # the detached one was already replaced
    assert result["group_size"] == 3


def test_rollout_plan_lists_the_target_groups_and_counts_the_longest_instance_delay():
    instances = [instance("i-%d" % n, version="1") for n in range(2)]
    groups = [{"name": "web", "arn": "arn:web", "target_type": "instance", "deregistration_delay": 300},
              {"name": "pods", "arn": "arn:pods", "target_type": "ip", "deregistration_delay": 900}]
    plan = rollout_plan(instances, TARGET, max_surge=0, target_groups=groups, boot_seconds=100, drain_seconds=10,
                        post_drain_delay=5, validate_seconds=1)
    assert [(tg["name"], tg["deregistration_delay"], tg["waited_for"]) for tg in plan["target_groups"]] == [
        ("web", 300, True), ("pods", 900, False)]
    assert plan["eta_seconds"] == estimate_duration([len(b["instance_ids"]) for b in plan["batches"]], 100, 10, 5, 1,
                                                    deregistration_delay=300, task_seconds=1)
    assert rollout_plan(instances, TARGET)["target_groups"] == []


def test_rollout_plan_nothing_to_do():
    instances = group([("i-a", "eu-west-1a", "5", 0), ("i-b", "eu-west-1b", "5", 0)])
    result = rollout_plan(instances, TARGET)
    assert result["batches"] == [] and result["canary"] is False and result["surge"] == 0 and result["eta_seconds"] == 0
    assert result["outdated"] == [] and result["up_to_date_count"] == 2


def test_rollout_plan_instances_without_nodes_are_still_planned():
    instances = [instance("i-a", node=False), instance("i-b", version="5")]
    result = rollout_plan(instances, TARGET)
    assert result["batches"][0]["nodes"] == [None] and result["canary"] is False


@pytest.mark.parametrize("kwargs, field", [
    ({"max_unavailable": "150%"}, "max_unavailable"), ({"max_surge": "abc"}, "max_surge"),
    ({"group_size": -2}, "group_size"), ({"az_count": "3"}, "az_count"), ({"boot_seconds": "3 minutes"}, "boot_seconds"),
    ({"validate_seconds": -5}, "validate_seconds"),
])
def test_rollout_plan_bad_settings_name_the_field(kwargs, field):
    assert_plan_error(lambda: rollout_plan([instance("i-a")], TARGET, **kwargs), field, "is not allowed")


@settings(max_examples=100)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(["4", "5"]), st.integers(min_value=0, max_value=30)), max_size=25),
       st.one_of(st.none(), st.integers(min_value=1, max_value=10), st.integers(min_value=1, max_value=100).map(lambda p: "%d%%" % p)),
       st.one_of(st.none(), st.integers(min_value=0, max_value=10)))
def test_rollout_plan_properties(specs, max_unavailable, max_surge):
    instances = group([("i-%03d" % index, "eu-west-1" + az, version, minutes) for index, (az, version, minutes) in enumerate(specs)])
    result = rollout_plan(instances, TARGET, max_unavailable=max_unavailable, max_surge=max_surge)
    outdated_ids = sorted(item["instance_id"] for item in instances if item["launch_template"]["version"] == "4")
    planned = sorted(instance_id for batch in result["batches"] for instance_id in batch["instance_ids"])
    assert planned == outdated_ids
    assert 0 <= result["surge"] <= min(result["surge_requested"], len(outdated_ids))
    assert all(len(batch["instance_ids"]) <= result["batch_size"] + result["surge"] for batch in result["batches"])
    assert result["canary"] == bool(outdated_ids and result["up_to_date_count"] == 0 and result["surge"] == 0)
    if result["canary"]:
        assert len(result["batches"][0]["instance_ids"]) == 1
    assert (result["eta_seconds"] > 0) == bool(outdated_ids)
    # the surge is priced at what the plan uses, by the same model: the configured choice is the plan itself
    choices = result["surge_choices"]
    if planned and result["outdated_count"]:
        configured = [choice for choice in choices if "configured" in choice["choices"]]
        assert [(choice["surge"], choice["eta_seconds"], choice["wave_count"]) for choice in configured] == [
            (result["surge"], result["eta_seconds"], result["batch_count"])]
        assert sorted(name for choice in choices for name in choice["choices"]) == ["100%", "EKS default", "configured", "terminate first"]
        # no surge keeps the floor; every surge keeps at least as many Ready
        assert choices[0]["surge"] == 0 and choices[0]["fewest_ready"] >= result["group_size"] - result["batch_size"]
        assert [choice["surge"] for choice in choices] == sorted(set(choice["surge"] for choice in choices))
        assert all((choice["extra_instance_minutes"] > 0) == (choice["surge"] > 0) for choice in choices)
        assert choices[-1]["surge"] == len(outdated_ids) and "100%" in choices[-1]["choices"]
    else:
        assert choices == []
    json.dumps(result)


@pytest.mark.parametrize("requested, surge, outdated, expected", [
    ("NoSchedule", 6, 6, "NoSchedule"),        # the surge replaces every outdated node: a hard taint keeps each pod moving once
    ("NoSchedule", 7, 3, "NoSchedule"),
    ("NoSchedule", 2, 3, "PreferNoSchedule"),  # the new nodes alone would be fewer than the group: soft, as kops
    ("NoSchedule", 0, 3, "PreferNoSchedule"),  # no surge: no new node exists yet
    ("PreferNoSchedule", 6, 6, "PreferNoSchedule"),
    ("NoSchedule", 0, 0, "NoSchedule"),
])
def test_outdated_taint_effect_keeps_the_schedulable_floor(requested, surge, outdated, expected):
    assert outdated_taint_effect(requested, surge, outdated) == expected


def test_outdated_taint_effect_refuses_an_unknown_effect():
    with pytest.raises(PlanError, match=r"^taint_effect: 'NoExecute!' is not allowed; use one of NoSchedule, PreferNoSchedule, NoExecute"):
        outdated_taint_effect("NoExecute!", 1, 1)


def test_standby_instances_are_listed_in_no_wave_and_outdated_only_when_the_policy_replaces_them():
    group = [instance("i-a", az="a"), instance("i-b", az="b"), instance("i-s", az="c", state="Standby"),
             instance("i-u", az="c", version="5", state="Standby")]
    ignored = rollout_plan(group, TARGET, max_unavailable=1, max_surge=0)
    assert ignored["outdated_count"] == 2 and ignored["standby"]["policy"] == "ignore"
    assert [(entry["instance_id"], entry["outdated"]) for entry in ignored["standby"]["instances"]] == [("i-s", True), ("i-u", False)]
    for policy in ("terminate", "wait"):
        plan = rollout_plan(group, TARGET, max_unavailable=1, max_surge=0, standby=policy)
        assert [entry["instance_id"] for entry in plan["outdated"]] == ["i-a", "i-b", "i-s"]
        assert "i-s" not in [iid for batch in plan["batches"] for iid in batch["instance_ids"]]
        assert plan["surge"] == 0 and plan["standby"]["policy"] == policy
    # the surge covers the outdated instances that are capacity, never those in Standby
    assert rollout_plan(group, TARGET, max_unavailable=1, standby="terminate")["surge"] == 2
    assert_plan_error(lambda: rollout_plan(group, TARGET, standby="skip"), "standby_instances")


def test_the_plan_names_the_outdated_instances_protected_from_scale_in():
    group = [instance("i-a", az="a"), instance("i-b", az="b"), instance("i-c", az="c", version="5")]
    group[0]["protected_from_scale_in"] = True
    group[2]["protected_from_scale_in"] = True
    plan = rollout_plan(group, TARGET, max_unavailable=1)
    assert plan["protected"] == ["i-a"]
    assert "i-a" in [iid for batch in plan["batches"] for iid in batch["instance_ids"]]


def test_warm_pool_instances_of_another_version_are_named_for_the_refresh():
    group = [instance("i-a", az="a"), instance("i-b", az="b", version="5")]
    pool = {"min_size": 1, "max_group_prepared_capacity": None, "pool_state": "Stopped",
            "instances": [instance("i-w1", state="Warmed:Stopped", node=False), instance("i-w2", version="5", state="Warmed:Stopped", node=False)]}
    plan = rollout_plan(group, TARGET, max_unavailable=1, warm_pool=pool)
    assert plan["warm_pool"]["outdated"] == ["i-w1"] and plan["warm_pool"]["pool_state"] == "Stopped"
    assert [entry["lifecycle_state"] for entry in plan["warm_pool"]["instances"]] == ["Warmed:Stopped", "Warmed:Stopped"]
    # warm instances are no capacity and no work of the waves
    assert plan["outdated_count"] == 1 and plan["surge"] == 1
    assert rollout_plan(group, TARGET)["warm_pool"] is None


# ---------------------------------------------------------------------------------------------------------
# Holds in the plan: the bake time and checkpoints
# ---------------------------------------------------------------------------------------------------------

def test_a_checkpoint_cuts_the_waves_and_the_holds_count_in_the_estimate():
    instances = group([("i-%s%d" % (az, n), "eu-west-1" + az, "4", n) for az in "abc" for n in range(2)])
    plain = rollout_plan(instances, TARGET, max_unavailable=1, max_surge=1)
    held = rollout_plan(instances, TARGET, max_unavailable=1, max_surge=1, bake_seconds=300,
                        checkpoints=[{"percent": 50, "wait_seconds": 1800}])
    # 7 Ready over a floor of 5: waves of 2; the checkpoint at 3 of 6 cuts the second wave to 1
    assert [len(batch["instance_ids"]) for batch in plain["batches"]] == [2, 2, 2]
    assert [len(batch["instance_ids"]) for batch in held["batches"]] == [2, 1, 2, 1]
    assert [batch["hold_seconds"] for batch in held["batches"]] == [300, 1800, 300, 300]
    assert held["bake_seconds"] == 300 and held["checkpoints"] == [{"percent": 50, "wait_seconds": 1800, "count": 3}]
    waves = [len(batch["instance_ids"]) for batch in held["batches"]]
    assert held["eta_seconds"] - estimate_duration(waves, 180, 90, 60, 30, surge=1, task_seconds=1) == 300 + 1800 + 300 + 300


@pytest.mark.parametrize("sizes, taken, bake, counts, expected", [
    ([2, 2], 0, 0, {}, [0, 0]),
    ([2, 2], 0, 60, {}, [60, 60]),
    ([2, 2], 0, 60, {2: 600}, [600, 60]),
    ([1, 2], 1, 0, {2: 600, 4: 900}, [600, 900]),     # two up to date already: the waves reach 2 and 4
])
def test_wave_holds(sizes, taken, bake, counts, expected):
    assert wave_holds(sizes, taken, bake, counts) == expected


def test_one_step_s_predicted_duration_is_drain_delay_boot_and_validation():
    assert plan_step_seconds("3m", "90s", 60, 10) == 180 + 90 + 60 + 10


def test_the_plan_lists_the_aged_nodes_apart_and_replaces_them_with_the_others():
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import aged_line
    # launched at 12:00, 12:30 and 13:00 on the target's version but the last, a cutoff at 12:45
    target = dict(TARGET, launched_before="2024-05-01T12:45:00Z", max_node_age=86400)
    instances = [instance("i-a", version="5"), instance("i-b", version="4", minutes=30), instance("i-c", version="5", minutes=60)]
    plan = rollout_plan(instances, target, max_unavailable=1, max_surge=0)
    assert [entry["instance_id"] for entry in plan["outdated"]] == ["i-a", "i-b"]
    assert plan["aged"] == {"launched_before": "2024-05-01T12:45:00Z", "max_node_age": 86400, "instances": [
        {"instance_id": "i-a", "node": "node-i-a", "launch_time": "2024-05-01T12:00:00Z", "only_age": True},
        {"instance_id": "i-b", "node": "node-i-b", "launch_time": "2024-05-01T12:30:00Z", "only_age": False}]}
    assert aged_line(plan["aged"]) == ("max node age 24h 00m: launched before 2024-05-01T12:45:00Z, 1 node replaced for age "
                                       "alone: node-i-a (2024-05-01T12:00:00Z); 1 node also outdated otherwise: node-i-b")
    # without a max_node_age there is no such list
    assert rollout_plan(instances, TARGET, max_unavailable=1, max_surge=0)["aged"] is None
