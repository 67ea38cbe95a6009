# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""asg_surge: surge, hold and restore of a group, against moto.

Fixtures (world, run, api_calls, cluster) come from aws_world.py through conftest.py.
"""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws import write_state
from ansible_collections.nodeops.rollout.plugins.module_utils.core.tags import TAG_INSTANCE_DETACHED, TAG_INSTANCE_DETACHED_FROM, TAG_PREFIX, tags_to_dict
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import state as rs
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.aws_world import mutating, recorded_state


def test_surge_records_suspends_and_raises_then_a_rerun_resumes_without_surging_again(world, run):
    result = run("asg_surge", name="workers", surge=3, rollout_id="r-unit-1")
    assert result["changed"] and result["resumed"] is False
    assert result["steps"] == ["recorded", "suspended", "resized"]
    assert result["sizes"] == {"before": {"min_size": 3, "max_size": 6, "desired_capacity": 3},
                               "after": {"min_size": 3, "max_size": 9, "desired_capacity": 6}}
    assert world.sizes() == (3, 9, 6) and world.suspended() == ["AZRebalance"]
    tags = world.tags()
    assert sorted(key for key in tags if key.startswith(TAG_PREFIX)) == [rs.TAG_PROGRESS, rs.TAG_STATE]
    state = recorded_state(world)
    assert state["rollout_id"] == "r-unit-1" and state["original_max_size"] == 6 and state["surge_owed"] == 3
    assert state["suspended_processes"] == ["AZRebalance"] and state["target_launch_template"] == world.lt_id
    assert state["target_version"] == 1
    again = run("asg_surge", name="workers", surge=3)
    assert again["changed"] is False and again["resumed"] is True and again["rollout_id"] == "r-unit-1"
    assert world.sizes() == (3, 9, 6) and not again.get("warnings")
    different = run("asg_surge", name="workers", surge=5)
    assert different["changed"] is False and world.sizes() == (3, 9, 6)
    assert "recorded with a surge of 3; surge=5 is ignored" in str(different["warnings"])


def test_restore_gives_back_the_exact_original_sizes_and_only_our_processes(world, run):
    world.asg.suspend_processes(AutoScalingGroupName="workers", ScalingProcesses=["ScheduledActions"])
    run("asg_surge", name="workers", surge=2, suspend_processes=["AZRebalance", "ScheduledActions"])
    assert recorded_state(world)["suspended_processes"] == ["AZRebalance"]  # ScheduledActions was not ours
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
    assert not [key for key in world.tags() if key.startswith(TAG_PREFIX)]
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
    assert recorded_state(world)["surge_owed"] == 2 and world.sizes()[2] == 4
    rest = [instance_id for instance_id in world.member_ids() if instance_id != first]
    paid = run("instance_terminate", asg_name="workers", instance_ids=rest[:2], decrement_desired_capacity="owed", delete_node=False)
    assert paid["surge_owed"] == {"before": 1, "after": 0} and len(paid["decremented"]) == 1
    assert world.sizes()[2] == 3 and recorded_state(world)["surge_owed"] == 0


def test_surge_check_and_diff_mode(world, run, api_calls):
    result = run("asg_surge", check=True, diff=True, name="workers", surge="50%")
    assert result["changed"] and result["surge"] == 2
    assert result["diff"]["before"]["max_size"] == 6 and result["diff"]["after"]["max_size"] == 8
    assert result["diff"]["after"]["suspended_processes"] == ["AZRebalance"]
    assert " surge=2 " in result["diff"]["after"]["tags"][rs.TAG_STATE]
    assert mutating(api_calls) == [] and world.sizes() == (3, 6, 3) and rs.TAG_STATE not in world.tags()
    run("asg_surge", name="workers", surge=2)
    run("instance_terminate", asg_name="workers", instance_ids=world.member_ids()[:2], decrement_desired_capacity="owed", delete_node=False)
    result = run("asg_surge", check=True, diff=True, name="workers", state="restored")
    assert result["diff"]["after"] == {"min_size": 3, "max_size": 6, "desired_capacity": 3, "suspended_processes": [], "tags": {}}
    assert mutating(api_calls) == [] and world.sizes() == (3, 8, 3)


def test_a_surge_interrupted_after_recording_is_finished_once(world, run):
    state = {"rollout_id": "r-cut", "method": "scale", "original_min_size": 3, "original_max_size": 6,
             "original_desired_capacity": 3, "surge": 2, "surge_owed": 2, "surged_max_size": 8,
             "suspended_processes": ["AZRebalance"], "started_at": "2024-05-01T12:00:00Z"}
    write_state(world.asg, "workers", rs.state_tags(state))
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
    described = [instance for reservation in world.ec2.describe_instances(InstanceIds=result["detached_instances"])["Reservations"]
                 for instance in reservation["Instances"]]
    assert sorted(instance["InstanceId"] for instance in described) == sorted(result["detached_instances"])
    for instance in described:
        tags = tags_to_dict(instance["Tags"])
        assert tags[TAG_INSTANCE_DETACHED] == result["rollout_id"] and tags[TAG_INSTANCE_DETACHED_FROM] == "workers"
    assert recorded_state(world)["surge_owed"] == 0
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
    assert world.sizes() == (3, 6, 3) and rs.TAG_STATE not in world.tags()


def test_damaged_state_tags_are_refused_naming_the_tag(world, run, api_calls):
    write_state(world.asg, "workers", {rs.TAG_STATE: "v2 id=r-1 m=scale min=3 max=six desired=3 surge=1", rs.TAG_PROGRESS: "v2 owed=1"})
    result = run("asg_surge", name="workers", state="restored")
    assert result["msg"].startswith("Auto Scaling group 'workers': field max of tag nodeops.rollout/state is 'six', not a whole number")
    assert mutating(api_calls) == []


def test_a_rollout_recorded_by_the_previous_release_resumes_and_moves_to_the_two_tags(world, run):
    """The previous release's one tag per field: read as it is, rewritten in the current format at the next write."""
    run("asg_surge", name="workers", surge=2, rollout_id="r-old")
    recorded = recorded_state(world)
    world.asg.delete_tags(Tags=[{"ResourceId": "workers", "ResourceType": "auto-scaling-group", "Key": key}
                                for key in (rs.TAG_STATE, rs.TAG_PROGRESS)])
    legacy = {"rollout-id": "r-old", "method": "scale", "original-min": "3", "original-max": "6", "original-desired": "3",
              "surge": "2", "surge-owed": "2", "surged-max": "8", "target-launch-template": world.lt_id, "target-version": "1",
              "suspended-processes": "AZRebalance", "started-at": recorded["started_at"]}
    write_state(world.asg, "workers", {"nodeops.rollout/" + key: value for key, value in legacy.items()})
    assert recorded_state(world) == recorded
    assert run("asg_surge", name="workers", surge=2)["resumed"] is True
    paid = run("instance_terminate", asg_name="workers", instance_ids=world.member_ids()[:1], decrement_desired_capacity="owed",
               delete_node=False)
    assert paid["decremented"] and paid["surge_owed"] == {"before": 2, "after": 1}
    assert sorted(key for key in world.tags() if key.startswith(TAG_PREFIX)) == [rs.TAG_PROGRESS, rs.TAG_STATE]
    assert recorded_state(world) == dict(recorded, surge_owed=1)


