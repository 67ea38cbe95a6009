# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: rollout_metrics
short_description: A rollout's result as Prometheus metrics in the OpenMetrics text format
version_added: 0.3.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Turns C(rolling_update_result) into the OpenMetrics text format (C(# EOF) last), which the node_exporter textfile
    collector takes, or the Prometheus text format the Pushgateway takes. The role writes it to
    C(rolling_update_metrics_file) and pushes it to C(rolling_update_pushgateway_url).
  - Per node group (labels C(cluster) and C(node_group)) - C(nodeops_rollout_nodes_outdated), C(_nodes_replaced),
    C(_nodes_blocked) (a drain that did not finish), C(_nodes_quarantined) (a drain skipped), C(_evictions),
    C(_blocking_pods), C(_run_seconds), C(_phase_seconds) (label C(phase)), C(_status) (label C(status), 1 for the
    group's), and the histograms C(_node_drain_seconds) (each node's drain) and C(_new_node_ready_seconds) (each new
    node from launch to Ready); for the run, C(nodeops_rollout_run_start_timestamp_seconds) and
    C(_run_end_timestamp_seconds).
  - Every figure is the run's own, a gauge; each run writes the file anew.
  - Needs the Python package C(prometheus-client) on the controller (the collection's C(requirements.txt)).
options:
  _input:
    description: C(rolling_update_result).
    type: dict
    required: true
  cluster:
    description: The cluster's name (the inventory host), the label C(cluster) of every series; none without it.
    type: str
  format:
    description: V(openmetrics), or V(text), the Prometheus text format (version 0.0.4) the Pushgateway parses.
    type: str
    default: openmetrics
    choices: [openmetrics, text]
"""

EXAMPLES = r"""
- name: Write the run's metrics for the node_exporter textfile collector
  ansible.builtin.copy:
    content: "{{ rolling_update_result | nodeops.rollout.rollout_metrics(inventory_hostname) }}"
    dest: /var/lib/node_exporter/textfile/nodeops_rollout.prom
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The metrics, in the OpenMetrics text format.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.report.metrics import openmetrics_text


def rollout_metrics(result, cluster=None, format="openmetrics"):  # pylint: disable=redefined-builtin
    try:
        return openmetrics_text(result, cluster, format)
    except PlanError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """nodeops.rollout.rollout_metrics"""

    def filters(self):
        return {"rollout_metrics": rollout_metrics}
