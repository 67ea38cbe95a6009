# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/sizes.py: how many nodes at once and how many extra, then the group sizes during a rollout: surge, pay back,
restore (with the cluster-autoscaler rule), and the decrement option."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import sizes as gs
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.sizes import max_unavailable_count, surge_count
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import assert_plan_error


def _sizes(low, high, desired):
    return {"min_size": low, "max_size": high, "desired_capacity": desired}


def _state_after_surge(original, surge, limit=None, method="scale"):
    surged = gs.surged_sizes(original, surge, limit)
    state = {"rollout_id": "r-1", "method": method, "original_min_size": original["min_size"],
             "original_max_size": original["max_size"], "original_desired_capacity": original["desired_capacity"],
             "surge": surge, "surge_owed": surge if method == "scale" else 0,
             "surged_max_size": surged["surged_max_size"] if method == "scale" else None, "restore_sizes": None}
    return state, surged


# ---- surge ------------------------------------------------------------------------------------------------------

def test_surge_raises_max_and_desired_by_the_surge_and_keeps_min():
    assert gs.surged_sizes(_sizes(3, 6, 4), 6) == {"min_size": 3, "max_size": 12, "desired_capacity": 10, "surged_max_size": 12}


def test_surge_is_capped_by_the_limit_when_desired_fits():
    assert gs.surged_sizes(_sizes(3, 6, 4), 6, max_size_limit=11)["max_size"] == 11


def test_surge_the_limit_cannot_take_names_the_surge_that_fits():
    with pytest.raises(PlanError) as error:
        gs.surged_sizes(_sizes(6, 6, 6), 6, max_size_limit=10)
    assert str(error.value) == ("surge: 6 more instances on a desired capacity of 6 need a maximum size of 12, above max_size_limit 10; "
                                "use a surge of at most 4, or raise max_size_limit to 12")


@pytest.mark.parametrize("surge", [-1, 1.5, "3", True, None])
def test_surge_must_be_a_whole_number(surge):
    with pytest.raises(PlanError, match=r"^surge: .* is not allowed; use a whole number >= 0"):
        gs.surged_sizes(_sizes(1, 3, 2), surge)


def test_an_inconsistent_group_is_refused():
    with pytest.raises(PlanError, match="desired_capacity: 7 is outside the group's min size 1 and max size 6"):
        gs.surged_sizes(_sizes(1, 6, 7), 1)


@pytest.mark.parametrize("value, desired, azs, unavailable, expected", [
    (None, 6, 3, 1, 6),          # EKS: max(2 x AZs, maxUnavailable)
    (None, 40, 2, 10, 10),       # maxUnavailable 10 (the resolved count, 25 % of 40) beats 2 x 2
    ("50%", 5, 3, 1, 3),         # percentages round up
    (0, 5, 3, 1, 0),
    ("0%", 5, 3, 1, 0),
    (7, 5, 3, 1, 7),
])
def test_resolve_surge(value, desired, azs, unavailable, expected):
    assert gs.resolve_surge(value, desired, azs, unavailable) == expected


@pytest.mark.parametrize("value", ["abc", -1, "-1", "150%", 1.5, True, "3 nodes"])
def test_surge_syntax_is_checked_before_reading_the_group(value):
    with pytest.raises(PlanError, match=r"^surge: "):
        gs.check_surge_syntax(value)


# ---- restore ----------------------------------------------------------------------------------------------------

@given(low=st.integers(0, 50), head=st.integers(0, 50), extra=st.integers(0, 50), surge=st.integers(0, 60),
       paid=st.integers(0, 60))
def test_restore_never_scales_in_and_refuses_while_surge_is_owed(low, head, extra, surge, paid):
    original = _sizes(low, low + head + extra, low + head)
    state, surged = _state_after_surge(original, surge)
    paid = min(paid, surge)
    state["surge_owed"] = surge - paid  # instance_terminate with decrement paid part of the surge back
    current = _sizes(surged["min_size"], surged["max_size"], surged["desired_capacity"] - paid)
    restored = gs.restore_sizes(state, current)
    assert restored["desired_capacity"] == current["desired_capacity"]   # never lowered: the group would pick
    assert restored["owed"] == surge - paid
    if paid == surge:   # paid back in full: exactly the original sizes
        assert {key: restored[key] for key in ("min_size", "max_size", "desired_capacity")} == original
        assert restored["autoscaler_moved"] is False and restored["autoscaler_delta"] == 0


@given(low=st.integers(0, 20), head=st.integers(0, 20), extra=st.integers(0, 20), surge=st.integers(0, 30),
       delta=st.integers(-40, 40))
