"""Warm pools on the sandbox's AWS endpoint behave as AWS runs them, as a boto3 user observes it.

One AwsSandbox serves the module (100 simulated seconds per wall second, a 60 s boot); each test makes its own group.
"""

import pytest
from botocore.exceptions import ClientError

from sandbox.tests.test_aws_fidelity import client, describe, ec2_instances, make_group, running, wait_for

SPEED = 100.0
BOOT = 60.0


@pytest.fixture(scope="module")
def aws_sandbox(tmp_path_factory):
    yield from running(tmp_path_factory, speed=SPEED, boot_seconds=BOOT, reconcile_seconds=5)


@pytest.fixture(scope="module")
def aws_estate(aws_sandbox):
    return aws_sandbox.provision(nodes=1, azs=2)


def pool(sandbox, name):
    return {i["InstanceId"]: (i["LifecycleState"], i["LaunchTemplate"]["Version"])
            for i in client(sandbox, "autoscaling").describe_warm_pool(AutoScalingGroupName=name)["Instances"]}


def settled(sandbox, name, size, version):
    def check():
        found = pool(sandbox, name)
        return len(found) == size and all(value == ("Warmed:Stopped", version) for value in found.values()) and found
    return wait_for(check, timeout=10)


def new_version(sandbox, estate, template_id, name):
    ec2 = client(sandbox, "ec2")
    ec2.create_launch_template_version(LaunchTemplateId=template_id, SourceVersion="1", LaunchTemplateData={"ImageId": estate["amis"]["new"]})
    client(sandbox, "autoscaling").update_auto_scaling_group(AutoScalingGroupName=name, LaunchTemplate={"LaunchTemplateId": template_id, "Version": "2"})


def test_the_pool_prepares_stopped_instances_and_a_scale_out_takes_them_first_whatever_their_version(aws_sandbox, aws_estate):
    template_id = make_group(aws_sandbox, aws_estate, "warm-out", 1, min_size=1, max_size=4, azs=("us-east-1a", "us-east-1b"))
    asg = client(aws_sandbox, "autoscaling")
    asg.put_warm_pool(AutoScalingGroupName="warm-out", MinSize=1, PoolState="Stopped")
    # max 4 - desired 1: three prepared instances, stopped once booted, and out of the cluster's sight meanwhile
    warm = settled(aws_sandbox, "warm-out", 3, "1")
    assert warm and {i["State"]["Name"] for i in ec2_instances(aws_sandbox, warm).values()} == {"stopped"}
    assert not set(warm) & set(i["instance_id"] for i in aws_sandbox.instances())
    new_version(aws_sandbox, aws_estate, template_id, "warm-out")
    assert set(pool(aws_sandbox, "warm-out").values()) == {("Warmed:Stopped", "1")}   # the change leaves the pool as it is
    asg.set_desired_capacity(AutoScalingGroupName="warm-out", DesiredCapacity=3)
    members = {i["InstanceId"]: i["LaunchTemplate"]["Version"] for i in describe(aws_sandbox, "warm-out")["Instances"]}
    # the two new members are warm instances of version 1, though the group launches version 2
    assert len(members) == 3 and sum(1 for iid in members if iid in warm) == 2
    assert sorted(members.values()) == ["1", "1", "1"]
    assert wait_for(lambda: all(i["LifecycleState"] == "InService" for i in describe(aws_sandbox, "warm-out")["Instances"]), timeout=5)
    # max 4 - desired 3, at least MinSize 1: the pool keeps the one version 1 instance it has left
    assert settled(aws_sandbox, "warm-out", 1, "1")
    asg.set_desired_capacity(AutoScalingGroupName="warm-out", DesiredCapacity=4)
    # ... and refills from version 2 once it gave that one away too
    assert settled(aws_sandbox, "warm-out", 1, "2")


def test_terminating_warm_instances_refills_the_pool_from_the_current_version(aws_sandbox, aws_estate):
    template_id = make_group(aws_sandbox, aws_estate, "warm-refresh", 1, min_size=1, max_size=3, azs=("us-east-1a", "us-east-1b"))
    asg = client(aws_sandbox, "autoscaling")
    asg.put_warm_pool(AutoScalingGroupName="warm-refresh", MinSize=2)
    old = settled(aws_sandbox, "warm-refresh", 2, "1")
    new_version(aws_sandbox, aws_estate, template_id, "warm-refresh")
    for instance_id in old:
        asg.terminate_instance_in_auto_scaling_group(InstanceId=instance_id, ShouldDecrementDesiredCapacity=False)
    assert describe(aws_sandbox, "warm-refresh")["DesiredCapacity"] == 1
    assert {i["State"]["Name"] for i in ec2_instances(aws_sandbox, old).values()} == {"terminated"}
    fresh = settled(aws_sandbox, "warm-refresh", 2, "2")
    assert fresh and not set(fresh) & set(old)


def test_a_warm_pool_is_refused_on_a_mixed_instances_group_and_deleting_one_terminates_its_instances(aws_sandbox, aws_estate):
    make_group(aws_sandbox, aws_estate, "warm-delete", 1, min_size=1, max_size=2, azs=("us-east-1a",))
    asg = client(aws_sandbox, "autoscaling")
    asg.put_warm_pool(AutoScalingGroupName="warm-delete")
    warm = settled(aws_sandbox, "warm-delete", 1, "1")
    asg.delete_warm_pool(AutoScalingGroupName="warm-delete", ForceDelete=True)
    assert {i["State"]["Name"] for i in ec2_instances(aws_sandbox, warm).values()} == {"terminated"}
    template = client(aws_sandbox, "ec2").create_launch_template(
        LaunchTemplateName="warm-mixed", LaunchTemplateData={"ImageId": aws_estate["amis"]["old"]})["LaunchTemplate"]
    asg.create_auto_scaling_group(
        AutoScalingGroupName="warm-mixed", MinSize=0, MaxSize=1, DesiredCapacity=0, AvailabilityZones=["us-east-1a"],
        MixedInstancesPolicy={"LaunchTemplate": {"LaunchTemplateSpecification": {"LaunchTemplateId": template["LaunchTemplateId"]},
                                                 "Overrides": [{"InstanceType": "m5.large"}, {"InstanceType": "m6i.large"}]}})
    with pytest.raises(ClientError) as err:
        asg.put_warm_pool(AutoScalingGroupName="warm-mixed")
    assert err.value.response["Error"]["Code"] == "ValidationError" and "mixed instances policy" in err.value.response["Error"]["Message"]
