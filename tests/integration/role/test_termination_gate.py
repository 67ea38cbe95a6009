"""The termination gate end to end: paths that used to terminate or scale in a node still running pods.

Each test puts Deployment pods (behind PodDisruptionBudgets) on the nodes being acted on, runs the upgrade playbook
as a user does, and asserts the invariant report: no pod killed or deleted without eviction, no budget violated, and
the group back at its original size with nothing of the rollout left on it.
"""

import json
import os

import pytest

from tests.integration.group_states import FAST, GROUP, group_of, node_of, sizes
from sandbox.drive.handle import ROOT
from tests.integration.modules.conftest import assert_safe
from tests.integration.workloads import let_go, pin_a_pod

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")
TAINT = "nodeops.rollout/outdated"


def playbook(sandbox, tmp_path, extra=(), group_item=None, kubeconfig=None):
    """Run the upgrade playbook over this cluster; returns (rc, output, the result file's JSON or None)."""
    report = tmp_path / ("result-%d.json" % len(list(tmp_path.glob("result-*.json"))))
    host_vars = {"rolling_update_k8s": {"kubeconfig": kubeconfig}} if kubeconfig else None
    rc, out = sandbox.run_role_playbook(tmp_path, extra=list(FAST) + list(extra), report=report, host_vars=host_vars,
                                        node_groups=[group_item] if group_item else None)
    return rc, out, json.loads(report.read_text()) if report.exists() else None


def workload_pods(sandbox, node_name):
    pods = sandbox.core().list_pod_for_all_namespaces(field_selector="spec.nodeName=%s" % node_name).items
    return [pod.metadata.name for pod in pods
            if not any(ref.kind == "DaemonSet" for ref in pod.metadata.owner_references or []) and pod.metadata.namespace == "shop"]


def assert_rolled_and_clean(sandbox, original, version):
    """Every instance on ``version``, the original sizes, no tag, taint, cordon or label of ours, nothing suspended."""
    group = group_of(sandbox)
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == original
    assert {instance["LaunchTemplate"]["Version"] for instance in group["Instances"]} == {str(version)}
    assert not [tag for tag in group["Tags"] if tag["Key"].startswith("nodeops.rollout/")]
    assert group["SuspendedProcesses"] == []
    nodes = sandbox.core().list_node().items
    assert nodes, "the cluster has no node to check"
    for node in nodes:
        assert not node.spec.unschedulable, node.metadata.name
        assert not [taint for taint in node.spec.taints or [] if taint.key == TAINT], node.metadata.name
        assert "nodeops.rollout/cordoned" not in (node.metadata.annotations or {}), node.metadata.name
        assert "node.kubernetes.io/exclude-from-external-load-balancers" not in (node.metadata.labels or {}), node.metadata.name


def assert_deployments_whole(sandbox):
    deployments = sandbox.apps().list_namespaced_deployment("shop").items
    assert deployments, "no Deployment in namespace shop"
    for deployment in deployments:
        assert (deployment.status.ready_replicas or 0) == deployment.spec.replicas, deployment.metadata.name


def surged_with_a_drained_victim(sandbox):
    """A rollout's start made by hand: the group pointed at the new AMI and surged by 3, and one of its 3 outdated
    nodes, which holds Deployment pods, drained. ``(the outdated instances, that one)``."""
    pointed = sandbox.run_module("launch_template_version", asg_name=GROUP, image_id=sandbox.state["amis"]["new"])
    assert pointed["rc"] == 0, pointed["output"][-2000:]
    surged = sandbox.run_module("asg_surge", name=GROUP, state="surged", surge=3, wait=True)
    assert surged["rc"] == 0, surged["output"][-2000:]
    outdated = [instance for instance in sandbox.run_module("node_group_info", name=GROUP)["node_groups"][0]["instances"]
                if instance["image_id"] == sandbox.state["amis"]["old"]]
    assert len(outdated) == 3, outdated
    victim = outdated[0]
    assert workload_pods(sandbox, victim["node"]["name"]), "the victim must hold Deployment pods for this test to mean anything"
    drained = sandbox.run_module("node_drain", nodes=[victim["node"]["name"]], module_args={"timeout": "2m"})
    assert drained["rc"] == 0, drained["output"][-2000:]
    return outdated, victim


