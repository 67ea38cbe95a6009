"""Rotation by age (rolling_update_max_node_age, Karpenter's expireAfter): nodes launched longer ago than the age are
outdated on the target's own version, with the reason age and their launch time; the plan lists them apart and changes
nothing; the run replaces them and no other, with the demo's workloads, no budget violated, no pod killed without
eviction, no Deployment without a Ready pod and the floor kept; a rerun right after has nothing to do. An age that does
not parse, or under an hour, is refused before any change."""

import json
import os

import pytest

from sandbox.drive.convergence import group_of, members, problems, sizes
from tests.integration.controls import GROUP, QUICK, assert_invariants, assert_refused_before_any_change

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")
NODES, AZS = 4, 2
DAY = 86400
AGE = ["rolling_update_max_node_age=30d"]


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[DEMO])


@pytest.fixture(scope="module")
def same_version(sandbox):
    """The group's own node group, aimed at the launch template version its instances run (the sandbox's group points
    at a newer one): nothing is outdated but for its age."""
    group = group_of(sandbox)
    versions = set(instance["LaunchTemplate"]["Version"] for instance in group["Instances"])
    assert len(versions) == 1, versions
    return [{"name": group["AutoScalingGroupName"], "launch_template_version": versions.pop()}]


@pytest.fixture(scope="module")
def aged(sandbox):
    """Two of the group's instances, launched 40 days ago."""
    chosen = members(sandbox)[:2]
    launched = sandbox.age_instances(chosen, 40 * DAY)
    assert sorted(launched) == chosen, launched
    return chosen


@pytest.mark.parametrize("value, message", [
    ("10m", "rolling_update_max_node_age: '10m' is not allowed; use a number of seconds (90) or a duration such as '90s', "
            "'15m' or '1h30m', of at least 3600 seconds"),
    ("4w", "rolling_update_max_node_age: '4w' is not allowed"),
])
def test_an_age_that_does_not_parse_or_is_under_an_hour_is_refused_before_any_change(sandbox, tmp_path, value, message):
    assert_refused_before_any_change(sandbox, tmp_path, message, extra=QUICK + ["rolling_update_max_node_age=%s" % value])


def test_the_plan_lists_the_aged_nodes_apart_and_changes_nothing(sandbox, aged, same_version, tmp_path):
    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, check=True, extra=QUICK + AGE, node_groups=same_version)
    assert rc == 0, out[-3000:]
    line = [text.strip().rstrip(",").strip('"') for text in out.splitlines() if "max node age 720h 00m: launched before" in text]
    assert line and "2 nodes replaced for age alone: " in line[0], out[-3000:]
    assert "2 outdated of 4 instances" in out, out[-3000:]
    assert sandbox.mutating_requests(since=since) == []


@pytest.fixture(scope="module")
def rolled(sandbox, aged, same_version, tmp_path_factory):
    directory = tmp_path_factory.mktemp("rotation")
    report = directory / "result.json"
    original, since = sizes(sandbox, GROUP), sandbox.now()
    rc, out = sandbox.run_role_playbook(directory, report=report, node_groups=same_version, extra=AGE + [
        "rolling_update_metrics_file=%s" % (directory / "rollout.prom"),
        "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"])
    return {"rc": rc, "out": out, "result": json.loads(report.read_text()) if report.exists() else {},
            "original": original, "since": since, "after": members(sandbox), "directory": directory}


def test_the_aged_nodes_and_no_other_are_replaced_with_the_reason_age(sandbox, aged, same_version, rolled):
    assert rolled["rc"] == 0, rolled["out"][-5000:]
    group = rolled["result"]["node_groups"][0]
    assert group["status"] == "replaced" and group["nodes_replaced"] == 2, group
    # the aged instances are gone, the two young ones kept, two new ones launched
    assert not set(aged) & set(rolled["after"]) and len(rolled["after"]) == NODES, (aged, rolled["after"])
    assert sorted(group["plan"]["outdated"]) == aged, group["plan"]
    # each replaced for its age alone, its launch time 40 days back
    listed = group["plan"]["aged"]["instances"]
    assert sorted(entry["instance_id"] for entry in listed) == aged and all(entry["only_age"] for entry in listed), listed
    assert all(entry["launch_time"] < group["plan"]["aged"]["launched_before"] for entry in listed), group["plan"]["aged"]
    assert problems(sandbox, rolled["original"], int(same_version[0]["launch_template_version"])) == []


def test_the_finished_run_s_metrics_parse_with_what_it_replaced(rolled):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families   # pylint: disable=import-outside-toplevel
    samples = {(sample.name, sample.labels.get("status"), sample.labels.get("le")): sample.value
               for family in text_string_to_metric_families((rolled["directory"] / "rollout.prom").read_text()) for sample in family.samples}
    assert samples[("nodeops_rollout_nodes_replaced", None, None)] == 2 and samples[("nodeops_rollout_status", "replaced", None)] == 1, samples
    # each of the two drains observed, each of the new nodes' boots
    assert samples[("nodeops_rollout_node_drain_seconds_count", None, None)] == 2, samples
    assert samples[("nodeops_rollout_new_node_ready_seconds_count", None, None)] >= 2, samples


def test_rotation_keeps_the_floor_and_every_invariant(sandbox, rolled):
    assert rolled["rc"] == 0, rolled["out"][-3000:]
    figures = assert_invariants(sandbox.report(), NODES, 1)
    assert figures["max_evictions_per_pod"] <= 1, figures


def test_a_rerun_right_after_has_nothing_to_do(sandbox, rolled, same_version, tmp_path):
    assert rolled["rc"] == 0, rolled["out"][-3000:]
    report = tmp_path / "result.json"
    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=AGE + QUICK, node_groups=same_version)
    assert rc == 0, out[-3000:]
    group = json.loads(report.read_text())["node_groups"][0]
    assert group["status"] == "up to date" and group["nodes_replaced"] == 0, group
    launched = [event for event in sandbox.events() if event["kind"] == "instance.launched" and event["t"] >= since]
    assert launched == [], launched
