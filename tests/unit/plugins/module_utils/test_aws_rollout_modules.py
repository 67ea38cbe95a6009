# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The AWS halves of node_group_info, launch_template_version, asg_surge and instance_terminate, run as real
AnsibleModules against moto in-process (mock_aws). Every AWS call the module makes is recorded, so bad input is
shown to be refused with no mutating call.

moto reports each group instance's launch template version as the template's current default version; the
scenarios here only rely on what moto models faithfully. Launch behaviour that needs the sandbox's fidelity
layer (replacements on the new version, per-instance versions after scaling) is covered end to end.
"""

from __future__ import annotations

import boto3
import botocore.loaders
import botocore.session
import pytest
from botocore.client import BaseClient
from moto import mock_aws

from ansible_collections.nodeops.rollout.plugins.module_utils import node_group as node_group_utils
from ansible_collections.nodeops.rollout.plugins.module_utils.launch_template import run_launch_template_version
from ansible_collections.nodeops.rollout.plugins.module_utils.node_group import run_node_group_info
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import state as rs
from ansible_collections.nodeops.rollout.plugins.module_utils.surge import run_asg_surge
from ansible_collections.nodeops.rollout.plugins.module_utils.terminate import run_instance_terminate
from ansible_collections.nodeops.rollout.plugins.modules import (
    asg_surge as asg_surge_module,
    instance_terminate as instance_terminate_module,
    launch_template_version as launch_template_version_module,
    node_group_info as node_group_info_module,
)

REGION = "us-east-1"
AZS = ("us-east-1a", "us-east-1b", "us-east-1c")
AUTH = {"region": REGION, "access_key": "testing", "secret_key": "testing", "max_attempts": 1}
READ_PREFIXES = ("Describe", "List", "Get")


class World:
    """A VPC over three AZs, two AMIs, an SSM parameter, a launch template and a group of three on version 1."""

    def __init__(self):
        self.ec2 = boto3.client("ec2", region_name=REGION)
        self.asg = boto3.client("autoscaling", region_name=REGION)
        self.ssm = boto3.client("ssm", region_name=REGION)
        vpc = self.ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        self.subnets = [self.ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.%d.0/20" % (index * 16), AvailabilityZone=az)["Subnet"]["SubnetId"]
                        for index, az in enumerate(AZS)]
        self.old_ami = self.ec2.register_image(Name="unit-node-1.29", RootDeviceName="/dev/xvda")["ImageId"]
        self.new_ami = self.ec2.register_image(Name="unit-node-1.30", RootDeviceName="/dev/xvda")["ImageId"]
        self.ssm.put_parameter(Name="/unit/ami/new", Value=self.new_ami, Type="String")
        self.ssm.put_parameter(Name="/unit/not-an-ami", Value="hello", Type="String")
        template = self.ec2.create_launch_template(
            LaunchTemplateName="workers", LaunchTemplateData={"ImageId": self.old_ami, "InstanceType": "m5.large"})["LaunchTemplate"]
        self.lt_id = template["LaunchTemplateId"]
        self.create_group("workers", 3, version="$Latest")

    def create_group(self, name, size, version="1", low=None, high=None, mixed=False, tags=None):
        spec = {"LaunchTemplateId": self.lt_id, "Version": version}
        kwargs = {"LaunchTemplate": spec}
        if mixed:
            kwargs = {"MixedInstancesPolicy": {"LaunchTemplate": {"LaunchTemplateSpecification": spec}}}
        self.asg.create_auto_scaling_group(
            AutoScalingGroupName=name, MinSize=size if low is None else low, MaxSize=(size * 2 if high is None else high),
            DesiredCapacity=size, VPCZoneIdentifier=",".join(self.subnets),
            Tags=[{"Key": key, "Value": value, "PropagateAtLaunch": True}
                  for key, value in (tags or {"eks:nodegroup-name": name, "kubernetes.io/cluster/unit": "owned"}).items()],
            **kwargs)

    def group(self, name="workers"):
        return self.asg.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]

    def sizes(self, name="workers"):
        group = self.group(name)
        return group["MinSize"], group["MaxSize"], group["DesiredCapacity"]

    def tags(self, name="workers"):
        return rs.tags_to_dict(self.group(name)["Tags"])

    def member_ids(self, name="workers"):
        return sorted(instance["InstanceId"] for instance in self.group(name)["Instances"])

    def suspended(self, name="workers"):
        return sorted(process["ProcessName"] for process in self.group(name)["SuspendedProcesses"])

    def new_version(self, image=None):
        return self.ec2.create_launch_template_version(
            LaunchTemplateId=self.lt_id, SourceVersion="1",
            LaunchTemplateData={"ImageId": image or self.new_ami, "InstanceType": "m5.large"})["LaunchTemplateVersion"]["VersionNumber"]


_SHARED_LOADER = botocore.loaders.create_loader()


@pytest.fixture
def world(isolated_env, monkeypatch):  # pylint: disable=unused-argument
    # moto's default catalog of public AMIs costs seconds per DescribeImages; two registered images are enough.
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
    # Each module run builds its own boto3 Session, which reads the service models again; share one loader (and its
    # cache) between them so the tests spend their time on behaviour.
    monkeypatch.setattr(botocore.session, "create_loader", lambda *args, **kwargs: _SHARED_LOADER)
    with mock_aws():
        yield World()


@pytest.fixture
def api_calls(monkeypatch):
    """Every AWS API call made from now on, as (service, operation); cleared by the tests before the module runs."""
    calls = []
    original = BaseClient._make_api_call  # pylint: disable=protected-access

    def record(self, operation_name, api_params):
        calls.append((self.meta.service_model.service_name, operation_name))
        return original(self, operation_name, api_params)

    monkeypatch.setattr(BaseClient, "_make_api_call", record)
    return calls


class Cluster:
    """The Kubernetes side the termination gate reads: a node for every instance EC2 runs (cordoned and drained unless a
    test says otherwise) and the pods a test puts on them."""

    def __init__(self, world):
        self.world = world
        self.pods = {}            # node name -> pods
        self.schedulable = set()  # instance ids whose node is not cordoned
        self.unregistered = set()  # instance ids without a node
        self.foreign = False       # True: the cluster's nodes match no instance (another cluster)

    @staticmethod
    def node_name(instance_id):
        return "node-" + instance_id

    def list_nodes(self):
        items = []
        for reservation in self.world.ec2.describe_instances()["Reservations"]:
            for instance in reservation["Instances"]:
                instance_id = instance["InstanceId"]
                if instance["State"]["Name"] == "terminated" or instance_id in self.unregistered:
                    continue
                provider = "aws:///us-east-1a/%s" % (instance_id.replace("i-", "i-f") if self.foreign else instance_id)
                items.append({"metadata": {"name": self.node_name(instance_id)},
                              "spec": {"providerID": provider, "unschedulable": instance_id not in self.schedulable}})
        return items

    def list_pods(self, node=None):
        return list(self.pods.get(node, []))


@pytest.fixture(autouse=True)
def cluster(request, monkeypatch):
    """Patches the termination gate's Kubernetes client for the tests that use the ``world`` fixture."""
    if "world" not in request.fixturenames:
        return None
    from ansible_collections.nodeops.rollout.plugins.module_utils import terminate as terminate_utils  # pylint: disable=import-outside-toplevel
    fake = Cluster(request.getfixturevalue("world"))
    monkeypatch.setattr(terminate_utils, "KubeApi", lambda api_client: fake)
    monkeypatch.setattr(terminate_utils, "k8s_client", lambda module: object())
    return fake


