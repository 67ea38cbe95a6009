"""asg_surge against the sandbox: a surge recorded on the group, a rerun that does not surge again, a restore to the
exact original sizes, the cluster-autoscaler rule on restore, kops' detach-and-tag surge, and bad input refused
without a single mutating request."""

import time

import pytest

from sandbox.drive.handle import wait_until
from tests.integration.modules.conftest import DEMO, assert_holds_workload, assert_safe, workload_pods

GROUP = "sandbox-nodes"
PREFIX = "nodeops.rollout/"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    # the demo shop runs on the group's nodes: a surge, a restore or a detach that took a node away under its pods
    # without a drain would show as pods killed without eviction
    return start_sandbox(nodes=6, azs=3, speed=20, workloads=[DEMO])


def mutations_since(sandbox, since):
    return [event for event in sandbox.mutating_requests(since=since) if event["t"] > since]


def describe(sandbox, user_agent="test-observer"):
    return sandbox.aws("autoscaling", user_agent=user_agent).describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]


def sizes(group):
    return group["MinSize"], group["MaxSize"], group["DesiredCapacity"]


def rollout_tags(group):
    return {tag["Key"]: tag["Value"] for tag in group.get("Tags") or [] if tag["Key"].startswith(PREFIX)}


def recorded_fields(group):
    """The fields of the two state tags (``v2 key=value ...``), all in one dict."""
    tags = rollout_tags(group)
    assert sorted(tags) == [PREFIX + "progress", PREFIX + "state"], tags
    fields = {}
    for value in tags.values():
        version, *words = value.split(" ")
        assert version == "v2", value
        fields.update(word.split("=", 1) for word in words)
    return fields


def suspended(group):
    return sorted(process["ProcessName"] for process in group.get("SuspendedProcesses") or [])


def in_service(group):
    return sorted(instance["InstanceId"] for instance in group["Instances"] if instance["LifecycleState"] == "InService")


def surge(sandbox, check=False, diff=False, **args):
    result = sandbox.run_module("asg_surge", check=check, diff=diff, name=GROUP, **args)
    assert result["rc"] == 0, result.get("msg") or result["output"][-2000:]
    return result


def ready_nodes(sandbox):
    return sorted(node.metadata.name for node in sandbox.core().list_node().items
                  if any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or []))


def dns_names(sandbox, instance_ids):
    reservations = sandbox.aws("ec2").describe_instances(InstanceIds=list(instance_ids))["Reservations"]
    return {i["InstanceId"]: i["PrivateDnsName"] for r in reservations for i in r["Instances"]}


def pay_back(sandbox):
    """Pay the surge back as the role does: drain the instances node_group_info names and terminate them decrementing."""
    info = sandbox.run_module("node_group_info", name=GROUP)["node_groups"][0]
    chosen = info["payback"]
    assert len(chosen) == info["surge_owed"] > 0, info
    drained = sandbox.run_module("node_drain", nodes=[entry["node"] for entry in chosen], module_args={"timeout": "2m"})
    assert drained["rc"] == 0, drained["output"][-2000:]
    paid = sandbox.run_module("instance_terminate", asg_name=GROUP, instance_ids=[entry["instance_id"] for entry in chosen],
                              decrement_desired_capacity="owed")
    assert paid["rc"] == 0 and len(paid["decremented"]) == len(chosen), paid["output"][-2000:]
    return chosen