def test_the_version_the_group_launched_before_is_recorded_given_or_read_from_the_instances(world, run):
    world.asg.update_auto_scaling_group(AutoScalingGroupName="workers", LaunchTemplate={"LaunchTemplateId": world.lt_id, "Version": "1"})
    target = world.new_version()
    world.asg.update_auto_scaling_group(AutoScalingGroupName="workers",
                                        LaunchTemplate={"LaunchTemplateId": world.lt_id, "Version": str(target)})
    # a run stopped between pointing the group and recording the rollout: the version given is the target itself, so
    # the one the group's instances were launched from is recorded
    result = run("asg_surge", name="workers", surge=1, previous_version=target)
    assert result["rollout_state"]["previous_version"] == 1 and recorded_state(world)["previous_version"] == 1
    refused = run("asg_surge", name="workers", state="held", previous_version=0)
    assert refused["failed"] and refused["msg"].startswith("previous_version: 0 is not allowed")


@pytest.mark.parametrize("check", [False, True], ids=["terminate", "check-mode"])
def test_a_termination_in_diff_mode_shows_the_instances_that_go_and_the_desired_capacity(world, run, check):
    run("asg_surge", name="workers", surge=2)
    members = sorted(world.member_ids())
    chosen = sorted(members[:2])
    paid = run("instance_terminate", check=check, diff=True, asg_name="workers", instance_ids=chosen,
               decrement_desired_capacity="owed", delete_node=False)
    assert paid["diff"]["before"] == {"desired_capacity": 5, "instances": members}
    assert paid["diff"]["after"] == {"desired_capacity": 3, "instances": [i for i in members if i not in chosen]}
    assert paid["diff"]["before_header"] == "Auto Scaling group workers"
    assert world.sizes() == ((3, 8, 5) if check else (3, 8, 3))
