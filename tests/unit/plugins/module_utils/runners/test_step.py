# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""step.py: rollout_step waits while the step is to wait, looks only at the nodes meanwhile, and names what it waited for."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import boto3
import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.step import StepReader, check_options, step_does, step_words, wait_for_step
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fake_kube import make_node


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class Reader:
    """Decides from a script of steps; its nodes turn Ready at ``ready_at`` (clock seconds)."""

    def __init__(self, clock, steps, ready_at=None, left_at=None, hooks=None, gone_at=None):
        self.clock, self.steps, self.ready_at, self.left_at = clock, list(steps), ready_at, left_at
        self.decisions, self.node_lists, self.target_reads = 0, 0, 0
        self.hooks, self.gone_at = hooks, gone_at
        self.hold_seconds = max([hook["heartbeat_timeout"] for hook in hooks or []] or [-120]) + 120
        self.raw_nodes = self._nodes()

    def _nodes(self):
        if self.gone_at is not None:   # the node of a held instance, deleted with it
            return [] if self.clock() >= self.gone_at else [make_node("n1")]
        return [make_node("n1", ready=self.ready_at is not None and self.clock() >= self.ready_at)]

    def list_nodes(self):
        self.node_lists += 1
        self.raw_nodes = self._nodes()
        return self.raw_nodes

    def released_any(self, step):
        assert step["held"]
        self.target_reads += 1
        return self.left_at is not None and self.clock() >= self.left_at

    def decide(self):
        self.decisions += 1
        self.raw_nodes = self._nodes()
        if self.ready_at is not None or self.gone_at is not None:
            return dict(self.steps[0] if self.clock() < (self.ready_at if self.ready_at is not None else self.gone_at) else self.steps[1])
        return dict(self.steps.pop(0) if len(self.steps) > 1 else self.steps[0])


def waiting(seconds=None, booting=0, why="1 new instance(s) to become Ready nodes", ids=None, held=()):
    return {"action": "wait", "wait_seconds": seconds, "booting": booting, "waiting_for": [why],
            "booting_ids": ["i-%d" % n for n in range(booting)] if ids is None else ids, "held": list(held)}


RUN = {"action": "run", "terminate": ["i-1"], "drain": [], "booting": 0}
OPTIONS = {"target": {"launch_template_id": "lt-1", "version": "3"}, "post_drain_delay": 0, "wait_timeout": "10m",
           "max_unavailable": None, "poll_interval": 2.0, "skip": []}


def test_a_post_drain_delay_is_slept_through_and_the_next_step_returned():
    clock = Clock()
    reader = Reader(clock, [waiting(seconds=42.0, why="the post-drain delay of 3 node(s)"), RUN])
    step = wait_for_step(reader, timeout=600, poll_interval=2, clock=clock, sleep=clock.sleep)
    assert step["action"] == "run" and step["waited_seconds"] == 42.0
    assert step["waited_for"] == ["the post-drain delay of 3 node(s)"]   # what a report says the wait was for
    assert reader.decisions == 2 and reader.node_lists == 0   # nothing boots: no node list while it waits


def test_while_new_instances_boot_only_the_nodes_are_listed_and_a_change_reads_the_group_again():
    clock = Clock()
    reader = Reader(clock, [waiting(booting=1), RUN], ready_at=31.0)
    step = wait_for_step(reader, timeout=600, poll_interval=2, clock=clock, sleep=clock.sleep)
    assert step["action"] == "run" and 31.0 <= step["waited_seconds"] <= 33.0
    assert reader.decisions == 2 and reader.node_lists == 16


def test_new_instances_that_never_become_nodes_fail_as_node_creation_failure_naming_them():
    clock = Clock()
    reader = Reader(clock, [waiting(booting=3, why="3 new instance(s) to become Ready nodes", ids=["i-0a", "i-0b"])])
    with pytest.raises(RolloutError) as raised:
        wait_for_step(reader, timeout=300, poll_interval=2, clock=clock, sleep=clock.sleep)
    assert raised.value.msg.startswith("NodeCreationFailure: 3 new instance(s) did not become Ready nodes within 300s: i-0a, i-0b; "
                                       "1 more the group has not launched")
    assert raised.value.details["step"]["action"] == "wait" and clock() == pytest.approx(300)


