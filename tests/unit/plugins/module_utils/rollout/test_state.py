# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The rollout state kept in two group tags: what is written reads back, fits AWS's limits, damaged values are named,
and a rollout recorded by the previous release (one tag per field) is read and carried over."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.nodeops.rollout.plugins.module_utils.core.choices import METHODS
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import state as rs

ALL_PROCESSES = ["AZRebalance", "AddToLoadBalancer", "AlarmNotification", "HealthCheck", "InstanceRefresh",
                 "ReplaceUnhealthy", "ScheduledActions"]


def _state(**overrides):
    state = {
        "rollout_id": "r-20240501T120000Z-1a2b3c", "method": "scale", "original_min_size": 3, "original_max_size": 6,
        "original_desired_capacity": 4, "surge": 6, "surge_owed": 6, "surged_max_size": 12,
        "target_launch_template": "lt-0123456789abcdef0", "target_version": 5, "previous_version": None,
        "suspended_processes": ["AZRebalance"], "started_at": "2024-05-01T12:00:00Z", "restore_sizes": None, "paying": None,
    }
    state.update(overrides)
    return state


def _legacy(state):
    """The tags the previous release wrote for ``state``."""
    tags = {
        "nodeops.rollout/rollout-id": state["rollout_id"], "nodeops.rollout/method": state["method"],
        "nodeops.rollout/original-min": str(state["original_min_size"]),
        "nodeops.rollout/original-max": str(state["original_max_size"]),
        "nodeops.rollout/original-desired": str(state["original_desired_capacity"]),
        "nodeops.rollout/surge": str(state["surge"]), "nodeops.rollout/surge-owed": str(state["surge_owed"]),
        "nodeops.rollout/suspended-processes": ",".join(state["suspended_processes"]),
        "nodeops.rollout/surged-max": str(state["surged_max_size"]),
        "nodeops.rollout/target-launch-template": state["target_launch_template"],
        "nodeops.rollout/target-version": str(state["target_version"]),
        "nodeops.rollout/started-at": state["started_at"],
    }
    if state["restore_sizes"]:
        tags["nodeops.rollout/restore-sizes"] = "%(min_size)d,%(max_size)d,%(desired_capacity)d" % state["restore_sizes"]
    return tags


def test_no_state_tag_means_no_rollout():
    assert rs.parse_state({"eks:nodegroup-name": "workers", "nodeops.rollout/other": "3"}, "workers") is None


def test_the_state_takes_two_tags_each_a_versioned_record():
    tags = rs.state_tags(_state())
    assert sorted(tags) == ["nodeops.rollout/progress", "nodeops.rollout/state"]
    assert tags[rs.TAG_STATE] == ("v2 id=r-20240501T120000Z-1a2b3c m=scale min=3 max=6 desired=4 surge=6 smax=12 "
                                  "lt=lt-0123456789abcdef0 ver=5 at=2024-05-01T12:00:00Z")
    assert tags[rs.TAG_PROGRESS] == "v2 owed=6 sp=AZRebalance"
    restoring = rs.state_tags(_state(restore_sizes={"min_size": 3, "max_size": 6, "desired_capacity": 4}, suspended_processes=[]))
    assert restoring[rs.TAG_PROGRESS] == "v2 owed=6 restore=3/6/4"
    paying = rs.state_tags(_state(paying="i-0123456789abcdef0"))
    assert paying[rs.TAG_PROGRESS] == "v2 owed=6 sp=AZRebalance paying=i-0123456789abcdef0"
    assert rs.parse_state(paying, "workers")["paying"] == "i-0123456789abcdef0"


