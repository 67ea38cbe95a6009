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

import json
from datetime import timedelta

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, counted, parse_time
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import human_duration

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
    ``workers: replaced, 6 of 6 nodes in 3m 12s, 14 evictions`` (the evictions of every drain, as
    :func:`group_counts` counts them) and, for a group that did not finish, why
    (the first line of its message). A plan says what it would replace."""
    lines = []
    for group in (result or {}).get("node_groups") or []:
        plan = group.get("plan") or {}
        outdated = _count(plan.get("outdated"))
        status = group.get("status") or "unknown"
        evictions = counted(group_counts(group)["evictions"], "eviction")
        if group.get("plan_only") and "cancel_payback" in plan:
            text = "%s: %s, a cancel would give back %s and release %s" % (
                group.get("name"), status, counted(_count(plan.get("cancel_payback")), "instance"),
                counted(_count(plan.get("release")), "node"))
        elif group.get("plan_only"):
            text = "%s: %s, %s outdated, about %s" % (group.get("name"), status, counted(outdated, "node"),
                                                      human_duration(plan.get("eta_seconds")))
        elif status == "cancelled":
            # a cancel replaces nothing: its terminations give the surge back
            text = "%s: %s, %s given back in %s, %s" % (
                group.get("name"), status, counted(int(group.get("nodes_replaced") or 0), "instance"),
                human_duration(group.get("seconds")), evictions)
        else:
            text = "%s: %s, %d of %s replaced in %s, %s" % (
                group.get("name"), status, int(group.get("nodes_replaced") or 0), counted(outdated, "node"),
                human_duration(group.get("seconds")), evictions)
        why = (group.get("reason") or group.get("message") or "").strip().split("\n")[0]
        if why and status not in ("replaced", "up to date"):
            text += " - " + (why if len(why) <= 200 else why[:197] + "...")
        lines.append(text)
    return lines


# ---- what the page draws: the decisions behind each colour, label and count ----------------------------------------

# A drained node's state on the page, from node_drain's status and whether its instance was terminated since; each
# state has its own colour and legend entry (page.py), so a node whose drain gave up never looks like one that went.
NODE_STATES = {
    "replaced": "drained, then terminated",
    "drained": "drained, not terminated yet",
    "drain failed": "drain failed: stuck, cordoned with pods left",
    "skipped": "drain skipped after its timeout: left cordoned",
    "terminated": "terminated (drained by an earlier run)",
}


def node_state(row):
    """The page's state of one :func:`node_rows` row: ``replaced``, ``drained``, ``drain failed``, ``skipped`` or
    ``terminated``. A node terminated since is ``replaced`` whatever an earlier drain said."""
    status = row.get("status")
    if row.get("terminated_at"):
        return "replaced" if status else "terminated"
    if status == "skipped":
        return "skipped"
    if status == "drained":
        return "drained"
    return "drain failed"


def drain_end(row):
    """When the drain of ``row`` ended: its ``drained_at``, else its start plus its seconds (a drain that gave up has
    no ``drained_at`` but ran its timeout), else None."""
    drained = time_of(row.get("drained_at"))
    if drained is not None:
        return drained
    started = time_of(row.get("started_at"))
    if started is not None and row.get("seconds") is not None:
        return started + timedelta(seconds=float(row["seconds"]))
    return started


def group_counts(group, rows=None):
    """The counts a person compares, made from the same records so that they add up.

    ``evictions``, ``restarted`` and ``deleted`` are summed over every drain of every step, a drain that failed or
    was skipped included (its evictions happened); the group's own counts (what finished batches recorded) are used
    only when no step kept its drains. Nodes: ``drained`` (drained, terminated or not), ``drain_failed``, ``skipped``,
    ``replaced`` (instances terminated) of ``outdated``.
    """
    steps = group.get("steps") or []
    rows = node_rows(steps, group.get("new_nodes") or []) if rows is None else rows
    drains = [node for step in steps for node in step.get("nodes") or []]
    states = [node_state(row) for row in rows if row.get("status")]
    if drains:
        evictions = sum(int(node.get("evicted") or 0) for node in drains)
        restarted = sum(int(node.get("restarted") or 0) for node in drains)
        deleted = sum(int(node.get("deleted") or 0) for node in drains)
    else:
        evictions = int(group.get("evictions") or 0)
        restarted, deleted = _count(group.get("restarted")), _count(group.get("deleted"))
    plan = group.get("plan") or {}
    return {
        "outdated": _count(plan.get("outdated")),
        "replaced": int(group.get("nodes_replaced") or 0),
        "drained": sum(1 for state in states if state in ("replaced", "drained")),
        "drain_failed": sum(1 for state in states if state == "drain failed"),
        "skipped": sum(1 for state in states if state == "skipped"),
        "evictions": evictions, "restarted": restarted, "deleted": deleted,
    }


def surge_priced(group):
    """The plan's surge priced (its ``surge_choices``) beside what happened: ``[{"surge", "choices", "eta_seconds",
    "extra_instance_minutes", "measured_seconds"}]``, the smallest surge first. ``measured_seconds`` is the group's
    measured duration on the choice the run used (the configured one) once the run did something, None on the others
    and in a plan."""
    plan = group.get("plan") or {}
    ran = not group.get("plan_only") and group.get("seconds") is not None
    return [{"surge": choice.get("surge"), "choices": list(choice.get("choices") or []),
             "eta_seconds": choice.get("eta_seconds"), "extra_instance_minutes": choice.get("extra_instance_minutes"),
             "measured_seconds": group["seconds"] if ran and "configured" in (choice.get("choices") or []) else None}
            for choice in plan.get("surge_choices") or [] if isinstance(choice, dict)]


PHASE_LABELS = {"setup": "setup", "scale_up": "scale up", "upgrade": "upgrade", "scale_down": "scale down", "cancel": "cancel"}


def phase_bars(group):
    """The group's phases as bars: ``[{"name", "kind", "label", "started_at", "ended_at", "seconds", "stopped"}]``.

    ``kind`` is the phase without the rollback's prefix (its colour); ``label`` says it (``rollback: scale up``). A run
    that stopped inside its upgrade recorded no upgrade phase: one is made from its first step's start to the end of
    its last step (or of the group), marked ``stopped``, so the steps drawn under it have their phase."""
    timeline = group.get("timeline") or {}
    bars = []
    for phase in timeline.get("phases") or []:
        name = str(phase.get("name") or "phase")
        kind = name[len("rollback_"):] if name.startswith("rollback_") else name
        label = PHASE_LABELS.get(kind, kind.replace("_", " "))
        bars.append({"name": name, "kind": kind, "label": ("rollback: " + label) if kind != name else label,
                     "started_at": phase.get("started_at"), "ended_at": phase.get("ended_at"),
                     "seconds": phase.get("seconds"), "stopped": False})
    steps = [step for step in group.get("steps") or [] if time_of(step.get("started_at") or step.get("decided_at"))]
    if steps and not any(drawn["kind"] in ("upgrade", "cancel") for drawn in bars):
        begin = min(time_of(step.get("started_at") or step.get("decided_at")) for step in steps)
        ends = [time_of(step.get("ended_at")) for step in steps if time_of(step.get("ended_at"))]
        end = time_of(timeline.get("ended_at")) or max(ends, default=begin)
        bars.append({"name": "upgrade", "kind": "upgrade", "label": "upgrade (stopped)", "started_at": iso(begin),
                     "ended_at": iso(end), "seconds": round((end - begin).total_seconds(), 1), "stopped": True})
    first = time_of(timeline.get("started_at"))
    return sorted(bars, key=lambda bar: ((time_of(bar["started_at"]) or first) - first).total_seconds() if first else 0)


def step_label(step):
    """A step's label on the timeline: ``step 3: drain 2, terminate 1`` (a wait or a validation when that is all)."""
    parts = []
    drained = step.get("nodes") or []
    if drained:
        stuck = sum(1 for node in drained if node.get("status") != "drained")
        parts.append("drain %d%s" % (len(drained), " (%d failed)" % stuck if stuck else ""))
    if step.get("terminated"):
        parts.append("terminate %d" % len(step["terminated"]))
    if not parts:
        parts.append("validate %d" % step["validated"] if step.get("validated") else "wait")
    return "step %s: %s" % (step.get("index"), ", ".join(parts))


