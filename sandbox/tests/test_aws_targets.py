"""Target groups of an Auto Scaling group in the sandbox behave as on AWS, as a boto3 user observes them.

One AwsSandbox serves the module (100 simulated seconds per wall second, boot 60 s); each test makes its own group
and target group.
"""

import time

import pytest

from sandbox.aws import AwsSandbox
from sandbox.clock import Clock
from sandbox.events import EventLog

SPEED = 100.0
BOOT = 60.0
AZS = ("us-east-1a", "us-east-1b", "us-east-1c")


@pytest.fixture(scope="module")
def aws(tmp_path_factory):
    clock = Clock(speed=SPEED)
    sandbox = AwsSandbox(clock, EventLog(clock), str(tmp_path_factory.mktemp("aws")), boot_seconds=BOOT)
    sandbox.start()
    try:
        estate = sandbox.provision(nodes=0, azs=3)
        yield sandbox, estate
    finally:
        sandbox.stop()


def client(sandbox, service):
    return sandbox.client(service, user_agent=None, user_agent_extra="nodeops.rollout/0.1.0 test_aws_targets")


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def make_group(aws, name, size, target_groups=()):
    sandbox, estate = aws
    template = client(sandbox, "ec2").create_launch_template(
        LaunchTemplateName=name, LaunchTemplateData={"ImageId": estate["amis"]["old"], "InstanceType": "m5.large"},
    )["LaunchTemplate"]
    client(sandbox, "autoscaling").create_auto_scaling_group(
        AutoScalingGroupName=name, MinSize=0, MaxSize=size + 3, DesiredCapacity=size,
        LaunchTemplate={"LaunchTemplateId": template["LaunchTemplateId"], "Version": "1"},
        VPCZoneIdentifier=",".join(estate["subnets"][az] for az in AZS), TargetGroupARNs=list(target_groups))


def make_target_group(aws, name):
    sandbox, estate = aws
    return client(sandbox, "elbv2").create_target_group(
        Name=name, Protocol="HTTP", Port=30080, VpcId=estate["vpc_id"], TargetType="instance")["TargetGroups"][0]["TargetGroupArn"]


