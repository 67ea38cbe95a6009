# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/outdated.py: which instances are outdated for a target, and why."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import (
    launched_version,
    outdated_instances,
    previous_version,
    up_to_date_instances,
)
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import TARGET, assert_plan_error, instance


# ---------------------------------------------------------------------------------------------------------
# Outdated detection
# ---------------------------------------------------------------------------------------------------------

def test_outdated_by_version_template_or_missing_template():
    instances = [instance("i-old", version="4"), instance("i-new", version="5"), instance("i-int", version=5),
                 instance("i-other", template="lt-old", version="5"), instance("i-lc", template=None)]
    outdated = {entry["instance_id"]: entry for entry in outdated_instances(instances, TARGET)}
    assert sorted(outdated) == ["i-lc", "i-old", "i-other"]
    assert "version 4; target version is 5" in outdated["i-old"]["reason"]
    assert "launch template lt-old; target is lt-new" in outdated["i-other"]["reason"]
    assert "not launched from a launch template" in outdated["i-lc"]["reason"]
    assert [entry["instance_id"] for entry in up_to_date_instances(instances, TARGET)] == ["i-new", "i-int"]


def test_outdated_keeps_input_order_and_does_not_mutate_input():
    instances = [instance("i-3"), instance("i-1"), instance("i-2")]
    before = json.dumps(instances, sort_keys=True)
    outdated = outdated_instances(instances, TARGET)
    assert [entry["instance_id"] for entry in outdated] == ["i-3", "i-1", "i-2"]
    assert json.dumps(instances, sort_keys=True) == before
    assert all(entry["reasons"] and entry["reason"] for entry in outdated)


@pytest.mark.parametrize("value, expected", [("true", True), ("True", True), ("yes", True), ("1", True),
                                             ("2024-05-01", True), ("false", False), ("", False), ("0", False),
                                             ("no", False)])
def test_outdated_by_needs_update_annotation(value, expected):
    current = instance("i-1", version="5", annotations={"nodeops.rollout/needs-update": value})
    outdated = outdated_instances([current], TARGET)
    assert bool(outdated) is expected
    if expected:
        assert outdated[0]["reasons"] == ["node node-i-1 is annotated nodeops.rollout/needs-update"]


def test_outdated_by_detached_tag_whatever_the_state_except_gone():
    tags = {"nodeops.rollout/detached": "true"}
    instances = [instance("i-det", version="5", state="Detached", tags=tags),
                 instance("i-det-in", version="5", state="InService", tags=tags),
                 instance("i-det-gone", version="5", state="Terminated", tags=tags),
                 instance("i-det-going", version="5", state="Terminating:Wait", tags=tags)]
    outdated = outdated_instances(instances, TARGET)
    assert [entry["instance_id"] for entry in outdated] == ["i-det", "i-det-in"]
    assert "detached from the group for surge" in outdated[0]["reason"]
    assert up_to_date_instances(instances, TARGET) == []


@pytest.mark.parametrize("state, included", [
    ("InService", True), ("Pending", True), ("Pending:Wait", True), ("Pending:Proceed", True),
    ("Terminating", False), ("Terminating:Wait", False), ("Terminated", False), ("Detaching", False),
    ("Detached", False), ("Standby", False), ("EnteringStandby", False), ("Warmed:Running", False), (None, False),
])
def test_outdated_only_considers_instances_in_the_group(state, included):
    outdated = outdated_instances([instance("i-1", state=state)], TARGET)
    assert bool(outdated) is included


def test_symbolic_version_is_resolved_from_the_ec2_tag_or_the_image():
    by_tag_current = instance("i-a", version="$Latest", tags={"aws:ec2launchtemplate:version": "5"})
    by_tag_old = instance("i-b", version="$Latest", tags={"aws:ec2launchtemplate:version": "4"})
    by_image = instance("i-c", version="$Default", image="ami-new")
    unknown = instance("i-d", version="$Default", image="ami-old")
    target = dict(TARGET, image_id="ami-new")
    outdated = {entry["instance_id"]: entry for entry in outdated_instances([by_tag_current, by_tag_old, by_image, unknown], target)}
    assert sorted(outdated) == ["i-b", "i-d"]
    assert "version 4; target version is 5" in outdated["i-b"]["reason"]
    assert "'$Default', which cannot be compared with target version 5" in outdated["i-d"]["reason"]
    # Without an image in the target an unresolvable version is never assumed current.
    assert [entry["instance_id"] for entry in outdated_instances([by_image], TARGET)] == ["i-c"]


