# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A rollout's result (``rolling_update_result``) as one self-contained HTML page. Pure.

The page needs nothing from the network: its style is inline CSS, its timelines inline SVG (hover titles, no
script). At the top it says what stopped a run that did not finish and what to do next; then, per node group, a
timeline (phases, each step as a bar with its wait shown as a wait, each node from its cordon to its termination and
its replacement's boot), the plan beside what happened (predicted and measured durations, the plan's waves with the
hold after each, the steps run), a plan's drain pre-flight (its blockers and warnings grouped by kind, with the pod,
its node and its PodDisruptionBudget) and the node table (old instance and its replacement, AZ, drain seconds, pods
evicted, restarted and force-deleted, what blocked, with the PodDisruptionBudget named); last, the sections the
operator added (a JSON document each, such as a test environment's invariant report).
"""

from __future__ import annotations

import base64
import html
import json

from ansible_collections.nodeops.rollout.plugins.module_utils.report.records import node_rows, time_of
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import found_by_kind, human_duration, target_text, wave_rows

# Statuses of a group that ended the way it was asked to.
FINISHED = ("replaced", "up to date", "planned", "cancelled", "no rollout")

NEXT_STEPS = {
    "failed": "Fix the cause named here and run the same playbook again: it resumes from the group's nodeops.rollout state "
              "tags. Until then the cluster keeps serving: untouched old nodes still run their pods and the group keeps its "
              "surge.",
    "paused": "The rollout stopped cleanly between steps and keeps its state: run the same playbook again to go on from "
              "here.",
    "rolled back": "The group is back on the launch template version it ran before, and the new nodes are gone. Find out "
                   "why the new version's nodes failed, then start the rollout again.",
    "started": "The run ended before this group's result was recorded: run the same playbook again; it resumes from the "
               "group's nodeops.rollout state tags.",
}
DEFAULT_NEXT_STEP = "Look at the message above and run the same playbook again once the cause is fixed."

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
"""

COLORS = {"setup": "#9aa7b8", "scale_up": "#6d93c9", "upgrade": "#2f6db5", "scale_down": "#6aa87a",
          "drain": "#2f6db5", "failed": "#c0392b", "terminate": "#c0392b", "boot": "#5cae72", "step": "#7b8da3"}
PHASE_NAMES = {"setup": "setup", "scale_up": "scale up", "upgrade": "upgrade", "scale_down": "scale down"}

CHART_WIDTH = 1000
LABEL_WIDTH = 230
ROW_HEIGHT = 22
AXIS_HEIGHT = 24
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

    def row(self, label, items):
        """``items``: ``(kind, begin, end, colour, title[, label])``; kind ``bar``, ``wait`` (hatched), ``thin`` (lower half) or
        ``mark`` (a tick at ``begin``)."""
        self.rows.append((label, [item for item in items if item[1] is not None]))

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
        for index, (label, items) in enumerate(self.rows):
            top = AXIS_HEIGHT + index * ROW_HEIGHT
            out.append('<text x="4" y="%d">%s</text>' % (top + 15, text(label if len(label) <= 34 else label[:33] + "…")))
            for kind, begin, end, colour, tip, label_text in (tuple(item) + (None,) * (6 - len(item)) for item in items):
                x1 = self.x(begin)
                if kind == "mark":
                    out.append('<rect x="%.1f" y="%d" width="3" height="%d" fill="%s"><title>%s</title></rect>'
                               % (x1 - 1, top + 2, ROW_HEIGHT - 4, colour, text(tip)))
                    continue
                x2 = self.x(end if end is not None else begin)
                y, h = (top + 12, ROW_HEIGHT - 14) if kind == "thin" else (top + 3, ROW_HEIGHT - 8)
                fill = "url(#wait)" if kind == "wait" else colour
                out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" rx="2"><title>%s</title></rect>'
                           % (x1, y, max(2.0, x2 - x1), h, fill, text(tip)))
                if label_text and x2 - x1 >= 7 * len(label_text):
                    out.append('<text x="%.1f" y="%d" fill="#fff" style="fill:#fff">%s</text>' % (x1 + 4, top + 14, text(label_text)))
        out.append("</svg>")
        return "".join(out)