def _pod(name, kind="ReplicaSet"):
    return {"metadata": {"namespace": "shop", "name": name, "ownerReferences": [{"kind": kind, "name": "owner", "controller": True}]},
            "status": {"phase": "Running"}}


def mutating(calls):
    return [call for call in calls if not call[1].startswith(READ_PREFIXES)]


@pytest.fixture
def run(run_module, api_calls):
    """run(kind, check=False, diff=False, **args) -> the module's result (a failure's result has failed=True)."""
    modules = {
        "node_group_info": (node_group_info_module, run_node_group_info),
        "launch_template_version": (launch_template_version_module, run_launch_template_version),
        "asg_surge": (asg_surge_module, run_asg_surge),
        "instance_terminate": (instance_terminate_module, run_instance_terminate),
    }

    def runner(kind, check=False, diff=False, **args):
        module_file, func = modules[kind]
        arguments = dict(AUTH, _ansible_check_mode=check, _ansible_diff=diff, **args)
        kwargs = {"supports_check_mode": True}
        if kind == "node_group_info":
            kwargs.update(mutually_exclusive=[("name", "tags")], required_one_of=[("name", "tags")])
        if kind == "launch_template_version":
            kwargs.update(mutually_exclusive=[("image_id", "ssm_parameter", "version")])
        del api_calls[:]
        try:
            run_module(module_file.argument_spec(), arguments, func, **kwargs)
        except run_module.ModuleExit as done:
            return done.result
        raise AssertionError("the module returned without exit_json or fail_json")

    return runner


# ---------------------------------------------------------------------------------------------------------------------
# node_group_info
# ---------------------------------------------------------------------------------------------------------------------

