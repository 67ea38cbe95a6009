# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""node_drain's result for the three ways a run ends: the pre-flight of check mode, a drain refused before any change,
a drain that ran; each with its message, the nodes' lists and, with --diff, each node's cordon and pods."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.result import (
    check_result, diff_entry, drain_result, node_result, refused_result)
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import pod

SCHEDULABLE = {"metadata": {"name": "node-1"}, "spec": {}}
CORDONED = {"metadata": {"name": "node-2"}, "spec": {"unschedulable": True}}


def entry(predicted="drainable", outcome="all pods can leave", blockers=(), stops=(), evict=(), skipped=()):
    """One node of drain.preflight.drain_preflight's report."""
    return {"predicted": predicted, "outcome": outcome, "blockers": list(blockers), "stops": list(stops),
            "would_evict": list(evict), "would_delete": [], "would_restart": [], "skipped": list(skipped)}


def blocker(name, kind, severity, reason="because", pdb=None):
    return {"pod": "default/" + name, "kind": kind, "severity": severity, "reason": reason, "pdb": pdb}


def test_a_node_result_has_every_list_empty_until_told():
    result = node_result("drained", evicted=["default/web-0"], message="drained")
    assert result["status"] == "drained" and result["evicted"] == ["default/web-0"] and result["message"] == "drained"
    assert [key for key in ("deleted", "restarted", "skipped", "blocking", "remaining", "downtime", "force_deleted")
            if result[key] != []] == []
    assert (result["cordoned"], result["forced"], result["eviction_retries"]) == (False, False, 0)


def test_the_diff_shows_the_node_cordoned_and_the_pods_that_stay():
    pods = [pod("web-1"), pod("web-0")]
    assert diff_entry("node-1", False, pods, ["default/web-1"]) == {
        "before_header": "node node-1", "after_header": "node node-1",
        "before": {"unschedulable": False, "pods": ["default/web-0", "default/web-1"]},
        "after": {"unschedulable": True, "pods": ["default/web-1"]}}


def test_check_mode_predicts_a_drainable_node_would_be_cordoned_and_changed():
    report = {"node-1": entry(evict=["default/web-0"])}
    result = check_result(["node-1"], report, {"node-1": SCHEDULABLE}, {"node-1": [pod("web-0")]}, diff=True)
    node = result["nodes"]["node-1"]
    assert (node["status"], node["cordoned"], node["evicted"], node["predicted"]) == (
        "would be cordoned and drained", True, ["default/web-0"], "drainable")
    assert (result["changed"], result["preflight_ok"], result["msg"]) == (True, True, "pre-flight: 1 node(s) can be drained")
    assert result["diff"] == [diff_entry("node-1", False, [pod("web-0")], [])]
    assert (result["drained"], result["skipped_nodes"], result["failed_nodes"], result["would_stop"]) == ([], [], [], [])


def test_check_mode_of_a_cordoned_empty_node_changes_nothing():
    result = check_result(["node-2"], {"node-2": entry()}, {"node-2": CORDONED}, {"node-2": []})
    assert result["nodes"]["node-2"]["status"] == "would be drained"
    assert result["changed"] is False and "diff" not in result


