# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The plan of one node group as lines a person reads at a glance (the plan playbook prints them). Pure.

In: the group's plan as ``node_group_info`` returns it (``plan``), the target, how many instances the group has,
the drain pre-flight's nodes (``node_drain`` in check mode: per node ``blocking``) and the operator's controls. Out: a
list of lines - a heading, the controls (on failure, the maintenance window, bake time and checkpoints, abort alarms,
hooks), the drain waves as a table (nodes, AZs, the hold after each), the surge priced as a table (at the surge
configured, EKS's default and 100 %: the estimated duration and the extra instance-minutes), the blockers and warnings
grouped by kind with the pod, its node and its PodDisruptionBudget named. No Python reprs.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.permissions import aws_use, aws_use_text
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import counted
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.preflight import stop_message
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import DRAIN_OPTION_VARIABLES

# Node names shown per wave; the rest are counted.
NAMES_SHOWN = 8


def human_duration(seconds):
    """``400`` -> ``6m 40s``; ``5400`` -> ``1h 30m``; None -> ``unknown``."""
    if seconds is None:
        return "unknown"
    total = int(round(float(seconds)))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh %02dm" % (hours, minutes)
    if minutes:
        return "%dm %02ds" % (minutes, secs)
    return "%ds" % secs


def target_text(target):
    """``launch template lt-0abc version 5, image ami-0123`` from a target dict (missing parts left out)."""
    target = target or {}
    parts = []
    if target.get("launch_template_id"):
        parts.append("launch template %s" % target["launch_template_id"])
    if target.get("version") not in (None, ""):
        parts.append("version %s" % target["version"])
    text = " ".join(parts)
    if target.get("image_id"):
        text = "%s, image %s" % (text, target["image_id"]) if text else "image %s" % target["image_id"]
    return text or "the group's current launch template"


def _az_counts(azs):
    counts = {}
    for az in azs:
        counts[az or "?"] = counts.get(az or "?", 0) + 1
    return ", ".join("%s %d" % (az, count) for az, count in sorted(counts.items()))


def _names(nodes):
    shown = [node or "(no node)" for node in nodes[:NAMES_SHOWN]]
    more = len(nodes) - len(shown)
    return ", ".join(shown) + (" and %d more" % more if more > 0 else "")


def wave_rows(plan):
    """The plan's drain waves as a table: ``(headers, rows)``, each row ``[wave, node count, "AZ count, ...", "node
    names"]``; when a wave holds (its ``hold_seconds``, the bake time or checkpoint wait after it), a ``then`` column
    before the names says the hold after each wave (``hold 30m 00s`` or ``-``)."""
    batches = (plan or {}).get("batches") or []
    headers = ["wave", "nodes", "AZs", "node names"]
    rows = [[batch.get("index", index + 1), len(batch.get("nodes") or batch.get("instance_ids") or []),
             _az_counts(batch.get("azs") or []), _names(batch.get("nodes") or [])]
            for index, batch in enumerate(batches)]
    if any(batch.get("hold_seconds") for batch in batches):
        headers.insert(3, "then")
        for row, batch in zip(rows, batches):
            row.insert(3, "hold %s" % human_duration(batch["hold_seconds"]) if batch.get("hold_seconds") else "-")
    return headers, rows


def instance_minutes_text(minutes):
    """``36.6`` -> ``37``; under ten minutes to a tenth (``0.5``), so a small surge does not read as none."""
    if minutes is None:
        return "unknown"
    minutes = float(minutes)
    return "%d" % round(minutes) if minutes >= 10 or minutes == 0 else "%.1f" % minutes


def surge_choice_rows(plan):
    """The plan's surge priced (``surge_choices``) as a table: ``(headers, rows)``, each row ``["6 (configured, EKS
    default)", "4m 10s", "31", "9 of 9"]``, the smallest surge first; no rows in a plan without them. The last column
    is the fewest Ready schedulable nodes the group keeps at that surge, of its size (``?`` from a plan that did not
    say)."""
    headers = ["surge", "estimated", "extra instance-minutes", "fewest Ready"]
    size = (plan or {}).get("group_size")
    rows = [["%s (%s)" % (choice.get("surge"), ", ".join(choice.get("choices") or [])),
             human_duration(choice.get("eta_seconds")), instance_minutes_text(choice.get("extra_instance_minutes")),
             "?" if choice.get("fewest_ready") is None else "%d of %s" % (choice["fewest_ready"], size)]
            for choice in (plan or {}).get("surge_choices") or []]
    return headers, rows


def surge_choice_lines(plan):
    """The surge priced, a line saying what the table counts and the table; none in a plan without it."""
    headers, rows = surge_choice_rows(plan)
    if not rows:
        return []
    return (["surge priced (extra instance-minutes: instances above the group's desired size, over the rollout):"]
            + ["  " + line for line in _table(rows, headers)])


def _table(rows, headers):
    widths = [max(len(str(row[column])) for row in [headers] + rows) for column in range(len(headers))]
    return ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [headers] + rows]


