"""Pause and cancel from outside, and the hooks that see every step: an operator tags the group
nodeops.rollout/pause=true while it rolls; the rollout stops cleanly before its next step - held (surge and state kept,
processes resumed), and nothing cordoned or tainted that is not drained - while the hooks were given each step's nodes,
instance ids and the result so far; a run while the tag is there does not start. The playbook nodeops.rollout.cancel,
planned first in check mode, then ends the rollout without rolling it back: the surge given back through the
termination gate, every node released, the sizes restored, the processes resumed, the state cleared."""

import json
import os

import pytest

from sandbox.drive.tags import PAUSE_TAG, delete_tag, set_tag
from tests.integration.browser import HELD_BANNER, banners
from tests.integration.controls import (
    CORDONED,
    GROUP,
    MARK_TAINTS,
    QUICK,
    Watcher,
    assert_invariants,
    group_view,
    node_marks,
    result_of,
    terminated_by_rollout,
)

NODES, AZS, MAX_UNAVAILABLE = 4, 2, 1
DRAINED_AT = "nodeops.rollout/drained-at"
LOG_HOOK = """---
- name: Write down what the hook is given
  ansible.builtin.lineinfile:
    path: "{log}"
    line: "{{{{ rolling_update_hook | combine({{'result': {{'status': rolling_update_hook.result.status,
              'nodes_replaced': rolling_update_hook.result.nodes_replaced}}}}) | to_json }}}}"
    create: true
    mode: "0644"
"""


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


@pytest.fixture(scope="module")
def original(sandbox):
    return group_view(sandbox)


def test_a_pause_request_stops_the_rollout_cleanly_and_the_hooks_see_every_step(sandbox, original, tmp_path):
    log = tmp_path / "hooks.jsonl"
    hook = tmp_path / "log.yml"
    hook.write_text(LOG_HOOK.format(log=log))
    hooks = {event: str(hook) for event in ("before_step", "after_drain", "after_step", "after_rollout")}
    since = sandbox.now()
    watcher = Watcher(sandbox, since, terminated_by_rollout, lambda event: set_tag(sandbox, PAUSE_TAG, "true"))
    watcher.start()
    report = tmp_path / "result.json"
    try:
        rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK + [
            "rolling_update_max_surge=1", json.dumps({"rolling_update_hooks": hooks})])
    finally:
        watcher.stop()
    assert watcher.fired is not None and rc == 0, out[-3000:]
    result = result_of(report)
    assert result["status"] == "paused" and result["reason"] == "requested", result
    assert "sandbox-nodes: paused: requested" in out
    assert 0 < result["nodes_replaced"] < NODES, result
    # its page, as a person opens it: a clean stop in the colour of a pause, not the failure's red, saying what ends it
    page = banners(tmp_path / "result.html", tmp_path)
    assert [banner["background"] for banner in page["banners"]] == [HELD_BANNER], page
    assert "Remove the request and run the same playbook again" in page["banners"][0]["text"], page

    held = group_view(sandbox)
    assert held["state"]["id"] and held["suspended"] == [] and held["sizes"][2] > NODES, held
    # nothing cordoned or tainted that is not drained: only nodes awaiting their termination keep a mark
    nodes = sandbox.core().list_node().items
    assert nodes, "the cluster has no node to check"
    for node in nodes:
        annotations = node.metadata.annotations or {}
        marked = node.spec.unschedulable or any(taint.key in MARK_TAINTS for taint in node.spec.taints or [])
        if marked:
            assert node.spec.unschedulable and CORDONED in annotations and DRAINED_AT in annotations, node.metadata.name

    calls = [json.loads(line) for line in log.read_text().splitlines()]
    events = [call["event"] for call in calls]
    assert events[0] == "before_step" and events[-1] == "after_rollout", events
    drains = [call for call in calls if call["event"] == "after_drain"]
    assert drains and all(call["drained"] and set(call["drained"]) <= set(call["nodes"]) for call in drains), drains
    for call in calls[:-1]:
        assert call["group"] == GROUP and isinstance(call["step"], int) and call["rollback"] is False, call
        assert len(call["nodes"]) == len(call["instance_ids"]) and (call["nodes"] or call["terminate"]), call
    steps = [call["step"] for call in calls if call["event"] == "before_step"]
    assert steps == sorted(set(steps)), steps
    assert calls[-1]["result"]["status"] == "paused" and calls[-1]["message"].startswith("a pause was requested"), calls[-1]
    replaced = [call["result"]["nodes_replaced"] for call in calls if call["event"] == "after_step"]
    assert replaced == sorted(replaced) and replaced[-1] == result["nodes_replaced"], replaced

    # while the tag is there, a run does not start
    again = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK)
    assert rc == 0 and result_of(report)["status"] == "paused", out[-3000:]
    assert "not started, the group is tagged nodeops.rollout/pause=true" in out
    assert sandbox.mutating_requests(since=again) == []


def test_cancel_ends_the_paused_rollout_without_rolling_it_back(sandbox, original, tmp_path):
    held = group_view(sandbox)
    report = tmp_path / "result.json"
    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="cancel.yml", report=report, check=True)
    assert rc == 0, out[-3000:]
    planned = result_of(report)
    assert planned["status"] == "planned" and len(planned["plan"]["cancel_payback"]) == held["sizes"][2] - NODES, planned
    assert "give the surge back: drain and terminate" in out
    assert sandbox.mutating_requests(since=since) == [] and group_view(sandbox) == held

    rc, out = sandbox.run_role_playbook(tmp_path, playbook="cancel.yml", report=report)
    assert rc == 0, out[-3000:]
    result = result_of(report)
    assert result["status"] == "cancelled" and result["nodes_replaced"] == held["sizes"][2] - NODES, result
    after = group_view(sandbox)
    assert after["sizes"] == original["sizes"] and after["state_tags"] == {} and after["suspended"] == [], after
    # not rolled back: the group still launches the new version, and its new nodes stay
    assert after["version"] == held["version"] != original["version"] and held["version"] in after["members"].values(), after
    assert len(after["members"]) == NODES and node_marks(sandbox) == {}
    delete_tag(sandbox, PAUSE_TAG)
    figures = assert_invariants(sandbox.report(), NODES, MAX_UNAVAILABLE)
    print("invariants", figures)
