# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One node group's run record: what the role keeps of a group while it rolls it, and the group's result. Pure.

The role keeps one record per group (the fact ``rolling_update__run``) and changes it only through :func:`apply`, one
event at a time, with what a module returned: the phases' clocks, each step of the step engine (its terminations,
drains and times), how the group stopped. :func:`group_result` turns the record into the group's entry of
``rolling_update_result``, with the same fields whether the group finished, stopped or failed: the counts of a failed
group are what the run did before it stopped. The serial playbook carries this one record between its plays.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, counted, truthy
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.preflight import stop_message
from ansible_collections.nodeops.rollout.plugins.module_utils.report.records import iso, step_record, summary_lines, time_of
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.goals import GOALS
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import LABEL_QUARANTINED
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_events import blockers_text
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import DRAIN_OPTION_VARIABLES
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.targets import BLIND_DELAY_SECONDS

# What the step loop counts its terminations as: nodes replaced (an upgrade, a rollback, a cancel's given back), or
# apart from them (the scale down's pay back of surge left, the relaunch of instances that never became nodes).
REPLACED, APART = "replaced", "apart"
# The group's status once it stopped without finishing; 'started' while it rolls.
STOPPED = ("paused", "failed", "rolled back", "cancelled", "no rollout")


def start(name, now):
    """A group's record at the start of its run."""
    return {
        "name": name, "status": "started", "stop": {}, "started_at": iso(now),
        "phases": [], "phase_seconds": {}, "phase_open": None, "phase_prefix": "",
        "steps": [], "step_number": 1, "step_open": False, "step_started_at": None, "finished": False,
        "loop": {"count": REPLACED, "total": 0, "max": 0, "done": 0, "more": False, "goal": "replace", "ran_out": None},
        "batches_done": [], "terminated_ids": [], "apart_ids": [], "termination_waits": [], "held": [],
        "skipped_nodes": [], "new_nodes": [], "end_marked": [], "hook_failure": {},
        # the nodes a drain skipped, labelled quarantined, each with what holds it; why the run stops for them (or None)
        "quarantined": [], "quarantine_stop": None,
        "target": {}, "target_label": "", "plan": {}, "autoscaler_delta": 0,
        # what a drained node waits for before its termination, as node_group_info settled it from the load balancers
        # it read (its load_balancers: the target groups watched, the post-drain delay): every step's. Unread, the
        # safe side: the step describes the group's own target groups (null) and the delay is the blind one.
        "load_balancers": {"target_groups": None, "post_drain_delay": BLIND_DELAY_SECONDS},
        # whether the run changes the group (outdated instances, or a rollout recorded to finish), and whether
        # outdated instances are left to replace (else the scale down finishes what an earlier run left)
        "needed": False, "outdated_left": False,
        # a cancel's or a rollback's read found a rollout recorded on the group; why a rollback cannot go back (or null)
        "recorded": False, "refusal": None,
        # what the play stops with once the group failed
        "failure_message": None,
        # the serial playbook's end of a group whose outdated nodes it did not all replace: why the group is held
        "hold": None,
    }


def _seconds(since, now):
    started = time_of(since)
    return round((now - started).total_seconds(), 1) if started else 0.0


def _open_phase(record, name, now):
    record["phase_open"] = {"name": record["phase_prefix"] + name, "started_at": iso(now)}


def _close_phase(record, now):
    phase = record["phase_open"]
    if not phase:
        raise PlanError("close: no phase of %s is open" % record["name"])
    seconds = _seconds(phase["started_at"], now)
    record["phase_seconds"][phase["name"]] = seconds
    record["phases"].append({"name": phase["name"], "started_at": phase["started_at"], "ended_at": iso(now), "seconds": seconds})
    record["phase_open"] = None


def _steps(record, count, total, first=None, bound=None, goal="replace", phase=None, now=None):
    """A step loop begins (opening ``phase`` when given, closed once the loop is done or paused), towards ``goal``
    (what rollout_step is asked for: replace the outdated instances, give the surge back, relaunch instances that never
    became nodes): its terminations count as ``count``; ``total`` is what it
    has to do (the progress lines); ``bound``, the instances its steps may drain or terminate (default ``total``)."""
    if count not in (REPLACED, APART):
        raise PlanError("count: %r is not allowed; use %s or %s" % (count, REPLACED, APART))
    if goal not in GOALS:
        raise PlanError("goal: %r is not allowed; use one of %s" % (goal, ", ".join(GOALS)))
    total = int(total or 0)
    record["step_number"] = len(record["steps"]) + 1 if first is None else int(first)
    # every step drains or terminates something, and each instance is drained and terminated once: twice the count is
    # enough, with room for drains a killed run left half done
    bound = int(bound if bound is not None else total)
    record["loop"] = {"count": count, "total": total, "max": record["step_number"] - 1 + bound * 2 + 5, "done": 0, "more": True,
                      "goal": goal, "ran_out": None, "closes": phase is not None}
    if phase is not None:
        _open_phase(record, phase, now)
    record["finished"] = False
    record["apart_ids"] = []
    _count_done(record)