def _legend():
    items = [("drain (cordon to drained)", COLORS["drain"]), ("wait", "url"), ("terminated", COLORS["terminate"]),
             ("replacement: launched to Ready", COLORS["boot"]), ("step", COLORS["step"])]
    out = ['<p class="legend">']
    for label, colour in items:
        style = ("background:repeating-linear-gradient(45deg,#9aa3ad 0 2px,#eceff3 2px 6px)" if colour == "url"
                 else "background:%s" % colour)
        out.append('<span><i style="%s"></i>%s</span>' % (style, text(label)))
    out.append("</p>")
    return "".join(out)


def _timeline(group, rows):
    timeline = group.get("timeline") or {}
    phases = timeline.get("phases") or []
    steps = group.get("steps") or []
    moments = [time_of(timeline.get("started_at")), time_of(timeline.get("ended_at"))]
    moments += [time_of(phase.get(key)) for phase in phases for key in ("started_at", "ended_at")]
    moments += [time_of(step.get(key)) for step in steps for key in ("started_at", "ended_at")]
    moments += [time_of(row.get(key)) for row in rows for key in ("started_at", "terminated_at")]
    moments += [time_of((row.get("replacement") or {}).get(key)) for row in rows for key in ("launch_time", "ready_at")]
    moments = [moment for moment in moments if moment is not None]
    if len(moments) < 2:
        return '<p class="muted">No timeline: the run recorded no times for this group.</p>'
    chart = _Chart(min(moments), max(moments))
    chart.row("phases", [("bar", time_of(phase.get("started_at")), time_of(phase.get("ended_at")),
                          COLORS.get(phase.get("name"), COLORS["step"]),
                          "%s: %s s" % (PHASE_NAMES.get(phase.get("name"), phase.get("name")), _seconds(phase.get("seconds"))),
                          PHASE_NAMES.get(phase.get("name"), phase.get("name")))
                         for phase in phases])
    items = []
    for step in steps:
        begin, decided, end = time_of(step.get("started_at")), time_of(step.get("decided_at")), time_of(step.get("ended_at"))
        if begin is not None and decided is not None and step.get("waited_seconds"):
            items.append(("wait", begin, decided, None, "step %s waited %s s for %s" % (
                step.get("index"), _seconds(step.get("waited_seconds")), ", ".join(step.get("waited_for") or []) or "the group")))
        items.append(("bar", decided or begin, end, COLORS["step"], "step %s: terminate %d, drain %d" % (
            step.get("index"), len(step.get("terminated") or []), len(step.get("nodes") or [])), str(step.get("index"))))
    chart.row("steps", items)
    for row in rows:
        drained, terminated = time_of(row.get("drained_at")), time_of(row.get("terminated_at"))
        failed = row.get("status") not in (None, "drained")
        node_items = [("bar", time_of(row.get("started_at")), drained or time_of(row.get("started_at")),
                       COLORS["failed"] if failed else COLORS["drain"],
                       "%s: drain %s s, %s evicted (%s)" % (
                           row.get("node"), _seconds(row.get("seconds")), row.get("evicted"), row.get("status")))]
        if drained is not None and terminated is not None:
            node_items.append(("wait", drained, terminated, None, "%s: post-drain delay, %s s" % (
                row.get("node"), _seconds((terminated - drained).total_seconds()))))
        if terminated is not None:
            node_items.append(("mark", terminated, None, COLORS["terminate"], "%s terminated (step %s)" % (
                row.get("instance_id"), row.get("terminate_step"))))
        replacement = row.get("replacement") or {}
        launched = time_of(replacement.get("launch_time"))
        if launched is not None:
            node_items.append(("thin", launched, time_of(replacement.get("ready_at")) or launched, COLORS["boot"],
                               "replacement %s (%s): launched %s, Ready %s" % (
                                   replacement.get("instance_id"), replacement.get("node") or "no node yet",
                                   replacement.get("launch_time"), replacement.get("ready_at") or "not yet")))
        chart.row(row.get("node") or row.get("instance_id") or "?", node_items)
    return chart.svg("timeline of node group %s" % group.get("name")) + _legend()


# ---- the plan beside what happened --------------------------------------------------------------------------------

