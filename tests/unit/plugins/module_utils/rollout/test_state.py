# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The rollout state kept in group tags: what is written can be read back, and damaged tags are named."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import state as rs


def _state(**overrides):
    state = {
        "rollout_id": "r-20240501T120000Z-1a2b3c", "method": "scale", "original_min_size": 3, "original_max_size": 6,
        "original_desired_capacity": 4, "surge": 6, "surge_owed": 6, "surged_max_size": 12,
        "target_launch_template": "lt-0123456789abcdef0", "target_version": 5, "suspended_processes": ["AZRebalance"],
        "started_at": "2024-05-01T12:00:00Z", "restore_sizes": None,
    }
    state.update(overrides)
    return state


def test_no_rollout_id_means_no_state():
    assert rs.parse_state({"eks:nodegroup-name": "workers", rs.TAG_SURGE: "3"}, "workers") is None


def test_every_tag_has_the_prefix_and_values_are_short_strings():
    tags = rs.state_tags(_state())
    assert all(key.startswith("nodeops.rollout/") for key in tags)
    assert all(isinstance(value, str) and len(value) <= 64 for value in tags.values())
    assert tags[rs.TAG_SUSPENDED_PROCESSES] == "AZRebalance"
    assert tags[rs.TAG_ORIGINAL_DESIRED] == "4"


@given(
    rollout_id=st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:-]{0,40}\Z"),
    method=st.sampled_from(rs.METHODS),
    sizes=st.tuples(st.integers(0, 500), st.integers(0, 500)).map(sorted),
    desired=st.integers(0, 500), surge=st.integers(0, 200), owed=st.integers(0, 200),
    version=st.one_of(st.none(), st.integers(1, 10 ** 6)),
    processes=st.lists(st.sampled_from(["AZRebalance", "ScheduledActions", "AlarmNotification"]), unique=True),
    restore=st.one_of(st.none(), st.tuples(st.integers(0, 99), st.integers(0, 99), st.integers(0, 99))),
)
def test_what_is_written_reads_back_the_same(rollout_id, method, sizes, desired, surge, owed, version, processes, restore):
    state = _state(rollout_id=rollout_id, method=method, original_min_size=sizes[0], original_max_size=sizes[1],
                   original_desired_capacity=desired, surge=surge, surge_owed=owed, target_version=version,
                   suspended_processes=processes,
                   restore_sizes=dict(zip(("min_size", "max_size", "desired_capacity"), restore)) if restore else None)
    assert rs.parse_state(rs.state_tags(state), "workers") == state


@pytest.mark.parametrize("tag, value, words", [
    (rs.TAG_ORIGINAL_MAX, "six", "not a whole number"),
    (rs.TAG_SURGE_OWED, "-1", "not a whole number"),
    (rs.TAG_METHOD, "rolling", "not one of scale, detach"),
    (rs.TAG_ROLLOUT_ID, "-bad id", "not a rollout id"),
    (rs.TAG_STARTED_AT, "yesterday", "not a UTC time"),
    (rs.TAG_SUSPENDED_PROCESSES, "AZRebalance;Launch", "comma-separated"),
    (rs.TAG_RESTORE_SIZES, "3,6", "min,max,desired"),
    (rs.TAG_ORIGINAL_MIN, "9", "above"),
])
def test_damaged_tags_are_named_with_their_value(tag, value, words):
    tags = rs.state_tags(_state())
    tags[tag] = value
    with pytest.raises(rs.StateError) as error:
        rs.parse_state(tags, "workers")
    message = str(error.value)
    assert message.startswith("Auto Scaling group 'workers': tag %s is %r" % (tag, value))
    assert words in message


def test_a_missing_required_tag_is_an_incomplete_rollout():
    tags = rs.state_tags(_state())
    del tags[rs.TAG_ORIGINAL_DESIRED]
    with pytest.raises(rs.StateError, match="original-desired is missing"):
        rs.parse_state(tags, "workers")


def test_optional_tags_may_be_absent():
    tags = {key: value for key, value in rs.state_tags(_state()).items()
            if key not in (rs.TAG_SURGED_MAX, rs.TAG_TARGET_LAUNCH_TEMPLATE, rs.TAG_TARGET_VERSION, rs.TAG_STARTED_AT,
                           rs.TAG_METHOD, rs.TAG_SUSPENDED_PROCESSES)}
    state = rs.parse_state(tags, "workers")
    assert state["method"] == "scale"
    assert state["surged_max_size"] is None and state["target_version"] is None
    assert state["suspended_processes"] == []


def test_rollout_ids():
    rollout_id = rs.new_rollout_id(datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc), "1a2b3c")
    assert rollout_id == "r-20240501T120000Z-1a2b3c"
    assert rs.valid_rollout_id(rollout_id)
    assert not rs.valid_rollout_id("")
    assert not rs.valid_rollout_id("a" * 65)
    assert not rs.valid_rollout_id("has space")


def test_group_state_reads_describe_output():
    group = {"AutoScalingGroupName": "workers",
             "Tags": [{"Key": key, "Value": value} for key, value in rs.state_tags(_state()).items()]}
    assert rs.group_state(group)["surge_owed"] == 6
