# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Unit tests of the pure decision layer: sizes, outdated detection, batches, drain classification, PDBs, time."""

from __future__ import annotations

import json
import math
import random
from datetime import datetime, timedelta, timezone
from fractions import Fraction

import pytest
from hypothesis import given, settings, assume
from hypothesis import strategies as st

from ansible_collections.nodeops.rollout.plugins.module_utils.backoff import backoff_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.budgets import pdb_desired_healthy, pdb_disruptions_allowed, pdb_selects, pdb_status
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import classify_pods
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.preflight import BLOCKER_KINDS, eviction_preflight
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.batches import next_batch, plan_batches
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import outdated_instances, up_to_date_instances
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan import estimate_duration, rollout_plan
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.sizes import max_unavailable_count, outdated_taint_effect, surge_count, surge_fits
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.values import PlanError, parse_duration, parse_int_or_percent

TARGET = {"launch_template_id": "lt-new", "version": 5}
BASE_TIME = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


# ---------------------------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------------------------

def instance(instance_id, az="eu-west-1a", version="4", template="lt-new", state="InService", minutes=0,
             node=True, annotations=None, tags=None, image="ami-old"):
    node_summary = None
    if node:
        node_summary = {"name": "node-" + instance_id, "ready": True, "schedulable": True, "taints": [],
                        "labels": {}, "annotations": annotations or {}}
    return {
        "instance_id": instance_id, "az": az, "lifecycle_state": state, "health_status": "Healthy",
        "launch_template": None if template is None else {"id": template, "name": "workers", "version": version},
        "image_id": image, "launch_time": (BASE_TIME + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tags": tags or {}, "node": node_summary,
    }


def pod(name, namespace="default", owner=("ReplicaSet", "web-abc"), labels=None, ready=True, phase="Running",
        node="node-1", volumes=None, annotations=None, tolerations=None, deleting=False, controller=True):
    metadata = {"name": name, "namespace": namespace, "labels": labels if labels is not None else {"app": "web"}}
    if owner:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": "u-" + owner[1],
                                        "controller": controller}]
    if annotations:
        metadata["annotations"] = annotations
    if deleting:
        metadata["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    spec = {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}
    if volumes:
        spec["volumes"] = volumes
    if tolerations:
        spec["tolerations"] = tolerations
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def pdb(name, selector=None, min_available=None, max_unavailable=None, namespace="default", null_selector=False, **extra):
    spec = {}
    if not null_selector:
        spec["selector"] = {"matchLabels": {"app": "web"}} if selector is None else selector
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    spec.update(extra.get("spec_extra", {}))
    body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": namespace},
            "spec": spec}
    if "status" in extra:
        body["status"] = extra["status"]
    return body


def assert_plan_error(call, field, *fragments):
    with pytest.raises(PlanError) as caught:
        call()
    message = str(caught.value)
    assert message.startswith(field + ":"), message
    for fragment in fragments:
        assert fragment in message, message
    return message


# ---------------------------------------------------------------------------------------------------------
# parse_int_or_percent
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    (3, ("int", 3)), ("3", ("int", 3)), (" 7 ", ("int", 7)), ("25%", ("percent", 25)), ("100%", ("percent", 100)),
    ("1%", ("percent", 1)), (1000, ("int", 1000)),
])
def test_parse_int_or_percent_accepts(value, expected):
    assert parse_int_or_percent(value, "max_unavailable") == expected


@pytest.mark.parametrize("value", ["abc", "150%", 0, -1, "0%", "0", True, False, 1.5, None, "", "-3", "3.5", "25 %", "%",
                                   "101%", [3], {"n": 3}])
def test_parse_int_or_percent_refuses_with_the_field_and_allowed_values(value):
    message = assert_plan_error(lambda: parse_int_or_percent(value, "max_unavailable"), "max_unavailable",
                                "is not allowed", "use an integer >= 1 or a percentage between 1% and 100%")
    assert repr(value) in message


def test_parse_int_or_percent_message_matches_the_documented_example():
    with pytest.raises(PlanError) as caught:
        parse_int_or_percent("150%", "max_unavailable")
    assert str(caught.value) == ("max_unavailable: '150%' is not allowed; use an integer >= 1 or a percentage "
                                 "between 1% and 100%")


def test_parse_int_or_percent_allow_zero():
    assert parse_int_or_percent(0, "max_surge", allow_zero=True) == ("int", 0)
    assert parse_int_or_percent("0%", "max_surge", allow_zero=True) == ("percent", 0)
    assert_plan_error(lambda: parse_int_or_percent(-1, "max_surge", allow_zero=True), "max_surge",
                      "use an integer >= 0 or a percentage between 0% and 100%")


@given(st.integers(min_value=1, max_value=10 ** 6), st.booleans())
def test_parse_int_or_percent_any_positive_integer(number, as_text):
    assert parse_int_or_percent(str(number) if as_text else number, "f") == ("int", number)


@given(st.integers(min_value=-(10 ** 6), max_value=0))
def test_parse_int_or_percent_any_non_positive_integer_is_refused(number):
    assert_plan_error(lambda: parse_int_or_percent(number, "rolling_update_max_unavailable"),
                      "rolling_update_max_unavailable")


@given(st.integers(min_value=101, max_value=10 ** 6))
def test_parse_int_or_percent_percentages_above_100_are_refused(number):
    assert_plan_error(lambda: parse_int_or_percent("%d%%" % number, "max_surge"), "max_surge")


@given(st.text(max_size=8))
def test_parse_int_or_percent_arbitrary_text_is_either_valid_or_names_the_field(text):
    stripped = text.strip()
    valid = (stripped.isascii() and stripped.isdigit() and int(stripped) >= 1) or (
        stripped.endswith("%") and stripped[:-1].isascii() and stripped[:-1].isdigit() and 1 <= int(stripped[:-1]) <= 100)
    if valid:
        kind, number = parse_int_or_percent(text, "f")
        assert kind == ("percent" if stripped.endswith("%") else "int")
        assert number == int(stripped.rstrip("%"))
    else:
        assert_plan_error(lambda: parse_int_or_percent(text, "field_x"), "field_x", "is not allowed")


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
# surge_count and surge_fits
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
    assert_plan_error(lambda: surge_count(None, 3, 0, 6), "max_unavailable")