def test_info_resolves_latest_and_marks_every_old_instance_outdated(world, run):
    assert world.new_version() == 2
    result = run("node_group_info", name="workers", include_nodes=False)
    assert result["changed"] is False
    group = result["node_groups"][0]
    assert (group["min_size"], group["max_size"], group["desired_capacity"]) == (3, 6, 3)
    assert group["availability_zones"] == list(AZS) and group["az_count"] == 3
    assert group["launch_template"]["version_spec"] == "$Latest"
    assert group["launch_template"]["version"] == 2 and group["launch_template"]["image_id"] == world.new_ami
    assert group["target"] == {"launch_template_id": world.lt_id, "version": "2", "image_id": world.new_ami}
    assert sorted(entry["instance_id"] for entry in group["outdated"]) == world.member_ids()
    assert all(instance["outdated"] and "target version is 2" in instance["outdated_reasons"][0] for instance in group["instances"])
    plan = group["plan"]
    # the surged instances come first, so no canary batch of one; batches of max_unavailable (1)
    assert plan["canary"] is False and plan["batches"][0]["instance_ids"] and len(plan["batches"][0]["instance_ids"]) == 1
    # EKS default surge max(2 x 3 AZs, 1) = 6, never more than the 3 outdated instances.
    assert plan["surge_requested"] == 6 and plan["surge"] == 3
    assert group["state"] is None


def test_info_default_version_means_up_to_date(world, run):
    world.new_version()
    world.create_group("pinned", 2, version="$Default")
    group = run("node_group_info", name="pinned", include_nodes=False)["node_groups"][0]
    assert group["launch_template"]["version"] == 1 and group["outdated"] == []
    assert group["plan"]["batches"] == [] and group["plan"]["surge"] == 0


def test_info_reads_mixed_instances_policy(world, run):
    world.new_version()
    world.create_group("mixed", 2, version="$Latest", mixed=True)
    group = run("node_group_info", name="mixed", include_nodes=False)["node_groups"][0]
    assert group["launch_template"]["mixed_instances_policy"] is True
    assert group["launch_template"]["version"] == 2 and group["outdated_count"] == 2


def test_info_finds_groups_by_tags(world, run):
    world.create_group("other-cluster", 1, tags={"kubernetes.io/cluster/other": "owned"})
    world.create_group("gpu", 1, tags={"kubernetes.io/cluster/unit": "owned", "eks:nodegroup-name": "gpu"})
    result = run("node_group_info", tags={"kubernetes.io/cluster/unit": None}, include_nodes=False)
    assert [group["name"] for group in result["node_groups"]] == ["gpu", "workers"]
    result = run("node_group_info", tags={"eks:nodegroup-name": "gpu", "kubernetes.io/cluster/unit": "owned"}, include_nodes=False)
    assert [group["name"] for group in result["node_groups"]] == ["gpu"]


def _info_sees_nodes(monkeypatch, items):
    """node_group_info's Kubernetes client lists ``items`` as the cluster's nodes."""

    class Nodes:
        @staticmethod
        def list_nodes():
            return items

    monkeypatch.setattr(node_group_utils, "KubeApi", lambda api_client: Nodes())
    monkeypatch.setattr(node_group_utils, "k8s_client", lambda module: object())


def test_info_joins_nodes_by_provider_id_and_honours_needs_update(world, run, monkeypatch):
    ids = world.member_ids()

    items = []
    for index, instance_id in enumerate(ids):
        annotations = {"nodeops.rollout/needs-update": "true"} if index == 0 else {}
        items.append({"metadata": {"name": "node-%d" % index, "annotations": annotations},
                      "spec": {"providerID": "aws:///%s/%s" % (AZS[index], instance_id), "unschedulable": index == 1,
                               "taints": [{"key": "k", "effect": "NoSchedule"}] if index == 1 else []},
                      "status": {"conditions": [{"type": "Ready", "status": "True" if index != 2 else "False"}]}})
    items.append({"metadata": {"name": "elsewhere"}, "spec": {"providerID": "gce://p/z/vm"}, "status": {}})
    _info_sees_nodes(monkeypatch, items)
    group = run("node_group_info", name="workers")["node_groups"][0]
    by_id = {instance["instance_id"]: instance for instance in group["instances"]}
    assert by_id[ids[0]]["node"] == {"name": "node-0", "ready": True, "schedulable": True, "taints": []}
    assert by_id[ids[1]]["node"]["schedulable"] is False and by_id[ids[1]]["node"]["taints"][0]["key"] == "k"
    assert by_id[ids[2]]["node"]["ready"] is False
    # The group is on its latest version: only the annotated node is outdated.
    assert [entry["instance_id"] for entry in group["outdated"]] == [ids[0]]
    assert "annotated nodeops.rollout/needs-update" in group["outdated"][0]["reason"]


def test_info_reports_the_recorded_state_and_detached_instances(world, run):
    world.new_version()
    assert run("asg_surge", name="workers", method="detach", surge=1)["changed"] is True
    group = run("node_group_info", name="workers", include_nodes=False)["node_groups"][0]
    state = group["state"]
    assert state["method"] == "detach" and state["original_desired_capacity"] == 3 and state["surge"] == 1
    assert len(group["detached_instances"]) == 1
    detached = [instance for instance in group["instances"] if instance["detached"]]
    assert detached[0]["lifecycle_state"] == "Detached" and detached[0]["outdated"] is True
    assert "detached from the group for surge" in detached[0]["outdated_reasons"][0]


