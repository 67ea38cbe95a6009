# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A rollout's result (``rolling_update_result``) as one self-contained HTML page. Pure.

The page needs nothing from the network: its style is inline CSS, its timelines inline SVG (hover titles, no
script). At the top it says what stopped a run that did not finish and what to do next; then, per node group, a
timeline (phases, each step as a bar with its wait shown as a wait, each node from its cordon to its termination and
its replacement's boot), the plan beside what happened (predicted and measured durations, the surge priced at the
surge configured, EKS's default and 100 %, the plan's waves with the hold after each, the steps run), a plan's drain
pre-flight (its blockers and warnings grouped by kind, with the pod, its node and its PodDisruptionBudget) and the
node table (old instance and its replacement, AZ, drain seconds, pods
evicted, restarted and force-deleted, what blocked, with the PodDisruptionBudget named); last, the sections the
operator added (a JSON document each, such as a test environment's invariant report).
"""

from __future__ import annotations

import base64
import html
import json

from ansible_collections.nodeops.rollout.plugins.module_utils.report.records import (
    NODE_STATES, clock_speed, drain_blockers, drain_end, group_counts, json_tables, node_rows, node_state, phase_bars, step_label,
    surge_priced, time_of)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.permissions import permission_text
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import (
    found_by_kind, human_duration, instance_minutes_text, target_text, wave_rows)

# Statuses of a group that ended the way it was asked to.
FINISHED = ("replaced", "up to date", "planned", "cancelled", "no rollout")

NEXT_STEPS = {
    "failed": "Fix the cause named here and run the same playbook again: it resumes from the group's nodeops.rollout state "
              "tags. Until then the cluster keeps serving: untouched old nodes still run their pods and the group keeps its "
              "surge.",
    "paused": "The rollout stopped cleanly between steps and keeps its state: run the same playbook again to go on from "
              "here.",
    "rolled back": "The group is back on the launch template version it ran before, and the new nodes are gone. Find out "
                   "why the new version's nodes failed (the cause named here), then start the rollout again.",
    "started": "The run ended before this group's result was recorded: run the same playbook again; it resumes from the "
               "group's nodeops.rollout state tags.",
}
# A group stopped by a request its identity may not make: the request changed nothing, and the run resumes once granted
PERMISSION_NEXT_STEP = ("Grant the permission named here (apply docs/rbac.yaml or docs/iam-policy.json as docs/rbac.md and "
                        "docs/iam.md say), then run the same playbook again: it resumes from the group's nodeops.rollout "
                        "state tags. Nothing was lost: the refused request changed nothing, untouched old nodes still run "
                        "their pods and the group keeps its surge.")
DEFAULT_NEXT_STEP = "Look at the message above and run the same playbook again once the cause is fixed."
# A paused group, by why it paused (its reason): each says what ends the pause
PAUSED_NEXT_STEPS = {
    "limited": "The run was limited to some of the outdated nodes (the play's limit or rolling_update_nodes); the group keeps "
               "its surge and state. Run the serial playbook again for the other nodes: it goes on from here.",
    "stopped": "Another node group of this run failed, which stops the batches of every group; this one stopped cleanly and "
               "keeps its state. Fix the failed group, then run the same playbook again.",
    "window closed": "The maintenance window closed before the next step could finish; the group keeps its state. Run the "
                     "same playbook again in the next window: it goes on from here.",
    "alert firing": "A pause alert (rolling_update_pause_alerts) kept firing for longer than rolling_update_pause_alerts_timeout; "
                    "the group keeps its state. Once the alert clears (or is silenced, if it is not the rollout's to wait "
                    "for), run the same playbook again to go on from here.",
    "requested": "A pause was requested (the group's nodeops.rollout/pause tag); the group keeps its state. Remove the "
                 "request and run the same playbook again to go on from here.",
}
# A group the rollback playbook rolled back, not after a failure of this run: nothing of the new version failed here
ROLLBACK_PLAYBOOK_NEXT_STEP = ("The rollback playbook moved the group back to the launch template version it ran before, "
                               "as it was asked; the new nodes are gone. Fix what stopped the rollout it undid (its run's "
                               "message), then start the rollout again.")
# The banner's colour for each status that did not finish: a failure's red, a clean stop's amber, a rollback's own
BANNER_KINDS = {"failed": "stopped", "started": "stopped", "paused": "held", "rolled back": "rolled-back"}

CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;padding:24px 32px;color:#1d2733;
background:#f6f7f9;font-size:14px;line-height:1.45}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d5dae1;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
p.meta{color:#5b6673;margin:0 0 16px}
section.group{background:#fff;border:1px solid #d5dae1;border-radius:6px;padding:4px 20px 16px;margin:18px 0}
table{border-collapse:collapse;margin:6px 0 10px;background:#fff}
th,td{border:1px solid #d5dae1;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.banner{border-radius:6px;padding:12px 16px;margin:12px 0 18px;border:1px solid}
.banner.stopped{background:#fdecea;border-color:#e0a19c}
.banner.ok{background:#e9f6ec;border-color:#9fcfaa}
.banner.held{background:#fdf4e3;border-color:#e2bd76}
.banner.rolled-back{background:#f4ecf8;border-color:#c5a3d6}
.banner h2{border:0;margin:0 0 6px;padding:0}
.status{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;color:#fff;background:#5b6673}
.status.replaced,.status.up-to-date{background:#2e7d4f}
.status.planned{background:#3b6fb6}
.status.failed{background:#c0392b}
.status.paused,.status.started{background:#b7791f}
.status.rolled-back{background:#8e44ad}
.columns{display:flex;flex-wrap:wrap;gap:24px}
.columns>div{flex:1 1 380px}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle;border:1px solid #8a94a0}
.muted{color:#5b6673}
pre{white-space:pre-wrap;margin:0}
svg text{font-size:11px;fill:#1d2733}
svg text.stuck{fill:#a35200;font-weight:600}
svg text.note{fill:#2b1600;font-weight:600}
tr.state-drain-failed td{background:#fff1dc}
tr.state-skipped td{background:#fdf8e1}
.state{display:inline-block;border-radius:3px;padding:0 6px;font-size:12px;font-weight:600}
.state.k-drain-failed,.state.k-terminate,.state.k-drain{color:#fff}
.stuck-nodes{border:2px solid #f08c00;background:#fff7ec;border-radius:6px;padding:8px 14px;margin:10px 0}
p.clock{background:#eef4fb;border:1px solid #b9cde6;border-radius:4px;padding:6px 10px}
"""

# Every colour the page draws, by kind: one CSS class each (``k-<kind>``: fill for SVG, background for the legend's
# swatches), so a bar and its legend entry cannot differ. A drain that failed has its own colour, never the red of a
# termination; each phase has its own, none the green of a replacement's boot.
COLORS = {"phase-setup": "#9aa7b8", "phase-scale_up": "#5b8fd1", "phase-upgrade": "#1f4e8c", "phase-scale_down": "#8a63c2",
          "phase-cancel": "#a07a45", "step": "#7b8da3", "drain": "#3a86d4", "drain-failed": "#f08c00", "skipped": "#d9b526",
          "terminate": "#c0392b", "boot": "#5cae72"}
LEGEND = (("phase-setup", "setup"), ("phase-scale_up", "scale up"), ("phase-upgrade", "upgrade"),
          ("phase-scale_down", "scale down"), ("step", "step"), ("wait", "wait"), ("drain", "drain (cordon to drained)"),
          ("drain-failed", "drain failed: stuck, pods left"), ("skipped", "drain skipped: left cordoned"),
          ("terminate", "terminated"), ("boot", "replacement: launched to Ready"))
CSS += "".join(".k-%s{fill:%s;background:%s}" % (kind, colour, colour) for kind, colour in COLORS.items())
STATE_KINDS = {"replaced": "drain", "drained": "drain", "drain failed": "drain-failed", "skipped": "skipped", "terminated": "terminate"}

CHART_WIDTH = 1000
LABEL_WIDTH = 270
ROW_HEIGHT = 22
AXIS_HEIGHT = 24
NOTE_CHAR = 6.2   # px per character of an 11 px note, to tell whether it fits
TICK_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400)


