"""Faults of the new capacity: nodes that never become Ready, and an Availability Zone without capacity. The rollout
stops naming what is missing (or places the surge elsewhere), never drains an old node beyond the canary while the new
ones are not there, leaves the cluster serving and the processes resumed, and a rerun after the fault is cleared
finishes - the instances that never became nodes replaced through the termination gate like any other."""

import json
import time
from datetime import datetime, timezone

import pytest

from sandbox.drive.convergence import group_of, problems, record, sizes
from tests.integration.modules.conftest import assert_safe

READY_TIMEOUT = 20
FAST = ["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s",
        "rolling_update_node_ready_timeout=%ds" % READY_TIMEOUT]


def roll(sandbox, tmp_path, extra=()):
    report = tmp_path / ("result-%d.json" % len(list(tmp_path.glob("result-*.json"))))
    rc, out = sandbox.run_role_playbook(tmp_path, extra=FAST + list(extra), report=report)
    return rc, out, json.loads(report.read_text()) if report.exists() else None


def wait_past_the_ready_timeout(sandbox, seconds=READY_TIMEOUT):
    """Until every instance of the group has had the node-ready timeout since its launch, as for an operator who reruns
    after fixing the cause: the rerun then relaunches the instances that never became nodes, whatever the pace of the
    machine that ran the first run."""
    ids = [entry["InstanceId"] for entry in group_of(sandbox)["Instances"]]
    reservations = sandbox.aws("ec2").describe_instances(InstanceIds=ids)["Reservations"]
    newest = max(instance["LaunchTime"] for reservation in reservations for instance in reservation["Instances"])
    # LaunchTime is kept to the second
    time.sleep(max(0.0, seconds + 1.5 - (datetime.now(timezone.utc) - newest).total_seconds()))


def drained_nodes(sandbox):
    """Nodes the collection evicted pods from."""
    return sorted({e.get("node") for e in sandbox.events() if e["kind"] == "pod.terminating" and e.get("how") == "evicted"
                   and str(e.get("client") or "").startswith("nodeops.rollout")})


@pytest.mark.parametrize("surge", ["default", "0"])
def test_new_nodes_that_never_become_ready_stop_the_rollout_with_node_creation_failure(sandbox, tmp_path, surge):
    original = sizes(sandbox)
    sandbox.fault(nodes_never_ready=True)
    extra = ["rolling_update_max_surge=0"] if surge == "0" else []
    rc, out, result = roll(sandbox, tmp_path, extra)
    assert rc != 0, out[-4000:]
    group = result["node_groups"][0]
    assert group["status"] == "failed"
    assert "NodeCreationFailure" in group["message"], group["message"]
    assert "i-" in group["message"] and "Ready" in group["message"], group["message"]
    # nothing drained while no new node is there; without surge, the canary alone
    drained = drained_nodes(sandbox)
    assert len(drained) <= (1 if surge == "0" else 0), drained
    assert group_of(sandbox)["SuspendedProcesses"] == []
    report = sandbox.report()
    assert_safe(report)
    assert min(report["min_ready_schedulable_nodes"].values()) >= 2   # the cluster kept serving
    sandbox.fault(nodes_never_ready=False)
    first = group["message"][:200]
    wait_past_the_ready_timeout(sandbox)
    rc, out, result = roll(sandbox, tmp_path, extra)
    assert rc == 0, out[-4000:]
    assert result["node_groups"][0]["status"] == "replaced"
    record("nodes-never-ready-surge-" + surge, sandbox, outcome=first, drained_while_faulted=drained, rerun="replaced")
    assert problems(sandbox, original, 2) == []


def test_no_capacity_in_one_az_places_the_surge_in_the_others_and_finishes(sandbox, tmp_path):
    original = sizes(sandbox)
    short = "us-east-1a"
    assert short in {i["AvailabilityZone"] for i in group_of(sandbox)["Instances"]}, "an outdated node must be in that AZ"
    sandbox.fault(insufficient_capacity_azs=[short])
    rc, out, result = roll(sandbox, tmp_path)
    assert rc == 0, out[-4000:]
    assert result["node_groups"][0]["status"] == "replaced"
    assert "The group launched no new instance in %s" % short in out
    assert any(e["kind"] == "asg.launch_failed" and short in e.get("azs", []) for e in sandbox.events())
    placed = sorted({i["AvailabilityZone"] for i in group_of(sandbox)["Instances"]})
    assert short not in placed, placed
    # the outdated node of that AZ was drained like the others, its pods moved to the other AZs
    assert len(drained_nodes(sandbox)) == 3
    record("no-capacity-in-" + short, sandbox, outcome=result["node_groups"][0]["status"], azs_of_new_instances=placed)
    assert problems(sandbox, original, 2) == []