@pytest.mark.parametrize("field, value, words", [
    ("max_unavailable", "150%", "a percentage between 1% and 100%"),
    ("max_unavailable", "abc", "an integer >= 1"),
    ("max_unavailable", 0, "an integer >= 1"),
    ("max_unavailable", -1, "an integer >= 1"),
    ("max_surge", "-1", "an integer >= 0"),
    ("max_surge", "abc", "an integer >= 0"),
])
def test_info_refuses_bad_settings_before_any_call(world, run, api_calls, field, value, words):
    result = run("node_group_info", name="workers", include_nodes=False, **{field: value})
    assert result["failed"] and result["msg"].startswith("%s: %r is not allowed" % (field, value))
    assert words in result["msg"]
    assert api_calls == []


def test_info_refuses_unknown_groups_empty_groups_and_tags_matching_nothing(world, run, api_calls):
    result = run("node_group_info", name="nope", include_nodes=False)
    assert result["msg"] == "name: Auto Scaling group 'nope' not found in region us-east-1"
    world.create_group("empty", 0, low=0, high=3)
    result = run("node_group_info", name="empty", include_nodes=False)
    assert result["msg"].startswith("name: Auto Scaling group 'empty' has no instances")
    result = run("node_group_info", tags={"kubernetes.io/cluster/nope": None}, include_nodes=False)
    assert result["msg"].startswith("tags: no Auto Scaling group in region us-east-1 has the tags")
    assert mutating(api_calls) == []


# ---------------------------------------------------------------------------------------------------------------------
# launch_template_version
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


# ---------------------------------------------------------------------------------------------------------------------
# asg_surge
# ---------------------------------------------------------------------------------------------------------------------

def test_surge_records_suspends_and_raises_then_a_rerun_resumes_without_surging_again(world, run):
    result = run("asg_surge", name="workers", surge=3, rollout_id="r-unit-1")
    assert result["changed"] and result["resumed"] is False
    assert result["steps"] == ["recorded", "suspended", "resized"]
    assert result["sizes"] == {"before": {"min_size": 3, "max_size": 6, "desired_capacity": 3},
                               "after": {"min_size": 3, "max_size": 9, "desired_capacity": 6}}
    assert world.sizes() == (3, 9, 6) and world.suspended() == ["AZRebalance"]
    tags = world.tags()
    assert tags[rs.TAG_ROLLOUT_ID] == "r-unit-1" and tags[rs.TAG_ORIGINAL_MAX] == "6" and tags[rs.TAG_SURGE_OWED] == "3"
    assert tags[rs.TAG_SUSPENDED_PROCESSES] == "AZRebalance" and tags[rs.TAG_TARGET_LAUNCH_TEMPLATE] == world.lt_id
    assert tags[rs.TAG_TARGET_VERSION] == "1"
    again = run("asg_surge", name="workers", surge=3)
    assert again["changed"] is False and again["resumed"] is True and again["rollout_id"] == "r-unit-1"
    assert world.sizes() == (3, 9, 6) and not again.get("warnings")
    different = run("asg_surge", name="workers", surge=5)
    assert different["changed"] is False and world.sizes() == (3, 9, 6)
    assert "recorded with a surge of 3; surge=5 is ignored" in str(different["warnings"])


def test_restore_gives_back_the_exact_original_sizes_and_only_our_processes(world, run):
    world.asg.suspend_processes(AutoScalingGroupName="workers", ScalingProcesses=["ScheduledActions"])
    run("asg_surge", name="workers", surge=2, suspend_processes=["AZRebalance", "ScheduledActions"])
    assert world.tags()[rs.TAG_SUSPENDED_PROCESSES] == "AZRebalance"  # ScheduledActions was not ours
    refused = run("asg_surge", name="workers", state="restored")
    # lowering desired would let the group pick two instances, drained or not: the surge is paid back by name first
    assert refused["failed"] and "still holds 2 instance(s) of surge owed" in refused["msg"] and world.sizes() == (3, 8, 5)
    chosen = world.member_ids()[:2]
    paid = run("instance_terminate", asg_name="workers", instance_ids=chosen, decrement_desired_capacity="owed", delete_node=False)
    assert paid["decremented"] == chosen and world.sizes() == (3, 8, 3)
    result = run("asg_surge", name="workers", state="restored")
    assert result["changed"] and result["restored"] and result["autoscaler_moved"] is False
    assert result["sizes"]["after"] == {"min_size": 3, "max_size": 6, "desired_capacity": 3}
    assert world.sizes() == (3, 6, 3)
    assert world.suspended() == ["ScheduledActions"] and result["resumed_processes"] == ["AZRebalance"]
    assert not [key for key in world.tags() if key.startswith(rs.TAG_PREFIX)]
    again = run("asg_surge", name="workers", state="restored")
    assert again["changed"] is False and "nothing to restore" in again["msg"]