def text(value):
    """HTML-escaped text; braces too, so no template engine ever reads the page as a template."""
    return html.escape("" if value is None else str(value)).replace("{", "&#123;").replace("}", "&#125;")


def _when(value):
    """``2026-11-25 07:04:12 UTC`` from an ISO 8601 time; the text itself when it is none."""
    moment = time_of(value)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else (value or "?")


def _seconds(value):
    return "" if value is None else "%.1f" % float(value)


def _status(status):
    return '<span class="status %s">%s</span>' % (text(str(status or "unknown").replace(" ", "-")), text(status or "unknown"))


def _table(headers, rows, numeric=()):
    """A table; ``headers`` None for a table of names and values (each row's first cell a heading)."""
    if headers is None:
        return "<table><tbody>%s</tbody></table>" % "".join("<tr><th>%s</th><td>%s</td></tr>" % (row[0], row[1]) for row in rows)
    out = ["<table><thead><tr>", "".join("<th>%s</th>" % text(header) for header in headers), "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + "".join('<td class="num">%s</td>' % cell if index in numeric else "<td>%s</td>" % cell
                                    for index, cell in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


# ---- the timeline ---------------------------------------------------------------------------------------------------

def _clock(seconds):
    seconds = int(round(seconds))
    return "%d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60) if seconds >= 3600 else "%d:%02d" % (seconds // 60, seconds % 60)


class _Chart:
    """Bars on one time axis; rows are added top-down, then the SVG is written."""

    def __init__(self, start, end):
        self.start = start
        self.span = max(1.0, (end - start).total_seconds())
        self.rows = []

    def x(self, moment):
        offset = (moment - self.start).total_seconds()
        return LABEL_WIDTH + max(0.0, min(1.0, offset / self.span)) * (CHART_WIDTH - LABEL_WIDTH - 10)

    def row(self, label, items, css=None):
        """``items``: ``(kind, begin, end, colour_kind, title[, note])``; kind ``bar``, ``wait`` (hatched), ``thin``
        (lower half) or ``mark`` (a tick at ``begin``); ``colour_kind`` a key of COLORS (the rect's class); ``note`` a
        text drawn beside the bar (after it, or before it when the bar ends near the right edge)."""
        self.rows.append((label, [item for item in items if item[1] is not None], css))

    def svg(self, title):
        height = AXIS_HEIGHT + ROW_HEIGHT * len(self.rows) + 6
        out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" '
               'aria-label="%s">' % (CHART_WIDTH, height, CHART_WIDTH, height, text(title)),
               '<defs><pattern id="wait" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
               '<rect width="6" height="6" fill="#eceff3"/><line x1="0" y1="0" x2="0" y2="6" stroke="#9aa3ad" '
               'stroke-width="2"/></pattern></defs>']
        step = next((tick for tick in TICK_STEPS if self.span / tick <= 10), TICK_STEPS[-1])
        tick = 0
        while tick <= self.span + 0.001:
            x = LABEL_WIDTH + tick / self.span * (CHART_WIDTH - LABEL_WIDTH - 10)
            out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e1e5ea"/>' % (x, AXIS_HEIGHT - 6, x, height))
            out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, AXIS_HEIGHT - 10, _clock(tick)))
            tick += step
        for index, (label, items, css) in enumerate(self.rows):
            top = AXIS_HEIGHT + index * ROW_HEIGHT
            shown = label if len(label) <= 44 else label[:43] + "…"
            out.append('<text x="4" y="%d"%s>%s</text>' % (top + 15, ' class="%s"' % css if css else "", text(shown)))
            for kind, begin, end, colour, tip, note in (tuple(item) + (None,) * (6 - len(item)) for item in items):
                x1 = self.x(begin)
                if kind == "mark":
                    out.append('<rect class="k-%s" x="%.1f" y="%d" width="3" height="%d"><title>%s</title></rect>'
                               % (colour, x1 - 1, top + 2, ROW_HEIGHT - 4, text(tip)))
                    continue
                x2 = self.x(end if end is not None else begin)
                y, h = (top + 12, ROW_HEIGHT - 14) if kind == "thin" else (top + 3, ROW_HEIGHT - 8)
                paint = 'fill="url(#wait)"' if kind == "wait" else 'class="k-%s"' % colour
                out.append('<rect %s x="%.1f" y="%d" width="%.1f" height="%d" rx="2"><title>%s</title></rect>'
                           % (paint, x1, y, max(2.0, x2 - x1), h, text(tip)))
                if note:
                    # inside the bar when it fits, else after it, cut to the room left
                    if x2 - x1 >= NOTE_CHAR * len(note) + 8:
                        out.append('<text class="note" x="%.1f" y="%d">%s</text>' % (x1 + 4, top + 15, text(note)))
                    else:
                        room = max(4, int((CHART_WIDTH - x2 - 10) / NOTE_CHAR))
                        out.append('<text class="stuck" x="%.1f" y="%d">%s</text>' % (
                            x2 + 5, top + 15, text(note if len(note) <= room else note[:room - 1] + "…")))
        out.append("</svg>")
        return "".join(out)


