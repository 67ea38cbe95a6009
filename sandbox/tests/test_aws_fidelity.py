"""The sandbox's AWS endpoint behaves as AWS does where moto alone does not, as a boto3 user observes it.

One AwsSandbox serves the whole module (fast clock: 100 simulated seconds per wall second). Tests that
change a group create their own group and launch template, so they do not depend on each other.
"""

import statistics
import time
from collections import Counter

import pytest
from botocore.exceptions import ClientError

from sandbox.aws import AwsSandbox
from sandbox.clock import Clock
from sandbox.events import EventLog

SPEED = 100.0
BOOT = 60.0  # simulated seconds: 0.6 s of wall time
AZS = ("us-east-1a", "us-east-1b", "us-east-1c")


def running(tmp_path_factory, speed=SPEED, **options):
    """An AwsSandbox of its own clock at ``speed``, started, stopped once the generator is closed (``options``:
    AwsSandbox's, such as ``boot_seconds``). For a module's ``aws_sandbox`` fixture: ``yield from running(...)``."""
    clock = Clock(speed=speed)
    sandbox = AwsSandbox(clock, EventLog(clock), str(tmp_path_factory.mktemp("aws")), **options)
    sandbox.start()
    try:
        yield sandbox
    finally:
        sandbox.stop()


@pytest.fixture(scope="module")
def aws_sandbox(tmp_path_factory):
    yield from running(tmp_path_factory, boot_seconds=BOOT)


@pytest.fixture(scope="module")
def aws_estate(aws_sandbox):
    return aws_sandbox.provision(nodes=6, azs=3)


@pytest.fixture(autouse=True)
def aws_no_faults(aws_sandbox):
    aws_sandbox.faults.clear()
    yield
    aws_sandbox.faults.clear()


def client(sandbox, service, module="test_aws_fidelity", attempts=1):
    return sandbox.client(service, user_agent=None, user_agent_extra="nodeops.rollout/0.1.0 %s" % module, max_attempts=attempts)


def wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


def make_group(sandbox, estate, name, size, min_size=None, max_size=None, version="1", azs=AZS):
    """A group with its own launch template (v1 on the old AMI), as provision() builds them."""
    ec2 = client(sandbox, "ec2")
    template = ec2.create_launch_template(
        LaunchTemplateName=name,
        LaunchTemplateData={"ImageId": estate["amis"]["old"], "InstanceType": "m5.large", "UserData": "ZWNobyBoaQ=="},
    )["LaunchTemplate"]
    client(sandbox, "autoscaling").create_auto_scaling_group(
        AutoScalingGroupName=name, MinSize=size if min_size is None else min_size, MaxSize=size if max_size is None else max_size,
        DesiredCapacity=size, LaunchTemplate={"LaunchTemplateId": template["LaunchTemplateId"], "Version": version},
        VPCZoneIdentifier=",".join(estate["subnets"][az] for az in azs))
    return template["LaunchTemplateId"]


