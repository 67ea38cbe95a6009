# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A fleet rollout (``fleet_state``'s ``fleet``, read from the ledger) as one self-contained HTML page. Pure.

At the top, the run and what stopped it with what to do next; the count of clusters by state; then per wave its limits
(concurrency, failure budget, soak, gate), when it opened and ended, the gate's decision, and per cluster its state and
reason, the versions before and after, its times and attempts, and a link to its own page.
"""

from __future__ import annotations

import os

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import counted
from ansible_collections.nodeops.rollout.plugins.module_utils.report.page import CSS, text
from ansible_collections.nodeops.rollout.plugins.module_utils.report.records import time_of
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import human_duration

FLEET_CSS = """
.state{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;color:#fff;background:#5b6673}
.state.succeeded{background:#2e7d4f}.state.failed{background:#c0392b}.state.running{background:#3b6fb6}
.state.pending,.state.busy,.state.not-started{background:#b7791f}.state.waiting,.state.skipped{background:#8a94a0}
"""
STATE_ORDER = ("succeeded", "failed", "pending", "busy", "not started", "running", "waiting", "skipped")
STOPPED_NEXT = ("Fix the cause of each failed cluster (its page says what stopped it), then run the same job again: it skips "
                "the clusters already rolled, retries the failed and not started ones with the targets pinned in this plan, "
                "and opens the next waves in order. Clusters that were rolling when the budget was spent finished.")
BUSY_NEXT = ("Some clusters were busy: another run held the lock of one of their node groups, so they were not rolled (no "
             "failure). Once that run has ended, run the same job again; it retries them with the pinned targets.")
PENDING_NEXT = ("Some clusters paused (their maintenance window closed): run the same job again in their next window; it "
                "retries them with the pinned targets.")


def _when(value):
    moment = time_of(value)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else ""


def _state(state):
    return '<span class="state %s">%s</span>' % (text(str(state).replace(" ", "-")), text(state))


def _images(items):
    return "<br>".join(text("%s: %s%s" % (item.get("name"), item.get("image_id") or "?",
                                          " (v%s)" % item["version"] if item.get("version") is not None else ""))
                       for item in items or [])


def _link(page, base):
    if not page:
        return ""
    href = os.path.relpath(page, base) if base and os.path.isabs(page) else page
    return '<a href="%s">page</a>' % text(href)


def _seconds(entry):
    start, end = time_of(entry.get("started_at")), time_of(entry.get("finished_at"))
    return human_duration((end - start).total_seconds()) if start and end else ""


def _cluster_rows(clusters, base):
    rows = []
    for entry in clusters:
        rows.append("<tr class=\"cluster\" data-state=\"%s\"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                    "<td>%s</td><td>%s</td><td>%s</td><td class=\"num\">%s</td><td>%s</td></tr>" % (
                        text(entry["state"]), text(entry["name"]), _state(entry["state"]), text(entry.get("reason") or ""),
                        _images(entry.get("before")), _images(entry.get("after")), text(_when(entry.get("started_at"))),
                        text(_when(entry.get("finished_at"))), text(_seconds(entry)), entry.get("attempts") or 0,
                        _link(entry.get("page"), base)))
    return ("<table><thead><tr><th>cluster</th><th>state</th><th>reason</th><th>before</th><th>after</th><th>started</th>"
            "<th>ended</th><th>took</th><th>attempts</th><th>own page</th></tr></thead><tbody>%s</tbody></table>" % "".join(rows))


def _gate(wave):
    decision = wave.get("gate_decision")
    if not wave.get("gate"):
        return "none"
    if not decision:
        return "%s: not run" % wave["gate"]
    return "%s: %s%s%s" % (wave["gate"], decision["state"], " (%s)" % decision["message"] if decision.get("message") else "",
                           ", on %s at %s" % (decision.get("by"), _when(decision.get("decided_at") or decision.get("at"))))


def _wave(index, wave, base):
    facts = [("clusters", wave["size"]), ("at once", wave["max_concurrency"]), ("failures allowed", wave["max_failed_clusters"]),
             ("soak after", human_duration(wave["soak"]) if wave["soak"] else "none"), ("gate after", _gate(wave)),
             ("opened", _when(wave.get("opened_at")) or "not in this run"), ("ended", _when(wave.get("ended_at")) or "not yet")]
    rows = "".join("<tr><th>%s</th><td>%s</td></tr>" % (text(name), text(value)) for name, value in facts)
    table = "<table><tbody>%s</tbody></table>" % rows
    return '<section class="wave" data-wave="%s"><h2>Wave %d: %s</h2>%s%s</section>' % (
        text(wave["name"]), index + 1, text(wave["name"]), table, _cluster_rows(wave["clusters"], base))


def _earlier(run):
    stopped = run.get("stopped")
    return "%s (started %s%s)" % (run["id"], _when(run.get("started_at")), ", stopped: %s" % stopped["cause"] if stopped else "")


def _banner(fleet):
    stopped = fleet.get("stopped")
    counts = fleet.get("counts") or {}
    if stopped:
        return ('<div class="banner stopped" id="stop"><h2>Stopped: %s</h2><p>at %s. No worker started another cluster.</p>'
                '<p><b>Next:</b> %s</p></div>' % (text(stopped["cause"]), text(_when(stopped["at"])), text(STOPPED_NEXT)))
    if counts.get("pending"):
        return '<div class="banner stopped" id="stop"><h2>Pending clusters</h2><p>%s</p></div>' % text(PENDING_NEXT)
    if counts.get("busy"):
        return '<div class="banner stopped" id="stop"><h2>Busy clusters</h2><p>%s</p></div>' % text(BUSY_NEXT)
    left = sum(counts.get(state, 0) for state in ("waiting", "running", "failed", "not started"))
    if left:
        return '<div class="banner" id="stop"><h2>In progress</h2><p>%s not rolled yet.</p></div>' % counted(left, "cluster")
    return '<div class="banner ok" id="stop"><h2>Every cluster is on its pinned target</h2></div>'


def fleet_html(fleet, base=None, version=None):
    """The page (a str) of ``fleet``; ``base`` the directory the page is written in (links to the clusters' pages are
    made relative to it)."""
    fleet = fleet if isinstance(fleet, dict) else {}
    title = "Fleet rollout %s" % fleet.get("fleet", "")
    counts = fleet.get("counts") or {}
    out = ['<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           "<title>%s</title><style>%s%s</style></head><body>" % (text(title), CSS, FLEET_CSS),
           "<h1>%s</h1>" % text(title),
           '<p class="meta">plan pinned %s; run %s started %s%s; made by nodeops.rollout%s</p>' % (
               text(_when(fleet.get("pinned_at"))), text(fleet.get("run") or "none yet"), text(_when(fleet.get("run_started_at"))),
               ("; earlier runs: %s" % text(", ".join(_earlier(run) for run in fleet["earlier_runs"]))) if fleet.get("earlier_runs") else "",
               (" " + text(version)) if version else ""),
           _banner(fleet),
           '<p id="counts">%s</p>' % " ".join("%s %d" % (_state(state), counts[state]) for state in STATE_ORDER if counts.get(state)),
           "<p>Failure budget of the run: %s.</p>" % text("none beyond the waves' own" if fleet.get("max_failed_clusters") is None
                                                          else counted(fleet["max_failed_clusters"], "cluster"))]
    out.extend(_wave(index, wave, base) for index, wave in enumerate(fleet.get("waves") or []))
    if fleet.get("unplanned"):
        out.append("<h2>In no wave</h2>" + _cluster_rows(fleet["unplanned"], base))
    out.append("</body></html>\n")
    return "".join(out)
