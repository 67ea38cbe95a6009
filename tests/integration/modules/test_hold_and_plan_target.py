"""What the role relies on when a rollout stops and when it plans: asg_surge state=held keeps the surge and the state
for the next run but gives the group back the processes the rollout suspended; node_group_info plans against a target
that does not exist yet (check mode); wait timeouts take durations."""

import pytest

GROUP = "sandbox-nodes"
PREFIX = "nodeops.rollout/"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=4, azs=2, speed=20)


def describe(sandbox):
    return sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]


def sizes(group):
    return group["MinSize"], group["MaxSize"], group["DesiredCapacity"]


def rollout_tags(group):
    return {tag["Key"]: tag["Value"] for tag in group.get("Tags") or [] if tag["Key"].startswith(PREFIX)}


def suspended(group):
    return sorted(process["ProcessName"] for process in group.get("SuspendedProcesses") or [])


def ok(result):
    assert result["rc"] == 0, result.get("msg") or result["output"][-2000:]
    return result


def test_held_keeps_surge_and_state_and_resumes_only_our_processes(sandbox):
    autoscaling = sandbox.aws("autoscaling")
    # an operator suspended ScheduledActions before the rollout: not ours, must stay suspended
    autoscaling.suspend_processes(AutoScalingGroupName=GROUP, ScalingProcesses=["ScheduledActions"])
    original = sizes(describe(sandbox))
    ok(sandbox.run_module("asg_surge", name=GROUP, surge=2, wait=True, wait_timeout="2m"))
    surged = describe(sandbox)
    assert sizes(surged) == (original[0], original[1] + 2, original[2] + 2)
    assert suspended(surged) == ["AZRebalance", "ScheduledActions"]
    tags = rollout_tags(surged)

    check = ok(sandbox.run_module("asg_surge", name=GROUP, state="held", check=True))
    assert check["changed"] is True and check["resumed_processes"] == ["AZRebalance"]
    assert suspended(describe(sandbox)) == ["AZRebalance", "ScheduledActions"]  # check mode changed nothing

    held = ok(sandbox.run_module("asg_surge", name=GROUP, state="held"))
    assert held["changed"] is True and held["held"] is True and held["resumed_processes"] == ["AZRebalance"]
    after = describe(sandbox)
    assert sizes(after) == sizes(surged), "the surge must stay so the cluster keeps its capacity"
    assert rollout_tags(after) == tags, "the state tags must stay for the next run"
    assert suspended(after) == ["ScheduledActions"]

    again = ok(sandbox.run_module("asg_surge", name=GROUP, state="held"))
    assert again["changed"] is False

    # the next run resumes: no second surge, our process suspended again
    resumed = ok(sandbox.run_module("asg_surge", name=GROUP, surge=2))
    assert resumed["resumed"] is True
    assert sizes(describe(sandbox)) == sizes(surged)
    assert suspended(describe(sandbox)) == ["AZRebalance", "ScheduledActions"]

    # the surge is paid back through the termination gate, as the role's scale-down does, before the restore
    payback = ok(sandbox.run_module("node_group_info", name=GROUP))["node_groups"][0]["payback"]
    assert len(payback) == 2
    ok(sandbox.run_module("node_drain", nodes=[entry["node"] for entry in payback], module_args={"timeout": "2m"}))
    ok(sandbox.run_module("instance_terminate", asg_name=GROUP, instance_ids=[entry["instance_id"] for entry in payback],
                          decrement_desired_capacity="owed"))
    ok(sandbox.run_module("asg_surge", name=GROUP, state="restored", wait=True, wait_timeout="2m"))
    final = describe(sandbox)
    assert sizes(final) == original and rollout_tags(final) == {} and suspended(final) == ["ScheduledActions"]
    autoscaling.resume_processes(AutoScalingGroupName=GROUP, ScalingProcesses=["ScheduledActions"])


def test_held_without_a_recorded_rollout_changes_nothing(sandbox):
    since = sandbox.now() + 0.01
    result = ok(sandbox.run_module("asg_surge", name=GROUP, state="held"))
    assert result["changed"] is False and result["held"] is False
    assert [e for e in sandbox.mutating_requests(since=since) if e["t"] > since] == []


def test_plan_against_a_target_that_does_not_exist_yet(sandbox):
    new_ami = sandbox.state["amis"]["new"]
    template = sandbox.state["groups"][0]["launch_template_id"]
    since = sandbox.now() + 0.01
    predicted = ok(sandbox.run_module("launch_template_version", check=True, asg_name=GROUP, image_id=new_ami))
    assert predicted["changed"] is True and predicted["target"]["image_id"] == new_ami
    assert predicted["target"]["version"] == 2
    info = ok(sandbox.run_module("node_group_info", name=GROUP, target=predicted["target"]))
    group = info["node_groups"][0]
    assert group["outdated_count"] == 4 and group["up_to_date"] == []
    assert all("target version is 2" in entry["reason"] for entry in group["outdated"])
    assert sorted(i for b in group["plan"]["batches"] for i in b["instance_ids"]) == sorted(e["instance_id"] for e in group["outdated"])
    # without the override the group still launches version 1, so nothing is outdated: check mode created nothing
    plain = ok(sandbox.run_module("node_group_info", name=GROUP))["node_groups"][0]
    assert plain["launch_template"]["version"] == 1 and plain["outdated_count"] == 0
    assert sandbox.aws("ec2").describe_launch_templates(LaunchTemplateIds=[template])["LaunchTemplates"][0]["LatestVersionNumber"] == 1
    assert [e for e in sandbox.mutating_requests(since=since) if e["t"] > since] == []


@pytest.mark.parametrize("module,args", [
    ("node_group_info", {"name": GROUP, "target": {"version": "latest"}}),
    ("asg_surge", {"name": GROUP, "wait": True, "wait_timeout": "5 minutes"}),
    ("instance_terminate", {"asg_name": GROUP, "instance_ids": ["i-0123456789abcdef0"], "wait_timeout": "-1"}),
])
def test_bad_target_and_durations_are_refused_naming_the_field(sandbox, module, args):
    since = sandbox.now() + 0.01
    result = sandbox.run_module(module, **args)
    assert result["rc"] != 0
    field = "target.version" if "target" in args else "wait_timeout"
    assert result["msg"].startswith(field + ":"), result["msg"]
    assert [e for e in sandbox.mutating_requests(since=since) if e["t"] > since] == []