def _measured_vs_predicted(group):
    plan = group.get("plan") or {}
    phases = group.get("phase_seconds") or {}
    rows = [["predicted duration (plan)", text(human_duration(plan.get("eta_seconds")) if plan.get("eta_seconds") is not None else "not planned")],
            ["measured duration (whole group)", text(human_duration(group.get("seconds")))]]
    for key in ("setup", "scale_up", "upgrade", "scale_down"):
        if key in phases:
            rows.append(["&nbsp;&nbsp;" + text(PHASE_NAMES[key]), text(human_duration(phases[key]))])
    rows += [["planned drain waves", text(plan.get("batch_count", len(plan.get("batches") or [])))],
             ["steps run", text(len(group.get("steps") or []))],
             ["surge", text(plan.get("surge"))],
             ["max unavailable", text(plan.get("batch_size", plan.get("max_unavailable")))],
             ["nodes replaced", text(group.get("nodes_replaced"))],
             ["target", text(target_text(group.get("target")))]]
    return _table(None, rows)


def _plan_waves(group):
    headers, rows = wave_rows(group.get("plan") or {})
    if not rows:
        return '<p class="muted">The plan has no waves (nothing was outdated when it was made).</p>'
    return _table(headers, [[text(cell) for cell in row] for row in rows], numeric=(0, 1))


def _plan_found(plan):
    """The drain pre-flight's blockers, then its warnings, each grouped by kind; None when the plan has no pre-flight
    (a rollout's plan: what blocked its drains is in the node table)."""
    if "preflight" not in plan:
        return None
    rows = []
    for severity, found in (("error", "blocker"), ("warning", "warning")):
        grouped = found_by_kind(plan["preflight"], severity)
        for kind in sorted(grouped):
            rows.extend([text(found), text(kind), text(item["pod"]), text(item["node"]), text(item["pdb"]), text(item["message"])]
                        for item in grouped[kind])
    if not rows:
        return '<p class="muted">The drain pre-flight found no blocker and no warning.</p>'
    return _table(["found", "kind", "pod", "node", "PodDisruptionBudget", "message"], rows)


def _steps_table(group):
    steps = group.get("steps") or []
    if not steps:
        return '<p class="muted">No step ran.</p>'
    rows = []
    for step in steps:
        rows.append([text(step.get("index")), text(_seconds(step.get("waited_seconds"))),
                     text(", ".join(step.get("waited_for") or [])), text(len(step.get("terminated") or [])),
                     text(step.get("decrement")), text(step.get("validated")),
                     text(", ".join(node.get("node") or "?" for node in step.get("nodes") or [])),
                     text(_seconds(step.get("drain_seconds")))])
    return _table(["step", "waited s", "waited for", "terminated", "paid back", "validated", "drained", "drain s"], rows,
                  numeric=(0, 1, 3, 4, 5, 7))


# ---- the nodes -----------------------------------------------------------------------------------------------------

def _blockers(row):
    out = []
    for blocker in row.get("blocking") or []:
        pdb = " (PodDisruptionBudget %s)" % blocker["pdb"] if blocker.get("pdb") else ""
        out.append("%s%s: %s" % (blocker.get("pod"), pdb, blocker.get("message") or blocker.get("kind") or ""))
    return "<br>".join(text(line) for line in out)


def _node_table(rows):
    if not rows:
        return '<p class="muted">No node was drained or terminated.</p>'
    cells = []
    for row in rows:
        replacement = row.get("replacement") or {}
        old = "%s<br><span class=\"muted\">%s</span>" % (text(row.get("node") or "(no node)"), text(row.get("instance_id")))
        new = ("%s<br><span class=\"muted\">%s, Ready %s</span>" % (
            text(replacement.get("node") or "(no node yet)"), text(replacement.get("instance_id")),
            text(_when(replacement.get("ready_at")) if replacement.get("ready_at") else "not yet")) if replacement else
            '<span class="muted">%s</span>' % ("none: paid the surge back" if row.get("paid_back") else "none seen"))
        status = row.get("status") or ("terminated" if row.get("terminated_at") else "")
        if row.get("terminated_at") and status == "drained":
            status = "replaced"
        cells.append([old, new, text(row.get("az")), text(row.get("step")), text(status), text(_seconds(row.get("seconds"))),
                      text(row.get("evicted")), text(row.get("restarted")),
                      text("%s%s" % (row.get("deleted"), " (forced)" if row.get("forced") else "")), _blockers(row)])
    return _table(["old node / instance", "replacement", "AZ", "step", "status", "drain s", "evicted", "restarted",
                   "deleted", "blockers"], cells, numeric=(3, 5, 6, 7, 8))


# ---- sections the operator adds -----------------------------------------------------------------------------------

