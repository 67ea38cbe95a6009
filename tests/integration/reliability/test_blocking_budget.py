"""A PodDisruptionBudget that never allows an eviction, under each ``rolling_update_drain_timeout_action``:

- ``fail``: the plan says the upgrade would stop (and fails on it only when asked, plan_fail_if_stopped); the upgrade
  stops before any change - no mutating request at all, no surge, no wait for the drain timeout - naming the pod, the
  budget and the options that would get past it; once the operator lets the budget go the same playbook finishes;
- ``skip``: the other nodes are replaced, the blocked node is left cordoned with its pod and reported; again nothing
  deleted without eviction, and a rerun finishes it once the budget allows;
- ``force``: the blocked pod alone is deleted without the Eviction API after the timeout (as EKS's force flag does),
  and the result lists it - the one documented way a pod leaves without eviction.
"""

import json
import re

import pytest

from sandbox.drive.convergence import problems, record, sizes
from sandbox.drive.handle import wait_until
from tests.integration.modules.conftest import assert_safe
from tests.integration.workloads import pin_a_pod

FAST = ["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s",
        "rolling_update_drain_timeout=15s", "rolling_update_restart_single_replica=false"]


@pytest.fixture(autouse=True)
def pinned(sandbox):
    pin_a_pod(sandbox)


def report_path(tmp_path):
    """The HTML report of the last run: beside its JSON result."""
    return sorted(tmp_path.glob("result-*.json"), key=lambda path: int(path.stem.split("-")[1]))[-1].with_suffix(".html")


def roll(sandbox, tmp_path, action):
    report = tmp_path / ("result-%d.json" % len(list(tmp_path.glob("result-*.json"))))
    rc, out = sandbox.run_role_playbook(tmp_path, extra=FAST + ["rolling_update_drain_timeout_action=" + action], report=report)
    return rc, out, json.loads(report.read_text())["node_groups"][0]


def pinned_node(sandbox):
    pods = [p for p in sandbox.core().list_namespaced_pod("shop", label_selector="app=pinned").items if not p.metadata.deletion_timestamp]
    assert len(pods) == 1, [p.metadata.name for p in pods]
    return pods[0].spec.node_name, pods[0].metadata.name


def let_the_budget_go(sandbox):
    """What an operator does about such a budget: give the workload a second replica, so one may be evicted."""
    sandbox.apps().patch_namespaced_deployment("pinned", "shop", {"spec": {"replicas": 2}})
    wait_until("two pinned pods Ready", lambda: (sandbox.apps().read_namespaced_deployment("pinned", "shop").status.ready_replicas or 0) == 2)


@pytest.mark.reference
def test_under_fail_the_plan_says_the_upgrade_would_stop_and_the_upgrade_stops_before_any_change(sandbox, tmp_path):
    original = sizes(sandbox)
    node, pod = pinned_node(sandbox)
    extra = FAST + ["rolling_update_drain_timeout_action=fail"]
    since = sandbox.now()

    # the plan informs: it ends ok, its summary and its result say that the upgrade would stop, and why
    plan = tmp_path / "plan.json"
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="plan.yml", extra=extra, report=plan)
    assert rc == 0, out[-3000:]
    planned = json.loads(plan.read_text())["node_groups"][0]
    [stop] = planned["plan"]["would_stop"]
    assert (stop["node"], stop["pod"], stop["kind"], stop["pdb"]) == (node, "shop/" + pod, "pdb_zero", "shop/pinned"), stop
    assert "can never allow one" in stop["message"], stop
    assert "stops before any change: the upgrade would stop at the drain of 1 node(s)" in out, out[-3000:]
    # asked to gate the upgrade, the same plan fails on it, after writing its result
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="plan.yml", extra=extra + ["plan_fail_if_stopped=true"], report=plan)
    assert rc != 0 and "shop/" + pod in out and plan.exists(), out[-3000:]

    # the upgrade stops before its first change: not a request that changes anything, on AWS or the cluster
    rc, out = sandbox.run_role_playbook(tmp_path, extra=extra)
    assert rc != 0, out[-3000:]
    message = re.search(r'"msg": "(rolling_update_node_groups\[0\] \(sandbox-nodes\): the upgrade would stop[^"]*)"', out)
    assert message, out[-3000:]
    message = message.group(1)
    assert "pod shop/%s on node %s" % (pod, node) in message and "PodDisruptionBudget shop/pinned" in message, message
    assert "rolling_update_drain_timeout_action: force" in message and "rolling_update_drain_timeout_action: skip" in message
    assert "rolling_update_restart_single_replica: true" in message and "Nothing was changed" in message, message
    assert sandbox.mutating_requests(since=since) == []
    assert sizes(sandbox) == original and not sandbox.core().read_node(node).spec.unschedulable
    assert_safe(sandbox.report())

    let_the_budget_go(sandbox)
    rc, out, group = roll(sandbox, tmp_path, "fail")
    assert rc == 0, out[-3000:]
    assert group["status"] == "replaced", group
    record("budget-never-allows-fail", sandbox, outcome="stopped before any change", rerun="replaced")
    assert problems(sandbox, original, 2) == []


