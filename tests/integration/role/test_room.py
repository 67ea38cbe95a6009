"""A wave drains no more outdated nodes than the up-to-date nodes have room for, so no pod moves twice.

Every node (2 CPU) runs a 50m DaemonSet pod and two 450m pods, and a new node has room for two old nodes' pods. With a surge of 1 and
max_unavailable 2, the floor would let three old nodes drain at once onto the one surge node: two of the six pods
would land on outdated nodes (their taint is the soft PreferNoSchedule, the surge not covering every outdated node)
and be evicted again by a later wave. Drained only as far as the room goes, each pod moves once, and none waits
Pending for room."""

import json
import re

import pytest

from sandbox.drive.handle import floor_until, promised_floor
from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"
NODES, MAX_UNAVAILABLE, SURGE, SPEED = 6, 2, 1, 20

WORKLOAD = """
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: Namespace, metadata: {name: packed}}
""" + "".join("""
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: %(name)s, namespace: packed}
    spec:
      replicas: %(replicas)d
      selector: {matchLabels: {app: %(name)s}}
      template:
        metadata: {labels: {app: %(name)s}}
        spec:
          terminationGracePeriodSeconds: 10
          containers:
            - {name: main, image: registry.example/%(name)s:1, resources: {requests: {cpu: 450m, memory: 256Mi}}}
  - apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {name: %(name)s, namespace: packed}
    spec: {maxUnavailable: 1, selector: {matchLabels: {app: %(name)s}}}
""" % {"name": name, "replicas": NODES} for name in ("cart", "search"))


@pytest.fixture(scope="module")
def rollout(start_sandbox, tmp_path_factory):
    directory = tmp_path_factory.mktemp("room")
    workload = directory / "packed.yaml"
    workload.write_text(WORKLOAD)
    sandbox = start_sandbox(nodes=NODES, azs=3, speed=SPEED, workloads=[str(workload)])
    pods = sandbox.core().list_namespaced_pod("packed").items
    per_node = {}
    for pod in pods:
        per_node[pod.spec.node_name] = per_node.get(pod.spec.node_name, 0) + 1
    assert len(pods) == 2 * NODES and sorted(per_node.values()) == [2] * NODES, per_node  # the packing the test needs
    report_file = directory / "result.json"
    extra = ["rolling_update_max_unavailable=%d" % MAX_UNAVAILABLE, "rolling_update_max_surge=%d" % SURGE,
             "rolling_update_post_drain_delay=0", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"]
    rc, out = sandbox.run_role_playbook(directory, extra=extra, report=report_file)
    assert rc == 0, out[-4000:]
    return {"out": out, "result": json.loads(report_file.read_text())["node_groups"][0], "events": sandbox.events(),
            "report": sandbox.report(), "now": sandbox.now()}


def test_the_first_wave_drains_only_the_nodes_the_surge_has_room_for(rollout):
    first = next(e for e in rollout["events"] if e["kind"] == "node.cordoned" and "node_drain" in str(e.get("client")))
    at_once = [e for e in rollout["events"] if e["kind"] == "node.cordoned" and abs(e["t"] - first["t"]) < 1.0]
    # the floor allows surge + max_unavailable = 3; the one surge node holds the pods of 2
    assert len(at_once) == 2, at_once
    first_drain = next(line for line in rollout["out"].splitlines()
                       if line.startswith("TASK [") and re.search(r"\| step \d+ \| drain ", line))
    assert "drain 2 nodes" in first_drain, first_drain


def test_each_pod_moves_once_and_none_waits_for_room(rollout):
    report = rollout["report"]
    assert_safe(report)
    assert report["evictions"]["evicted_born_during_rollout"] == 0, report["evictions"]
    assert report["evictions"]["max_evictions_per_pod"] == 1 and report["evictions"]["per_pre_existing_pod"] == 1.0
    # one pod start (the sandbox's default, 2 simulated s) and the scheduler's pass, not a node boot
    assert report["max_pending_seconds"] < 10, report["max_pending_seconds"]
    assert floor_until(rollout["events"], rollout["now"])[GROUP] >= promised_floor(NODES, MAX_UNAVAILABLE)
    assert rollout["result"]["status"] == "replaced" and int(rollout["result"]["nodes_replaced"]) == NODES