def test_restore_after_an_autoscaler_moved_desired_leaves_its_change(low, head, extra, surge, delta):
    assume(delta != 0)
    original = _sizes(low, low + head + extra, low + head)
    state, surged = _state_after_surge(original, surge)
    state["surge_owed"] = 0   # paid back
    desired = original["desired_capacity"] + delta
    assume(low <= desired <= surged["max_size"])  # an autoscaler stays within the group's bounds
    restored = gs.restore_sizes(state, _sizes(low, surged["max_size"], desired))
    assert restored["autoscaler_moved"] is True and restored["autoscaler_delta"] == delta
    assert restored["desired_capacity"] == desired and restored["owed"] == 0
    assert restored["max_size"] == max(original["max_size"], desired)
    assert restored["min_size"] == low


def test_the_surge_owed_counts_only_the_rollouts_own_decrements():
    state = _state_after_surge(_sizes(2, 8, 6), 3)[0]   # 2/11/9, owed 3
    group = dict(_sizes(2, 11, 9), members=["i-1", "i-2"])
    assert gs.surge_owed_now(state, group) == 3
    # announced, then made: the instance left the group, the decrement was ours (a run killed before its next write)
    paying = dict(state, paying="i-9")
    assert gs.surge_owed_now(paying, dict(group, desired_capacity=8)) == 2
    # announced, not made: the instance is still a member
    assert gs.surge_owed_now(paying, dict(group, members=["i-1", "i-9"])) == 3
    # another actor's decrement (a cluster-autoscaler's scale-in) is its own decision: the surge is still owed, and the
    # group ends one below its original size, as that actor wanted
    assert gs.surge_owed_now(state, dict(group, desired_capacity=8)) == 3
    # ... never more than desired stands above the minimum size, which no decrement may cross
    assert gs.surge_owed_now(state, dict(group, desired_capacity=4)) == 2
    # an autoscaler's scale-out is not ours to take back
    assert gs.surge_owed_now(state, dict(group, desired_capacity=11)) == 3
    assert gs.surge_owed_now(None, group) == 0


def test_sizes_of_lists_the_members_that_are_not_leaving():
    group = {"MinSize": 1, "MaxSize": 4, "DesiredCapacity": 2, "Instances": [
        {"InstanceId": "i-1", "LifecycleState": "InService"}, {"InstanceId": "i-2", "LifecycleState": "Terminating:Wait"},
        {"InstanceId": "i-3", "LifecycleState": "Standby"}, {"InstanceId": "i-4", "LifecycleState": "Detaching"}]}
    assert gs.sizes_of(group) == {"min_size": 1, "max_size": 4, "desired_capacity": 2, "members": ["i-1", "i-3"]}


def test_restore_after_detach_only_resets_processes_and_tags():
    state = _state_after_surge(_sizes(3, 3, 3), 2, method="detach")[0]
    restored = gs.restore_sizes(state, _sizes(3, 3, 3))
    assert (restored["max_size"], restored["desired_capacity"], restored["autoscaler_moved"], restored["owed"]) == (3, 3, False, 0)


def _instance(instance_id, az, launch_time, node=True, state="InService"):
    return {"instance_id": instance_id, "az": az, "launch_time": launch_time, "lifecycle_state": state,
            "node": {"name": "node-" + instance_id} if node else None}


def test_payback_drains_from_the_fullest_az_newest_first_and_only_nodes_in_service():
    instances = [_instance("i-1", "a", "2024-01-01T00:00:01Z"), _instance("i-2", "a", "2024-01-01T00:00:02Z"),
                 _instance("i-3", "a", "2024-01-01T00:00:03Z"), _instance("i-4", "b", "2024-01-01T00:00:04Z"),
                 _instance("i-5", "b", "2024-01-01T00:00:05Z"), _instance("i-6", "c", "2024-01-01T00:00:06Z", node=False),
                 _instance("i-7", "c", "2024-01-01T00:00:07Z", state="Pending")]
    ids = [instance["instance_id"] for instance in instances]
    chosen = gs.payback_choice(instances, ids, 3)
    assert [entry["instance_id"] for entry in chosen] == ["i-3", "i-2", "i-5"]   # a ties with b after one: the first AZ by name
    assert chosen[0] == {"instance_id": "i-3", "az": "a", "node": "node-i-3"}
    assert gs.payback_choice(instances, ids, 0) == []
    assert len(gs.payback_choice(instances, ids, 10)) == 5    # never an instance without a node or not in service
    assert gs.payback_choice(instances, ["i-1"], 2) == [{"instance_id": "i-1", "az": "a", "node": "node-i-1"}]


def test_a_surge_inside_the_headroom_is_detected_by_desired():
    state, surged = _state_after_surge(_sizes(1, 10, 4), 3, limit=10)
    assert surged["max_size"] == 10
    assert not gs.surge_applied(state, _sizes(1, 10, 4))
    assert gs.surge_applied(state, _sizes(1, 10, 7))


