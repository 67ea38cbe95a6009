"""The upgrade is a pipeline with the semantics of a Deployment's maxSurge and maxUnavailable, seen in the event log:
with the surge serving, more nodes than max_unavailable are out at once, yet the Ready schedulable nodes never go
below N - max_unavailable and the group never holds more than N + surge instances; terminations keep the desired
capacity (the group replaces them at once) except the last ones, which pay the surge back; each node's post-drain
delay counts from the end of its own drain."""

import json
import os

import pytest

from tests.integration.harness import floor_until, promised_floor
from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"
NODES, MAX_UNAVAILABLE, SURGE, SPEED, DELAY = 6, 1, 2, 20, 2


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=3, speed=SPEED, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


@pytest.fixture(scope="module")
def rollout(sandbox, tmp_path_factory):
    directory = tmp_path_factory.mktemp("pipeline")
    report = directory / "result.json"
    since = sandbox.now()
    extra = ["rolling_update_max_unavailable=%d" % MAX_UNAVAILABLE, "rolling_update_max_surge=%d" % SURGE,
             "rolling_update_post_drain_delay=%d" % DELAY, "rolling_update_validate_passes=1",
             "rolling_update_validate_interval=1s"]
    rc, out = sandbox.run_role_playbook(directory, extra=extra, report=report)
    assert rc == 0, out[-4000:]
    every = sandbox.events()
    return {"out": out, "result": json.loads(report.read_text())["node_groups"][0], "all_events": every,
            "events": [e for e in every if e["t"] >= since], "report": sandbox.report(), "now": sandbox.now()}


def _ours(event):
    return str(event.get("client") or "").startswith("nodeops.rollout")


def test_the_surge_lets_more_nodes_than_max_unavailable_drain_at_once_within_the_floor(rollout):
    events = rollout["events"]
    out_of_service, most = set(), 0
    for e in events:
        if e["kind"] == "node.cordoned" and _ours(e):
            out_of_service.add(e["node"])
            most = max(most, len(out_of_service))
        elif e["kind"] == "node.deleted":
            out_of_service.discard(e["node"])
    # 8 Ready nodes over a floor of 5: three old nodes at once, never more than surge + max_unavailable
    assert most == SURGE + MAX_UNAVAILABLE, most
    assert floor_until(rollout["all_events"], rollout["now"])[GROUP] >= promised_floor(NODES, MAX_UNAVAILABLE)
    sizes = [e for e in events if e["kind"] == "asg.size" and e["group"] == GROUP]
    assert max(e["desired"] for e in sizes) == NODES + SURGE and max(e["max"] for e in sizes) <= NODES + SURGE
    assert "drain %d nodes" % (SURGE + MAX_UNAVAILABLE) in rollout["out"]
    assert_safe(rollout["report"])
    assert rollout["report"]["evictions"]["max_evictions_per_pod"] <= 1


def test_only_the_last_terminations_pay_the_surge_back(rollout):
    events = rollout["events"]
    terminated = [e for e in events if e["kind"] == "instance.terminated" and e["group"] == GROUP]
    assert len(terminated) >= NODES, terminated
    sizes = [e for e in events if e["kind"] == "asg.size" and e["group"] == GROUP]
    surged = next(i for i, e in enumerate(sizes) if e["desired"] == NODES + SURGE)
    paid = next(e["t"] for e in sizes[surged:] if e["desired"] < NODES + SURGE)
    # the first terminations kept desired capacity (their replacements launched at once): the surge served on
    assert sum(1 for e in terminated if e["t"] < paid) >= SURGE + MAX_UNAVAILABLE
    last_cordon = max(e["t"] for e in events if e["kind"] == "node.cordoned" and _ours(e))
    assert paid > last_cordon, (paid, last_cordon)
    assert sizes[-1]["desired"] == NODES and rollout["result"]["status"] == "replaced"


def test_each_node_is_terminated_its_own_post_drain_delay_after_its_drain(rollout):
    events = rollout["events"]
    node_of = {e["provider_id"].rsplit("/", 1)[-1]: e["node"] for e in rollout["all_events"]
               if e["kind"] == "node.added" and e.get("provider_id")}
    drained = {}
    for e in events:
        if e["kind"] == "k8s.request" and e.get("verb") == "patch" and e.get("resource") == "nodes" \
                and "node_drain" in str(e.get("client")):
            drained[e["name"]] = e["t"]   # the last patch of a drain is its drained-at mark
    checked = 0
    for e in events:
        if e["kind"] == "instance.terminated" and node_of.get(e["instance_id"]) in drained:
            assert e["t"] - drained[node_of[e["instance_id"]]] >= DELAY * SPEED * 0.95, e
            checked += 1
    assert checked == NODES, checked