def test_while_drained_instances_drain_from_their_target_groups_only_their_health_is_read():
    clock = Clock()
    held = {"instance_id": "i-1", "node": "n1", "held": [], "until": 330.0}
    reader = Reader(clock, [waiting(seconds=330.0, why="1 drained instance(s) to leave their target groups",
                                    held=[held]), RUN], left_at=41.0)
    step = wait_for_step(reader, timeout=600, poll_interval=2, clock=clock, sleep=clock.sleep)
    assert step["action"] == "run" and 41.0 <= step["waited_seconds"] <= 43.0
    assert reader.decisions == 2 and reader.node_lists == 0 and reader.target_reads == 21


def test_delays_that_end_by_themselves_are_waited_for_past_the_timeout():
    clock = Clock()
    reader = Reader(clock, [waiting(seconds=330.0, why="1 drained instance(s) to leave their target groups",
                                    held=[{"instance_id": "i-1", "node": "n1", "held": [], "until": 330.0}]), RUN])
    step = wait_for_step(reader, timeout=60, poll_interval=2, clock=clock, sleep=clock.sleep)
    assert step["action"] == "run" and step["waited_seconds"] == pytest.approx(330.0)


HOOK = {"name": "ntth", "heartbeat_timeout": 1800, "default_result": "CONTINUE"}
HELD = {"action": "wait", "wait_seconds": None, "booting": 0, "booting_ids": [], "hooked": ["i-0a"], "held": [],
        "waiting_for": ["1 terminated instance(s) held in Terminating:Wait by a termination lifecycle hook: i-0a"]}
DONE = {"action": "done", "terminate": [], "drain": [], "booting": 0, "hooked": []}


def test_an_instance_held_by_a_lifecycle_hook_is_waited_for_past_the_step_timeout_up_to_the_hooks_timeout():
    clock = Clock()
    # the hook lets it go after 1000 s, more than the step's own timeout: its node goes with it and the group is read again
    reader = Reader(clock, [HELD, DONE], hooks=[HOOK], gone_at=1000.0)
    step = wait_for_step(reader, timeout=600, poll_interval=2, clock=clock, sleep=clock.sleep)
    assert step["action"] == "done" and 1000.0 <= step["waited_seconds"] <= 1002.0
    assert step["waited_for"] == HELD["waiting_for"]
    # still held once the hook's heartbeat timeout and the margin have passed: stop, naming the hook, completing nothing
    clock = Clock()
    reader = Reader(clock, [HELD], hooks=[HOOK])
    with pytest.raises(RolloutError) as raised:
        wait_for_step(reader, timeout=600, poll_interval=2, clock=clock, sleep=clock.sleep)
    assert clock() == pytest.approx(1920)
    assert raised.value.msg.startswith("1 terminated instance(s) still in Terminating:Wait after 1920s: i-0a, held by the termination "
                                       "lifecycle hook(s) ntth (heartbeat timeout 1800s, default result CONTINUE) of their owner")


@pytest.mark.parametrize("params, field", [
    ({"target": {"launch_template_id": "lt-1", "version": "$Latest"}}, "target"),
    ({"post_drain_delay": "soon"}, "post_drain_delay"),
    ({"wait_timeout": 0}, "wait_timeout"),
    ({"max_unavailable": "150%"}, "max_unavailable"),
    ({"poll_interval": 0}, "poll_interval"),
    ({"skip": ["n1", " "]}, "skip[1]"),
    ({"limit": ["i-1", "node-2"]}, "limit[1]: 'node-2' is not allowed; use an instance id"),
    ({"deregistration_timeout": "soon"}, "deregistration_timeout"),
])
def test_bad_options_are_refused_by_name_before_any_call(params, field):
    base = dict(OPTIONS, **params)
    with pytest.raises(PlanError) as raised:
        check_options(base)
    assert str(raised.value).startswith(field)


