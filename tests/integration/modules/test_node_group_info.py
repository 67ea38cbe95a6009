"""node_group_info against the sandbox: instances joined to nodes, outdated detection across launch template versions
with $Latest/$Default resolved (MixedInstancesPolicy too), the node annotation, discovery by tags, and bad input
refused without a single mutating request."""

import time

import pytest

from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=6, azs=3, speed=20)


def mutations_since(sandbox, since):
    """Mutating requests by the collection's modules strictly after simulated time ``since``."""
    return [event for event in sandbox.mutating_requests(since=since) if event["t"] > since]


def info(sandbox, check=False, **args):
    result = sandbox.run_module("node_group_info", check=check, **args)
    assert result["rc"] == 0, result.get("msg") or result["output"][-2000:]
    return result


def one_group(sandbox, **args):
    groups = info(sandbox, name=GROUP, **args)["node_groups"]
    assert len(groups) == 1
    return groups[0]


def point_group(sandbox, version, group=GROUP):
    sandbox.aws("autoscaling").update_auto_scaling_group(
        AutoScalingGroupName=group, LaunchTemplate={"LaunchTemplateId": sandbox.state["groups"][0]["launch_template_id"], "Version": version})


def test_every_instance_is_joined_to_its_ready_node_and_nothing_is_outdated(sandbox):
    ec2 = sandbox.aws("ec2")
    group = one_group(sandbox, check=True)
    assert (group["min_size"], group["max_size"], group["desired_capacity"]) == (6, 6, 6)
    assert group["az_count"] == 3 and group["instance_count"] == 6 and group["in_service_count"] == 6
    assert group["launch_template"]["version"] == 1 and group["launch_template"]["image_id"] == sandbox.state["amis"]["old"]
    names = {node.metadata.name for node in sandbox.core().list_node().items}
    for instance in group["instances"]:
        described = ec2.describe_instances(InstanceIds=[instance["instance_id"]])["Reservations"][0]["Instances"][0]
        assert instance["node"]["name"] == described["PrivateDnsName"] and instance["node"]["name"] in names
        assert instance["node"]["ready"] is True and instance["node"]["schedulable"] is True
        assert instance["launch_template"]["version"] == "1" and instance["image_id"] == sandbox.state["amis"]["old"]
        assert instance["lifecycle_state"] == "InService" and instance["launch_time"].endswith("Z") and instance["outdated"] is False
    assert group["outdated"] == [] and group["plan"]["batches"] == [] and group["state"] is None
    assert_safe(sandbox.report())


def test_latest_and_default_are_resolved_before_comparing(sandbox):
    ec2 = sandbox.aws("ec2")
    template_id = sandbox.state["groups"][0]["launch_template_id"]
    created = ec2.create_launch_template_version(LaunchTemplateId=template_id, SourceVersion="1",
                                                 LaunchTemplateData={"ImageId": sandbox.state["amis"]["new"]})
    assert created["LaunchTemplateVersion"]["VersionNumber"] == 2
    try:
        point_group(sandbox, "$Latest")
        group = one_group(sandbox, max_unavailable=3)
        assert group["launch_template"]["version_spec"] == "$Latest" and group["launch_template"]["version"] == 2
        assert group["target"]["version"] == "2" and group["target"]["image_id"] == sandbox.state["amis"]["new"]
        assert group["outdated_count"] == 6
        assert all("target version is 2" in entry["reason"] for entry in group["outdated"])
        plan = group["plan"]
        # The surge comes up first and is the canary; with it serving, 12 Ready nodes over a floor of 3: one wave.
        assert plan["canary"] is False and [len(batch["instance_ids"]) for batch in plan["batches"]] == [6]
        assert sorted(plan["batches"][0]["azs"]) == sorted(["us-east-1a", "us-east-1b", "us-east-1c"] * 2)
        assert plan["batch_size"] == 3 and plan["surge"] == 6  # EKS: max(2 x 3 AZs, 3), at most the 6 outdated
        # Without a surge nothing up to date exists before the first drain: a canary of one first.
        no_surge = one_group(sandbox, max_unavailable=3, max_surge=0)["plan"]
        assert no_surge["canary"] is True and [len(batch["instance_ids"]) for batch in no_surge["batches"]] == [1, 3, 2]

        point_group(sandbox, "$Default")
        group = one_group(sandbox)
        assert group["launch_template"]["version"] == 1 and group["outdated"] == []

        ec2.modify_launch_template(LaunchTemplateId=template_id, DefaultVersion="2")
        group = one_group(sandbox)
        assert group["launch_template"]["version_spec"] == "$Default" and group["launch_template"]["version"] == 2
        assert group["outdated_count"] == 6
    finally:
        ec2.modify_launch_template(LaunchTemplateId=template_id, DefaultVersion="1")
        point_group(sandbox, "1")
    assert one_group(sandbox)["outdated"] == []
    assert_safe(sandbox.report())