def _legend():
    out = ['<p class="legend">']
    for kind, label in LEGEND:
        if kind == "wait":
            out.append('<span><i style="background:repeating-linear-gradient(45deg,#9aa3ad 0 2px,#eceff3 2px 6px)"></i>%s</span>'
                       % text(label))
        else:
            out.append('<span><i class="k-%s"></i>%s</span>' % (kind, text(label)))
    out.append("</p>")
    return "".join(out)


def _held_by(row):
    """``shop/ledger-1 (PodDisruptionBudget shop/ledger)``: what holds a stuck node, for the text beside its bar."""
    held = ["%s%s" % (blocker.get("pod") or "?", ", PDB %s" % blocker["pdb"] if blocker.get("pdb") else "")
            for blocker in row.get("blocking") or []]
    return ", ".join(held) if held else (row.get("message") or "")


def _timeline(group, rows):
    timeline = group.get("timeline") or {}
    phases = phase_bars(group)
    steps = group.get("steps") or []
    moments = [time_of(timeline.get("started_at")), time_of(timeline.get("ended_at"))]
    moments += [time_of(phase.get(key)) for phase in phases for key in ("started_at", "ended_at")]
    moments += [time_of(step.get(key)) for step in steps for key in ("started_at", "ended_at")]
    moments += [time_of(row.get(key)) for row in rows for key in ("started_at", "terminated_at")] + [drain_end(row) for row in rows]
    moments += [time_of((row.get("replacement") or {}).get(key)) for row in rows for key in ("launch_time", "ready_at")]
    moments = [moment for moment in moments if moment is not None]
    if len(moments) < 2:
        return '<p class="muted">No timeline: the run recorded no times for this group.</p>'
    chart = _Chart(min(moments), max(moments))
    for phase in phases:
        chart.row("phase %s, %s" % (phase["label"], human_duration(phase.get("seconds"))),
                  [("bar", time_of(phase.get("started_at")), time_of(phase.get("ended_at")),
                    "phase-" + phase["kind"] if "phase-" + phase["kind"] in COLORS else "step",
                    "%s: %s s%s" % (phase["label"], _seconds(phase.get("seconds")),
                                    ", ended by the failure" if phase["stopped"] else ""))])
    for step in steps:
        begin, decided, end = time_of(step.get("started_at")), time_of(step.get("decided_at")), time_of(step.get("ended_at"))
        items = []
        if begin is not None and decided is not None and step.get("waited_seconds"):
            items.append(("wait", begin, decided, None, "step %s waited %s s for %s" % (
                step.get("index"), _seconds(step.get("waited_seconds")), ", ".join(step.get("waited_for") or []) or "the group")))
        items.append(("bar", decided or begin, end, "step", "%s: %s s" % (step_label(step), _seconds(step.get("drain_seconds")))))
        chart.row(step_label(step), items)
    for row in rows:
        state = node_state(row)
        started, ended, terminated = time_of(row.get("started_at")), drain_end(row), time_of(row.get("terminated_at"))
        stuck = state in ("drain failed", "skipped")
        node_items = [("bar", started, ended, STATE_KINDS[state] if state != "terminated" else "drain",
                       "%s: %s after %s s, %s evicted%s" % (
                           row.get("node"), state, _seconds(row.get("seconds")), row.get("evicted"),
                           (", held by " + _held_by(row)) if stuck else ""),
                       ("%s: %s" % ("stuck" if state == "drain failed" else state, _held_by(row))) if stuck else None)]
        if ended is not None and terminated is not None and row.get("drained_at"):
            node_items.append(("wait", ended, terminated, None, "%s: post-drain delay, %s s" % (
                row.get("node"), _seconds((terminated - ended).total_seconds()))))
        if terminated is not None:
            node_items.append(("mark", terminated, None, "terminate", "%s terminated (step %s)" % (
                row.get("instance_id"), row.get("terminate_step"))))
        replacement = row.get("replacement") or {}
        launched = time_of(replacement.get("launch_time"))
        if launched is not None:
            node_items.append(("thin", launched, time_of(replacement.get("ready_at")) or launched, "boot",
                               "replacement %s (%s): launched %s, Ready %s" % (
                                   replacement.get("instance_id"), replacement.get("node") or "no node yet",
                                   replacement.get("launch_time"), replacement.get("ready_at") or "not yet")))
        chart.row(("⚠ " if stuck else "") + (row.get("node") or row.get("instance_id") or "?"), node_items, "stuck" if stuck else None)
    return chart.svg("timeline of node group %s" % group.get("name")) + _legend()