def describe(sandbox, name):
    return client(sandbox, "autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]


def ec2_instances(sandbox, ids):
    reservations = client(sandbox, "ec2").describe_instances(InstanceIds=list(ids))["Reservations"]
    return {i["InstanceId"]: i for r in reservations for i in r["Instances"]}


def tag(instance, key):
    return {t["Key"]: t["Value"] for t in instance.get("Tags", [])}.get(key)


def new_version(sandbox, template_id, image_id):
    """A version made the way a rollout makes it: only the new ImageId, on top of version 1."""
    return client(sandbox, "ec2").create_launch_template_version(
        LaunchTemplateId=template_id, SourceVersion="1", LaunchTemplateData={"ImageId": image_id})["LaunchTemplateVersion"]


def events_of(sandbox, kind, **match):
    return [e for e in sandbox.events.events(kind) if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


# ---------------------------------------------------------------------------------------------- estate

def test_provision_builds_the_documented_estate(aws_sandbox, aws_estate):
    ec2 = client(aws_sandbox, "ec2")
    assert set(aws_estate["subnets"]) == set(AZS)
    subnets = ec2.describe_subnets(SubnetIds=list(aws_estate["subnets"].values()))["Subnets"]
    assert {s["SubnetId"]: s["AvailabilityZone"] for s in subnets} == {v: k for k, v in aws_estate["subnets"].items()}
    assert all(s["VpcId"] == aws_estate["vpc_id"] for s in subnets)

    images = {i["ImageId"]: i for i in ec2.describe_images(ImageIds=list(aws_estate["amis"].values()))["Images"]}
    old, new = images[aws_estate["amis"]["old"]], images[aws_estate["amis"]["new"]]
    assert old["Name"] == "sandbox-node-1.29-v20240101" and old["CreationDate"].startswith("2024-01-01")
    assert new["Name"] == "sandbox-node-1.30-v20240201" and new["CreationDate"].startswith("2024-02-01")
    assert len(ec2.describe_images()["Images"]) == 2  # moto's default catalog stays out

    parameter = client(aws_sandbox, "ssm").get_parameter(Name=aws_estate["ssm_parameter"])["Parameter"]
    assert aws_estate["ssm_parameter"] == "/sandbox/ami/new" and parameter["Value"] == aws_estate["amis"]["new"]

    group = describe(aws_sandbox, "sandbox-nodes")
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == (6, 6, 6)
    assert group["LaunchTemplate"]["Version"] == "1"
    assert group["LaunchTemplate"]["LaunchTemplateId"] == aws_estate["groups"][0]["launch_template_id"]
    tags = {t["Key"]: (t["Value"], t["PropagateAtLaunch"]) for t in group["Tags"]}
    assert tags == {"eks:nodegroup-name": ("sandbox-nodes", True), "kubernetes.io/cluster/sandbox": ("owned", True)}
    assert Counter(i["AvailabilityZone"] for i in group["Instances"]) == {az: 2 for az in AZS}

    version = ec2.describe_launch_template_versions(LaunchTemplateName="sandbox-nodes")["LaunchTemplateVersions"][0]
    assert version["VersionNumber"] == 1
    assert version["LaunchTemplateData"]["ImageId"] == aws_estate["amis"]["old"]
    assert version["LaunchTemplateData"]["InstanceType"] == "m5.large" and version["LaunchTemplateData"]["UserData"]

    sizes = events_of(aws_sandbox, "asg.size", group="sandbox-nodes")
    assert sizes[0]["min"] == sizes[0]["max"] == sizes[0]["desired"] == 6


def test_instances_view_matches_describe_instances(aws_sandbox, aws_estate):
    # Once booted, so that both views are read in the same state.
    assert wait_for(lambda: {i["LifecycleState"] for i in describe(aws_sandbox, "sandbox-nodes")["Instances"]} == {"InService"})
    group = describe(aws_sandbox, aws_estate["groups"][0]["name"])
    ids = {i["InstanceId"] for i in group["Instances"]}
    view = {i["instance_id"]: i for i in aws_sandbox.instances() if i["instance_id"] in ids}
    assert set(view) == ids
    for instance_id, ec2 in ec2_instances(aws_sandbox, ids).items():
        mine = view[instance_id]
        assert mine["state"] == ec2["State"]["Name"] == "running"
        assert mine["az"] == ec2["Placement"]["AvailabilityZone"]
        assert mine["private_dns_name"] == ec2["PrivateDnsName"] and mine["private_ip"] == ec2["PrivateIpAddress"]
        assert mine["image_id"] == ec2["ImageId"] == aws_estate["amis"]["old"]
        assert mine["instance_type"] == ec2["InstanceType"] == "m5.large"
        assert mine["group"] == "sandbox-nodes"
        assert mine["launch_template"] == {"id": aws_estate["groups"][0]["launch_template_id"], "version": "1"}
        assert isinstance(mine["launch_time"], float)
    assert len({i["private_dns_name"] for i in view.values()}) == 6


# ---------------------------------------------------------------------------------------------- boot

@pytest.fixture
def aws_slow_boot(aws_sandbox):
    """A boot long enough (3 s of wall time) to observe Pending even on a loaded machine."""
    aws_sandbox.boot_seconds = 300.0
    yield aws_sandbox.boot_seconds
    aws_sandbox.boot_seconds = BOOT


def test_new_instances_are_pending_until_booted_then_in_service(aws_sandbox, aws_estate, aws_slow_boot):
    make_group(aws_sandbox, aws_estate, "fid-boot", 3)
    group = describe(aws_sandbox, "fid-boot")
    ids = [i["InstanceId"] for i in group["Instances"]]
    assert [i["LifecycleState"] for i in group["Instances"]] == ["Pending"] * 3
    assert {i["State"]["Name"] for i in ec2_instances(aws_sandbox, ids).values()} == {"pending"}
    assert {i["state"] for i in aws_sandbox.instances() if i["instance_id"] in ids} == {"pending"}

    assert wait_for(lambda: {i["LifecycleState"] for i in describe(aws_sandbox, "fid-boot")["Instances"]} == {"InService"}, timeout=10)
    assert {i["State"]["Name"] for i in ec2_instances(aws_sandbox, ids).values()} == {"running"}
    assert {i["state"] for i in aws_sandbox.instances() if i["instance_id"] in ids} == {"running"}
    # the boot thread writes instance.running when it wakes, just after the clock made the instance running
    assert wait_for(lambda: {e["instance_id"] for e in events_of(aws_sandbox, "instance.running", group="fid-boot")} == set(ids),
                    timeout=10)
    launched = {e["instance_id"]: e["t"] for e in events_of(aws_sandbox, "instance.launched", group="fid-boot")}
    running = {e["instance_id"]: e["t"] for e in events_of(aws_sandbox, "instance.running", group="fid-boot")}
    assert set(launched) == set(running) == set(ids)
    assert all(running[i] >= launched[i] + aws_slow_boot - 0.01 for i in ids)


# ---------------------------------------------------------------------------------------------- launch templates

def test_source_version_inherits_the_source_launch_template_data(aws_sandbox, aws_estate):
    template_id = make_group(aws_sandbox, aws_estate, "fid-inherit", 1)
    created = new_version(aws_sandbox, template_id, aws_estate["amis"]["new"])
    data = created["LaunchTemplateData"]
    assert created["VersionNumber"] == 2
    assert data["ImageId"] == aws_estate["amis"]["new"]
    assert data["InstanceType"] == "m5.large" and data["UserData"] == "ZWNobyBoaQ=="

    asg = client(aws_sandbox, "autoscaling")
    asg.update_auto_scaling_group(AutoScalingGroupName="fid-inherit", LaunchTemplate={"LaunchTemplateId": template_id, "Version": "2"})
    old = describe(aws_sandbox, "fid-inherit")["Instances"][0]["InstanceId"]
    asg.terminate_instance_in_auto_scaling_group(InstanceId=old, ShouldDecrementDesiredCapacity=False)
    replacement = describe(aws_sandbox, "fid-inherit")["Instances"][0]["InstanceId"]
    launched = ec2_instances(aws_sandbox, [replacement])[replacement]
    assert launched["ImageId"] == aws_estate["amis"]["new"] and launched["InstanceType"] == "m5.large"


def test_each_instance_reports_the_version_it_was_launched_with(aws_sandbox, aws_estate):
    template_id = make_group(aws_sandbox, aws_estate, "fid-version", 3, min_size=3, max_size=6)
    new_version(aws_sandbox, template_id, aws_estate["amis"]["new"])
    asg = client(aws_sandbox, "autoscaling")
    asg.update_auto_scaling_group(AutoScalingGroupName="fid-version", DesiredCapacity=6,
                                  LaunchTemplate={"LaunchTemplateId": template_id, "Version": "$Latest"})
    # Changing the template's default version must not rewrite what running instances report.
    client(aws_sandbox, "ec2").modify_launch_template(LaunchTemplateId=template_id, DefaultVersion="2")

    group = describe(aws_sandbox, "fid-version")
    versions = {i["InstanceId"]: i["LaunchTemplate"]["Version"] for i in group["Instances"]}
    assert Counter(versions.values()) == {"1": 3, "2": 3}
    detail = asg.describe_auto_scaling_instances(InstanceIds=list(versions))["AutoScalingInstances"]
    assert {i["InstanceId"]: i["LaunchTemplate"]["Version"] for i in detail} == versions
    for instance_id, instance in ec2_instances(aws_sandbox, versions).items():
        assert tag(instance, "aws:ec2launchtemplate:version") == versions[instance_id]
        expected = aws_estate["amis"]["new"] if versions[instance_id] == "2" else aws_estate["amis"]["old"]
        assert instance["ImageId"] == expected and instance["InstanceType"] == "m5.large"
    view = {i["instance_id"]: i["launch_template"]["version"] for i in aws_sandbox.instances() if i["instance_id"] in versions}
    assert view == versions


# ---------------------------------------------------------------------------------------------- placement

def test_instances_spread_over_the_group_azs(aws_sandbox, aws_estate):
    make_group(aws_sandbox, aws_estate, "fid-spread", 6, min_size=0, max_size=10)
    assert Counter(i["AvailabilityZone"] for i in describe(aws_sandbox, "fid-spread")["Instances"]) == {az: 2 for az in AZS}
    client(aws_sandbox, "autoscaling").set_desired_capacity(AutoScalingGroupName="fid-spread", DesiredCapacity=10)
    spread = Counter(i["AvailabilityZone"] for i in describe(aws_sandbox, "fid-spread")["Instances"])
    # Ties go to the first subnet in the group's order.
    assert spread == {"us-east-1a": 4, "us-east-1b": 3, "us-east-1c": 3}


def test_insufficient_capacity_pushes_launches_to_the_other_azs(aws_sandbox, aws_estate):
    aws_sandbox.faults.set(insufficient_capacity_azs=["us-east-1b"])
    make_group(aws_sandbox, aws_estate, "fid-capacity", 6)
    assert Counter(i["AvailabilityZone"] for i in describe(aws_sandbox, "fid-capacity")["Instances"]) == {"us-east-1a": 3, "us-east-1c": 3}
    failures = events_of(aws_sandbox, "asg.launch_failed", group="fid-capacity")
    assert failures and failures[0]["azs"] == ["us-east-1b"] and failures[0]["reason"] == "InsufficientInstanceCapacity"


def test_no_capacity_anywhere_leaves_desired_above_the_count_until_capacity_returns(aws_sandbox, aws_estate):
    aws_sandbox.faults.set(insufficient_capacity_azs=list(AZS))
    make_group(aws_sandbox, aws_estate, "fid-nocapacity", 2)
    time.sleep(0.3)  # several of the group's retry rounds (every 10 simulated seconds)
    group = describe(aws_sandbox, "fid-nocapacity")
    assert group["DesiredCapacity"] == 2 and group["Instances"] == []
    aws_sandbox.faults.set(insufficient_capacity_azs=[])
    assert wait_for(lambda: len(describe(aws_sandbox, "fid-nocapacity")["Instances"]) == 2)
    assert len({i["AvailabilityZone"] for i in describe(aws_sandbox, "fid-nocapacity")["Instances"]}) == 2


def test_run_instances_into_an_az_without_capacity_fails(aws_sandbox, aws_estate):
    aws_sandbox.faults.set(insufficient_capacity_azs=["us-east-1c"])
    with pytest.raises(ClientError) as err:
        client(aws_sandbox, "ec2").run_instances(ImageId=aws_estate["amis"]["new"], MinCount=1, MaxCount=1, InstanceType="m5.large",
                                                 SubnetId=aws_estate["subnets"]["us-east-1c"])
    assert err.value.response["Error"]["Code"] == "InsufficientInstanceCapacity"
    assert "us-east-1c" in err.value.response["Error"]["Message"]


# ---------------------------------------------------------------------------------------------- scale-in

def test_scale_in_takes_the_fullest_az_then_the_oldest_version(aws_sandbox, aws_estate):
    template_id = make_group(aws_sandbox, aws_estate, "fid-scalein", 3, min_size=1, max_size=6)
    first = {i["AvailabilityZone"]: i["InstanceId"] for i in describe(aws_sandbox, "fid-scalein")["Instances"]}
    new_version(aws_sandbox, template_id, aws_estate["amis"]["new"])
    asg = client(aws_sandbox, "autoscaling")
    asg.update_auto_scaling_group(AutoScalingGroupName="fid-scalein", LaunchTemplate={"LaunchTemplateId": template_id, "Version": "2"})
    aws_sandbox.faults.set(insufficient_capacity_azs=["us-east-1a", "us-east-1c"])
    asg.set_desired_capacity(AutoScalingGroupName="fid-scalein", DesiredCapacity=5)
    aws_sandbox.faults.clear()
    before = {i["InstanceId"]: i for i in describe(aws_sandbox, "fid-scalein")["Instances"]}
    newer = {i for i, s in before.items() if s["LaunchTemplate"]["Version"] == "2"}
    assert {before[i]["AvailabilityZone"] for i in newer} == {"us-east-1b"} and len(newer) == 2

    # 1b holds three instances: the v1 one there goes first, not the v1 ones elsewhere (moto: list order).
    asg.set_desired_capacity(AutoScalingGroupName="fid-scalein", DesiredCapacity=4)
    after = {i["InstanceId"] for i in describe(aws_sandbox, "fid-scalein")["Instances"]}
    assert set(before) - after == {first["us-east-1b"]}
    # Now 1b still has the most (two v2): one of them goes although v1 instances remain in 1a and 1c.
    asg.set_desired_capacity(AutoScalingGroupName="fid-scalein", DesiredCapacity=3)
    last = {i["InstanceId"] for i in describe(aws_sandbox, "fid-scalein")["Instances"]}
    assert first["us-east-1a"] in last and first["us-east-1c"] in last and len(last & newer) == 1
    reasons = {e["instance_id"]: e["reason"] for e in events_of(aws_sandbox, "instance.terminated", group="fid-scalein")}
    assert reasons[first["us-east-1b"]] == "scale-in" and list(reasons.values()) == ["scale-in", "scale-in"]


def test_scale_in_spares_protected_instances(aws_sandbox, aws_estate):
    make_group(aws_sandbox, aws_estate, "fid-protect", 3, min_size=0, max_size=3)
    ids = [i["InstanceId"] for i in describe(aws_sandbox, "fid-protect")["Instances"]]
    asg = client(aws_sandbox, "autoscaling")
    asg.set_instance_protection(AutoScalingGroupName="fid-protect", InstanceIds=ids[:1], ProtectedFromScaleIn=True)
    asg.set_desired_capacity(AutoScalingGroupName="fid-protect", DesiredCapacity=1)
    assert [i["InstanceId"] for i in describe(aws_sandbox, "fid-protect")["Instances"]] == ids[:1]


# ---------------------------------------------------------------------------------------------- terminate / detach

def test_terminate_in_group_replaces_with_the_current_version(aws_sandbox, aws_estate):
    template_id = make_group(aws_sandbox, aws_estate, "fid-terminate", 2, min_size=1, max_size=3)
    new_version(aws_sandbox, template_id, aws_estate["amis"]["new"])
    asg = client(aws_sandbox, "autoscaling")
    asg.update_auto_scaling_group(AutoScalingGroupName="fid-terminate", LaunchTemplate={"LaunchTemplateId": template_id, "Version": "2"})
    victim, kept = [i["InstanceId"] for i in describe(aws_sandbox, "fid-terminate")["Instances"]]

    activity = asg.terminate_instance_in_auto_scaling_group(InstanceId=victim, ShouldDecrementDesiredCapacity=False)["Activity"]
    assert victim in activity["Description"]
    group = describe(aws_sandbox, "fid-terminate")
    versions = {i["InstanceId"]: i["LaunchTemplate"]["Version"] for i in group["Instances"]}
    assert group["DesiredCapacity"] == 2 and victim not in versions and versions.pop(kept) == "1"
    assert list(versions.values()) == ["2"]
    assert ec2_instances(aws_sandbox, [victim])[victim]["State"]["Name"] == "terminated"
    assert events_of(aws_sandbox, "instance.terminated", instance_id=victim)[0]["reason"] == "asg-terminate"

    asg.terminate_instance_in_auto_scaling_group(InstanceId=kept, ShouldDecrementDesiredCapacity=True)
    group = describe(aws_sandbox, "fid-terminate")
    assert group["DesiredCapacity"] == 1 and len(group["Instances"]) == 1


def test_terminate_in_group_honours_the_launch_suspension(aws_sandbox, aws_estate):
    make_group(aws_sandbox, aws_estate, "fid-term-suspended", 2, min_size=1, max_size=3)
    asg = client(aws_sandbox, "autoscaling")
    asg.suspend_processes(AutoScalingGroupName="fid-term-suspended", ScalingProcesses=["Launch"])
    victim = describe(aws_sandbox, "fid-term-suspended")["Instances"][0]["InstanceId"]
    asg.terminate_instance_in_auto_scaling_group(InstanceId=victim, ShouldDecrementDesiredCapacity=False)
    time.sleep(0.3)
    group = describe(aws_sandbox, "fid-term-suspended")
    assert group["DesiredCapacity"] == 2 and len(group["Instances"]) == 1
    asg.resume_processes(AutoScalingGroupName="fid-term-suspended", ScalingProcesses=["Launch"])
    assert len(describe(aws_sandbox, "fid-term-suspended")["Instances"]) == 2


def test_detach_keeps_the_instance_running_and_launches_a_replacement(aws_sandbox, aws_estate):
    make_group(aws_sandbox, aws_estate, "fid-detach", 2, min_size=2, max_size=3)
    asg = client(aws_sandbox, "autoscaling")
    detached = describe(aws_sandbox, "fid-detach")["Instances"][0]["InstanceId"]
    asg.detach_instances(AutoScalingGroupName="fid-detach", InstanceIds=[detached], ShouldDecrementDesiredCapacity=False)
    group = describe(aws_sandbox, "fid-detach")
    assert group["DesiredCapacity"] == 2 and len(group["Instances"]) == 2 and detached not in {i["InstanceId"] for i in group["Instances"]}
    instance = ec2_instances(aws_sandbox, [detached])[detached]
    assert instance["State"]["Name"] in ("pending", "running") and tag(instance, "aws:autoscaling:groupName") is None
    assert [i["group"] for i in aws_sandbox.instances() if i["instance_id"] == detached] == [None]
    assert events_of(aws_sandbox, "instance.detached", instance_id=detached, group="fid-detach")


@pytest.mark.usefixtures("aws_slow_boot")
def test_ec2_terminate_of_a_member_is_logged(aws_sandbox, aws_estate):
    make_group(aws_sandbox, aws_estate, "fid-ec2-terminate", 1)
    victim = describe(aws_sandbox, "fid-ec2-terminate")["Instances"][0]["InstanceId"]
    state = client(aws_sandbox, "ec2").terminate_instances(InstanceIds=[victim])["TerminatingInstances"][0]
    assert state["CurrentState"]["Name"] == "shutting-down" and state["PreviousState"]["Name"] == "pending"
    assert events_of(aws_sandbox, "instance.terminated", instance_id=victim)[0]["reason"] == "ec2-terminate"


# ---------------------------------------------------------------------------------------------- processes

def test_launch_suspension_blocks_launches_until_resumed(aws_sandbox, aws_estate):
    make_group(aws_sandbox, aws_estate, "fid-launch", 2, min_size=0, max_size=5)
    asg = client(aws_sandbox, "autoscaling")
    asg.suspend_processes(AutoScalingGroupName="fid-launch", ScalingProcesses=["Launch"])
    asg.set_desired_capacity(AutoScalingGroupName="fid-launch", DesiredCapacity=4)
    time.sleep(0.3)
    group = describe(aws_sandbox, "fid-launch")
    assert group["DesiredCapacity"] == 4 and len(group["Instances"]) == 2
    assert [p["ProcessName"] for p in group["SuspendedProcesses"]] == ["Launch"]
    assert events_of(aws_sandbox, "asg.processes", group="fid-launch")[0]["suspended"] == ["Launch"]

    asg.resume_processes(AutoScalingGroupName="fid-launch", ScalingProcesses=["Launch"])
    group = describe(aws_sandbox, "fid-launch")
    assert len(group["Instances"]) == 4 and group["SuspendedProcesses"] == []
    assert events_of(aws_sandbox, "asg.processes", group="fid-launch")[-1]["suspended"] == []


def test_azrebalance_suspension_is_recorded(aws_sandbox, aws_estate):
    make_group(aws_sandbox, aws_estate, "fid-rebalance", 1)
    asg = client(aws_sandbox, "autoscaling")
    asg.suspend_processes(AutoScalingGroupName="fid-rebalance", ScalingProcesses=["AZRebalance", "Launch"])
    group = describe(aws_sandbox, "fid-rebalance")
    assert sorted(p["ProcessName"] for p in group["SuspendedProcesses"]) == ["AZRebalance", "Launch"]
    asg.resume_processes(AutoScalingGroupName="fid-rebalance", ScalingProcesses=["Launch"])
    assert [p["ProcessName"] for p in describe(aws_sandbox, "fid-rebalance")["SuspendedProcesses"]] == ["AZRebalance"]
    assert events_of(aws_sandbox, "asg.processes", group="fid-rebalance")[-1]["suspended"] == ["AZRebalance"]


def test_size_changes_are_logged(aws_sandbox, aws_estate):
    make_group(aws_sandbox, aws_estate, "fid-size", 2, min_size=1, max_size=4)
    asg = client(aws_sandbox, "autoscaling")
    asg.update_auto_scaling_group(AutoScalingGroupName="fid-size", MaxSize=5)
    asg.set_desired_capacity(AutoScalingGroupName="fid-size", DesiredCapacity=3)
    asg.describe_auto_scaling_groups(AutoScalingGroupNames=["fid-size"])
    sizes = [(e["min"], e["max"], e["desired"]) for e in events_of(aws_sandbox, "asg.size", group="fid-size")]
    assert sizes == [(1, 4, 2), (1, 5, 2), (1, 5, 3)]


def test_describe_auto_scaling_instances_pages_by_fifty(aws_sandbox, aws_estate):
    make_group(aws_sandbox, aws_estate, "fid-pages", 60)
    asg = client(aws_sandbox, "autoscaling")
    first = asg.describe_auto_scaling_instances()
    assert len(first["AutoScalingInstances"]) == 50 and first["NextToken"]
    pages = asg.get_paginator("describe_auto_scaling_instances").paginate()
    every = [i for page in pages for i in page["AutoScalingInstances"]]
    assert len(every) == len({i["InstanceId"] for i in every})
    assert sum(1 for i in every if i["AutoScalingGroupName"] == "fid-pages") == 60
    with pytest.raises(ClientError) as err:
        asg.describe_auto_scaling_instances(MaxRecords=51)
    assert err.value.response["Error"]["Code"] == "ValidationError"


# ---------------------------------------------------------------------------------------------- validation

CASES = {
    "desired-above-max": ("set_desired_capacity", {"AutoScalingGroupName": "sandbox-nodes", "DesiredCapacity": 99},
                          "ValidationError", "New SetDesiredCapacity value 99 is above max value 6 for the AutoScalingGroup."),
    "desired-below-min": ("set_desired_capacity", {"AutoScalingGroupName": "sandbox-nodes", "DesiredCapacity": 2},
                          "ValidationError", "New SetDesiredCapacity value 2 is below min value 6 for the AutoScalingGroup."),
    "update-min-above-max": ("update_auto_scaling_group", {"AutoScalingGroupName": "sandbox-nodes", "MinSize": 5, "MaxSize": 2},
                             "ValidationError", "Max bound, 2, must be greater than or equal to min bound, 5"),
    "update-desired-outside": ("update_auto_scaling_group", {"AutoScalingGroupName": "sandbox-nodes", "DesiredCapacity": 9},
                               "ValidationError", "Desired capacity:9 must be between the specified min size:6 and max size:6"),
    "update-unknown-group": ("update_auto_scaling_group", {"AutoScalingGroupName": "nope", "MaxSize": 3},
                             "ValidationError", "AutoScalingGroup name not found"),
    "set-desired-unknown-group": ("set_desired_capacity", {"AutoScalingGroupName": "nope", "DesiredCapacity": 1},
                                  "ValidationError", "AutoScalingGroup name not found - AutoScalingGroup 'nope' not found"),
    "suspend-unknown-group": ("suspend_processes", {"AutoScalingGroupName": "nope", "ScalingProcesses": ["Launch"]},
                              "ValidationError", "AutoScalingGroup name not found"),
    "resume-unknown-group": ("resume_processes", {"AutoScalingGroupName": "nope"}, "ValidationError", "AutoScalingGroup name not found"),
    "suspend-unknown-process": ("suspend_processes", {"AutoScalingGroupName": "sandbox-nodes", "ScalingProcesses": ["Launchh"]},
                                "ValidationError", "Launchh"),
    "detach-unknown-group": ("detach_instances", {"AutoScalingGroupName": "nope", "InstanceIds": ["i-0123456789abcdef0"],
                                                  "ShouldDecrementDesiredCapacity": False}, "ValidationError", "AutoScalingGroup name not found"),
    "detach-non-member": ("detach_instances", {"AutoScalingGroupName": "sandbox-nodes", "InstanceIds": ["i-0123456789abcdef0"],
                                               "ShouldDecrementDesiredCapacity": False},
                          "ValidationError", "The instance i-0123456789abcdef0 is not part of Auto Scaling group sandbox-nodes."),
    "protect-unknown-group": ("set_instance_protection", {"AutoScalingGroupName": "nope", "InstanceIds": ["i-0123456789abcdef0"],
                                                          "ProtectedFromScaleIn": True}, "ValidationError", "AutoScalingGroup name not found"),
    "protect-non-member": ("set_instance_protection", {"AutoScalingGroupName": "sandbox-nodes", "InstanceIds": ["i-0123456789abcdef0"],
                                                       "ProtectedFromScaleIn": True}, "ValidationError", "is not part of Auto Scaling group"),
    "terminate-unknown-instance": ("terminate_instance_in_auto_scaling_group",
                                   {"InstanceId": "i-0123456789abcdef0", "ShouldDecrementDesiredCapacity": False},
                                   "ValidationError", "Instance Id not found - No managed instance found for instance ID: i-0123456789abcdef0"),
    "create-duplicate": ("create_auto_scaling_group", {"AutoScalingGroupName": "sandbox-nodes", "MinSize": 1, "MaxSize": 1,
                                                       "LaunchTemplate": {"LaunchTemplateName": "sandbox-nodes"}, "AvailabilityZones": ["us-east-1a"]},
                         "AlreadyExists", "AutoScalingGroup by this name already exists"),
    "create-desired-above-max": ("create_auto_scaling_group", {"AutoScalingGroupName": "fid-invalid", "MinSize": 1, "MaxSize": 1, "DesiredCapacity": 5,
                                                               "LaunchTemplate": {"LaunchTemplateName": "sandbox-nodes"},
                                                               "AvailabilityZones": ["us-east-1a"]},
                                 "ValidationError", "Desired capacity:5 must be between the specified min size:1 and max size:1"),
    "create-min-above-max": ("create_auto_scaling_group", {"AutoScalingGroupName": "fid-invalid", "MinSize": 3, "MaxSize": 1,
                                                           "LaunchTemplate": {"LaunchTemplateName": "sandbox-nodes"}, "AvailabilityZones": ["us-east-1a"]},
                             "ValidationError", "Max bound, 1, must be greater than or equal to min bound, 3"),
    "tags-over-fifty": ("create_or_update_tags",
                        {"Tags": [{"ResourceId": "sandbox-nodes", "ResourceType": "auto-scaling-group", "Key": "fid-%d" % index,
                                   "Value": "x", "PropagateAtLaunch": False} for index in range(49)]},
                        "LimitExceeded", "would have 51 tags; a group takes at most 50"),
    "tag-value-too-long": ("create_or_update_tags", {"Tags": [{"ResourceId": "sandbox-nodes", "ResourceType": "auto-scaling-group",
                                                              "Key": "fid-long", "Value": "x" * 257, "PropagateAtLaunch": False}]},
                           "ValidationError", "Member must have length less than or equal to 256"),
}


@pytest.mark.usefixtures("aws_estate")
@pytest.mark.parametrize("case", sorted(CASES))
def test_invalid_calls_get_the_aws_error_and_change_nothing(aws_sandbox, case):
    method, params, code, message = CASES[case]
    asg = client(aws_sandbox, "autoscaling")
    before = describe(aws_sandbox, "sandbox-nodes")
    with pytest.raises(ClientError) as err:
        getattr(asg, method)(**params)
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert err.value.response["Error"]["Code"] == code
    assert message in err.value.response["Error"]["Message"]
    after = describe(aws_sandbox, "sandbox-nodes")
    assert (after["MinSize"], after["MaxSize"], after["DesiredCapacity"]) == (before["MinSize"], before["MaxSize"], before["DesiredCapacity"])
    assert {i["InstanceId"] for i in after["Instances"]} == {i["InstanceId"] for i in before["Instances"]}
    assert asg.describe_auto_scaling_groups(AutoScalingGroupNames=["fid-invalid"])["AutoScalingGroups"] == []
    assert after["Tags"] == before["Tags"]


@pytest.mark.usefixtures("aws_estate")
def test_decrementing_below_min_size_is_refused(aws_sandbox):
    member = describe(aws_sandbox, "sandbox-nodes")["Instances"][0]["InstanceId"]
    asg = client(aws_sandbox, "autoscaling")
    for call in (lambda: asg.terminate_instance_in_auto_scaling_group(InstanceId=member, ShouldDecrementDesiredCapacity=True),
                 lambda: asg.detach_instances(AutoScalingGroupName="sandbox-nodes", InstanceIds=[member], ShouldDecrementDesiredCapacity=True)):
        with pytest.raises(ClientError) as err:
            call()
        assert err.value.response["Error"]["Code"] == "ValidationError"
        assert "violate group's min size constraint" in err.value.response["Error"]["Message"]
    assert member in {i["InstanceId"] for i in describe(aws_sandbox, "sandbox-nodes")["Instances"]}


# ---------------------------------------------------------------------------------------------- faults

def requests_by(sandbox, module, action=None):
    who = "nodeops.rollout/0.1.0 %s" % module
    return [e for e in sandbox.events.events("aws.request") if e["client"] == who and (action is None or e["action"] == action)]


@pytest.mark.usefixtures("aws_estate")
def test_throttling_is_retried_by_botocore_to_success(aws_sandbox):
    aws_sandbox.faults.set(throttling={"DescribeAutoScalingGroups": 0.5}, seed=1)
    asg = client(aws_sandbox, "autoscaling", module="test_throttle_retry", attempts=5)
    groups = asg.describe_auto_scaling_groups(AutoScalingGroupNames=["sandbox-nodes"])["AutoScalingGroups"]
    assert groups[0]["AutoScalingGroupName"] == "sandbox-nodes"
    seen = requests_by(aws_sandbox, "test_throttle_retry")
    assert [e["fault"] for e in seen[:-1]] == ["throttling"] * (len(seen) - 1) and len(seen) >= 2
    assert [e["status"] for e in seen] == [400] * (len(seen) - 1) + [200] and seen[-1]["fault"] is None


@pytest.mark.usefixtures("aws_estate")
def test_throttling_at_rate_one_surfaces_as_client_error_and_reaches_nothing(aws_sandbox):
    aws_sandbox.faults.set(throttling={"SetDesiredCapacity": 1.0})
    asg = client(aws_sandbox, "autoscaling", module="test_throttle_fail", attempts=2)
    with pytest.raises(ClientError) as err:
        asg.set_desired_capacity(AutoScalingGroupName="sandbox-nodes", DesiredCapacity=2)
    assert err.value.response["Error"] == {"Type": "Sender", "Code": "Throttling", "Message": "Rate exceeded"}
    assert err.value.response["ResponseMetadata"]["RetryAttempts"] == 1
    seen = requests_by(aws_sandbox, "test_throttle_fail")
    assert [(e["action"], e["status"], e["fault"], e["mutating"]) for e in seen] == [("SetDesiredCapacity", 400, "throttling", True)] * 2
    assert describe(aws_sandbox, "sandbox-nodes")["DesiredCapacity"] == 6
    # Other actions are not affected.
    assert asg.describe_auto_scaling_groups(AutoScalingGroupNames=["sandbox-nodes"])["AutoScalingGroups"]


@pytest.mark.usefixtures("aws_estate")
def test_ec2_throttling_uses_request_limit_exceeded(aws_sandbox):
    aws_sandbox.faults.set(throttling={"DescribeInstances": 1.0})
    with pytest.raises(ClientError) as err:
        client(aws_sandbox, "ec2").describe_instances()
    assert err.value.response["Error"]["Code"] == "RequestLimitExceeded"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503


def test_wildcard_throttles_json_protocol_services_too(aws_sandbox, aws_estate):
    aws_sandbox.faults.set(throttling={"*": 1.0})
    with pytest.raises(ClientError) as err:
        client(aws_sandbox, "ssm").get_parameter(Name=aws_estate["ssm_parameter"])
    assert err.value.response["Error"]["Code"] == "ThrottlingException"
    aws_sandbox.faults.set(throttling={"*": 1.0, "GetParameter": 0.0})
    assert client(aws_sandbox, "ssm").get_parameter(Name=aws_estate["ssm_parameter"])["Parameter"]["Value"] == aws_estate["amis"]["new"]


@pytest.mark.usefixtures("aws_estate")
def test_server_errors_are_retried_to_success(aws_sandbox):
    aws_sandbox.faults.set(internal_error={"DescribeAutoScalingInstances": 0.5}, seed=1)
    asg = client(aws_sandbox, "autoscaling", module="test_5xx_retry", attempts=5)
    assert asg.describe_auto_scaling_instances()["AutoScalingInstances"]
    seen = requests_by(aws_sandbox, "test_5xx_retry")
    assert len(seen) >= 2 and {e["status"] for e in seen[:-1]} == {500} and {e["fault"] for e in seen[:-1]} == {"internal_error"}
    assert seen[-1]["status"] == 200


@pytest.mark.usefixtures("aws_estate")
@pytest.mark.parametrize("kind,service,action,code,status", [
    ("internal_error", "autoscaling", "DescribeAutoScalingGroups", "InternalFailure", 500),
    ("unavailable", "autoscaling", "DescribeAutoScalingGroups", "ServiceUnavailable", 503),
    ("internal_error", "ec2", "DescribeInstances", "InternalError", 500),
    ("unavailable", "ec2", "DescribeInstances", "Unavailable", 503),
])
def test_server_errors_at_rate_one_surface_as_client_error(aws_sandbox, kind, service, action, code, status):
    aws_sandbox.faults.set(**{kind: {action: 1.0}})
    module = "test_5xx_%s_%s" % (kind, service)
    api = client(aws_sandbox, service, module=module, attempts=2)
    call = api.describe_auto_scaling_groups if service == "autoscaling" else api.describe_instances
    with pytest.raises(ClientError) as err:
        call()
    assert err.value.response["Error"]["Code"] == code
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert [(e["status"], e["fault"]) for e in requests_by(aws_sandbox, module)] == [(status, kind)] * 2


def test_fault_settings_are_validated(aws_sandbox):
    with pytest.raises(ValueError, match=r"throttling\['SetDesiredCapacity'\] must be a number between 0 and 1"):
        aws_sandbox.faults.set(throttling={"SetDesiredCapacity": 1.5})
    with pytest.raises(ValueError, match="insufficient_capacity_azs must be a list"):
        aws_sandbox.faults.set(insufficient_capacity_azs="us-east-1b")
    assert aws_sandbox.faults.snapshot()["throttling"] == {}


# ---------------------------------------------------------------------------------------------- request events

@pytest.mark.usefixtures("aws_estate")
def test_requests_are_attributed_to_the_client_user_agent(aws_sandbox):
    asg = client(aws_sandbox, "autoscaling", module="test_module")
    asg.describe_auto_scaling_groups(AutoScalingGroupNames=["sandbox-nodes"])
    asg.suspend_processes(AutoScalingGroupName="sandbox-nodes", ScalingProcesses=["AZRebalance"])
    asg.resume_processes(AutoScalingGroupName="sandbox-nodes", ScalingProcesses=["AZRebalance"])
    client(aws_sandbox, "ec2", module="test_module").describe_instances()
    seen = [(e["action"], e["service"], e["status"], e["fault"], e["mutating"]) for e in requests_by(aws_sandbox, "test_module")]
    assert seen == [("DescribeAutoScalingGroups", "autoscaling", 200, None, False),
                    ("SuspendProcesses", "autoscaling", 200, None, True),
                    ("ResumeProcesses", "autoscaling", 200, None, True),
                    ("DescribeInstances", "ec2", 200, None, False)]
    setup = [e for e in aws_sandbox.events.events("aws.request") if e["action"] == "CreateVpc"]
    assert [e["client"] for e in setup] == ["sandbox"]


# ---------------------------------------------------------------------------------------------- scale

def test_instances_view_is_cheap_at_a_thousand_instances(aws_sandbox, aws_estate):
    started = time.perf_counter()
    make_group(aws_sandbox, aws_estate, "fid-thousand", 1000)
    assert time.perf_counter() - started < 30
    samples = []
    for _sample in range(10):
        started = time.perf_counter()
        listed = aws_sandbox.instances()
        samples.append(time.perf_counter() - started)
    assert sum(1 for i in listed if i["group"] == "fid-thousand") == 1000
    assert statistics.median(samples) < 0.05
    assert Counter(i["az"] for i in listed if i["group"] == "fid-thousand") == {"us-east-1a": 334, "us-east-1b": 333, "us-east-1c": 333}
    client(aws_sandbox, "autoscaling").delete_auto_scaling_group(AutoScalingGroupName="fid-thousand", ForceDelete=True)


def test_a_group_at_fifty_tags_still_takes_new_values_for_its_keys(aws_sandbox, aws_estate):
    make_group(aws_sandbox, aws_estate, "fid-tags", 1)
    asg = client(aws_sandbox, "autoscaling")

    def tags(keys, value):
        return [{"ResourceId": "fid-tags", "ResourceType": "auto-scaling-group", "Key": key, "Value": value, "PropagateAtLaunch": False}
                for key in keys]

    asg.create_or_update_tags(Tags=tags(["t-%d" % index for index in range(50)], "a"))
    asg.create_or_update_tags(Tags=tags(["t-0", "t-49"], "b"))
    assert {tag["Key"]: tag["Value"] for tag in describe(aws_sandbox, "fid-tags")["Tags"]}["t-49"] == "b"
    with pytest.raises(ClientError) as err:
        asg.create_or_update_tags(Tags=tags(["t-50"], "a"))
    assert err.value.response["Error"]["Code"] == "LimitExceeded"