def test_surge_then_a_rerun_that_does_not_surge_again_then_restore_to_the_exact_original_sizes(sandbox):
    assert sizes(describe(sandbox)) == (6, 6, 6)
    since = sandbox.now()
    predicted = surge(sandbox, check=True, diff=True, surge=3)
    assert predicted["changed"] and predicted["sizes"]["after"] == {"min_size": 6, "max_size": 9, "desired_capacity": 9}
    assert '+    "max_size": 9,' in predicted["output"] and '+        "nodeops.rollout/progress": "v2 owed=3 sp=AZRebalance",' in predicted["output"]
    time.sleep(0.2)
    assert mutations_since(sandbox, since) == [] and sizes(describe(sandbox)) == (6, 6, 6)

    result = surge(sandbox, surge=3, wait=True)
    assert result["changed"] and result["resumed"] is False and result["steps"] == ["recorded", "suspended", "resized"]
    group = describe(sandbox)
    assert sizes(group) == (6, 9, 9) and len(in_service(group)) == 9 and sorted(result["in_service_instances"]) == in_service(group)
    assert suspended(group) == ["AZRebalance"]
    fields = recorded_fields(group)
    assert fields["id"] == result["rollout_id"]
    assert (fields["min"], fields["max"], fields["desired"]) == ("6", "6", "6")
    assert fields["surge"] == "3" and fields["owed"] == "3" and fields["sp"] == "AZRebalance"
    assert fields["ver"] == "1"
    wait_until("9 Ready nodes", lambda: len(ready_nodes(sandbox)) == 9)
    assert_safe(sandbox.report())  # the surge only added nodes

    since = sandbox.now()
    again = surge(sandbox, surge=3, wait=True)
    assert again["changed"] is False and again["resumed"] is True and again["rollout_id"] == result["rollout_id"]
    time.sleep(0.2)
    assert mutations_since(sandbox, since) == [] and sizes(describe(sandbox)) == (6, 9, 9)

    state = sandbox.run_module("node_group_info", name=GROUP, include_nodes=False)["node_groups"][0]["state"]
    assert state["rollout_id"] == result["rollout_id"] and state["surge_owed"] == 3 and state["original_desired_capacity"] == 6

    # lowering desired would let the group pick three instances, drained or not: refused, nothing changed
    since = sandbox.now()
    refused = sandbox.run_module("asg_surge", name=GROUP, state="restored", wait=True)
    assert refused["rc"] != 0 and "still holds 3 instance(s) of surge owed" in refused["msg"]
    time.sleep(0.2)
    assert mutations_since(sandbox, since) == [] and sizes(describe(sandbox)) == (6, 9, 9)
    paid = pay_back(sandbox)
    restored = surge(sandbox, state="restored", wait=True)
    assert restored["changed"] and restored["autoscaler_moved"] is False and restored["surge_owed"] == 0
    assert restored["resumed_processes"] == ["AZRebalance"]
    group = describe(sandbox)
    assert sizes(group) == (6, 6, 6) and len(in_service(group)) == 6 and len(group["Instances"]) == 6
    assert suspended(group) == [] and rollout_tags(group) == {}
    assert not {entry["instance_id"] for entry in paid} & set(in_service(group))
    assert surge(sandbox, state="restored")["changed"] is False
    assert_safe(sandbox.report())


def test_restore_only_takes_back_the_rollouts_surge_when_the_cluster_autoscaler_moved_desired(sandbox):
    observer = sandbox.aws("autoscaling")
    observer.update_auto_scaling_group(AutoScalingGroupName=GROUP, MinSize=3, MaxSize=8, DesiredCapacity=6)
    try:
        surge(sandbox, surge=2, wait=True)
        assert sizes(describe(sandbox)) == (3, 10, 8)
        # The cluster-autoscaler adds two nodes for pending pods while the rollout runs.
        sandbox.aws("autoscaling", user_agent="cluster-autoscaler/1.30").set_desired_capacity(
            AutoScalingGroupName=GROUP, DesiredCapacity=10, HonorCooldown=False)
        pay_back(sandbox)   # our 2, drained; the autoscaler's 2 stay
        restored = surge(sandbox, state="restored", wait=True)
        assert restored["autoscaler_moved"] is True and restored["autoscaler_delta"] == 2
        # Its two nodes stay (10 - our 2), and the maximum stays high enough for them.
        assert restored["sizes"]["after"] == {"min_size": 3, "max_size": 8, "desired_capacity": 8}
        group = describe(sandbox)
        assert sizes(group) == (3, 8, 8) and len(in_service(group)) == 8 and rollout_tags(group) == {} and suspended(group) == []
    finally:
        # back to 6 for the next tests the way an operator would, through the gate: drain the extra two, then terminate them
        extra = in_service(describe(sandbox))[6:]
        if extra:
            drained = sandbox.run_module("node_drain", nodes=sorted(dns_names(sandbox, extra).values()), module_args={"timeout": "2m"})
            assert drained["rc"] == 0, drained["output"][-2000:]
            ended = sandbox.run_module("instance_terminate", asg_name=GROUP, instance_ids=extra, decrement_desired_capacity=True)
            assert ended["rc"] == 0, ended["output"][-2000:]
        observer.update_auto_scaling_group(AutoScalingGroupName=GROUP, MinSize=6, MaxSize=6)
    wait_until("6 instances in service", lambda: len(describe(sandbox)["Instances"]) == 6 and len(in_service(describe(sandbox))) == 6)
    assert_safe(sandbox.report())


