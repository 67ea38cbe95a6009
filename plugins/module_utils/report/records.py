# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a rollout keeps of each step for its report, and the node table made from the steps. Pure.

:func:`step_record` turns one step's module returns (``rollout_step``'s ``step``, ``node_drain``'s result) into the
step's entry of the group's ``steps`` in ``rolling_update_result``: when it began (before any wait), what it waited
for, what it terminated, each node it drained with the drain's times and counts. :func:`node_rows` joins the steps
into one row per outdated node, from its cordon to its termination, with the new instance that took its place.
"""

from __future__ import annotations

from datetime import timedelta

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import human_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.values import PlanError, parse_time

# A replacement's launch time is read to the second; the termination that caused it is timed to the millisecond.
LAUNCH_SLACK_SECONDS = 2


def iso(moment):
    """An aware datetime as ``2026-11-25T07:04:12.431Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def time_of(value, field="time"):
    """An aware datetime from an ISO 8601 text, or None for nothing or something that is not a time."""
    if value in (None, ""):
        return None
    try:
        return parse_time(value, field)
    except PlanError:
        return None


def _blocker(entry):
    entry = entry if isinstance(entry, dict) else {"pod": str(entry)}
    return {"pod": entry.get("pod"), "kind": entry.get("kind"), "pdb": entry.get("pdb"), "message": entry.get("message")}


def _drained_node(name, result, where):
    result = result if isinstance(result, dict) else {}
    return {
        "node": name, "instance_id": where.get("instance_id"), "az": where.get("az"),
        "status": result.get("status") or "not drained", "started_at": result.get("started_at"), "drained_at": result.get("drained_at"),
        "seconds": result.get("seconds"),
        "evicted": len(result.get("evicted") or []), "restarted": len(result.get("restarted") or []),
        "deleted": len(result.get("deleted") or []), "forced": bool(result.get("forced")),
        "blocking": [_blocker(entry) for entry in result.get("blocking") or []],
        "message": result.get("message"),
    }


def step_record(step, number, drain=None):
    """Step ``number`` of a group's upgrade as the result keeps it.

    ``step``: the ``step`` ``rollout_step`` returned; ``drain``: what ``node_drain`` returned for the step's drain
    (also a failed drain's result), or None / a skipped task's result when the step drained nothing.

    Returns ``{"index", "started_at", "decided_at", "waited_seconds", "waited_for", "terminated", "decrement",
    "validated", "drain_started_at", "drain_seconds", "ended_at", "outdated_left", "nodes"}``; ``nodes`` has one entry
    per node the step drained: ``{"node", "instance_id", "az", "status", "started_at", "drained_at", "seconds",
    "evicted", "restarted", "deleted", "forced", "blocking": [{"pod", "kind", "pdb", "message"}], "message"}``.
    """
    if not isinstance(step, dict):
        raise PlanError("step: %r is not allowed; use the step rollout_step returned" % (step,))
    decided = time_of(step.get("decided_at"), "decided_at")
    waited = float(step.get("waited_seconds") or 0)
    started = decided - timedelta(seconds=waited) if decided else None
    where = {entry.get("node"): entry for entry in step.get("drain") or [] if isinstance(entry, dict)}
    # a drain's result has its nodes by name; anything else (a skipped task, another module's failure) drained nothing
    if not isinstance(drain, dict) or not isinstance(drain.get("nodes"), dict):
        drain = {}
    results = drain.get("nodes") or {}
    nodes = [_drained_node(name, results.get(name), where.get(name) or {}) for name in where]
    drain_started = time_of(drain.get("started_at"))
    if drain_started is None and nodes:
        drain_started = min((time_of(node["started_at"]) for node in nodes if time_of(node["started_at"])), default=None)
    drain_seconds = drain.get("seconds")
    ended = decided
    if drain_started is not None and drain_seconds is not None:
        ended = drain_started + timedelta(seconds=float(drain_seconds))
    else:
        ends = [time_of(node["drained_at"]) for node in nodes if time_of(node["drained_at"])]
        ended = max(ends + ([decided] if decided else []), default=None)
    return {
        "index": number,
        "started_at": iso(started) if started else None,
        "decided_at": iso(decided) if decided else None,
        "waited_seconds": round(waited, 1),
        "waited_for": list(step.get("waited_for") or []),
        "terminated": list(step.get("terminate") or []),
        "decrement": int(step.get("decrement") or 0),
        "validated": len(step.get("validate") or []),
        "drain_started_at": iso(drain_started) if drain_started else None,
        "drain_seconds": drain_seconds,
        "ended_at": iso(ended) if ended else None,
        "outdated_left": step.get("outdated_left"),
        "nodes": nodes,
    }


