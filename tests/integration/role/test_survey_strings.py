"""AWX surveys and ``-e key=value`` pass every variable as a string: the role must read "true"/"no"/"2" as the
booleans and numbers they mean, end to end, and refuse a wrong value by name before touching anything."""

import json
import os

import pytest

from sandbox.drive.handle import floor_until, promised_floor
from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=3, azs=3, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


# what a survey sends: every value a string
SURVEY = ["rolling_update_canary=false", "rolling_update_force=no", "rolling_update_delete_emptydir_data=yes",
          "rolling_update_restart_single_replica=True", "rolling_update_max_unavailable=2", "rolling_update_max_surge=50%",
          "rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s",
          "rolling_update_grace_period=5", "rolling_update_drain_timeout=2m", "rolling_update_plan=false",
          # the operator's controls as a survey answers them: choices, durations and text
          "rolling_update_on_failure=rollback", "rolling_update_bake_time=1s", "rolling_update_checkpoints=100%:1s",
          json.dumps({"rolling_update_window": "daily 00:00 24h Europe/Berlin"})]


def run(sandbox, tmp_path, playbook, extra, report):
    return sandbox.run_role_playbook(tmp_path, playbook=playbook, extra=extra, report=report)


def test_a_wrong_survey_value_is_refused_by_name_before_anything_changes(sandbox, tmp_path):
    since = sandbox.now() + 0.01
    rc, out = run(sandbox, tmp_path, "upgrade.yml", ["rolling_update_force=maybe"], tmp_path / "r.json")
    assert rc != 0
    assert "rolling_update_force" in out
    assert [e for e in sandbox.mutating_requests(since=since) if e["t"] > since] == []


def test_string_values_from_a_survey_drive_a_whole_rollout(sandbox, tmp_path):
    report = tmp_path / "result.json"
    rc, out = run(sandbox, tmp_path, "upgrade.yml", SURVEY, report)
    assert rc == 0, out[-3000:]
    result = json.loads(report.read_text())
    group = result["node_groups"][0]
    assert group["status"] == "replaced" and int(group["nodes_replaced"]) == 3
    # max_surge "50%" of 3 rounds up to 2, max_unavailable "2": 5 Ready nodes over a floor of 1, so all 3 drain at once
    assert [len(batch["instance_ids"]) for batch in group["batches"]] == [3]
    assert "surge by 2" in out
    asg = sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    assert (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"]) == (3, 3, 3)
    invariants = sandbox.report()
    assert_safe(invariants)
    assert invariants["deployments"]["shop/checkout-worker"]["zero_ready_seconds"] == 0.0  # restarted, not evicted


def test_the_floor_the_docs_promise_held_during_the_survey_rollout(sandbox):
    """docs/how-a-rollout-works.md, "Capacity during the upgrade": the group never has fewer Ready schedulable nodes
    than its original size - max_unavailable (3 - 2 = 1 here), and never more instances than original size + surge
    (3 + 2). Tainted (NoSchedule) and cordoned nodes do not count."""
    size, surge, unavailable = 3, 2, 2
    events = sandbox.events()
    history = [e for e in events if e["kind"] == "asg.size" and e["group"] == GROUP]
    assert any(e["desired"] == size + surge for e in history), history
    assert all(e["desired"] <= size + surge and e["max"] <= size + surge for e in history), history
    whole = floor_until(events, sandbox.now())[GROUP]
    assert promised_floor(size, unavailable) == size - unavailable
    assert whole >= promised_floor(size, unavailable), (whole, "over the whole rollout")


def test_without_surge_a_canary_goes_first_and_the_old_nodes_are_only_softly_tainted(sandbox, tmp_path):
    """Roll back to the old AMI with max_surge 0: no capacity is added, a canary of one goes first, and the old nodes
    get a PreferNoSchedule taint so the canary's pods are not left Pending while no new node exists."""
    report = tmp_path / "result.json"
    since = sandbox.now()
    extra = ["rolling_update_max_surge=0", "rolling_update_max_unavailable=2", "rolling_update_post_drain_delay=1",
             "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"]
    rc, out = sandbox.run_role_playbook(tmp_path, extra=extra, report=report,
                                        node_groups=[{"name": GROUP, "image_id": sandbox.state["amis"]["old"]}])
    assert rc == 0, out[-3000:]
    assert "outdated nodes PreferNoSchedule" in out
    group = json.loads(report.read_text())["node_groups"][0]
    assert [len(batch["instance_ids"]) for batch in group["batches"]] == [1, 2]   # the canary, then max_unavailable
    history = [h for h in sandbox.report()["asg_size_history"][GROUP] if h["t"] >= since]
    assert all(h["max"] == 3 for h in history), history   # no surge: the group never grew past its size
    invariants = sandbox.report()
    assert_safe(invariants)
    assert min(invariants["min_ready_schedulable_nodes"].values()) >= 1
    nodes = sandbox.core().list_node().items
    assert not any(t.key == "nodeops.rollout/outdated" for n in nodes for t in n.spec.taints or [])
