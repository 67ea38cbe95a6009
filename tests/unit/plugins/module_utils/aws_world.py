# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The AWS world the runner tests of node_group_info, launch_template_version, asg_surge and instance_terminate share:
real AnsibleModules against moto in-process (mock_aws). Every AWS call the module makes is recorded, so bad input is
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

from ansible_collections.nodeops.rollout.plugins.module_utils.core.tags import tags_to_dict
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import state as rs
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.launch_template import run_launch_template_version
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.node_group import run_node_group_info
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.surge import run_asg_surge
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.terminate import run_instance_terminate
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
        return tags_to_dict(self.group(name)["Tags"])

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

    def list_node_pods(self, node, label_selector=None):  # pylint: disable=unused-argument
        return self.list_pods(node), "1"

    def list_pods_page(self, limit, token=None):  # pylint: disable=unused-argument
        return ([dict(pod, spec=dict(pod.get("spec") or {}, nodeName=node)) for node, pods in self.pods.items() for pod in pods],
                {"resourceVersion": "1"})


@pytest.fixture(autouse=True)
def cluster(request, monkeypatch):
    """Patches the termination gate's Kubernetes client for the tests that use the ``world`` fixture."""
    if "world" not in request.fixturenames:
        return None
    from ansible_collections.nodeops.rollout.plugins.module_utils.runners import terminate as terminate_utils  # pylint: disable=import-outside-toplevel
    fake = Cluster(request.getfixturevalue("world"))
    monkeypatch.setattr(terminate_utils, "KubeApi", lambda api_client: fake)
    monkeypatch.setattr(terminate_utils, "k8s_client", lambda module: object())
    return fake


def owned_pod(name, kind="ReplicaSet"):
    return {"metadata": {"namespace": "shop", "name": name, "ownerReferences": [{"kind": kind, "name": "owner", "controller": True}]},
            "status": {"phase": "Running"}}


def recorded_state(world, name="workers"):
    """The rollout state recorded in the tags of group ``name``."""
    return rs.group_state(world.group(name))


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
