# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet's plan as the plan playbook shows it: each wave's clusters and limits, and how long the fleet should take
from each cluster's own plan (the sum of its node groups' ``eta_seconds``). Pure.

A wave's time is its clusters' estimates packed into ``max_concurrency`` slots, the longest first into the slot that
frees first (a worker starts a cluster as soon as a place opens), plus its soak; a gate's own time is not known.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.fleet.waves import (
    checked_budget, checked_waves, resolved_budget, resolved_waves, wave_of)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import counted
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import human_duration


def cluster_estimate(result):
    """Seconds a cluster's rollout should take, from its plan's ``rolling_update_result`` (groups roll one after another)."""
    return sum(int((group.get("plan") or {}).get("eta_seconds") or 0) for group in (result or {}).get("node_groups") or [])


def packed(estimates, slots):
    """The time ``estimates`` take in ``slots`` places, longest first into the place that frees first."""
    ends = [0] * max(1, slots)
    for seconds in sorted(estimates, reverse=True):
        ends[ends.index(min(ends))] += seconds
    return max(ends)


def fleet_plan(waves, budget, clusters):
    """The plan's lines. ``clusters``: ``{host: {"groups": [...], "seconds": estimate}}``."""
    checked = checked_waves(waves)
    members = [[] for _wave in checked]
    unmatched = []
    for host in sorted(clusters):
        index = wave_of(host, clusters[host]["groups"], checked)
        (members[index] if index is not None else unmatched).append(host)
    resolved = resolved_waves(checked, [len(names) for names in members])
    total, lines = 0, []
    for wave, names in zip(resolved, members):
        seconds = packed([clusters[name]["seconds"] for name in names], wave["max_concurrency"]) if names else 0
        total += seconds + wave["soak"]
        lines.append("wave %s: %s - %d at once, %s allowed%s%s: %s%s" % (
            wave["name"], ", ".join(names) or "no cluster", wave["max_concurrency"], counted(wave["max_failed_clusters"], "failure"),
            ", soak %s" % human_duration(wave["soak"]) if wave["soak"] else "", ", then gate %s" % wave["gate"] if wave["gate"] else "",
            human_duration(seconds), " + soak" if wave["soak"] else ""))
    run_budget = resolved_budget(checked_budget(budget), len(clusters) - len(unmatched))
    head = "fleet: %s in %s, about %s%s; %s" % (
        counted(len(clusters) - len(unmatched), "cluster"), counted(len(resolved), "wave"), human_duration(total),
        " plus the gates" if any(wave["gate"] for wave in resolved) else "",
        "no run budget beyond the waves'" if run_budget is None else "the run stops beyond %s" % counted(run_budget, "failed cluster"))
    if unmatched:
        lines.append("matched by no wave (left out): %s" % ", ".join(unmatched))
    return [head] + lines
