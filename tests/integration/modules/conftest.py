"""Helpers for module end-to-end tests (the start_sandbox fixture lives in tests/integration/conftest.py)."""

import os

from sandbox.drive.handle import ROOT

DEMO = os.path.join(ROOT, "sandbox", "workloads", "demo.yaml")


def assert_safe(report):
    """The invariants every non-force end-to-end test holds: no PDB violated, no pod ended without eviction."""
    assert report["pdb_violations"] == 0, report["pdb_violation_details"]
    assert report["killed_without_eviction"] == 0, report["killed_without_eviction_details"]
    assert report["deleted_without_eviction"] == 0, report["deleted_without_eviction_details"]


def workload_pods(sandbox, node):
    """The running pods on ``node`` that a drain must move: every pod not owned by a DaemonSet, not terminating."""
    pods = sandbox.core().list_pod_for_all_namespaces(field_selector="spec.nodeName=%s" % node).items
    return sorted("%s/%s" % (p.metadata.namespace, p.metadata.name) for p in pods
                  if not p.metadata.deletion_timestamp and p.status.phase == "Running"
                  and not any(ref.kind == "DaemonSet" for ref in p.metadata.owner_references or []))


def assert_holds_workload(sandbox, node):
    """Before acting on ``node``: it runs pods that are not DaemonSet pods, so a safety check after the action is not
    vacuous (a node with only DaemonSet pods can be cordoned, drained or terminated without any check noticing).
    Returns those pods."""
    pods = workload_pods(sandbox, node)
    assert pods, "node %s holds no pod but DaemonSet pods: a safety check on it would assert nothing" % node
    return pods
