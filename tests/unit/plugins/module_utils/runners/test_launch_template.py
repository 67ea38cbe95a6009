# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""launch_template.py: the template a group names and the version numbers it resolves to, then
launch_template_version run against moto (aws_world)."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.launch_template import resolve_version, template_spec
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.aws_world import mutating, recorded_state


def test_template_spec_reads_the_template_or_the_mixed_instances_policy():
    assert template_spec({"LaunchTemplate": {"LaunchTemplateId": "lt-1", "LaunchTemplateName": "w"}}) == {
        "id": "lt-1", "name": "w", "version": "$Default", "mixed_instances_policy": False, "overrides": []}
    mixed = {"MixedInstancesPolicy": {"LaunchTemplate": {"LaunchTemplateSpecification": {"LaunchTemplateId": "lt-2", "Version": "$Latest"},
                                                         "Overrides": [{"InstanceType": "m5.large"}, {"InstanceType": "m6g.large",
                                                                       "LaunchTemplateSpecification": {"LaunchTemplateName": "arm", "Version": "3"}}]}}}
    assert template_spec(mixed) == {"id": "lt-2", "name": None, "version": "$Latest", "mixed_instances_policy": True,
                                    "overrides": [{"instance_type": "m6g.large", "id": None, "name": "arm", "version": "3"}]}
    assert template_spec({"LaunchConfigurationName": "old-style"}) is None


TEMPLATE = {"LaunchTemplateId": "lt-1", "LaunchTemplateName": "w", "DefaultVersionNumber": 2, "LatestVersionNumber": 5}


@pytest.mark.parametrize("version, expected", [("$Latest", 5), ("$Default", 2), (None, 2), ("", 2), ("3", 3), (4, 4), ("5", 5)])
def test_resolve_version(version, expected):
    assert resolve_version(TEMPLATE, version) == expected


@pytest.mark.parametrize("version, words", [
    ("6", "has no version 6; its versions go up to 5"), ("0", "is not allowed"), ("latest", "is not allowed"), (True, "is not allowed"),
])
def test_resolve_version_refuses(version, words):
    with pytest.raises(RolloutError) as error:
        resolve_version(TEMPLATE, version)
    assert error.value.msg.startswith("version: ") and words in error.value.msg


# ---------------------------------------------------------------------------------------------------------------------
# launch_template_version, run against moto
# ---------------------------------------------------------------------------------------------------------------------

def test_new_ami_makes_a_version_and_points_the_group_at_its_number(world, run):
    result = run("launch_template_version", asg_name="workers", image_id=world.new_ami)
    assert result["changed"] and result["created"]
    assert (result["previous_version"], result["previous_version_spec"], result["version"]) == (1, "$Latest", 2)
    assert (result["previous_image_id"], result["image_id"]) == (world.old_ami, world.new_ami)
    assert world.group()["LaunchTemplate"]["Version"] == "2"
    version = world.ec2.describe_launch_template_versions(LaunchTemplateId=world.lt_id, Versions=["2"])["LaunchTemplateVersions"][0]
    assert version["LaunchTemplateData"]["ImageId"] == world.new_ami
    again = run("launch_template_version", asg_name="workers", image_id=world.new_ami)
    assert again["changed"] is False and again["created"] is False and again["version"] == 2
    assert world.ec2.describe_launch_templates(LaunchTemplateIds=[world.lt_id])["LaunchTemplates"][0]["LatestVersionNumber"] == 2


def test_same_ami_only_pins_the_version_number(world, run):
    result = run("launch_template_version", asg_name="workers", image_id=world.old_ami)
    assert result["changed"] and not result["created"] and result["version"] == 1
    assert world.group()["LaunchTemplate"]["Version"] == "1"
    assert run("launch_template_version", asg_name="workers")["changed"] is False


def test_check_and_diff_mode_predict_without_changing(world, run, api_calls):
    result = run("launch_template_version", check=True, diff=True, asg_name="workers", image_id=world.new_ami, set_default=True)
    assert result["changed"] and result["created"] and result["version"] == 2 and result["default_version"] == 2
    assert result["diff"] == {"before": {"launch_template_version": "$Latest", "image_id": world.old_ami, "default_version": 1},
                              "after": {"launch_template_version": "2", "image_id": world.new_ami, "default_version": 2}}
    assert mutating(api_calls) == []
    assert world.group()["LaunchTemplate"]["Version"] == "$Latest"
    real = run("launch_template_version", diff=True, asg_name="workers", image_id=world.new_ami, set_default=True)
    assert real["diff"] == result["diff"]
    assert [call[1] for call in mutating(api_calls)] == ["CreateLaunchTemplateVersion", "ModifyLaunchTemplate", "UpdateAutoScalingGroup"]
    assert world.ec2.describe_launch_templates(LaunchTemplateIds=[world.lt_id])["LaunchTemplates"][0]["DefaultVersionNumber"] == 2


def test_ssm_parameter_and_existing_versions(world, run):
    result = run("launch_template_version", asg_name="workers", ssm_parameter="/unit/ami/new")
    assert result["image_id"] == world.new_ami and result["version"] == 2
    result = run("launch_template_version", asg_name="workers", version="$Default")
    assert result["changed"] and result["version"] == 1 and world.group()["LaunchTemplate"]["Version"] == "1"
    result = run("launch_template_version", asg_name="workers", version="2")
    assert result["version"] == 2 and result["image_id"] == world.new_ami


