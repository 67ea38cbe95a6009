"""Termination lifecycle hooks on the sandbox's AWS endpoint behave as AWS runs them, as a boto3 user observes it.

One AwsSandbox serves the module (100 simulated seconds per wall second); each test makes its own group.
"""

import time

import pytest
from botocore.exceptions import ClientError

from sandbox.tests.test_aws_fidelity import client, describe, ec2_instances, make_group, running, wait_for

SPEED = 100.0


@pytest.fixture(scope="module")
def aws_sandbox(tmp_path_factory):
    yield from running(tmp_path_factory, speed=SPEED, boot_seconds=0)


@pytest.fixture(scope="module")
def aws_estate(aws_sandbox):
    return aws_sandbox.provision(nodes=2, azs=2)


def hooked_group(sandbox, estate, name, heartbeat=60, result="CONTINUE", size=2):
    make_group(sandbox, estate, name, size, min_size=0, max_size=size + 2, azs=("us-east-1a", "us-east-1b"))
    client(sandbox, "autoscaling").put_lifecycle_hook(
        AutoScalingGroupName=name, LifecycleHookName="drain-by-ntth", LifecycleTransition="autoscaling:EC2_INSTANCE_TERMINATING",
        HeartbeatTimeout=heartbeat, DefaultResult=result)
    return [instance["InstanceId"] for instance in describe(sandbox, name)["Instances"]]


def lifecycle(sandbox, name):
    return {instance["InstanceId"]: instance["LifecycleState"] for instance in describe(sandbox, name)["Instances"]}


def ec2_state(sandbox, instance_id):
    return ec2_instances(sandbox, [instance_id])[instance_id]["State"]["Name"]


def test_a_terminated_instance_waits_for_the_hook_then_its_default_result_ends_it(aws_sandbox, aws_estate):
    ids = hooked_group(aws_sandbox, aws_estate, "hook-timeout", heartbeat=300)
    started = time.monotonic()   # the heartbeat timeout runs from the termination: the reads below take time too
    client(aws_sandbox, "autoscaling").terminate_instance_in_auto_scaling_group(InstanceId=ids[0], ShouldDecrementDesiredCapacity=False)
    states = lifecycle(aws_sandbox, "hook-timeout")
    assert states[ids[0]] == "Terminating:Wait" and ec2_state(aws_sandbox, ids[0]) == "running"
    # no longer part of the desired capacity: its replacement launches meanwhile
    assert sum(1 for state in states.values() if state == "InService") == 2 and len(states) == 3
    assert wait_for(lambda: ids[0] not in lifecycle(aws_sandbox, "hook-timeout"), timeout=10)
    assert time.monotonic() - started >= 300 / SPEED * 0.8      # the heartbeat timeout, not sooner
    assert ec2_state(aws_sandbox, ids[0]) == "terminated"
    done = [e for e in aws_sandbox.events.events("instance.lifecycle_done") if e["instance_id"] == ids[0]]
    assert [(e["hook"], e["result"], e["how"]) for e in done] == [("drain-by-ntth", "CONTINUE", "timeout")]


def test_complete_lifecycle_action_ends_the_wait_and_a_heartbeat_extends_it(aws_sandbox, aws_estate):
    ids = hooked_group(aws_sandbox, aws_estate, "hook-complete", heartbeat=3600)
    asg = client(aws_sandbox, "autoscaling")
    asg.terminate_instance_in_auto_scaling_group(InstanceId=ids[0], ShouldDecrementDesiredCapacity=True)
    asg.record_lifecycle_action_heartbeat(AutoScalingGroupName="hook-complete", LifecycleHookName="drain-by-ntth", InstanceId=ids[0])
    assert lifecycle(aws_sandbox, "hook-complete")[ids[0]] == "Terminating:Wait"
    assert describe(aws_sandbox, "hook-complete")["DesiredCapacity"] == 1
    asg.complete_lifecycle_action(AutoScalingGroupName="hook-complete", LifecycleHookName="drain-by-ntth",
                                  LifecycleActionResult="CONTINUE", InstanceId=ids[0])
    assert ids[0] not in lifecycle(aws_sandbox, "hook-complete") and ec2_state(aws_sandbox, ids[0]) == "terminated"
    with pytest.raises(ClientError) as err:   # nothing holds it any more
        asg.complete_lifecycle_action(AutoScalingGroupName="hook-complete", LifecycleHookName="drain-by-ntth",
                                      LifecycleActionResult="CONTINUE", InstanceId=ids[0])
    assert err.value.response["Error"]["Code"] == "ValidationError"
    assert "No active Lifecycle Action found with instance ID %s" % ids[0] in err.value.response["Error"]["Message"]


def test_a_scale_in_waits_too(aws_sandbox, aws_estate):
    ids = hooked_group(aws_sandbox, aws_estate, "hook-scale-in", heartbeat=3600)
    client(aws_sandbox, "autoscaling").set_desired_capacity(AutoScalingGroupName="hook-scale-in", DesiredCapacity=1)
    states = lifecycle(aws_sandbox, "hook-scale-in")
    assert sorted(states.values()) == ["InService", "Terminating:Wait"] and set(states) == set(ids)


@pytest.mark.parametrize("params, words", [
    ({"HeartbeatTimeout": 10}, "between 30 and 7200"),
    ({"DefaultResult": "RETRY"}, "CONTINUE and ABANDON"),
    ({"LifecycleTransition": "autoscaling:EC2_INSTANCE_REBOOTING"}, "Invalid Lifecycle Transition"),
])
def test_bad_hooks_are_refused(aws_sandbox, aws_estate, params, words):  # pylint: disable=unused-argument
    hook = dict({"AutoScalingGroupName": "sandbox-nodes", "LifecycleHookName": "bad",
                 "LifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING"}, **params)
    with pytest.raises(ClientError) as err:
        client(aws_sandbox, "autoscaling").put_lifecycle_hook(**hook)
    assert err.value.response["Error"]["Code"] == "ValidationError" and words in err.value.response["Error"]["Message"]