def test_new_nodes_are_the_up_to_date_instances_launched_since_the_rollout_started_with_their_ready_time():
    from ansible_collections.nodeops.rollout.plugins.module_utils.runners.step import new_nodes
    ready = make_node("n-new", ready=True)
    ready["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-25T07:03:00Z"}]
    records = [
        {"instance_id": "i-old", "az": "a", "launch_time": "2026-11-01T00:00:00Z", "node": {"name": "n-old"}},
        {"instance_id": "i-before", "az": "a", "launch_time": "2026-11-25T06:59:00Z", "node": {"name": "n-before"}},
        {"instance_id": "i-late", "az": "c", "launch_time": "2026-11-25T07:05:00Z", "node": None},
        {"instance_id": "i-new", "az": "b", "launch_time": "2026-11-25T07:01:00Z", "node": {"name": "n-new"}},
    ]
    found = new_nodes(records, {"i-old"}, [ready, make_node("n-old")], "2026-11-25T07:00:00Z")
    assert found == [
        {"instance_id": "i-new", "az": "b", "node": "n-new", "launch_time": "2026-11-25T07:01:00Z", "ready_at": "2026-11-25T07:03:00Z"},
        {"instance_id": "i-late", "az": "c", "node": None, "launch_time": "2026-11-25T07:05:00Z", "ready_at": None},
    ]
    assert new_nodes(records, {"i-old"}, [], None) == []


