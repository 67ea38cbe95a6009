"""Cancel gives the surge back by the upgrade's own rules: the instances that hold no pods first, never below
the capacity floor, each drained node out of its target groups before its instance is terminated, and the marks of an
interrupted multi-group run taken off the groups that have no rollout to cancel. Each test runs the upgrade into a
state an operator cancels from, cancels, and checks the invariant report and the end state (no lock, no surge, no suspended
process, no state tag, no mark of ours)."""

import json
import os
import signal
import time

from kubernetes import client

from sandbox.drive.tags import PAUSE_TAG, delete_tag, set_tag
from tests.integration.controls import (
    GROUP,
    QUICK,
    Watcher,
    assert_invariants,
    group_view,
    lock_holder,
    node_marks,
    result_of,
    terminated_by_rollout,
)
from sandbox.drive.handle import wait_until

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")
# four nodes over two zones: a floor of three Ready nodes to keep (max_unavailable 1), with fewer instances to boot and
# give back than six
NODES = 4
LOCK_NAMESPACE = "kube-system"


def evicted(event):
    return event["kind"] == "pod.terminating" and event.get("how") == "evicted" and str(event.get("client") or "").startswith("nodeops.rollout")


def evicted_by_us(sandbox, since):
    return [e for e in sandbox.events() if e["t"] >= since and evicted(e)]


def assert_cancelled(sandbox, original, result):
    """The end of a cancel: sizes as before the rollout, no state tag, no suspended process, no lock, no mark of ours."""
    assert result["status"] == "cancelled", result
    after = group_view(sandbox)
    assert after["sizes"] == original["sizes"] and after["state_tags"] == {} and after["suspended"] == [], after
    assert len(after["members"]) == original["sizes"][2], after
    assert node_marks(sandbox) == {}
    assert lock_holder(sandbox) is None
    return after


def test_cancel_after_a_failed_boot_gives_back_the_nodes_that_never_became_ready_and_drains_no_ready_node(start_sandbox, tmp_path):
    sandbox = start_sandbox(nodes=NODES, azs=2, speed=20, workloads=[DEMO])
    original = group_view(sandbox)
    sandbox.fault(nodes_never_ready=True)
    report = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK + ["rolling_update_node_ready_timeout=40s"])
    assert rc != 0 and "NodeCreationFailure" in out, out[-3000:]
    held = group_view(sandbox)
    assert held["state_tags"] and held["sizes"][2] > NODES, held

    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="cancel.yml", report=report)
    assert rc == 0, out[-4000:]
    after = assert_cancelled(sandbox, original, result_of(report))
    # the old nodes stay, every one of them: only the instances that never became Ready nodes were given back
    assert after["members"] == original["members"], (after, original)
    assert evicted_by_us(sandbox, since) == []
    ready = [node for node in sandbox.core().list_node().items
             if any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])]
    assert len(ready) == NODES and all(not node.spec.unschedulable for node in ready)
    sandbox.fault(nodes_never_ready=False)
    print("invariants", assert_invariants(sandbox.report(), NODES, 1))


def test_cancel_while_replacements_boot_gives_one_of_them_back_not_a_ready_old_node(start_sandbox, tmp_path):
    sandbox = start_sandbox(nodes=NODES, azs=2, speed=20, workloads=[DEMO])
    original = group_view(sandbox)

    def pause_while_they_boot(event):
        # the replacements of step 1 never become Ready: the cancel finds them booting, however long it takes to start
        sandbox.fault(nodes_never_ready=True)
        set_tag(sandbox, PAUSE_TAG, "true")

    watcher = Watcher(sandbox, sandbox.now(), terminated_by_rollout, pause_while_they_boot)
    watcher.start()
    report = tmp_path / "result.json"
    try:
        rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK + [
            "rolling_update_max_surge=1", "rolling_update_max_unavailable=1"])
    finally:
        watcher.stop()
    assert watcher.fired is not None and rc == 0 and result_of(report)["status"] == "paused", out[-3000:]
    held = group_view(sandbox)

    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="cancel.yml", report=report)
    assert rc == 0, out[-4000:]
    after = assert_cancelled(sandbox, original, result_of(report))
    # the surge given back was a replacement that held no pods: every old node still there serves, none was drained
    assert set(held["members"]) - set(after["members"]) <= set(held["members"]) - set(original["members"]), (held, after)
    assert evicted_by_us(sandbox, since) == []
    sandbox.fault(nodes_never_ready=False)
    delete_tag(sandbox, PAUSE_TAG)
    print("invariants", assert_invariants(sandbox.report(), NODES, 1))


