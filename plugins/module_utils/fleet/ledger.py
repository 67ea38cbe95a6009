# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet's ledger: one document every worker reads and writes whole, and the rules that change it. Pure.

The document holds the pinned plan (each cluster's wave and pinned node groups, the waves' resolved counts, the run's
failure budget), each cluster's state, the gates' decisions and the current run. Every function here takes the document
as read and changes it in place; ``clients.fleet_store`` writes it back only if no other worker wrote in between, and
on a conflict the worker reads again and decides again. So the order of waves, the concurrency cap and the failure
budget hold across every worker, wherever it runs.

A cluster's state is one of :data:`STATES`. ``succeeded`` and ``skipped`` are final; ``failed``, ``pending`` (the
rollout paused, its maintenance window closed), ``busy`` (another run holds the lock of one of its node groups: the
rollout did not start, and that is no failure) and ``not started`` (the run stopped before its turn) end the cluster's
part in the run that set them, and the next run retries it with the same pinned targets. Only ``failed`` counts
against a failure budget. A run is named by its workers
(every slice of one AWX job gives the same name); the first claim of a new name starts a new run and its budget, and a
worker of an older run is turned away.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, counted
from ansible_collections.nodeops.rollout.plugins.module_utils.fleet.waves import resolved_budget, resolved_waves
from ansible_collections.nodeops.rollout.plugins.module_utils.report.records import iso, time_of
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import human_duration

STATES = ("waiting", "running", "succeeded", "failed", "pending", "busy", "not started", "skipped")
FINAL = ("succeeded", "skipped")
ENDED_IN_RUN = ("failed", "pending", "busy", "not started")
OUTCOMES = ("succeeded", "failed", "pending", "busy")
START, WAIT, SKIP, GATE = "start", "wait", "skip", "gate"
# what a group's status in rolling_update_result makes of its cluster
FAILED_STATUSES = ("failed", "rolled back", "cancelled")
PENDING_STATUSES = ("paused",)


def new(fleet, settings, now):
    """The document of a fleet no worker has joined yet. ``settings``: ``{"waves", "max_failed_clusters", "workers"}``
    as checked by ``fleet.waves``."""
    return {"fleet": fleet, "created_at": iso(now), "settings": settings, "joined": {}, "pinned_at": None,
            "waves": [], "max_failed_clusters": None, "clusters": {}, "run": None, "runs": [], "gates": {}, "opened": {}}


def join(doc, settings, cluster, wave, worker, worker_hosts, node_groups, before, now, unresolved=None):
    """The cluster joins the plan, for its worker (the slice that runs it, named by its hosts); the plan is pinned once
    ``settings["workers"]`` workers have joined every one of their clusters. Once pinned, nothing joins. A cluster whose
    targets did not resolve (``unresolved``, why) joins left out, so that no worker waits for it."""
    if doc["pinned_at"]:
        return doc
    if doc["settings"] != settings:
        raise PlanError("fleet_waves, fleet_max_failed_clusters and fleet_workers differ from those of the fleet %r's plan "
                        "being made (%s); give every worker the same, or name a new plan with fleet_name"
                        % (doc["fleet"], doc["settings"]))
    entry = doc["joined"].setdefault(worker, {"hosts": sorted(worker_hosts), "joined": []})
    if cluster not in entry["joined"]:
        entry["joined"].append(cluster)
    left_out = "matched by no wave of fleet_waves" if wave is None else (
        "left out of the plan, its target did not resolve: %s" % unresolved if unresolved else None)
    doc["clusters"][cluster] = {
        "wave": wave, "node_groups": node_groups, "before": before, "after": [],
        "state": "skipped" if left_out else "waiting", "reason": left_out,
        "run": None, "attempts": 0, "started_at": None, "finished_at": None, "page": None, "holder": None,
        "stopped_holder": None}
    complete = [name for name, item in doc["joined"].items() if set(item["hosts"]) <= set(item["joined"])]
    if len(complete) >= settings["workers"]:
        _pin(doc, now)
    return doc


def _pin(doc, now):
    settings = doc["settings"]
    sizes = [sum(1 for entry in doc["clusters"].values() if entry["wave"] == index) for index in range(len(settings["waves"]))]
    doc["waves"] = resolved_waves(settings["waves"], sizes)
    doc["max_failed_clusters"] = resolved_budget(settings["max_failed_clusters"], sum(sizes))
    doc["pinned_at"] = iso(now)


def _run_of(doc, run, now):
    """Enter the run ``run``: True if it is the current run (a name never seen starts it), False if a newer one has."""
    current = doc["run"]
    if current and current["id"] == run:
        return True
    if any(earlier["id"] == run for earlier in doc["runs"]):
        return False
    if current:
        doc["runs"].append(current)
    doc["run"] = {"id": run, "started_at": iso(now), "stopped": None}
    doc["opened"] = {}
    return True