@pytest.mark.parametrize("action", ["skip"])
def test_a_budget_that_never_allows_deletes_nothing_without_eviction(sandbox, tmp_path, action):
    original = sizes(sandbox)
    node, pod = pinned_node(sandbox)
    rc, out, group = roll(sandbox, tmp_path, action)
    # a failed group carries the fields of a finished one, filled from what the run did before it stopped
    assert {"nodes_replaced", "evictions", "restarted", "deleted", "blockers", "skipped_nodes", "batches", "target", "plan",
            "seconds", "failed_task", "message"} <= set(group), sorted(group)
    # every drain's evictions, the failed drain's too
    assert group["evictions"] == sum(entry["evicted"] for step in group["steps"] for entry in step["nodes"]), group
    assert group["evictions"] >= sum(len(batch["evicted"]) for batch in group["batches"]), group
    if action == "fail":
        assert rc != 0, out[-3000:]
        assert group["status"] == "failed"
        assert pod in group["message"] and "shop/pinned" in group["message"], group["message"]
        assert group["skipped_nodes"] == [], group
        assert node not in [n for batch in group["batches"] for n in batch["nodes"]], group["batches"]
        # the step that failed is kept with its drain: the blocked node, the pod and the budget holding it
        failed = [entry for step in group["steps"] for entry in step["nodes"] if entry["node"] == node]
        assert failed and failed[-1]["status"] == "failed", group["steps"]
        assert any(b["pod"] == "shop/" + pod and b["pdb"] == "shop/pinned" for b in failed[-1]["blocking"]), failed
        # the HTML report says at the top what stopped the run and what to do next, and names the budget
        page = report_path(tmp_path).read_text()
        assert page.index("What to do next") < page.index('id="group-sandbox-nodes"'), page[:3000]
        assert group["failed_task"] in page and "PodDisruptionBudget shop/pinned" in page
    else:
        # the other nodes were replaced; the run then stops rather than call the group replaced
        assert rc != 0 and group["status"] == "failed", out[-3000:]
        assert group["skipped_nodes"] == [node], group
        assert pod in group["message"], group["message"]
        assert len([i for batch in group["batches"] for i in batch["instance_ids"]]) == 2, group["batches"]
        assert group["nodes_replaced"] == 2, group
        assert any(pod in str(blocker) for blocker in group["blockers"]), group["blockers"]
    first = "%s: %s" % (group["status"], group["message"][:160])
    assert pinned_node(sandbox) == (node, pod), "the pod the budget protects must still run where it ran"
    assert sandbox.core().read_node(node).spec.unschedulable, "the blocked node stays cordoned"
    assert_safe(sandbox.report())
    let_the_budget_go(sandbox)
    rc, out, group = roll(sandbox, tmp_path, action)
    assert rc == 0, out[-3000:]
    assert group["status"] == "replaced", group
    record("budget-never-allows-" + action, sandbox, outcome=first, rerun="replaced")
    assert problems(sandbox, original, 2) == []


def test_force_deletes_only_the_blocked_pod_and_says_so(sandbox, tmp_path):
    original = sizes(sandbox)
    _node, pod = pinned_node(sandbox)
    rc, out, group = roll(sandbox, tmp_path, "force")
    assert rc == 0, out[-3000:]
    assert group["status"] == "replaced"
    assert ["shop/" + pod] == [entry if isinstance(entry, str) else entry.get("pod") for entry in group["deleted"]], group["deleted"]
    report = sandbox.report()
    deleted = report["deleted_without_eviction_details"]
    assert report["killed_without_eviction"] == 0, report["killed_without_eviction_details"]
    assert [d.get("pod") for d in deleted] == ["shop/" + pod], deleted
    # everything else converged; the deletion is the documented cost of force, so the report's own check is not asked
    leftovers = [p for p in problems(sandbox, original, 2) if not p.startswith(("deleted_without_eviction", "pdb_violations"))]
    record("budget-never-allows-force", sandbox, outcome=group["status"], deleted=group["deleted"])
    assert leftovers == []