def test_cancel_waits_for_the_target_groups_before_terminating_and_keeps_the_floor(start_sandbox, tmp_path):
    sandbox = start_sandbox(nodes=NODES, azs=2, speed=20, workloads=[DEMO])
    elbv2, autoscaling = sandbox.aws("elbv2"), sandbox.aws("autoscaling")
    arn = elbv2.create_target_group(Name="web", Protocol="HTTP", Port=30080, VpcId=sandbox.state["vpc_id"],
                                    TargetType="instance")["TargetGroups"][0]["TargetGroupArn"]
    elbv2.modify_target_group_attributes(TargetGroupArn=arn, Attributes=[
        # the longest delay moto takes (AWS allows 3600 s), 180 s of wall time: the drained nodes are still draining out of
        # the target group when the cancel reads them (with a shorter delay they have left already, and the test proves
        # nothing)
        {"Key": "deregistration_delay.timeout_seconds", "Value": "3599"}])
    autoscaling.attach_load_balancer_target_groups(AutoScalingGroupName=GROUP, TargetGroupARNs=[arn])
    original = group_view(sandbox)

    # the upgrade, surge 2, paused by the tag while it drains its first nodes: they stop in their target group's
    # deregistration delay, drained, when the cancel starts
    watcher = Watcher(sandbox, sandbox.now(), evicted, lambda event: set_tag(sandbox, PAUSE_TAG, "true"))
    watcher.start()
    report = tmp_path / "result.json"
    try:
        rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK + ["rolling_update_max_surge=2"])
    finally:
        watcher.stop()
    assert watcher.fired is not None and rc == 0 and result_of(report)["status"] == "paused", out[-3000:]
    assert group_view(sandbox)["state_tags"]

    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="cancel.yml", report=report)
    assert rc == 0, out[-4000:]
    result = result_of(report)
    assert_cancelled(sandbox, original, result)
    # every instance the cancel terminated that was a target had left the target group first
    events = sandbox.events()
    terminated = [e for e in events if e["t"] >= since and e["kind"] == "instance.terminated"]
    assert terminated, events[-20:]
    for event in terminated:
        seen = [e for e in events if e["kind"] == "lb.target" and e["instance_id"] == event["instance_id"] and e["t"] <= event["t"]]
        left = [e for e in seen if e["state"] == "draining"]
        assert not seen or (left and event["t"] >= left[-1]["until"]), (event, seen)
    balancers = sandbox.report()["load_balancers"]
    assert balancers["targets_cut"] == 0, balancers["targets_cut_details"]
    delete_tag(sandbox, PAUSE_TAG)
    print("invariants", assert_invariants(sandbox.report(), NODES, 1))


def test_cancel_takes_the_queued_taint_off_the_groups_an_interrupted_run_never_reached(start_sandbox, tmp_path):
    groups = (GROUP, GROUP + "-2")
    sandbox = start_sandbox(nodes=4, azs=2, groups=2, speed=20, workloads=[DEMO])
    original = group_view(sandbox)
    second = group_view(sandbox, groups[1])
    node_groups = [{"name": name, "image_id": sandbox.state["amis"]["new"]} for name in groups]

    # the upgrade of both groups, killed while it drains the first group's first node, its Lease gone with it
    since = sandbox.now()
    run = sandbox.start_role_playbook(tmp_path, tmp_path / "killed.log", extra=QUICK, node_groups=node_groups)
    try:
        wait_until("the first eviction", lambda: evicted_by_us(sandbox, since), timeout=600, interval=0.2)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    client.CoordinationV1Api(sandbox.kube("test-setup")).delete_namespaced_lease("nodeops-rollout-" + GROUP, LOCK_NAMESPACE)
    queued = [name for name, marks in node_marks(sandbox).items() if "nodeops.rollout/queued" in marks]
    assert len(queued) == 4, node_marks(sandbox)
    time.sleep(1)

    report = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="cancel.yml", report=report, node_groups=node_groups)
    assert rc == 0, out[-4000:]
    statuses = {group["name"]: group["status"] for group in json.loads(report.read_text())["node_groups"]}
    assert statuses == {groups[0]: "cancelled", groups[1]: "no rollout"}, statuses
    assert_cancelled(sandbox, original, result_of(report))
    assert group_view(sandbox, groups[1]) == second
    assert lock_holder(sandbox, groups[1]) is None
    print("invariants", assert_invariants(sandbox.report(), 4, 1))
