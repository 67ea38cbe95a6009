"""What every load balancer test asserts of a rollout that replaced ``old`` instances: the invariant report is clean,
the floor held, no node was a healthy target without a Ready pod on it, no target was cut by a termination, and each old
instance left its target groups (drained by the load balancer controller for their delay) before it was terminated."""

from sandbox.drive.handle import promised_floor
from tests.integration.modules.conftest import assert_safe


def assert_left_before_terminated(sandbox, old, size=3, max_unavailable=1):
    report = sandbox.report()
    assert_safe(report)
    assert min(report["min_ready_schedulable_nodes"].values()) >= promised_floor(size, max_unavailable)
    assert report["evictions"]["max_evictions_per_pod"] <= 1
    balancers = report["load_balancers"]
    assert balancers["serving_without_ready_pods_seconds"] == 0, balancers
    assert balancers["targets_cut"] == 0, balancers["targets_cut_details"]
    events = sandbox.events()
    assert old, "no old instance to check"
    for instance_id in old:
        left = [e for e in events if e["kind"] == "lb.target" and e["instance_id"] == instance_id and e["state"] == "draining"]
        assert [e["by"] for e in left] == ["load-balancer-controller"], left
        terminated = next(e["t"] for e in events if e["kind"] == "instance.terminated" and e["instance_id"] == instance_id)
        assert terminated >= left[0]["until"], (instance_id, left, terminated)


def attach_target_group(sandbox, group, delay, name="web"):
    """An instance target group of ``delay`` seconds of deregistration delay attached to Auto Scaling ``group``; its ARN."""
    elbv2 = sandbox.aws("elbv2")
    arn = elbv2.create_target_group(Name=name, Protocol="HTTP", Port=30080, VpcId=sandbox.state["vpc_id"],
                                    TargetType="instance")["TargetGroups"][0]["TargetGroupArn"]
    elbv2.modify_target_group_attributes(TargetGroupArn=arn, Attributes=[
        {"Key": "deregistration_delay.timeout_seconds", "Value": str(delay)}])
    sandbox.aws("autoscaling").attach_load_balancer_target_groups(AutoScalingGroupName=group, TargetGroupARNs=[arn])
    return arn
