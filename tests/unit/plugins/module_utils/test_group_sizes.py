# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Group sizes during a rollout: surge, pay back, restore (with the cluster-autoscaler rule), and the decrement option."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ansible_collections.nodeops.rollout.plugins.module_utils import group_sizes as gs
from ansible_collections.nodeops.rollout.plugins.module_utils.plan import PlanError


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
    (None, 6, 3, None, 6),          # EKS: max(2 x AZs, maxUnavailable)
    (None, 40, 2, "25%", 10),       # maxUnavailable 10 beats 2 x 2
    ("50%", 5, 3, None, 3),         # percentages round up
    (0, 5, 3, None, 0),
    ("0%", 5, 3, None, 0),
    (7, 5, 3, None, 7),
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
def test_restore_without_interference_gives_the_exact_original_sizes(low, head, extra, surge, paid):
    original = _sizes(low, low + head + extra, low + head)
    state, surged = _state_after_surge(original, surge)
    paid = min(paid, surge)
    state["surge_owed"] = surge - paid  # instance_terminate with decrement paid part of the surge back
    current = _sizes(surged["min_size"], surged["max_size"], surged["desired_capacity"] - paid)
    restored = gs.restore_sizes(state, current)
    assert {key: restored[key] for key in ("min_size", "max_size", "desired_capacity")} == original
    assert restored["autoscaler_moved"] is False and restored["autoscaler_delta"] == 0
    assert restored["scale_in"] == surge - paid


@given(low=st.integers(0, 20), head=st.integers(0, 20), extra=st.integers(0, 20), surge=st.integers(0, 30),
       paid=st.integers(0, 30), delta=st.integers(-40, 40))
def test_restore_after_an_autoscaler_moved_desired_takes_back_only_the_rollouts_surge(low, head, extra, surge, paid, delta):
    assume(delta != 0)
    original = _sizes(low, low + head + extra, low + head)
    state, surged = _state_after_surge(original, surge)
    paid = min(paid, surge)
    state["surge_owed"] = surge - paid
    desired = surged["desired_capacity"] - paid + delta
    assume(low <= desired <= surged["max_size"])  # an autoscaler stays within the group's bounds
    restored = gs.restore_sizes(state, _sizes(low, surged["max_size"], desired))
    assert restored["autoscaler_moved"] is True
    assert restored["desired_capacity"] == max(low, original["desired_capacity"] + delta)
    assert restored["max_size"] == max(original["max_size"], restored["desired_capacity"])
    assert restored["min_size"] == low
    assert restored["desired_capacity"] <= desired  # a restore never adds instances


def test_restore_an_autoscaler_scale_up_keeps_its_nodes_and_room_for_them():
    state = _state_after_surge(_sizes(2, 8, 6), 3)[0]   # 2/11/9
    state["surge_owed"] = 1                            # two paid back: desired 7
    restored = gs.restore_sizes(state, _sizes(2, 11, 10))  # the autoscaler added 3
    assert restored["desired_capacity"] == 9 and restored["max_size"] == 9
    assert restored["autoscaler_delta"] == 3 and restored["scale_in"] == 1


def test_restore_after_detach_only_resets_processes_and_tags():
    state = _state_after_surge(_sizes(3, 3, 3), 2, method="detach")[0]
    restored = gs.restore_sizes(state, _sizes(3, 3, 3))
    assert (restored["max_size"], restored["desired_capacity"], restored["autoscaler_moved"]) == (3, 3, False)


def test_an_interrupted_restore_keeps_the_sizes_it_chose():
    state = _state_after_surge(_sizes(2, 8, 6), 3)[0]
    state["restore_sizes"] = _sizes(2, 8, 7)
    # The first run already set desired 7; recomputing would take the owed surge back a second time.
    restored = gs.restore_sizes(state, _sizes(2, 8, 7))
    assert (restored["max_size"], restored["desired_capacity"], restored["scale_in"]) == (8, 7, 0)


def test_restore_never_goes_below_a_minimum_raised_meanwhile():
    state = _state_after_surge(_sizes(2, 8, 4), 2)[0]
    restored = gs.restore_sizes(state, _sizes(5, 10, 6))
    assert restored["min_size"] == 5 and restored["desired_capacity"] == 5


# ---- resuming a surge -------------------------------------------------------------------------------------------

def test_a_recorded_surge_not_yet_applied_is_detected_and_completed():
    original = _sizes(3, 6, 6)
    state, surged = _state_after_surge(original, 4)
    assert not gs.surge_applied(state, original)
    resumed = gs.resume_sizes(state, original)
    assert (resumed["max_size"], resumed["desired_capacity"]) == (surged["max_size"], surged["desired_capacity"])
    assert gs.surge_applied(state, _sizes(3, 10, 10))
    # Paid back partly: still applied (the maximum is the marker).
    assert gs.surge_applied(state, _sizes(3, 10, 7))


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
])
def test_decrement_count(value, expected):
    assert gs.decrement_count(value, 3) == expected


@pytest.mark.parametrize("value", [-1, 4, "abc", "-1", 1.5, [1], "4"])
def test_decrement_count_refuses_with_the_field_and_range(value):
    with pytest.raises(PlanError) as error:
        gs.decrement_count(value, 3)
    assert str(error.value) == ("decrement_desired_capacity: %r is not allowed; use true, false or a whole number between 0 and 3 "
                                "(the number of instance_ids)" % (value,))


@given(st.lists(st.sampled_from(["i-a", "i-b", "i-c", "i-d", "i-e"]), unique=True, max_size=5),
       st.sets(st.sampled_from(["i-a", "i-b", "i-c", "i-d", "i-e"])), st.integers(0, 5))
def test_choose_decrements_takes_members_in_listed_order(ids, members, count):
    chosen = gs.choose_decrements(ids, members, count)
    assert len(chosen) <= count and set(chosen) <= members
    assert chosen == [instance_id for instance_id in ids if instance_id in members][:count]


def test_check_decrement_refuses_going_below_min_or_the_owed_surge():
    with pytest.raises(PlanError, match="below its min size 6; decrement at most 0"):
        gs.check_decrement(_sizes(6, 6, 6), 1, None, "workers")
    state = {"rollout_id": "r-1", "method": "scale", "surge_owed": 1}
    with pytest.raises(PlanError, match=r"more than the surge still owed \(1\) by rollout r-1"):
        gs.check_decrement(_sizes(3, 12, 9), 2, state, "workers")
    gs.check_decrement(_sizes(3, 12, 9), 1, state, "workers")
    gs.check_decrement(_sizes(6, 6, 6), 0, state, "workers")


def test_owed_after():
    assert gs.owed_after({"surge_owed": 3}, 2) == 1
    assert gs.owed_after({"surge_owed": 1}, 2) == 0


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
    assert not gs.group_settled(instances("InService", "InService", "Terminating"), 2)
    assert not gs.group_settled(instances("InService"), 2)
    assert gs.group_settled([], 0)