def drain_blockers(steps):
    """What held each drain that did not finish, from the steps' drains: ``[{"node", "step", "state", "pod", "kind",
    "pdb", "message"}]`` (one entry with pod None for a stuck node that named no pod)."""
    found = []
    for step in steps or []:
        for node in step.get("nodes") or []:
            if node.get("status") == "drained":
                continue
            state = "skipped" if node.get("status") == "skipped" else "drain failed"
            blocking = node.get("blocking") or [{"pod": None, "kind": None, "pdb": None, "message": node.get("message")}]
            found.extend({"node": node.get("node"), "step": step.get("index"), "state": state, "pod": blocker.get("pod"),
                          "kind": blocker.get("kind"), "pdb": blocker.get("pdb"), "message": blocker.get("message")}
                         for blocker in blocking)
    return found


def clock_speed(sections):
    """The speed of the clock the run's delays ran on, when an attached document says it (the sandbox's invariant
    report carries ``clock_speed``): ``{"speed", "source"}``, or None when no document says it or it is 1."""
    for section in sections or []:
        data = section.get("data") if isinstance(section, dict) else None
        speed = data.get("clock_speed") if isinstance(data, dict) else None
        if isinstance(speed, (int, float)) and not isinstance(speed, bool) and speed > 0 and speed != 1:
            return {"speed": float(speed), "source": section.get("title") or section.get("source")}
    return None