def _ran_out(record):
    """What the run stops with when every step of its loop did something, yet the loop's goal is not reached."""
    loop, name = record["loop"], record["name"]
    if loop["goal"] == "relaunch":
        left = "every step relaunched something, yet instances that never became Ready nodes are left"
    elif loop["goal"] == "cancel":
        left = "every step gave something back, yet surge is still owed"
    else:
        left = ("every step drained or terminated something, yet outdated instances are left (something else keeps "
                "launching outdated instances?)")
    again = "run the cancel again" if (record["phase_open"] or {}).get("name") == "cancel" else "run again"
    return "Node group %s: %s after %d steps. The group is held; %s to go on." % (name, left, loop["max"], again)


def _count_done(record):
    key = "terminated_ids" if record["loop"]["count"] == REPLACED else "apart_ids"
    record["loop"]["done"] = len(set(record[key]))


PLAN_KEYS = ("surge", "batch_size", "batch_count", "canary", "eta_seconds", "target_groups", "batches", "group_size",
             "taint_effect", "timings", "standby", "protected", "surge_choices", "post_drain_delay", "aged")


def _setup(record, group, target, preflight=None):
    """The setup resolved the target and read the group (node_group_info's group, with its plan)."""
    if not isinstance(group, dict) or not isinstance(group.get("plan"), dict):
        raise PlanError("group: %r is not allowed; use a node group node_group_info returned with its plan" % (group,))
    outdated = int(group.get("outdated_count") or 0)
    resumed = group.get("state") is not None
    record["target"] = target or {}
    record["target_label"] = target_label(record["target"])
    _load_balancers(record, group)
    record["needed"] = outdated > 0 or resumed
    record["outdated_left"] = outdated > 0
    # set by the last step of this pass; a pass without steps gives nothing back before its end read
    record["end_marked"] = []
    # what the report shows of the plan beside what happened, and the model the progress lines correct
    record["plan"] = dict({key: group["plan"].get(key) for key in PLAN_KEYS},
                          outdated=[entry["instance_id"] for entry in group.get("outdated") or []], resumed=resumed,
                          **_findings(preflight, blocking_only=True))


def _load_balancers(record, group):
    """What the steps wait for before a termination, from a read of node_group_info with load_balancers."""
    balancers = group.get("load_balancers") or {}
    record["load_balancers"] = {"target_groups": list(balancers.get("target_groups") or []),
                                "post_drain_delay": balancers.get("post_drain_delay") or 0}


def target_label(target):
    """The target as the Events on the nodes name it: ``launch template lt-1 version 3 (ami-2)``, or '' before one."""
    if not target or target.get("version") is None:
        return ""
    image = " (%s)" % target["image_id"] if target.get("image_id") else ""
    return "launch template %s version %s%s" % (target.get("launch_template_id") or "?", target["version"], image)


def _findings(preflight, blocking_only=False):
    """node_drain's pre-flight (its ``nodes``) and what it found, split into blockers and warnings.

    ``blocking_only`` (a rollout's record): the pre-flight alone, and of it only the nodes with a finding and only their
    findings (the report's table). The record is carried from task to task, and Ansible walks all of it each time: the
    pods each node would move are in its steps' drains, and a whole pre-flight of 1 000 nodes would add 21 000 pod names
    to every task."""
    preflight = preflight if isinstance(preflight, dict) else {}
    if blocking_only:
        return {"preflight": {name: {"blocking": node["blocking"]} for name, node in preflight.items()
                              if isinstance(node, dict) and node.get("blocking")}}
    found = [blocker for node in preflight.values() if isinstance(node, dict) for blocker in node.get("blocking") or []]
    # what would stop the upgrade before any change (node_drain's blockers marked stops_upgrade), and the words it stops with
    would_stop = [{"node": name, "pod": blocker.get("pod"), "kind": blocker.get("kind"), "pdb": blocker.get("pdb"),
                   "message": blocker.get("message"), "gets_past": blocker.get("gets_past") or []}
                  for name in sorted(preflight) if isinstance(preflight[name], dict)
                  for blocker in preflight[name].get("blocking") or [] if blocker.get("stops_upgrade")]
    return {"preflight": preflight, "blockers": [entry for entry in found if entry.get("severity") == "error"],
            "warnings": [entry for entry in found if entry.get("severity") != "error"],
            "would_stop": would_stop, "would_stop_message": stop_message(would_stop, DRAIN_OPTION_VARIABLES)}