@pytest.mark.parametrize("target, field", [
    ({"launch_template_id": "lt-1", "version": "$Latest"}, "target.version"),
    ({"launch_template_id": "lt-1", "version": "$Default"}, "target.version"),
    ({"launch_template_id": "lt-1", "version": 0}, "target.version"),
    ({"launch_template_id": "lt-1"}, "target.version"),
    ({"launch_template_id": "", "version": 3}, "target.launch_template_id"),
    ({"version": 3}, "target.launch_template_id"),
    ("lt-1", "target"),
])
def test_target_must_be_explicit(target, field):
    assert_plan_error(lambda: outdated_instances([instance("i-1")], target), field, "is not allowed")


def test_instances_are_validated():
    assert_plan_error(lambda: outdated_instances([instance("i-1"), instance("i-1")], TARGET),
                      "instances[1].instance_id", "listed once")
    assert_plan_error(lambda: outdated_instances([{"az": "a"}], TARGET), "instances[0].instance_id")
    assert_plan_error(lambda: outdated_instances("i-1", TARGET), "instances")


@given(st.lists(st.tuples(st.sampled_from(["4", "5", "$Latest", None]), st.sampled_from(["lt-new", "lt-old", None]),
                          st.sampled_from(["InService", "Pending", "Terminating", "Standby"]), st.booleans(), st.booleans()),
                max_size=12))
def test_outdated_and_up_to_date_partition_the_group(specs):
    instances = []
    for index, (version, template, state, needs_update, detached) in enumerate(specs):
        instances.append(instance("i-%02d" % index, version=version, template=template, state=state,
                                  annotations={"nodeops.rollout/needs-update": "true"} if needs_update else None,
                                  tags={"nodeops.rollout/detached": "true"} if detached else None))
    outdated = set(entry["instance_id"] for entry in outdated_instances(instances, TARGET))
    current = set(entry["instance_id"] for entry in up_to_date_instances(instances, TARGET))
    assert not outdated & current
    for item in instances:
        active = item["lifecycle_state"] in ("InService", "Pending")
        if active:
            assert (item["instance_id"] in outdated) != (item["instance_id"] in current)
        else:
            assert item["instance_id"] not in current


# ---------------------------------------------------------------------------------------------------------
# The version a group launched before (what a rollback goes back to)
# ---------------------------------------------------------------------------------------------------------

def test_the_previous_version_is_the_one_most_other_instances_were_launched_from():
    instances = [instance("i-1", version="4"), instance("i-2", version="4"), instance("i-3", version="3"),
                 instance("i-4", version="5"), instance("i-5", version="2", template="lt-other"),
                 instance("i-6", version="7", state="Terminating")]
    assert previous_version(instances, TARGET) == 4


def test_a_symbolic_version_is_read_from_the_ec2_tag_and_a_tie_goes_to_the_newer():
    instances = [instance("i-1", version="$Latest", tags={"aws:ec2launchtemplate:version": "3"}), instance("i-2", version="4")]
    assert launched_version(instances[0]) == "3"
    assert previous_version(instances, TARGET) == 4


def test_no_previous_version_when_every_instance_is_on_the_target():
    assert previous_version([instance("i-1", version="5")], TARGET) is None
    # detached for surge: still the group's old instances
    assert previous_version([instance("i-1", version="3", state="Detached", tags={"nodeops.rollout/detached": "r-1"})], TARGET) == 3


# ---------------------------------------------------------------------------------------------------------
# Rotation by age
# ---------------------------------------------------------------------------------------------------------

def test_an_instance_launched_before_the_age_cutoff_is_outdated_on_the_target_version_with_the_reason_age():
    from datetime import datetime, timezone
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import aged_target
    # the instances were launched at 12:00 (minutes=0) and 13:00 (minutes=60); a day of age, an hour and a half later
    target = aged_target(dict(TARGET), 86400, datetime(2024, 5, 2, 12, 30, tzinfo=timezone.utc))
    assert target["launched_before"] == "2024-05-01T12:30:00Z" and target["max_node_age"] == 86400
    instances = [instance("i-aged", version="5"), instance("i-young", version="5", minutes=60),
                 instance("i-both", version="4")]
    outdated = {entry["instance_id"]: entry["reasons"] for entry in outdated_instances(instances, target)}
    assert sorted(outdated) == ["i-aged", "i-both"]
    assert outdated["i-aged"] == ["age: launched 2024-05-01T12:00:00Z, before 2024-05-01T12:30:00Z (max_node_age 86400s)"]
    assert len(outdated["i-both"]) == 2 and outdated["i-both"][1].startswith("age: ")
    assert [entry["instance_id"] for entry in up_to_date_instances(instances, target)] == ["i-young"]
    # no age: the version alone decides
    assert [entry["instance_id"] for entry in outdated_instances(instances, aged_target(dict(TARGET), None, datetime.now(timezone.utc)))] == ["i-both"]


def test_a_launched_before_that_is_no_time_is_refused_naming_the_field():
    assert_plan_error(lambda: outdated_instances([instance("i-1")], dict(TARGET, launched_before="last week")),
                      "target.launched_before", "'last week' is not allowed")