@pytest.fixture
def sandbox(start_sandbox, request):
    handle = start_sandbox(nodes=3, azs=3, speed=20, workloads=[DEMO])
    yield handle
    # the invariant report of every case, kept for the record whether the test passed or not
    out = os.path.join(ROOT, ".build", "safety-reports")
    os.makedirs(out, exist_ok=True)
    report = handle.report()
    summary = {key: report[key] for key in ("pdb_violations", "killed_without_eviction", "deleted_without_eviction",
                                            "min_ready_schedulable_nodes", "ready_schedulable_nodes_at_start", "evictions")}
    summary["sizes"] = sizes(handle)
    with open(os.path.join(out, request.node.name + ".json"), "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=1, sort_keys=True)


def test_an_instance_that_left_by_other_means_never_turns_into_an_undrained_scale_in(sandbox, tmp_path):
    """A run killed between TerminateInstanceInAutoScalingGroup (decrementing) and its surge-owed tag write leaves the
    counter one too high, with the decrement announced. The next run used to lower desired by that counter at the end,
    and the group scaled in a new node that ran pods."""
    # a group whose minimum leaves room below its desired capacity, as most production groups have
    sandbox.aws("autoscaling").update_auto_scaling_group(AutoScalingGroupName=GROUP, MinSize=1)
    original = sizes(sandbox)
    outdated, victim = surged_with_a_drained_victim(sandbox)
    # the killed run's termination: announced in the state tag (paying), made with a decrement, the next tag write lost
    asg = sandbox.aws("autoscaling")
    progress = {tag["Key"]: tag["Value"] for tag in group_of(sandbox)["Tags"]}["nodeops.rollout/progress"]
    asg.create_or_update_tags(Tags=[{"ResourceId": GROUP, "ResourceType": "auto-scaling-group", "Key": "nodeops.rollout/progress",
                                     "Value": progress + " paying=" + victim["instance_id"], "PropagateAtLaunch": False}])
    asg.terminate_instance_in_auto_scaling_group(InstanceId=victim["instance_id"], ShouldDecrementDesiredCapacity=True)
    rc, out, result = playbook(sandbox, tmp_path)
    assert rc == 0, out[-4000:]
    assert result["node_groups"][0]["status"] == "replaced"
    report = sandbox.report()
    assert_safe(report)
    assert_rolled_and_clean(sandbox, original, 2)
    assert_deployments_whole(sandbox)
    assert report["evictions"]["max_evictions_per_pod"] <= 1


def test_surge_left_at_the_end_is_given_back_by_the_steps_out_of_its_target_group_first(sandbox, tmp_path):
    """An outdated instance that left without a decrement (a Spot interruption) leaves surge owed once every outdated
    instance is replaced. The scale down gives it back in the upgrade's steps, as a cancel does: the node it drains is
    out of its target group before its instance is terminated, the floor holds, and the result counts only the nodes
    replaced. It used to drain a named node in one go and terminate it while its target group still sent it traffic."""
    original = sizes(sandbox)
    outdated, victim = surged_with_a_drained_victim(sandbox)
    asg = sandbox.aws("autoscaling")
    asg.terminate_instance_in_auto_scaling_group(InstanceId=victim["instance_id"], ShouldDecrementDesiredCapacity=False)
    # every instance left is a target, with a deregistration delay long enough to be seen (15 s of wall time)
    elbv2 = sandbox.aws("elbv2")
    arn = elbv2.create_target_group(Name="web", Protocol="HTTP", Port=30080, VpcId=sandbox.state["vpc_id"],
                                    TargetType="instance")["TargetGroups"][0]["TargetGroupArn"]
    elbv2.modify_target_group_attributes(TargetGroupArn=arn, Attributes=[{"Key": "deregistration_delay.timeout_seconds", "Value": "300"}])
    asg.attach_load_balancer_target_groups(AutoScalingGroupName=GROUP, TargetGroupARNs=[arn])

    since = sandbox.now()
    rc, out, result = playbook(sandbox, tmp_path)
    assert rc == 0, out[-4000:]
    group = result["node_groups"][0]
    assert group["status"] == "replaced" and group["nodes_replaced"] == len(outdated) - 1, group
    events = sandbox.events()
    terminated = [e for e in events if e["t"] >= since and e["kind"] == "instance.terminated"]
    assert len(terminated) >= len(outdated), terminated
    for event in terminated:
        seen = [e for e in events if e["kind"] == "lb.target" and e["instance_id"] == event["instance_id"] and e["t"] <= event["t"]]
        left = [e for e in seen if e["state"] == "draining"]
        assert not seen or (left and event["t"] >= left[-1]["until"]), (event, seen)
    report = sandbox.report()
    assert report["load_balancers"]["targets_cut"] == 0, report["load_balancers"]["targets_cut_details"]
    assert_safe(report)
    assert report["min_ready_schedulable_nodes"][GROUP] >= original[2] - 1
    assert_rolled_and_clean(sandbox, original, 2)
    assert_deployments_whole(sandbox)
    assert "Scale down | %s | step" % GROUP in out, out[-4000:]


def test_instances_of_another_cluster_are_never_terminated_and_the_mismatch_is_named(sandbox, start_sandbox, tmp_path):
    """A kubeconfig that points at another cluster: no node matches, so the rollout used to "drain 0 nodes" and then
    terminate instances whose pods were never evicted."""
    other = start_sandbox(nodes=2, azs=2, speed=20)
    assert any(workload_pods(sandbox, node.metadata.name) for node in sandbox.core().list_node().items)
    since = sandbox.now()
    rc, out, _result = playbook(sandbox, tmp_path, kubeconfig=other.state["kubeconfig"])
    assert rc != 0
    assert "is a node of this Kubernetes cluster" in out and "none of the 3 instances in service" in out
    assert all(instance["InstanceId"] in out for instance in group_of(sandbox)["Instances"])
    assert sandbox.mutating_requests(since=since) == []
    assert other.mutating_requests(since=0.0) == []
    assert_safe(sandbox.report())
    assert sizes(sandbox) == (3, 3, 3)


def test_a_rerun_after_a_restore_that_was_killed_does_not_surge_again(sandbox, tmp_path):
    """The tags a restore leaves when it is killed after its resize: the rerun used to surge again, and its restore then
    scaled in without a drain."""
    original = sizes(sandbox)
    rc, out, _result = playbook(sandbox, tmp_path)
    assert rc == 0, out[-4000:]
    group = group_of(sandbox)
    template = group["LaunchTemplate"]["LaunchTemplateId"]
    tags = {"rollout-id": "r-killed", "method": "scale", "original-min": "3", "original-max": "3", "original-desired": "3",
            "surge": "3", "surge-owed": "3", "surged-max": "6", "target-launch-template": template, "target-version": "2",
            "suspended-processes": "", "started-at": "2026-11-23T00:00:00Z", "restore-sizes": "3,3,3"}
    sandbox.aws("autoscaling").create_or_update_tags(Tags=[
        {"ResourceId": GROUP, "ResourceType": "auto-scaling-group", "Key": "nodeops.rollout/" + key, "Value": value,
         "PropagateAtLaunch": False} for key, value in tags.items()])
    since = sandbox.now()
    rc, out, result = playbook(sandbox, tmp_path)
    assert rc == 0, out[-4000:]
    history = [entry for entry in sandbox.report()["asg_size_history"][GROUP] if entry["t"] >= since]
    assert all(entry["desired"] <= 3 and entry["max"] <= 3 for entry in history), history
    assert result["node_groups"][0]["status"] == "replaced"
    assert_safe(sandbox.report())
    assert_rolled_and_clean(sandbox, original, 2)


def test_a_target_changed_after_a_failed_batch_gives_back_the_nodes_it_had_cordoned(sandbox, tmp_path):
    """Run 1 stops on a budget that allows no eviction while it runs; run 2 rolls back to version 1, so the node run 1
    cordoned and drained is up to date again. It used to stay cordoned (counted as capacity), fail validation, and keep
    our marks."""
    pin_a_pod(sandbox, for_now=True)
    original = sizes(sandbox)
    rc, out, _result = playbook(sandbox, tmp_path, extra=["rolling_update_drain_timeout=20s", "rolling_update_restart_single_replica=false",
                                                          "rolling_update_max_unavailable=3"])
    assert rc != 0 and "pinned" in out, out[-4000:]
    cordoned = [node.metadata.name for node in sandbox.core().list_node().items if node.spec.unschedulable]
    assert cordoned, "run 1 must leave a cordoned node behind for this test to mean anything"
    let_go(sandbox, "shop", "pinned")
    rc, out, result = playbook(sandbox, tmp_path, group_item={"name": GROUP, "launch_template_version": 1})
    assert rc == 0, out[-4000:]
    assert result["node_groups"][0]["status"] == "replaced"
    assert_rolled_and_clean(sandbox, original, 1)
    assert_deployments_whole(sandbox)
    assert_safe(sandbox.report())


def test_the_start_of_a_run_names_no_undrained_instance_for_termination(sandbox):
    """instance_terminate itself, as any caller would use it: a node with Deployment pods is refused, nothing changes."""
    instance = group_of(sandbox)["Instances"][0]["InstanceId"]
    node = node_of(sandbox, instance)
    assert workload_pods(sandbox, node.metadata.name)
    since = sandbox.now()
    result = sandbox.run_module("instance_terminate", asg_name=GROUP, instance_ids=[instance])
    assert result["rc"] != 0 and "is not cordoned" in result["msg"] and "still runs" in result["msg"]
    assert sandbox.mutating_requests(since=since) == []
    assert_safe(sandbox.report())
