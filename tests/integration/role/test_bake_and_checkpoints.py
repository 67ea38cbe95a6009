"""The bake time and checkpoints, end to end, with the abort alarms watched while the rollout holds: the plan states the
holds and counts them in its estimate; no wave is drained until the previous wave's replacements are Ready nodes and
have been for the bake time; a checkpoint at 50 % caps the first waves at half the group and holds its own, longer wait
there; an alarm that goes off during that wait stops the rollout at once, naming the alarm, and the group is held; once
the alarm is back to OK the next run resumes to the end, baking the last wave before it ends."""

import os
import time

import pytest

from tests.integration.controls import (
    GROUP,
    QUICK,
    Watcher,
    assert_invariants,
    group_view,
    node_marks,
    ours,
    result_of,
)

NODES, AZS, MAX_UNAVAILABLE, SPEED = 4, 2, 1, 20
BAKE, CHECKPOINT, ALARM_AFTER = 8, 40, 12          # wall seconds
ALARM = "shop-latency"
HOLDS = QUICK + ["rolling_update_max_surge=1", "rolling_update_bake_time=%ds" % BAKE,
                 "rolling_update_checkpoints=50%%:%ds" % CHECKPOINT, "rolling_update_abort_alarms=" + ALARM]


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    handle = start_sandbox(nodes=NODES, azs=AZS, speed=SPEED, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])
    handle.aws("cloudwatch").put_metric_alarm(
        AlarmName=ALARM, MetricName="p99", Namespace="shop", Statistic="Maximum", Period=60, EvaluationPeriods=1,
        Threshold=0.5, ComparisonOperator="GreaterThanThreshold")
    return handle


def waves(events):
    """The rollout's drains as waves: ``[(first cordon t, [nodes])]``, cordons within 5 simulated seconds being one."""
    found = []
    for event in events:
        if event["kind"] == "node.cordoned" and ours(event):
            if found and event["t"] - found[-1][0] < 5:
                found[-1][1].append(event["node"])
            else:
                found.append((event["t"], [event["node"]]))
    return found


def test_the_plan_states_the_holds(sandbox, tmp_path):
    report = tmp_path / "plan.json"
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="plan.yml", report=report, extra=HOLDS)
    assert rc == 0, out[-3000:]
    plan = result_of(report)["plan"]
    assert "holds: bake %ds after each wave; checkpoint at 50%% (2 nodes), then %ds" % (BAKE, CHECKPOINT) in out
    assert [batch["hold_seconds"] for batch in plan["batches"]] == [CHECKPOINT, BAKE]
    assert [len(batch["instance_ids"]) for batch in plan["batches"]] == [2, 2]
    assert "abort alarms: %s (OK)" % ALARM in out


def test_waves_bake_a_checkpoint_holds_and_an_alarm_during_the_hold_stops_the_rollout(sandbox, tmp_path):
    original = group_view(sandbox)
    since = sandbox.now()
    cloudwatch = sandbox.aws("cloudwatch")

    def new_node_ready(event):
        # the first wave's replacements are Ready: the checkpoint's hold starts
        return event["kind"] == "node.ready" and any(e["kind"] == "instance.terminated" and e["t"] > since
                                                     for e in sandbox.events() if e["t"] < event["t"])

    fired = {}

    def go_off(event):
        # some way into the checkpoint's wait: without the hold the next wave would have been drained by then
        time.sleep(ALARM_AFTER)
        fired["wall"] = time.time()
        cloudwatch.set_alarm_state(AlarmName=ALARM, StateValue="ALARM", StateReason="Threshold Crossed: p99 above 0.5s")

    watcher = Watcher(sandbox, since, new_node_ready, go_off)
    watcher.start()
    report = tmp_path / "result.json"
    try:
        rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=HOLDS)
    finally:
        watcher.stop()
    assert rc != 0 and watcher.fired is not None, out[-3000:]
    result = result_of(report)
    assert result["status"] == "failed" and "abort alarm '%s' is in ALARM" % ALARM in result["reason"], result
    # watched while it held: its last look came within seconds of the alarm, not after the checkpoint's wait
    stopped = max(e["wall"] for e in sandbox.events() if e["kind"] == "aws.request" and "rollout_step" in str(e.get("client")))
    assert stopped - fired["wall"] < CHECKPOINT / 2, (stopped, fired)
    # the checkpoint at 50 % held the second wave back for the ALARM_AFTER seconds its replacements had been Ready
    drained = waves([e for e in sandbox.events() if e["t"] >= since])
    assert [len(nodes) for _t, nodes in drained] == [2], drained
    assert fired["wall"] - watcher.fired["wall"] >= ALARM_AFTER, (watcher.fired, fired)
    held = group_view(sandbox)
    assert held["state"]["id"] and held["suspended"] == [], held

    cloudwatch.set_alarm_state(AlarmName=ALARM, StateValue="OK", StateReason="back to normal")
    resumed = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=HOLDS)
    assert rc == 0, out[-3000:]
    result = result_of(report)
    assert result["status"] == "replaced", result
    events = [e for e in sandbox.events() if e["t"] >= since]
    drained = waves(events)
    assert [len(nodes) for _t, nodes in drained] == [2, 2], drained
    assert drained[1][0] > resumed, drained
    # the rollout did not end before its last wave baked
    last_ready = max(e["t"] for e in events if e["kind"] == "node.ready")
    restored = max(e["t"] for e in events if e["kind"] == "asg.size" and e["group"] == GROUP)
    assert restored - last_ready >= BAKE * SPEED * 0.9, (restored, last_ready)
    after = group_view(sandbox)
    assert after["sizes"] == original["sizes"] and after["state_tags"] == {} and node_marks(sandbox) == {}, after
    figures = assert_invariants(sandbox.report(), NODES, MAX_UNAVAILABLE)
    print("invariants", figures)