def _recorded(record, group, action):
    """A cancel, a rollback or their plan read the rollout recorded on the group (node_group_info's group)."""
    state = group.get("state") if isinstance(group, dict) else None
    record["recorded"] = state is not None
    if isinstance(group, dict):
        _load_balancers(record, group)
    if state is None:
        record["status"] = "no rollout"
        record["stop"] = {"reason": "no rollout",
                          "message": "no rollout is recorded on the group (no nodeops.rollout/* state tags); there is nothing to %s"
                          % action}
    else:
        record["needed"] = True
        record["target"] = group.get("target") or record["target"]
        record["target_label"] = target_label(record["target"])
        if action in ("rollback", "roll back") and state.get("previous_version") is None:
            record["refusal"] = _no_previous_version(record["name"], state)


def _no_previous_version(name, state):
    """A rollback goes back to the launch template version the group launched before the rollout, which the scale up
    records (state prev=). A rollout that did not move the group to another version - no target, or one the group
    already launched, replacing the nodes annotated nodeops.rollout/needs-update - records none: there is no version to
    go back to. The rollback and its plan stop on it alike, before any change."""
    return ("Rollout %s of node group %s does not record a launch template version the group launched before (tag "
            "nodeops.rollout/state has no prev=): it rolls the group to version %s, the version its old nodes already run, so "
            "there is no earlier version to roll back to. End it with the playbook nodeops.rollout.cancel (it gives the surge "
            "back and releases the nodes), or roll the group to another version with the upgrade playbook "
            "(rolling_update_node_groups[].launch_template_version)." % (state.get("rollout_id"), name, state.get("target_version")))


def _planned(record, group, ltv, preflight, controls):
    """The plan of a rollout or a rollback: node_group_info's group against the target launch_template_version
    resolved (``ltv``), node_drain's pre-flight of the outdated nodes (its ``nodes``), the operator's controls."""
    if not isinstance(group, dict) or not isinstance(group.get("plan"), dict):
        raise PlanError("group: %r is not allowed; use a node group node_group_info returned with its plan" % (group,))
    plan = group["plan"]
    outdated = group.get("outdated") or []
    count = int(group.get("outdated_count") or 0)
    record["needed"] = count > 0
    record["status"] = "planned" if count > 0 else "up to date"
    record["target"] = (ltv or {}).get("target") or {}
    # what a rollback of it would go back to: for a rollback's plan, the version it goes back to
    controls = dict(controls or {})
    controls["previous_version"] = record["target"].get("version") if truthy(controls.get("rollback")) else (ltv or {}).get("previous_version")
    record["plan"] = {
        "launch_template_version_created": bool((ltv or {}).get("created")),
        "outdated": [entry["instance_id"] for entry in outdated],
        "outdated_nodes": [entry["node"] for entry in outdated if entry.get("node")],
        "surge": plan.get("surge"), "batch_size": plan.get("batch_size"), "canary": plan.get("canary"),
        "batches": plan.get("batches"), "eta_seconds": plan.get("eta_seconds"), "target_groups": plan.get("target_groups"),
        "standby": plan.get("standby"), "protected": plan.get("protected"), "surge_choices": plan.get("surge_choices"),
        "post_drain_delay": plan.get("post_drain_delay"), "timings": plan.get("timings"), "controls": controls,
        # rotation by age: the nodes replaced for it, apart (null without a max_node_age)
        "aged": plan.get("aged"),
    }
    record["plan"].update(_findings(preflight))


def cancel_release(group):
    """The nodes a cancel gives back without terminating them: every marked node its pay back does not take."""
    paid = {entry.get("node") for entry in group.get("cancel_payback") or []}
    return [entry for entry in group.get("marked_outdated") or [] if entry.get("node") not in paid] + list(group.get("marked") or [])


# The ways a group's run ends, each carried out by the role's one end of a group (tasks/group_end.yml): ``done``, the
# scale down's end (the group replaced or up to date: its sizes restored); ``held``, a clean stop with the surge kept
# (a step said pause, or the serial playbook left outdated nodes out or stopped its batches: the record's hold);
# ``cancelled``, a cancel gave the surge back (the sizes restored); ``failed``, a failure (the group held, when the run
# still holds it and did not roll it back). A rolled back group ends as ``done`` (its own scale down), then as ``failed``
# when a failed rollout was rolled back.
ENDS = ("done", "held", "cancelled", "failed")
# the first word of the end's task names, as the phase each way of ending closes
_END_TITLES = {"done": "Scale down", "held": "Pause", "cancelled": "Cancel", "failed": "Rolling update"}


