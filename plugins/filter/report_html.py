# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: report_html
short_description: A rollout's result as one self-contained HTML page
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Turns C(rolling_update_result) (the role M(nodeops.rollout.rolling_update)'s result) into one HTML page that
    needs nothing from the network - inline CSS, inline SVG, no script, no font or image fetched.
  - At the top, for a node group that did not finish (failed, paused, rolled back), the nodes whose drain failed with
    the pod and PodDisruptionBudget holding each, what stopped it and what to do next; then a summary per node group
    whose counts add up (nodes drained, whose drain failed and skipped apart; evictions, restarts and deletions of every
    drain, the failed ones included).
  - Per node group - a timeline (a labelled row per phase, each phase its own colour, an upgrade that a failure ended
    drawn as C(upgrade (stopped)); a labelled row per step with its wait hatched; each node from its cordon to the end
    of its drain, a drain that failed in its own C(drain failed) colour with what holds it beside it, its termination,
    its replacement from launch to Ready), the plan beside what happened (predicted and measured durations, the
    plan's drain waves with the hold after each when one holds, the steps run), blockers and warnings (the plan's
    drain pre-flight grouped by kind when the plan carries one, and what held each drain of the run) and the node
    table (old node and instance, replacement, AZ, state, drain seconds, pods evicted, restarted and deleted, the pods
    that blocked with their PodDisruptionBudget).
  - Last, the sections given in O(sections), each a JSON document shown as flat tables (the role fills them from
    C(rolling_update_report_sections), for example a test environment's invariant report). A document that carries
    C(clock_speed) (the sandbox's invariant report does) makes the page say that the run's delays ran that many times
    faster than real time, beside the predicted and measured durations.
options:
  _input:
    description: C(rolling_update_result).
    type: dict
    required: true
  cluster:
    description:
      - The cluster's name (the inventory host), for the title (C(Node rollout of cluster prod-eu)).
      - Without it the title names the result's node groups (C(Node rollout of node group workers)), as the serial
        playbook's page does, whose hosts are nodes.
    type: str
  sections:
    description:
      - Sections added at the end, each with C(title), C(data) (any JSON value), C(source) (where it came from) and
        C(error) (why it could not be read, instead of C(data)).
      - Also the loop results of M(ansible.builtin.uri) or M(ansible.builtin.slurp) over items with C(title) and
        C(url) or C(file), as the role registers them - a JSON answer or file is the section's data, a failed read its
        error, a skipped read no section. A registered loop (with its C(results)) stands for each of its results.
    type: list
    elements: dict
"""

EXAMPLES = r"""
- name: Write the HTML report beside the JSON result
  ansible.builtin.copy:
    content: "{{ rolling_update_result | nodeops.rollout.report_html(inventory_hostname) }}"
    dest: /var/log/rollouts/result.html
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The page.
  type: str
"""

from ansible_collections.nodeops.rollout.plugins.module_utils.core.version import COLLECTION_VERSION
from ansible_collections.nodeops.rollout.plugins.module_utils.report.page import report_html


def report_html_filter(result, cluster=None, sections=None):
    flat = []
    for section in sections or []:
        registered_loop = isinstance(section, dict) and isinstance(section.get("results"), list)
        flat.extend(section["results"] if registered_loop else [section])
    return report_html(result, cluster, flat, version=COLLECTION_VERSION)


class FilterModule:
    """nodeops.rollout.report_html"""

    def filters(self):
        return {"report_html": report_html_filter}
