"""Capacity is what can take the pods: nodes that are Ready but carry a taint the pods to move do not tolerate are not
counted, on the surge, on the replacements and on the old nodes alike.

- New nodes that join with a CNI's startup taint (``node.cilium.io/agent-not-ready:NoSchedule``, as the kubelet's
  ``--register-with-taints`` puts it) are waited for until their agent lifts it: the old nodes are tainted only once the
  surge can take pods, so the group never has fewer nodes able to take pods than its floor.
- A startup taint that stays past the node-ready timeout fails the scale up before any old node is tainted or cordoned,
  naming the taint and the nodes.
- An operator's ``dedicated=infra:NoSchedule`` on one old node takes it out of the capacity: with no surge, the floor is
  kept by the nodes that can take pods.

The invariant report counts a node as able to take pods only while it is Ready, not cordoned and carries no NoSchedule or
NoExecute taint: its ``min_ready_schedulable_nodes`` is the floor these tests hold the rollout to.
"""

import json
import os

import pytest

from sandbox.drive.handle import promised_floor
from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"
NODES, SPEED = 4, 20
STARTUP = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoSchedule"}
OURS = "nodeops.rollout/outdated"
FAST = ["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"]

pytestmark = pytest.mark.reference


def _ours_on_old_nodes(events, old_nodes):
    """The first moment the rollout tainted or cordoned one of ``old_nodes``, or None."""
    moments = [e["t"] for e in events if e.get("node") in old_nodes and (
        (e["kind"] == "node.taints" and any(str(t).startswith(OURS) for t in e.get("taints") or []))
        or e["kind"] == "node.cordoned")]
    return min(moments) if moments else None


def _node_names(sandbox):
    return sorted(node.metadata.name for node in sandbox.core().list_node().items)


def test_a_surge_with_a_startup_taint_is_waited_for_until_its_agent_lifts_it(start_sandbox, tmp_path):
    # every node that joins after the start carries the CNI's startup taint for 4 simulated minutes after it is Ready
    sandbox = start_sandbox(nodes=NODES, azs=2, speed=SPEED, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")],
                            startup_taints=[dict(STARTUP, lift_after=240)])
    old_nodes = set(_node_names(sandbox))
    report_file = tmp_path / "result.json"
    # a surge as large as the group: the outdated nodes are tainted NoSchedule, so only the surge can take the pods then
    rc, out = sandbox.run_role_playbook(tmp_path, report=report_file,
                                        extra=FAST + ["rolling_update_max_surge=%d" % NODES, "rolling_update_max_unavailable=1"])
    assert rc == 0, out[-4000:]
    result = json.loads(report_file.read_text())["node_groups"][0]
    assert result["status"] == "replaced" and result["nodes_replaced"] == NODES, result

    events = sandbox.events()
    # the sandbox's agent (the node's cilium-agent) lifting the startup taint of each new node
    lifted = [e["t"] for e in events if e["kind"] == "node.startup_taint_lifted"]
    assert len(lifted) >= NODES, "the startup taints were not all lifted: the case asserts nothing (%s)" % lifted
    tainted_at = _ours_on_old_nodes(events, old_nodes)
    assert tainted_at is not None
    # the old nodes were tainted only once new nodes could take pods (the first lift), never while none could
    assert tainted_at > min(lifted), (tainted_at, min(lifted))

    report = sandbox.report()
    assert_safe(report)
    assert report["min_ready_schedulable_nodes"][GROUP] >= promised_floor(NODES, 1), report["min_ready_schedulable_nodes"]
    assert report["evictions"]["max_evictions_per_pod"] <= 1
    for name, figures in report["deployments"].items():
        assert figures["zero_ready_seconds"] == 0, (name, figures)


def test_a_startup_taint_never_lifted_fails_the_scale_up_before_any_old_node_is_touched(start_sandbox, tmp_path):
    sandbox = start_sandbox(nodes=NODES, azs=2, speed=SPEED, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")],
                            startup_taints=[dict(STARTUP, lift_after=None)])
    old_nodes = set(_node_names(sandbox))
    report_file = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(tmp_path, report=report_file,
                                        extra=FAST + ["rolling_update_max_surge=%d" % NODES, "rolling_update_node_ready_timeout=90s",
                                                      "rolling_update_on_failure=hold"])
    assert rc != 0, out[-4000:]
    result = json.loads(report_file.read_text())["node_groups"][0]
    assert result["status"] == "failed", result
    # the cause is named: the taint and the new nodes that carry it, not a budget
    assert "NodeCreationFailure" in result["message"] and STARTUP["key"] in result["message"], result["message"]
    assert "PodDisruptionBudget" not in result["message"], result["message"]
    # no old node was tainted or cordoned by the rollout: the group kept every node able to take pods
    assert _ours_on_old_nodes(sandbox.events(), old_nodes) is None
    for node in sandbox.core().list_node().items:
        if node.metadata.name in old_nodes:
            assert not node.spec.unschedulable, node.metadata.name
            assert not [t for t in node.spec.taints or [] if t.key == OURS], node.metadata.name
    # and what the message says of the capacity is what the run measured: the old nodes take pods, the new ones do not
    assert "%d nodes of the group can take pods now" % NODES in out, out[-4000:]

    report = sandbox.report()
    assert_safe(report)
    assert report["min_ready_schedulable_nodes"][GROUP] >= NODES
    for name, figures in report["deployments"].items():
        assert figures["zero_ready_seconds"] == 0, (name, figures)


def test_an_operator_taint_on_an_old_node_takes_it_out_of_the_capacity_with_no_surge(start_sandbox, tmp_path):
    sandbox = start_sandbox(nodes=NODES, azs=2, speed=SPEED, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])
    names = _node_names(sandbox)
    # an operator dedicates one old node to infra pods (the last in name order: not the first the rollout would drain)
    dedicated = names[-1]
    sandbox.core().patch_node(dedicated, {"spec": {"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]}})
    report_file = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(tmp_path, report=report_file,
                                        extra=FAST + ["rolling_update_max_surge=0", "rolling_update_max_unavailable=1"])
    assert rc == 0, out[-4000:]
    result = json.loads(report_file.read_text())["node_groups"][0]
    assert result["status"] == "replaced" and result["nodes_replaced"] == NODES, result

    report = sandbox.report()
    assert_safe(report)
    # 3 nodes could take pods at the start; the floor of the group's 4 less max_unavailable 1 is kept by those that can
    assert report["ready_schedulable_nodes_at_start"][GROUP] == NODES - 1, report["ready_schedulable_nodes_at_start"]
    assert report["min_ready_schedulable_nodes"][GROUP] >= promised_floor(NODES, 1), report["min_ready_schedulable_nodes"]
    assert report["evictions"]["max_evictions_per_pod"] <= 1