def test_the_largest_state_fits_aws_tag_values_with_room_to_spare():
    largest = _state(rollout_id="r" * 64, method="detach", paying="i-0123456789abcdef0", original_min_size=999999, original_max_size=999999,
                     original_desired_capacity=999999, surge=999999, surge_owed=999999, surged_max_size=999999,
                     target_launch_template="lt-0123456789abcdef0", target_version=999999, previous_version=999998,
                     suspended_processes=ALL_PROCESSES,
                     restore_sizes={"min_size": 999999, "max_size": 999999, "desired_capacity": 999999})
    tags = rs.state_tags(largest)
    # room left in the state tag for another field or two (a previous template takes about 25)
    assert len(tags[rs.TAG_STATE]) <= rs.MAX_VALUE_LENGTH - 25
    assert len(tags[rs.TAG_PROGRESS]) <= rs.MAX_VALUE_LENGTH - 40
    assert rs.parse_state(tags, "workers") == largest


def test_only_characters_every_aws_service_takes_in_tags():
    tags = rs.state_tags(_state(suspended_processes=["AZRebalance", "ScheduledActions"],
                                restore_sizes={"min_size": 1, "max_size": 2, "desired_capacity": 3}))
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 +-=._:/@")
    assert tags
    for value in tags.values():
        assert set(value) <= allowed, value


@given(
    rollout_id=st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:-]{0,63}\Z"),
    method=st.sampled_from(METHODS),
    sizes=st.tuples(st.integers(0, 500), st.integers(0, 500)).map(sorted),
    desired=st.integers(0, 500), surge=st.integers(0, 200), owed=st.integers(0, 200),
    version=st.one_of(st.none(), st.integers(1, 10 ** 6)),
    previous=st.one_of(st.none(), st.integers(1, 10 ** 6)),
    template=st.one_of(st.none(), st.just("lt-0123456789abcdef0")),
    surged_max=st.one_of(st.none(), st.integers(0, 1000)),
    started=st.one_of(st.none(), st.just("2026-11-21T14:48:13Z")),
    processes=st.lists(st.sampled_from(ALL_PROCESSES), unique=True),
    restore=st.one_of(st.none(), st.tuples(st.integers(0, 99), st.integers(0, 99), st.integers(0, 99))),
)
def test_what_is_written_reads_back_the_same(rollout_id, method, sizes, desired, surge, owed, version, previous, template, surged_max,
                                             started, processes, restore):
    state = _state(rollout_id=rollout_id, method=method, original_min_size=sizes[0], original_max_size=sizes[1],
                   original_desired_capacity=desired, surge=surge, surge_owed=owed, target_version=version,
                   previous_version=previous,
                   target_launch_template=template, surged_max_size=surged_max, started_at=started,
                   suspended_processes=processes,
                   restore_sizes=dict(zip(("min_size", "max_size", "desired_capacity"), restore)) if restore else None)
    tags = rs.state_tags(state)
    assert tags and all(len(value) <= rs.MAX_VALUE_LENGTH for value in tags.values())
    assert rs.parse_state(tags, "workers") == state


@pytest.mark.parametrize("tag, old, new, words", [
    (rs.TAG_STATE, "max=6", "max=six", "field max of tag nodeops.rollout/state is 'six', not a whole number"),
    (rs.TAG_PROGRESS, "owed=6", "owed=-1", "field owed of tag nodeops.rollout/progress is '-1', not a whole number"),
    (rs.TAG_STATE, "m=scale", "m=rolling", "not one of scale, detach"),
    (rs.TAG_STATE, "id=r-20240501T120000Z-1a2b3c", "id=-bad", "not a rollout id"),
    (rs.TAG_STATE, "at=2024-05-01T12:00:00Z", "at=yesterday", "not a UTC time"),
    (rs.TAG_PROGRESS, "sp=AZRebalance", "sp=AZRebalance;Launch", "list of scaling process names"),
    (rs.TAG_STATE, "min=3", "min=9", "original minimum size 9 is above the original maximum size 6"),
    (rs.TAG_STATE, "v2 ", "v3 ", "format v3, written by another release of nodeops.rollout; this one reads v2"),
    (rs.TAG_STATE, "v2 ", "", "not a v2 record"),
    (rs.TAG_STATE, "smax=12", "smax=12 next=4", "its field 'next' is not one this release knows"),
    (rs.TAG_STATE, "smax=12", "smax=12 smax=13", "'smax=13' is not one key=value field"),
    (rs.TAG_STATE, "smax=12", "smax", "'smax' is not one key=value field"),
])
def test_damaged_values_are_named_with_their_text(tag, old, new, words):
    tags = rs.state_tags(_state())
    assert old in tags[tag]
    tags[tag] = tags[tag].replace(old, new, 1)
    with pytest.raises(rs.StateError) as error:
        rs.parse_state(tags, "workers")
    message = str(error.value)
    assert message.startswith("Auto Scaling group 'workers': ")
    assert words in message
    assert "nodeops.rollout/*" in message


