"""Workloads the end-to-end tests add to a running sandbox."""

import json
import os

from sandbox.drive.handle import ROOT, wait_until

PINNED_BY_BUDGET = os.path.join(ROOT, "sandbox", "workloads", "pinned-by-budget.yaml")


def pin_a_pod(sandbox, for_now=False):
    """Add shop/pinned, one pod its PodDisruptionBudget never lets go, and wait until it is Ready. With ``for_now`` the
    budget is held by a pod that never starts (:func:`hold_for_now`) rather than by its own arithmetic: the upgrade
    starts, and its drain fails on it after the timeout (``let_go(sandbox, "shop", "pinned")`` ends that)."""
    sandbox.apply(PINNED_BY_BUDGET)
    wait_until("the pinned pod to be Ready", lambda: (sandbox.apps().read_namespaced_deployment("pinned", "shop").status.ready_replicas or 0) == 1)
    if for_now:
        hold_for_now(sandbox, "shop", "pinned")


def hold_for_now(sandbox, namespace, app):
    """Add ``<app>-waiting``: one more pod labelled app=<app> that never starts (it asks for a node label no node has).
    A budget over app=<app> counts it as expected but never healthy, so it allows one disruption less than its Ready pods
    would: with the others at its minimum, no disruption while the run lasts, though there would be one if that pod ran.
    The drain waits for such a budget (and fails after its timeout, under timeout_action fail), where a budget that can
    never allow an eviction stops the upgrade before any change. :func:`let_go` takes it away."""
    labels = {"app": app, "waiting": "true"}
    spec = {"nodeSelector": {"sandbox.nodeops.io/no-such-node": "true"},
            "containers": [{"name": app, "image": "registry.example/%s:1" % app}]}
    sandbox.apply(json.dumps({"apiVersion": "apps/v1", "kind": "Deployment",
                              "metadata": {"name": app + "-waiting", "namespace": namespace},
                              "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                                       "template": {"metadata": {"labels": labels}, "spec": spec}}}))
    wait_until("the waiting %s pod to exist" % app, lambda: len(sandbox.core().list_namespaced_pod(
        namespace, label_selector="app=%s,waiting=true" % app).items) == 1)


def let_go(sandbox, namespace, app):
    """Take :func:`hold_for_now`'s pod away again."""
    sandbox.apps().delete_namespaced_deployment(app + "-waiting", namespace)
    wait_until("the waiting %s pod to go" % app, lambda: not sandbox.core().list_namespaced_pod(
        namespace, label_selector="app=%s,waiting=true" % app).items)