def test_restore_leaves_an_autoscalers_nodes_alone_after_the_surge_is_paid_back(world, run):
    run("asg_surge", name="workers", surge=3)                      # 3/9/6, owed 3
    world.asg.set_desired_capacity(AutoScalingGroupName="workers", DesiredCapacity=8)  # the autoscaler adds 2
    paid = run("instance_terminate", asg_name="workers", instance_ids=world.member_ids()[:4], decrement_desired_capacity="owed",
               delete_node=False)
    assert len(paid["decremented"]) == 3 and world.sizes()[2] == 5   # only our 3; the fourth is replaced
    result = run("asg_surge", name="workers", state="restored")
    assert result["autoscaler_moved"] is True and result["autoscaler_delta"] == 2
    assert world.sizes() == (3, 6, 5)


def test_the_surge_owed_is_recomputed_from_the_group(world, run):
    """A run killed between a decrementing termination and its tag write leaves the counter one too high: the next run
    must not decrement again, or the group ends below its original size."""
    run("asg_surge", name="workers", surge=2)                      # 3/8/5, owed 2
    first = world.member_ids()[0]
    world.asg.terminate_instance_in_auto_scaling_group(InstanceId=first, ShouldDecrementDesiredCapacity=True)  # tag not written
    assert _state_of(world)["surge_owed"] == 2 and world.sizes()[2] == 4
    rest = [instance_id for instance_id in world.member_ids() if instance_id != first]
    paid = run("instance_terminate", asg_name="workers", instance_ids=rest[:2], decrement_desired_capacity="owed", delete_node=False)
    assert paid["surge_owed"] == {"before": 1, "after": 0} and len(paid["decremented"]) == 1
    assert world.sizes()[2] == 3 and _state_of(world)["surge_owed"] == 0


def test_surge_check_and_diff_mode(world, run, api_calls):
    result = run("asg_surge", check=True, diff=True, name="workers", surge="50%")
    assert result["changed"] and result["surge"] == 2
    assert result["diff"]["before"]["max_size"] == 6 and result["diff"]["after"]["max_size"] == 8
    assert result["diff"]["after"]["suspended_processes"] == ["AZRebalance"]
    assert result["diff"]["after"]["tags"][rs.TAG_SURGE] == "2"
    assert mutating(api_calls) == [] and world.sizes() == (3, 6, 3) and rs.TAG_ROLLOUT_ID not in world.tags()
    run("asg_surge", name="workers", surge=2)
    run("instance_terminate", asg_name="workers", instance_ids=world.member_ids()[:2], decrement_desired_capacity="owed", delete_node=False)
    result = run("asg_surge", check=True, diff=True, name="workers", state="restored")
    assert result["diff"]["after"] == {"min_size": 3, "max_size": 6, "desired_capacity": 3, "suspended_processes": [], "tags": {}}
    assert mutating(api_calls) == [] and world.sizes() == (3, 8, 3)


def test_a_surge_interrupted_after_recording_is_finished_once(world, run):
    state = {"rollout_id": "r-cut", "method": "scale", "original_min_size": 3, "original_max_size": 6,
             "original_desired_capacity": 3, "surge": 2, "surge_owed": 2, "surged_max_size": 8,
             "suspended_processes": ["AZRebalance"], "started_at": "2024-05-01T12:00:00Z"}
    rs.write_state(world.asg, "workers", rs.state_tags(state))
    result = run("asg_surge", name="workers", surge=5)
    assert result["resumed"] and result["steps"] == ["suspended", "resized"] and world.sizes() == (3, 8, 5)
    assert run("asg_surge", name="workers")["changed"] is False and world.sizes() == (3, 8, 5)


def test_detach_surges_as_kops_does(world, run):
    world.new_version()  # $Latest moves on: every instance is outdated
    before = world.member_ids()
    result = run("asg_surge", name="workers", method="detach", surge=2)
    assert result["changed"] and len(result["detached_instances"]) == 2
    assert set(result["detached_instances"]) <= set(before)
    assert world.sizes() == (3, 6, 3)   # desired not decremented: the group launched two replacements
    assert not set(result["detached_instances"]) & set(world.member_ids()) and len(world.member_ids()) == 3
    for reservation in world.ec2.describe_instances(InstanceIds=result["detached_instances"])["Reservations"]:
        for instance in reservation["Instances"]:
            tags = rs.tags_to_dict(instance["Tags"])
            assert tags[rs.TAG_INSTANCE_DETACHED] == result["rollout_id"] and tags[rs.TAG_INSTANCE_DETACHED_FROM] == "workers"
    assert world.tags()[rs.TAG_SURGE_OWED] == "0"
    again = run("asg_surge", name="workers", method="detach", surge=2)
    assert again["changed"] is False and again["detached_instances"] == []
    wrong = run("asg_surge", name="workers", surge=2)
    assert wrong["failed"] and wrong["msg"].startswith("method: Auto Scaling group 'workers' has rollout %s recorded with method detach"
                                                       % result["rollout_id"])


