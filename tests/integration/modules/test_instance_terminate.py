"""instance_terminate against the sandbox: without decrement the group replaces the instance from the new launch
template version; with decrement the surge is paid back (the owed tag goes down) and the group ends at its original
size; an instance already gone is not an error; bad input is refused without a single mutating request."""

import time

import pytest

from sandbox.drive.handle import wait_until
from tests.integration.modules.conftest import DEMO, assert_holds_workload, assert_safe, workload_pods

GROUP = "sandbox-nodes"
PROGRESS = "nodeops.rollout/progress"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    # the demo shop runs on the nodes: an instance terminated before its node was drained would kill its pods
    handle = start_sandbox(nodes=6, azs=3, speed=20, workloads=[DEMO])
    pointed = handle.run_module("launch_template_version", asg_name=GROUP, image_id=handle.state["amis"]["new"])
    assert pointed["rc"] == 0 and pointed["version"] == 2, pointed.get("msg")
    return handle


def mutations_since(sandbox, since):
    return [event for event in sandbox.mutating_requests(since=since) if event["t"] > since]


def describe(sandbox):
    return sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]


def old_instances(sandbox):
    return sorted(instance["InstanceId"] for instance in describe(sandbox)["Instances"]
                  if instance["LaunchTemplate"]["Version"] == "1" and instance["LifecycleState"] == "InService")


def owed(sandbox):
    """The surge owed as the group's tag nodeops.rollout/progress records it (``v2 owed=2 ...``), or None."""
    value = {tag["Key"]: tag["Value"] for tag in describe(sandbox)["Tags"]}.get(PROGRESS)
    return None if value is None else dict(word.split("=", 1) for word in value.split(" ")[1:])["owed"]


def node_names(sandbox):
    return {node.metadata.name for node in sandbox.core().list_node().items}


