"""Maintenance windows, end to end, on the real clock and in other time zones: outside its window a rollout refuses to
start, naming the next window's start in the window's zone and in UTC, before any request that changes something; a
window that closes before the next step could finish stops the rollout cleanly between two steps (held, drained nodes
kept for their termination, nothing else cordoned or tainted) with status paused, window closed; the next run inside a
window resumes it to the end.

The windows are computed around now so that the outcome does not depend on how fast the machine is: a step's predicted
duration is the estimates plus a post-drain delay of DELAY seconds, and the window leaves SLACK seconds for the first
step to start (setup and scale up take far less); the second step can only be decided after the first one's post-drain
delay, by which time the rest of the window is shorter than a step."""

import json
import os
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from tests.integration.controls import (
    CORDONED,
    MARK_TAINTS,
    assert_invariants,
    group_view,
    node_marks,
    result_of,
)

NODES, AZS, MAX_UNAVAILABLE = 4, 2, 1
ZONE = "America/New_York"
DELAY = SLACK = 80
DRAINED_AT = "nodeops.rollout/drained-at"
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


def window_text(start, seconds, zone=ZONE):
    """A window that starts at ``start`` (an aware datetime) and lasts ``seconds``, written as a survey would."""
    local = start.astimezone(ZoneInfo(zone))
    return "%s %s %ds %s" % (DAYS[local.weekday()], local.strftime("%H:%M"), seconds, zone)


def test_outside_the_window_the_rollout_refuses_to_start(sandbox, tmp_path):
    tomorrow = datetime.now(timezone.utc) + timedelta(days=1)
    window = window_text(tomorrow.replace(second=0, microsecond=0), 3600, "Asia/Kolkata")
    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, extra=[json.dumps({"rolling_update_window": window})])
    assert rc != 0, out[-3000:]
    assert "is outside the maintenance window (%s 1h Asia/Kolkata); the next one starts" % window.split(" 3600s")[0] in out, out[-3000:]
    assert " IST (Asia/Kolkata), " in out and "Nothing was changed" in out
    assert sandbox.mutating_requests(since=since) == []


def test_a_closing_window_pauses_between_steps_and_the_next_run_resumes(sandbox, tmp_path):
    original = group_view(sandbox)
    now = datetime.now(timezone.utc)
    start = now.replace(second=0, microsecond=0) - timedelta(minutes=1)
    step = 1 + DELAY + 1   # estimate_drain + post-drain delay + estimate_boot, one validation pass
    closes = now + timedelta(seconds=SLACK + step)
    window = window_text(start, int((closes - start).total_seconds()))
    report = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=[
        json.dumps({"rolling_update_window": window}), "rolling_update_post_drain_delay=%d" % DELAY,
        "rolling_update_estimate_drain=1s", "rolling_update_estimate_boot=1s", "rolling_update_validate_passes=1",
        "rolling_update_max_surge=1"])
    assert rc == 0, out[-3000:]
    result = result_of(report)
    assert result["status"] == "paused" and result["reason"] == "window closed", result
    assert "the maintenance window closes" in result["message"] and "(%s)" % ZONE in result["message"], result
    assert datetime.now(timezone.utc) < closes + timedelta(seconds=30)   # it stopped before the window's end, not after
    drained = [batch for batch in result["batches"] if batch["nodes"]]
    assert drained, result   # it did drain before the window closed

    held = group_view(sandbox)
    assert held["state"]["id"] and held["suspended"] == [] and held["sizes"][2] > NODES, held
    marked = node_marks(sandbox)
    assert marked, "the drained nodes wait, cordoned, for their termination"
    nodes = sandbox.core().list_node().items
    assert nodes, "the cluster has no node to check"
    for node in nodes:
        annotations = node.metadata.annotations or {}
        if node.metadata.name in marked:
            assert node.spec.unschedulable and CORDONED in annotations and DRAINED_AT in annotations, node.metadata.name
        else:
            assert not any(taint.key in MARK_TAINTS for taint in node.spec.taints or [])

    rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=[
        json.dumps({"rolling_update_window": "daily 00:00 24h %s" % ZONE}), "rolling_update_post_drain_delay=1",
        "rolling_update_validate_passes=1", "rolling_update_max_surge=1"])
    assert rc == 0, out[-3000:]
    result = result_of(report)
    assert result["status"] == "replaced" and result["plan"]["resumed"], result
    after = group_view(sandbox)
    assert after["sizes"] == original["sizes"] and after["state_tags"] == {} and node_marks(sandbox) == {}, after
    assert set(after["members"].values()) == {"2"} and len(after["members"]) == NODES, after
    figures = assert_invariants(sandbox.report(), NODES, MAX_UNAVAILABLE)
    print("invariants", figures)