@pytest.mark.parametrize("drop, missing", [
    ("desired=4", "field desired of tag nodeops.rollout/state is missing"),
    ("owed=6", "field owed of tag nodeops.rollout/progress is missing"),
])
def test_a_missing_required_field_is_an_incomplete_rollout(drop, missing):
    tags = rs.state_tags(_state())
    tag = rs.TAG_STATE if drop in tags[rs.TAG_STATE] else rs.TAG_PROGRESS
    tags[tag] = tags[tag].replace(" " + drop, "")
    with pytest.raises(rs.StateError, match=missing + " although a rollout is recorded"):
        rs.parse_state(tags, "workers")


def test_one_tag_without_the_other_is_an_incomplete_rollout():
    tags = rs.state_tags(_state())
    del tags[rs.TAG_PROGRESS]
    with pytest.raises(rs.StateError, match="tag nodeops.rollout/progress is missing"):
        rs.parse_state(tags, "workers")


def test_optional_fields_may_be_absent():
    state = rs.parse_state({rs.TAG_STATE: "v2 id=r-1 m=scale min=3 max=6 desired=3 surge=3", rs.TAG_PROGRESS: "v2 owed=3"}, "workers")
    assert state["surged_max_size"] is None and state["target_version"] is None and state["target_launch_template"] is None
    assert state["suspended_processes"] == [] and state["restore_sizes"] is None and state["started_at"] is None


def test_a_value_that_would_not_fit_is_refused_before_anything_is_written():
    with pytest.raises(rs.StateError, match="has no surge_owed"):
        rs.state_tags(_state(surge_owed=None))
    with pytest.raises(rs.StateError, match="rollout_id is 'has space', not a rollout id"):
        rs.state_tags(_state(rollout_id="has space"))


# ---- the previous release's format ----------------------------------------------------------------------------

def test_a_rollout_recorded_by_the_previous_release_is_read_as_it_was():
    state = _state(restore_sizes={"min_size": 3, "max_size": 6, "desired_capacity": 4},
                   suspended_processes=["AZRebalance", "ScheduledActions"])
    assert rs.parse_state(_legacy(state), "workers") == state
    bare = {"nodeops.rollout/rollout-id": "r-old", "nodeops.rollout/original-min": "3", "nodeops.rollout/original-max": "6",
            "nodeops.rollout/original-desired": "3", "nodeops.rollout/surge": "3", "nodeops.rollout/surge-owed": "2",
            "nodeops.rollout/suspended-processes": ""}
    read = rs.parse_state(bare, "workers")
    assert read["method"] == "scale" and read["surge_owed"] == 2 and read["suspended_processes"] == []
    assert read["target_version"] is None


@pytest.mark.parametrize("tag, value, words", [
    ("nodeops.rollout/original-max", "six", "tag nodeops.rollout/original-max is 'six', not a whole number"),
    ("nodeops.rollout/restore-sizes", "3,6", "not 'min,max,desired' whole numbers"),
    ("nodeops.rollout/suspended-processes", "AZRebalance;Launch", "comma-separated"),
])
def test_damaged_previous_format_tags_are_named(tag, value, words):
    tags = _legacy(_state())
    tags[tag] = value
    with pytest.raises(rs.StateError, match=words):
        rs.parse_state(tags, "workers")


