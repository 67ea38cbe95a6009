"""Instances in Standby and instances protected from scale in, end to end.

One sandbox (4 nodes over 2 zones, the demo shop), three rollouts in turn:

1. the default, ``rolling_update_standby_instances: ignore``: an instance in Standby (entered with a decrement, so not part
   of the desired capacity) is never counted as capacity nor waited for: the plan and the end of the run name it, and it
   stays on its old version. Two outdated instances protected from scale in are replaced like the others, and the new
   instances, launched protected (NewInstancesProtectedFromScaleIn), do not keep the surge from being paid back;
2. ``terminate``: the instance in Standby is drained and terminated without a decrement and without a replacement;
3. ``wait``: an outdated instance in Standby stops the run after the bounded wait (``rolling_update_node_ready_timeout``),
   naming it, and the rollout is held for the run that follows its return to service (replacing an instance back in
   service is the common path, covered by every other rollout).

The invariant report holds throughout: no budget violated, no pod ended without eviction, the floor kept, each pod
moved at most once, no Deployment without a Ready pod.
"""

import os

import pytest

from tests.integration.group_states import (
    GROUP,
    assert_invariants,
    assert_nothing_of_ours_left,
    group_of,
    instances_by_state,
    node_of,
    playbook,
    sizes,
)
from tests.integration.modules.conftest import assert_holds_workload, workload_pods

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    handle = start_sandbox(nodes=4, azs=2, speed=20, workloads=[DEMO])
    asg = handle.aws("autoscaling")
    # room under the desired capacity for an instance to leave it (Standby with a decrement)
    asg.update_auto_scaling_group(AutoScalingGroupName=GROUP, MinSize=1, NewInstancesProtectedFromScaleIn=True)
    return handle


def test_ignored_standby_is_reported_and_protected_instances_are_replaced(sandbox, tmp_path):
    asg = sandbox.aws("autoscaling")
    members = sorted(instance["InstanceId"] for instance in group_of(sandbox)["Instances"])
    standby = next(iid for iid in members if workload_pods(sandbox, node_of(sandbox, iid).metadata.name))
    protected = [iid for iid in members if iid != standby][:2]
    asg.set_instance_protection(AutoScalingGroupName=GROUP, InstanceIds=protected, ProtectedFromScaleIn=True)
    asg.enter_standby(AutoScalingGroupName=GROUP, InstanceIds=[standby], ShouldDecrementDesiredCapacity=True)
    assert sizes(sandbox) == (1, 4, 3)

    rc, out, _result = playbook(sandbox, tmp_path, "new", check=True, playbook_file="plan.yml")
    assert rc == 0, out[-3000:]
    assert ("in Standby (never counted as capacity): %s; 1 outdated, left as they are and reported (standby_instances: ignore): %s"
            % (standby, standby)) in out, out[-3000:]
    shown = next(line for line in out.splitlines() if "protected from scale in" in line)
    assert len(protected) == 2 and all(iid in shown for iid in protected) and standby not in shown

    rc, out, result = playbook(sandbox, tmp_path, "new")
    assert rc == 0, out[-4000:]
    assert result["node_groups"][0]["status"] == "replaced"
    assert "1 outdated instances in Standby left as they are" in out
    assert [entry["instance_id"] for entry in result["node_groups"][0]["plan"]["standby"]["instances"] if entry["outdated"]] == [standby]
    states = instances_by_state(sandbox)
    assert states["Standby"] == [(standby, "1")]
    assert sorted(version for _iid, version in states["InService"]) == ["2", "2", "2"]
    assert not set(protected) & set(iid for iid, _version in states["InService"])
    # the new instances were launched protected, and the surge was paid back all the same
    assert all(instance["ProtectedFromScaleIn"] for instance in group_of(sandbox)["Instances"] if instance["LifecycleState"] == "InService")
    assert sizes(sandbox) == (1, 4, 3)
    assert_nothing_of_ours_left(sandbox)
    assert_invariants(sandbox, 3, name="standby-ignore-protected")


def test_terminate_drains_and_terminates_the_instance_in_standby_without_a_replacement(sandbox, tmp_path):
    standby = instances_by_state(sandbox)["Standby"][0][0]
    assert_holds_workload(sandbox, node_of(sandbox, standby).metadata.name)
    rc, out, result = playbook(sandbox, tmp_path, "old", extra=["rolling_update_standby_instances=terminate"])
    assert rc == 0, out[-4000:]
    assert result["node_groups"][0]["status"] == "replaced"
    states = instances_by_state(sandbox)
    assert list(states) == ["InService"] and sorted(version for _iid, version in states["InService"]) == ["3", "3", "3"]
    assert node_of(sandbox, standby) is None or node_of(sandbox, standby).spec.unschedulable
    assert sizes(sandbox) == (1, 4, 3)    # no decrement for it, and nothing launched in its place
    assert_nothing_of_ours_left(sandbox)
    assert_invariants(sandbox, 3, name="standby-terminate")


def test_wait_for_an_instance_in_standby_is_bounded_and_names_it(sandbox, tmp_path):
    asg = sandbox.aws("autoscaling")
    waited = sorted(iid for iid, _version in instances_by_state(sandbox)["InService"])[0]
    sandbox.core().patch_node(node_of(sandbox, waited).metadata.name, {"metadata": {"annotations": {"nodeops.rollout/needs-update": "true"}}})
    asg.enter_standby(AutoScalingGroupName=GROUP, InstanceIds=[waited], ShouldDecrementDesiredCapacity=True)
    rc, out, result = playbook(sandbox, tmp_path, "old", extra=["rolling_update_standby_instances=wait", "rolling_update_node_ready_timeout=20s"])
    assert rc != 0
    assert ("waited 20s for 1 outdated instance(s) in Standby to return to service (ExitStandby): %s; or set standby_instances to "
            "terminate or ignore" % waited) in out, out[-3000:]
    failed = result["node_groups"][0]
    assert failed["status"] == "failed" and "Standby" in failed["message"]
    # held, not stuck: the rollout's state stays for the run that follows the instance's return to service
    assert instances_by_state(sandbox)["Standby"] == [(waited, "3")] and group_of(sandbox)["SuspendedProcesses"] == []
    assert_invariants(sandbox, 3, name="standby-wait")