def _value(value, depth=0):
    if isinstance(value, dict):
        if not value:
            return '<span class="muted">none</span>'
        if depth >= 3:
            return "<pre>%s</pre>" % text(json.dumps(value, indent=1, sort_keys=True))
        return _table(None, [[text(key), _value(value[key], depth + 1)] for key in value])
    if isinstance(value, list):
        if not value:
            return '<span class="muted">none</span>'
        if all(not isinstance(item, (dict, list)) for item in value):
            return text(", ".join(str(item) for item in value))
        return "<br>".join(_value(item, depth + 1) for item in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return text(value)


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
    for section in (section_of(entry) for entry in sections or []):
        if not isinstance(section, dict):
            continue
        out.append("<h2>%s</h2>" % text(section.get("title") or "Attached report"))
        if section.get("source"):
            out.append('<p class="meta">from %s</p>' % text(section["source"]))
        if section.get("error"):
            out.append('<p class="banner stopped">Could not be read: %s</p>' % text(section["error"]))
        else:
            out.append(_value(section.get("data")))
    return "".join(out)


# ---- the page -------------------------------------------------------------------------------------------------------

def _banner(groups):
    stopped = [group for group in groups if group.get("status") not in FINISHED]
    if not stopped:
        if not groups:
            return ""
        planned = all(group.get("status") == "planned" or group.get("plan_only") for group in groups)
        return ('<div class="banner ok"><h2>%s</h2></div>'
                % text("Plan only: nothing was changed." if planned else "Every node group finished."))
    out = ['<div class="banner stopped">']
    for group in stopped:
        status = group.get("status") or "unknown"
        out.append("<h2>Node group %s: %s</h2>" % (text(group.get("name")), text(status)))
        if group.get("reason") and group.get("reason") != group.get("message"):
            out.append("<p>Why: <b>%s</b></p>" % text(group["reason"]))
        if group.get("failed_task"):
            out.append("<p>Stopped at <b>%s</b></p>" % text(group["failed_task"]))
        if group.get("message"):
            out.append("<p><pre>%s</pre></p>" % text(group["message"]))
        out.append("<p><b>What to do next:</b> %s</p>" % text(NEXT_STEPS.get(status, DEFAULT_NEXT_STEP)))
    out.append("</div>")
    return "".join(out)


def _summary(groups):
    rows = []
    for group in groups:
        plan = group.get("plan") or {}
        rows.append(['<a href="#group-%s">%s</a>' % (text(group.get("name")), text(group.get("name"))), _status(group.get("status")),
                     text("%s of %s" % (group.get("nodes_replaced", 0), len(plan.get("outdated") or []))),
                     text(human_duration(group.get("seconds"))),
                     text(human_duration(plan.get("eta_seconds")) if plan.get("eta_seconds") is not None else ""),
                     text(group.get("evictions", 0)), text(len(group.get("restarted") or [])),
                     text(len(group.get("deleted") or [])), text(", ".join(group.get("skipped_nodes") or []))])
    return _table(["node group", "status", "replaced", "measured", "predicted", "evictions", "restarted", "deleted",
                   "skipped nodes"], rows, numeric=(5, 6, 7))


def _group(group):
    rows = node_rows(group.get("steps") or [], group.get("new_nodes") or [])
    name = group.get("name")
    out = ['<section class="group" id="group-%s">' % text(name),
           "<h2>Node group %s %s</h2>" % (text(name), _status(group.get("status")))]
    if not group.get("plan_only"):
        out.append("<h3>Timeline</h3>")
        out.append(_timeline(group, rows))
    out.append('<div class="columns"><div><h3>Plan and what happened</h3>%s</div><div><h3>The plan\'s drain waves</h3>%s</div></div>'
               % (_measured_vs_predicted(group), _plan_waves(group)))
    found = _plan_found(group.get("plan") or {})
    if found is not None:
        out.append("<h3>Blockers and warnings</h3>")
        out.append('<p class="muted">What the drain pre-flight found on the outdated nodes: a blocker stops the drain '
                   'under the run\'s options, a warning lets it finish at a cost.</p>')
        out.append(found)
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
    operator's ``sections`` (``[{"title", "data", "source", "error"}]``) at the end."""
    result = result if isinstance(result, dict) else {}
    groups = [group for group in result.get("node_groups") or [] if isinstance(group, dict)]
    title = "Node rollout%s" % (" of cluster %s" % cluster if cluster else "")
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
        out.append(_summary(groups))
    out.extend(_group(group) for group in groups)
    out.append(_sections(sections))
    out.append("</body></html>\n")
    return "".join(out)