def group_end(record, way, group=None, kept=True):
    """What the end of the group ``way`` (one of ENDS) does, each a plain value the role's end of a group reads:
    ``read`` (the group's nodes are read first), ``release`` (with ``group``, that read: the entries node_taint's
    release takes off, each with the marks to take off) and ``releases`` (whether any), ``check_end`` (the end is read
    again and the run stops if the group is not replaced), ``surge`` (asg_surge's state: held, restored, or None),
    ``serving`` (the nodes that can take pods are read, for the failure message), ``strict`` (a failure of the end
    stops the run: not a failure's end, which must not hide the failure it reports), ``closes_window`` (the run starts
    no later group) and ``title``, ``surge_task`` (the tasks' names). ``kept``: a failed group is still this run's
    (failure_cause's kept: its lock was ours to the end)."""
    if way not in ENDS:
        raise PlanError("way: %r is not allowed; use one of %s" % (way, ", ".join(ENDS)))
    if not isinstance(record, dict) or "phases" not in record:
        raise PlanError("record: %r is not a run record; start one with run_record's start" % (record,))
    # a failed group is held, unless it was rolled back or is another run's now
    holds = way == "held" or (way == "failed" and truthy(kept) and record["status"] != "rolled back")
    surge = "held" if holds else "restored" if way in ("done", "cancelled") else None
    group = group if isinstance(group, dict) else None
    release = _end_release(record, way, holds, group) if group else []
    return {
        "way": way, "read": holds or way != "failed", "release": release, "releases": bool(release),
        "check_end": way == "done", "surge": surge, "serving": way == "failed" and holds and group is not None,
        "strict": way != "failed", "closes_window": way == "held" and record["window_closed"],
        "title": _END_TITLES[way],
        "surge_task": ("keep the surge, resume the processes this rollout suspended" if surge == "held"
                       else "restore the group's maximum size and resume our processes"),
    }


def _end_release(record, way, holds, group):
    """The nodes the end gives back, with the marks it takes off each. Held: the outdated nodes not drained take pods
    again (the taint and the rollout's cordon come off), drained ones stay cordoned for the run that resumes to
    terminate, and the new nodes are no longer kept from the cluster-autoscaler; after a failure, the nodes whose drain
    the run skipped also stay cordoned, with the pods that held them, for the operator (as the skip promises). A
    cancel: every node the rollout marked. The scale down: the up-to-date nodes."""
    if holds:
        kept = set(record["skipped_nodes"]) if way == "failed" else set()
        undrained = [entry for entry in group.get("marked_undrained") or [] if entry.get("node") not in kept]
        autoscaler = [dict(entry, marks=["autoscaler"]) for entry in group.get("marked") or []
                      if "autoscaler" in (entry.get("marks") or [])]
        return undrained + autoscaler
    if way == "cancelled":
        return list(group.get("marked_all") or [])
    if way == "done":
        return list(group.get("marked") or [])
    # a failure that does not hold the group (rolled back, or another run's now) gives nothing back
    return []


def _end(record, way, group, surge, serving, failure, now):
    """The group ended ``way`` (see :func:`group_end`): ``group``, the end's read of its nodes (None: not read);
    ``surge``, what asg_surge returned; ``serving``, the read of the nodes that can take pods; ``failure``, for a
    failure, what failed (reason, failed_task, message, rolled_back_from, action, permission, rollback_error, kept)."""
    if way not in ENDS:
        raise PlanError("way: %r is not allowed; use one of %s" % (way, ", ".join(ENDS)))
    group = group if isinstance(group, dict) else {}
    surge = surge if isinstance(surge, dict) else {}
    if way == "done":
        record["autoscaler_delta"] = int(surge.get("autoscaler_delta") or 0)
        _close_phase(record, now)
    elif way == "held":
        hold = record.get("hold") or {}
        _stop(record, "paused", hold.get("reason"), "%s. The group is held: it keeps its surge and its nodeops.rollout/* state "
              "tags, the processes the rollout suspended are resumed, and only drained nodes stay cordoned." % hold.get("message"))
    elif way == "cancelled":
        state = group.get("state") or {}
        _close_phase(record, now)
        message = ("rollout %s cancelled: %d instance(s) given back, %d node(s) released, sizes restored; the group still "
                   "launches launch template version %s")
        _stop(record, "cancelled", "cancelled", message % (state.get("rollout_id"), len(record["terminated_ids"]),
                                                           len(group.get("marked_all") or []), state.get("target_version")))
    elif way == "failed":
        if not isinstance(failure, dict):
            raise PlanError("failure: %r is not allowed; use what failed: its reason, task and message" % (failure,))
        _failed(record, dict(failure, resumed=surge.get("resumed_processes") or [],
                             taking_pods=serving.get("taking_pods") if isinstance(serving, dict) else None,
                             recorded=group.get("state") if group else None))


def _cancel_planned(record, group):
    """The plan of a cancel: what it would give back and release (node_group_info's group, with the rollout recorded)."""
    state = group.get("state") or {}
    record["status"] = "planned"
    record["needed"] = True
    record["plan"] = {"cancel_payback": list(group.get("cancel_payback") or []), "release": cancel_release(group),
                      "rollout_id": state.get("rollout_id")}


