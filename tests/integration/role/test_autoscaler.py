"""The rollout beside a cluster-autoscaler, end to end (3 nodes, the demo shop, a minimum size of 1, a surge of 1).

The rollout is stopped at its first termination (the sandbox holds that request; the other one, sent beside it, may go
through) with its surge up and two old nodes drained. There:

- the new node carries ``cluster-autoscaler.kubernetes.io/scale-down-disabled=true`` (and the rollout's record that it
  put it there), so the autoscaler would not scale the surge in;
- the autoscaler scales in the third old node as it does: it drains it through the Eviction API and terminates it with
  a decrement.

Then the rollout goes on. It does not wait for a replacement of that node (none comes) and does not fight the scale-in:
the group ends one node below its original size, the result says so (``autoscaler_delta: -1``), and nothing of the
rollout's is left on the nodes (the annotation taken off). The invariant report holds: no budget violated, no pod ended
without eviction, each pod moved once, no Deployment without a Ready pod; the Ready schedulable nodes went one below the
rollout's floor only by the autoscaler's own scale-in.
"""

import json
import os
import signal
import time

import pytest

from tests.integration.group_states import FAST, GROUP, assert_invariants, assert_nothing_of_ours_left, group_of, node_of, sizes
from sandbox.drive.handle import wait_until

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")
DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    handle = start_sandbox(nodes=3, azs=3, speed=20, workloads=[DEMO])
    handle.aws("autoscaling").update_auto_scaling_group(AutoScalingGroupName=GROUP, MinSize=1)
    return handle


def test_new_nodes_are_kept_from_the_autoscaler_and_its_scale_in_of_an_old_node_is_not_fought(sandbox, tmp_path):
    old = sorted(instance["InstanceId"] for instance in group_of(sandbox)["Instances"])
    sandbox.hold(match={"api": "aws", "action": "TerminateInstanceInAutoScalingGroup", "module": "instance_terminate"})
    report = tmp_path / "result.json"
    run = sandbox.start_role_playbook(tmp_path, str(tmp_path / "out.txt"), extra=list(FAST) + ["rolling_update_max_surge=1"],
                                      report=report, node_groups=[{"name": GROUP, "image_id": sandbox.state["amis"]["new"]}])
    try:
        wait_until("the rollout's first termination", lambda: sandbox.held() is not None or run.poll() is not None, timeout=600)
        assert run.poll() is None, (tmp_path / "out.txt").read_text()[-3000:]
        new = [iid for iid in (instance["InstanceId"] for instance in group_of(sandbox)["Instances"]) if iid not in old]
        # the surge, and the replacement of the other drained node if its termination (sent beside the held one) went
        # through already: the surge is the first launched
        reservations = sandbox.aws("ec2").describe_instances(InstanceIds=new)["Reservations"]
        launched = sorted((instance["LaunchTime"], instance["InstanceId"]) for r in reservations for instance in r["Instances"])
        assert 1 <= len(new) <= 2, new
        annotations = node_of(sandbox, launched[0][1]).metadata.annotations or {}
        assert annotations.get(DISABLED) == "true" and annotations.get("nodeops.rollout/scale-down-disabled") == "true"

        # the autoscaler takes the old node the rollout has not drained yet: evictions, then a termination with a decrement
        spared = [iid for iid in old if node_of(sandbox, iid) is not None and not node_of(sandbox, iid).spec.unschedulable]
        assert len(spared) == 1, spared
        drained = sandbox.run_module("node_drain", nodes=[node_of(sandbox, spared[0]).metadata.name], module_args={"timeout": "2m"})
        assert drained["rc"] == 0, drained["output"][-2000:]
        sandbox.aws("autoscaling", user_agent="cluster-autoscaler").terminate_instance_in_auto_scaling_group(
            InstanceId=spared[0], ShouldDecrementDesiredCapacity=True)
    finally:
        sandbox.release()
        deadline = time.monotonic() + 900
        while run.poll() is None and time.monotonic() < deadline:
            time.sleep(1)
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    out = (tmp_path / "out.txt").read_text()
    assert run.returncode == 0, out[-4000:]
    result = json.loads(report.read_text())["node_groups"][0]
    assert result["status"] == "replaced" and result["autoscaler_delta"] == -1, result
    assert sizes(sandbox) == (1, 3, 2)
    assert {instance["LaunchTemplate"]["Version"] for instance in group_of(sandbox)["Instances"]} == {"2"}
    for node in sandbox.core().list_node().items:
        assert DISABLED not in (node.metadata.annotations or {}), node.metadata.name
    assert_nothing_of_ours_left(sandbox)
    # the floor checked is one under the rollout's (3 - max_unavailable 1): the autoscaler's own scale-in took that node
    assert_invariants(sandbox, 3, max_unavailable=2, name="autoscaler-scale-in")
