"""The post-drain delay waits for what can be seen, and nothing blind.

A Service of type LoadBalancer routes through a Network Load Balancer that the cloud provider's service controller
registers every node in (the sandbox plays it: sandbox/loadbalancer.py). With ``rolling_update_post_drain_delay`` at its
default, the plan finds the load balancer by the DNS name in the Service's status and watches its target group; each
drained node is terminated once its instance has left it, with no fixed delay, and no node is a target without a Ready
pod nor cut by a termination. A Service whose load balancer cannot be read (known by its IP address only) makes the
plan fall back to a fixed 60 s delay, and name it - with zero mutating requests. A TargetGroupBinding of the AWS Load
Balancer Controller (its CRD installed on the reference backend; the embedded one serves the resource) adds its target
group to what the plan watches.
"""

import json
import os
import time

import pytest

from sandbox.drive.handle import wait_until
from tests.integration.load_balancers import assert_left_before_terminated

pytestmark = pytest.mark.reference

GROUP = "sandbox-nodes"
SPEED = 20
DELAY = 600   # simulated seconds of deregistration delay: 30 s of wall time
FAST = ["rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"]
ATTRIBUTES = "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=3, azs=3, speed=SPEED, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


def member_ids(sandbox):
    group = sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    return sorted(instance["InstanceId"] for instance in group["Instances"])


def balancer_targets(sandbox, hostname):
    """{instance id: state} of the target group behind the load balancer named ``hostname``."""
    elbv2 = sandbox.aws("elbv2")
    balancer = next(lb for lb in elbv2.describe_load_balancers()["LoadBalancers"] if lb["DNSName"] == hostname)
    (group,) = elbv2.describe_target_groups(LoadBalancerArn=balancer["LoadBalancerArn"])["TargetGroups"]
    health = elbv2.describe_target_health(TargetGroupArn=group["TargetGroupArn"])["TargetHealthDescriptions"]
    return {entry["Target"]["Id"]: entry["TargetHealth"]["State"] for entry in health}


def ingress(sandbox, name):
    status = sandbox.core().read_namespaced_service(name, "default").status
    return status.load_balancer.ingress if status and status.load_balancer else None