def found_by_kind(preflight, severity):
    """The blockers of ``severity`` (``error`` or ``warning``) in the drain pre-flight's nodes (``preflight``: per node
    ``blocking``), grouped by kind: ``{kind: [{"pod", "node", "pdb", "message"}]}``, the nodes in name order."""
    grouped = {}
    for node in sorted(preflight or {}):
        for blocker in (preflight[node] or {}).get("blocking") or []:
            if (blocker.get("severity") or "error") != severity:
                continue
            grouped.setdefault(blocker.get("kind") or "other", []).append(
                {"pod": blocker.get("pod"), "node": node, "pdb": blocker.get("pdb"),
                 "message": blocker.get("message") or blocker.get("reason") or ""})
    return grouped


def _found_lines(title, grouped):
    count = sum(len(items) for items in grouped.values())
    if not count:
        return ["%s: none" % title]
    lines = ["%s (%d):" % (title, count)]
    for kind in sorted(grouped):
        lines.append("  %s (%d)" % (kind, len(grouped[kind])))
        for item in grouped[kind]:
            # the budget named once: most pre-flight messages already name it
            budget = " (PodDisruptionBudget %s)" % item["pdb"] if item["pdb"] and item["pdb"] not in item["message"] else ""
            lines.append("    %s on %s%s: %s" % (item["pod"], item["node"], budget, item["message"]))
    return lines


def target_groups_line(target_groups):
    """``target groups: web (instance targets of service shop/web, deregistration delay 5m 00s: waited for), ...``."""
    return "target groups: " + ", ".join(
        "%s (%s targets%s, deregistration delay %s: %s)" % (
            group.get("name"), group.get("target_type"),
            " of " + ", ".join(group["sources"]) if group.get("sources") and group["sources"] != ["group"] else "",
            human_duration(group.get("deregistration_delay")), "waited for" if group.get("waited_for") else "not waited for")
        for group in target_groups)


def post_drain_delay_line(plan):
    """What a drained node waits for before its termination besides its target groups: ``post-drain delay: none ...``,
    or the fixed delay and, when it is the blind default, the load balancers that cannot be read."""
    delay = plan.get("post_drain_delay") or {}
    seconds = (plan.get("timings") or {}).get("post_drain_delay")
    if delay.get("set"):
        return "post-drain delay: %s, as set" % human_duration(seconds)
    if not delay.get("unseen"):
        return "post-drain delay: none - every load balancer that routes to the nodes is read; a drained node waits for its target groups"
    return "post-drain delay: %s - a load balancer that routes to the nodes cannot be read: %s" % (
        human_duration(seconds), "; ".join("service %s at %s, %s" % (item["service"], item["address"], item["why"])
                                           for item in delay["unseen"]))


# What a rollout does with the outdated instances in Standby, by policy (rollout.outdated.STANDBY_POLICIES).
_STANDBY_FATE = {
    "ignore": "left as they are and reported (standby_instances: ignore)",
    "terminate": "drained and terminated, without replacement (standby_instances: terminate)",
    "wait": "waited for until they return to service, then replaced (standby_instances: wait)",
}


