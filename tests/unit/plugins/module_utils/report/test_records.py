# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A step as the result keeps it, and the node table: each old node from its drain to its termination, with the new
instance that took its place."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.report import records
from ansible_collections.nodeops.rollout.plugins.module_utils.report.records import node_rows, step_record

STEP = {"action": "run", "terminate": ["i-a", "i-b"], "decrement": 1, "validate": ["i-n1", "i-n2"],
        "drain": [{"instance_id": "i-c", "az": "az-1", "node": "node-c"}, {"instance_id": "i-d", "az": "az-2", "node": "node-d"}],
        "outdated_left": 4, "waited_seconds": 12.5, "waited_for": ["the post-drain delay of 2 node(s)"],
        "decided_at": "2026-11-25T07:10:12.500Z"}
DRAIN = {"started_at": "2026-11-25T07:10:13.000Z", "seconds": 40.0, "nodes": {
    "node-c": {"status": "drained", "started_at": "2026-11-25T07:10:13.100Z", "drained_at": "2026-11-25T07:10:40.000Z",
               "seconds": 26.9, "evicted": ["shop/web-1", "shop/web-2"], "restarted": [{"pod": "shop/one-1"}], "deleted": [],
               "forced": False, "blocking": []},
    "node-d": {"status": "failed", "started_at": "2026-11-25T07:10:13.100Z", "seconds": 39.9, "evicted": [],
               "deleted": ["shop/job-1"], "forced": True,
               "blocking": [{"pod": "shop/api-1", "kind": "pdb", "pdb": "shop/api", "message": "allows 0 disruptions"}]}}}


def test_a_step_keeps_when_it_began_what_it_waited_for_terminated_and_each_node_it_drained():
    record = step_record(STEP, 3, DRAIN)
    assert record["index"] == 3 and record["started_at"] == "2026-11-25T07:10:00.000Z"   # decided after its 12.5 s wait
    assert record["decided_at"] == "2026-11-25T07:10:12.500Z" and record["waited_for"] == ["the post-drain delay of 2 node(s)"]
    assert record["terminated"] == ["i-a", "i-b"] and record["decrement"] == 1 and record["validated"] == 2
    assert record["drain_started_at"] == "2026-11-25T07:10:13.000Z" and record["ended_at"] == "2026-11-25T07:10:53.000Z"
    c, d = record["nodes"]
    assert (c["node"], c["instance_id"], c["az"], c["status"]) == ("node-c", "i-c", "az-1", "drained")
    assert (c["evicted"], c["restarted"], c["deleted"], c["forced"]) == (2, 1, 0, False)
    assert d["status"] == "failed" and d["deleted"] == 1 and d["forced"]
    assert d["blocking"] == [{"pod": "shop/api-1", "kind": "pdb", "pdb": "shop/api", "message": "allows 0 disruptions"}]


def test_a_step_without_a_drain_ends_when_it_was_decided_and_its_nodes_say_not_drained():
    skipped = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
    record = step_record(dict(STEP, drain=[]), 1, skipped)
    assert record["nodes"] == [] and record["ended_at"] == record["decided_at"] and record["drain_seconds"] is None
    # another module's failure (the step's validation) is no drain: the nodes the step was to drain were not drained
    record = step_record(STEP, 2, {"failed": True, "msg": "not Ready", "seconds": 600})
    assert [node["status"] for node in record["nodes"]] == ["not drained", "not drained"]
    assert record["ended_at"] == record["decided_at"]


def test_a_step_that_is_not_a_step_is_refused_by_name():
    with pytest.raises(PlanError, match="step: 'x' is not allowed"):
        step_record("x", 1)


def test_each_terminated_node_is_paired_with_the_first_instance_launched_after_it_in_its_az_the_surge_with_the_payback():
    steps = [
        step_record({"terminate": [], "drain": [{"instance_id": "i-1", "az": "a", "node": "n-1"},
                                                {"instance_id": "i-2", "az": "b", "node": "n-2"}],
                     "decided_at": "2026-11-25T07:00:00Z"},
                    1, {"nodes": {"n-1": {"status": "drained", "drained_at": "2026-11-25T07:00:30Z"},
                                  "n-2": {"status": "drained", "drained_at": "2026-11-25T07:00:31Z"}}}),
        # i-1 is replaced (desired kept), i-2 pays the surge back
        step_record({"terminate": ["i-2", "i-1"], "decrement": 1, "drain": [], "decided_at": "2026-11-25T07:01:00.400Z"}, 2),
    ]
    new = [{"instance_id": "i-surge", "az": "b", "node": "n-s", "launch_time": "2026-11-25T06:59:00Z", "ready_at": "2026-11-25T06:59:50Z"},
           {"instance_id": "i-other", "az": "c", "node": "n-o", "launch_time": "2026-11-25T07:01:00Z", "ready_at": None},
           {"instance_id": "i-new", "az": "a", "node": "n-n", "launch_time": "2026-11-25T07:01:00Z", "ready_at": "2026-11-25T07:02:00Z"}]
    rows = {row["instance_id"]: row for row in node_rows(steps, new)}
    assert rows["i-1"]["replacement"]["instance_id"] == "i-new"     # launched after its termination, same AZ
    assert not rows["i-1"]["paid_back"] and rows["i-1"]["terminate_step"] == 2 and rows["i-1"]["step"] == 1
    assert rows["i-2"]["paid_back"] and rows["i-2"]["replacement"]["instance_id"] == "i-surge"
    assert rows["i-1"]["terminated_at"] == "2026-11-25T07:01:00.400Z"