def dns_name(sandbox, instance_id):
    return sandbox.aws("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]["PrivateDnsName"]


def ec2_state(sandbox, instance_id):
    return sandbox.aws("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]["State"]["Name"]


def old_with_workload(sandbox, count):
    """``count`` old instances whose nodes run pods a drain must move (DaemonSet pods aside)."""
    chosen = [iid for iid in old_instances(sandbox) if workload_pods(sandbox, dns_name(sandbox, iid))][:count]
    assert len(chosen) == count, "fewer than %d old nodes hold workload pods" % count
    return chosen


def drain_first(sandbox, instance_ids):
    """What the role does before it terminates: drain the instances' nodes, each of which holds workload pods."""
    nodes = [dns_name(sandbox, iid) for iid in instance_ids]
    assert nodes, "no instance to drain"
    for node in nodes:
        assert_holds_workload(sandbox, node)
    drained = sandbox.run_module("node_drain", nodes=nodes, poll_interval=0.2, retry_max_delay=1.0)
    assert drained["rc"] == 0 and sorted(drained["drained"]) == sorted(nodes), drained.get("msg") or drained["output"][-2000:]
    assert all(workload_pods(sandbox, node) == [] for node in nodes)


def terminate(sandbox, check=False, **args):
    result = sandbox.run_module("instance_terminate", check=check, asg_name=GROUP, **args)
    assert result["rc"] == 0, result.get("msg") or result["output"][-2000:]
    return result


def test_without_decrement_the_replacement_lands_on_the_new_version(sandbox):
    victim = old_with_workload(sandbox, 1)[0]
    node = dns_name(sandbox, victim)
    assert node in node_names(sandbox)
    drain_first(sandbox, [victim])

    since = sandbox.now()
    predicted = terminate(sandbox, check=True, instance_ids=[victim])
    assert predicted["changed"] and predicted["terminated"] == [victim] and predicted["decremented"] == []
    time.sleep(0.2)
    assert mutations_since(sandbox, since) == [] and ec2_state(sandbox, victim) == "running"

    result = terminate(sandbox, instance_ids=[victim], wait_for_replacement=True)
    assert result["changed"] and result["terminated"] == [victim] and result["decremented"] == []
    assert result["desired_capacity"] == {"before": 6, "after": 6} and result["surge_owed"] == {"before": None, "after": None}
    assert ec2_state(sandbox, victim) == "terminated"
    assert len(result["replacements"]) == 1
    replacement = result["replacements"][0]
    assert replacement["launch_template_version"] == "2" and replacement["image_id"] == sandbox.state["amis"]["new"]
    assert replacement["lifecycle_state"] == "InService"
    group = describe(sandbox)
    assert group["DesiredCapacity"] == 6 and len(group["Instances"]) == 6 and victim not in [i["InstanceId"] for i in group["Instances"]]
    # The node of the terminated instance is gone: deleted by the module or by the node controller, whichever came first.
    wait_until("node %s to go" % node, lambda: node not in node_names(sandbox))
    assert set(result["nodes_deleted"]) <= {node}
    assert_safe(sandbox.report())


def test_with_decrement_the_surge_is_paid_back_and_the_group_ends_at_its_size(sandbox):
    surged = sandbox.run_module("asg_surge", name=GROUP, surge=2, wait=True)
    assert surged["rc"] == 0 and surged["sizes"]["after"]["desired_capacity"] == 8 and owed(sandbox) == "2"
    batch = old_with_workload(sandbox, 3)
    drain_first(sandbox, batch)

    since = sandbox.now()
    predicted = terminate(sandbox, check=True, instance_ids=batch, decrement_desired_capacity=2)
    assert predicted["decremented"] == batch[:2] and predicted["surge_owed"] == {"before": 2, "after": 0}
    time.sleep(0.2)
    assert mutations_since(sandbox, since) == [] and owed(sandbox) == "2"

    result = terminate(sandbox, instance_ids=batch, decrement_desired_capacity=2, wait_for_replacement=True)
    assert result["terminated"] == batch and result["decremented"] == batch[:2]
    assert result["desired_capacity"] == {"before": 8, "after": 6} and result["surge_owed"] == {"before": 2, "after": 0}
    assert owed(sandbox) == "0"
    # Only the third was replaced, from the new version.
    assert [(r["launch_template_version"], r["image_id"]) for r in result["replacements"]] == [("2", sandbox.state["amis"]["new"])]
    group = describe(sandbox)
    assert group["DesiredCapacity"] == 6 and len([i for i in group["Instances"] if i["LifecycleState"] == "InService"]) == 6

    since = sandbox.now()
    refused = sandbox.run_module("instance_terminate", asg_name=GROUP, instance_ids=old_instances(sandbox)[:1], decrement_desired_capacity=True)
    assert refused["rc"] != 0 and refused["msg"].startswith(
        "decrement_desired_capacity: decrementing 1 would take the desired capacity of Auto Scaling group 'sandbox-nodes' from 6 "
        "below its min size 6")
    time.sleep(0.2)
    assert mutations_since(sandbox, since) == []

    restored = sandbox.run_module("asg_surge", name=GROUP, state="restored", wait=True)
    assert restored["rc"] == 0 and restored["surge_owed"] == 0 and restored["autoscaler_moved"] is False
    group = describe(sandbox)
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == (6, 6, 6) and len(group["Instances"]) == 6
    assert_safe(sandbox.report())


def test_an_instance_already_gone_is_not_an_error(sandbox):
    gone = old_with_workload(sandbox, 1)[0]
    drain_first(sandbox, [gone])
    sandbox.aws("ec2").terminate_instances(InstanceIds=[gone])
    wait_until("the group to drop %s" % gone, lambda: gone not in [i["InstanceId"] for i in describe(sandbox)["Instances"]])
    since = sandbox.now()
    result = terminate(sandbox, instance_ids=[gone, "i-0123456789abcdef0"])
    assert result["changed"] is False and result["already_gone"] == [gone, "i-0123456789abcdef0"] and result["terminated"] == []
    time.sleep(0.2)
    assert mutations_since(sandbox, since) == []
    assert_safe(sandbox.report())


def test_bad_input_is_refused_with_one_clear_error_and_no_mutating_request(sandbox):
    ec2 = sandbox.aws("ec2")
    subnet = sorted(sandbox.state["subnets"].values())[0]
    stray = ec2.run_instances(ImageId=sandbox.state["amis"]["old"], MinCount=1, MaxCount=1, InstanceType="m5.large",
                              SubnetId=subnet)["Instances"][0]["InstanceId"]
    member = sorted(instance["InstanceId"] for instance in describe(sandbox)["Instances"])[0]
    before = describe(sandbox)
    cases = [
        ({"asg_name": "no-such-group", "instance_ids": [member]}, "asg_name: Auto Scaling group 'no-such-group' not found in region us-east-1"),
        ({"instance_ids": [member, stray]},
         "instance_ids: %s is not in Auto Scaling group 'sandbox-nodes' (it belongs to no Auto Scaling group) and was not detached from it" % stray),
        ({"instance_ids": ["node-1"]}, "instance_ids: 'node-1' is not an EC2 instance id"),
        ({"instance_ids": []}, "instance_ids: an empty list is not allowed"),
        ({"instance_ids": [member, member]}, "instance_ids: %s is listed more than once" % member),
        ({"instance_ids": [member], "decrement_desired_capacity": "abc"},
         "decrement_desired_capacity: 'abc' is not allowed; use true, false, owed or a whole number between 0 and 1 (the number of instance_ids)"),
        ({"instance_ids": [member], "decrement_desired_capacity": -1}, "decrement_desired_capacity: -1 is not allowed"),
        ({"instance_ids": [member], "decrement_desired_capacity": 2}, "decrement_desired_capacity: 2 is not allowed"),
    ]
    for args, message in cases:
        args = dict({"asg_name": GROUP}, **args)
        since = sandbox.now()
        result = sandbox.run_module("instance_terminate", **args)
        assert result["rc"] != 0 and result["msg"].startswith(message), (args, result.get("msg"))
        time.sleep(0.2)
        assert mutations_since(sandbox, since) == [], args
    after = describe(sandbox)
    assert sorted(i["InstanceId"] for i in after["Instances"]) == sorted(i["InstanceId"] for i in before["Instances"])
    assert ec2_state(sandbox, stray) == "running"
    assert_safe(sandbox.report())