def test_surge_fits_raises_max_and_desired_by_the_surge():
    assert surge_fits(10, 6, 3) == {"max_size": 13, "desired_capacity": 9, "max_size_needed": 9, "surge": 3}
    assert surge_fits(6, 6, 0) == {"max_size": 6, "desired_capacity": 6, "max_size_needed": 6, "surge": 0}


def test_surge_fits_caps_max_at_the_limit_when_the_desired_size_fits():
    sizes = surge_fits(10, 6, 4, hard_limit=12)
    assert sizes["desired_capacity"] == 10
    assert sizes["max_size"] == 12


def test_surge_fits_explains_the_maximum_needed_and_the_surge_that_would_fit():
    message = assert_plan_error(lambda: surge_fits(8, 6, 3, hard_limit=8), "max_surge",
                                "needs a maximum size of at least 9", "max_size_limit 8", "lower max_surge to 2",
                                "raise max_size_limit to 9")
    assert "desired capacity of 6" in message


def test_surge_fits_refuses_an_inconsistent_group():
    assert_plan_error(lambda: surge_fits(3, 5, 1), "desired_capacity", "max_size (3)")
    assert_plan_error(lambda: surge_fits(3, 2, -1), "max_surge")
    assert_plan_error(lambda: surge_fits(-3, 2, 1), "max_size")


@given(st.integers(min_value=0, max_value=1000), st.integers(min_value=0, max_value=1000),
       st.integers(min_value=0, max_value=200), st.one_of(st.none(), st.integers(min_value=0, max_value=1500)))
def test_surge_fits_properties(original_max, desired, surge, limit):
    assume(desired <= original_max)
    try:
        sizes = surge_fits(original_max, desired, surge, hard_limit=limit)
    except PlanError as error:
        assert limit is not None and desired + surge > limit
        assert "at least %d" % (desired + surge) in str(error)
        return
    assert sizes["desired_capacity"] == desired + surge
    assert sizes["desired_capacity"] <= sizes["max_size"]
    assert sizes["max_size"] >= original_max  # the maximum is never lowered
    if limit is None:
        assert sizes["max_size"] == original_max + surge
    else:
        assert sizes["max_size"] <= max(limit, original_max)


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
# Batches
# ---------------------------------------------------------------------------------------------------------

def ids(batch):
    return [item["instance_id"] for item in batch]


def test_canary_of_one_when_nothing_is_up_to_date():
    outdated = [instance("i-a1", "a", minutes=5), instance("i-a2", "a", minutes=1), instance("i-b1", "b", minutes=0)]
    batch = next_batch(outdated, 0, 10)
    assert ids(batch) == ["i-a2"]  # the AZ with the most outdated, its oldest instance
    assert len(next_batch(outdated, 1, 10)) == 3


def test_batches_spread_across_azs_most_outdated_first():
    outdated = [instance("i-a%d" % n, "a", minutes=n) for n in range(3)]
    outdated += [instance("i-b%d" % n, "b", minutes=n) for n in range(2)]
    outdated += [instance("i-c0", "c")]
    assert ids(next_batch(outdated, 1, 3)) == ["i-a0", "i-b0", "i-c0"]
    assert ids(next_batch(outdated, 1, 4)) == ["i-a0", "i-b0", "i-c0", "i-a1"]
    assert ids(next_batch(outdated, 1, 2)) == ["i-a0", "i-b0"]


def test_batches_order_oldest_first_then_instance_id():
    outdated = [instance("i-2", "a", minutes=0), instance("i-1", "a", minutes=0), instance("i-0", "a", minutes=9)]
    assert ids(next_batch(outdated, 1, 3)) == ["i-1", "i-2", "i-0"]


def test_batches_compare_times_across_formats_and_offsets():
    outdated = [dict(instance("i-z"), launch_time="2024-05-01T12:30:00+02:00"),   # 10:30 UTC
                dict(instance("i-y"), launch_time="2024-05-01T11:00:00.123Z"),
                dict(instance("i-x"), launch_time=datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc)),
                dict(instance("i-w"), launch_time="2024-05-01 10:15:00"),           # no offset: UTC
                dict(instance("i-v"), launch_time=None)]                              # unknown: last
    assert ids(next_batch(outdated, 1, 5)) == ["i-x", "i-w", "i-z", "i-y", "i-v"]


def test_batches_refuse_bad_times_and_sizes():
    bad = [instance("i-1"), dict(instance("i-2"), launch_time="yesterday")]
    assert_plan_error(lambda: next_batch(bad, 1, 1), "outdated[1].launch_time", "ISO 8601")
    assert_plan_error(lambda: next_batch([instance("i-1")], 1, 0), "batch_size", "integer >= 1")
    assert_plan_error(lambda: next_batch([instance("i-1")], -1, 1), "up_to_date_count")
    assert_plan_error(lambda: plan_batches([instance("i-1")], 0, True), "batch_size")


def test_plan_batches_canary_first_then_full_batches():
    outdated = [instance("i-%s%d" % (az, n), az, minutes=n) for az in "abc" for n in range(3)]
    batches = plan_batches(outdated, 0, 3)
    assert [len(batch) for batch in batches] == [1, 3, 3, 2]
    assert ids(batches[0]) == ["i-a0"]
    assert ids(batches[1]) == ["i-b0", "i-c0", "i-a1"]
    assert plan_batches([], 0, 3) == []


outdated_groups = st.lists(
    st.tuples(st.sampled_from(["eu-west-1a", "eu-west-1b", "eu-west-1c", "eu-west-1d"]), st.integers(min_value=0, max_value=50)),
    min_size=0, max_size=40)


def _instances_from(specs):
    return [instance("i-%03d" % index, az, minutes=minutes) for index, (az, minutes) in enumerate(specs)]