def test_a_mixed_instances_policy_group_is_compared_per_instance(sandbox):
    asg = sandbox.aws("autoscaling")
    ec2 = sandbox.aws("ec2")
    template_id = sandbox.state["groups"][0]["launch_template_id"]
    asg.create_auto_scaling_group(
        AutoScalingGroupName="mixed", MinSize=2, MaxSize=2, DesiredCapacity=2,
        VPCZoneIdentifier=",".join(sandbox.state["subnets"].values()),
        MixedInstancesPolicy={"LaunchTemplate": {"LaunchTemplateSpecification": {"LaunchTemplateId": template_id, "Version": "$Latest"}}})
    latest = ec2.describe_launch_templates(LaunchTemplateIds=[template_id])["LaunchTemplates"][0]["LatestVersionNumber"]
    group = info(sandbox, name="mixed", include_nodes=False)["node_groups"][0]
    assert group["launch_template"]["mixed_instances_policy"] is True and group["launch_template"]["version"] == latest
    assert group["outdated"] == [] and len(group["up_to_date"]) == 2
    newer = ec2.create_launch_template_version(LaunchTemplateId=template_id, SourceVersion=str(latest),
                                               LaunchTemplateData={"InstanceType": "m5.xlarge"})["LaunchTemplateVersion"]["VersionNumber"]
    group = info(sandbox, name="mixed", include_nodes=False)["node_groups"][0]
    assert group["launch_template"]["version"] == newer and group["outdated_count"] == 2
    assert_safe(sandbox.report())


def test_a_node_annotated_needs_update_is_outdated(sandbox):
    group = one_group(sandbox)
    node_name = group["instances"][2]["node"]["name"]
    core = sandbox.core()
    core.patch_node(node_name, {"metadata": {"annotations": {"nodeops.rollout/needs-update": "true"}}})
    try:
        group = one_group(sandbox)
        assert [entry["node"] for entry in group["outdated"]] == [node_name]
        assert "annotated nodeops.rollout/needs-update" in group["outdated"][0]["reason"]
        # Without the Kubernetes join the annotation cannot be seen.
        assert one_group(sandbox, include_nodes=False)["outdated"] == []
    finally:
        core.patch_node(node_name, {"metadata": {"annotations": {"nodeops.rollout/needs-update": None}}})
    assert one_group(sandbox)["outdated"] == []


def test_groups_are_found_by_their_tags(sandbox):
    found = info(sandbox, tags={"kubernetes.io/cluster/sandbox": "owned"}, include_nodes=False)["node_groups"]
    assert [group["name"] for group in found] == [GROUP]
    found = info(sandbox, tags={"eks:nodegroup-name": GROUP, "kubernetes.io/cluster/sandbox": None}, include_nodes=False)["node_groups"]
    assert [group["name"] for group in found] == [GROUP] and found[0]["tags"]["eks:nodegroup-name"] == GROUP


def test_bad_input_is_refused_with_one_clear_error_and_no_mutating_request(sandbox):
    sandbox.aws("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName="empty", MinSize=0, MaxSize=3, DesiredCapacity=0,
        VPCZoneIdentifier=",".join(sandbox.state["subnets"].values()),
        LaunchTemplate={"LaunchTemplateId": sandbox.state["groups"][0]["launch_template_id"], "Version": "1"})
    cases = [
        ({"name": "no-such-group"}, "name: Auto Scaling group 'no-such-group' not found in region us-east-1"),
        ({"name": "empty"}, "name: Auto Scaling group 'empty' has no instances"),
        ({"tags": {"kubernetes.io/cluster/elsewhere": "owned"}}, "tags: no Auto Scaling group in region us-east-1 has the tags"),
        ({"name": GROUP, "max_unavailable": "150%"}, "max_unavailable: '150%' is not allowed; use an integer >= 1 or a percentage between 1% and 100%"),
        ({"name": GROUP, "max_unavailable": "abc"}, "max_unavailable: 'abc' is not allowed"),
        ({"name": GROUP, "max_unavailable": 0}, "max_unavailable: 0 is not allowed"),
        ({"name": GROUP, "max_unavailable": -1}, "max_unavailable: -1 is not allowed"),
        ({"name": GROUP, "max_surge": "abc"}, "max_surge: 'abc' is not allowed; use an integer >= 0"),
        ({"name": GROUP, "tags": {"a": "b"}}, "parameters are mutually exclusive: name|tags"),
    ]
    for args, message in cases:
        since = sandbox.now()
        result = sandbox.run_module("node_group_info", **args)
        assert result["rc"] != 0, (args, result.get("msg"))
        assert result["msg"].startswith(message), (args, result["msg"])
        time.sleep(0.2)
        assert mutations_since(sandbox, since) == [], args
    assert_safe(sandbox.report())
