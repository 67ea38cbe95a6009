"""What the end-to-end tests of the group states production has share: the upgrade playbook run as a user runs it, the
group read back, and the invariant report checked and recorded."""

import json
import os

from sandbox.drive.handle import ROOT, promised_floor
from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"
PREFIX = "nodeops.rollout/"
FAST = ["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s",
        "rolling_update_drain_timeout=2m", "rolling_update_node_ready_timeout=5m"]


def playbook(sandbox, tmp_path, image, extra=(), check=False, playbook_file="upgrade.yml"):
    """Run a playbook of the collection over this cluster to ``image`` (``old`` or ``new``); ``(rc, output, result)``, the
    result file's JSON or None."""
    report = tmp_path / ("result-%d.json" % len(list(tmp_path.glob("result-*.json"))))
    rc, out = sandbox.run_role_playbook(tmp_path, playbook=playbook_file, extra=list(FAST) + list(extra), report=report,
                                        check=check, node_groups=[{"name": GROUP, "image_id": sandbox.state["amis"][image]}])
    return rc, out, json.loads(report.read_text()) if report.exists() else None


def group_of(sandbox):
    return sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]


def sizes(sandbox):
    group = group_of(sandbox)
    return group["MinSize"], group["MaxSize"], group["DesiredCapacity"]


def instances_by_state(sandbox):
    """``{lifecycle state: [(instance id, launch template version)]}`` of the group."""
    found = {}
    for instance in group_of(sandbox)["Instances"]:
        found.setdefault(instance["LifecycleState"], []).append((instance["InstanceId"], instance["LaunchTemplate"]["Version"]))
    return found


def node_of(sandbox, instance_id):
    for node in sandbox.core().list_node().items:
        if (node.spec.provider_id or "").endswith("/" + instance_id):
            return node
    return None


def assert_nothing_of_ours_left(sandbox):
    """No state tag, suspended process, taint, cordon, label or annotation of the rollout on the group or its nodes."""
    group = group_of(sandbox)
    assert not [tag["Key"] for tag in group["Tags"] if tag["Key"].startswith(PREFIX)]
    assert group["SuspendedProcesses"] == []
    nodes = sandbox.core().list_node().items
    assert nodes, "the cluster has no node to check"
    for node in nodes:
        assert not node.spec.unschedulable, node.metadata.name
        assert not [taint.key for taint in node.spec.taints or [] if taint.key.startswith(PREFIX)], node.metadata.name
        assert not [key for key in node.metadata.annotations or {} if key.startswith(PREFIX)], node.metadata.name
        assert "node.kubernetes.io/exclude-from-external-load-balancers" not in (node.metadata.labels or {}), node.metadata.name


def assert_invariants(sandbox, size, max_unavailable=1, name=None):
    """The invariant report: no budget violated, no pod ended without eviction, the group's Ready schedulable nodes never
    below ``size - max_unavailable``, each pod moved at most once, no Deployment without a Ready pod. Written to
    ``.build/safety-reports/<name>.json`` when ``name`` is given. Returns the report."""
    report = sandbox.report()
    assert_safe(report)
    assert report["min_ready_schedulable_nodes"][GROUP] >= promised_floor(size, max_unavailable), report["min_ready_schedulable_nodes"]
    assert report["evictions"]["max_evictions_per_pod"] <= 1, report["evictions"]
    for deployment, figures in report["deployments"].items():
        assert figures["zero_ready_seconds"] == 0, (deployment, figures)
    if name:
        out = os.path.join(ROOT, ".build", "safety-reports")
        os.makedirs(out, exist_ok=True)
        figures = {key: report[key] for key in ("pdb_violations", "killed_without_eviction", "deleted_without_eviction",
                                                "min_ready_schedulable_nodes", "ready_schedulable_nodes_at_start")}
        figures["max_evictions_per_pod"] = report["evictions"]["max_evictions_per_pod"]
        figures["zero_ready_seconds"] = {dep: value["zero_ready_seconds"] for dep, value in report["deployments"].items()}
        with open(os.path.join(out, name + ".json"), "w", encoding="utf-8") as fh:
            json.dump(figures, fh, indent=1, sort_keys=True)
    return report