@settings(max_examples=200)
@given(outdated_groups, st.integers(min_value=0, max_value=5), st.integers(min_value=1, max_value=12))
def test_next_batch_properties(specs, up_to_date, batch_size):
    outdated = _instances_from(specs)
    batch = next_batch(outdated, up_to_date, batch_size)
    limit = 1 if up_to_date == 0 else batch_size
    assert len(batch) == min(limit, len(outdated))
    assert len(set(ids(batch))) == len(batch)
    taken = {}
    for item in batch:
        taken[item["az"]] = taken.get(item["az"], 0) + 1
    with_outdated = set(item["az"] for item in outdated)
    if any(count >= 2 for count in taken.values()):
        # Never two from one AZ while another AZ with outdated instances is untouched.
        assert with_outdated <= set(taken)
    # Within each AZ the batch takes that AZ's oldest instances.
    for az, count in taken.items():
        ranked = sorted((item for item in outdated if item["az"] == az), key=lambda item: (item["launch_time"], item["instance_id"]))
        assert set(ids(ranked[:count])) == set(ids(item for item in batch if item["az"] == az))
    # Per AZ counts differ by at most one unless the AZ ran out.
    if taken:
        most = max(taken.values())
        for az in with_outdated:
            available = sum(1 for item in outdated if item["az"] == az)
            assert taken.get(az, 0) >= min(available, most - 1)


@settings(max_examples=200)
@given(outdated_groups, st.integers(min_value=0, max_value=3), st.integers(min_value=1, max_value=12), st.randoms())
def test_plan_batches_cover_every_instance_once_deterministically(specs, up_to_date, batch_size, rnd):
    outdated = _instances_from(specs)
    batches = plan_batches(outdated, up_to_date, batch_size)
    flat = [item for batch in batches for item in ids(batch)]
    assert sorted(flat) == sorted(ids(outdated))
    assert len(flat) == len(set(flat))
    if outdated and up_to_date == 0:
        assert len(batches[0]) == 1
    for batch in batches[1:] if (outdated and up_to_date == 0) else batches:
        assert 1 <= len(batch) <= batch_size
    for batch in batches[:-1]:
        assert len(batch) == (1 if batch is batches[0] and up_to_date == 0 else batch_size)
    shuffled = list(outdated)
    rnd.shuffle(shuffled)
    assert [ids(batch) for batch in plan_batches(shuffled, up_to_date, batch_size)] == [ids(batch) for batch in batches]
    # plan_batches is next_batch applied repeatedly.
    remaining, done = list(outdated), up_to_date
    for batch in batches:
        assert ids(next_batch(remaining, done, batch_size)) == ids(batch)
        chosen = set(ids(batch))
        remaining = [item for item in remaining if item["instance_id"] not in chosen]
        done += len(batch)


# ---------------------------------------------------------------------------------------------------------
# Drain classification
# ---------------------------------------------------------------------------------------------------------

def classify(one, **options):
    return classify_pods([one], "node-1", options)[0]


def test_classify_each_kind_of_pod():
    assert classify(pod("ds", owner=("DaemonSet", "fluent-bit")))["action"] == "skip"
    assert classify(pod("ds", owner=("DaemonSet", "fluent-bit")))["reason"] == "managed by DaemonSet fluent-bit"
    mirror = classify(pod("kube-proxy", owner=("Node", "node-1"), annotations={"kubernetes.io/config.mirror": "abc"}))
    assert mirror["action"] == "skip" and "mirror pod" in mirror["reason"]
    terminating = classify(pod("leaving", deleting=True))
    assert (terminating["action"], terminating["reason"]) == ("skip", "already terminating")
    for phase in ("Succeeded", "Failed"):
        done = classify(pod("job-1", owner=("Job", "j"), phase=phase, ready=False))
        assert done["action"] == "delete" and "holds no disruption budget" in done["reason"] and phase in done["reason"]
    assert classify(pod("web-1"))["action"] == "evict"
    assert classify(pod("db-0", owner=("StatefulSet", "db")))["action"] == "evict"


def test_classify_emptydir():
    volumes = [{"name": "cache", "emptyDir": {}}]
    blocked = classify(pod("web-1", volumes=volumes))
    assert (blocked["action"], blocked["reason"]) == ("block", "uses emptyDir; set delete_emptydir_data")
    assert blocked["blocks"] == [{"kind": "emptydir", "reason": "uses emptyDir; set delete_emptydir_data"}]
    assert classify(pod("web-1", volumes=volumes), delete_emptydir_data=True)["action"] == "evict"
    assert classify(pod("web-1", volumes=[{"name": "cfg", "configMap": {"name": "x"}}]))["action"] == "evict"
    # A finished pod's emptyDir data is of no use to anyone.
    assert classify(pod("job", owner=None, phase="Succeeded", volumes=volumes))["action"] == "delete"


def test_classify_naked_pods():
    naked = classify(pod("debug", owner=None))
    assert (naked["action"], naked["reason"]) == ("block", "not managed by a controller; set force")
    assert classify(pod("debug", owner=None), force=True)["action"] == "evict"
    # An owner that is not the controller does not manage the pod.
    assert classify(pod("adopted", controller=False))["action"] == "block"


