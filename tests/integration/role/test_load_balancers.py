"""A group behind a load balancer target group: its nodes leave the target group while they drain, and no instance is
terminated before it has left; no node is a healthy target without a Ready pod on it, no target is cut by a
termination, and the result records each wait.

The sandbox's target group drains a deregistered target for its deregistration delay on the sandbox clock, and its load
balancer controller deregisters a node labelled node.kubernetes.io/exclude-from-external-load-balancers, as the AWS
Load Balancer Controller does (sandbox/aws/targets.py, sandbox/loadbalancer.py).
"""

import json
import os

import pytest

from sandbox.drive.handle import wait_until
from tests.integration.load_balancers import assert_left_before_terminated, attach_target_group

pytestmark = pytest.mark.reference

GROUP = "sandbox-nodes"
SPEED = 20
DELAY = 600   # simulated seconds of deregistration delay: 30 s of wall time, longer than a step that drains here


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=3, azs=3, speed=SPEED, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


def targets(elbv2, arn):
    health = elbv2.describe_target_health(TargetGroupArn=arn)["TargetHealthDescriptions"]
    return {entry["Target"]["Id"]: entry["TargetHealth"]["State"] for entry in health}


def member_ids(sandbox):
    group = sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    return sorted(instance["InstanceId"] for instance in group["Instances"])


def test_nodes_leave_the_target_group_while_they_drain_and_are_terminated_only_once_they_have_left(sandbox, tmp_path):
    elbv2 = sandbox.aws("elbv2")
    arn = attach_target_group(sandbox, GROUP, DELAY)
    old = member_ids(sandbox)
    assert targets(elbv2, arn) == {instance_id: "healthy" for instance_id in old}

    report_file = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(
        tmp_path, report=report_file,
        # the post-drain delay at its default: the target group is read, so no fixed delay
        extra=["rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"])
    assert rc == 0, out[-4000:]
    result = json.loads(report_file.read_text())["node_groups"][0]
    assert result["status"] == "replaced" and result["nodes_replaced"] == 3, result

    # the plan named the target group and its delay, and waits for it instead of a fixed delay
    assert [(tg["name"], tg["deregistration_delay"], tg["waited_for"], tg["sources"]) for tg in result["plan"]["target_groups"]] == [
        ("web", DELAY, True, ["group"])]
    assert result["plan"]["timings"]["post_drain_delay"] == 0, result["plan"]["timings"]
    # each old instance waited for the target group, about what was left of its delay after the drain, never timed out
    waits = {wait["instance_id"]: wait for wait in result["termination_waits"]}
    assert sorted(waits) == old, result["termination_waits"]
    for wait in waits.values():
        assert wait["target_groups"] == ["web"] and wait["volumes"] == [] and not wait["timed_out"]
        assert 0 < wait["waited_seconds"] < DELAY / SPEED + 5, wait

    # no node was a healthy target with no Ready pod on it, no target was cut, each left before its termination
    assert_left_before_terminated(sandbox, old)
    # the new instances took their place in the target group, registered by the group once InService
    new = member_ids(sandbox)
    assert not set(new) & set(old)
    wait_until("the old targets to be gone", lambda: targets(elbv2, arn) == {instance_id: "healthy" for instance_id in new},
               timeout=30)