def test_an_interrupted_run_reuses_the_version_it_made(world, run):
    world.ec2.create_launch_template_version(LaunchTemplateId=world.lt_id, SourceVersion="1", LaunchTemplateData={"ImageId": world.new_ami})
    world.asg.update_auto_scaling_group(AutoScalingGroupName="workers", LaunchTemplate={"LaunchTemplateId": world.lt_id, "Version": "1"})
    result = run("launch_template_version", asg_name="workers", image_id=world.new_ami)
    assert result["created"] is False and result["reused_interrupted_version"] is True and result["version"] == 2


def test_overrides_of_the_groups_own_template_move_with_it_and_another_template_is_refused_naming_it(world, run, api_calls):
    def mixed(name, own):
        world.asg.create_auto_scaling_group(
            AutoScalingGroupName=name, MinSize=0, MaxSize=2, DesiredCapacity=0, VPCZoneIdentifier=",".join(world.subnets),
            MixedInstancesPolicy={"LaunchTemplate": {"LaunchTemplateSpecification": {"LaunchTemplateId": world.lt_id, "Version": "1"},
                                                     "Overrides": [{"InstanceType": "m6i.large", "LaunchTemplateSpecification": own},
                                                                   {"InstanceType": "m5.large"}]}})

    mixed("same", {"LaunchTemplateId": world.lt_id, "Version": "1"})
    result = run("launch_template_version", asg_name="same", image_id=world.new_ami)
    assert result["changed"] and result["version"] == 2
    policy = world.group("same")["MixedInstancesPolicy"]["LaunchTemplate"]
    assert policy["LaunchTemplateSpecification"]["Version"] == "2"
    assert policy["Overrides"][0]["LaunchTemplateSpecification"] == {"LaunchTemplateId": world.lt_id, "Version": "2"}
    assert "LaunchTemplateSpecification" not in policy["Overrides"][1]
    assert run("launch_template_version", asg_name="same", image_id=world.new_ami)["changed"] is False

    other = world.ec2.create_launch_template(LaunchTemplateName="arm", LaunchTemplateData={"ImageId": world.old_ami})["LaunchTemplate"]
    mixed("other", {"LaunchTemplateId": other["LaunchTemplateId"], "Version": "1"})
    api_calls.clear()
    refused = run("launch_template_version", asg_name="other", image_id=world.new_ami)
    assert refused["failed"] and refused["msg"].startswith(
        "asg_name: Auto Scaling group 'other' cannot be rolled: MixedInstancesPolicy override for instance type m6i.large launches "
        "from launch template %s version 1, not the group's launch template %s (workers)" % (other["LaunchTemplateId"], world.lt_id))
    assert mutating(api_calls) == []


def test_mixed_instances_policy_groups_are_pointed_through_the_policy(world, run):
    world.create_group("mixed", 2, version="$Latest", mixed=True)
    run("launch_template_version", asg_name="mixed", image_id=world.new_ami)
    spec = world.group("mixed")["MixedInstancesPolicy"]["LaunchTemplate"]["LaunchTemplateSpecification"]
    assert spec["Version"] == "2" and spec["LaunchTemplateId"] == world.lt_id


@pytest.mark.parametrize("args, message", [
    ({"asg_name": "nope", "image_id": "ami-0123456789abcdef0"}, "asg_name: Auto Scaling group 'nope' not found in region us-east-1"),
    ({"image_id": "ami-0123456789abcdef0"}, "image_id: AMI 'ami-0123456789abcdef0' not found in region us-east-1"),
    ({"image_id": "centos"}, "image_id: 'centos' is not an AMI id; use an id such as ami-0123456789abcdef0"),
    ({"ssm_parameter": "/unit/missing"}, "ssm_parameter: SSM parameter '/unit/missing' not found in region us-east-1"),
    ({"ssm_parameter": "/unit/not-an-ami"}, "ssm_parameter: SSM parameter '/unit/not-an-ami' holds 'hello', not an AMI id"),
    ({"version": "77"}, "has no version 77; its versions go up to 1"),
    ({"version": "latest"}, "version: 'latest' is not allowed; use a version number (1 or more), $Latest or $Default"),
    ({"version": "0"}, "version: '0' is not allowed"),
])
def test_launch_template_bad_input_is_refused_without_changes(world, run, api_calls, args, message):
    args = dict({"asg_name": "workers"}, **args)
    result = run("launch_template_version", **args)
    assert result["failed"] and message in result["msg"]
    assert mutating(api_calls) == []
    assert world.group()["LaunchTemplate"]["Version"] == "$Latest"


def test_a_recorded_rollout_follows_the_group_to_its_new_version_and_back(world, run):
    """The setup records nothing itself; once a rollout is recorded (asg_surge), pointing the group at another version
    moves the recorded target with it - a rollback moving it back to the previous version says nothing more."""
    run("launch_template_version", asg_name="workers", image_id=world.new_ami)                   # 1 -> 2
    surged = run("asg_surge", name="workers", surge=1, previous_version=1)
    assert surged["rollout_state"]["target_version"] == 2 and surged["rollout_state"]["previous_version"] == 1
    assert recorded_state(world)["previous_version"] == 1
    planned = run("launch_template_version", asg_name="workers", version=1, check=True)
    assert planned["changed"] and planned["rollout_retargeted"] and recorded_state(world)["target_version"] == 2
    back = run("launch_template_version", asg_name="workers", version=1)
    assert back["rollout_retargeted"] and not back.get("warnings")
    assert recorded_state(world)["target_version"] == 1 and world.group()["LaunchTemplate"]["Version"] == "1"
    assert recorded_state(world)["previous_version"] == 1
    third = world.new_version(world.new_ami)
    moved = run("launch_template_version", asg_name="workers", version=third)
    assert moved["rollout_retargeted"] and "moves it to version %d" % third in str(moved["warnings"])
