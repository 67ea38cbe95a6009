"""A cap on the nodes that cannot be drained (rolling_update_max_quarantined, AKS's maxBlockedNodes): with the skip
action, a node whose drain is blocked is labelled nodeops.rollout/quarantined, gets an Event naming the pod and the
budget that hold it, stays cordoned, and the rollout goes on with the others until more nodes than the cap are blocked;
then it stops, the group held and serving, every quarantined node named in the result and first on the page, with what
to do. With the demo's workloads, no budget violated, no pod killed without eviction, no Deployment without a Ready pod,
the floor kept. A cap below 0 is refused before any change."""

import json
import os
import time

import pytest

from tests.integration.controls import QUICK, assert_invariants, assert_refused_before_any_change
from tests.integration.role.test_node_events import described, group_nodes

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")
NODES, AZS = 4, 2
QUARANTINED = "nodeops.rollout/quarantined"
# one pod on a chosen node that its budget never lets go (a single replica under minAvailable 1)
PINNED = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: shop}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      nodeSelector: {{kubernetes.io/hostname: {node}}}
      containers: [{{name: {name}, image: registry.example/pinned:1}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {name}, namespace: shop}}
spec:
  minAvailable: 1
  selector: {{matchLabels: {{app: {name}}}}}
"""


def wait_ready(sandbox, names, timeout=120):
    """Until each Deployment of ``names`` (namespace shop) has its Ready pod."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all((sandbox.apps().read_namespaced_deployment(name, "shop").status.ready_replicas or 0) >= 1 for name in names):
            return
        time.sleep(0.2)
    raise AssertionError("%s not Ready in %ds" % (", ".join(names), timeout))


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[DEMO])


def test_a_cap_below_zero_is_refused_before_any_change(sandbox, tmp_path):
    assert_refused_before_any_change(sandbox, tmp_path, (
        "rolling_update_max_quarantined: '-1' is not allowed; use a whole number, 0 or more (how many nodes whose drain is "
        "skipped the rollout goes on past), or leave it empty for no cap"),
        extra=QUICK + ["rolling_update_drain_timeout_action=skip", "rolling_update_max_quarantined=-1"])


@pytest.fixture(scope="module")
def stopped(sandbox, tmp_path_factory):
    nodes = group_nodes(sandbox)
    blocked = sorted(nodes)[:2]
    for index, node in enumerate(blocked):
        sandbox.apply(PINNED.format(name="pinned-%d" % index, node=node))
    wait_ready(sandbox, ["pinned-%d" % index for index in range(len(blocked))])
    directory = tmp_path_factory.mktemp("quarantine")
    report = directory / "result.json"
    rc, out = sandbox.run_role_playbook(directory, report=report, extra=[
        "rolling_update_metrics_file=%s" % (directory / "rollout.prom"), "rolling_update_post_drain_delay=1",
        "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s",
        "rolling_update_drain_timeout=20s", "rolling_update_drain_timeout_action=skip", "rolling_update_max_quarantined=1",
        "rolling_update_restart_single_replica=false"])
    return {"rc": rc, "out": out, "result": json.loads(report.read_text()) if report.exists() else {},
            "blocked": blocked, "uids": nodes, "directory": directory}


def test_the_rollout_stops_at_the_second_blocked_node_naming_both(sandbox, stopped):
    assert stopped["rc"] != 0, stopped["out"][-3000:]
    group = stopped["result"]["node_groups"][0]
    assert group["status"] == "failed", group
    assert sorted(entry["node"] for entry in group["quarantined"]) == stopped["blocked"], group["quarantined"]
    assert all("PodDisruptionBudget shop/pinned-" in entry["blocked_by"] for entry in group["quarantined"]), group["quarantined"]
    assert group["message"].startswith("2 nodes could not be drained, more than rolling_update_max_quarantined (1): "), group["message"]
    assert "run the upgrade again" in group["message"], group["message"]


def test_both_blocked_nodes_are_labelled_cordoned_and_told_why(sandbox, stopped):
    assert stopped["rc"] != 0, stopped["out"][-3000:]
    for name in stopped["blocked"]:
        node = sandbox.core().read_node(name)
        assert node.spec.unschedulable and (node.metadata.labels or {}).get(QUARANTINED) == "true", (name, node.metadata.labels)
        events = [event for event in described(sandbox, name, stopped["uids"][name]) if "quarantined" in event[3]]
        assert events and "PodDisruptionBudget shop/pinned-" in events[-1][3], [event[:4] for event in described(sandbox, name, stopped["uids"][name])]
    # only the blocked nodes carry the label
    labelled = [node.metadata.name for node in sandbox.core().list_node().items if QUARANTINED in (node.metadata.labels or {})]
    assert sorted(labelled) == stopped["blocked"], labelled


def test_the_group_is_held_serving_within_every_invariant(sandbox, stopped):
    assert stopped["rc"] != 0, stopped["out"][-3000:]
    figures = assert_invariants(sandbox.report(), NODES, 1)
    assert figures["max_evictions_per_pod"] <= 1, figures


def test_the_failed_run_s_metrics_parse_and_count_the_quarantined_nodes(stopped):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families   # pylint: disable=import-outside-toplevel
    samples = {(sample.name, sample.labels.get("status")): sample.value
               for family in text_string_to_metric_families((stopped["directory"] / "rollout.prom").read_text()) for sample in family.samples}
    assert samples[("nodeops_rollout_nodes_quarantined", None)] == 2 and samples[("nodeops_rollout_status", "failed")] == 1, samples


def test_the_page_lists_the_quarantined_nodes_first_with_what_to_do(stopped):
    pages = list(stopped["directory"].glob("*.html"))
    assert pages, list(stopped["directory"].iterdir())
    page = pages[0].read_text()
    first = page.index("node(s) quarantined: their drain was skipped")
    assert all(name in page[first:] for name in stopped["blocked"]), page[first:first + 2000]
    assert "run the upgrade again" in page[first:first + 3000]