def _step(record, step, now):
    """rollout_step decided a step."""
    if not isinstance(step, dict):
        raise PlanError("step: %r is not allowed; use the step rollout_step returned" % (step,))
    record["finished"] = step.get("action") in ("done", "pause")
    if step.get("action") == "pause":
        # the role holds the group once the steps are over (a pause request, the maintenance window closing)
        record["hold"] = dict(step.get("stop") or {})
    record["held"] = list(step.get("held") or [])
    record["new_nodes"] = list(step.get("new_nodes") or [])
    record["end_marked"] = list(step.get("marked") or [])
    record["step_open"] = True
    record["step_started_at"] = iso(now)


def _terminated(record, step):
    """The step's terminations went through the termination gate."""
    terminated = list(step.get("terminate") or [])
    if terminated:
        key = "terminated_ids" if record["loop"]["count"] == REPLACED else "apart_ids"
        record[key] = record[key] + terminated
        record["termination_waits"] = record["termination_waits"] + list(step.get("termination_waits") or [])
        _count_done(record)


def batch_record(record, step, drain, now):
    """The entry of ``batches_done`` for a step whose drain ran (also one that skipped nodes)."""
    nodes = list((drain.get("nodes") or {}).values())
    skipped = list(drain.get("skipped_nodes") or [])

    def every(field):
        return [item for node in nodes for item in (node.get(field) or [])]

    return {
        "index": record["step_number"],
        "instance_ids": [entry["instance_id"] for entry in step.get("drain") or [] if entry.get("node") not in skipped],
        "nodes": list(drain.get("drained") or []),
        "skipped_nodes": skipped,
        "terminated": list(step.get("terminate") or []),
        "decremented": step.get("decrement"),
        "evicted": every("evicted"),
        "restarted": [entry.get("pod") if isinstance(entry, dict) else entry for entry in every("restarted")],
        "deleted": every("deleted"),
        "force_deleted": every("force_deleted"),
        "blocking": every("blocking"),
        "drain_seconds": drain.get("seconds") or 0,
        "waited_seconds": step.get("waited_seconds"),
        "seconds": _seconds(record["step_started_at"], now),
        "rollback": record["phase_prefix"] == "rollback_",
    }


def _drained(record, step, drain, now, max_quarantined=None):
    if not isinstance(drain, dict):
        raise PlanError("drain: %r is not allowed; use what node_drain returned" % (drain,))
    skipped = list(drain.get("skipped_nodes") or [])
    record["skipped_nodes"] = record["skipped_nodes"] + skipped
    record["batches_done"] = record["batches_done"] + [batch_record(record, step, drain, now)]
    nodes = drain.get("nodes") or {}
    known = set(entry["node"] for entry in record["quarantined"])
    record["quarantined"] = record["quarantined"] + [
        {"node": name, "blocked_by": blockers_text((nodes.get(name) or {}).get("blocking") or []) or (nodes.get(name) or {}).get("message") or "?"}
        for name in skipped if name not in known]
    if max_quarantined is not None and len(record["quarantined"]) > int(max_quarantined):
        record["quarantine_stop"] = quarantine_stop(record["quarantined"], int(max_quarantined))


def quarantine_stop(quarantined, cap):
    """Why the run stops once more nodes than ``cap`` (rolling_update_max_quarantined) could not be drained, naming each
    with what holds it, and what to do."""
    return ("%s could not be drained, more than rolling_update_max_quarantined (%d): %s. They stay cordoned, labelled %s=true; "
            "the outdated nodes not yet drained are left as they are. Free what holds each (scale its workload up or relax "
            "its budget), then run the upgrade again: it drains them and goes on; or raise rolling_update_max_quarantined to "
            "go on past them" % (counted(len(quarantined), "node"), cap, "; ".join(
                "%s (%s)" % (entry["node"], entry["blocked_by"]) for entry in quarantined), LABEL_QUARANTINED))


def _step_end(record, step, drain, now):
    """The step is over (or failed: ``drain`` is then the failed task's result): kept for the report."""
    if not record["step_open"]:
        return
    record["steps"] = record["steps"] + [step_record(step, record["step_number"], drain)]
    record["step_open"] = False
    if not record["finished"]:
        record["step_number"] += 1
    # one more step, unless the loop is done or its steps ran out (the role then stops with ran_out)
    record["loop"]["more"] = not record["finished"] and record["step_number"] <= record["loop"]["max"]
    record["loop"]["ran_out"] = None if record["finished"] or record["loop"]["more"] else _ran_out(record)
    if record["finished"] and record["loop"].get("closes"):
        _close_phase(record, now)


def _failed(record, data):
    """The group failed: why, where, and the words the play stops with."""
    # a group rolled back after its failure says so, and from which target
    rolled_back = record["status"] == "rolled back"
    record["status"] = "rolled back" if rolled_back else "failed"
    record["stop"] = {"reason": data.get("reason"), "failed_task": data.get("failed_task"), "message": data.get("message")}
    if data.get("permission"):
        # a request the identity may not make: which, and the rule or statement that grants it
        record["stop"]["permission"] = data["permission"]
    if rolled_back:
        record["stop"]["rolled_back_from"] = data.get("rolled_back_from")
    # the group's nodes that can take pods once the failure gave back the nodes not drained, as read (None: unread)
    record["stop"]["taking_pods"] = data.get("taking_pods")
    record["failure_message"] = _failure_message(record, data.get("action"), data.get("rollback_error"),
                                                 truthy(data.get("kept")), bool(data.get("resumed")), data.get("recorded"))


