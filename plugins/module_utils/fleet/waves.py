# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet's settings, checked and resolved: its waves, their budgets, each cluster's wave and pinned target. Pure.

A wave is ``{"name", "clusters", "max_concurrency", "max_failed_clusters", "soak", "gate"}``: ``clusters`` lists
inventory group names or host name patterns (``fnmatch``), and a cluster belongs to the first wave one of them matches.
Counts are an integer or a percentage of the wave's clusters (rounded down; a concurrency never below 1), resolved once
the plan is pinned and every cluster's wave is known.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, parse_duration, parse_int_or_percent, scaled_value
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import GROUP_TARGETS

WAVE_KEYS = ("name", "clusters", "max_concurrency", "max_failed_clusters", "soak", "gate")
DEFAULT_CONCURRENCY = 1
DEFAULT_FAILED = 0


def checked_waves(waves, field="fleet_waves"):
    """The waves as given, each value checked (durations in seconds, counts as ``[kind, number]``); the first value that
    is not allowed raises a PlanError naming it."""
    if not isinstance(waves, list) or not waves:
        raise PlanError("%s: %r is not allowed; give a list of waves, each with a name and the clusters it holds "
                        "(inventory group names or host name patterns)" % (field, waves))
    checked, names = [], set()
    for index, wave in enumerate(waves):
        where = "%s[%d]" % (field, index)
        if not isinstance(wave, dict):
            raise PlanError("%s: %r is not allowed; a wave is a mapping with the keys %s" % (where, wave, ", ".join(WAVE_KEYS)))
        unknown = sorted(set(wave) - set(WAVE_KEYS))
        if unknown:
            raise PlanError("%s.%s: not a key of a wave; use %s" % (where, unknown[0], ", ".join(WAVE_KEYS)))
        name = wave.get("name")
        if not isinstance(name, str) or not name.strip() or name in names:
            raise PlanError("%s.name: %r is not allowed; give each wave a name of its own" % (where, name))
        names.add(name)
        clusters = wave.get("clusters")
        clusters = [clusters] if isinstance(clusters, str) else clusters
        if not isinstance(clusters, list) or not clusters or not all(isinstance(item, str) and item for item in clusters):
            raise PlanError("%s.clusters: %r is not allowed; give inventory group names or host name patterns "
                            "(such as 'canary' or 'prod-eu-*')" % (where, wave.get("clusters")))
        gate = wave.get("gate")
        if gate is not None and (not isinstance(gate, str) or not gate.strip()):
            raise PlanError("%s.gate: %r is not allowed; give the path of a task file that fails when the fleet must stop" % (where, gate))
        checked.append({
            "name": name, "clusters": clusters,
            "max_concurrency": list(parse_int_or_percent(wave.get("max_concurrency", DEFAULT_CONCURRENCY), where + ".max_concurrency")),
            "max_failed_clusters": list(parse_int_or_percent(wave.get("max_failed_clusters", DEFAULT_FAILED), where + ".max_failed_clusters", allow_zero=True)),
            "soak": parse_duration(wave.get("soak", 0), where + ".soak"),
            "gate": gate,
        })
    return checked


def checked_budget(value, field="fleet_max_failed_clusters"):
    """The run's failure budget, ``[kind, number]``; None: only the waves' budgets."""
    return None if value is None or value == "" else list(parse_int_or_percent(value, field, allow_zero=True))


def checked_settings(waves, budget, workers):
    """The fleet's settings every worker must give alike, checked: ``{"waves", "max_failed_clusters", "workers"}``."""
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise PlanError("fleet_workers: %r is not allowed; give how many workers run the fleet's clusters: 1 for one "
                        "ansible-playbook process, the job's slice count under AWX job slicing" % (workers,))
    return {"waves": checked_waves(waves), "max_failed_clusters": checked_budget(budget), "workers": workers}


def checked_forks(forks, hosts):
    """A worker of ``hosts`` clusters needs as many forks (``None``: not known, not checked): with fewer, the clusters
    waiting for a later wave could hold every fork while a cluster of the open wave waits for one."""
    if forks is not None and forks < hosts:
        raise PlanError("forks: %d is not allowed for a worker of %d clusters; a cluster waiting for its wave holds a fork, so "
                        "give at least %d (ansible-playbook --forks, or the AWX job template's forks), or slice the job into "
                        "more workers" % (forks, hosts, hosts))
    return forks


def wave_of(host, groups, waves):
    """The index of the first wave one of whose entries is one of the host's ``groups`` or matches its name; else None."""
    for index, wave in enumerate(waves):
        for pattern in wave["clusters"]:
            if pattern in (groups or ()) or fnmatchcase(host, pattern):
                return index
    return None


def resolved_waves(waves, sizes):
    """The waves with their counts in clusters, ``sizes`` being how many clusters each holds."""
    out = []
    for wave, size in zip(waves, sizes):
        out.append(dict(wave, size=size,
                        max_concurrency=max(1, scaled_value(tuple(wave["max_concurrency"]), size, False)),
                        max_failed_clusters=scaled_value(tuple(wave["max_failed_clusters"]), size, False)))
    return out


def resolved_budget(budget, size):
    """The run's failure budget in clusters (None: none of its own)."""
    return None if budget is None else scaled_value(tuple(budget), size, False)


def pinned_groups(specs, targets):
    """The node groups of a cluster with each target pinned to what it resolves to today, and the versions they run
    before: ``(pinned, before)``.

    ``specs`` are the cluster's ``rolling_update_node_groups``; ``targets`` what ``launch_template_version`` returned for
    each in check mode (its ``target``, ``previous_image_id``, ``previous_version``). An AMI or an SSM parameter is pinned
    as the AMI id it names today; a launch template version as its number."""
    if not isinstance(specs, list) or not isinstance(targets, list) or len(specs) != len(targets):
        raise PlanError("node_groups: %d groups but %d resolved targets; give every group's launch_template_version result"
                        % (len(specs or []), len(targets or [])))
    pinned, before = [], []
    for spec, resolved in zip(specs, targets):
        target = (resolved or {}).get("target") or {}
        if not target.get("image_id"):
            raise PlanError("node_groups: %s: its target did not resolve: %s" % (spec.get("name"), (resolved or {}).get("msg") or resolved))
        group = {key: value for key, value in spec.items() if key not in GROUP_TARGETS}
        if spec.get("launch_template_version") is not None:
            group["launch_template_version"] = str(target["version"])
        else:
            group["image_id"] = target["image_id"]
        pinned.append(group)
        before.append({"name": spec.get("name"), "image_id": resolved.get("previous_image_id"),
                       "version": resolved.get("previous_version")})
    return pinned, before
