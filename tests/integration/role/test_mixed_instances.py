"""A group with a MixedInstancesPolicy whose overrides carry launch templates of their own, and workloads whose pods
never turn Ready under PodDisruptionBudgets, end to end (3 nodes, the demo shop). The sandbox launches the first
override's instance type from the override's launch template, as AWS does.

- An override that launches from another launch template than the group's: the rollout refuses before any change,
  naming the override (its instances would stay outdated for ever, and that template's target cannot be told).
- The plan's drain pre-flight counts the unhealthy pods as the API server's eviction handler does: under a budget with
  ``unhealthyPodEvictionPolicy: AlwaysAllow`` they may go whatever the budget says; under ``IfHealthyBudget`` (the
  default) a budget that has fewer healthy pods than it wants holds them, a blocker naming the pods and the budget.
- An override that names the group's own template at the old version: it moves to the target with the group's
  template, and every instance ends on the target version, of the override's instance type. The unhealthy pods, both
  budgets AlwaysAllow by then, are evicted without waiting on them.

The invariant report holds over the rollout.
"""

import os

import pytest

from tests.integration.group_states import GROUP, assert_invariants, assert_nothing_of_ours_left, group_of, playbook, sizes
from sandbox.drive.handle import wait_until

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")
UNHEALTHY = """
apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: %(name)s, namespace: shop}
    spec:
      replicas: 3
      selector: {matchLabels: {app: %(name)s}}
      template:
        metadata:
          labels: {app: %(name)s}
          annotations: {sandbox.nodeops.io/ready-seconds: never}
        spec:
          containers: [{name: main, image: registry.example/%(name)s:1}]
  - apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {name: %(name)s, namespace: shop}
    spec:
      minAvailable: 2
      unhealthyPodEvictionPolicy: %(policy)s
      selector: {matchLabels: {app: %(name)s}}
"""


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    handle = start_sandbox(nodes=3, azs=3, speed=20, workloads=[DEMO])
    # three pods that never turn Ready under each policy: each budget wants two healthy pods and has none
    handle.apply(UNHEALTHY % {"name": "lenient", "policy": "AlwaysAllow"})
    handle.apply(UNHEALTHY % {"name": "strict", "policy": "IfHealthyBudget"})
    wait_until("the unhealthy pods to run", lambda: len([pod for pod in handle.core().list_namespaced_pod("shop").items
                                                        if pod.metadata.name.startswith(("lenient", "strict"))
                                                        and pod.status.phase == "Running"]) == 6)
    return handle


def mixed(sandbox, override_template):
    """Give the group a MixedInstancesPolicy on its launch template, version 1, whose first override launches m6i.large
    from ``override_template`` (None: the group's own), version 1. Returns the group's launch template id."""
    template = sandbox.aws("ec2").describe_launch_templates(LaunchTemplateNames=[GROUP])["LaunchTemplates"][0]["LaunchTemplateId"]
    own = {"LaunchTemplateId": override_template or template, "Version": "1"}
    sandbox.aws("autoscaling").update_auto_scaling_group(AutoScalingGroupName=GROUP, MixedInstancesPolicy={"LaunchTemplate": {
        "LaunchTemplateSpecification": {"LaunchTemplateId": template, "Version": "1"},
        "Overrides": [{"InstanceType": "m6i.large", "LaunchTemplateSpecification": own}, {"InstanceType": "m5.large"}]}})
    return template


def test_an_override_of_another_template_is_refused_before_any_change_naming_it(sandbox, tmp_path):
    other = sandbox.aws("ec2").create_launch_template(LaunchTemplateName="sandbox-nodes-arm", LaunchTemplateData={
        "ImageId": sandbox.state["amis"]["old"], "InstanceType": "m6g.large"})["LaunchTemplate"]["LaunchTemplateId"]
    template = mixed(sandbox, other)
    since = sandbox.now()
    rc, out, _result = playbook(sandbox, tmp_path, "new")
    assert rc != 0
    assert ("MixedInstancesPolicy override for instance type m6i.large launches from launch template %s version 1, not the "
            "group's launch template %s (sandbox-nodes)" % (other, template)) in out, out[-3000:]
    assert sandbox.mutating_requests(since=since) == []


def test_the_preflight_lets_unhealthy_pods_go_under_always_allow_and_holds_them_under_if_healthy_budget(sandbox, tmp_path):
    mixed(sandbox, None)
    rc, out, result = playbook(sandbox, tmp_path, "new", check=True, playbook_file="plan.yml")
    assert rc == 0, out[-3000:]
    blockers = result["node_groups"][0]["plan"]["blockers"]
    assert sorted(blocker["pod"].split("/")[1].split("-")[0] for blocker in blockers) == ["strict", "strict", "strict"], blockers
    assert all(blocker["kind"] == "pdb_zero" and blocker["pdb"] == "shop/strict" for blocker in blockers)
    assert "PodDisruptionBudget shop/strict allows 0 disruptions: it needs 2 healthy pods and has 0" in out
    # the owner lets its unhealthy pods go too, and the rollout can run
    sandbox.policy().patch_namespaced_pod_disruption_budget("strict", "shop", {"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}})


def test_an_override_of_the_groups_own_template_moves_to_the_target_with_it(sandbox, tmp_path):
    unhealthy = {pod.metadata.name for pod in sandbox.core().list_namespaced_pod("shop").items
                 if pod.metadata.name.startswith(("lenient", "strict"))}
    rc, out, result = playbook(sandbox, tmp_path, "new")
    assert rc == 0, out[-4000:]
    assert result["node_groups"][0]["status"] == "replaced"
    policy = group_of(sandbox)["MixedInstancesPolicy"]["LaunchTemplate"]
    assert policy["LaunchTemplateSpecification"]["Version"] == "2"
    assert policy["Overrides"][0]["LaunchTemplateSpecification"]["Version"] == "2"
    instances = group_of(sandbox)["Instances"]
    assert {(instance["InstanceType"], instance["LaunchTemplate"]["Version"]) for instance in instances} == {("m6i.large", "2")}
    assert sizes(sandbox) == (3, 3, 3)
    # the pods that never turned Ready were evicted (their budgets let them go), not waited on
    evicted = {e["pod"].split("/")[1] for e in sandbox.events() if e["kind"] == "pod.terminating" and e.get("how") == "evicted"}
    assert unhealthy <= evicted, unhealthy - evicted
    assert_nothing_of_ours_left(sandbox)
    assert_invariants(sandbox, 3, name="mixed-instances-unhealthy-budgets")