# ---- the plan beside what happened --------------------------------------------------------------------------------

def _clock_note(clock):
    """What a faster clock means for the durations beside it; empty when the speed is not known."""
    if not clock:
        return ""
    return ('<p class="clock">Sandbox clock &times;%s (from %s): the boots, pod starts and stops and delays of this run '
            'ran %s times faster than real time, while the plan\'s prediction is for real time; the measured duration '
            'also holds the tasks\' own time, which no clock speeds up.</p>' % (
                text("%g" % clock["speed"]), text(clock["source"]), text("%g" % clock["speed"])))


def _measured_vs_predicted(group, clock=None):
    plan = group.get("plan") or {}
    phases = group.get("phase_seconds") or {}
    rows = [["predicted duration (plan)", text(human_duration(plan.get("eta_seconds")) if plan.get("eta_seconds") is not None else "not planned")],
            ["measured duration (whole group)", text(human_duration(group.get("seconds")))
             + (" on a clock &times;%s" % text("%g" % clock["speed"]) if clock else "")]]
    for phase in phase_bars(group):
        rows.append(["&nbsp;&nbsp;" + text(phase["label"]), text(human_duration(phases.get(phase["name"], phase.get("seconds"))))])
    rows += [["planned drain waves", text(plan.get("batch_count", len(plan.get("batches") or [])))],
             ["steps run", text(len(group.get("steps") or []))],
             ["surge", text(plan.get("surge"))],
             ["max unavailable", text(plan.get("batch_size", plan.get("max_unavailable")))],
             ["nodes replaced", text(group.get("nodes_replaced"))],
             ["target", text(target_text(group.get("target")))]]
    return _table(None, rows)


