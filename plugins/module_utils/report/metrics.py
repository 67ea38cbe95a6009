# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A run's result (``rolling_update_result``) as Prometheus metrics, in the OpenMetrics text format that the
node_exporter textfile collector and the Pushgateway take.

What a run measured, per node group (labels ``cluster`` and ``node_group``): the nodes outdated, replaced, blocked
(a drain that did not finish) and quarantined (a drain skipped), the evictions, the pods that held a drain, the
seconds of each phase, each node's drain and each new node's boot (launch to Ready) as histograms, the group's status
(one series per status, 1 for the group's), and the run's start, end and length. Names follow Prometheus's conventions:
``nodeops_rollout_`` first, the unit last. A run's figures are gauges: each run writes the file anew.

:func:`metric_families` is pure (the result -> metric families); :func:`openmetrics_text` renders them with the
official client's exposition (``prometheus_client``), imported only when a run asks for metrics.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, parse_time
from ansible_collections.nodeops.rollout.plugins.module_utils.report.run import STOPPED

PREFIX = "nodeops_rollout_"
# Upper bounds of the histograms' buckets, in seconds: a drain from seconds to its 15-minute timeout and beyond, a boot
# from a minute to the node-ready timeout.
DRAIN_BUCKETS = (5, 15, 30, 60, 120, 300, 600, 900, 1800)
BOOT_BUCKETS = (30, 60, 90, 120, 180, 300, 600, 900)
# every status a group's result may have, each its own series (the group's is 1): the run record's stops after the others
STATUSES = ("planned", "up to date", "replaced", "started") + STOPPED
# what the gauges of each group say, by name (without the prefix): (help, the value from the group's result)
GROUP_GAUGES = (
    ("nodes_outdated", "Outdated nodes of the group when the run planned it", lambda g: len((g.get("plan") or {}).get("outdated") or [])),
    ("nodes_replaced", "Nodes the run replaced", lambda g: g.get("nodes_replaced") or 0),
    ("nodes_blocked", "Nodes whose drain did not finish (skipped or failed)", lambda g: len(_blocked_nodes(g))),
    ("nodes_quarantined", "Nodes whose drain was skipped, labelled nodeops.rollout/quarantined", lambda g: len(g.get("quarantined") or [])),
    ("evictions", "Pods evicted by the run's drains", lambda g: g.get("evictions") or 0),
    ("blocking_pods", "Pods that held a drain of the run (a budget, a volume, no controller)", lambda g: len(_blocking_pods(g))),
    ("run_seconds", "How long the run took for the group", lambda g: g.get("seconds") or 0),
)


def _blocked_nodes(group):
    return sorted(set(node.get("node") for step in group.get("steps") or [] for node in step.get("nodes") or []
                      if node.get("status") not in (None, "drained")))


def _blocking_pods(group):
    return sorted(set((entry.get("pod") if isinstance(entry, dict) else entry) or "?" for entry in group.get("blockers") or []))


def _seconds_between(start, end, field):
    if not start or not end:
        return None
    return max(0.0, (parse_time(end, field) - parse_time(start, field)).total_seconds())


def _timestamp(value, field):
    return parse_time(value, field).timestamp() if value else None


def _histogram(values, bounds):
    """``[(le, cumulative count)...]`` with ``+Inf`` last, and the sum."""
    buckets = [(str(float(bound)), sum(1 for value in values if value <= bound)) for bound in bounds]
    return buckets + [("+Inf", len(values))], float(sum(values))


def metric_families(result, cluster=None):
    """The metrics of ``result`` as plain families: ``[{"name", "type" (gauge, histogram), "help", "unit", "samples":
    [(labels, value)] (gauge) or [(labels, buckets, sum)] (histogram)}]``. ``cluster`` names the cluster (the inventory
    host), a label of every series. Raises PlanError for a result that is not one."""
    if not isinstance(result, dict) or not isinstance(result.get("node_groups"), list):
        raise PlanError("result: %r is not allowed; use rolling_update_result (a dict with node_groups)" % (result,))
    families = {name: {"name": PREFIX + name, "type": "gauge", "help": text, "unit": "seconds" if name.endswith("_seconds") else "",
                       "samples": []} for name, text, _value in GROUP_GAUGES}
    phases = {"name": PREFIX + "phase_seconds", "type": "gauge", "help": "Seconds of each phase of the run", "unit": "seconds", "samples": []}
    status = {"name": PREFIX + "status", "type": "gauge", "help": "The group's status at the end of the run: 1 for its status, 0 for the others",
              "unit": "", "samples": []}
    drains = {"name": PREFIX + "node_drain_seconds", "type": "histogram", "help": "Seconds each node's drain took, from its cordon",
              "unit": "seconds", "samples": []}
    boots = {"name": PREFIX + "new_node_ready_seconds", "type": "histogram", "help": "Seconds each new node took from its launch to Ready",
             "unit": "seconds", "samples": []}
    base = {"cluster": str(cluster)} if cluster else {}
    ended = []
    for group in result["node_groups"]:
        labels = dict(base, node_group=str(group.get("name")))
        for name, _text, value in GROUP_GAUGES:
            families[name]["samples"].append((labels, float(value(group))))
        for phase, seconds in sorted((group.get("phase_seconds") or {}).items()):
            phases["samples"].append((dict(labels, phase=phase), float(seconds or 0)))
        for each in STATUSES + tuple(sorted(set([group.get("status") or "unknown"]) - set(STATUSES))):
            status["samples"].append((dict(labels, status=each), 1.0 if group.get("status") == each else 0.0))
        drained = [float(node["seconds"]) for step in group.get("steps") or [] for node in step.get("nodes") or [] if node.get("seconds") is not None]
        drains["samples"].append((labels,) + _histogram(drained, DRAIN_BUCKETS))
        ready = [seconds for seconds in (_seconds_between(node.get("launch_time"), node.get("ready_at"), "new_nodes")
                                         for node in group.get("new_nodes") or []) if seconds is not None]
        boots["samples"].append((labels,) + _histogram(ready, BOOT_BUCKETS))
        ended.append((group.get("timeline") or {}).get("ended_at"))
    run = []
    start = _timestamp(result.get("started_at"), "started_at")
    if start is not None:
        run.append({"name": PREFIX + "run_start_timestamp_seconds", "type": "gauge", "help": "When the run started (Unix time)",
                    "unit": "seconds", "samples": [(base, start)]})
    ends = [_timestamp(value, "ended_at") for value in ended if value]
    if ends:
        run.append({"name": PREFIX + "run_end_timestamp_seconds", "type": "gauge", "help": "When the run's last node group ended (Unix time)",
                    "unit": "seconds", "samples": [(base, max(ends))]})
    return [families[name] for name, _text, _value in GROUP_GAUGES] + [phases, status, drains, boots] + run


# the formats a run's metrics are rendered in: OpenMetrics for the file, the Prometheus text format (0.0.4) for the
# Pushgateway, which parses only that (and protobuf)
FORMATS = ("openmetrics", "text")
PUSH_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def openmetrics_text(result, cluster=None, form="openmetrics"):
    """The metrics of ``result`` in the OpenMetrics text format (``# EOF`` last), or with ``form`` ``text`` the
    Prometheus text format, rendered by ``prometheus_client``."""
    # pylint: disable=import-outside-toplevel
    if form not in FORMATS:
        raise PlanError("format: %r is not allowed; use one of %s" % (form, ", ".join(FORMATS)))
    try:
        from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
        if form == "text":
            from prometheus_client.exposition import generate_latest
        else:
            from prometheus_client.openmetrics.exposition import generate_latest
    except ImportError:
        raise PlanError("rolling_update_metrics_file: writing metrics needs the Python package prometheus-client on the "
                        "controller (pip install -r requirements.txt of the collection)") from None
    families = metric_families(result, cluster)

    class Collector:   # the registry's interface: one call of collect() that yields the families
        def collect(self):
            for family in families:
                names = sorted(set(key for sample in family["samples"] for key in sample[0]))
                kind = GaugeMetricFamily if family["type"] == "gauge" else HistogramMetricFamily
                built = kind(family["name"], family["help"], labels=names, unit=family["unit"])
                for sample in family["samples"]:
                    values = [sample[0].get(name, "") for name in names]
                    if family["type"] == "gauge":
                        built.add_metric(values, sample[1])
                    else:
                        built.add_metric(values, buckets=sample[1], sum_value=sample[2])
                yield built

    return generate_latest(Collector()).decode("utf-8")
