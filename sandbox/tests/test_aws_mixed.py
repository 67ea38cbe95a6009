"""Groups with a MixedInstancesPolicy on the sandbox's AWS endpoint launch as AWS does, as a boto3 user observes it."""

import pytest

from sandbox.tests.test_aws_fidelity import client, describe, running


@pytest.fixture(scope="module")
def aws_sandbox(tmp_path_factory):
    yield from running(tmp_path_factory, speed=100.0, boot_seconds=0)


@pytest.fixture(scope="module")
def aws_estate(aws_sandbox):
    return aws_sandbox.provision(nodes=1, azs=2)


def launched(sandbox, name):
    return sorted((i["InstanceType"], i["LaunchTemplate"]["Version"]) for i in describe(sandbox, name)["Instances"])


def test_an_override_with_its_own_launch_template_launches_from_it_and_a_resize_keeps_the_policy(aws_sandbox, aws_estate):
    ec2 = client(aws_sandbox, "ec2")
    template = ec2.create_launch_template(LaunchTemplateName="mixed-own", LaunchTemplateData={
        "ImageId": aws_estate["amis"]["old"], "InstanceType": "m5.large"})["LaunchTemplate"]["LaunchTemplateId"]
    ec2.create_launch_template_version(LaunchTemplateId=template, SourceVersion="1", LaunchTemplateData={"ImageId": aws_estate["amis"]["new"]})
    asg = client(aws_sandbox, "autoscaling")

    def policy(main, override):
        return {"LaunchTemplate": {"LaunchTemplateSpecification": {"LaunchTemplateId": template, "Version": main},
                                   "Overrides": [{"InstanceType": "m6i.large",
                                                  "LaunchTemplateSpecification": {"LaunchTemplateId": template, "Version": override}},
                                                 {"InstanceType": "m5.large"}]}}

    asg.create_auto_scaling_group(AutoScalingGroupName="mixed-own", MinSize=0, MaxSize=4, DesiredCapacity=1,
                                  MixedInstancesPolicy=policy("1", "1"), VPCZoneIdentifier=aws_estate["subnets"]["us-east-1a"])
    # the first override (On-Demand's prioritized strategy), from its own launch template version
    assert launched(aws_sandbox, "mixed-own") == [("m6i.large", "1")]
    assert "LaunchTemplate" not in describe(aws_sandbox, "mixed-own")   # named in the policy only, as AWS shows it
    asg.update_auto_scaling_group(AutoScalingGroupName="mixed-own", MixedInstancesPolicy=policy("2", "1"), DesiredCapacity=2)
    assert launched(aws_sandbox, "mixed-own") == [("m6i.large", "1"), ("m6i.large", "1")]   # the override still names 1
    # a resize alone keeps the policy, as AWS does
    asg.update_auto_scaling_group(AutoScalingGroupName="mixed-own", MaxSize=5)
    kept = describe(aws_sandbox, "mixed-own")["MixedInstancesPolicy"]["LaunchTemplate"]
    assert kept["LaunchTemplateSpecification"]["Version"] == "2" and kept["Overrides"][0]["LaunchTemplateSpecification"]["Version"] == "1"
    asg.update_auto_scaling_group(AutoScalingGroupName="mixed-own", MixedInstancesPolicy=policy("2", "2"), DesiredCapacity=3)
    assert ("m6i.large", "2") in launched(aws_sandbox, "mixed-own")