def _surge_priced(group, clock=None):
    """The surge priced by the plan - the configured one, EKS's default, 100 % - and the measured duration of the one
    the run used; nothing for a plan without it (a result written before)."""
    priced = surge_priced(group)
    if not priced:
        return ""
    ran = any(choice["measured_seconds"] is not None for choice in priced)
    headers = ["surge", "predicted duration", "extra instance-minutes"] + (["measured duration"] if ran else [])
    rows = []
    for choice in priced:
        row = [text("%s (%s)" % (choice["surge"], ", ".join(choice["choices"]))),
               text(human_duration(choice["eta_seconds"])),
               text(instance_minutes_text(choice["extra_instance_minutes"]))]
        if ran:
            measured = choice["measured_seconds"]
            on_clock = " on a clock &times;%s" % text("%g" % clock["speed"]) if clock else ""
            row.append(text(human_duration(measured)) + on_clock if measured is not None else "")
        rows.append(row)
    return ('<p class="muted">The surge priced: the plan\'s duration and extra instance-minutes (instances above the '
            'group\'s desired size, over the rollout) at the surge configured, at EKS\'s default and at 100 %%%s.</p>'
            % (", beside what this run took" if ran else "")) + _table(headers, rows, numeric=(2,))


def _plan_waves(group):
    headers, rows = wave_rows(group.get("plan") or {})
    if not rows:
        return '<p class="muted">The plan has no waves (nothing was outdated when it was made).</p>'
    return _table(headers, [[text(cell) for cell in row] for row in rows], numeric=(0, 1))


def _findings(group):
    """The blockers and warnings: the plan's drain pre-flight (its blockers, then its warnings, each grouped by kind)
    and what held the drains of this run that did not finish."""
    plan = group.get("plan") or {}
    rows = []
    for severity, found in (("error", "blocker"), ("warning", "warning")):
        grouped = found_by_kind(plan.get("preflight") or {}, severity)
        for kind in sorted(grouped):
            rows.extend([text("%s (plan)" % found), text(kind), text(item["pod"]), text(item["node"]), text(item["pdb"]),
                         text(item["message"])] for item in grouped[kind])
    held = drain_blockers(group.get("steps") or [])
    rows.extend([text("%s (step %s)" % (item["state"], item["step"])), text(item["kind"]), text(item["pod"]), text(item["node"]),
                 text(item["pdb"]), text(item["message"])] for item in held)
    kinds = {}
    for row in rows:
        kinds[row[1]] = kinds.get(row[1], 0) + 1
    out = []
    if "preflight" not in plan and not group.get("plan_only"):
        out.append('<p class="muted">This run\'s plan carried no drain pre-flight (the playbook nodeops.rollout.plan '
                   'shows one before a run); below is what held its drains.</p>')
    if not rows:
        nothing = "The drain pre-flight found no blocker and no warning." if "preflight" in plan else "No drain was held."
        out.append('<p class="muted">%s</p>' % nothing)
        return "".join(out)
    out.append('<p>%s</p>' % ", ".join("<b>%s</b> %d" % (kind or "other", count) for kind, count in sorted(kinds.items())))
    out.append(_table(["found", "kind", "pod", "node", "PodDisruptionBudget", "message"], rows))
    return "".join(out)


