# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""clients/aws.py without a server: instance records, tag filters, group members, waiting."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.clients import aws
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import state as rs


def test_instance_record_joins_both_views_and_reads_detached_instances_from_ec2_tags():
    launched = datetime(2024, 5, 1, 14, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    ec2 = {"InstanceId": "i-0abc12345", "ImageId": "ami-0aaa11111", "LaunchTime": launched, "PrivateDnsName": "ip-1.ec2.internal",
           "State": {"Name": "running"}, "Placement": {"AvailabilityZone": "us-east-1b"}, "InstanceType": "m5.large",
           "Tags": [{"Key": "aws:ec2launchtemplate:id", "Value": "lt-1"}, {"Key": "aws:ec2launchtemplate:version", "Value": "3"}]}
    group_view = {"InstanceId": "i-0abc12345", "AvailabilityZone": "us-east-1b", "LifecycleState": "InService", "HealthStatus": "Healthy",
                  "LaunchTemplate": {"LaunchTemplateId": "lt-1", "LaunchTemplateName": "w", "Version": "4"}}
    member = aws.instance_record(group_view, ec2)
    assert member["launch_template"] == {"id": "lt-1", "name": "w", "version": "4"}
    assert member["launch_time"] == "2024-05-01T12:00:00Z" and member["ec2_state"] == "running" and member["detached"] is False
    detached = aws.instance_record(None, ec2, detached=True)
    assert detached["lifecycle_state"] == "Detached" and detached["az"] == "us-east-1b"
    assert detached["launch_template"] == {"id": "lt-1", "name": None, "version": "3"}


def test_tag_filters():
    assert aws.tag_filters({"kubernetes.io/cluster/prod": None, "eks:nodegroup-name": "web", "team": ""}) == [
        {"Name": "tag:eks:nodegroup-name", "Values": ["web"]},
        {"Name": "tag-key", "Values": ["kubernetes.io/cluster/prod"]},
        {"Name": "tag-key", "Values": ["team"]},
    ]


def test_members_leave_out_instances_leaving_the_group():
    group = {"Instances": [{"InstanceId": "i-1", "LifecycleState": state} for state in
                           ("InService", "Pending", "Terminating", "Detaching", "Standby")]}
    assert [instance["LifecycleState"] for instance in aws.members(group)] == ["InService", "Pending", "Standby"]


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
    assert aws.wait_for(lambda: next(answers), 600, "things", sleep=clock.sleep, clock=clock.time) == "value"
    assert len(clock.sleeps) == 5 and all(0 < delay <= 10 for delay in clock.sleeps)


def test_wait_for_times_out_naming_what_and_the_last_detail():
    clock = _Clock()
    with pytest.raises(RolloutError) as error:
        aws.wait_for(lambda: (False, "i-1 is shutting-down", None), 30, "instances i-1 to be terminated",
                     sleep=clock.sleep, clock=clock.time)
    assert error.value.msg == "timed out after 30s waiting for instances i-1 to be terminated: i-1 is shutting-down"
    assert clock.now <= 30.1 + 1e-9  # never sleeps past the timeout by more than the 0.1 s minimum poll


class _RecordingClient:
    def __init__(self):
        self.calls = []

    def create_or_update_tags(self, **kwargs):
        self.calls.append(("create_or_update_tags", kwargs))

    def delete_tags(self, **kwargs):
        self.calls.append(("delete_tags", kwargs))


def test_write_state_is_one_call_without_propagation_then_one_delete():
    client = _RecordingClient()
    aws.write_state(client, "workers", {rs.TAG_STATE: "v2 id=r-1", rs.TAG_PROGRESS: "v2 owed=3"})
    assert len(client.calls) == 1
    tags = client.calls[0][1]["Tags"]
    assert {(tag["Key"], tag["Value"]) for tag in tags} == {(rs.TAG_STATE, "v2 id=r-1"), (rs.TAG_PROGRESS, "v2 owed=3")}
    assert all(tag["PropagateAtLaunch"] is False and tag["ResourceId"] == "workers" for tag in tags)
    aws.write_state(client, "workers", {})
    assert len(client.calls) == 1
    aws.write_state(client, "workers", {rs.TAG_PROGRESS: "v2 owed=2"}, ["nodeops.rollout/surge-owed"])
    assert [call[0] for call in client.calls] == ["create_or_update_tags", "create_or_update_tags", "delete_tags"]
    assert client.calls[-1][1]["Tags"] == [{"ResourceId": "workers", "ResourceType": "auto-scaling-group", "Key": "nodeops.rollout/surge-owed"}]


def test_a_target_group_record_reads_the_delay_from_the_attributes():
    web = {"name": "web", "arn": "arn:tg/web", "target_type": "instance", "deregistration_delay": 120}
    description = {"TargetGroupName": "web", "TargetGroupArn": "arn:tg/web", "TargetType": "instance"}
    assert aws.target_group_record(description, {"deregistration_delay.timeout_seconds": "120"}) == web
    assert aws.target_group_record(description, {})["deregistration_delay"] == 300   # AWS's default
    assert aws.target_group_record(dict(description, TargetType="ip"), {})["target_type"] == "ip"


def test_clear_state_deletes_only_rollout_tags():
    client = _RecordingClient()
    recorded = {rs.TAG_STATE: "v2 id=r-1", rs.TAG_PROGRESS: "v2 owed=2", "nodeops.rollout/surge-owed": "2"}
    tags = dict(recorded, **{"eks:nodegroup-name": "workers", "nodeops.rollout/other": "kept"})
    removed = aws.clear_state(client, "workers", rs.recorded_tags(tags))
    assert "eks:nodegroup-name" not in removed and "nodeops.rollout/other" not in removed
    assert set(removed) == set(recorded)
    assert client.calls[0][0] == "delete_tags"
    assert aws.clear_state(client, "workers", rs.recorded_tags({"eks:nodegroup-name": "workers"})) == []
    assert len(client.calls) == 1


class _Elbv2:
    """DescribeTargetGroups (in chunks), DescribeTargetGroupAttributes and DescribeTargetHealth, recorded."""

    def __init__(self, count):
        self.calls = []
        self.groups = {"arn:tg/%02d" % n: {"TargetGroupName": "tg-%02d" % n, "TargetGroupArn": "arn:tg/%02d" % n,
                                           "TargetType": "ip" if n % 2 else "instance"} for n in range(count)}

    def describe_target_groups(self, TargetGroupArns):  # noqa: N803 pylint: disable=invalid-name
        self.calls.append(("describe_target_groups", len(TargetGroupArns)))
        return {"TargetGroups": [self.groups[arn] for arn in TargetGroupArns]}

    def describe_target_group_attributes(self, TargetGroupArn):  # noqa: N803 pylint: disable=invalid-name
        self.calls.append(("describe_target_group_attributes", TargetGroupArn))
        return {"Attributes": [{"Key": "deregistration_delay.timeout_seconds", "Value": str(int(TargetGroupArn[-2:]) * 10)},
                               {"Key": "stickiness.enabled", "Value": "false"}]}

    def describe_target_health(self, TargetGroupArn):  # noqa: N803 pylint: disable=invalid-name
        self.calls.append(("describe_target_health", TargetGroupArn))
        return {"TargetHealthDescriptions": [{"Target": {"Id": "i-1", "Port": 80}, "TargetHealth": {"State": "draining"}},
                                             {"Target": {"Id": "i-2", "Port": 80}, "TargetHealth": {"State": "healthy"}}]}


def test_a_group_s_target_groups_are_described_in_chunks_with_their_delays():
    elbv2 = _Elbv2(23)
    records = aws.group_target_groups(elbv2, {"TargetGroupARNs": sorted(elbv2.groups)})
    assert [call for call in elbv2.calls if call[0] == "describe_target_groups"] == [("describe_target_groups", 20),
                                                                                     ("describe_target_groups", 3)]
    assert len(records) == 23 and records[3] == {"name": "tg-03", "arn": "arn:tg/03", "target_type": "ip", "deregistration_delay": 30}
    assert aws.group_target_groups(_Elbv2(0), {"TargetGroupARNs": []}) == []


def test_target_states_lists_each_target_s_state_in_one_call():
    elbv2 = _Elbv2(1)
    assert aws.target_states(elbv2, "arn:tg/00") == {"i-1": "draining", "i-2": "healthy"}
    assert elbv2.calls == [("describe_target_health", "arn:tg/00")]


def test_abort_alarms_are_read_in_the_order_asked_and_a_missing_one_is_named(isolated_env):  # pylint: disable=unused-argument
    import boto3  # pylint: disable=import-outside-toplevel
    from moto import mock_aws  # pylint: disable=import-outside-toplevel

    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        for name in ("shop-5xx", "shop-latency"):
            cloudwatch.put_metric_alarm(AlarmName=name, MetricName=name, Namespace="shop", Statistic="Sum", Period=60,
                                        EvaluationPeriods=1, Threshold=1, ComparisonOperator="GreaterThanThreshold")
        cloudwatch.set_alarm_state(AlarmName="shop-latency", StateValue="ALARM", StateReason="Threshold Crossed")
        states = aws.alarm_states(cloudwatch, ["shop-latency", "shop-5xx", "shop-latency", "gone"])
        assert [(a["name"], a["found"], a["state"]) for a in states] == [
            ("shop-latency", True, "ALARM"), ("shop-5xx", True, "OK"), ("gone", False, None)]
        assert states[0]["reason"] == "Threshold Crossed"
        assert [a["state"] for a in aws.read_alarms(cloudwatch, ["shop-5xx"])] == ["OK"]
        with pytest.raises(RolloutError) as error:
            aws.read_alarms(cloudwatch, ["shop-5xx", "gone", "lost"])
        assert error.value.msg.startswith("abort_alarms: CloudWatch alarm(s) gone, lost not found")


class _Ec2:
    """DescribeInstances by an instance-id filter over ``known`` ids, answered in pages of ``page`` instances."""

    def __init__(self, known, page=150):
        self.known, self.page, self.filters = set(known), page, []

    def get_paginator(self, name):
        assert name == "describe_instances"
        return self

    def paginate(self, Filters):  # noqa: N803 pylint: disable=invalid-name
        (only,) = Filters
        assert only["Name"] == "instance-id" and len(only["Values"]) <= 199   # EC2 takes at most 200 filter values
        self.filters.append(list(only["Values"]))
        found = [{"InstanceId": instance_id} for instance_id in only["Values"] if instance_id in self.known]
        for start in range(0, len(found), self.page):
            yield {"Reservations": [{"Instances": found[start:start + self.page]}]}


def test_a_large_group_is_described_in_chunks_of_at_most_199_ids_each_id_once():
    ids = ["i-%08x" % number for number in range(450)]
    ec2 = _Ec2(ids[:-5])
    found = aws.describe_instances(ec2, ids + ids[:10])
    assert sorted(found) == sorted(ids[:-5])   # unknown ids are simply absent, repeated ids asked once
    assert sorted(len(values) for values in ec2.filters) == [52, 199, 199]
    assert sorted(instance_id for values in ec2.filters for instance_id in values) == sorted(ids)
    assert aws.describe_instances(_Ec2(ids), ids[:3]) == {instance_id: {"InstanceId": instance_id} for instance_id in ids[:3]}


def test_the_target_groups_of_the_cluster_s_load_balancers_are_found_by_dns_name_and_by_arn(isolated_env):  # pylint: disable=unused-argument
    import boto3  # pylint: disable=import-outside-toplevel
    from moto import mock_aws  # pylint: disable=import-outside-toplevel

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24", AvailabilityZone="us-east-1a")["Subnet"]["SubnetId"]
        elbv2 = boto3.client("elbv2", region_name="us-east-1")
        balancer = elbv2.create_load_balancer(Name="web", Subnets=[subnet], Type="network")["LoadBalancers"][0]
        group = elbv2.create_target_group(Name="web-nodes", Protocol="TCP", Port=30080, VpcId=vpc, TargetType="instance")["TargetGroups"][0]
        elbv2.modify_target_group_attributes(TargetGroupArn=group["TargetGroupArn"], Attributes=[
            {"Key": "deregistration_delay.timeout_seconds", "Value": "45"}])
        elbv2.create_listener(LoadBalancerArn=balancer["LoadBalancerArn"], Protocol="TCP", Port=80,
                              DefaultActions=[{"Type": "forward", "TargetGroupArn": group["TargetGroupArn"]}])
        found = aws.balancer_target_groups(elbv2, [balancer["DNSName"].upper(), "legacy.elb.amazonaws.com"])
        assert found == {balancer["DNSName"].lower(): [{"name": "web-nodes", "arn": group["TargetGroupArn"], "target_type": "instance",
                                                        "deregistration_delay": 45}]}
        assert aws.balancer_target_groups(elbv2, []) == {}
        # a TargetGroupBinding may outlive its target group: the ones that exist are found, the gone one left out
        gone = group["TargetGroupArn"].replace("web-nodes", "gone-nodes")
        assert list(aws.existing_target_groups(elbv2, [group["TargetGroupArn"], gone])) == [group["TargetGroupArn"]]


def test_target_group_states_reads_each_target_group_once():
    calls = []

    class Elbv2:
        def describe_target_health(self, TargetGroupArn):  # noqa: N803 (boto3's name)
            calls.append(TargetGroupArn)
            return {"TargetHealthDescriptions": [{"Target": {"Id": "i-1"}, "TargetHealth": {"State": "healthy"}}]}

    groups = [{"name": "web", "arn": "arn:tg/web"}, {"name": "api", "arn": "arn:tg/api"}]
    assert aws.target_group_states(Elbv2(), groups) == {"arn:tg/web": {"i-1": "healthy"}, "arn:tg/api": {"i-1": "healthy"}}
    assert calls == ["arn:tg/web", "arn:tg/api"]
