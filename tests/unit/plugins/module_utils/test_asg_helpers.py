# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Helpers of the AWS modules that need no server: provider ids, node facts, template specs, versions, waiting."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils import asg
from ansible_collections.nodeops.rollout.plugins.module_utils.launch_template import resolve_version, template_spec


@pytest.mark.parametrize("provider_id, expected", [
    ("aws:///us-east-1a/i-0123456789abcdef0", "i-0123456789abcdef0"),
    ("aws:///us-east-1a/i-0123456789abcdef0/", "i-0123456789abcdef0"),
    ("aws://us-east-1a/i-0abc12345", "i-0abc12345"),
    ("gce://project/zone/vm-1", None),
    ("aws:///us-east-1a/fargate-ip-10-0-0-1", None),
    ("", None),
    (None, None),
])
def test_instance_id_of(provider_id, expected):
    assert asg.instance_id_of(provider_id) == expected


def test_node_summary():
    node = {"metadata": {"name": "ip-10-0-0-1.ec2.internal", "labels": {"a": "b"}, "annotations": {"x": "y"}},
            "spec": {"providerID": "aws:///us-east-1a/i-0abc12345", "unschedulable": True,
                     "taints": [{"key": "nodeops.rollout/outdated", "value": "true", "effect": "NoSchedule", "timeAdded": "t"}]},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}]}}
    summary = asg.node_summary(node)
    assert summary["name"] == "ip-10-0-0-1.ec2.internal" and summary["ready"] is True and summary["schedulable"] is False
    assert summary["taints"] == [{"key": "nodeops.rollout/outdated", "value": "true", "effect": "NoSchedule"}]
    assert summary["labels"] == {"a": "b"} and summary["annotations"] == {"x": "y"}
    bare = asg.node_summary({"metadata": {"name": "n"}})
    assert bare["ready"] is False and bare["schedulable"] is True and bare["taints"] == []


def test_instance_record_joins_both_views_and_reads_detached_instances_from_ec2_tags():
    launched = datetime(2024, 5, 1, 14, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    ec2 = {"InstanceId": "i-0abc12345", "ImageId": "ami-0aaa11111", "LaunchTime": launched, "PrivateDnsName": "ip-1.ec2.internal",
           "State": {"Name": "running"}, "Placement": {"AvailabilityZone": "us-east-1b"}, "InstanceType": "m5.large",
           "Tags": [{"Key": "aws:ec2launchtemplate:id", "Value": "lt-1"}, {"Key": "aws:ec2launchtemplate:version", "Value": "3"}]}
    group_view = {"InstanceId": "i-0abc12345", "AvailabilityZone": "us-east-1b", "LifecycleState": "InService", "HealthStatus": "Healthy",
                  "LaunchTemplate": {"LaunchTemplateId": "lt-1", "LaunchTemplateName": "w", "Version": "4"}}
    member = asg.instance_record(group_view, ec2)
    assert member["launch_template"] == {"id": "lt-1", "name": "w", "version": "4"}
    assert member["launch_time"] == "2024-05-01T12:00:00Z" and member["ec2_state"] == "running" and member["detached"] is False
    detached = asg.instance_record(None, ec2, detached=True)
    assert detached["lifecycle_state"] == "Detached" and detached["az"] == "us-east-1b"
    assert detached["launch_template"] == {"id": "lt-1", "name": None, "version": "3"}


def test_tag_filters():
    assert asg.tag_filters({"kubernetes.io/cluster/prod": None, "eks:nodegroup-name": "web", "team": ""}) == [
        {"Name": "tag:eks:nodegroup-name", "Values": ["web"]},
        {"Name": "tag-key", "Values": ["kubernetes.io/cluster/prod"]},
        {"Name": "tag-key", "Values": ["team"]},
    ]


def test_members_leave_out_instances_leaving_the_group():
    group = {"Instances": [{"InstanceId": "i-1", "LifecycleState": state} for state in
                           ("InService", "Pending", "Terminating", "Detaching", "Standby")]}
    assert [instance["LifecycleState"] for instance in asg.members(group)] == ["InService", "Pending", "Standby"]


def test_template_spec_reads_the_template_or_the_mixed_instances_policy():
    assert template_spec({"LaunchTemplate": {"LaunchTemplateId": "lt-1", "LaunchTemplateName": "w"}}) == {
        "id": "lt-1", "name": "w", "version": "$Default", "mixed_instances_policy": False}
    mixed = {"MixedInstancesPolicy": {"LaunchTemplate": {"LaunchTemplateSpecification": {"LaunchTemplateId": "lt-2", "Version": "$Latest"}}}}
    assert template_spec(mixed) == {"id": "lt-2", "name": None, "version": "$Latest", "mixed_instances_policy": True}
    assert template_spec({"LaunchConfigurationName": "old-style"}) is None


TEMPLATE = {"LaunchTemplateId": "lt-1", "LaunchTemplateName": "w", "DefaultVersionNumber": 2, "LatestVersionNumber": 5}


@pytest.mark.parametrize("version, expected", [("$Latest", 5), ("$Default", 2), (None, 2), ("", 2), ("3", 3), (4, 4), ("5", 5)])
def test_resolve_version(version, expected):
    assert resolve_version(TEMPLATE, version) == expected


@pytest.mark.parametrize("version, words", [
    ("6", "has no version 6; its versions go up to 5"), ("0", "is not allowed"), ("latest", "is not allowed"), (True, "is not allowed"),
])
def test_resolve_version_refuses(version, words):
    with pytest.raises(asg.RolloutError) as error:
        resolve_version(TEMPLATE, version)
    assert error.value.msg.startswith("version: ") and words in error.value.msg


class _Clock:
    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def test_wait_for_polls_with_growing_bounded_delays_until_done():
    clock = _Clock()
    answers = iter([(False, "2 pending", None)] * 5 + [(True, "done", "value")])
    assert asg.wait_for(lambda: next(answers), 600, "things", sleep=clock.sleep, clock=clock.time) == "value"
    assert len(clock.sleeps) == 5 and all(0 < delay <= 10 for delay in clock.sleeps)


def test_wait_for_times_out_naming_what_and_the_last_detail():
    clock = _Clock()
    with pytest.raises(asg.RolloutError) as error:
        asg.wait_for(lambda: (False, "i-1 is shutting-down", None), 30, "instances i-1 to be terminated",
                     sleep=clock.sleep, clock=clock.time)
    assert error.value.msg == "timed out after 30s waiting for instances i-1 to be terminated: i-1 is shutting-down"
    assert clock.now <= 30.1 + 1e-9  # never sleeps past the timeout by more than the 0.1 s minimum poll
