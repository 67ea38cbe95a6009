"""Workloads the end-to-end tests add to a running sandbox."""

import os

from sandbox.drive.handle import ROOT, wait_until

PINNED_BY_BUDGET = os.path.join(ROOT, "sandbox", "workloads", "pinned-by-budget.yaml")


def pin_a_pod(sandbox):
    """Add shop/pinned, one pod its PodDisruptionBudget never lets go, and wait until it is Ready."""
    sandbox.apply(PINNED_BY_BUDGET)
    wait_until("the pinned pod to be Ready", lambda: (sandbox.apps().read_namespaced_deployment("pinned", "shop").status.ready_replicas or 0) == 1)