def test_check_mode_names_the_blocked_nodes_and_what_would_stop_an_upgrade():
    naked = blocker("naked", "naked_pod", "error", reason="no controller")
    single = blocker("solo-0", "single_replica", "warning", reason="one replica")
    report = {"node-1": entry(evict=["default/web-0"], blockers=[single]),
              "node-2": entry(predicted="blocked", outcome="1 pod cannot leave", blockers=[naked],
                              stops=[dict(naked, gets_past="force: true")])}
    nodes = {"node-1": SCHEDULABLE, "node-2": SCHEDULABLE}
    result = check_result(["node-1", "node-2"], report, nodes, {"node-1": [pod("web-0")], "node-2": [pod("naked")]}, diff=True)
    assert result["preflight_ok"] is False
    assert result["msg"] == "pre-flight: 1 of 2 node(s) blocked: node-2: 1 pod cannot leave"
    assert result["would_stop"] == [{"node": "node-2", "pod": "default/naked", "kind": "naked_pod", "pdb": None,
                                     "message": "no controller", "gets_past": "force: true"}]
    assert result["nodes"]["node-2"]["blocking"] == [{"pod": "default/naked", "kind": "naked_pod", "pdb": None,
                                                      "message": "no controller", "severity": "error",
                                                      "stops_upgrade": True, "gets_past": "force: true"}]
    # a warning costs downtime but does not stop the drain; it is listed as such
    assert result["nodes"]["node-1"]["downtime"] == [{"pod": "default/solo-0", "reason": "one replica"}]
    assert "stops_upgrade" not in result["nodes"]["node-1"]["blocking"][0]
    # the pod that cannot leave stays in the diff's after
    assert [item["after"]["pods"] for item in result["diff"]] == [[], ["default/naked"]]


def test_a_refused_drain_names_each_pod_and_changes_nothing():
    problems = {"node-2": [{"pod": "default/naked", "message": "no controller"}, {"pod": "default/cache", "message": "emptyDir"}]}
    result = refused_result(["node-1", "node-2"], problems)
    assert (result["failed"], result["changed"], result["failed_nodes"]) == (True, False, ["node-2"])
    assert result["msg"] == ("cannot drain: 2 pod(s) cannot leave their node under the options given, nothing was changed: "
                             "default/naked on node-2: no controller; default/cache on node-2: emptyDir")
    assert result["nodes"]["node-2"]["remaining"] == ["default/naked", "default/cache"]
    assert (result["nodes"]["node-1"]["status"], result["nodes"]["node-1"]["blocking"]) == ("not started", [])


def ran(status, message="", **fields):
    return node_result(status, message=message, **fields)


def test_a_drain_that_ran_counts_its_nodes_in_the_message():
    results = {"node-1": ran("drained", cordoned=True, evicted=["default/web-0"], forced_pods=["x"]),
               "node-2": ran("skipped", "node-2: timed out, left cordoned")}
    result = drain_result(["node-1", "node-2"], results, 12.4, "2026-01-01T00:00:00Z", {"node-1": [], "node-2": []})
    assert result["msg"] == "1 node(s) drained in 12s; 1 skipped and left cordoned: node-2: timed out, left cordoned"
    assert (result["drained"], result["skipped_nodes"], result["failed_nodes"], result["changed"]) == (
        ["node-1"], ["node-2"], [], True)
    assert "failed" not in result and "forced_pods" not in result["nodes"]["node-1"]


def test_a_failed_node_fails_the_drain_with_its_message():
    results = {"node-1": ran("failed", "node-1: 1 pod left"), "node-2": ran("skipped", "node-2: timed out"),
               "node-3": ran("drained")}
    result = drain_result(["node-1", "node-2", "node-3"], results, 3, None, {})
    assert result["failed"] is True and result["failed_nodes"] == ["node-1"]
    assert result["msg"] == "node-1: 1 pod left; skipped: node-2"
    assert result["changed"] is False


def test_the_diff_of_a_drain_keeps_the_pods_left_and_skipped_but_not_those_already_going():
    skipped = [{"pod": "default/ds-0", "reason": "DaemonSet pod"}, {"pod": "default/old-0", "reason": "already terminating"}]
    results = {"node-1": ran("failed", "stuck", cordoned=True, remaining=["default/web-0"], skipped=skipped)}
    pods = [pod("web-0"), pod("ds-0"), pod("old-0")]
    result = drain_result(["node-1"], results, 1, None, {"node-1": pods}, diff=True)
    assert result["diff"] == [{"before_header": "node node-1", "after_header": "node node-1",
                               "before": {"unschedulable": False, "pods": ["default/ds-0", "default/old-0", "default/web-0"]},
                               "after": {"unschedulable": True, "pods": ["default/ds-0", "default/web-0"]}}]