def _stop(record, status, reason=None, message=None, **more):
    record["status"] = status
    if status == "paused":
        # held now: the hold asked for is done
        record["hold"] = None
    if reason is not None:
        record["stop"] = dict({"reason": reason, "message": message}, **more)


EVENTS = ("start", "open", "close", "setup", "recorded", "planned", "cancel_planned", "target", "finish", "failed",
          "steps", "step", "terminated", "drained", "step_end", "stop", "status", "rollback", "hook_failure",
          "restored", "left", "end")


def apply(record, event, now=None, **data):
    """The record after ``event`` (one of EVENTS) with ``data``; the record given is not changed."""
    now = now or datetime.now(timezone.utc)
    if event not in EVENTS:
        raise PlanError("event: %r is not allowed; use one of %s" % (event, ", ".join(EVENTS)))
    if event == "start":
        return _flags(start(data["name"], now))
    if not isinstance(record, dict) or "phases" not in record:
        raise PlanError("record: %r is not a run record; start one with run_record's start" % (record,))
    record = {key: (list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value)
              for key, value in record.items()}
    if event == "open":
        _open_phase(record, data["phase"], now)
    elif event == "close":
        _close_phase(record, now)
    elif event == "setup":
        _setup(record, data["group"], data.get("target"), data.get("preflight"))
    elif event == "recorded":
        _recorded(record, data["group"], data["action"])
    elif event == "failed":
        _failed(record, data)
    elif event == "end":
        _end(record, data["way"], data.get("group"), data.get("surge"), data.get("serving"), data.get("failure"), now)
    elif event == "planned":
        _planned(record, data["group"], data["ltv"], data.get("preflight"), data.get("controls"))
    elif event == "cancel_planned":
        _cancel_planned(record, data["group"])
    elif event == "finish":
        # the group's phases ran to their end (a paused group stays paused)
        if record["status"] == "started":
            record["status"] = "replaced" if record["needed"] else "up to date"
    elif event == "target":
        record["target"] = data.get("target") or {}
        record["plan"] = data.get("plan") or {}
    elif event == "steps":
        _steps(record, data.get("count", REPLACED), data.get("total"), data.get("first"), data.get("bound"),
               data.get("goal", "replace"), data.get("phase"), now)
    elif event == "step":
        _step(record, data["step"], now)
    elif event == "terminated":
        _terminated(record, data["step"])
    elif event == "drained":
        _drained(record, data["step"], data["drain"], now, data.get("max_quarantined"))
    elif event == "step_end":
        _step_end(record, data["step"], data.get("drain"), now)
    elif event == "stop":
        _stop(record, data["status"], data.get("reason"), data.get("message"),
              **{key: value for key, value in data.items() if key not in ("status", "reason", "message")})
    elif event == "status":
        record["status"] = data["status"]
    elif event == "rollback":
        # a rollback's phases are timed apart from the rollout's; the old nodes a drain of the rollout skipped are up to
        # date now (the setup releases them), and the holds of its drained instances are not the rollback's
        record["phase_prefix"] = "rollback_"
        record["skipped_nodes"] = []
        record["held"] = []
        record["hold"] = None
    elif event == "hook_failure":
        record["hook_failure"] = data.get("failure") or {}
    elif event == "restored":
        record["autoscaler_delta"] = int((data.get("restore") or {}).get("autoscaler_delta") or 0)
    elif event == "left":
        record["hold"] = _left(record, data["outdated"], data.get("stopped"))
    return _flags(record)


def _left(record, outdated, stopped):
    """At the end of the serial playbook, ``outdated`` nodes of the group are left (it replaced only its hosts' nodes):
    why the group is held as a pause holds it, or None - none are left, or a drain gave up on some (the scale down then
    stops, naming them). ``stopped``: a group of the run failed, which stops the batches of every group."""
    outdated = int(outdated or 0)
    if not record["scale_down"] or outdated <= 0 or record["skipped_nodes"]:
        return None
    why = ("a node group of this run failed, which stops the batches of every group" if truthy(stopped)
           else "they were outside this run (the play was limited)")
    return {"reason": "stopped" if truthy(stopped) else "limited",
            "message": "%d outdated node(s) were not replaced: %s; run again to go on" % (outdated, why)}


