# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run record: what a group's rollout keeps, event by event, and the result made from it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.report import run
from ansible_collections.nodeops.rollout.plugins.module_utils.report.run import apply, group_result, serial_keep, serial_outcome, with_group

T0 = datetime(2026, 11, 28, 9, 0, 0, tzinfo=timezone.utc)


def at(seconds):
    return T0 + timedelta(seconds=seconds)


def group(outdated=2, state=None):
    return {"outdated_count": outdated, "state": state,
            "outdated": [{"instance_id": "i-%d" % n, "node": "n-%d" % n} for n in range(outdated)],
            "plan": {"surge": 1, "batch_size": 1, "batch_count": outdated, "canary": False, "eta_seconds": 60,
                     "target_groups": [], "batches": [], "group_size": 3, "taint_effect": "PreferNoSchedule",
                     "timings": {}, "standby": {}, "protected": [],
                     "surge_choices": [
                         {"surge": 1, "choices": ["configured"], "eta_seconds": 60, "extra_instance_minutes": 1.0},
                         {"surge": 2, "choices": ["EKS default", "100%"], "eta_seconds": 40,
                          "extra_instance_minutes": 1.3}]}}


def step(action="step", terminate=(), drain=(), decided=0):
    return {"action": action, "terminate": list(terminate), "decrement": len(terminate), "termination_waits": [],
            "drain": [{"node": node, "instance_id": "i-" + node[2:]} for node in drain], "held": ["i-9"] if action == "step" else [],
            "new_nodes": [{"node": "new-1"}], "marked": [], "validate": [], "waited_seconds": 0,
            "decided_at": at(decided).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", "outdated_left": 1}


def drain(nodes, skipped=(), evicted=1):
    return {"nodes": {node: {"status": "drained", "evicted": ["pod-%s-%d" % (node, k) for k in range(evicted)],
                             "blocking": [{"pod": "stuck"}] if node in skipped else []} for node in nodes},
            "drained": [node for node in nodes if node not in skipped], "skipped_nodes": list(skipped), "seconds": 4}


def upgrade(record):
    record = apply(record, "open", now=at(0), phase="setup")
    record = apply(record, "setup", now=at(1), group=group(), target={"version": "2"})
    record = apply(record, "close", now=at(2))
    record = apply(record, "steps", now=at(2), total=2, phase="upgrade")
    first, second, last = step(drain=["n-0"], decided=3), step(terminate=["i-0"], drain=["n-1"], decided=10), step("done", ["i-1"], decided=20)
    for moment, this, drained in ((3, first, drain(["n-0"])), (10, second, drain(["n-1"])), (20, last, None)):
        record = apply(record, "step", now=at(moment), step=this)
        record = apply(record, "terminated", now=at(moment), step=this)
        if drained:
            record = apply(record, "drained", now=at(moment + 4), step=this, drain=drained)
        record = apply(record, "step_end", now=at(moment + 5), step=this, drain=drained)
    return record


def test_an_upgrade_keeps_its_phases_steps_terminations_and_evictions_and_ends_replaced():
    record = apply(upgrade(apply(None, "start", now=T0, name="ng")), "finish", now=at(26))
    assert [phase["name"] for phase in record["phases"]] == ["setup", "upgrade"]
    assert record["phase_seconds"] == {"setup": 2.0, "upgrade": 23.0}
    assert [entry["index"] for entry in record["steps"]] == [1, 2, 3] and record["step_number"] == 3
    assert record["loop"] == {"count": "replaced", "total": 2, "max": 9, "done": 2, "more": False, "goal": "replace",
                              "ran_out": None, "closes": True}
    assert record["phase_open"] is None and not record["has"]["ran_out"]
    result = group_result(record, now=at(30))
    assert result["status"] == "replaced" and result["nodes_replaced"] == 2 and result["evictions"] == 2
    assert result["seconds"] == 30.0 and result["plan"]["outdated"] == ["i-0", "i-1"] and result["target"] == {"version": "2"}
    # the surge priced goes to the report beside what happened
    assert [choice["surge"] for choice in result["plan"]["surge_choices"]] == [1, 2]
    assert record["changed"] and record["ended"] and not record["scale_down"]


def test_a_failed_drain_is_kept_with_the_step_that_failed_and_the_group_reads_failed():
    record = apply(None, "start", now=T0, name="ng")
    record = apply(record, "steps", now=at(1), total=2)
    this = step(drain=["n-0"], decided=2)
    record = apply(record, "step", now=at(2), step=this)
    record = apply(record, "step_end", now=at(30), step=this, drain=drain(["n-0"], skipped=["n-0"]))
    record = apply(record, "failed", now=at(31), reason="drain", failed_task="drain 1 nodes", message="blocked.")
    result = group_result(record, now=at(31))
    assert result["status"] == "failed" and result["reason"] == "drain" and result["failed_task"] == "drain 1 nodes"
    assert result["steps"][0]["nodes"][0]["blocking"] == [{"pod": "stuck", "kind": None, "pdb": None, "message": None}]
    assert result["nodes_replaced"] == 0 and record["changed"] and not record["ended"]


def test_the_pods_that_blocked_the_drains_are_named_once_each():
    record = apply(None, "start", now=T0, name="ng")
    record = apply(record, "steps", now=at(1), total=2, phase="upgrade")
    for moment, node in ((2, "n-0"), (8, "n-1")):
        this = step(drain=[node], decided=moment)
        record = apply(record, "step", now=at(moment), step=this)
        skipped = drain([node], skipped=[node])
        record = apply(record, "drained", now=at(moment + 3), step=this, drain=skipped)
        record = apply(record, "step_end", now=at(moment + 4), step=this, drain=skipped)
    assert record["has"]["skipped_nodes"] and record["blocking_pods"] == ["stuck"]


def test_a_pay_back_counts_its_terminations_apart_from_the_nodes_replaced():
    record = upgrade(apply(None, "start", now=T0, name="ng"))
    record = apply(record, "steps", now=at(30), count="apart", total=1, bound=4)
    assert record["step_number"] == 4 and record["loop"]["max"] == 3 + 4 * 2 + 5
    payback = step("done", ["i-7"], decided=31)
    record = apply(apply(record, "step", now=at(31), step=payback), "terminated", now=at(31), step=payback)
    assert record["apart_ids"] == ["i-7"] and record["loop"]["done"] == 1
    assert group_result(record, now=at(32))["nodes_replaced"] == 2


def test_a_rollback_after_a_failure_says_so_and_from_which_target():
    record = apply(apply(None, "start", now=T0, name="ng"), "rollback", now=at(1))
    record = apply(record, "open", now=at(1), phase="setup")
    assert record["phase_open"]["name"] == "rollback_setup"
    record = apply(record, "status", now=at(2), status="rolled back")
    record = apply(record, "failed", now=at(3), reason="new nodes", failed_task="validate", message="NotReady.",
                   rolled_back_from={"version": "2"})
    assert record["status"] == "rolled back" and record["stop"]["rolled_back_from"] == {"version": "2"}


def test_a_cancel_with_no_rollout_recorded_is_not_started_and_says_there_is_nothing_to_cancel():
    record = apply(apply(None, "start", now=T0, name="ng"), "recorded", now=at(1), group={"state": None}, action="cancel")
    assert not record["started"] and not record["recorded"] and record["status"] == "no rollout"
    # nothing to plan either: the plan's tasks ask this flag, which a plan's own status leaves alone
    assert record["stopped"]
    assert record["stop"]["message"].endswith("there is nothing to cancel")


def test_the_plan_of_a_cancel_releases_the_marked_nodes_it_does_not_pay_back():
    recorded = {"state": {"rollout_id": "r1"}, "cancel_payback": [{"node": "a"}],
                "marked_outdated": [{"node": "a"}, {"node": "b"}], "marked": [{"node": "c"}]}
    record = apply(apply(None, "start", now=T0, name="ng"), "cancel_planned", now=at(1), group=recorded)
    assert record["plan"]["release"] == [{"node": "b"}, {"node": "c"}] and record["status"] == "planned"
    assert not record["stopped"] and not record["started"]


def test_a_plan_splits_what_the_preflight_found_into_blockers_and_warnings():
    preflight = {"n-0": {"blocking": [{"pod": "p", "severity": "error"}, {"pod": "q", "severity": "warning"}]}}
    record = apply(apply(None, "start", now=T0, name="ng"), "planned", now=at(1), group=group(),
                   ltv={"target": {"version": "3"}, "created": True}, preflight=preflight, controls={})
    assert record["plan"]["blockers"] == [{"pod": "p", "severity": "error"}] and len(record["plan"]["warnings"]) == 1
    assert record["status"] == "planned" and record["plan"]["launch_template_version_created"] is True
    assert record["plan"]["surge_choices"] == group()["plan"]["surge_choices"]


def test_the_result_gets_the_group_and_changed_only_when_the_run_changed_it():
    up_to_date = apply(apply(None, "start", now=T0, name="a"), "setup", now=at(1), group=group(outdated=0), target={})
    result = with_group({"node_groups": [], "changed": False}, apply(up_to_date, "finish", now=at(2)), now=at(3))
    assert not result["changed"] and result["node_groups"][0]["status"] == "up to date"


def test_the_serial_playbook_holds_a_group_with_outdated_nodes_left_and_says_why():
    rolling = apply(apply(None, "start", now=T0, name="a"), "setup", now=at(1), group=group(outdated=3), target={})
    assert rolling["scale_down"] and not rolling["holding"]
    limited = apply(rolling, "left", outdated=2, stopped=False)
    assert limited["holding"] and limited["hold"] == {
        "reason": "limited", "message": "2 outdated node(s) were not replaced: they were outside this run (the play was limited); run again to go on"}
    assert apply(rolling, "left", outdated=1, stopped=True)["hold"]["reason"] == "stopped"
    # none left: the scale down; a rollback's phases are not held
    assert not apply(rolling, "left", outdated=0)["holding"]
    assert not apply(limited, "rollback")["holding"]


def test_a_step_that_says_pause_ends_the_steps_and_the_group_is_held_once_then_paused():
    rolling = apply(apply(None, "start", now=T0, name="a"), "setup", now=at(1), group=group(outdated=3), target={})
    rolling = apply(rolling, "steps", now=at(2), total=3, phase="upgrade")
    stop = {"reason": "window closed", "message": "the maintenance window closes before the next step could finish"}
    pause = dict(step("pause", decided=3), stop=stop)
    paused_step = apply(apply(rolling, "step", now=at(3), step=pause), "step_end", now=at(4), step=pause)
    # the steps are over and the hold is asked for; the scale down is not run on a held group
    assert paused_step["holding"] and paused_step["hold"] == stop and not paused_step["loop"]["more"]
    assert paused_step["window_closed"] and not rolling["window_closed"]
    held = apply(paused_step, "stop", status="paused", reason=stop["reason"], message=stop["message"] + ". The group is held")
    # held once: a later part of the serial playbook does not hold it again; the run starts no later group
    assert not held["holding"] and not held["scale_down"] and held["window_closed"]
    requested = apply(paused_step, "stop", status="paused", reason="requested", message="tagged")
    assert not requested["window_closed"]


def test_the_serial_playbook_ends_with_the_failures_its_groups_recorded_and_each_node_says_what_it_came_to():
    replaced = dict(apply(apply(None, "start", now=T0, name="a"), "finish", now=at(1)), terminated_ids=["i-1"])
    failed = apply(apply(None, "start", now=T0, name="b"), "failed", now=at(2), reason="drain", failed_task="t", message="m",
                   action="rollout", kept=True)
    paused = apply(apply(None, "start", now=T0, name="c"), "stop", status="paused", reason="limited", message="1 left")
    state = {name: {"rolling_update__run": run} for name, run in (("a", replaced), ("b", failed), ("c", paused))}
    outcome = serial_outcome(state)
    assert outcome["stopped"] and outcome["failures"] == [failed["failure_message"]] and "node_ok" not in outcome
    assert serial_outcome(state, "node-1", "a", "i-1")["node_line"] == "node-1 (i-1) replaced"
    held = serial_outcome(state, "node-9", "c", "i-9")
    assert held["node_ok"] and not held["node_replaced"] and held["node_line"] == "node-9 (i-9) not replaced: node group c paused: 1 left"
    assert not serial_outcome(state, "node-5", "b", "i-5")["node_ok"]
    assert serial_outcome({}) == {"failures": [], "stopped": False}


def test_the_serial_playbook_keeps_each_group_s_facts_in_the_place_of_what_it_kept_before():
    kept = serial_keep(None, "a", {"rolling_update__run": {"status": "started"}, "rolling_update__lock": {}})
    kept = serial_keep(kept, "b", {"rolling_update__run": {"status": "started"}})
    kept = serial_keep(kept, "a", {"rolling_update__run": {"status": "paused"}})
    assert kept == {"a": {"rolling_update__run": {"status": "paused"}}, "b": {"rolling_update__run": {"status": "started"}}}
    with pytest.raises(PlanError, match="facts"):
        serial_keep(kept, "", {})


def test_a_group_recorded_again_takes_the_place_of_its_entry():
    first = with_group({"node_groups": [], "changed": False}, apply(apply(None, "start", now=T0, name="a"), "finish", now=at(1)), now=at(1))
    both = with_group(first, apply(apply(None, "start", now=T0, name="b"), "finish", now=at(1)), now=at(2))
    failed = apply(apply(None, "start", now=T0, name="a"), "failed", now=at(3), reason="drain", failed_task="t", message="m", action="rollout")
    again = with_group(both, failed, now=at(4))
    assert [(group["name"], group["status"]) for group in again["node_groups"]] == [("a", "failed"), ("b", "up to date")]
    assert again["changed"]


@pytest.mark.parametrize("event, data, field", [
    ("dance", {}, "event"), ("steps", {"count": "some", "total": 1}, "count"), ("close", {}, "close"),
    ("step", {"step": None}, "step"),
])
def test_a_wrong_event_is_refused_naming_what_is_wrong(event, data, field):
    with pytest.raises(PlanError, match=field):
        apply(apply(None, "start", now=T0, name="ng"), event, now=at(1), **data)


def test_a_rollback_of_a_rollout_that_recorded_no_earlier_version_is_refused_naming_what_to_do():
    state = {"rollout_id": "r1", "previous_version": None, "target_version": 3}
    record = apply(apply(None, "start", now=T0, name="ng"), "recorded", now=at(1), group={"state": state}, action="roll back")
    assert record["recorded"] and record["has"]["refusal"] and record["refusal"].startswith("Rollout r1 of node group ng does not record")
    assert "version 3" in record["refusal"] and "nodeops.rollout.cancel" in record["refusal"]
    cancel = apply(apply(None, "start", now=T0, name="ng"), "recorded", now=at(1), group={"state": state}, action="cancel")
    assert cancel["refusal"] is None and not cancel["has"]["refusal"]
    back = dict(state, previous_version=2)
    assert apply(apply(None, "start", now=T0, name="ng"), "recorded", now=at(1), group={"state": back}, action="rollback")["refusal"] is None


def test_a_hook_of_a_step_gets_the_step_and_one_of_the_run_gets_none():
    record = apply(None, "start", now=T0, name="ng")
    step = {"drain": [{"node": "n1", "instance_id": "i-1"}], "terminate": ["i-0"]}
    after_drain = run.hook_context(record, "after_drain", step=step, drained=["n1"], rollback=True, message="")
    assert (after_drain["group"], after_drain["step"], after_drain["nodes"], after_drain["instance_ids"]) == ("ng", 1, ["n1"], ["i-1"])
    assert after_drain["terminate"] == ["i-0"] and after_drain["drained"] == ["n1"] and after_drain["rollback"]
    assert after_drain["result"]["name"] == "ng" and after_drain["result"]["status"] == "started"
    # not a step's event: no step, no nodes, whatever step is at hand; drained only for after_drain
    failure = run.hook_context(record, "on_failure", step=step, drained=["n1"], message="boom")
    assert failure["step"] is None and failure["nodes"] == [] and failure["drained"] == [] and failure["message"] == "boom"
    # the group's one line, as the end of a run prints it, and the page's path, for a message
    assert failure["summary"].startswith("ng: started, 0 of ") and failure["page"] == ""
    started = run.hook_context(record, "before_rollout", page="/var/log/rollout/result.html")
    assert started["event"] == "before_rollout" and started["step"] is None and started["page"] == "/var/log/rollout/result.html"


def test_a_failed_group_is_offered_a_rollback_only_when_its_rollout_records_an_earlier_version():
    record = apply(None, "start", now=T0, name="ng")
    failed = {"reason": "drain", "failed_task": "drain", "message": "n1 not drained.", "action": "rollout", "kept": True}
    # the nodes were replaced in place (needs-update): no prev=, so a rollback would refuse; the cancel ends it
    same = apply(record, "failed", now=at(5), recorded={"rollout_id": "r1", "previous_version": None, "target_version": 4},
                 **failed)["failure_message"]
    assert "nodeops.rollout.rollback" not in same and same.endswith(
        "or end it with the playbook nodeops.rollout.cancel (there is no earlier launch template version to roll back to: "
        "the rollout did not change the group's version).")
    # no rollout recorded (the run stopped before its surge): nothing to roll back or cancel, run again
    none = apply(record, "failed", now=at(5), recorded=None, **failed)["failure_message"]
    assert "rollback" not in none and "cancel" not in none and none.endswith("it resumes from the group's tags.")


def test_a_failed_group_s_words_say_where_it_stopped_what_is_kept_and_what_to_do():
    record = apply(None, "start", now=T0, name="ng")
    held = apply(record, "failed", now=at(5), reason="drain", failed_task="Upgrade | ng | drain", message="node n1 not drained.",
                 action="rollout", rollback_error="", kept="True", resumed=["AZRebalance"],
                 recorded={"rollout_id": "r1", "previous_version": 3, "target_version": 4})
    assert held["failure_message"].startswith("Rollout of node group ng stopped at 'Upgrade | ng | drain': node n1 not drained. ")
    assert "the processes this rollout suspended were resumed" in held["failure_message"]
    assert held["failure_message"].endswith("or roll the group back to launch template version 3 with the playbook "
                                            "nodeops.rollout.rollback.")
    # a lock refused or lost: the group is another run's, nothing is said of keeping it
    refused = apply(record, "failed", now=at(5), failed_task="take the lock", message="held by run x.", action="cancel", kept=False)
    assert refused["failure_message"] == "Rollout of node group ng stopped at 'take the lock': held by run x."
    rolled = apply(dict(apply(record, "target", target={"version": 4}), status="rolled back"), "failed", now=at(5),
                   failed_task="hook", message="bad.", action="rollout", kept=True)
    assert rolled["status"] == "rolled back" and "rolled back at 'hook': bad. The group was rolled back to launch template version 4" in \
        rolled["failure_message"] and "can take pods" not in rolled["failure_message"]


def test_a_failed_group_says_how_many_of_its_nodes_can_take_pods_as_read_never_assumed():
    record = apply(None, "start", now=T0, name="ng")
    kwargs = dict(now=at(5), reason="drain", failed_task="drain", message="stuck.", action="rollout", kept=True)
    serving = apply(record, "failed", taking_pods=["n1", "n2"], **kwargs)["failure_message"]
    assert "2 nodes of the group can take pods now: n1, n2." in serving
    assert "the rollout's taint and cordon are off the old nodes it did not drain" in serving
    # none can: said plainly, with what it means for the pods
    assert "No node of the group can take pods now" in apply(record, "failed", taking_pods=[], **kwargs)["failure_message"]
    # not read: nothing is claimed
    unread = apply(record, "failed", **kwargs)["failure_message"]
    assert "could not be read after the failure" in unread and "can take pods now" not in unread


@pytest.mark.parametrize("goal, phase, words", [
    ("replace", "upgrade", "yet outdated instances are left (something else keeps launching outdated instances?) after 5 steps. "
                           "The group is held; run again to go on."),
    ("cancel", "cancel", "yet surge is still owed after 5 steps. The group is held; run the cancel again to go on."),
    ("relaunch", "scale_up", "yet instances that never became Ready nodes are left after 5 steps. The group is held; run again to go on."),
])
def test_a_step_loop_whose_steps_run_out_says_so_in_the_words_of_its_goal(goal, phase, words):
    record = apply(apply(None, "start", now=T0, name="ng"), "open", now=at(0), phase=phase)
    record = apply(record, "steps", now=at(1), total=0, bound=0, goal=goal)
    for moment in range(2, 7):
        assert record["loop"]["more"] and not record["has"]["ran_out"]
        this = step(drain=["n-%d" % moment], decided=moment)
        record = apply(record, "step", now=at(moment), step=this)
        record = apply(record, "step_end", now=at(moment), step=this, drain=drain(["n-%d" % moment]))
    assert not record["loop"]["more"] and record["has"]["ran_out"]
    assert record["loop"]["ran_out"].startswith("Node group ng: every step") and record["loop"]["ran_out"].endswith(words)
    # the phase a loop did not open stays open for its own end
    assert record["phase_open"]["name"] == phase


def test_a_step_loop_with_a_goal_rollout_step_does_not_know_is_refused():
    with pytest.raises(PlanError, match="goal: 'drain' is not allowed; use one of replace, cancel, relaunch"):
        apply(apply(None, "start", now=T0, name="ng"), "steps", now=at(1), total=1, goal="drain")


def test_the_record_carries_what_a_drained_node_waits_for_from_the_read_of_its_load_balancers():
    web = {"name": "web", "arn": "arn:tg/web", "target_type": "instance", "deregistration_delay": 300, "sources": ["service shop/web"]}
    read = dict(group(), load_balancers={"target_groups": [web], "unseen": [], "post_drain_delay": 0})
    # before any read, the safe side: the step describes the group's own target groups, and the delay is the blind one
    assert apply(None, "start", now=T0, name="ng")["load_balancers"] == {"target_groups": None, "post_drain_delay": 60}
    record = apply(apply(None, "start", now=T0, name="ng"), "setup", now=at(1), group=read, target={"version": "2"})
    assert record["load_balancers"] == {"target_groups": [web], "post_drain_delay": 0}
    # a cancel's or a rollback's read of the recorded rollout settles them alike
    settled = {"target_groups": [], "unseen": [{"service": "shop/metal"}], "post_drain_delay": 60}
    unseen = dict(read, state={"rollout_id": "r1"}, load_balancers=settled)
    record = apply(apply(None, "start", now=T0, name="ng"), "recorded", now=at(1), group=unseen, action="cancel")
    assert record["load_balancers"] == {"target_groups": [], "post_drain_delay": 60}


def test_a_rollouts_record_keeps_of_the_preflight_only_the_nodes_with_a_finding_and_their_findings():
    found = [{"pod": "shop/web-1", "kind": "pdb_insufficient", "severity": "warning"}]
    preflight = {"n-0": {"blocking": found, "evicted": ["shop/web-1", "shop/web-2"], "predicted": "ok"},
                 "n-1": {"blocking": [], "evicted": ["shop/web-3"], "predicted": "ok"}}
    record = apply(apply(None, "start", now=T0, name="ng"), "setup", now=at(1), group=group(), target={"version": "2"},
                   preflight=preflight)
    # the report's table of findings is all the record carries: no pod a node would move, no node without a finding
    assert record["plan"]["preflight"] == {"n-0": {"blocking": found}}
    assert "warnings" not in record["plan"] and "blockers" not in record["plan"]


# The end of a group (tasks/group_end.yml carries out what group_end says, and keeps it with the event 'end').
END_READ = {"state": {"rollout_id": "r7", "target_version": "3"},
            "marked_undrained": [{"node": "old-1", "marks": ["taint", "cordon"]}, {"node": "skipped-1", "marks": ["cordon"]}],
            "marked": [{"node": "new-1", "marks": ["autoscaler"]}, {"node": "new-2", "marks": ["taint"]}],
            "marked_all": [{"node": "old-1", "marks": ["taint", "cordon"]}, {"node": "old-2", "marks": ["cordon"]},
                           {"node": "new-1", "marks": ["autoscaler"]}]}


def skipped_record():
    """A rollout whose drain of skipped-1 was skipped, then held by a step that said pause (the window closed)."""
    record = apply(None, "start", now=T0, name="ng")
    record = apply(record, "steps", now=at(1), total=2, phase="upgrade")
    this = step(drain=["skipped-1"], decided=2)
    record = apply(record, "step", now=at(2), step=this)
    record = apply(record, "drained", now=at(3), step=this, drain=drain(["skipped-1"], skipped=["skipped-1"]))
    record = apply(record, "step_end", now=at(4), step=this, drain=None)
    paused = dict(step("pause", decided=5), stop={"reason": "window closed", "message": "the maintenance window closed"})
    record = apply(record, "step", now=at(5), step=paused)
    return apply(record, "step_end", now=at(6), step=paused)


def test_a_held_group_gives_back_its_undrained_nodes_and_lets_only_the_autoscaler_off_its_new_nodes():
    end = run.group_end(skipped_record(), "held", group=END_READ)
    assert end["surge"] == "held" and end["read"] and end["strict"] and not end["check_end"] and not end["serving"]
    # the undrained outdated nodes with every mark, the new nodes with the autoscaler's only; a new node without it stays
    assert end["release"] == [{"node": "old-1", "marks": ["taint", "cordon"]}, {"node": "skipped-1", "marks": ["cordon"]},
                              {"node": "new-1", "marks": ["autoscaler"]}]
    assert end["closes_window"] and end["title"] == "Pause"


def test_a_held_group_is_recorded_paused_with_the_hold_s_reason_and_what_the_hold_kept():
    record = apply(skipped_record(), "end", now=at(9), way="held", group=END_READ, surge={"changed": True})
    assert record["status"] == "paused" and record["stop"]["reason"] == "window closed"
    assert record["stop"]["message"] == ("the maintenance window closed. The group is held: it keeps its surge and its "
                                         "nodeops.rollout/* state tags, the processes the rollout suspended are resumed, "
                                         "and only drained nodes stay cordoned.")
    # held now: no hold asked any more, and the run starts no later group
    assert not record["holding"] and record["window_closed"] and record["ended"]


def test_a_failure_the_run_holds_keeps_the_skipped_drains_cordoned_and_is_best_effort():
    end = run.group_end(skipped_record(), "failed", group=END_READ)
    assert [entry["node"] for entry in end["release"]] == ["old-1", "new-1"]
    assert end["surge"] == "held" and end["serving"] and not end["strict"] and not end["closes_window"]
    # unread (the best-effort read failed): nothing to give back, nothing to count
    unread = run.group_end(skipped_record(), "failed", group=None)
    assert unread["release"] == [] and not unread["releases"] and not unread["serving"] and unread["surge"] == "held"


def test_a_failure_rolled_back_or_no_longer_this_run_s_holds_nothing_and_reads_nothing():
    rolled_back = apply(skipped_record(), "status", now=at(7), status="rolled back")
    for record, kept in ((rolled_back, True), (skipped_record(), False)):
        end = run.group_end(record, "failed", group=END_READ, kept=kept)
        assert end["surge"] is None and not end["read"] and end["release"] == [] and not end["serving"]


def test_a_failure_s_end_records_what_the_hold_resumed_and_the_nodes_that_take_pods():
    failure = {"reason": "drain", "failed_task": "drain 1 nodes", "message": "blocked.", "action": "rollout", "kept": True,
               "rollback_error": "", "rolled_back_from": {}, "permission": None}
    record = apply(skipped_record(), "end", now=at(9), way="failed", group=END_READ, surge={"resumed_processes": ["AZRebalance"]},
                   serving={"taking_pods": ["old-1", "new-1"]}, failure=failure)
    assert record["status"] == "failed" and record["stop"]["taking_pods"] == ["old-1", "new-1"]
    assert "2 nodes of the group can take pods now: old-1, new-1." in record["failure_message"]
    assert "and the processes this rollout suspended were resumed" in record["failure_message"]
    # the rollout recorded on the group (the end's read) offers no rollback: it records no earlier version
    assert "nodeops.rollout.cancel" in record["failure_message"]
    with pytest.raises(PlanError, match="failure"):
        apply(skipped_record(), "end", now=at(9), way="failed", group=END_READ, surge={})


def test_a_cancel_gives_every_marked_node_back_restores_the_group_and_says_what_it_did():
    record = apply(apply(None, "start", now=T0, name="ng"), "open", now=at(1), phase="cancel")
    record = dict(record, terminated_ids=["i-1", "i-2"])
    end = run.group_end(record, "cancelled", group=END_READ)
    assert end["release"] == END_READ["marked_all"] and end["surge"] == "restored" and end["title"] == "Cancel"
    record = apply(record, "end", now=at(5), way="cancelled", group=END_READ, surge={"changed": True})
    assert record["status"] == "cancelled" and record["phase_seconds"] == {"cancel": 4.0}
    assert record["stop"]["message"] == ("rollout r7 cancelled: 2 instance(s) given back, 3 node(s) released, sizes "
                                         "restored; the group still launches launch template version 3")


def test_the_scale_down_s_end_gives_back_the_up_to_date_nodes_checks_the_end_and_keeps_the_autoscaler_s_move():
    record = apply(apply(None, "start", now=T0, name="ng"), "open", now=at(1), phase="scale_down")
    end = run.group_end(record, "done", group=END_READ)
    assert end["release"] == END_READ["marked"] and end["check_end"] and end["surge"] == "restored" and end["strict"]
    assert end["surge_task"].startswith("restore") and end["title"] == "Scale down"
    record = apply(record, "end", now=at(3), way="done", group=END_READ, surge={"autoscaler_delta": 2})
    assert record["autoscaler_delta"] == 2 and record["phase_seconds"] == {"scale_down": 2.0} and record["status"] == "started"
    # nothing marked: nothing to give back, and the end is not read again
    assert not run.group_end(record, "done", group={"marked": []})["releases"]


def test_a_way_of_ending_that_is_not_known_is_refused_naming_the_ways():
    with pytest.raises(PlanError, match="way: 'stopped' is not allowed; use one of done, held, cancelled, failed"):
        run.group_end(apply(None, "start", now=T0, name="ng"), "stopped")
    with pytest.raises(PlanError, match="way"):
        apply(apply(None, "start", now=T0, name="ng"), "end", way="stopped")


def test_the_nodes_a_drain_skipped_are_quarantined_and_one_more_than_the_cap_stops_the_run_naming_each():
    blocked = [{"pod": "shop/pinned-0", "pdb": "shop/pinned", "message": "PodDisruptionBudget shop/pinned allows 0 disruption(s)"}]
    record = apply(apply(None, "start", now=T0, name="ng"), "steps", now=at(0), total=3, phase="upgrade")

    def skip(record, node, moment):
        this = step(drain=[node], decided=moment)
        record = apply(record, "step", now=at(moment), step=this)
        result = drain([node], skipped=[node])
        result["nodes"][node].update(status="skipped", blocking=blocked)
        return apply(record, "drained", now=at(moment + 1), step=this, drain=result, max_quarantined=1)

    record = skip(record, "n-0", 1)
    assert [entry["node"] for entry in record["quarantined"]] == ["n-0"] and not record["has"]["quarantine_stop"]
    record = skip(record, "n-1", 5)
    assert record["has"]["quarantine_stop"]
    assert record["quarantine_stop"].startswith(
        "2 nodes could not be drained, more than rolling_update_max_quarantined (1): n-0 (shop/pinned-0"), record["quarantine_stop"]
    assert "labelled nodeops.rollout/quarantined=true" in record["quarantine_stop"] and "run the upgrade again" in record["quarantine_stop"]
    assert [entry["node"] for entry in group_result(record, now=at(9))["quarantined"]] == ["n-0", "n-1"]
    # no cap: the run goes on, the nodes still quarantined
    free = apply(apply(None, "start", now=T0, name="ng"), "steps", now=at(0), total=3, phase="upgrade")
    this = step(drain=["n-0", "n-1"], decided=1)
    result = drain(["n-0", "n-1"], skipped=["n-0", "n-1"])
    free = apply(apply(free, "step", now=at(1), step=this), "drained", now=at(2), step=this, drain=result)
    assert len(free["quarantined"]) == 2 and not free["has"]["quarantine_stop"]