def _steps_table(group):
    steps = group.get("steps") or []
    if not steps:
        return '<p class="muted">No step ran.</p>'
    rows = []
    for step in steps:
        nodes = step.get("nodes") or []
        by_state = {"drained": [], "drain failed": [], "skipped": []}
        for node in nodes:
            status = node.get("status")
            by_state[status if status in ("drained", "skipped") else "drain failed"].append(node.get("node") or "?")
        rows.append([text(step.get("index")), text(_seconds(step.get("waited_seconds"))),
                     text(", ".join(step.get("waited_for") or [])), text(len(step.get("terminated") or [])),
                     text(step.get("decrement")), text(step.get("validated")),
                     text(", ".join(by_state["drained"])), text(", ".join(by_state["drain failed"])), text(", ".join(by_state["skipped"])),
                     text(_seconds(step.get("drain_seconds")))])
    return _table(["step", "waited s", "waited for", "terminated", "paid back", "validated", "drained", "drain failed",
                   "skipped", "drain s"], rows, numeric=(0, 1, 3, 4, 5, 9))


# ---- the nodes -----------------------------------------------------------------------------------------------------

def _blockers(row):
    out = []
    for blocker in row.get("blocking") or []:
        pdb = " (PodDisruptionBudget %s)" % blocker["pdb"] if blocker.get("pdb") else ""
        out.append("%s%s: %s" % (blocker.get("pod"), pdb, blocker.get("message") or blocker.get("kind") or ""))
    return "<br>".join(text(line) for line in out)


def _state(state):
    return '<span class="state k-%s" title="%s">%s</span>' % (STATE_KINDS[state], text(NODE_STATES[state]), text(state))


