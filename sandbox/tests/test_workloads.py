"""The scenario files under ``sandbox/workloads``, as ``up --workload`` starts them, on either backend."""

import os

import pytest

from sandbox.drive.handle import ROOT, SandboxHandle

WORKLOADS = os.path.join(ROOT, "sandbox", "workloads")


@pytest.mark.reference
def test_the_demos_workers_have_no_budget_and_turn_ready_15_simulated_seconds_after_they_start(tmp_path):
    box = SandboxHandle.start(str(tmp_path), nodes=2, azs=2, speed=20.0,
                              workloads=[os.path.join(WORKLOADS, "demo.yaml"), os.path.join(WORKLOADS, "worker.yaml")])
    try:
        worker = box.apps().read_namespaced_deployment("worker", "shop")
        assert worker.spec.replicas == 2 and worker.status.ready_replicas == 2   # up waited for them
        budgets = box.policy().list_namespaced_pod_disruption_budget("shop").items
        assert sorted(b.metadata.name for b in budgets) == ["api", "web"]
        assert all((b.spec.selector.match_labels or {}).get("app") != "worker" for b in budgets)
        events = box.events()
        pods = {e["pod"] for e in events if e["kind"] == "pod.created" and e.get("owner") == "Deployment/shop/worker"}
        assert len(pods) == 2
        for pod in pods:
            created = min(e["t"] for e in events if e["kind"] == "pod.created" and e["pod"] == pod)
            ready = min(e["t"] for e in events if e["kind"] == "pod.ready" and e["pod"] == pod)
            assert ready - created >= 15.0, (pod, created, ready)
    finally:
        box.stop()