@pytest.mark.parametrize("args, message", [
    ({"surge": -1}, "surge: -1 is not allowed; use an integer >= 0 or a percentage between 0% and 100%"),
    ({"surge": "abc"}, "surge: 'abc' is not allowed"),
    ({"surge": 1.5}, "surge: 1.5 is not allowed"),
    ({"surge": "150%"}, "surge: '150%' is not allowed"),
    ({"max_unavailable": 0}, "max_unavailable: 0 is not allowed"),
    ({"max_size_limit": -1}, "max_size_limit: -1 is not allowed"),
    ({"rollout_id": "bad id"}, "rollout_id: 'bad id' is not allowed"),
    ({"instance_ids": ["i-0123456789abcdef0"]}, "instance_ids: only allowed with method=detach and state=surged"),
    ({"method": "detach", "instance_ids": ["web-1"]}, "instance_ids: 'web-1' is not an EC2 instance id"),
])
def test_surge_bad_options_are_refused_before_any_call(world, run, api_calls, args, message):
    result = run("asg_surge", name="workers", **args)
    assert result["failed"] and result["msg"].startswith(message)
    assert api_calls == []


def test_surge_refusals_that_need_the_group_change_nothing(world, run, api_calls):
    result = run("asg_surge", name="nope", surge=1)
    assert result["msg"] == "name: Auto Scaling group 'nope' not found in region us-east-1"
    assert mutating(api_calls) == []
    result = run("asg_surge", name="workers", surge=6, max_size_limit=8)
    assert result["msg"].startswith("surge: 6 more instances on a desired capacity of 3 need a maximum size of 9, above max_size_limit 8")
    assert mutating(api_calls) == []
    world.create_group("empty", 0, low=0, high=3)
    result = run("asg_surge", name="empty", surge=1)
    assert result["msg"].startswith("name: Auto Scaling group 'empty' has no instances")
    assert mutating(api_calls) == []
    result = run("asg_surge", name="workers", method="detach", instance_ids=["i-0123456789abcdef0"])
    assert result["msg"] == "instance_ids: i-0123456789abcdef0 is not an instance in service in Auto Scaling group 'workers'"
    assert mutating(api_calls) == []
    assert world.sizes() == (3, 6, 3) and rs.TAG_ROLLOUT_ID not in world.tags()


def test_damaged_state_tags_are_refused_naming_the_tag(world, run, api_calls):
    rs.write_state(world.asg, "workers", {rs.TAG_ROLLOUT_ID: "r-1", rs.TAG_ORIGINAL_MIN: "3", rs.TAG_ORIGINAL_MAX: "six",
                                          rs.TAG_ORIGINAL_DESIRED: "3", rs.TAG_SURGE: "1", rs.TAG_SURGE_OWED: "1"})
    result = run("asg_surge", name="workers", state="restored")
    assert result["msg"].startswith("Auto Scaling group 'workers': tag nodeops.rollout/original-max is 'six', not a whole number")
    assert mutating(api_calls) == []


# ---------------------------------------------------------------------------------------------------------------------
# instance_terminate
# ---------------------------------------------------------------------------------------------------------------------

def _state_of(world):
    return rs.group_state(world.group())


def test_terminate_with_and_without_decrement_pays_the_surge_back(world, run):
    run("asg_surge", name="workers", surge=3)  # 3/9/6, owed 3
    members = world.member_ids()
    keep = run("instance_terminate", asg_name="workers", instance_ids=[members[0]], delete_node=False)
    assert keep["changed"] and keep["terminated"] == [members[0]] and keep["decremented"] == []
    assert world.sizes()[2] == 6 and len(world.member_ids()) == 6 and members[0] not in world.member_ids()
    assert _state_of(world)["surge_owed"] == 3
    pay = run("instance_terminate", asg_name="workers", instance_ids=members[1:4], decrement_desired_capacity=2, delete_node=False)
    assert pay["decremented"] == members[1:3] and pay["terminated"] == members[1:4]
    assert pay["desired_capacity"] == {"before": 6, "after": 4} and pay["surge_owed"] == {"before": 3, "after": 1}
    assert world.sizes()[2] == 4 and _state_of(world)["surge_owed"] == 1


def test_terminate_refuses_paying_back_more_than_is_owed(world, run, api_calls):
    world.create_group("loose", 3, low=1)
    run("asg_surge", name="loose", surge=1)   # 1/7/4, owed 1
    members = world.member_ids("loose")
    result = run("instance_terminate", asg_name="loose", instance_ids=members[:2], decrement_desired_capacity=True, delete_node=False)
    assert result["failed"] and "more than the surge still owed (1) by rollout" in result["msg"] and "or pass 'owed'" in result["msg"]
    assert mutating(api_calls) == [] and world.member_ids("loose") == members