def _scalar(value):
    return not isinstance(value, (dict, list))


def _name(key):
    return str(key)   # as the document spells it, so that a name on the page is found in the JSON


def json_tables(data, title=None, depth=0):
    """A JSON document as tables a person reads: ``[{"title", "headers", "rows"}]`` (``headers`` None: a table of
    names and values). Scalars of a mapping make one table of names and values; a mapping whose values are all
    mappings of scalars (one per deployment, per client) and a list of mappings make one table with a row each and a
    column per key; anything else nests under its name. Values stay as they are (the page formats them); a document
    nested deeper than four levels is kept as JSON text."""
    if depth > 4:
        return [{"title": title, "headers": None, "rows": [["(JSON)", json.dumps(data, sort_keys=True)]]}]
    if isinstance(data, list):
        if data and all(isinstance(item, dict) and all(_scalar(value) for value in item.values()) for item in data):
            keys = list(dict.fromkeys(key for item in data for key in item))
            return [{"title": title, "headers": [_name(key) for key in keys], "rows": [[item.get(key) for key in keys] for item in data]}]
        if all(_scalar(item) for item in data):
            return [{"title": title, "headers": None, "rows": [["values", ", ".join(str(item) for item in data) or "none"]]}]
        out = []
        for index, item in enumerate(data):
            out.extend(json_tables(item, "%s %d" % (title or "item", index + 1), depth + 1))
        return out
    if not isinstance(data, dict):
        return [{"title": title, "headers": None, "rows": [["value", data]]}]
    if data and all(isinstance(value, dict) and value and all(_scalar(inner) for inner in value.values()) for value in data.values()):
        keys = list(dict.fromkeys(key for value in data.values() for key in value))
        return [{"title": title, "headers": [""] + [_name(key) for key in keys],
                 "rows": [[name] + [data[name].get(key) for key in keys] for name in data]}]
    pairs = [[_name(key), "none" if value in ([], {}) else value] for key, value in data.items()
             if _scalar(value) or value in ([], {})]
    out = [{"title": title, "headers": None, "rows": pairs}] if pairs else []
    for key, value in data.items():
        if not _scalar(value) and value not in ([], {}):
            out.extend(json_tables(value, "%s / %s" % (title, _name(key)) if title else _name(key), depth + 1))
    return out