@pytest.mark.parametrize("annotations, blocked", [
    ({"karpenter.sh/do-not-disrupt": "true"}, True),
    ({"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}, True),
    ({"nodeops.rollout/do-not-evict": "true"}, True),
    ({"nodeops.rollout/do-not-evict": "True"}, True),
    ({"karpenter.sh/do-not-disrupt": "false"}, False),
    ({"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}, False),
])
def test_classify_do_not_disrupt_annotations(annotations, blocked):
    result = classify(pod("web-1", annotations=annotations))
    assert (result["action"] == "block") is blocked
    if blocked:
        assert result["blocks"][0]["kind"] == "do_not_disrupt"
        assert list(annotations)[0] in result["reason"] and result["reason"].endswith("set force")
        assert classify(pod("web-1", annotations=annotations), force=True)["action"] == "evict"


def test_classify_reports_every_cause_of_a_block():
    result = classify(pod("x", owner=None, volumes=[{"name": "d", "emptyDir": {"medium": "Memory"}}],
                          annotations={"karpenter.sh/do-not-disrupt": "true"}))
    assert [block["kind"] for block in result["blocks"]] == ["emptydir", "naked_pod", "do_not_disrupt"]
    assert result["reason"].startswith("uses emptyDir; set delete_emptydir_data, and not managed by a controller; set force")


def test_classify_disable_eviction_deletes_instead():
    result = classify(pod("web-1"), disable_eviction=True)
    assert result["action"] == "delete" and "PodDisruptionBudgets are not consulted" in result["reason"]
    # Options that block still apply.
    assert classify(pod("debug", owner=None), disable_eviction=True)["action"] == "block"


def test_classify_keeps_only_the_node_pods_and_names_them():
    pods = [pod("a", node="node-1"), pod("b", node="node-2"), pod("c", namespace="kube-system", node="node-1")]
    results = classify_pods(pods, "node-1", {"pod_selector": "app=web"})
    assert [entry["pod"] for entry in results] == ["default/a", "kube-system/c"]
    assert results[1]["namespace"] == "kube-system" and results[1]["name"] == "c" and results[1]["node"] == "node-1"
    assert len(classify_pods(pods, None)) == 3


@pytest.mark.parametrize("options, field", [
    ({"force": "yes"}, "options.force"), ({"delete_emptydir_data": 1}, "options.delete_emptydir_data"),
    ({"disable_eviction": "true"}, "options.disable_eviction"), ({"taint_effect": "NoEntry"}, "options.taint_effect"),
    ("force", "options"),
])
def test_drain_options_are_checked(options, field):
    assert_plan_error(lambda: classify_pods([pod("a")], "node-1", options), field, "is not allowed")


# ---------------------------------------------------------------------------------------------------------
# PodDisruptionBudgets
# ---------------------------------------------------------------------------------------------------------

def test_pdb_selects_by_namespace_and_selector():
    web = pod("web-1", labels={"app": "web", "tier": "front"})
    assert pdb_selects(pdb("p"), web)
    assert not pdb_selects(pdb("p", namespace="other"), web)
    assert not pdb_selects(pdb("p", null_selector=True), web)       # null selects nothing
    assert pdb_selects(pdb("p", selector={}), web)                   # empty selects the namespace
    assert not pdb_selects(pdb("p", selector={}, namespace="other"), web)
    assert not pdb_selects(pdb("p", selector={"matchLabels": {"app": "db"}}), web)

    def expr(operator, values=None, key="tier"):
        body = {"key": key, "operator": operator}
        if values is not None:
            body["values"] = values
        return pdb("p", selector={"matchExpressions": [body]})

    assert pdb_selects(expr("In", ["front", "back"]), web)
    assert not pdb_selects(expr("In", ["back"]), web)
    assert not pdb_selects(expr("In", ["front"], key="zone"), web)
    assert not pdb_selects(expr("NotIn", ["front"]), web)
    assert pdb_selects(expr("NotIn", ["back"]), web)
    assert pdb_selects(expr("NotIn", ["x"], key="zone"), web)        # absent label: NotIn matches
    assert pdb_selects(expr("Exists"), web)
    assert not pdb_selects(expr("Exists", key="zone"), web)
    assert pdb_selects(expr("DoesNotExist", key="zone"), web)
    assert not pdb_selects(expr("DoesNotExist"), web)
    both = pdb("p", selector={"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]})
    assert not pdb_selects(both, web)
    assert_plan_error(lambda: pdb_selects(expr("Like", ["f"]), web),
                      "PodDisruptionBudget default/p: spec.selector.matchExpressions[0].operator",
                      "'Like'", "In, NotIn, Exists, DoesNotExist")


def test_pdb_min_available_two_of_three_healthy_allows_one():
    pods = [pod("web-%d" % n) for n in range(3)]
    assert pdb_disruptions_allowed(pdb("p", min_available=2), pods) == 1


def test_pdb_max_unavailable_25_percent_of_four_allows_one():
    pods = [pod("web-%d" % n) for n in range(4)]
    status = pdb_status(pdb("p", max_unavailable="25%"), pods)
    assert status["desired_healthy"] == 3 and status["disruptions_allowed"] == 1


def test_pdb_unready_and_terminating_pods_are_not_healthy():
    pods = [pod("web-0"), pod("web-1"), pod("web-2", ready=False)]
    assert pdb_disruptions_allowed(pdb("p", min_available=2), pods) == 0
    pods = [pod("web-0"), pod("web-1"), pod("web-2", deleting=True)]
    status = pdb_status(pdb("p", min_available=2), pods)
    assert status["current_healthy"] == 2 and status["expected_pods"] == 3 and status["disruptions_allowed"] == 0


def test_pdb_pods_recorded_as_disrupted_are_not_healthy():
    pods = [pod("web-%d" % n) for n in range(3)]
    budget = pdb("p", min_available=1, status={"disruptedPods": {"web-0": "2024-05-01T12:00:00Z"}})
    assert pdb_status(budget, pods)["current_healthy"] == 2
    assert pdb_disruptions_allowed(budget, pods) == 1


@pytest.mark.parametrize("spec, pods, desired, allowed", [
    ({"min_available": "50%"}, 3, 2, 1),      # 1.5 rounds up to 2
    ({"min_available": "34%"}, 3, 2, 1),      # 1.02 rounds up to 2
    ({"min_available": "100%"}, 3, 3, 0),
    ({"min_available": 0}, 3, 0, 3),
    ({"min_available": "0%"}, 3, 0, 3),
    ({"max_unavailable": "30%"}, 4, 2, 2),    # 1.2 rounds up to 2 unavailable
    ({"max_unavailable": "1%"}, 10, 9, 1),    # 0.1 rounds up to 1
    ({"max_unavailable": 0}, 3, 3, 0),
    ({"max_unavailable": 5}, 3, 0, 3),        # never below 0
    ({"max_unavailable": "100%"}, 3, 0, 3),
    ({}, 3, 0, 3),                            # neither field: nothing required
    ({"min_available": 1}, 1, 1, 0),
    ({"min_available": 1}, 0, 1, 0),
    ({"max_unavailable": 1}, 0, 0, 0),        # nothing expected: nothing allowed
])
def test_pdb_arithmetic_hand_computed(spec, pods, desired, allowed):
    budget = pdb("p", **spec)
    status = pdb_status(budget, [pod("web-%d" % n) for n in range(pods)])
    assert status["desired_healthy"] == desired
    assert status["disruptions_allowed"] == allowed


def test_pdb_expected_pods_override_follows_the_controller():
    pods = [pod("web-0"), pod("web-1")]  # the Deployment wants 3, one is missing
    assert pdb_disruptions_allowed(pdb("p", max_unavailable=1), pods) == 1
    assert pdb_disruptions_allowed(pdb("p", max_unavailable=1), pods, expected_pods=3) == 0
    assert pdb_disruptions_allowed(pdb("p", min_available="100%"), pods, expected_pods=3) == 0
    # A workload scaled to zero whose pods are still there: nothing is expected, nothing may be disrupted.
    assert pdb_disruptions_allowed(pdb("p", max_unavailable=1), pods, expected_pods=0) == 0
    # An integer minAvailable counts the selected pods; the scale does not matter to the controller.
    assert pdb_status(pdb("p", min_available=1), pods, expected_pods=3)["expected_pods"] == 2


def test_pdb_only_counts_selected_pods():
    pods = [pod("web-0"), pod("web-1"), pod("db-0", labels={"app": "db"}), pod("web-x", namespace="other")]
    status = pdb_status(pdb("p", min_available=1), pods)
    assert status["matching_pods"] == ["default/web-0", "default/web-1"]
    assert status["disruptions_allowed"] == 1


@pytest.mark.parametrize("field, value", [("minAvailable", "abc"), ("minAvailable", "2"), ("maxUnavailable", "150%"),
                                          ("maxUnavailable", -1), ("minAvailable", 1.5), ("minAvailable", True)])
def test_pdb_bad_values_name_the_field(field, value):
    budget = pdb("p")
    budget["spec"][field] = value
    assert_plan_error(lambda: pdb_desired_healthy(budget, 3), "PodDisruptionBudget default/p: spec." + field,
                      "use an integer >= 0 or a percentage between 0% and 100%")


@given(st.lists(st.tuples(st.booleans(), st.booleans()), max_size=15),
       st.one_of(st.integers(min_value=0, max_value=20).map(lambda n: ("minAvailable", n)),
                 st.integers(min_value=0, max_value=100).map(lambda n: ("minAvailable", "%d%%" % n)),
                 st.integers(min_value=0, max_value=20).map(lambda n: ("maxUnavailable", n)),
                 st.integers(min_value=0, max_value=100).map(lambda n: ("maxUnavailable", "%d%%" % n))))
def test_pdb_disruptions_allowed_against_a_reference(flags, setting):
    pods = [pod("web-%d" % n, ready=ready, deleting=deleting) for n, (ready, deleting) in enumerate(flags)]
    budget = pdb("p")
    budget["spec"][setting[0]] = setting[1]
    expected = len(pods)
    healthy = sum(1 for ready, deleting in flags if ready and not deleting)
    value = setting[1]
    if isinstance(value, str):
        scaled = math.ceil(Fraction(int(value[:-1]), 100) * expected)
    else:
        scaled = value
    desired = max(0, expected - scaled) if setting[0] == "maxUnavailable" else scaled
    reference = max(0, healthy - desired) if expected > 0 else 0
    assert pdb_disruptions_allowed(budget, pods) == reference
    # Making one more pod Ready never lowers the allowance.
    for index, (ready, deleting) in enumerate(flags):
        if not ready and not deleting:
            better = list(pods)
            better[index] = pod("web-%d" % index)
            assert pdb_disruptions_allowed(budget, better) >= reference
            break


# ---------------------------------------------------------------------------------------------------------
# Eviction pre-flight
# ---------------------------------------------------------------------------------------------------------

def kinds(report, node="node-1"):
    return sorted(blocker["kind"] for blocker in report[node]["blockers"])


def test_preflight_clean_node_is_ok():
    web = [pod("web-%d" % n, node="node-%d" % n) for n in range(3)]
    ds = pod("agent", owner=("DaemonSet", "agent"), node="node-1", labels={"app": "agent"})
    job = pod("job-1", owner=("Job", "j"), phase="Succeeded", ready=False, node="node-1", labels={"app": "job"})
    report = eviction_preflight({"node-1": [web[1], ds, job]}, web + [ds, job], [pdb("p", max_unavailable=1)])
    assert report["node-1"] == {"would_evict": ["default/web-1"], "would_delete": ["default/job-1"],
                                "skipped": [{"pod": "default/agent", "reason": "managed by DaemonSet agent"}],
                                "blockers": [], "predicted": "ok"}


def test_preflight_pdb_zero_with_single_replica():
    only = pod("api-0", owner=("ReplicaSet", "api-1"), labels={"app": "api"})
    budget = pdb("api", selector={"matchLabels": {"app": "api"}}, min_available=1)
    report = eviction_preflight({"node-1": [only]}, [only], [budget])
    assert kinds(report) == ["pdb_zero", "single_replica"]
    zero = [blocker for blocker in report["node-1"]["blockers"] if blocker["kind"] == "pdb_zero"][0]
    assert zero["pdb"] == "default/api" and zero["pod"] == "default/api-0" and zero["severity"] == "error"
    assert "allows 0 disruptions: it needs 1 healthy pods and has 1" in zero["reason"]
    assert "can never allow one" in zero["reason"]
    single = [blocker for blocker in report["node-1"]["blockers"] if blocker["kind"] == "single_replica"][0]
    assert single["severity"] == "warning" and single["owner"] == "ReplicaSet/api-1"
    assert "ReplicaSet default/api-1 has 1 replica" in single["reason"]
    assert report["node-1"]["predicted"] == "blocked"


def test_preflight_pdb_insufficient_counts_the_whole_batch():
    pods = [pod("web-0", node="node-1"), pod("web-1", node="node-1"), pod("web-2", node="node-2"), pod("web-3", node="node-3")]
    budget = pdb("web", max_unavailable=1)
    report = eviction_preflight({"node-1": pods[:2], "node-2": pods[2:3]}, pods, [budget])
    assert kinds(report, "node-1") == ["pdb_insufficient", "pdb_insufficient"]
    assert kinds(report, "node-2") == ["pdb_insufficient"]
    reason = report["node-2"]["blockers"][0]["reason"]
    assert "allows 1 disruption(s) but 3 of its pods are on the nodes drained together" in reason
    assert report["node-1"]["predicted"] == "ok"  # slower, not stuck
    # One node alone fits the budget.
    alone = eviction_preflight({"node-2": pods[2:3]}, pods, [budget])
    assert alone["node-2"]["blockers"] == []


def test_preflight_multiple_pdbs():
    web = pod("web-0")
    others = [pod("web-1", node="node-2"), pod("web-2", node="node-3")]
    pdbs = [pdb("a", max_unavailable=1), pdb("b", selector={}, max_unavailable=1)]
    report = eviction_preflight({"node-1": [web]}, [web] + others, pdbs)
    blocker = report["node-1"]["blockers"][0]
    assert kinds(report) == ["multiple_pdbs"]
    assert blocker["pdb"] == "default/a, default/b" and "HTTP 500" in blocker["reason"]
    assert report["node-1"]["predicted"] == "blocked"


def test_preflight_multiple_pdbs_do_not_matter_for_pods_the_api_deletes_directly():
    pending = pod("web-0", phase="Pending", ready=False)
    pdbs = [pdb("a", max_unavailable=1), pdb("b", selector={}, max_unavailable=1)]
    report = eviction_preflight({"node-1": [pending]}, [pending], pdbs)
    assert kinds(report) == ["single_replica"]


def test_preflight_option_blockers():
    pods = [pod("debug", owner=None), pod("cache", volumes=[{"name": "c", "emptyDir": {}}], owner=("ReplicaSet", "cache-1")),
            pod("batch", annotations={"karpenter.sh/do-not-disrupt": "true"}, owner=("ReplicaSet", "batch-1"))]
    replicas = {"default/ReplicaSet/cache-1": 2, "default/ReplicaSet/batch-1": 2}
    report = eviction_preflight({"node-1": pods}, pods, [], replicas_by_owner=replicas)
    by_pod = {blocker["pod"]: blocker for blocker in report["node-1"]["blockers"]}
    assert by_pod["default/debug"]["kind"] == "naked_pod"
    assert by_pod["default/cache"]["kind"] == "emptydir"
    assert by_pod["default/batch"]["kind"] == "do_not_disrupt"
    assert all(blocker["severity"] == "error" and blocker["pdb"] is None for blocker in by_pod.values())
    assert report["node-1"]["would_evict"] == []
    assert report["node-1"]["predicted"] == "blocked"
    forced = eviction_preflight({"node-1": pods}, pods, [], {"force": True, "delete_emptydir_data": True}, replicas)
    assert forced["node-1"]["blockers"] == [] and len(forced["node-1"]["would_evict"]) == 3
    assert forced["node-1"]["predicted"] == "ok"


def test_preflight_single_replica_uses_the_replica_map_when_given():
    one = pod("web-0", owner=("ReplicaSet", "web-1"))
    assert eviction_preflight({"node-1": [one]}, [one], [])["node-1"]["predicted"] == "downtime"
    scaled = eviction_preflight({"node-1": [one]}, [one], [], replicas_by_owner={"default/ReplicaSet/web-1": 3})
    assert scaled["node-1"]["blockers"] == [] and scaled["node-1"]["predicted"] == "ok"
    two = [one, pod("web-1", owner=("ReplicaSet", "web-1"), node="node-2")]
    assert eviction_preflight({"node-1": [one]}, two, [])["node-1"]["blockers"] == []
    # A Job is not a replicated workload.
    job = pod("job-0", owner=("Job", "j"))
    assert eviction_preflight({"node-1": [job]}, [job], [])["node-1"]["blockers"] == []


@pytest.mark.parametrize("toleration, flagged", [
    ({"operator": "Exists"}, True),
    ({"operator": "Exists", "effect": "NoSchedule"}, True),
    ({"operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "dedicated", "operator": "Exists"}, False),
    ({"key": "dedicated", "operator": "Equal", "value": "x"}, False),
])
def test_preflight_tolerates_all(toleration, flagged):
    pods = [pod("web-0", tolerations=[toleration]), pod("web-1", node="node-2")]
    report = eviction_preflight({"node-1": pods[:1]}, pods, [])
    assert (kinds(report) == ["tolerates_all"]) is flagged
    if flagged:
        assert report["node-1"]["blockers"][0]["severity"] == "warning"
        assert report["node-1"]["predicted"] == "ok"


def test_preflight_tolerates_all_follows_the_taint_effect():
    pods = [pod("web-0", tolerations=[{"operator": "Exists", "effect": "PreferNoSchedule"}]), pod("web-1", node="node-2")]
    assert kinds(eviction_preflight({"node-1": pods[:1]}, pods, [])) == []
    soft = eviction_preflight({"node-1": pods[:1]}, pods, [], {"taint_effect": "PreferNoSchedule"})
    assert kinds(soft) == ["tolerates_all"]


def test_preflight_unready_pods_follow_the_eviction_handler():
    budget = pdb("web", min_available=2)
    # Budget satisfied by the other two: the unready pod leaves without using a disruption.
    pods = [pod("web-0", ready=False), pod("web-1", node="node-2"), pod("web-2", node="node-3")]
    assert kinds(eviction_preflight({"node-1": pods[:1]}, pods, [budget])) == []
    # Budget not satisfied: the unready pod needs a disruption there is none of.
    pods = [pod("web-0", ready=False), pod("web-1", node="node-2"), pod("web-2", ready=False, node="node-3")]
    assert kinds(eviction_preflight({"node-1": pods[:1]}, pods, [budget])) == ["pdb_zero"]
    # ... unless the budget lets unhealthy pods go.
    lenient = pdb("web", min_available=2, spec_extra={"unhealthyPodEvictionPolicy": "AlwaysAllow"})
    assert kinds(eviction_preflight({"node-1": pods[:1]}, pods, [lenient])) == []


def test_preflight_expected_pods_from_the_replica_map():
    pods = [pod("web-0"), pod("web-1", node="node-2")]
    budget = pdb("web", max_unavailable=1)
    assert kinds(eviction_preflight({"node-1": pods[:1]}, pods, [budget])) == []
    short = eviction_preflight({"node-1": pods[:1]}, pods, [budget], replicas_by_owner={"default/ReplicaSet/web-abc": 3})
    assert kinds(short) == ["pdb_zero"]
    assert "needs 2 healthy pods and has 2" in short["node-1"]["blockers"][0]["reason"]


def test_preflight_disable_eviction_turns_budgets_into_warnings():
    only = pod("api-0", owner=("ReplicaSet", "api-1"), labels={"app": "api"})
    other = pod("api-1", owner=("ReplicaSet", "api-1"), labels={"app": "api"}, node="node-2")
    pdbs = [pdb("api", selector={"matchLabels": {"app": "api"}}, min_available=2), pdb("all", selector={}, max_unavailable=0)]
    report = eviction_preflight({"node-1": [only]}, [only, other], pdbs, {"disable_eviction": True})
    node = report["node-1"]
    assert node["would_delete"] == ["default/api-0"] and node["would_evict"] == []
    assert kinds(report) == ["pdb_zero", "pdb_zero"]
    assert all(blocker["severity"] == "warning" and "breaks the budget" in blocker["reason"] for blocker in node["blockers"])
    assert node["predicted"] == "ok"


def test_preflight_terminating_pods_are_skipped_and_node_pods_missing_from_all_pods_count():
    leaving = pod("web-9", deleting=True)
    web = pod("web-0")
    report = eviction_preflight({"node-1": [leaving, web]}, [], [pdb("web", min_available=1)])
    assert report["node-1"]["skipped"] == [{"pod": "default/web-9", "reason": "already terminating"}]
    # web-0 is the only healthy pod and the budget wants one: nothing may go.
    assert kinds(report) == ["pdb_zero", "single_replica"]


def test_preflight_names_every_blocker_kind():
    pods = [
        pod("api-0", owner=("ReplicaSet", "api-1"), labels={"app": "api"}),                       # pdb_zero + single_replica
        pod("web-0", labels={"app": "web"}), pod("web-1", labels={"app": "web"}),                  # pdb_insufficient
        pod("two-0", owner=("ReplicaSet", "two-1"), labels={"app": "two", "team": "x"}),           # multiple_pdbs
        pod("naked", owner=None, labels={}),
        pod("cache-0", owner=("ReplicaSet", "cache-1"), labels={}, volumes=[{"name": "c", "emptyDir": {}}]),
        pod("keep-0", owner=("ReplicaSet", "keep-1"), labels={}, annotations={"nodeops.rollout/do-not-evict": "true"}),
        pod("mesh-0", owner=("ReplicaSet", "mesh-1"), labels={}, tolerations=[{"operator": "Exists"}]),
    ]
    elsewhere = [pod("web-2", node="node-2"), pod("two-1", owner=("ReplicaSet", "two-1"), labels={"app": "two", "team": "x"}, node="node-2")]
    pdbs = [pdb("api", selector={"matchLabels": {"app": "api"}}, min_available=1), pdb("web", max_unavailable=1),
            pdb("two", selector={"matchLabels": {"app": "two"}}, max_unavailable=1),
            pdb("team", selector={"matchExpressions": [{"key": "team", "operator": "Exists"}]}, max_unavailable=1)]
    replicas = {"default/ReplicaSet/cache-1": 2, "default/ReplicaSet/keep-1": 2, "default/ReplicaSet/mesh-1": 2,
                "default/ReplicaSet/web-abc": 3, "default/ReplicaSet/two-1": 2}
    report = eviction_preflight({"node-1": pods}, pods + elsewhere, pdbs, replicas_by_owner=replicas)
    found = set(kinds(report))
    assert found == set(BLOCKER_KINDS)
    assert report["node-1"]["predicted"] == "blocked"
    json.dumps(report)


def test_preflight_bad_input():
    assert_plan_error(lambda: eviction_preflight([], [], []), "node_pods_by_node")
    assert_plan_error(lambda: eviction_preflight({"n": "x"}, [], []), "node_pods_by_node[n]")
    assert_plan_error(lambda: eviction_preflight({}, [], [], replicas_by_owner=[1]), "replicas_by_owner")
    one = pod("web-0")
    assert_plan_error(lambda: eviction_preflight({"node-1": [one]}, [one], [], replicas_by_owner={"default/ReplicaSet/web-abc": "3"}),
                      "replicas_by_owner[default/ReplicaSet/web-abc]")


# ---------------------------------------------------------------------------------------------------------
# Backoff and durations
# ---------------------------------------------------------------------------------------------------------

def test_backoff_first_try_does_not_wait_and_retries_never_fire_at_once():
    assert backoff_delay(0) == 0.0
    for attempt in range(1, 40):
        assert backoff_delay(attempt, jitter=lambda: 0.0) == 0.5


def test_backoff_ceiling_doubles_until_the_cap():
    top = [backoff_delay(attempt, jitter=lambda: 1.0) for attempt in range(1, 9)]
    assert top == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert backoff_delay(10 ** 6, base=0.1, cap=10.0, jitter=lambda: 1.0) == 10.0


@given(st.integers(min_value=1, max_value=500), st.floats(min_value=0.001, max_value=10.0),
       st.floats(min_value=0.001, max_value=600.0), st.floats(min_value=0.0, max_value=0.999999))
def test_backoff_bounds(attempt, base, cap, draw):
    delay = backoff_delay(attempt, base=base, cap=cap, jitter=lambda: draw)
    ceiling = min(cap, base * 2 ** min(attempt - 1, 62))
    assert 0 < delay <= ceiling + 1e-9
    assert delay >= min(base, cap) / 2 - 1e-9


def test_backoff_grows_on_average_with_the_default_random_source():
    random.seed(7)
    means = []
    for attempt in (1, 3, 5):
        samples = [backoff_delay(attempt) for dummy in range(2000)]
        assert all(0.5 <= sample <= min(30.0, 2 ** (attempt - 1)) for sample in samples)
        means.append(sum(samples) / len(samples))
    assert means[0] < means[1] < means[2]


@pytest.mark.parametrize("kwargs, field", [
    ({"attempt": -1}, "attempt"), ({"attempt": "1"}, "attempt"), ({"attempt": True}, "attempt"),
    ({"attempt": 1, "base": 0}, "base"), ({"attempt": 1, "cap": -1}, "cap"),
    ({"attempt": 1, "jitter": lambda: 2.0}, "jitter"), ({"attempt": 1, "jitter": lambda: "x"}, "jitter"),
])
def test_backoff_bad_input(kwargs, field):
    assert_plan_error(lambda: backoff_delay(**kwargs), field)


@pytest.mark.parametrize("value, seconds", [
    (90, 90), (0, 0), ("90", 90), ("90s", 90), ("15m", 900), ("1h30m", 5400), ("1h", 3600), ("2h15m30s", 8130),
    (" 15M ", 900), ("0s", 0), ("45m10s", 2710), ("1h5s", 3605),
])
def test_parse_duration(value, seconds):
    assert parse_duration(value, "drain_timeout") == seconds


@pytest.mark.parametrize("value", [-1, "abc", "1d", "1m1h", "", "1.5m", 1.5, True, None, "h", "-5s", "5 m", "1h 30m", [90]])
def test_parse_duration_refuses_with_the_field(value):
    assert_plan_error(lambda: parse_duration(value, "drain_timeout"), "drain_timeout",
                      "use a number of seconds (90) or a duration such as '90s', '15m' or '1h30m'")


@pytest.mark.parametrize("value", [0, "0", "0s", "0h0m0s"])
def test_parse_duration_minimum_refuses_shorter_durations(value):
    assert_plan_error(lambda: parse_duration(value, "drain_timeout", minimum=1), "drain_timeout",
                      "use a number of seconds (90) or a duration such as '90s', '15m' or '1h30m', of at least 1 second")
    assert parse_duration(value, "drain_timeout") == 0


def test_parse_duration_minimum_accepts_the_minimum_and_more():
    assert parse_duration("1s", "drain_timeout", minimum=1) == 1
    assert parse_duration("1m", "drain_timeout", minimum=60) == 60
    assert_plan_error(lambda: parse_duration(59, "drain_timeout", minimum=60), "drain_timeout", "of at least 60 seconds")


@given(st.integers(min_value=0, max_value=99), st.integers(min_value=0, max_value=59), st.integers(min_value=0, max_value=59),
       st.booleans(), st.booleans(), st.booleans())
def test_parse_duration_any_combination(hours, minutes, seconds, with_h, with_m, with_s):
    assume(with_h or with_m or with_s)
    text = ("%dh" % hours if with_h else "") + ("%dm" % minutes if with_m else "") + ("%ds" % seconds if with_s else "")
    expected = (hours * 3600 if with_h else 0) + (minutes * 60 if with_m else 0) + (seconds if with_s else 0)
    assert parse_duration(text, "f") == expected


def test_estimate_duration():
    assert estimate_duration([], 180, 90, 60, 30, surge=3) == 0
    # No surge: every batch drains, waits, and waits for its replacements to boot, then validates.
    assert estimate_duration([[1], [1, 2, 3]], 100, 10, 5, 1) == 2 * (10 + 5 + 100 + 1)
    # Surge 4: boot once up front; batches of 1 and 3 are paid by the surge, the third needs replacements.
    assert estimate_duration([1, 3, 3], 100, 10, 5, 1, surge=4) == 100 + 2 * (10 + 5 + 1) + (10 + 5 + 100 + 1)
    assert estimate_duration([2], "3m", "1m", "0", "30s", surge=1) == 180 + 60 + 0 + 180 + 30
    assert_plan_error(lambda: estimate_duration([1], "soon", 1, 1, 1), "boot_seconds")
    assert_plan_error(lambda: estimate_duration([1], 1, 1, 1, 1, surge=-1), "surge")
    assert_plan_error(lambda: estimate_duration(["x"], 1, 1, 1, 1), "batches[0]")


@given(st.lists(st.integers(min_value=1, max_value=10), max_size=12), st.integers(min_value=0, max_value=60))
def test_estimate_duration_surge_never_slows_the_plan_beyond_one_boot(sizes, surge):
    without = estimate_duration(sizes, 120, 60, 30, 10)
    with_surge = estimate_duration(sizes, 120, 60, 30, 10, surge=surge)
    assert with_surge <= without + 120
    if sizes and surge >= sum(sizes):
        assert with_surge == 120 + len(sizes) * (60 + 30 + 10)


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
    # the surged nodes are up and validated before any old node is drained: they are the canary, no batch of one
    assert result["canary"] is False and result["batch_count"] == 6 and result["outdated_count"] == 6
    assert result["batches"][0] == {"index": 1, "canary": False, "instance_ids": ["i-a0"], "azs": ["eu-west-1a"], "nodes": ["node-i-a0"]}
    assert [batch["canary"] for batch in result["batches"]] == [False] * 6
    assert [batch["azs"][0] for batch in result["batches"]] == ["eu-west-1a", "eu-west-1b", "eu-west-1c"] * 2
    assert result["target"] == {"launch_template_id": "lt-new", "version": "5", "image_id": None}
    # All six replacements are surged up front: one boot, then drain + delay + validate per batch.
    assert result["eta_seconds"] == 180 + 6 * (90 + 60 + 30)
    assert result["timings"] == {"boot_seconds": 180, "drain_seconds": 90, "post_drain_delay": 60, "validate_seconds": 30}
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
    assert result["eta_seconds"] == 2 * (120 + 60 + 180 + 30)
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
    assert all(len(batch["instance_ids"]) <= result["batch_size"] for batch in result["batches"])
    assert result["canary"] == bool(outdated_ids and result["up_to_date_count"] == 0 and result["surge"] == 0)
    if result["canary"]:
        assert len(result["batches"][0]["instance_ids"]) == 1
    assert (result["eta_seconds"] > 0) == bool(outdated_ids)
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