def _ended(entry, run):
    """The cluster has nothing left to do in run ``run``."""
    return entry["state"] in FINAL or (entry["state"] in ENDED_IN_RUN and entry["run"] == run)


def _members(doc, wave):
    return sorted((name, entry) for name, entry in doc["clusters"].items() if entry["wave"] == wave)


def _failed_in_run(doc, run, wave=None):
    return [name for name, entry in sorted(doc["clusters"].items())
            if entry["state"] == "failed" and entry["run"] == run and (wave is None or entry["wave"] == wave)]


def spent(doc):
    """Why the current run's failure budget is spent (the cause), or None."""
    run = doc["run"]["id"]
    for index, wave in enumerate(doc["waves"]):
        failed = _failed_in_run(doc, run, index)
        if len(failed) > wave["max_failed_clusters"]:
            return "the failure budget of wave %s is spent: %s failed (%d allowed)" % (
                wave["name"], ", ".join(failed), wave["max_failed_clusters"])
    failed = _failed_in_run(doc, run)
    budget = doc["max_failed_clusters"]
    if budget is not None and len(failed) > budget:
        return "the fleet's failure budget is spent: %s failed (%d allowed)" % (", ".join(failed), budget)
    return None


def _stop(doc, cause, now):
    if not doc["run"]["stopped"]:
        doc["run"]["stopped"] = {"cause": cause, "at": iso(now)}


def _gate(doc, wave, run):
    """The gate decision after wave ``wave`` that counts in run ``run`` (a pass holds for later runs; a failure, or a
    gate that was running, only for its own)."""
    gate = doc["gates"].get(str(wave))
    if not gate or (gate["state"] != "passed" and gate["run"] != run):
        return None
    return gate


def _wave_open(doc, wave, cluster, run, now, gate_timeout):
    """``(START, None)`` if wave ``wave`` is open; ``(WAIT, why)``; ``(GATE, why)`` when ``cluster`` is to run the gate
    after the wave before (it is now running it); ``(SKIP, cause)`` when the run stops here."""
    if wave == 0:
        return START, None
    before = doc["waves"][wave - 1]
    members = _members(doc, wave - 1)
    left = [name for name, entry in members if not _ended(entry, run)]
    if left:
        return WAIT, "wave %s is rolling: %s" % (before["name"], ", ".join(left))
    ended = [time_of(entry["finished_at"]) for _name, entry in members if entry["finished_at"]]
    if ended and before["soak"]:
        until = max(ended).timestamp() + before["soak"]
        if now.timestamp() < until:
            return WAIT, "wave %s soaks for %s after its last cluster ended" % (before["name"], human_duration(before["soak"]))
    if not before["gate"]:
        return START, None
    gate = _gate(doc, wave - 1, run)
    if gate is None:
        doc["gates"][str(wave - 1)] = {"run": run, "state": "running", "by": cluster, "at": iso(now), "decided_at": None, "message": None}
        return GATE, "the gate after wave %s (%s)" % (before["name"], before["gate"])
    if gate["state"] == "passed":
        return START, None
    if gate["state"] == "running":
        if now.timestamp() - time_of(gate["at"]).timestamp() > gate_timeout:
            gate.update(state="failed", decided_at=iso(now), message="no answer within %s" % human_duration(gate_timeout))
        else:
            return WAIT, "the gate after wave %s is running (on %s)" % (before["name"], gate["by"])
    return SKIP, "the gate after wave %s failed: %s" % (before["name"], gate["message"])


def claim(doc, cluster, run, now, gate_timeout, holder=None):
    """What ``cluster``'s worker does now in run ``run``: ``(START | WAIT | SKIP | GATE, why)``, the document changed
    to say so (a start counts the cluster running in its wave, a skip says why it was not started).

    A start records ``holder``, the identity this attempt's rollout holds the cluster's locks with. A cluster already
    running in run ``run`` is one whose worker stopped before it finished (killed, its execution node lost, and now
    relaunched): it starts again at once, in its place in the wave, and ``stopped_holder`` records the holder of the
    attempt that stopped, whose locks the new attempt waits for (``fleet.lock_turn``)."""
    entry = doc["clusters"].get(cluster)
    if entry is None:
        return SKIP, "not in the fleet's plan, pinned at %s before this cluster joined" % doc["pinned_at"]
    if not _run_of(doc, run, now):
        return SKIP, "run %s of this fleet has started since" % doc["run"]["id"]
    if entry["state"] in FINAL:
        return SKIP, entry["reason"] or "rolled to the pinned targets in an earlier run"
    if entry["state"] in ENDED_IN_RUN and entry["run"] == run:
        return SKIP, entry["reason"]
    resumed = entry["state"] == "running" and entry["run"] == run
    cause = doc["run"]["stopped"] and doc["run"]["stopped"]["cause"]
    if not cause and not resumed:
        decision, why = _wave_open(doc, entry["wave"], cluster, run, now, gate_timeout)
        if decision == SKIP:
            _stop(doc, why, now)
            cause = why
        elif decision != START:
            return decision, why
    if cause:
        entry.update(state="not started", run=run, reason="not started: " + cause)
        return SKIP, entry["reason"]
    wave = doc["waves"][entry["wave"]]
    rolling = [name for name, item in _members(doc, entry["wave"]) if item["state"] == "running" and item["run"] == run]
    if not resumed and len(rolling) >= wave["max_concurrency"]:
        return WAIT, "wave %s rolls %s at once: %s" % (wave["name"], counted(wave["max_concurrency"], "cluster"), ", ".join(rolling))
    stopped = entry.get("holder") if resumed else None
    entry.update(state="running", run=run, reason=None, started_at=iso(now), finished_at=None, attempts=entry["attempts"] + 1,
                 holder=holder, stopped_holder=stopped)
    doc["opened"].setdefault(str(entry["wave"]), iso(now))
    return START, None


