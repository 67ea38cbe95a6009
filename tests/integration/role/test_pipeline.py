"""The upgrade is a pipeline with the semantics of a Deployment's maxSurge and maxUnavailable, seen in the event log:
with the surge serving, more nodes than max_unavailable are out at once, yet the Ready schedulable nodes never go
below N - max_unavailable and the group never holds more than N + surge instances; terminations keep the desired
capacity (the group replaces them at once) except the last ones, which pay the surge back; each node's post-drain
delay counts from the end of its own drain.

And what a person sees of it: a progress line per step, and the HTML report beside the JSON result, with the sandbox's
invariant report as a section, rendered by headless chromium without a console error."""

import json
import os
import re
from html.parser import HTMLParser

import pytest

from tests.integration.browser import render
from sandbox.drive.handle import floor_until, promised_floor
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
    # the operator's optional section: the sandbox's invariant report, read from its control URL at the end of the run
    sections = [{"title": "Sandbox invariant report", "url": sandbox.state["control_url"] + "/report?client_prefix=nodeops.rollout"}]
    rc, out = sandbox.run_role_playbook(directory, extra=extra, report=report, host_vars={"rolling_update_report_sections": sections})
    assert rc == 0, out[-4000:]
    every = sandbox.events()
    whole = json.loads(report.read_text())
    return {"out": out, "whole": whole, "result": whole["node_groups"][0], "all_events": every, "directory": directory,
            "html": directory / "result.html",
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


def test_every_step_says_how_many_nodes_are_replaced_the_time_elapsed_and_left(rollout):
    lines = re.findall(r'"msg": "(sandbox-nodes: step \d+: .*)"', rollout["out"])
    steps = len(rollout["result"]["steps"])
    assert len(lines) == steps and steps >= 2, rollout["out"][-3000:]
    assert re.match(r"sandbox-nodes: step 1: 0 of %d nodes replaced, draining \d+, .* elapsed, about .* left by the plan$" % NODES, lines[0]), lines
    assert lines[-1].startswith("sandbox-nodes: step %d: %d of %d nodes replaced" % (steps, NODES, NODES)) and lines[-1].endswith("done")
    # the time left is corrected by the pace once nodes are replaced
    assert any("at the pace so far" in line for line in lines), lines


def _times(value):
    """Every text in a JSON document that begins as an ISO 8601 time does."""
    if isinstance(value, dict):
        return [time for item in value.values() for time in _times(item)]
    if isinstance(value, list):
        return [time for item in value for time in _times(item)]
    return [value] if isinstance(value, str) and re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d", value) else []


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.text, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_the_html_report_beside_the_result_shows_every_node_step_and_the_invariant_report(rollout):
    page = rollout["html"].read_text()
    parsed = _Page()
    parsed.feed(page)
    text = " ".join(parsed.text)
    result = rollout["result"]
    drained = [node for step in result["steps"] for node in step["nodes"]]
    assert len(drained) == NODES and all(node["status"] == "drained" and node["started_at"] <= node["drained_at"] for node in drained)
    for node in drained:
        assert node["node"] in text and node["instance_id"] in text
    # the surge and the replacements of the terminations that kept desired capacity: NODES new instances, all Ready
    assert len(result["new_nodes"]) == NODES and all(entry["ready_at"] for entry in result["new_nodes"]), result["new_nodes"]
    for entry in result["new_nodes"]:
        assert entry["node"] in text
    for step in result["steps"]:
        assert "step %d:" % step["index"] in page
    assert [phase["name"] for phase in result["timeline"]["phases"]] == ["setup", "scale_up", "upgrade", "scale_down"]
    # every time of the result, the role's and the modules', is UTC with its zone
    times = _times(rollout["whole"])
    assert len(times) > 4 * NODES and [time for time in times if not time.endswith("Z")] == [], times
    assert rollout["whole"]["started_at"] <= result["timeline"]["started_at"] <= result["steps"][0]["decided_at"]
    assert "svg" in parsed.tags and "script" not in parsed.tags
    assert "Every node group finished." in text and "Sandbox invariant report" in text and "pdb_violations" in text
    assert "HTML report: %s" % rollout["html"] in rollout["out"]


def test_the_html_report_renders_in_headless_chromium_without_a_console_error(rollout, tmp_path):
    assert render(rollout["html"], tmp_path / "report.png") == []
    # and a console error would be seen: the check is not blind
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><html><body><script>console.error('seen')</script></body></html>")
    assert any("seen" in line for line in render(broken, tmp_path / "broken.png", 400, 300))