def capacity_line(plan):
    """The nodes that cannot take pods now, when there are any (the floor counts only those that can), or None."""
    capacity = plan.get("capacity") or {}
    not_counted = capacity.get("not_counted") or []
    if not not_counted:
        return None
    able = len(capacity.get("taking_pods") or [])
    floor = capacity["floor"]
    return ("%d of %d node(s) can take pods now, the floor keeps at least %d of them; not counted: %s"
            % (able, able + len(not_counted), floor,
               "; ".join("%s (%s)" % (entry["node"], entry["why"]) for entry in not_counted)))


def group_state_lines(plan):
    """The group's states a rollout treats apart, one line each: nodes that cannot take pods, instances in Standby,
    termination lifecycle hooks, the warm pool, instances protected from scale in."""
    lines = [line for line in [capacity_line(plan)] if line]
    standby = plan.get("standby") or {}
    instances = standby.get("instances") or []
    if instances:
        outdated = [entry["instance_id"] for entry in instances if entry.get("outdated")]
        fate = "; all up to date"
        if outdated:
            fate = "; %d outdated, %s: %s" % (len(outdated), _STANDBY_FATE.get(standby.get("policy"), standby.get("policy")), _names(outdated))
        lines.append("in Standby (never counted as capacity): %s%s" % (_names([entry["instance_id"] for entry in instances]), fate))
    hooks = ["%s (heartbeat timeout %s, default result %s)" % (hook.get("name"), human_duration(hook.get("heartbeat_timeout")), hook.get("default_result"))
             for hook in plan.get("termination_hooks") or []]
    if hooks:
        lines.append("termination lifecycle hooks (never completed by the rollout): %s; a terminated instance may stay in "
                     "Terminating:Wait that long, and the rollout waits for the last ones at its end" % ", ".join(hooks))
    pool = plan.get("warm_pool")
    if pool is not None:
        instances = pool.get("instances") or []
        stale = pool.get("outdated") or []
        lines.append("warm pool (%s, min %s): %d instance(s)%s" % (
            pool.get("pool_state"), pool.get("min_size"), len(instances),
            "; %d built from another version, terminated before the surge so that the pool refills from the target and no "
            "new instance comes from them: %s" % (len(stale), _names(stale)) if stale else ", all from the target"))
    protected = plan.get("protected") or []
    if protected:
        lines.append("protected from scale in (replaced like the others: scale-in protection does not hold back "
                     "TerminateInstanceInAutoScalingGroup): %s" % _names(protected))
    aged = plan.get("aged")
    if aged is not None:
        lines.append(aged_line(aged))
    return lines


def aged_line(aged):
    """Rotation by age in one line: the nodes launched before the plan's ``aged.launched_before``, those that run the
    target apart (``rollout.plan._aged``)."""
    instances = aged.get("instances") or []
    head = "max node age %s: launched before %s" % (human_duration(aged.get("max_node_age")), aged.get("launched_before"))
    if not instances:
        return head + ", none"
    only = [entry for entry in instances if entry.get("only_age")]
    also = [entry for entry in instances if not entry.get("only_age")]
    parts = []
    if only:
        parts.append("%s replaced for age alone: %s" % (counted(len(only), "node"), _names(
            ["%s (%s)" % (entry.get("node") or entry["instance_id"], entry.get("launch_time")) for entry in only])))
    if also:
        parts.append("%s also outdated otherwise: %s" % (counted(len(also), "node"), _names(
            [entry.get("node") or entry["instance_id"] for entry in also])))
    return "%s, %s" % (head, "; ".join(parts))