def test_detach_and_zero_surges_are_always_applied():
    state = _state_after_surge(_sizes(3, 3, 3), 2, method="detach")[0]
    assert gs.surge_applied(state, _sizes(3, 3, 3))
    state = _state_after_surge(_sizes(3, 3, 3), 0)[0]
    assert gs.surge_applied(state, _sizes(3, 3, 3))


# ---- decrement --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    (True, 3), (False, 0), (None, 0), (0, 0), (2, 2), (3, 3), ("2", 2), ("1", 1), ("0", 0), ("yes", 3), ("false", 0),
    ("owed", gs.DECREMENT_OWED), (" Owed ", gs.DECREMENT_OWED),
])
def test_decrement_count(value, expected):
    assert gs.decrement_count(value, 3) == expected


@pytest.mark.parametrize("value", [-1, 4, "abc", "-1", 1.5, [1], "4"])
def test_decrement_count_refuses_with_the_field_and_range(value):
    with pytest.raises(PlanError) as error:
        gs.decrement_count(value, 3)
    assert str(error.value) == ("decrement_desired_capacity: %r is not allowed; use true, false, owed or a whole number between 0 and "
                                "3 (the number of instance_ids)" % (value,))


def test_check_decrement_refuses_going_below_min_or_the_owed_surge():
    with pytest.raises(PlanError, match="below its min size 6; decrement at most 0"):
        gs.check_decrement(_sizes(6, 6, 6), 1, None, "workers")
    state = {"rollout_id": "r-1", "method": "scale", "surge_owed": 1, "original_desired_capacity": 6}
    with pytest.raises(PlanError, match=r"more than the surge still owed \(1\) by rollout r-1"):
        gs.check_decrement(_sizes(3, 12, 9), 2, state, "workers")
    gs.check_decrement(_sizes(3, 12, 9), 1, state, "workers")
    gs.check_decrement(_sizes(6, 6, 6), 0, state, "workers")
    # the counter says 1, but the decrement announced (paying) happened: nothing is owed
    with pytest.raises(PlanError, match=r"more than the surge still owed \(0\)"):
        gs.check_decrement(dict(_sizes(3, 12, 8), members=["i-1"]), 1, dict(state, paying="i-9"), "workers")


# ---- detach and settle ------------------------------------------------------------------------------------------

def _outdated(instance_id, az, minute):
    return {"instance_id": instance_id, "az": az, "launch_time": "2024-05-01T12:%02d:00Z" % minute,
            "lifecycle_state": "InService"}


def test_detach_candidates_spread_over_azs_oldest_first():
    outdated = [_outdated("i-a1", "a", 1), _outdated("i-a2", "a", 0), _outdated("i-b1", "b", 5), _outdated("i-c1", "c", 9)]
    assert [item["instance_id"] for item in gs.detach_candidates(outdated, 3)] == ["i-a2", "i-b1", "i-c1"]
    assert len(gs.detach_candidates(outdated, 10)) == 4
    assert gs.detach_candidates(outdated, 0) == []
    assert gs.detach_candidates([], 3) == []


def test_group_settled():
    def instances(*states):
        return [{"LifecycleState": state} for state in states]

    assert gs.group_settled(instances("InService", "InService"), 2)
    assert not gs.group_settled(instances("InService", "Pending"), 2)
    assert not gs.group_settled(instances("InService", "InService", "Pending:Wait"), 2)
    assert not gs.group_settled(instances("InService"), 2)
    assert gs.group_settled([], 0)
    # neither part of the desired capacity nor ever to be waited for: Standby, and instances on their way out (a
    # termination lifecycle hook holds one in Terminating:Wait for up to hours)
    assert gs.group_settled(instances("InService", "InService", "Standby"), 2)
    assert gs.group_settled(instances("InService", "InService", "Terminating:Wait", "Terminating"), 2)


# ---------------------------------------------------------------------------------------------------------
# max_unavailable_count
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, group, expected", [
    (None, 10, 1),          # EKS default
    (3, 10, 3),
    ("3", 10, 3),
    (50, 10, 50),           # larger than the group: allowed, means everything
    (150, 500, 100),        # EKS quota
    ("25%", 10, 2),         # 2.5 rounds down
    ("10%", 5, 1),          # 0.5 rounds down to 0, at least 1
    ("100%", 1000, 100),    # quota
    ("33%", 3, 1),          # 0.99 -> 0 -> 1
    ("34%", 3, 1),          # 1.02 -> 1
    ("50%", 0, 1),          # empty group: still 1
    ("100%", 7, 7),
])
def test_max_unavailable_count(value, group, expected):
    assert max_unavailable_count(value, group) == expected