def test_the_next_write_moves_a_previous_format_rollout_to_the_two_tags():
    tags = dict(_legacy(_state()), **{"eks:nodegroup-name": "workers"})
    updated = _state(surge_owed=5)
    write, delete = rs.state_writes(updated, tags)
    assert write == rs.state_tags(updated)
    assert set(delete) == set(key for key in tags if key != "eks:nodegroup-name")
    after = rs.after_writes(tags, write, delete)
    assert sorted(after) == ["eks:nodegroup-name", rs.TAG_PROGRESS, rs.TAG_STATE]
    assert rs.parse_state(after, "workers") == updated
    # the current format is written as it is
    assert rs.state_writes(updated, after) == (rs.state_tags(updated), [])


def test_without_room_for_two_more_tags_a_previous_format_rollout_keeps_its_format():
    tags = dict(_legacy(_state()), **{"user-%d" % index: "x" for index in range(37)})
    assert len(tags) == 49
    updated = _state(surge_owed=2)
    write, delete = rs.state_writes(updated, tags)
    assert delete == [] and write["nodeops.rollout/surge-owed"] == "2" and rs.TAG_STATE not in write
    assert rs.parse_state(rs.after_writes(tags, write, delete), "workers") == updated


def test_both_formats_present_the_current_one_is_read():
    # a run stopped between writing the two tags and deleting the old ones
    tags = dict(_legacy(_state()), **rs.state_tags(_state(surge_owed=1)))
    assert rs.parse_state(tags, "workers")["surge_owed"] == 1
    assert set(rs.recorded_tags(dict(tags, other="x"))) == set(tags)


# ---- the 50-tag limit -----------------------------------------------------------------------------------------

def test_a_group_needs_room_for_the_two_state_tags_and_a_pause_request():
    tags = {"user-%d" % index: "x" for index in range(47)}
    assert rs.tag_room_refusal(tags, "workers") is None
    tags["aws:cloudformation:stack-name"] = "not counted by AWS"
    assert rs.tag_room_refusal(tags, "workers") is None
    tags["one-more"] = "x"
    assert rs.tag_room_refusal(tags, "workers") == (
        "Auto Scaling group 'workers' has 48 tags; a rollout records its state in 2 more (nodeops.rollout/state, "
        "nodeops.rollout/progress), keeps room for a pause request (nodeops.rollout/pause), and a group takes at most 50: "
        "remove 1 of its tags and run again")
    # its own state tags are no obstacle: a rollout recorded already takes them
    assert rs.tag_room_refusal(dict({"user-%d" % index: "x" for index in range(47)}, **rs.state_tags(_state())), "workers") is None
    # a pause request set already has its room
    assert rs.tag_room_refusal(dict({"user-%d" % index: "x" for index in range(47)}, **{rs.TAG_PAUSE: "true"}), "workers") is None


def test_an_instance_to_detach_needs_room_for_the_two_detach_tags():
    tags = {"user-%d" % index: "x" for index in range(48)}
    tags["aws:autoscaling:groupName"] = "workers"
    assert rs.detach_room_refusal("i-0abc", tags) is None
    tags["one-more"] = "x"
    refusal = rs.detach_room_refusal("i-0abc", tags)
    assert refusal.startswith("instance i-0abc has 49 tags; detaching it for surge tags it with 2 more")
    assert "remove 1 of its tags, or use the surge method scale" in refusal


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


def test_the_state_tag_records_the_version_the_group_launched_before():
    assert rs.state_tags(_state(previous_version=4))[rs.TAG_STATE].endswith("ver=5 prev=4 at=2024-05-01T12:00:00Z")