def test_a_node_drained_in_an_earlier_run_and_terminated_now_has_a_row_and_a_node_drained_twice_one():
    steps = [step_record({"terminate": ["i-9"], "drain": [{"instance_id": "i-1", "az": "a", "node": "n-1"}],
                          "decided_at": "2026-11-25T07:00:00Z"}, 1, {"nodes": {"n-1": {"status": "failed"}}}),
             step_record({"terminate": [], "drain": [{"instance_id": "i-1", "az": "a", "node": "n-1"}],
                          "decided_at": "2026-11-25T07:02:00Z"}, 2, {"nodes": {"n-1": {"status": "drained"}}})]
    rows = node_rows(steps, [])
    assert [(row["instance_id"], row["status"], row["step"]) for row in rows] == [("i-1", "drained", 2), ("i-9", None, None)]
    assert rows[1]["terminate_step"] == 1 and rows[1]["replacement"] is None


def _group(**fields):
    group = {"name": "workers", "status": "replaced", "nodes_replaced": 6, "seconds": 192.4, "evictions": 14,
             "plan": {"outdated": ["i-%d" % n for n in range(6)], "group_size": 6, "eta_seconds": 300}}
    group.update(fields)
    return group


def test_summary_says_per_group_what_was_replaced_in_what_time_with_how_many_evictions():
    spot = _group(name="spot", status="up to date", nodes_replaced=0, seconds=3.2, evictions=0,
                  plan={"outdated": [], "group_size": 3})
    result = {"node_groups": [_group(), spot]}
    assert records.summary_lines(result) == [
        "workers: replaced, 6 of 6 nodes replaced in 3m 12s, 14 evictions",
        "spot: up to date, 0 of 0 nodes replaced in 3s, 0 evictions",
    ]


def test_summary_of_a_group_that_did_not_finish_says_why_in_one_line():
    reason = "node ip-10-0-0-4 not drained after 10s (timeout): " + "x" * 300
    line = records.summary_lines({"node_groups": [_group(status="failed", nodes_replaced=2, reason=reason + "\nmore")]})[0]
    assert line.startswith("workers: failed, 2 of 6 nodes replaced in 3m 12s, 14 evictions - node ip-10-0-0-4 not drained")
    assert line.endswith("...") and "more" not in line and len(line) < 300


def test_summary_of_a_plan_says_what_it_would_replace():
    line = records.summary_lines({"node_groups": [_group(status="planned", plan_only=True, nodes_replaced=0)]})[0]
    assert line == "workers: planned, 6 nodes outdated, about 5m 00s"
    cancel = {"cancel_payback": [{"instance_id": "i-1"}, {"instance_id": "i-2"}], "release": [{"node": "n1"}], "rollout_id": "r1"}
    line = records.summary_lines({"node_groups": [_group(status="planned", plan_only=True, plan=cancel)]})[0]
    assert line == "workers: planned, a cancel would give back 2 instances and release 1 node"


def test_summary_of_a_cancel_says_what_it_gave_back_not_a_count_of_replaced_nodes():
    cancelled = _group(status="cancelled", nodes_replaced=6, evictions=1, plan={})
    line = records.summary_lines({"node_groups": [cancelled]})[0]
    assert line.startswith("workers: cancelled, 6 instances given back in 3m 12s, 1 eviction"), line
    assert "of 0" not in line


def test_summary_counts_one_thing_in_the_singular():
    one = _group(nodes_replaced=1, evictions=1, plan={"outdated": ["i-1"], "group_size": 1, "eta_seconds": 60})
    assert records.summary_lines({"node_groups": [one]}) == ["workers: replaced, 1 of 1 node replaced in 3m 12s, 1 eviction"]
