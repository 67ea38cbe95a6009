"""launch_template_version against the sandbox: a new version with the new AMI made once and pointed at by number,
check and diff mode without changes, the SSM parameter and existing versions as sources, and bad input refused
without a single mutating request."""

import time

import pytest

from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=3, azs=3, speed=20)


def mutations_since(sandbox, since):
    return [event for event in sandbox.mutating_requests(since=since) if event["t"] > since]


def group_version(sandbox):
    group = sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    return group["LaunchTemplate"]["Version"]


def template(sandbox):
    template_id = sandbox.state["groups"][0]["launch_template_id"]
    return sandbox.aws("ec2").describe_launch_templates(LaunchTemplateIds=[template_id])["LaunchTemplates"][0]


def run(sandbox, check=False, diff=False, **args):
    result = sandbox.run_module("launch_template_version", check=check, diff=diff, asg_name=GROUP, **args)
    assert result["rc"] == 0, result.get("msg") or result["output"][-2000:]
    return result


def test_a_new_ami_is_rolled_out_as_one_new_version_pointed_at_by_number(sandbox):
    new_ami = sandbox.state["amis"]["new"]
    since = sandbox.now()
    predicted = run(sandbox, check=True, diff=True, image_id=new_ami)
    assert predicted["changed"] and predicted["created"] and predicted["version"] == 2
    # Ansible prints the diff (the result file leaves it out).
    diff_lines = ['-    "image_id": "%s",' % sandbox.state["amis"]["old"], '-    "launch_template_version": "1"',
                  '+    "image_id": "%s",' % new_ami, '+    "launch_template_version": "2"']
    assert all(line in predicted["output"] for line in diff_lines), predicted["output"]
    time.sleep(0.2)
    assert mutations_since(sandbox, since) == [] and template(sandbox)["LatestVersionNumber"] == 1

    result = run(sandbox, diff=True, image_id=new_ami)
    assert result["changed"] and result["created"] and result["version"] == 2
    assert all(line in result["output"] for line in diff_lines)
    assert group_version(sandbox) == "2"
    version = sandbox.aws("ec2").describe_launch_template_versions(
        LaunchTemplateId=result["launch_template_id"], Versions=["2"])["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    # Made from the source version: only the image changed.
    assert version["ImageId"] == new_ami and version["InstanceType"] == "m5.large" and version.get("UserData")

    again = run(sandbox, image_id=new_ami)
    assert again["changed"] is False and again["created"] is False and again["version"] == 2
    # The same AMI through the SSM parameter is the same target: still nothing to do.
    via_ssm = run(sandbox, ssm_parameter=sandbox.state["ssm_parameter"])
    assert via_ssm["changed"] is False and via_ssm["image_id"] == new_ami
    assert template(sandbox)["LatestVersionNumber"] == 2
    assert_safe(sandbox.report())


def test_an_existing_version_or_default_is_resolved_and_pinned(sandbox):
    result = run(sandbox, version="1")
    assert result["changed"] and not result["created"] and result["image_id"] == sandbox.state["amis"]["old"]
    assert group_version(sandbox) == "1"
    result = run(sandbox, version="$Latest", set_default=True)
    assert result["changed"] and result["version"] == 2 and result["default_version"] == 2
    assert group_version(sandbox) == "2" and template(sandbox)["DefaultVersionNumber"] == 2
    assert run(sandbox, version="$Default")["changed"] is False
    assert_safe(sandbox.report())


def test_bad_input_is_refused_with_one_clear_error_and_no_mutating_request(sandbox):
    before = (group_version(sandbox), template(sandbox)["LatestVersionNumber"], template(sandbox)["DefaultVersionNumber"])
    cases = [
        ({"asg_name": "no-such-group", "image_id": sandbox.state["amis"]["new"]},
         "asg_name: Auto Scaling group 'no-such-group' not found in region us-east-1"),
        ({"image_id": "ami-0123456789abcdef0"}, "image_id: AMI 'ami-0123456789abcdef0' not found in region us-east-1"),
        ({"image_id": "ubuntu-22.04"}, "image_id: 'ubuntu-22.04' is not an AMI id"),
        ({"ssm_parameter": "/sandbox/ami/missing"}, "ssm_parameter: SSM parameter '/sandbox/ami/missing' not found in region us-east-1"),
        ({"version": "77"}, "version: launch template %s (sandbox-nodes) has no version 77" % sandbox.state["groups"][0]["launch_template_id"]),
        ({"version": "newest"}, "version: 'newest' is not allowed; use a version number (1 or more), $Latest or $Default"),
        ({"image_id": sandbox.state["amis"]["new"], "version": "1"}, "parameters are mutually exclusive: image_id|ssm_parameter|version"),
    ]
    for args, message in cases:
        args = dict({"asg_name": GROUP}, **args)
        since = sandbox.now()
        result = sandbox.run_module("launch_template_version", **args)
        assert result["rc"] != 0 and result["msg"].startswith(message), (args, result.get("msg"))
        time.sleep(0.2)
        assert mutations_since(sandbox, since) == [], args
    after = (group_version(sandbox), template(sandbox)["LatestVersionNumber"], template(sandbox)["DefaultVersionNumber"])
    assert after == before
    assert_safe(sandbox.report())
