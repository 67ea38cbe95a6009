# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""report/metrics.py: a run's result as OpenMetrics text, read back with the official client's parser and held to the
naming rules promtool's ``check metrics`` applies."""

from __future__ import annotations

import re

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.report.metrics import metric_families, openmetrics_text


def finished():
    return {"started_at": "2026-12-02T10:00:00.000Z", "node_groups": [{
        "name": "workers", "status": "replaced", "nodes_replaced": 2, "evictions": 5, "seconds": 300.0, "quarantined": [],
        "plan": {"outdated": ["i-1", "i-2"]}, "blockers": [], "phase_seconds": {"setup": 2.0, "scale_up": 90.5, "upgrade": 200.0},
        "steps": [{"nodes": [{"node": "n-1", "status": "drained", "seconds": 12.5}]},
                  {"nodes": [{"node": "n-2", "status": "drained", "seconds": 40.0}]}],
        "new_nodes": [{"node": "n-3", "launch_time": "2026-12-02T10:00:10Z", "ready_at": "2026-12-02T10:01:20Z"},
                      {"node": "n-4", "launch_time": "2026-12-02T10:00:10Z", "ready_at": None}],
        "timeline": {"ended_at": "2026-12-02T10:05:00.000Z"}}]}


def failed():
    result = finished()
    group = result["node_groups"][0]
    group.update(status="failed", nodes_replaced=0, quarantined=[{"node": "n-2", "blocked_by": "shop/pinned"}],
                 blockers=[{"pod": "shop/pinned"}, {"pod": "shop/pinned"}])
    group["steps"][1]["nodes"][0]["status"] = "skipped"
    return result


def parsed(text):
    return {family.name: family for family in text_string_to_metric_families(text)}


def value(families, name, **labels):
    found = [sample.value for family in families.values() for sample in family.samples
             if sample.name == name and all(sample.labels.get(key) == wanted for key, wanted in labels.items())]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def test_a_finished_run_reads_back_with_its_figures():
    families = parsed(openmetrics_text(finished(), "prod-eu"))
    labels = {"cluster": "prod-eu", "node_group": "workers"}
    assert value(families, "nodeops_rollout_nodes_outdated", **labels) == 2
    assert value(families, "nodeops_rollout_nodes_replaced", **labels) == 2
    assert value(families, "nodeops_rollout_nodes_blocked", **labels) == 0
    assert value(families, "nodeops_rollout_evictions", **labels) == 5
    assert value(families, "nodeops_rollout_phase_seconds", phase="scale_up", **labels) == 90.5
    assert value(families, "nodeops_rollout_status", status="replaced", **labels) == 1
    assert value(families, "nodeops_rollout_status", status="failed", **labels) == 0
    # two drains, 12.5 s and 40 s: one in the 15 s bucket, both by 60 s
    assert value(families, "nodeops_rollout_node_drain_seconds_bucket", le="15.0", **labels) == 1
    assert value(families, "nodeops_rollout_node_drain_seconds_bucket", le="60.0", **labels) == 2
    assert value(families, "nodeops_rollout_node_drain_seconds_sum", **labels) == 52.5
    # one new node Ready 70 s after its launch; the other not Ready is not counted
    assert value(families, "nodeops_rollout_new_node_ready_seconds_count", **labels) == 1
    assert value(families, "nodeops_rollout_new_node_ready_seconds_bucket", le="90.0", **labels) == 1
    assert value(families, "nodeops_rollout_run_start_timestamp_seconds", cluster="prod-eu") == 1796205600.0
    assert value(families, "nodeops_rollout_run_end_timestamp_seconds", cluster="prod-eu") == 1796205900.0


def test_a_failed_run_counts_its_blocked_and_quarantined_nodes():
    families = parsed(openmetrics_text(failed()))
    assert value(families, "nodeops_rollout_status", status="failed", node_group="workers") == 1
    assert value(families, "nodeops_rollout_nodes_blocked", node_group="workers") == 1
    assert value(families, "nodeops_rollout_nodes_quarantined", node_group="workers") == 1
    assert value(families, "nodeops_rollout_blocking_pods", node_group="workers") == 1


@pytest.mark.parametrize("result", [finished(), failed(), {"node_groups": []}])
def test_the_names_keep_to_the_rules_promtool_checks(result):
    text = openmetrics_text(result, "prod-eu")
    assert text.endswith("# EOF\n")
    for family in metric_families(result, "prod-eu"):
        name = family["name"]
        assert re.match(r"^nodeops_rollout_[a-z][a-z0-9_]*$", name), name
        # a unit is the name's last part, in base units; a gauge never ends as a counter or a histogram's series do
        assert not family["unit"] or name.endswith("_" + family["unit"]), name
        assert not re.search(r"_(total|count|sum|bucket)$", name) and not re.search(r"(milliseconds|minutes|hours|bytes_total)", name), name
        assert family["help"] and family["type"] in ("gauge", "histogram")
    # every family the text declares has its HELP and TYPE
    declared = re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M)
    assert declared and all(("# HELP %s " % name) in text for name, _kind in declared)


def test_what_is_not_a_result_is_refused_naming_it():
    with pytest.raises(PlanError, match=r"^result: 'nothing' is not allowed; use rolling_update_result"):
        metric_families("nothing")


def test_the_pushgateway_s_text_format_carries_the_same_samples():
    from prometheus_client.parser import text_string_to_metric_families as classic  # pylint: disable=import-outside-toplevel
    from prometheus_client.openmetrics.parser import text_string_to_metric_families  # pylint: disable=import-outside-toplevel
    text = openmetrics_text(finished(), "prod-eu", "text")
    assert "# EOF" not in text and "# TYPE nodeops_rollout_nodes_replaced gauge" in text
    pushed = {(sample.name, tuple(sorted(sample.labels.items()))): sample.value for family in classic(text) for sample in family.samples}
    written = {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
               for family in text_string_to_metric_families(openmetrics_text(finished(), "prod-eu")) for sample in family.samples}
    assert written and pushed == written
    with pytest.raises(PlanError, match="format: 'json' is not allowed; use one of openmetrics, text"):
        openmetrics_text(finished(), "prod-eu", "json")