def test_terminate_below_min_is_refused(world, run, api_calls):
    result = run("instance_terminate", asg_name="workers", instance_ids=world.member_ids()[:1], decrement_desired_capacity=1,
                 delete_node=False)
    assert result["msg"].startswith("decrement_desired_capacity: decrementing 1 would take the desired capacity of Auto Scaling group "
                                    "'workers' from 3 below its min size 3")
    assert mutating(api_calls) == []


def test_an_instance_already_gone_is_not_an_error(world, run):
    gone = world.member_ids()[0]
    world.ec2.terminate_instances(InstanceIds=[gone])
    result = run("instance_terminate", asg_name="workers", instance_ids=[gone, "i-0123456789abcdef0"], delete_node=False)
    assert result["failed"] is not True if "failed" in result else True
    assert sorted(result["already_gone"]) == sorted([gone, "i-0123456789abcdef0"]) and result["changed"] is False


def test_detached_instances_are_terminated_through_ec2(world, run):
    world.new_version()
    detached = run("asg_surge", name="workers", method="detach", surge=1)["detached_instances"]
    result = run("instance_terminate", asg_name="workers", instance_ids=detached, decrement_desired_capacity=True, delete_node=False)
    assert result["terminated_detached"] == detached and result["decremented"] == [] and world.sizes()[2] == 3
    state = world.ec2.describe_instances(InstanceIds=detached)["Reservations"][0]["Instances"][0]["State"]["Name"]
    assert state == "terminated"


def test_terminate_check_mode_predicts_without_changes(world, run, api_calls):
    run("asg_surge", name="workers", surge=2)
    members = world.member_ids()
    result = run("instance_terminate", check=True, asg_name="workers", instance_ids=members[:2], decrement_desired_capacity=1,
                 delete_node=False)
    assert result["changed"] and result["terminated"] == members[:2] and result["decremented"] == members[:1]
    assert result["desired_capacity"] == {"before": 5, "after": 4} and result["surge_owed"] == {"before": 2, "after": 1}
    assert mutating(api_calls) == [] and world.member_ids() == members


@pytest.mark.parametrize("args, message", [
    ({"instance_ids": []}, "instance_ids: an empty list is not allowed"),
    ({"instance_ids": ["web-1"]}, "instance_ids: 'web-1' is not an EC2 instance id"),
    ({"instance_ids": ["i-0123456789abcdef0", "i-0123456789abcdef0"]}, "instance_ids: i-0123456789abcdef0 is listed more than once"),
    ({"instance_ids": ["i-0123456789abcdef0"], "decrement_desired_capacity": "abc"},
     "decrement_desired_capacity: 'abc' is not allowed; use true, false, owed or a whole number between 0 and 1"),
    ({"instance_ids": ["i-0123456789abcdef0"], "decrement_desired_capacity": 2}, "decrement_desired_capacity: 2 is not allowed"),
    ({"instance_ids": ["i-0123456789abcdef0"], "decrement_desired_capacity": -1}, "decrement_desired_capacity: -1 is not allowed"),
])
def test_terminate_bad_options_are_refused_before_any_call(world, run, api_calls, args, message):
    result = run("instance_terminate", asg_name="workers", delete_node=False, **args)
    assert result["failed"] and result["msg"].startswith(message)
    assert api_calls == []


def test_an_instance_of_another_group_is_refused(world, run, api_calls):
    world.create_group("other", 1)
    stranger = world.member_ids("other")[0]
    result = run("instance_terminate", asg_name="workers", instance_ids=[world.member_ids()[0], stranger], delete_node=False)
    assert result["msg"] == ("instance_ids: %s is not in Auto Scaling group 'workers' (it is in Auto Scaling group 'other') and was not "
                             "detached from it" % stranger)
    assert mutating(api_calls) == [] and len(world.member_ids()) == 3
    result = run("instance_terminate", asg_name="nope", instance_ids=[stranger], delete_node=False)
    assert result["msg"] == "asg_name: Auto Scaling group 'nope' not found in region us-east-1"
    assert mutating(api_calls) == []