def test_detach_surges_as_kops_does_and_tags_every_detached_instance(sandbox):
    ec2 = sandbox.aws("ec2")
    pointed = sandbox.run_module("launch_template_version", asg_name=GROUP, image_id=sandbox.state["amis"]["new"])
    assert pointed["rc"] == 0 and pointed["version"] == 2
    old = in_service(describe(sandbox))

    busy = {iid for iid, node in dns_names(sandbox, old).items() if workload_pods(sandbox, node)}
    result = surge(sandbox, method="detach", surge=2, wait=True)
    detached = result["detached_instances"]
    assert result["changed"] and len(detached) == 2 and set(detached) <= set(old)
    assert result["steps"] == ["recorded", "suspended", "detached"]
    group = describe(sandbox)
    # Desired was not decremented: the group replaced the two from the new version.
    assert sizes(group) == (6, 6, 6) and len(in_service(group)) == 6 and not set(detached) & set(in_service(group))
    new = [instance for instance in group["Instances"] if instance["InstanceId"] not in old]
    assert len(new) == 2 and all(instance["LaunchTemplate"]["Version"] == "2" for instance in new)
    described = [instance for reservation in ec2.describe_instances(InstanceIds=detached)["Reservations"]
                 for instance in reservation["Instances"]]
    assert sorted(instance["InstanceId"] for instance in described) == sorted(detached) and len(detached) == 2
    for instance in described:
        tags = {tag["Key"]: tag["Value"] for tag in instance["Tags"]}
        assert instance["State"]["Name"] == "running"
        assert tags[PREFIX + "detached"] == result["rollout_id"] and tags[PREFIX + "detached-from"] == GROUP
    assert recorded_fields(group)["m"] == "detach" and recorded_fields(group)["surge"] == "2"

    again = surge(sandbox, method="detach", surge=2)
    assert again["changed"] is False and again["detached_instances"] == []

    info = sandbox.run_module("node_group_info", name=GROUP)["node_groups"][0]
    assert sorted(info["detached_instances"]) == sorted(detached)
    outdated = {entry["instance_id"]: entry["reason"] for entry in info["outdated"]}
    assert all("detached from the group for surge" in outdated[instance_id] for instance_id in detached)
    assert len(outdated) == 6  # the 2 detached + the 4 old members; the 2 new are up to date

    # as the role does: drain the detached instances' nodes (they ran the shop) before they are terminated
    assert set(detached) <= busy, (detached, busy)
    for node in dns_names(sandbox, detached).values():
        assert_holds_workload(sandbox, node)
    retire_detached_and_restore(sandbox, detached)


def retire_detached_and_restore(sandbox, detached):
    """As the role does: drain the detached instances' nodes, terminate them (outside the group: nothing to decrement),
    restore the group."""
    nodes = sorted(dns_names(sandbox, detached).values())
    drained = sandbox.run_module("node_drain", nodes=nodes, poll_interval=0.2, retry_max_delay=1.0)
    assert drained["rc"] == 0 and sorted(drained["drained"]) == nodes, drained.get("msg") or drained["output"][-2000:]
    terminated = sandbox.run_module("instance_terminate", asg_name=GROUP, instance_ids=detached, decrement_desired_capacity=True)
    assert terminated["rc"] == 0 and sorted(terminated["terminated_detached"]) == sorted(detached) and terminated["decremented"] == []
    group = describe(sandbox)
    assert sizes(group) == (6, 6, 6) and len(group["Instances"]) == 6
    wait_until("the detached instances' nodes to go", lambda: len(ready_nodes(sandbox)) == 6)

    restored = surge(sandbox, method="detach", state="restored")
    assert restored["changed"] and restored["detached_remaining"] == [] and rollout_tags(describe(sandbox)) == {}
    assert_safe(sandbox.report())