def _node_table(rows):
    if not rows:
        return '<p class="muted">No node was drained or terminated.</p>'
    out = ["<table><thead><tr>", "".join("<th>%s</th>" % header for header in (
        "old node / instance", "replacement", "AZ", "step", "state", "drain s", "evicted", "restarted", "deleted", "blockers")),
        "</tr></thead><tbody>"]
    for row in rows:
        state = node_state(row)
        replacement = row.get("replacement") or {}
        old = "%s<br><span class=\"muted\">%s</span>" % (text(row.get("node") or "(no node)"), text(row.get("instance_id")))
        new = ("%s<br><span class=\"muted\">%s, Ready %s</span>" % (
            text(replacement.get("node") or "(no node yet)"), text(replacement.get("instance_id")),
            text(_when(replacement.get("ready_at")) if replacement.get("ready_at") else "not yet")) if replacement else
            '<span class="muted">%s</span>' % ("none: paid the surge back" if row.get("paid_back") else "none seen"))
        cells = [old, new, text(row.get("az")), text(row.get("step")), _state(state), text(_seconds(row.get("seconds"))),
                 text(row.get("evicted")), text(row.get("restarted")),
                 text("%s%s" % (row.get("deleted"), " (forced)" if row.get("forced") else "")), _blockers(row)]
        out.append('<tr class="state-%s" data-node="%s">' % (text(state.replace(" ", "-")), text(row.get("node") or row.get("instance_id")))
                   + "".join('<td class="num">%s</td>' % cell if index in (3, 5, 6, 7, 8) else "<td>%s</td>" % cell
                             for index, cell in enumerate(cells)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


# ---- sections the operator adds -----------------------------------------------------------------------------------

def _cell(value):
    if value is None:
        return '<span class="muted">-</span>'
    if isinstance(value, bool):
        return "yes" if value else "no"
    return text(value)


def _json_section(data):
    """A JSON document as the tables of :func:`records.json_tables`, each under its name."""
    out = []
    for table in json_tables(data):
        if table["title"]:
            out.append("<h3>%s</h3>" % text(table["title"]))
        if table["headers"] is None:
            out.append(_table(None, [[text(name), _cell(value)] for name, value in table["rows"]]))
        else:
            numeric = tuple(index for index in range(len(table["headers"]))
                            if all(isinstance(row[index], (int, float)) and not isinstance(row[index], bool)
                                   for row in table["rows"] if row[index] is not None))
            out.append(_table(table["headers"], [[_cell(value) for value in row] for row in table["rows"]], numeric=numeric))
    return "".join(out) or '<span class="muted">none</span>'


def section_of(entry):
    """One section ``{"title", "data", "source", "error"}`` from either that shape or a loop result of the role's
    reads (``ansible.builtin.uri`` or ``ansible.builtin.slurp`` over ``{"title", "url" | "file"}`` items); None for a
    skipped read."""
    if not isinstance(entry, dict) or entry.get("skipped"):
        return None
    item = entry.get("item")
    if not isinstance(item, dict):
        return entry if entry.get("title") else None
    section = {"title": item.get("title"), "source": item.get("url") or item.get("file"), "data": None, "error": None}
    if entry.get("failed") or (entry.get("status") not in (None, 200)):
        section["error"] = entry.get("msg") or "HTTP status %s" % entry.get("status")
        return section
    try:
        if "json" in entry:
            section["data"] = entry["json"]
        elif entry.get("encoding") == "base64":
            section["data"] = json.loads(base64.b64decode(entry.get("content") or "").decode("utf-8"))
        else:
            section["data"] = json.loads(entry.get("content") or "")
    except ValueError as exc:
        section["error"] = "not a JSON document: %s" % exc
    return section


def _sections(sections):
    out = []
    for section in sections:
        out.append("<h2>%s</h2>" % text(section.get("title") or "Attached report"))
        if section.get("source"):
            out.append('<p class="meta">from %s</p>' % text(section["source"]))
        if section.get("error"):
            out.append('<p class="banner stopped">Could not be read: %s</p>' % text(section["error"]))
        else:
            out.append(_json_section(section.get("data")))
    return "".join(out)


# ---- the page -------------------------------------------------------------------------------------------------------

QUARANTINE_NEXT_STEP = ("Each stays cordoned, labelled nodeops.rollout/quarantined (kubectl get nodes -l nodeops.rollout/quarantined). "
                        "Free what holds it - scale its workload up, or relax its PodDisruptionBudget - then run the upgrade "
                        "again: it drains these nodes and goes on.")


def _quarantined(group):
    """The nodes a drain skipped, labelled quarantined, each with what holds it and what to do: first of all."""
    quarantined = group.get("quarantined") or []
    if not quarantined:
        return ""
    rows = [[text(entry.get("node")), text(entry.get("blocked_by"))] for entry in quarantined]
    return ('<div class="stuck-nodes quarantined"><h3>%d node(s) quarantined: their drain was skipped</h3>%s<p>%s</p></div>'
            % (len(quarantined), _table(["node", "held by"], rows), text(QUARANTINE_NEXT_STEP)))


def _stuck_nodes(group):
    """The nodes whose drain did not finish, each with what holds it: the first thing a person must see of a failure
    (the quarantined ones before them)."""
    held = drain_blockers(group.get("steps") or [])
    if not held:
        return _quarantined(group)
    rows = [[text(item["node"]), _state(item["state"]), text(item["pod"]), text(item["pdb"]), text(item["message"])] for item in held]
    nodes = sorted(set(item["node"] for item in held))
    return _quarantined(group) + ('<div class="stuck-nodes"><h3>%d node(s) stuck, cordoned with pods left</h3>%s</div>'
                                  % (len(nodes), _table(["node", "state", "pod left", "PodDisruptionBudget", "why"], rows)))


def _banner(groups):
    stopped = [group for group in groups if group.get("status") not in FINISHED]
    if not stopped:
        if not groups:
            return ""
        planned = all(group.get("status") == "planned" or group.get("plan_only") for group in groups)
        return ('<div class="banner ok"><h2>%s</h2></div>'
                % text("Plan only: nothing was changed." if planned else "Every node group finished."))
    out = []
    for group in stopped:
        status = group.get("status") or "unknown"
        out.append('<div class="banner %s">' % BANNER_KINDS.get(status, "stopped"))
        out.append("<h2>Node group %s: %s</h2>" % (text(group.get("name")), text(status)))
        out.append(_stuck_nodes(group))
        if group.get("reason") and not str(group.get("message") or "").startswith(group["reason"]):
            out.append("<p>Why: <b>%s</b></p>" % text(group["reason"]))
        if group.get("failed_task"):
            out.append("<p>Stopped at <b>%s</b></p>" % text(group["failed_task"]))
        permission = group.get("permission")
        if permission:
            out.append('<p class="permission">Permission refused: <b>%s</b>; granted by <b>%s</b></p>'
                       % (text(permission_text(permission)), text(permission.get("granted_by") or "no documented rule")))
        if group.get("message"):
            out.append("<p><pre>%s</pre></p>" % text(group["message"]))
        out.append("<p><b>What to do next:</b> %s</p>" % text(next_step(group)))
        out.append("</div>")
    return "".join(out)


def next_step(group):
    """What to do next for a group that did not finish, by its status and why it stopped."""
    status = group.get("status") or "unknown"
    if group.get("permission"):
        return PERMISSION_NEXT_STEP
    if status == "paused" and group.get("reason") in PAUSED_NEXT_STEPS:
        return PAUSED_NEXT_STEPS[group["reason"]]
    if status == "rolled back" and not group.get("reason"):
        return ROLLBACK_PLAYBOOK_NEXT_STEP
    return NEXT_STEPS.get(status, DEFAULT_NEXT_STEP)


def page_title(cluster, groups):
    """``Node rollout of cluster prod-eu``, or without a cluster (the serial playbook's hosts are nodes, not clusters)
    ``Node rollout of node group workers`` / ``of node groups a, b``."""
    if cluster:
        return "Node rollout of cluster %s" % cluster
    names = [str(group.get("name")) for group in groups if group.get("name")]
    if not names:
        return "Node rollout"
    return "Node rollout of node group%s %s" % ("" if len(names) == 1 else "s", ", ".join(names))


def _summary(groups, clock=None):
    rows = []
    for group in groups:
        plan = group.get("plan") or {}
        counts = group_counts(group)
        rows.append(['<a href="#group-%s">%s</a>' % (text(group.get("name")), text(group.get("name"))), _status(group.get("status")),
                     text("%d of %d" % (counts["replaced"], counts["outdated"])), text(counts["drained"]),
                     text(counts["drain_failed"]), text(counts["skipped"]), text(counts["evictions"]), text(counts["restarted"]),
                     text(counts["deleted"]), text(human_duration(group.get("seconds"))),
                     text(human_duration(plan.get("eta_seconds")) if plan.get("eta_seconds") is not None else "")])
    return (_table(["node group", "status", "replaced", "drained", "drain failed", "skipped", "evictions", "restarted",
                    "deleted", "measured", "predicted"], rows, numeric=(3, 4, 5, 6, 7, 8))
            + '<p class="muted">Nodes: drained (terminated or not), drain failed (stuck with pods left), skipped (left '
              'cordoned after the drain timeout). Evictions, restarts and deletions count every drain, the ones that did not '
              'finish included.</p>' + _clock_note(clock))


def _group(group, clock=None):
    rows = node_rows(group.get("steps") or [], group.get("new_nodes") or [])
    name = group.get("name")
    out = ['<section class="group" id="group-%s">' % text(name),
           "<h2>Node group %s %s</h2>" % (text(name), _status(group.get("status")))]
    if not group.get("plan_only"):
        out.append("<h3>Timeline</h3>")
        out.append(_timeline(group, rows))
    out.append('<div class="columns"><div><h3>Plan and what happened</h3>%s%s</div>'
               '<div><h3>The plan\'s drain waves</h3>%s</div></div>'
               % (_measured_vs_predicted(group, clock), _surge_priced(group, clock), _plan_waves(group)))
    plan = group.get("plan") or {}
    if "preflight" in plan or not group.get("plan_only"):
        out.append("<h3>Blockers and warnings</h3>")
        out.append('<p class="muted">What the drain pre-flight found on the outdated nodes (a blocker stops the drain '
                   'under the run\'s options, a warning lets it finish at a cost), and what held a drain of this run.</p>')
        out.append(_findings(group))
    if not group.get("plan_only"):
        out.append("<h3>Steps</h3>")
        out.append(_steps_table(group))
        out.append("<h3>Nodes</h3>")
        out.append('<p class="muted">Each replacement is the first new instance the group launched after the old one '
                   'was terminated, in its AZ when there was one; a termination that paid the surge back stands for an '
                   'instance the surge launched.</p>')
        out.append(_node_table(rows))
    out.append("</section>")
    return "".join(out)


def report_html(result, cluster=None, sections=None, version=None):
    """The page (a str) for ``result`` (``rolling_update_result``) of cluster ``cluster`` (the inventory host), with the
    operator's ``sections`` (``[{"title", "data", "source", "error"}]``) at the end; a section whose document has
    ``clock_speed`` (the sandbox's invariant report) makes the page say the run's delays ran on that clock."""
    result = result if isinstance(result, dict) else {}
    groups = [group for group in result.get("node_groups") or [] if isinstance(group, dict)]
    read = [section for section in (section_of(entry) for entry in sections or []) if isinstance(section, dict)]
    clock = clock_speed(read)
    title = page_title(cluster, groups)
    # times as the role wrote them: with Z since it writes them so, without a zone (UTC) in results written before
    ended = max((moment for moment in (time_of((group.get("timeline") or {}).get("ended_at")) for group in groups) if moment),
                default=None)
    out = ['<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           "<title>%s</title><style>%s</style></head><body>" % (text(title), CSS),
           "<h1>%s</h1>" % text(title),
           '<p class="meta">started %s%s; made by nodeops.rollout%s</p>' % (
               text(_when(result.get("started_at"))), (", ended %s" % text(_when(ended))) if ended else "",
               (" " + text(version)) if version else ""),
           _banner(groups)]
    if groups:
        out.append(_summary(groups, clock))
    out.extend(_group(group, clock) for group in groups)
    out.append(_sections(read))
    out.append("</body></html>\n")
    return "".join(out)