def finish(doc, cluster, run, outcome, reason, after, page, now):
    """The cluster's rollout ended with ``outcome`` (:data:`OUTCOMES`: succeeded, failed, pending, or busy when another
    run held a lock of the cluster); a failure that spends the budget stops the run: no worker starts another cluster,
    those rolling finish. Busy and pending are no failures."""
    entry = doc["clusters"].get(cluster)
    if entry is None or entry["state"] != "running":
        raise PlanError("cluster %s is not rolling in fleet %s (%s): nothing to finish" % (
            cluster, doc["fleet"], entry and entry["state"]))
    if outcome not in OUTCOMES:
        raise PlanError("outcome: %r is not allowed; use %s" % (outcome, ", ".join(OUTCOMES)))
    entry.update(state=outcome, reason=reason, finished_at=iso(now), after=after or [], page=page, run=run)
    if doc["run"] and doc["run"]["id"] == run:
        cause = spent(doc)
        if cause:
            _stop(doc, cause, now)
    return doc


def record_gate(doc, wave, run, passed, message, now):
    """The gate after wave ``wave`` decided (a gate that a timeout already failed stays failed)."""
    gate = doc["gates"].get(str(wave))
    if not gate or gate["run"] != run or gate["state"] != "running":
        return doc
    gate.update(state="passed" if passed else "failed", decided_at=iso(now), message=message or None)
    return doc


def outcome_of(result, failure=None, busy=None):
    """``(outcome, reason, after)`` of a cluster's rollout from its ``rolling_update_result`` (``failure``: the message
    the role stopped with, when it failed; ``busy``: why the cluster was not rolled, another run holding its lock)."""
    if busy:
        return "busy", str(busy), []
    groups = [group for group in (result or {}).get("node_groups") or [] if isinstance(group, dict)]
    after = [{"name": group.get("name"), "image_id": (group.get("target") or {}).get("image_id"),
              "version": (group.get("target") or {}).get("version")} for group in groups]
    for statuses, outcome in ((FAILED_STATUSES, "failed"), (PENDING_STATUSES, "pending")):
        for group in groups:
            if group.get("status") in statuses:
                why = group.get("reason") or group.get("message") or group["status"]
                return outcome, "%s: %s" % (group.get("name"), why), after
    if failure:
        return "failed", str(failure), after
    return "succeeded", None, after


def summary(doc):
    """The fleet's result: each wave with its clusters, the run and why it stopped, the count of clusters by state."""
    if not doc:
        return {}
    run = doc["run"] or {}
    waves = []
    for index, wave in enumerate(doc["waves"]):
        members = _members(doc, index)
        ended = [entry["finished_at"] for _name, entry in members if entry["finished_at"]]
        waves.append({
            "name": wave["name"], "size": wave["size"], "max_concurrency": wave["max_concurrency"],
            "max_failed_clusters": wave["max_failed_clusters"], "soak": wave["soak"], "gate": wave["gate"],
            "opened_at": doc["opened"].get(str(index)), "ended_at": max(ended) if ended and all(_ended(e, run.get("id")) for _n, e in members) else None,
            "gate_decision": doc["gates"].get(str(index)),
            "clusters": [dict(entry, name=name) for name, entry in members]})
    unplanned = [dict(entry, name=name) for name, entry in sorted(doc["clusters"].items()) if entry["wave"] is None]
    counts = {}
    for entry in doc["clusters"].values():
        counts[entry["state"]] = counts.get(entry["state"], 0) + 1
    return {"fleet": doc["fleet"], "pinned_at": doc["pinned_at"], "run": run.get("id"), "run_started_at": run.get("started_at"),
            "earlier_runs": doc["runs"], "stopped": run.get("stopped"), "max_failed_clusters": doc["max_failed_clusters"],
            "waves": waves, "unplanned": unplanned, "counts": counts}