def serving_line(taking_pods):
    """What a stopped run says of the group's capacity, from the nodes it read as able to take pods (None: not read)."""
    if taking_pods is None:
        return "The group's nodes could not be read after the failure: check that they take pods."
    if not taking_pods:
        return ("No node of the group can take pods now (none is Ready, uncordoned and free of a taint that keeps pods off): "
                "pods that need to be scheduled wait Pending.")
    return "%s of the group can take pods now: %s." % (counted(len(taking_pods), "node"), ", ".join(taking_pods))


def _other_way(action, recorded):
    """What else a held rollout's group can be given after a failure than a run again: a rollback when the rollout
    ``recorded`` on the group (node_group_info's ``state`` as the hold left it) names the version the group launched
    before, else a cancel when a rollout is recorded (a rollback would refuse: there is no earlier version), else nothing
    (none recorded: there is nothing to roll back or cancel)."""
    if action != "rollout" or not isinstance(recorded, dict):
        return ""
    if recorded.get("previous_version") is not None:
        return (", or roll the group back to launch template version %s with the playbook nodeops.rollout.rollback"
                % recorded["previous_version"])
    return (", or end it with the playbook nodeops.rollout.cancel (there is no earlier launch template version to roll "
            "back to: the rollout did not change the group's version)")


def _failure_message(record, action, rollback_error, kept, resumed, recorded=None):
    """What the play stops with after a group failed: where and why, what the rollback did (or that it failed too), and,
    for a group this run still held (``kept``: its lock was ours to the end), that the cluster keeps serving and what to
    do; ``resumed``: the hold resumed processes the rollout had suspended; ``recorded``: the rollout recorded on the
    group after the hold (see :func:`_other_way`)."""
    stop = record["stop"]
    rolled_back = record["status"] == "rolled back"
    parts = ["Rollout of node group %s %s at '%s': %s" % (record["name"], "rolled back" if rolled_back else "stopped",
                                                          stop.get("failed_task") or "?", stop.get("message") or "(no message)")]
    if rolled_back:
        parts.append("The group was rolled back to launch template version %s, the version it launched before: its new nodes "
                     "were drained and terminated, its sizes restored and its state cleared." % (record["target"].get("version") or "?"))
    parts.append(rollback_error or "")
    if not rolled_back and kept:
        parts.append("%s The group keeps its surge and its nodeops.rollout/* state tags, the rollout's taint and cordon are "
                     "off the old nodes it did not drain%s. Fix the cause and run the same playbook again: it resumes from the "
                     "group's tags%s." % (
                         serving_line(stop.get("taking_pods")),
                         ", and the processes this rollout suspended were resumed" if resumed else "",
                         _other_way(action, recorded)))
    return " ".join(part.strip() for part in parts if part and part.strip())


def _flags(record):
    """What the role's tasks ask of the record, each a plain flag."""
    record["started"] = record["status"] == "started"
    # the group's run stopped without finishing (a plan, planned or up to date, has not stopped)
    record["stopped"] = record["status"] in STOPPED
    # the group's scale down runs: the run changes it and it neither paused nor stopped
    record["scale_down"] = record["needed"] and record["started"]
    # the run changed the group (what rolling_update_result's changed says)
    record["changed"] = record["needed"] or record["status"] in ("cancelled", "rolled back", "failed")
    # the group's run came to an end without a failure: the after_rollout hooks run
    record["ended"] = record["status"] in ("replaced", "paused", "rolled back", "cancelled")
    # the group is to be held as a pause holds it: its step said pause, or the serial playbook left outdated nodes
    # (record 'left')
    record["holding"] = bool(record.get("hold"))
    # the maintenance window closed on the group (it is held or to be held for it): the run starts no later group
    record["window_closed"] = "window closed" in ((record.get("hold") or {}).get("reason"),
                                                  record["stop"].get("reason") if record["status"] == "paused" else None)
    # the pods that kept the drains of its finished steps from ending, each named once
    record["blocking_pods"] = list(dict.fromkeys((entry.get("pod") if isinstance(entry, dict) else entry) or "?"
                                                 for batch in record["batches_done"] for entry in batch.get("blocking") or []))
    record["has"] = {"skipped_nodes": bool(record["skipped_nodes"]), "end_marked": bool(record["end_marked"]),
                     "refusal": bool(record["refusal"]), "ran_out": bool(record["loop"]["ran_out"]),
                     "quarantine_stop": bool(record.get("quarantine_stop"))}
    return record