@given(st.integers(min_value=1, max_value=100), st.integers(min_value=0, max_value=5000))
def test_max_unavailable_percent_rounds_down_at_least_one_at_most_quota(percent, group):
    count = max_unavailable_count("%d%%" % percent, group)
    exact = Fraction(percent * group, 100)
    assert 1 <= count <= 100
    if count == 1:
        assert exact < 2
    elif count == 100:
        assert exact >= 100
    else:
        assert count <= exact < count + 1  # rounded down, never up


@given(st.integers(min_value=1, max_value=10 ** 5), st.integers(min_value=0, max_value=1000))
def test_max_unavailable_integer_is_kept_up_to_the_quota(number, group):
    assert max_unavailable_count(number, group) == min(number, 100)


def test_max_unavailable_bad_input_names_the_field():
    assert_plan_error(lambda: max_unavailable_count("150%", 10), "max_unavailable", "'150%'")
    assert_plan_error(lambda: max_unavailable_count(0, 10, field="rolling_update_max_unavailable"),
                      "rolling_update_max_unavailable")
    assert_plan_error(lambda: max_unavailable_count(1, -1), "group_size", "integer >= 0")


# ---------------------------------------------------------------------------------------------------------
# surge_count
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, azs, unavailable, group, expected", [
    (None, 5, 1, 20, 10),    # EKS doc: five AZs, maxUnavailable 1 -> up to 10
    (None, 5, 20, 40, 20),   # EKS doc: maxUnavailable 20 -> 20
    (None, 3, 1, 6, 6),
    (None, 0, 4, 0, 4),
    (0, 3, 1, 6, 0),         # no surge
    ("0", 3, 1, 6, 0),
    ("0%", 3, 1, 6, 0),
    (4, 3, 1, 6, 4),
    ("10%", 3, 1, 15, 2),    # 1.5 rounds up
    ("1%", 3, 1, 1, 1),      # 0.01 rounds up
    ("34%", 1, 1, 3, 2),     # 1.02 rounds up
    ("100%", 1, 1, 30, 30),
])
def test_surge_count(value, azs, unavailable, group, expected):
    assert surge_count(value, azs, unavailable, group) == expected


@given(st.integers(min_value=1, max_value=100), st.integers(min_value=0, max_value=5000))
def test_surge_percent_rounds_up(percent, group):
    count = surge_count("%d%%" % percent, 3, 1, group)
    exact = Fraction(percent * group, 100)
    assert count - 1 < exact <= count


@given(st.integers(min_value=0, max_value=50), st.integers(min_value=1, max_value=100))
def test_surge_default_is_the_eks_rule(azs, unavailable):
    count = surge_count(None, azs, unavailable, 10)
    assert count >= 2 * azs and count >= unavailable and count in (2 * azs, unavailable)


@pytest.mark.parametrize("value", [-1, "abc", "101%", True, 2.5, "-1"])
def test_surge_bad_input_names_the_field(value):
    assert_plan_error(lambda: surge_count(value, 3, 1, 6), "max_surge", "use an integer >= 0")
    assert_plan_error(lambda: surge_count(value, 3, 1, 6, field="rolling_update_max_surge"),
                      "rolling_update_max_surge")


def test_surge_other_inputs_are_checked():
    assert_plan_error(lambda: surge_count(None, -1, 1, 6), "az_count")


@given(st.integers(min_value=0, max_value=1000), st.integers(min_value=0, max_value=1000),
       st.integers(min_value=0, max_value=200), st.one_of(st.none(), st.integers(min_value=0, max_value=1500)))
def test_surged_sizes_properties(original_max, desired, surge, limit):
    assume(desired <= original_max)
    try:
        sizes = gs.surged_sizes(_sizes(0, original_max, desired), surge, limit)
    except PlanError as error:
        assert limit is not None and desired + surge > limit
        assert "need a maximum size of %d" % (desired + surge) in str(error)
        return
    assert sizes["desired_capacity"] == desired + surge
    assert sizes["desired_capacity"] <= sizes["max_size"] == sizes["surged_max_size"]
    assert sizes["max_size"] >= original_max  # the maximum is never lowered
    if limit is None:
        assert sizes["max_size"] == original_max + surge
    else:
        assert sizes["max_size"] <= max(limit, original_max)


def test_a_group_s_counts_are_resolved_against_its_size_before_the_rollout():
    """The base of max_unavailable's percentage and of the floor: the desired capacity the rollout recorded before its
    surge, else the group's desired capacity now."""
    state, surged = _state_after_surge(_sizes(3, 6, 4), 4)
    assert gs.base_size(state, surged["desired_capacity"]) == 4 and gs.base_size(None, 8) == 8
    assert max_unavailable_count("50%", gs.base_size(state, surged["desired_capacity"])) == 2
