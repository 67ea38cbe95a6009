"""Plan mode never mutates: ``rolling_update_plan=true`` without ``--check`` (what an AWX survey can send) must plan
exactly as ``--check`` does - no launch template version created or pointed at, no node cordoned or drained, zero
mutating requests on AWS and Kubernetes - and still print and report the plan."""

import json
import os
import re

import pytest

from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=3, azs=3, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


def run(sandbox, tmp_path, playbook, extra, report, check=False):
    return sandbox.run_role_playbook(tmp_path, playbook=playbook, extra=extra, report=report, check=check)


def template_state(sandbox):
    """(launch template id, number of its versions, the version the group points at)."""
    asg = sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    spec = asg.get("LaunchTemplate") or asg["MixedInstancesPolicy"]["LaunchTemplate"]["LaunchTemplateSpecification"]
    versions = sandbox.aws("ec2").describe_launch_template_versions(LaunchTemplateId=spec["LaunchTemplateId"])["LaunchTemplateVersions"]
    return spec["LaunchTemplateId"], len(versions), spec.get("Version")


def node_states(sandbox):
    """Per node name: (schedulable, our taint keys)."""
    return {node.metadata.name: (not node.spec.unschedulable, sorted(t.key for t in node.spec.taints or [] if t.key.startswith("nodeops.rollout")))
            for node in sandbox.core().list_node().items}


@pytest.mark.parametrize("playbook, extra, check", [
    # what an AWX survey sends: the plan variable as a string, no --check
    ("upgrade.yml", ["rolling_update_plan=true"], False),
    # the plan playbook (check mode and the plan variable)
    ("plan.yml", [], False),
    # --check alone
    ("upgrade.yml", [], True),
], ids=["upgrade-plan-var-without-check", "plan-playbook", "upgrade-check"])
def test_plan_mode_reports_the_plan_and_makes_no_mutating_request(sandbox, tmp_path, playbook, extra, check):
    report = tmp_path / "result.json"
    template_before = template_state(sandbox)
    nodes_before = node_states(sandbox)
    assert len(nodes_before) == 3 and all(schedulable for schedulable, dummy in nodes_before.values())
    since = sandbox.now() + 0.01

    # a short drain timeout: a plan that does drain (the bug) then fails in a minute instead of hanging for 15
    rc, out = run(sandbox, tmp_path, playbook, extra + ["rolling_update_drain_timeout=1m"], report, check=check)

    assert rc == 0, out[-3000:]
    # a plan changes nothing, and says so: an AWX plan job must not show as changed
    recap = re.findall(r"^cluster\s+: ok=\d+\s+changed=(\d+)\s", out, re.MULTILINE)
    assert recap == ["0"], out[-3000:]
    # the plan is printed ...
    assert "%s: 3 outdated of 3 instances" % GROUP in out, out[-3000:]
    # ... with the surge priced (the configured one, EKS's default, 100 %) under its waves
    assert '"surge priced (extra instance-minutes' in out and "(configured" in out and "100%)" in out, out[-3000:]
    # ... and reported
    group = json.loads(report.read_text())["node_groups"][0]
    assert group["status"] == "planned", group
    assert group["plan_only"] in (True, "True", "true"), group
    assert len(group["plan"]["outdated"]) == 3 and len(group["plan"]["outdated_nodes"]) == 3, group["plan"]
    assert group["plan"]["surge_choices"][-1]["surge"] == 3 and "100%" in group["plan"]["surge_choices"][-1]["choices"]
    assert int(group["nodes_replaced"]) == 0 and group["batches"] == []
    # the target is the version that would be created, not one that was
    template_id, version_count, pointed = template_before
    assert int(group["target"]["version"]) == version_count + 1, group["target"]
    assert group["target"]["image_id"] == sandbox.state["amis"]["new"]
    # the pre-flight ran against every outdated node
    assert sorted(group["plan"]["preflight"]) == sorted(group["plan"]["outdated_nodes"])

    # nothing changed, anywhere
    mutating = [(e["kind"], e.get("action") or "%s %s/%s" % (e.get("verb"), e.get("resource"), e.get("name")), e.get("client"))
                for e in sandbox.mutating_requests(since=since) if e["t"] > since]
    assert mutating == [], mutating
    assert template_state(sandbox) == (template_id, version_count, pointed)
    assert node_states(sandbox) == nodes_before
    invariants = sandbox.report()
    assert_safe(invariants)
    assert min(invariants["min_ready_schedulable_nodes"].values()) >= 3