class _FakeNodes:
    """A Kubernetes API holding cordoned Node objects without pods, recording deletions."""

    def __init__(self, nodes):
        self.nodes = dict(nodes)   # node name -> instance id
        self.deleted = []

    def list_nodes(self):
        return [{"metadata": {"name": name}, "spec": {"providerID": "aws:///us-east-1a/%s" % instance_id, "unschedulable": True},
                 "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
                for name, instance_id in self.nodes.items()]

    @staticmethod
    def list_pods(node=None):  # pylint: disable=unused-argument
        return []

    def delete_node(self, name):
        """As KubeApi.delete_node: True when deleted, False when already gone."""
        if name not in self.nodes:
            return False
        del self.nodes[name]
        self.deleted.append(name)
        return True


def test_nodes_that_outlive_their_instances_are_deleted_and_running_ones_are_left(world, run, monkeypatch):
    from ansible_collections.nodeops.rollout.plugins.module_utils import terminate as terminate_utils  # pylint: disable=import-outside-toplevel
    gone, running, victim = world.member_ids()
    world.ec2.terminate_instances(InstanceIds=[gone])
    api = _FakeNodes({"node-gone": gone, "node-running": running, "node-victim": victim, "node-unrelated": "i-0fffffffffffffff0"})

    class Client:
        @staticmethod
        def sanitize_for_serialization(value):
            return value

    monkeypatch.setattr(terminate_utils, "KubeApi", lambda api_client: api)
    monkeypatch.setattr(terminate_utils, "k8s_client", lambda module: Client())
    result = run("instance_terminate", asg_name="workers", instance_ids=[gone, victim])
    assert result["already_gone"] == [gone] and result["terminated"] == [victim]
    assert sorted(result["nodes_deleted"]) == ["node-gone", "node-victim"]
    assert sorted(api.nodes) == ["node-running", "node-unrelated"]
    # Not waiting: the instance may still be shutting down, so its node is left for a later run (a live kubelet would
    # register it again).
    monkeypatch.setattr(terminate_utils, "_wait_terminated", lambda *args: None)
    world.create_group("slow", 1)
    slow = world.member_ids("slow")[0]
    api.nodes["node-slow"] = slow
    real_describe = terminate_utils.describe_instances

    def still_shutting_down(ec2, ids):
        found = real_describe(ec2, ids)
        for instance in found.values():
            instance["State"] = {"Name": "shutting-down", "Code": 32}
        return found

    monkeypatch.setattr(terminate_utils, "describe_instances", still_shutting_down)
    result = run("instance_terminate", asg_name="slow", instance_ids=[slow], wait=False)
    assert result["terminated"] == [slow] and result["nodes_deleted"] == [] and result["nodes_left"] == ["node-slow"]
    assert "node-slow" in api.nodes


# ---------------------------------------------------------------------------------------------------------------------
# the termination gate, as instance_terminate asks it
# ---------------------------------------------------------------------------------------------------------------------

def test_the_gate_refuses_a_node_that_is_not_cordoned_or_still_runs_pods(world, run, cluster, api_calls):
    first, second, third = world.member_ids()
    cluster.schedulable.add(first)
    cluster.pods[cluster.node_name(second)] = [_pod("checkout-1"), _pod("fluent-bit-x", kind="DaemonSet")]
    cluster.pods[cluster.node_name(third)] = [_pod("fluent-bit-y", kind="DaemonSet"), dict(_pod("job-1"), status={"phase": "Succeeded"})]
    for check in (True, False):
        result = run("instance_terminate", check=check, asg_name="workers", instance_ids=[first, second, third], delete_node=False)
        assert result["failed"] and result["msg"].startswith("refused to terminate 2 instance(s) of Auto Scaling group 'workers'")
        assert [refusal["instance_id"] for refusal in result["refused"]] == [first, second]
        assert "node node-%s is not cordoned" % first in result["msg"]
        assert "still runs 1 pod(s) that are not DaemonSet or mirror pods: shop/checkout-1" in result["msg"]
        assert mutating(api_calls) == [] and world.member_ids() == sorted([first, second, third])
    # the third (only a DaemonSet pod and a finished one) may go on its own
    assert run("instance_terminate", asg_name="workers", instance_ids=[third], delete_node=False)["terminated"] == [third]


def test_the_gate_lets_an_instance_that_never_registered_go_only_when_the_cluster_is_the_groups(world, run, cluster, api_calls):
    first = world.member_ids()[0]
    cluster.unregistered.add(first)
    cluster.foreign = True   # the kubeconfig points at another cluster: no node matches any instance of the group
    result = run("instance_terminate", asg_name="workers", instance_ids=[first], delete_node=False)
    assert result["failed"] and "neither has any other instance of Auto Scaling group 'workers'" in result["msg"]
    assert mutating(api_calls) == []
    cluster.foreign = False  # the other instances are nodes here: the first one never registered
    assert run("instance_terminate", asg_name="workers", instance_ids=[first], delete_node=False)["terminated"] == [first]


def test_info_names_both_sides_when_the_groups_instances_are_not_nodes_of_the_cluster(world, run, monkeypatch):
    _info_sees_nodes(monkeypatch, [{"metadata": {"name": "ip-10-9-9-9.ec2.internal"},
                                    "spec": {"providerID": "aws:///eu-west-1a/i-0ddddddddddddddd0"}, "status": {}}])
    group = run("node_group_info", name="workers")["node_groups"][0]
    assert group["mismatch"].startswith("none of the 3 instances in service of Auto Scaling group 'workers' (")
    assert all(instance["instance_id"] in group["mismatch"] for instance in group["instances"])
    assert "ip-10-9-9-9.ec2.internal (aws:///eu-west-1a/i-0ddddddddddddddd0)" in group["mismatch"]