def test_a_detach_surge_recorded_but_stopped_before_it_tagged_an_instance_is_made_by_the_rerun(sandbox):
    # the group on version 2 (the detach test), 4 of its instances still on version 1
    old = in_service(describe(sandbox))
    sandbox.fault(aws_5xx={"CreateTags": 1.0})
    try:
        failed = sandbox.run_module("asg_surge", name=GROUP, method="detach", surge=2)
    finally:
        sandbox.fault(aws_5xx={"CreateTags": 0.0})
    assert failed["rc"] != 0 and "InternalError" in failed["msg"], failed.get("msg")
    group = describe(sandbox)
    assert recorded_fields(group)["surge"] == "2" and in_service(group) == old   # recorded, nothing detached
    # the rerun makes the surge it recorded: else the rollout would drain outdated nodes with nothing new beside them
    result = surge(sandbox, method="detach", surge=2, wait=True)
    detached = result["detached_instances"]
    assert len(detached) == 2 and set(detached) <= set(old) and result["steps"] == ["detached"], result
    assert len(in_service(describe(sandbox))) == 6
    retire_detached_and_restore(sandbox, detached)


def test_bad_input_is_refused_with_one_clear_error_and_no_mutating_request(sandbox):
    observer = sandbox.aws("autoscaling")
    observer.create_auto_scaling_group(
        AutoScalingGroupName="empty", MinSize=0, MaxSize=3, DesiredCapacity=0,
        VPCZoneIdentifier=",".join(sandbox.state["subnets"].values()),
        LaunchTemplate={"LaunchTemplateId": sandbox.state["groups"][0]["launch_template_id"], "Version": "1"})
    before = describe(sandbox)
    cases = [
        ({"name": "no-such-group", "surge": 1}, "name: Auto Scaling group 'no-such-group' not found in region us-east-1"),
        ({"name": "empty", "surge": 1}, "name: Auto Scaling group 'empty' has no instances (desired capacity 0)"),
        ({"surge": -1}, "surge: -1 is not allowed; use an integer >= 0 or a percentage between 0% and 100%"),
        ({"surge": "abc"}, "surge: 'abc' is not allowed"),
        ({"surge": 1.5}, "surge: 1.5 is not allowed"),
        ({"surge": "150%"}, "surge: '150%' is not allowed"),
        ({"surge": 6, "max_size_limit": 10},
         "surge: 6 more instances on a desired capacity of 6 need a maximum size of 12, above max_size_limit 10; "
         "use a surge of at most 4, or raise max_size_limit to 12"),
        ({"max_unavailable": "150%"}, "max_unavailable: '150%' is not allowed"),
        ({"method": "detach", "instance_ids": ["i-0123456789abcdef0"]},
         "instance_ids: i-0123456789abcdef0 is not an instance in service in Auto Scaling group 'sandbox-nodes'"),
        ({"suspend_processes": ["Launch"]}, "value of suspend_processes must be one or more of"),
    ]
    for args, message in cases:
        args = dict({"name": GROUP}, **args)
        since = sandbox.now()
        result = sandbox.run_module("asg_surge", **args)
        assert result["rc"] != 0 and result["msg"].startswith(message), (args, result.get("msg"))
        time.sleep(0.2)
        assert mutations_since(sandbox, since) == [], args
    after = describe(sandbox)
    assert sizes(after) == sizes(before) and rollout_tags(after) == {} and suspended(after) == []
    assert_safe(sandbox.report())
