"""An outdated node whose kubelet stopped posting status: its pods are evicted within their budgets, and once their
grace period has passed without a kubelet to confirm them gone they are deleted with grace 0, each named in the result;
the rollout finishes instead of waiting out the drain timeout.

Embedded backend only: making a kwok node unreachable is not one of the reference backend's faults.
"""

import json
import os

import pytest

from sandbox.drive.handle import promised_floor, wait_until
from tests.integration.modules.conftest import assert_safe, workload_pods


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=3, azs=3, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")],
                         kube="embedded")


def ready_status(sandbox, name):
    return next(c.status for c in sandbox.core().read_node(name).status.conditions if c.type == "Ready")


def test_the_pods_of_an_unreachable_node_are_deleted_once_their_grace_has_passed(sandbox, tmp_path):
    nodes = sorted(n.metadata.name for n in sandbox.core().list_node().items)
    lost = max(nodes, key=lambda name: len(workload_pods(sandbox, name)))
    stranded = workload_pods(sandbox, lost)
    assert stranded
    sandbox.fault(unreachable_nodes=[lost])
    wait_until("the node's Ready condition to go Unknown", lambda: ready_status(sandbox, lost) == "Unknown", timeout=60)

    report_file = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(
        tmp_path, report=report_file,
        extra=["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s",
               "rolling_update_drain_timeout=2m"])
    assert rc == 0, out[-4000:]
    result = json.loads(report_file.read_text())["node_groups"][0]
    assert result["status"] == "replaced" and result["nodes_replaced"] == 3, result
    forced = {entry["pod"]: entry["reason"] for entry in result["force_deleted"]}
    assert sorted(forced) == stranded, (forced, stranded)
    assert all(reason.startswith("node %s is not Ready (NodeStatusUnknown" % lost) for reason in forced.values())

    report = sandbox.report()
    assert_safe(report)   # evicted within their budgets first: the grace-0 deletion is not counted as one without eviction
    assert min(report["min_ready_schedulable_nodes"].values()) >= promised_floor(3, 1)
    assert report["evictions"]["max_evictions_per_pod"] <= 1
    for name, figures in report["deployments"].items():
        assert figures["ready_pods_at_end"] >= 1, (name, figures)
