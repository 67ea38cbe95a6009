"""Termination lifecycle hooks and a warm pool, end to end, in one rollout of one group (3 nodes, the demo shop).

The group has a termination hook (heartbeat timeout 120 s, default result CONTINUE) and a warm pool of two stopped
instances prepared from the old launch template version. Another owner (as aws-node-termination-handler would) completes
the lifecycle action of the first instance the hook holds; the others wait for the hook's timeout.

- The plan names the hook and the warm pool, and the pool's instances built from the old version.
- The pool is refreshed before the surge: no instance the group launches during the rollout comes from an old warm
  instance, and the pool ends with instances of the target only.
- Every instance the rollout terminates waits in Terminating:Wait, counted as leaving (never as capacity), and the
  rollout waits for the last ones at its end: when it says "replaced", no old instance is left. It never completes a
  lifecycle action itself.
- The invariant report holds: no budget violated, no pod ended without eviction, the floor kept, each pod moved once.
"""

import os
import threading

import pytest

from tests.integration.group_states import GROUP, assert_invariants, assert_nothing_of_ours_left, group_of, playbook, sizes
from sandbox.drive.handle import wait_until

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")
HOOK = "drain-by-ntth"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    handle = start_sandbox(nodes=3, azs=3, speed=20, workloads=[DEMO])
    asg = handle.aws("autoscaling")
    asg.put_lifecycle_hook(AutoScalingGroupName=GROUP, LifecycleHookName=HOOK, LifecycleTransition="autoscaling:EC2_INSTANCE_TERMINATING",
                           HeartbeatTimeout=120, DefaultResult="CONTINUE")
    asg.put_warm_pool(AutoScalingGroupName=GROUP, MinSize=2, PoolState="Stopped")
    wait_until("two prepared warm instances", lambda: sorted(state for state, _version in warm_pool(handle).values())
               == ["Warmed:Stopped", "Warmed:Stopped"], timeout=60)
    return handle


def warm_pool(sandbox):
    instances = sandbox.aws("autoscaling").describe_warm_pool(AutoScalingGroupName=GROUP)["Instances"]
    return {i["InstanceId"]: (i["LifecycleState"], i["LaunchTemplate"]["Version"]) for i in instances}


class OtherOwner(threading.Thread):
    """Completes the lifecycle action of the first instance the hook holds, as the hook's owner would after its own work."""

    def __init__(self, sandbox):
        super().__init__(daemon=True)
        self.asg = sandbox.aws("autoscaling", user_agent="termination-handler")
        self.completed = None
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.3) and self.completed is None:
            held = [i["InstanceId"] for i in self.asg.describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
                    ["Instances"] if i["LifecycleState"] == "Terminating:Wait"]
            if held:
                self.asg.complete_lifecycle_action(AutoScalingGroupName=GROUP, LifecycleHookName=HOOK, InstanceId=held[0],
                                                   LifecycleActionResult="CONTINUE")
                self.completed = held[0]


def test_the_pool_is_refreshed_before_the_surge_and_the_end_waits_for_the_hook(sandbox, tmp_path):
    stale = list(warm_pool(sandbox))   # in the pool's order, as the plan lists them
    old = sorted(instance["InstanceId"] for instance in group_of(sandbox)["Instances"])

    rc, out, _result = playbook(sandbox, tmp_path, "new", check=True, playbook_file="plan.yml")
    assert rc == 0, out[-3000:]
    assert ("termination lifecycle hooks (never completed by the rollout): %s (heartbeat timeout 2m 00s, default result CONTINUE)"
            % HOOK) in out, out[-3000:]
    assert ("warm pool (Stopped, min 2): 2 instance(s); 2 built from another version, terminated before the surge so that the "
            "pool refills from the target and no new instance comes from them: %s" % ", ".join(stale)) in out, out[-3000:]

    owner = OtherOwner(sandbox)
    owner.start()
    since = sandbox.now()
    try:
        rc, out, result = playbook(sandbox, tmp_path, "new")
    finally:
        owner.stop.set()
        owner.join(timeout=10)
    assert rc == 0, out[-4000:]
    assert result["node_groups"][0]["status"] == "replaced"
    events = [e for e in sandbox.events() if e["t"] >= since]

    # the warm pool: the old prepared instances terminated before the surge, nothing launched from them
    surged = next(e["t"] for e in events if e["kind"] == "aws.request" and e.get("action") == "UpdateAutoScalingGroup"
                  and "asg_surge" in str(e.get("client")))
    assert sorted(e["instance_id"] for e in events if e["kind"] == "warm_pool.terminated" and e["t"] < surged) == sorted(stale)
    used = [e for e in events if e["kind"] == "warm_pool.used"]
    assert all(e["lt_version"] == "2" for e in used), used
    assert sorted(version for _state, version in warm_pool(sandbox).values()) == ["2", "2"]

    # the hook: each old instance waited in Terminating:Wait; one was let go by its owner, the others by the timeout
    waits = sorted(e["instance_id"] for e in events if e["kind"] == "instance.lifecycle_wait")
    assert waits == old
    done = {e["instance_id"]: e["how"] for e in events if e["kind"] == "instance.lifecycle_done"}
    assert owner.completed in old and done.pop(owner.completed) == "completed" and set(done.values()) == {"timeout"}
    assert not [e for e in events if e["kind"] == "aws.request" and e.get("action") in ("CompleteLifecycleAction", "RecordLifecycleActionHeartbeat")
                and str(e.get("client") or "").startswith("nodeops.rollout")]
    # the end waited for them: no old instance left, none leaving
    states = {instance["InstanceId"]: instance["LifecycleState"] for instance in group_of(sandbox)["Instances"]}
    assert set(states.values()) == {"InService"} and not set(states) & set(old)
    ec2 = sandbox.aws("ec2").describe_instances(InstanceIds=old)["Reservations"]
    assert {i["State"]["Name"] for r in ec2 for i in r["Instances"]} == {"terminated"}

    assert sizes(sandbox) == (3, 3, 3)
    assert_nothing_of_ours_left(sandbox)
    assert_invariants(sandbox, 3, name="hooks-and-warm-pool")