def lifecycle(aws, name):
    group = client(aws[0], "autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]
    return {i["InstanceId"]: i["LifecycleState"] for i in group["Instances"]}


def in_service(aws, name, count):
    """The group's instance ids once ``count`` of them are InService."""
    ids = wait_for(lambda: [i for i, v in lifecycle(aws, name).items() if v == "InService"] if
                   sum(v == "InService" for v in lifecycle(aws, name).values()) == count else None)
    assert ids, lifecycle(aws, name)
    return sorted(ids)


def targets(aws, arn):
    """{instance id: state} of the target group's targets, as DescribeTargetHealth lists them."""
    health = client(aws[0], "elbv2").describe_target_health(TargetGroupArn=arn)["TargetHealthDescriptions"]
    return {t["Target"]["Id"]: t["TargetHealth"]["State"] for t in health}


def test_a_booted_group_attaches_a_target_group_and_registers_its_instances(aws):
    make_group(aws, "tg-attach", 3)
    ids = in_service(aws, "tg-attach", 3)
    arn = make_target_group(aws, "tg-attach")
    client(aws[0], "autoscaling").attach_load_balancer_target_groups(AutoScalingGroupName="tg-attach", TargetGroupARNs=[arn])
    assert targets(aws, arn) == {i: "healthy" for i in ids}


def test_a_booting_instance_is_registered_once_it_is_in_service(aws):
    arn = make_target_group(aws, "tg-boot")
    make_group(aws, "tg-boot", 2, target_groups=[arn])
    first = in_service(aws, "tg-boot", 2)
    assert targets(aws, arn) == {i: "healthy" for i in first}
    # a scale-up while the group has a target group: the new instances boot, and only then become targets
    client(aws[0], "autoscaling").set_desired_capacity(AutoScalingGroupName="tg-boot", DesiredCapacity=4)
    assert sorted(v for v in lifecycle(aws, "tg-boot").values()) == ["InService", "InService", "Pending", "Pending"]
    assert set(targets(aws, arn)) == set(first)
    ids = in_service(aws, "tg-boot", 4)
    assert wait_for(lambda: targets(aws, arn) == {i: "healthy" for i in ids}), targets(aws, arn)


def test_standby_leaves_the_target_groups_and_comes_back(aws):
    arn = make_target_group(aws, "tg-standby")
    make_group(aws, "tg-standby", 3, target_groups=[arn])
    ids = in_service(aws, "tg-standby", 3)
    autoscaling = client(aws[0], "autoscaling")
    # without a decrement the group launches a replacement, which boots while the instance is in Standby
    autoscaling.enter_standby(AutoScalingGroupName="tg-standby", InstanceIds=[ids[0]], ShouldDecrementDesiredCapacity=False)
    states = lifecycle(aws, "tg-standby")
    assert states[ids[0]] == "Standby" and sorted(states.values()).count("Pending") == 1
    assert targets(aws, arn).get(ids[0]) != "healthy"
    replacement = next(i for i, v in states.items() if v == "Pending")
    assert wait_for(lambda: targets(aws, arn).get(replacement) == "healthy"), targets(aws, arn)
    autoscaling.exit_standby(AutoScalingGroupName="tg-standby", InstanceIds=[ids[0]])
    assert targets(aws, arn)[ids[0]] == "healthy"


def test_a_target_deregistered_by_someone_else_stays_out_when_the_group_resizes(aws):
    arn = make_target_group(aws, "tg-others")
    make_group(aws, "tg-others", 2, target_groups=[arn])
    ids = in_service(aws, "tg-others", 2)
    client(aws[0], "elbv2").deregister_targets(TargetGroupArn=arn, Targets=[{"Id": ids[0]}])
    client(aws[0], "autoscaling").set_desired_capacity(AutoScalingGroupName="tg-others", DesiredCapacity=3)
    everyone = in_service(aws, "tg-others", 3)
    assert wait_for(lambda: all(targets(aws, arn).get(i) == "healthy" for i in everyone if i != ids[0]))
    assert targets(aws, arn).get(ids[0]) != "healthy"


def test_detaching_instances_or_the_target_group_deregisters(aws):
    arn = make_target_group(aws, "tg-detach")
    make_group(aws, "tg-detach", 3, target_groups=[arn])
    ids = in_service(aws, "tg-detach", 3)
    autoscaling = client(aws[0], "autoscaling")
    autoscaling.detach_instances(AutoScalingGroupName="tg-detach", InstanceIds=[ids[0]], ShouldDecrementDesiredCapacity=True)
    assert targets(aws, arn).get(ids[0]) != "healthy"
    autoscaling.detach_load_balancer_target_groups(AutoScalingGroupName="tg-detach", TargetGroupARNs=[arn])
    assert not [i for i, state in targets(aws, arn).items() if state == "healthy"]
    assert autoscaling.describe_load_balancer_target_groups(AutoScalingGroupName="tg-detach")["LoadBalancerTargetGroups"] == []


def set_delay(aws, arn, seconds):
    client(aws[0], "elbv2").modify_target_group_attributes(
        TargetGroupArn=arn, Attributes=[{"Key": "deregistration_delay.timeout_seconds", "Value": str(seconds)}])


def health_by_id(aws, arn, instance_id):
    health = client(aws[0], "elbv2").describe_target_health(TargetGroupArn=arn, Targets=[{"Id": instance_id}])
    return health["TargetHealthDescriptions"][0]["TargetHealth"]


def test_a_deregistered_target_drains_for_the_delay_then_leaves(aws):
    arn = make_target_group(aws, "tg-delay")
    # simulated seconds: 5 s of wall time, so that a busy machine still reads the target while it drains
    set_delay(aws, arn, 500)
    make_group(aws, "tg-delay", 2, target_groups=[arn])
    ids = in_service(aws, "tg-delay", 2)
    elbv2 = client(aws[0], "elbv2")
    elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": ids[0]}])
    assert targets(aws, arn) == {ids[0]: "draining", ids[1]: "healthy"}
    assert health_by_id(aws, arn, ids[0])["Reason"] == "Target.DeregistrationInProgress"
    assert wait_for(lambda: ids[0] not in targets(aws, arn), timeout=60.0), targets(aws, arn)
    assert health_by_id(aws, arn, ids[0]) == {"State": "unused", "Reason": "Target.NotRegistered",
                                              "Description": "Target is not registered to the target group"}
    events = aws[0].events.events("lb.target")
    drained = [e for e in events if e["instance_id"] == ids[0] and e["state"] == "draining"]
    assert len(drained) == 1 and drained[0]["by"] == "api" and drained[0]["until"] - drained[0]["t"] == pytest.approx(500, abs=0.01)
    # deregistering what is not registered succeeds and changes nothing, as on AWS
    elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": ids[0]}])
    assert ids[0] not in targets(aws, arn)
    # registering a draining target makes it a target again
    elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": ids[1]}])
    elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": ids[1]}])
    assert targets(aws, arn) == {ids[1]: "healthy"}


def test_a_terminated_target_drains_and_the_cut_is_logged(aws):
    arn = make_target_group(aws, "tg-cut")
    set_delay(aws, arn, 50)
    make_group(aws, "tg-cut", 2, target_groups=[arn])
    ids = in_service(aws, "tg-cut", 2)
    client(aws[0], "autoscaling").terminate_instance_in_auto_scaling_group(InstanceId=ids[0], ShouldDecrementDesiredCapacity=True)
    assert targets(aws, arn)[ids[0]] == "draining"
    cut = [e for e in aws[0].events.events("lb.target") if e["instance_id"] == ids[0] and e["by"] == "terminated"]
    assert [(e["state"], e["was"]) for e in cut] == [("draining", "healthy")]
    assert wait_for(lambda: ids[0] not in targets(aws, arn)), targets(aws, arn)


def test_the_load_balancer_controller_takes_excluded_instances_out_and_back(aws):
    arn = make_target_group(aws, "tg-exclude")
    set_delay(aws, arn, 0)
    make_group(aws, "tg-exclude", 3, target_groups=[arn])
    ids = in_service(aws, "tg-exclude", 3)
    aws[0].exclude_targets(excluded=[ids[0]], included=ids[1:])
    assert targets(aws, arn) == {ids[1]: "healthy", ids[2]: "healthy"}
    out = [e for e in aws[0].events.events("lb.target") if e["instance_id"] == ids[0]]
    assert (out[-1]["state"], out[-1]["by"]) == ("unused", "load-balancer-controller")
    # a target somebody else deregistered is not the controller's to register again
    client(aws[0], "elbv2").deregister_targets(TargetGroupArn=arn, Targets=[{"Id": ids[1]}])
    aws[0].exclude_targets(excluded=[], included=ids)
    assert targets(aws, arn) == {ids[0]: "healthy", ids[2]: "healthy"}


def test_the_service_controller_makes_a_load_balancer_and_keeps_the_included_nodes_its_targets(aws):
    sandbox, estate = aws
    hostname, arn = sandbox.create_balancer("svc-shop-web", estate["vpc_id"], list(estate["subnets"].values()), 30080, 0)
    balancer = client(sandbox, "elbv2").describe_load_balancers()["LoadBalancers"]
    assert hostname in [item["DNSName"] for item in balancer]
    make_group(aws, "tg-serve", 3)
    ids = in_service(aws, "tg-serve", 3)
    wait_for(lambda: all(client(sandbox, "ec2").describe_instances(InstanceIds=ids)["Reservations"]))
    # only the included ones, and each once
    sandbox.serve_nodes([arn], ids[:2])
    sandbox.serve_nodes([arn], ids[:2])
    assert targets(aws, arn) == {ids[0]: "healthy", ids[1]: "healthy"}
    served = [e for e in sandbox.events.events("lb.target") if e["target_group"] == "svc-shop-web"]
    assert [(e["instance_id"], e["by"]) for e in served] == [(ids[0], "service-controller"), (ids[1], "service-controller")]
    # an excluded node leaves it, as from any instance target group
    sandbox.exclude_targets(excluded=[ids[0]], included=ids[1:])
    sandbox.serve_nodes([arn], ids[1:])
    assert targets(aws, arn) == {ids[1]: "healthy", ids[2]: "healthy"}


def test_the_service_controller_serves_services_of_type_load_balancer_without_a_class():
    from sandbox.loadbalancer import DEFAULT_DELAY, deregistration_delay, served_services  # pylint: disable=import-outside-toplevel

    def service(name, kind="LoadBalancer", annotation=None, **spec):
        annotations = {"service.beta.kubernetes.io/aws-load-balancer-target-group-attributes": annotation} if annotation else {}
        return {"metadata": {"name": name, "namespace": "shop", "annotations": annotations}, "spec": dict(spec, type=kind)}

    services = [service("web", annotation="stickiness.enabled=true, deregistration_delay.timeout_seconds=600"),
                service("metal", loadBalancerClass="example.com/metal"), service("db", kind="ClusterIP")]
    assert sorted(served_services(services)) == ["shop/web"]
    assert deregistration_delay(services[0]) == 600 and deregistration_delay(services[2]) == DEFAULT_DELAY