def group_result(record, plan_only=False, now=None):
    """The group's entry in ``rolling_update_result``: its status, what stopped it, and what the run did."""
    now = now or datetime.now(timezone.utc)
    batches = record["batches_done"]

    def every(field):
        return [item for batch in batches for item in (batch.get(field) or [])]

    drains = [node for step in record["steps"] for node in step.get("nodes") or []]
    result = {
        "name": record["name"],
        "status": record["status"],
        "plan_only": bool(plan_only),
        "target": record["target"],
        "nodes_replaced": len(set(record["terminated_ids"])),
        "batches": batches,
        # every drain's evictions, a drain that failed or was skipped included (they happened), as the page counts them
        "evictions": sum(int(node.get("evicted") or 0) for node in drains) if drains else len(every("evicted")),
        "deleted": every("deleted"),
        "force_deleted": every("force_deleted"),
        "restarted": every("restarted"),
        "blockers": every("blocking"),
        "skipped_nodes": record["skipped_nodes"],
        # the nodes a drain skipped, first on the page: each with the pods and budgets that hold it
        "quarantined": record.get("quarantined") or [],
        "termination_waits": record["termination_waits"],
        "phase_seconds": record["phase_seconds"],
        "seconds": _seconds(record["started_at"], now),
        "plan": record["plan"],
        "timeline": {"started_at": record["started_at"], "ended_at": iso(now), "phases": record["phases"]},
        "steps": record["steps"],
        # desired capacity moved by another actor during the rollout (a cluster-autoscaler's scale-out or scale-in),
        # left as it was: the group ends that much above or below its original size
        "autoscaler_delta": record["autoscaler_delta"],
        "new_nodes": record["new_nodes"],
    }
    result.update(record["stop"])
    return result


def with_group(result, record, plan_only=False, now=None):
    """``rolling_update_result`` with the group's entry (and changed, when the run changed the group): added, or in the
    place of the group's entry already there (the serial playbook records a group that failed in a batch at once, and
    again at its end)."""
    if not isinstance(result, dict) or not isinstance(result.get("node_groups"), list):
        raise PlanError("into: %r is not allowed; use rolling_update_result" % (result,))
    entry = group_result(record, plan_only, now)
    others = [group for group in result["node_groups"] if group.get("name") != entry["name"]]
    place = next((index for index, group in enumerate(result["node_groups"]) if group.get("name") == entry["name"]), len(others))
    return dict(result, changed=bool(result.get("changed")) or record["changed"], node_groups=others[:place] + [entry] + others[place:])


def serial_keep(state, group, facts):
    """The serial playbook's ``state`` (``{group: {fact: value}}``) with ``group``'s facts ``facts`` (``{fact: value}``,
    those unset as an empty dict) in the place of what it kept of the group before."""
    if not isinstance(facts, dict) or not group:
        raise PlanError("facts: %r is not allowed; use the group's facts by name, and name the group" % (facts,))
    return dict(state or {}, **{group: dict(facts)})


def serial_outcome(state, host=None, group=None, instance_id=None):
    """What the serial playbook's groups came to, from the run records its keeper keeps (``state``: ``{group: {fact:
    value}}``, each group's ``rolling_update__run``): ``failures``, the words of each group that failed (rolled back
    after its failure or held), and ``stopped``, whether any did - a failure stops the batches of every group and ends
    the run. With ``instance_id``, of the host ``host`` of node group ``group``: ``node_replaced``, ``node_ok`` (replaced,
    or its group paused: a clean stop) and ``node_line``, what the host says of itself."""
    runs = {name: (facts or {}).get("rolling_update__run") or {} for name, facts in (state or {}).items()}
    failures = [run["failure_message"] for run in runs.values() if run.get("failure_message")]
    outcome = {"failures": failures, "stopped": bool(failures)}
    if instance_id:
        run = runs.get(group) or {}
        status = run.get("status") or "not started"
        replaced = instance_id in (run.get("terminated_ids") or []) and status != "rolled back"
        line = "%s (%s) %s" % (host, instance_id, "replaced" if replaced else "not replaced: node group %s %s: %s" % (
            group, status, (run.get("stop") or {}).get("message") or ""))
        outcome.update(node_replaced=replaced, node_ok=replaced or status == "paused", node_line=line)
    return outcome


# The hook events of a step: their task files get the step's number, nodes, instance ids and terminations.
STEP_HOOK_EVENTS = ("before_step", "after_drain", "after_step")


def hook_context(record, event, step=None, drained=None, rollback=False, message="", page=""):
    """``rolling_update_hook``, what a task file of rolling_update_hooks is given (meta/argument_specs.yml): the event,
    the group, for a step's events the step (its number, the nodes and instance ids it drains, the instances it
    terminates), for after_drain the nodes drained, whether the run rolls back, a message, the group's result so far,
    its one-line summary (as the end of a run prints it) and ``page``, the path of the run's HTML page ("" for none).
    ``step``: rollout_step's ``step``."""
    step = (step or {}) if event in STEP_HOOK_EVENTS else {}
    drain = step.get("drain") or []
    result = group_result(record)
    return {"event": event, "group": record["name"], "step": int(record.get("step_number") or 0) if step else None,
            "nodes": [entry["node"] for entry in drain], "instance_ids": [entry["instance_id"] for entry in drain],
            "terminate": list(step.get("terminate") or []), "drained": list(drained or []) if event == "after_drain" else [],
            "rollback": bool(rollback), "message": message or "", "result": result,
            "summary": summary_lines({"node_groups": [result]})[0], "page": page or ""}