def control_lines(controls, plan=None):
    """The operator's controls as the plan states them (``controls``: ``{"on_failure", "previous_version", "window",
    "alarms", "alerts", "hooks", "rollback", "access", "aws"}``, each optional (``aws``: permissions.aws_use's arguments);
    ``plan`` for the bake time and checkpoints)."""
    controls = controls or {}
    plan = plan or {}
    lines = []
    if controls.get("rollback"):
        lines.append("rollback: back to launch template version %s, the version the group launched before; no alarm, "
                     "window, pause request, bake time or checkpoint holds it" % controls.get("previous_version", "?"))
    elif controls.get("on_failure") == "rollback":
        lines.append("on a failure of the new nodes: roll back to launch template version %s" % controls.get("previous_version", "?"))
    elif controls.get("on_failure"):
        lines.append("on a failure of the new nodes: hold (surge and state kept for a rerun)")
    window = controls.get("window")
    if window:
        when = ("open now, until %s" % window["closes_at"]) if window.get("open") else ("closed now; the next opens %s" % window.get("next_start"))
        lines.append("maintenance window %s: %s" % ("; ".join(window.get("windows") or []), when))
    holds = []
    if plan.get("bake_seconds"):
        holds.append("bake %s after each wave" % human_duration(plan["bake_seconds"]))
    for checkpoint in plan.get("checkpoints") or []:
        holds.append("checkpoint at %d%% (%d nodes), then %s" % (checkpoint["percent"], checkpoint["count"], human_duration(checkpoint["wait_seconds"])))
    if holds:
        lines.append("holds: " + "; ".join(holds))
    if controls.get("alarms"):
        lines.append("abort alarms: " + ", ".join("%s (%s)" % (alarm["name"], alarm.get("state") or "unknown") for alarm in controls["alarms"]))
    alerts = controls.get("alerts")
    if alerts:
        # the alert gates, as the Alertmanager answered the plan
        gates = [(gate, alerts[gate]) for gate in ("abort", "pause") if gate in alerts]
        lines.append("alerts firing now: " + "; ".join("%s %s" % (gate, ", ".join(names) or "none") for gate, names in gates))
    if controls.get("refusal"):
        lines.append("would not start now: " + controls["refusal"])
    if controls.get("access"):
        # what the run's identity may not do (node_group_info's access check)
        lines.append("permissions: " + controls["access"]["summary"])
    if controls.get("aws"):
        lines.append(aws_use_text(aws_use(**controls["aws"])))
    hooks = controls.get("hooks") or {}
    if hooks:
        lines.append("hooks: " + "; ".join("%s %s" % (event, ", ".join(files)) for event, files in sorted(hooks.items())))
    return lines


def plan_lines(plan, name, instance_count=None, target=None, preflight=None, controls=None):
    """The plan of node group ``name`` as lines (see the module's docstring)."""
    plan = plan or {}
    outdated = plan.get("outdated_count")
    if outdated is None:
        outdated = len(plan.get("outdated") or [])
    total = instance_count if instance_count is not None else plan.get("group_size")
    heading = "%s: %s outdated of %s; target %s"
    lines = [heading % (name, outdated, counted(total, "instance") if total is not None else "? instances",
                        target_text(target or plan.get("target")))]
    lines.extend(group_state_lines(plan))
    batches = plan.get("batches") or []
    if not batches:
        lines.append("no drain wave: every outdated instance is in Standby" if outdated else "nothing to replace")
        lines.extend(control_lines(controls, plan))
        return lines
    canary = ", a canary of one first" if plan.get("canary") else ""
    lines.append("surge %s, max unavailable %s%s, outdated nodes tainted %s; %s, estimated %s"
                 % (plan.get("surge"), plan.get("batch_size", plan.get("max_unavailable")), canary,
                    plan.get("taint_effect", "NoSchedule"), counted(len(batches), "drain wave"), human_duration(plan.get("eta_seconds"))))
    lines.extend(control_lines(controls, plan))
    headers, rows = wave_rows(plan)
    lines.extend(_table(rows, headers))
    if plan.get("target_groups"):
        lines.append(target_groups_line(plan["target_groups"]))
    if plan.get("post_drain_delay"):
        lines.append(post_drain_delay_line(plan))
    lines.extend(surge_choice_lines(plan))
    if preflight is not None:
        lines.extend(_found_lines("blockers", found_by_kind(preflight, "error")))
        lines.extend(_found_lines("warnings", found_by_kind(preflight, "warning")))
        stops = [dict(blocker, node=node) for node in sorted(preflight) for blocker in (preflight[node] or {}).get("blocking") or []
                 if blocker.get("stops_upgrade")]
        if stops:
            lines.append("stops before any change: %s" % stop_message(stops, DRAIN_OPTION_VARIABLES))
    return lines