def _pick(candidates, az):
    """The replacement among ``candidates`` (new instances in launch order): the first in the same AZ, else the first."""
    for candidate in candidates:
        if candidate.get("az") == az:
            return candidate
    return candidates[0] if candidates else None


def node_rows(steps, new_nodes=None):
    """One row per outdated node the rollout drained or terminated, in the order they were drained.

    Each row: the drained node's entry of :func:`step_record` plus ``"step"`` (the step that drained it, None when an
    earlier run did), ``"terminated_at"`` and ``"terminate_step"`` (None while it is not terminated),
    ``"paid_back"`` (its termination lowered desired capacity: it paid the surge back) and ``"replacement"`` (a
    ``new_nodes`` entry of ``rollout_step``, or None).

    Which new instance replaced which node is read from the launch times, as the group launches them: each
    termination that keeps desired capacity is followed by a launch, the first new instance launched after it (in
    the node's AZ when there is one); a termination that pays the surge back stands for one of the instances the surge
    launched before it.
    """
    rows, by_instance = [], {}
    for step in steps or []:
        for node in step.get("nodes") or []:
            row = dict(node, step=step.get("index"), terminated_at=None, terminate_step=None, paid_back=False, replacement=None)
            key = node.get("instance_id") or node.get("node")
            if key in by_instance:
                rows[by_instance[key]].update(row)   # drained again (an earlier drain did not finish)
            else:
                by_instance[key] = len(rows)
                rows.append(row)
    terminations = []
    for step in steps or []:
        for position, instance_id in enumerate(step.get("terminated") or []):
            if instance_id not in by_instance:
                by_instance[instance_id] = len(rows)
                rows.append({"node": None, "instance_id": instance_id, "az": None, "status": None, "step": None,
                             "replacement": None})
            row = rows[by_instance[instance_id]]
            row.update(terminated_at=step.get("decided_at"), terminate_step=step.get("index"),
                       paid_back=position < int(step.get("decrement") or 0))
            terminations.append(row)
    unpaired = sorted((dict(entry) for entry in new_nodes or [] if isinstance(entry, dict)),
                      key=lambda entry: entry.get("launch_time") or "")
    for row in sorted((row for row in terminations if not row["paid_back"]), key=lambda row: row["terminated_at"] or ""):
        after = time_of(row["terminated_at"])
        candidates = [entry for entry in unpaired if after is None or (time_of(entry.get("launch_time")) or after)
                      >= after - timedelta(seconds=LAUNCH_SLACK_SECONDS)]
        row["replacement"] = _pick(candidates, row.get("az"))
        if row["replacement"] is not None:
            unpaired.remove(row["replacement"])
    for row in terminations:
        if row["paid_back"]:
            row["replacement"] = _pick(unpaired, row.get("az"))
            if row["replacement"] is not None:
                unpaired.remove(row["replacement"])
    return rows


def _count(value):
    return len(value) if isinstance(value, (list, tuple, dict)) else int(value or 0)


def summary_lines(result):
    """One line per node group of ``rolling_update_result``, as the end of a run prints it before the JSON:
    ``workers: replaced, 6 of 6 nodes in 3m 12s, 14 evictions`` and, for a group that did not finish, why
    (the first line of its message). A plan says what it would replace."""
    lines = []
    for group in (result or {}).get("node_groups") or []:
        plan = group.get("plan") or {}
        outdated = _count(plan.get("outdated"))
        status = group.get("status") or "unknown"
        if group.get("plan_only") and "cancel_payback" in plan:
            text = "%s: %s, a cancel would give back %d instances and release %d nodes" % (
                group.get("name"), status, _count(plan.get("cancel_payback")), _count(plan.get("release")))
        elif group.get("plan_only"):
            text = "%s: %s, %d nodes outdated, about %s" % (group.get("name"), status, outdated,
                                                            human_duration(plan.get("eta_seconds")))
        else:
            text = "%s: %s, %d of %d nodes replaced in %s, %d evictions" % (
                group.get("name"), status, int(group.get("nodes_replaced") or 0), outdated,
                human_duration(group.get("seconds")), int(group.get("evictions") or 0))
        why = (group.get("reason") or group.get("message") or "").strip().split("\n")[0]
        if why and status not in ("replaced", "up to date"):
            text += " - " + (why if len(why) <= 200 else why[:197] + "...")
        lines.append(text)
    return lines