class NodesApi:
    def __init__(self, nodes):
        self.nodes = nodes
        self.attachments = []
        self.volume_lists = 0

    def list_nodes(self):
        return [dict(node) for node in self.nodes]

    def list_pods(self, resource_version=None):  # pylint: disable=unused-argument
        return []   # nodes without pods: every outdated node fits wherever there is a node

    def list_volume_attachments(self):
        return list(self.attachments)

    def list_persistent_volumes(self):
        self.volume_lists += 1
        return [{"metadata": {"name": "pv-a"}, "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}]}]}}}}]


class Now:
    """A wall clock the test moves: an aware datetime."""

    def __init__(self):
        self.at = datetime(2026, 11, 25, 7, 0, 0, tzinfo=timezone.utc)

    def __call__(self):
        return self.at

    def sleep(self, seconds):
        self.at += timedelta(seconds=seconds)


def drained_node(name, instance_id, seconds_ago, now):
    node = make_node(name, unschedulable=True, instance_id=instance_id)
    stamp = (now() - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    node["metadata"]["annotations"] = {"nodeops.rollout/drained-at": stamp, "nodeops.rollout/cordoned": "true"}
    return node


def test_the_reader_reads_target_groups_only_for_drained_instances_and_records_each_wait(world, api_calls):
    elbv2 = boto3.client("elbv2", region_name="us-east-1")
    vpc = world.ec2.describe_subnets(SubnetIds=world.subnets[:1])["Subnets"][0]["VpcId"]
    arn = elbv2.create_target_group(Name="web", Protocol="HTTP", Port=30080, VpcId=vpc, TargetType="instance")["TargetGroups"][0]["TargetGroupArn"]
    world.asg.attach_load_balancer_target_groups(AutoScalingGroupName="workers", TargetGroupARNs=[arn])
    ids = world.member_ids()
    target = {"launch_template_id": world.lt_id, "version": world.new_version()}
    api = NodesApi([make_node("n%d" % n, instance_id=instance_id) for n, instance_id in enumerate(ids)])
    clock = Now()
    params = {"name": "workers", "max_unavailable": None, "canary": True, "skip": [], "deregistration_timeout": None,
              "volume_detach_timeout": "6m"}
    reader = StepReader(params, world.asg, world.ec2, api, "us-east-1", target, 0, elbv2=elbv2, now=clock)

    del api_calls[:]
    first = reader.decide()
    assert first["action"] == "run" and first["held"] == [] and first["termination_waits"] == []
    assert not [call for call in api_calls if call[0] == "elbv2"]   # nothing drained: no load balancer read

    api.nodes[0] = drained_node("n0", ids[0], seconds_ago=100, now=clock)
    api.attachments = [{"metadata": {"name": "csi-1"}, "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "n0",
                                                                "source": {"persistentVolumeName": "pv-a"}},
                        "status": {"attached": True}}]
    del api_calls[:]
    delayed = StepReader(params, world.asg, world.ec2, api, "us-east-1", target, 300, elbv2=elbv2, now=clock).decide()
    assert delayed["delayed"] == ["n0"] and not [call for call in api_calls if call[0] == "elbv2"]   # still in its delay
    api.volume_lists = 0
    del api_calls[:]
    held = reader.decide()
    assert [entry["instance_id"] for entry in held["held"]] == [ids[0]]
    assert held["held"][0]["held"] == [{"kind": "target_group", "name": "web", "state": "healthy", "timeout": 330},
                                       {"kind": "volume", "name": "pv-a", "state": "attached", "timeout": 360}]
    assert held["held"][0]["until"] == 260 and ids[0] not in held["terminate"]
    assert held["held"][0]["since"] == "2026-11-25T07:00:00Z"
    assert api.volume_lists == 1   # the volumes' zones, read once per call
    assert sorted(call[1] for call in api_calls if call[0] == "elbv2") == [
        "DescribeTargetGroupAttributes", "DescribeTargetGroups", "DescribeTargetHealth"]

    elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": ids[0]}])
    clock.sleep(12)
    del api_calls[:]
    still = reader.decide()
    assert [hold["kind"] for hold in still["held"][0]["held"]] == ["volume"] and ids[0] not in still["terminate"]
    assert (still["held"][0]["target_groups"], still["held"][0]["volumes"]) == (["web"], ["pv-a"])
    api.attachments = []
    clock.sleep(3)
    del api_calls[:]
    # the next step is another call: the wait is counted from the first step that found it held, handed back
    later = StepReader(dict(params, held=still["held"]), world.asg, world.ec2, api, "us-east-1", target, 0, elbv2=elbv2,
                       now=clock)
    left = later.decide()
    assert left["terminate"] == [ids[0]] and left["held"] == []
    assert left["termination_waits"] == [{"instance_id": ids[0], "node": "n0", "target_groups": ["web"], "volumes": ["pv-a"],
                                          "waited_seconds": 15.0, "timed_out": False}]
    assert [call[1] for call in api_calls if call[0] == "elbv2"] == [
        "DescribeTargetGroups", "DescribeTargetGroupAttributes", "DescribeTargetHealth"]   # described again by the new call
    # within one call the target groups are described once: each later read is one DescribeTargetHealth per target group
    del api_calls[:]
    reader.decide()
    assert [call[1] for call in api_calls if call[0] == "elbv2"] == ["DescribeTargetHealth"]


def test_a_cancel_is_decided_by_cancel_step_whatever_the_pause_tag_and_protects_no_node(world):
    ids = world.member_ids()
    api = NodesApi([make_node("n%d" % n, instance_id=instance_id) for n, instance_id in enumerate(ids)])
    world.asg.create_or_update_tags(Tags=[{"ResourceId": "workers", "ResourceType": "auto-scaling-group",
                                           "Key": "nodeops.rollout/pause", "Value": "true", "PropagateAtLaunch": False}])
    params = {"name": "workers", "max_unavailable": None, "canary": True, "skip": [], "deregistration_timeout": None,
              "volume_detach_timeout": "6m", "goal": "cancel"}
    newer = {"launch_template_id": world.lt_id, "version": world.new_version()}
    cancel = StepReader(params, world.asg, world.ec2, api, "us-east-1", newer, 0, now=Now()).decide()
    # no surge recorded: nothing to give back, every outdated node left in place, and the pause tag stops no cancel
    assert cancel["action"] == "done" and cancel["goal"] == "cancel" and cancel["stop"] is None
    assert cancel["drain"] == [] and cancel["terminate"] == [] and cancel["protect"] == []
    paused = StepReader(dict(params, goal="replace"), world.asg, world.ec2, api, "us-east-1", newer, 0, now=Now()).decide()
    assert paused["action"] == "pause"


def test_the_last_step_names_the_marks_left_on_up_to_date_nodes_and_no_other_step_does(world):
    ids = world.member_ids()
    nodes = [make_node("n%d" % n, instance_id=instance_id) for n, instance_id in enumerate(ids)]
    nodes[0]["metadata"]["annotations"] = {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true",
                                           "nodeops.rollout/scale-down-disabled": "true"}
    nodes[1]["spec"]["taints"] = [{"key": "team/outdated", "effect": "NoSchedule"}]
    nodes[2]["metadata"]["annotations"] = {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}   # not ours
    api = NodesApi(nodes)
    params = {"name": "workers", "max_unavailable": None, "canary": True, "skip": [], "deregistration_timeout": None,
              "volume_detach_timeout": "6m", "taint_key": "team/outdated"}
    current = {"launch_template_id": world.lt_id, "version": 1}
    done = StepReader(params, world.asg, world.ec2, api, "us-east-1", current, 0, now=Now()).decide()
    assert done["action"] == "done"
    assert sorted(done["marked"], key=lambda entry: entry["node"]) == [
        {"instance_id": ids[0], "node": "n0", "marks": ["autoscaler"]}, {"instance_id": ids[1], "node": "n1", "marks": ["taint"]}]
    newer = {"launch_template_id": world.lt_id, "version": world.new_version()}
    running = StepReader(params, world.asg, world.ec2, api, "us-east-1", newer, 0, now=Now()).decide()
    assert running["action"] == "run" and running["marked"] == []


def test_a_relaunch_drains_then_terminates_only_the_instances_that_never_became_ready_nodes_without_a_decrement(world):
    ids = world.member_ids()
    # n0 never became Ready, the second instance never registered a node, the rest serve
    serving = [make_node("n%d" % n, instance_id=instance_id) for n, instance_id in enumerate(ids) if n > 1]
    nodes = [make_node("n0", instance_id=ids[0], ready=False)] + serving
    api = NodesApi(nodes)
    world.asg.create_or_update_tags(Tags=[{"ResourceId": "workers", "ResourceType": "auto-scaling-group",
                                           "Key": "nodeops.rollout/pause", "Value": "true", "PropagateAtLaunch": False}])
    current = {"launch_template_id": world.lt_id, "version": 1}
    params = {"name": "workers", "max_unavailable": None, "canary": True, "skip": [], "deregistration_timeout": None,
              "volume_detach_timeout": "6m", "goal": "relaunch", "abort_alarms": ["never-read"]}
    clock = Now()
    clock.at = datetime.now(timezone.utc) + timedelta(minutes=1)
    young = StepReader(params, world.asg, world.ec2, api, "us-east-1", current, 60, now=clock, join_timeout=300).decide()
    # launched a minute ago: still booting, not relaunched
    assert young["action"] == "wait" and young["terminate"] == [] and young["drain"] == []
    clock.sleep(300)
    first = StepReader(params, world.asg, world.ec2, api, "us-east-1", current, 60, now=clock, join_timeout=300).decide()
    # the instance without a node goes at once, the NotReady node is drained first; no pause tag or alarm stops it
    assert first["action"] == "run" and first["goal"] == "relaunch" and first["stop"] is None and first["alarms"] == []
    assert first["terminate"] == [ids[1]] and first["decrement"] == 0
    assert [entry["node"] for entry in first["drain"]] == ["n0"] and first["protect"] == []
    api.nodes[0] = drained_node("n0", ids[0], seconds_ago=1, now=clock)
    api.nodes[0]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    # (decremented here only because the fake group would launch the replacement at its test clock's start)
    world.asg.terminate_instance_in_auto_scaling_group(InstanceId=ids[1], ShouldDecrementDesiredCapacity=True)
    second = StepReader(params, world.asg, world.ec2, api, "us-east-1", current, 60, now=clock, join_timeout=300).decide()
    # a node that never served has no post-drain delay
    assert second["terminate"] == [ids[0]] and second["decrement"] == 0 and second["drain"] == []


# ---------------------------------------------------------------------------------------------------------
# Holds and the operator's controls while a step waits
# ---------------------------------------------------------------------------------------------------------

def holding(seconds, alarms=()):
    return {"action": "wait", "wait_seconds": seconds, "booting": 0, "waiting_for": ["the bake time (3600s)"],
            "booting_ids": [], "hold": {"reason": "the bake time (3600s)", "seconds": seconds}, "alarms": list(alarms),
            "stop": None, "held": []}


def test_a_bake_longer_than_the_timeout_is_waited_for_whole():
    clock = Clock()
    reader = Reader(clock, [holding(3600.0), RUN])
    step = wait_for_step(reader, timeout=600, poll_interval=2, clock=clock, sleep=clock.sleep)
    assert step["action"] == "run" and step["waited_seconds"] == 3600.0


def test_while_abort_alarms_are_watched_the_group_is_read_every_ten_seconds_and_a_stop_ends_the_wait():
    clock = Clock()
    watched = [{"name": "shop-5xx", "state": "OK"}]
    fired = dict(holding(3570.0, watched), stop={"stop": "abort", "reason": "abort alarm", "message": "m", "alarms": ["shop-5xx"]})
    reader = Reader(clock, [holding(3600.0, watched), holding(3590.0, watched), holding(3580.0, watched), fired])
    step = wait_for_step(reader, timeout=600, poll_interval=2, clock=clock, sleep=clock.sleep)
    assert step["stop"]["stop"] == "abort" and reader.decisions == 4 and step["waited_seconds"] == 30.0


@pytest.mark.parametrize("params, field", [
    ({"abort_alarms": ["shop-5xx", ""]}, "abort_alarms[1]"),
    ({"windows": "Mon 25:00 1h"}, "windows.start"),
    ({"bake_time": "49h"}, "bake_time"),
    ({"checkpoints": ["50%"]}, "checkpoints[0]"),
    ({"step_seconds": "x"}, "step_seconds"),
    ({"goal": "finish"}, "goal"),
    ({"blocking_pods": ["app in ()"]}, "blocking_pods[0]"),
    ({"blocking_pods": [{"selector": "app in ()"}]}, "blocking_pods[0].selector"),
])
def test_bad_controls_are_refused_by_name_before_any_call(params, field):
    base = dict(OPTIONS, **params)
    with pytest.raises(PlanError) as raised:
        check_options(base)
    assert str(raised.value).startswith(field), str(raised.value)


def test_what_a_step_does_is_said_by_flags_that_match_its_lists():
    step = {"action": "step", "terminate": ["i-1"], "drain": [], "validate": ["i-2"], "protect": []}
    assert step_does(step) == {"terminate": True, "drain": False, "validate": True, "protect": False, "work": True, "pause": False}
    paused = {"action": "pause", "terminate": [], "drain": [], "validate": []}
    assert step_does(paused) == {"terminate": False, "drain": False, "validate": False, "protect": False, "work": False, "pause": True}


def test_what_a_step_does_is_counted_in_words_for_the_task_names_one_in_the_singular():
    step = {"action": "step", "terminate": ["i-1"], "drain": [{"node": "n-1"}, {"node": "n-2"}], "validate": ["i-2"], "protect": []}
    assert step_words(step) == {"terminate": "1 instance", "drain": "2 nodes", "validate": "1 up-to-date node",
                                "protect": "0 new nodes"}


def test_a_step_held_by_blocking_pods_waits_for_them_and_says_so_when_it_goes_on():
    held = dict(waiting(seconds=5, why="pod ops/backup-1 to end (rolling_update_blocking_pods app=backup)"), blocking_pods=["ops/backup-1"])
    clock = Clock()
    reader = Reader(clock, [held, held, held, RUN])
    step = wait_for_step(reader, timeout=600, poll_interval=2, clock=clock, sleep=clock.sleep)
    assert step["action"] == "run" and step["held_by_pods"] == ["ops/backup-1"] and step["waited_seconds"] == 15.0
    assert step["waited_for"] == ["pod ops/backup-1 to end (rolling_update_blocking_pods app=backup)"]


def test_a_blocking_pod_that_never_ends_fails_the_step_at_the_timeout_naming_it():
    held = dict(waiting(seconds=5, why="pod ops/backup-1 to end (rolling_update_blocking_pods app=backup)"), blocking_pods=["ops/backup-1"])
    clock = Clock()
    with pytest.raises(RolloutError) as raised:
        wait_for_step(Reader(clock, [held]), timeout=60, poll_interval=2, clock=clock, sleep=clock.sleep)
    assert str(raised.value) == "waited 60s for pod ops/backup-1 to end (rolling_update_blocking_pods app=backup); the rollout is held, run again"
