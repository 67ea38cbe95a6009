# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the HTML report draws after an incident, decided in records.py: a drain that failed is its own state (never
'terminated'), the counts add up over every drain, every phase and step has a label, a run that stopped in its upgrade
still has an upgrade phase, what held each stuck node is named, a faster clock is said only when a document says it,
and a nested JSON document reads as flat tables."""

from __future__ import annotations

import re

from ansible_collections.nodeops.rollout.plugins.module_utils.report import page, records
from ansible_collections.nodeops.rollout.plugins.module_utils.report.records import (
    clock_speed, drain_blockers, group_counts, json_tables, node_rows, node_state, phase_bars, step_label, step_record,
    surge_priced)

PDB = {"pod": "shop/ledger-1", "kind": "pdb", "pdb": "shop/ledger",
       "message": "PodDisruptionBudget shop/ledger allows 0 disruption(s): it needs 3 healthy pods and has 3"}


def _drain(status, evicted, seconds, blocking=(), drained_at=None):
    entry = {"status": status, "started_at": "2026-11-28T08:39:12.940Z", "seconds": seconds, "evicted": list(evicted),
             "restarted": [], "deleted": [], "forced": False, "blocking": list(blocking)}
    if drained_at:
        entry["drained_at"] = drained_at
    return entry


def failed_group():
    """The incident: drain timeout 20s, a budget at minAvailable 3 over 3 replicas; 6 nodes drained in one step, 3 of
    them stuck on a ledger pod after 7 evictions in all; the run stopped in its upgrade (no upgrade phase recorded)."""
    nodes = {"n-a": _drain("drained", ["shop/web-1"], 0.5, drained_at="2026-11-28T08:39:13.441Z"),
             "n-b": _drain("failed", ["shop/web-2"], 20.0, [PDB]),
             "n-c": _drain("drained", ["shop/api-1"], 0.5, drained_at="2026-11-28T08:39:13.445Z"),
             "n-d": _drain("drained", ["shop/web-3", "shop/api-2"], 6.5, drained_at="2026-11-28T08:39:19.449Z"),
             "n-e": _drain("failed", ["shop/api-3"], 20.0, [dict(PDB, pod="shop/ledger-2")]),
             "n-f": _drain("failed", ["shop/api-4"], 20.0, [dict(PDB, pod="shop/ledger-3")])}
    step = step_record({"terminate": [], "decrement": 0, "validate": ["i-n%d" % n for n in range(6)],
                        "drain": [{"node": name, "instance_id": "i-" + name, "az": "az-1"} for name in nodes],
                        "outdated_left": 6, "waited_seconds": 0.1, "decided_at": "2026-11-28T08:39:12.900Z"},
                       1, {"started_at": "2026-11-28T08:39:12.914Z", "seconds": 20.053, "nodes": nodes, "failed": True})
    return {"name": "sandbox-nodes", "status": "failed", "plan_only": False, "nodes_replaced": 0, "evictions": 0,
            "restarted": [], "deleted": [], "skipped_nodes": [], "seconds": 28.3,
            "phase_seconds": {"setup": 0.7, "scale_up": 3.6},
            "plan": {"outdated": ["i-n-%s" % c for c in "abcdef"], "eta_seconds": 291, "surge": 6, "batch_size": 1},
            "timeline": {"started_at": "2026-11-28T08:39:05.985Z", "ended_at": "2026-11-28T08:39:34.333Z",
                         "phases": [{"name": "setup", "started_at": "2026-11-28T08:39:06.756Z", "ended_at": "2026-11-28T08:39:07.472Z", "seconds": 0.7},
                                    {"name": "scale_up", "started_at": "2026-11-28T08:39:07.804Z", "ended_at": "2026-11-28T08:39:11.450Z", "seconds": 3.6}]},
            "steps": [step], "new_nodes": [], "failed_task": "Upgrade | sandbox-nodes | step 1 | drain 6 nodes",
            "message": "node n-b not drained after 20s (timeout)", "reason": "node n-b not drained after 20s (timeout)"}


def test_the_counts_add_up_over_every_drain_the_failed_ones_included():
    counts = group_counts(failed_group())
    # the group's own count (finished batches only) says 0: the page counts the 7 evictions that happened
    assert counts["evictions"] == 7
    assert (counts["drained"], counts["drain_failed"], counts["skipped"]) == (3, 3, 0)
    assert counts["replaced"] == 0 and counts["outdated"] == 6
    # the line printed before the result counts them the same way
    assert records.summary_lines({"node_groups": [failed_group()]})[0].startswith(
        "sandbox-nodes: failed, 0 of 6 nodes replaced in 28s, 7 evictions - node n-b not drained")
    # a group whose steps kept no drains falls back on its own counts
    assert group_counts({"evictions": 4, "restarted": ["a"], "steps": []})["evictions"] == 4


def test_a_stuck_node_is_its_own_state_and_a_terminated_one_is_replaced_whatever_an_earlier_drain_said():
    rows = node_rows(failed_group()["steps"])
    assert [node_state(row) for row in rows] == ["drained", "drain failed", "drained", "drained", "drain failed", "drain failed"]
    assert node_state({"status": "skipped"}) == "skipped"
    assert node_state({"status": "failed", "terminated_at": "2026-11-28T08:40:00Z"}) == "replaced"
    assert node_state({"status": None, "terminated_at": "2026-11-28T08:40:00Z"}) == "terminated"
    # a drain that gave up ran its timeout: its drawn ends 20 s after its start, not at its start
    stuck = rows[1]
    assert (records.drain_end(stuck) - records.time_of(stuck["started_at"])).total_seconds() == 20.0


def test_each_state_and_phase_has_its_own_colour_and_a_failed_drain_is_not_the_termination_red():
    colours = [page.COLORS[page.STATE_KINDS[state]] for state in ("drained", "drain failed", "skipped", "terminated")]
    assert len(set(colours)) == 4
    phases = [page.COLORS["phase-" + name] for name in ("setup", "scale_up", "upgrade", "scale_down", "cancel")]
    assert len(set(phases)) == 5 and page.COLORS["boot"] not in phases
    assert page.COLORS["drain-failed"] != page.COLORS["terminate"]
    # every colour drawn has a legend entry
    assert {kind for kind, _label in page.LEGEND} >= {"drain", "drain-failed", "skipped", "terminate", "boot", "phase-upgrade"}


def test_a_run_that_stopped_in_its_upgrade_still_draws_its_upgrade_phase_labelled_as_stopped():
    bars = phase_bars(failed_group())
    assert [drawn["label"] for drawn in bars] == ["setup", "scale up", "upgrade (stopped)"]
    assert bars[-1]["stopped"] and bars[-1]["ended_at"] == "2026-11-28T08:39:34.333Z"
    rollback = {"timeline": {"phases": [{"name": "rollback_scale_down", "started_at": "2026-11-28T08:00:00Z"}]}}
    assert phase_bars(rollback)[0]["label"] == "rollback: scale down" and phase_bars(rollback)[0]["kind"] == "scale_down"


def test_every_step_has_a_label_that_says_what_it_did():
    step = failed_group()["steps"][0]
    assert step_label(step) == "step 1: drain 6 (3 failed)"
    assert step_label({"index": 4, "terminated": ["i-1", "i-2"], "nodes": []}) == "step 4: terminate 2"
    assert step_label({"index": 5, "validated": 2}) == "step 5: validate 2"


def test_what_held_each_stuck_node_is_named_with_its_budget():
    held = drain_blockers(failed_group()["steps"])
    assert [(item["node"], item["pod"], item["pdb"], item["state"]) for item in held] == [
        ("n-b", "shop/ledger-1", "shop/ledger", "drain failed"), ("n-e", "shop/ledger-2", "shop/ledger", "drain failed"),
        ("n-f", "shop/ledger-3", "shop/ledger", "drain failed")]


def test_the_clock_speed_is_said_only_when_a_document_says_it():
    assert clock_speed([{"title": "Sandbox invariant report", "data": {"clock_speed": 20.0}}]) == {
        "speed": 20.0, "source": "Sandbox invariant report"}
    assert clock_speed([{"title": "SLO", "data": {"error_budget_used": "2%"}}]) is None
    assert clock_speed([{"title": "real", "data": {"clock_speed": 1}}]) is None
    assert clock_speed([{"title": "odd", "data": {"clock_speed": True}}, None]) is None


def test_a_nested_json_document_reads_as_flat_tables():
    report = {"pdb_violations": 0, "pdb_violation_details": [],
              "deployments": {"shop/web": {"zero_ready_seconds": 0.0, "min_ready_pods": 2}, "shop/api": {"zero_ready_seconds": 1.5}},
              "api_requests": {"kubernetes": {"node_drain": {"total": 40, "mutating": 17}}},
              "asg_size_history": {"g": [{"t": 1.0, "desired": 6}, {"t": 2.0, "desired": 12}]}}
    tables = json_tables(report)
    assert tables[0] == {"title": None, "headers": None, "rows": [["pdb_violations", 0], ["pdb_violation_details", "none"]]}
    deployments = next(table for table in tables if table["title"] == "deployments")
    assert deployments["headers"] == ["", "zero_ready_seconds", "min_ready_pods"]
    assert deployments["rows"] == [["shop/web", 0.0, 2], ["shop/api", 1.5, None]]
    requests = next(table for table in tables if table["title"] == "api_requests / kubernetes")
    assert requests["headers"] == ["", "total", "mutating"] and requests["rows"] == [["node_drain", 40, 17]]
    history = next(table for table in tables if table["title"] == "asg_size_history / g")
    assert history["headers"] == ["t", "desired"] and history["rows"] == [[1.0, 6], [2.0, 12]]


def _rects(html, kind):
    return re.findall(r'<rect class="k-%s"[^>]*><title>([^<]*)</title>' % re.escape(kind), html)


def test_the_failure_page_draws_the_stuck_nodes_in_their_colour_next_to_their_budget_and_counts_that_add_up():
    html = page.report_html({"node_groups": [failed_group()]}, "c")
    stuck = _rects(html, "drain-failed")
    assert len(stuck) == 3 and all("held by shop/ledger-" in tip and "shop/ledger" in tip for tip in stuck)
    assert not _rects(html, "terminate")                        # nothing was terminated
    assert "stuck: shop/ledger-1, PDB shop/ledger" in html     # beside the drawn
    assert "3 node(s) stuck, cordoned with pods left" in html
    assert html.index("3 node(s) stuck") < html.index('id="group-sandbox-nodes"')
    summary = re.search(r"<tbody><tr><td><a href=\"#group-sandbox-nodes\">.*?</tr>", html).group(0)
    assert re.findall(r'<td class="num">(\d+)</td>', summary) == ["3", "3", "0", "7", "0", "0"]
    assert "phase upgrade (stopped)" in html and "step 1: drain 6 (3 failed)" in html
    assert '<tr class="state-drain-failed" data-node="n-b">' in html
    assert "Sandbox clock" not in html


def test_a_success_page_labels_every_phase_and_says_the_clock_when_the_sandbox_report_does():
    group = failed_group()
    group.update(status="replaced", steps=[], phase_seconds={"setup": 0.7, "scale_up": 3.6, "upgrade": 20, "scale_down": 5})
    group["timeline"]["phases"] += [
        {"name": "upgrade", "started_at": "2026-11-28T08:39:12.000Z", "ended_at": "2026-11-28T08:39:30.000Z", "seconds": 18},
        {"name": "scale_down", "started_at": "2026-11-28T08:39:30.000Z", "ended_at": "2026-11-28T08:39:34.000Z", "seconds": 4}]
    html = page.report_html({"node_groups": [group]}, "c", [{"title": "Sandbox invariant report", "data": {"clock_speed": 20}}])
    for label in ("phase setup", "phase scale up", "phase upgrade,", "phase scale down"):
        assert label in html, label
    kinds = re.findall(r'<rect class="k-(phase-[a-z_]+)"', html)
    assert kinds == ["phase-setup", "phase-scale_up", "phase-upgrade", "phase-scale_down"]
    assert "Sandbox clock &times;20 (from Sandbox invariant report)" in html and "28s on a clock &times;20" in html


def test_the_surge_priced_puts_the_measured_duration_on_the_choice_the_run_used_only():
    group = failed_group()
    assert surge_priced(group) == []
    group["plan"] = dict(group["plan"], surge_choices=[
        {"surge": 6, "choices": ["configured", "EKS default", "100%"], "eta_seconds": 291, "wave_count": 1,
         "extra_instance_minutes": 36.6}])
    assert surge_priced(group) == [{"surge": 6, "choices": ["configured", "EKS default", "100%"], "eta_seconds": 291,
                                    "extra_instance_minutes": 36.6, "measured_seconds": 28.3}]
    group["plan"]["surge_choices"].insert(0, {"surge": 0, "choices": ["configured"], "eta_seconds": 900,
                                              "extra_instance_minutes": 0.0})
    group["plan"]["surge_choices"][1]["choices"] = ["EKS default", "100%"]
    assert [choice["measured_seconds"] for choice in surge_priced(group)] == [28.3, None]
    assert [choice["measured_seconds"] for choice in surge_priced(dict(group, plan_only=True))] == [None, None]
