# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""instance_terminate: terminations through the group or EC2, the surge paid back, the termination gate, against moto.

Fixtures (world, run, api_calls, cluster) come from aws_world.py through conftest.py.
"""

from __future__ import annotations

import threading

import pytest
from botocore.exceptions import ClientError

from ansible_collections.nodeops.rollout.plugins.module_utils.runners.terminate import _terminate_replaced

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws import write_state
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import state as rs
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.aws_world import mutating, owned_pod, recorded_state


def test_terminate_with_and_without_decrement_pays_the_surge_back(world, run):
    run("asg_surge", name="workers", surge=3)  # 3/9/6, owed 3
    members = world.member_ids()
    keep = run("instance_terminate", asg_name="workers", instance_ids=[members[0]], delete_node=False)
    assert keep["changed"] and keep["terminated"] == [members[0]] and keep["decremented"] == []
    assert world.sizes()[2] == 6 and len(world.member_ids()) == 6 and members[0] not in world.member_ids()
    assert recorded_state(world)["surge_owed"] == 3
    pay = run("instance_terminate", asg_name="workers", instance_ids=members[1:4], decrement_desired_capacity=2, delete_node=False)
    assert pay["decremented"] == members[1:3] and pay["terminated"] == members[1:4]
    assert pay["desired_capacity"] == {"before": 6, "after": 4} and pay["surge_owed"] == {"before": 3, "after": 1}
    assert world.sizes()[2] == 4 and recorded_state(world)["surge_owed"] == 1


def test_each_decrement_is_announced_before_it_is_made_and_anothers_decrement_stays_its_own(world, run, api_calls):
    world.asg.update_auto_scaling_group(AutoScalingGroupName="workers", MinSize=1)
    run("asg_surge", name="workers", surge=2)  # 1/8/5, owed 2
    members = world.member_ids()
    api_calls.clear()
    paid = run("instance_terminate", asg_name="workers", instance_ids=members[:2], decrement_desired_capacity="owed", delete_node=False)
    assert paid["decremented"] == members[:2] and world.sizes()[2] == 3
    writes = [operation for _service, operation in mutating(api_calls)]
    # announce i0, terminate i0, record it and announce i1, terminate i1, record it
    assert writes == ["CreateOrUpdateTags", "TerminateInstanceInAutoScalingGroup"] * 2 + ["CreateOrUpdateTags"]
    assert recorded_state(world)["surge_owed"] == 0 and recorded_state(world)["paying"] is None

    # a run killed right after a decrement it had announced: the instance left, so the decrement is counted once
    run("asg_surge", name="workers", state="restored")
    run("asg_surge", name="workers", surge=2)  # 1/8/5 again, owed 2
    members = world.member_ids()
    state = recorded_state(world)
    write_state(world.asg, "workers", rs.state_tags(dict(state, paying=members[0])))
    world.asg.terminate_instance_in_auto_scaling_group(InstanceId=members[0], ShouldDecrementDesiredCapacity=True)
    # and another actor scales in one more with a decrement (a cluster-autoscaler): not ours, still owed
    world.asg.terminate_instance_in_auto_scaling_group(InstanceId=members[1], ShouldDecrementDesiredCapacity=True)
    assert world.sizes()[2] == 3
    info = run("node_group_info", name="workers", include_nodes=False)
    assert info["node_groups"][0]["surge_owed"] == 1


def test_an_instance_in_standby_is_terminated_without_a_decrement(world, run):
    run("asg_surge", name="workers", surge=2)  # 3/8/5, owed 2
    members = world.member_ids()
    world.asg.enter_standby(AutoScalingGroupName="workers", InstanceIds=[members[0]], ShouldDecrementDesiredCapacity=True)
    assert world.sizes()[2] == 4
    # listed first and within the count: it uses its place, the group would otherwise scale in another instance
    result = run("instance_terminate", asg_name="workers", instance_ids=[members[0], members[1]], decrement_desired_capacity=1,
                 delete_node=False)
    assert result["terminated"] == [members[0], members[1]] and result["decremented"] == []
    assert world.sizes()[2] == 4 and recorded_state(world)["surge_owed"] == 2


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
    def list_node_pods(node, label_selector=None):  # pylint: disable=unused-argument
        return [], "1"

    @staticmethod
    def list_pods_page(limit, token=None):  # pylint: disable=unused-argument
        return [], {"resourceVersion": "1"}

    def delete_node(self, name):
        """As KubeApi.delete_node: True when deleted, False when already gone."""
        if name not in self.nodes:
            return False
        del self.nodes[name]
        self.deleted.append(name)
        return True


def test_nodes_that_outlive_their_instances_are_deleted_and_running_ones_are_left(world, run, monkeypatch):
    from ansible_collections.nodeops.rollout.plugins.module_utils.runners import terminate as terminate_utils  # pylint: disable=import-outside-toplevel
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
    cluster.pods[cluster.node_name(second)] = [owned_pod("checkout-1"), owned_pod("fluent-bit-x", kind="DaemonSet")]
    cluster.pods[cluster.node_name(third)] = [owned_pod("fluent-bit-y", kind="DaemonSet"), dict(owned_pod("job-1"), status={"phase": "Succeeded"})]
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


class _ConcurrentAutoScaling:
    """Answers TerminateInstanceInAutoScalingGroup only once two calls are in flight together (a barrier), so a sequence
    of calls made one at a time fails; ``broken`` is refused with a throttling error, ``gone`` as not found."""

    def __init__(self, broken=(), gone=()):
        self.barrier = threading.Barrier(2, timeout=10)
        self.broken, self.gone, self.calls = set(broken), set(gone), []

    def terminate_instance_in_auto_scaling_group(self, InstanceId, ShouldDecrementDesiredCapacity):  # pylint: disable=invalid-name
        assert ShouldDecrementDesiredCapacity is False
        self.calls.append(InstanceId)
        if len(self.calls) <= 2:
            self.barrier.wait()
        if InstanceId in self.broken:
            raise ClientError({"Error": {"Code": "Throttling", "Message": "Rate exceeded"}}, "TerminateInstanceInAutoScalingGroup")
        if InstanceId in self.gone:
            raise ClientError({"Error": {"Code": "ValidationError", "Message": "Instance Id not found"}}, "TerminateInstanceInAutoScalingGroup")


def test_instances_that_keep_desired_are_terminated_several_at_once_in_the_listed_order():
    ids = ["i-%017d" % n for n in range(9)]
    client = _ConcurrentAutoScaling(gone=[ids[4]])
    result = {"terminated": [], "already_gone": []}
    _terminate_replaced(client, ids, result)
    assert sorted(client.calls) == ids
    assert result == {"terminated": [i for i in ids if i != ids[4]], "already_gone": [ids[4]]}


def test_a_refused_termination_is_raised_after_every_other_answer_is_recorded():
    ids = ["i-%017d" % n for n in range(6)]
    result = {"terminated": [], "already_gone": []}
    with pytest.raises(ClientError, match="Rate exceeded"):
        _terminate_replaced(_ConcurrentAutoScaling(broken=[ids[1]]), ids, result)
    assert result["terminated"] == [i for i in ids if i != ids[1]]