def service_body(name, **spec):
    return {"metadata": {"name": name, "annotations": {ATTRIBUTES: "deregistration_delay.timeout_seconds=%d" % DELAY}},
            "spec": dict({"type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}, **spec)}


def test_a_load_balancer_that_cannot_be_read_makes_the_plan_wait_a_fixed_delay_and_name_it(sandbox, tmp_path):
    api = sandbox.core()
    # another controller's load balancer (a class the sandbox does not serve), known by its IP address only
    api.create_namespaced_service("default", service_body("metal", loadBalancerClass="example.com/metal"))
    api.patch_namespaced_service_status("metal", "default", {"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}]}}})
    since = sandbox.now() + 0.01
    report = tmp_path / "plan.json"
    try:
        rc, out = sandbox.run_role_playbook(tmp_path, extra=FAST + ["rolling_update_plan=true"], report=report)
    finally:
        api.delete_namespaced_service("metal", "default")
    assert rc == 0, out[-4000:]
    assert "post-drain delay: 1m 00s - a load balancer that routes to the nodes cannot be read: service default/metal at " \
           "203.0.113.10" in out, out[-4000:]
    plan = json.loads(report.read_text())["node_groups"][0]["plan"]
    assert plan["timings"]["post_drain_delay"] == 60, plan["timings"]
    assert [(item["service"], item["address"]) for item in plan["post_drain_delay"]["unseen"]] == [("default/metal", "203.0.113.10")]
    assert sandbox.mutating_requests(since=since) == []


TGB_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "targetgroupbindings.elbv2.k8s.aws"},
    "spec": {"group": "elbv2.k8s.aws", "scope": "Namespaced",
             "names": {"plural": "targetgroupbindings", "singular": "targetgroupbinding", "kind": "TargetGroupBinding"},
             "versions": [{"name": "v1beta1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def serve_target_group_bindings(sandbox):
    """Install the TargetGroupBinding CRD on the reference backend, as the AWS Load Balancer Controller's chart does."""
    if sandbox.state.get("kube") != "reference":
        return
    from kubernetes import client  # pylint: disable=import-outside-toplevel
    client.ApiextensionsV1Api(sandbox.kube()).create_custom_resource_definition(TGB_CRD)
    custom = client.CustomObjectsApi(sandbox.kube())
    deadline = time.monotonic() + 30
    while True:
        try:
            custom.list_cluster_custom_object("elbv2.k8s.aws", "v1beta1", "targetgroupbindings")
            return
        except client.exceptions.ApiException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_a_target_group_binding_s_target_group_is_watched(sandbox, tmp_path):
    from kubernetes import client  # pylint: disable=import-outside-toplevel
    serve_target_group_bindings(sandbox)
    elbv2 = sandbox.aws("elbv2")
    arn = elbv2.create_target_group(Name="k8s-shop-web", Protocol="TCP", Port=30090, VpcId=sandbox.state["vpc_id"],
                                    TargetType="instance")["TargetGroups"][0]["TargetGroupArn"]
    custom = client.CustomObjectsApi(sandbox.kube())
    binding = {"apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding", "metadata": {"name": "web-tgb"},
               "spec": {"targetGroupARN": arn, "targetType": "instance", "serviceRef": {"name": "web", "port": 80}}}
    custom.create_namespaced_custom_object("elbv2.k8s.aws", "v1beta1", "default", "targetgroupbindings", binding)
    report = tmp_path / "plan.json"
    try:
        rc, out = sandbox.run_role_playbook(tmp_path, extra=FAST + ["rolling_update_plan=true"], report=report)
    finally:
        custom.delete_namespaced_custom_object("elbv2.k8s.aws", "v1beta1", "default", "targetgroupbindings", "web-tgb")
        elbv2.delete_target_group(TargetGroupArn=arn)
    assert rc == 0, out[-4000:]
    plan = json.loads(report.read_text())["node_groups"][0]["plan"]
    assert [(tg["name"], tg["sources"], tg["waited_for"]) for tg in plan["target_groups"]] == [
        ("k8s-shop-web", ["targetgroupbinding default/web-tgb"], True)]
    assert plan["timings"]["post_drain_delay"] == 0
    assert "k8s-shop-web (instance targets of targetgroupbinding default/web-tgb" in out, out[-4000:]


def test_drained_nodes_wait_for_the_service_s_target_group_and_no_fixed_delay(sandbox, tmp_path):
    sandbox.core().create_namespaced_service("default", service_body("web"))
    wait_until("the Service's load balancer", lambda: ingress(sandbox, "web"), timeout=30)
    hostname = ingress(sandbox, "web")[0].hostname
    old = member_ids(sandbox)
    wait_until("every node a target", lambda: balancer_targets(sandbox, hostname) == {i: "healthy" for i in old}, timeout=30)

    report_file = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(tmp_path, report=report_file, extra=FAST)
    assert rc == 0, out[-4000:]
    result = json.loads(report_file.read_text())["node_groups"][0]
    assert result["status"] == "replaced" and result["nodes_replaced"] == 3, result
    # the plan found the Service's target group, and no fixed delay
    assert [(tg["sources"], tg["deregistration_delay"], tg["waited_for"]) for tg in result["plan"]["target_groups"]] == [
        (["service default/web"], DELAY, True)]
    assert result["plan"]["timings"]["post_drain_delay"] == 0 and result["plan"]["post_drain_delay"]["unseen"] == []
    # each old instance waited for the Service's target group, never timed out
    waits = {wait["instance_id"]: wait for wait in result["termination_waits"]}
    assert sorted(waits) == old, result["termination_waits"]
    for wait in waits.values():
        assert wait["target_groups"] == [result["plan"]["target_groups"][0]["name"]] and not wait["timed_out"], wait

    assert_left_before_terminated(sandbox, old)
    # the new nodes serve in its place, registered by the service controller
    new = member_ids(sandbox)
    wait_until("the new nodes to be the targets", lambda: balancer_targets(sandbox, hostname) == {i: "healthy" for i in new},
               timeout=60)
