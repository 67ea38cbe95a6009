# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_plan
short_description: The fleet's waves and their time estimate, from each cluster's plan
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Lines of the fleet's plan as C(nodeops.rollout.plan) prints them when C(fleet_waves) is set - the fleet's size, how
    long it should take, its run budget; then per wave its clusters, how many at once, the failures it allows, its soak
    and gate, and its time.
  - A cluster's time is the sum of its node groups' plan estimates (C(eta_seconds)); a wave's is its clusters packed
    into C(max_concurrency) places, the longest first into the place that frees first, plus its soak.
options:
  _input:
    description: C(fleet_waves).
    type: list
    elements: dict
    required: true
  hostvars:
    description: C(hostvars), where each cluster's C(rolling_update_result) and C(group_names) are read.
    type: raw
    required: true
  clusters:
    description: The clusters (inventory hosts) planned.
    type: list
    elements: str
    required: true
  budget:
    description: C(fleet_max_failed_clusters).
    type: raw
"""

EXAMPLES = r"""
- name: Show the fleet's plan
  ansible.builtin.debug:
    msg: "{{ fleet_waves | nodeops.rollout.fleet_plan(hostvars, groups['clusters'], fleet_max_failed_clusters) }}"
"""

RETURN = r"""
_value:
  description: The plan's lines.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.fleet.plan import cluster_estimate, fleet_plan


def fleet_plan_filter(waves, hostvars, clusters, budget=None):
    planned = {host: {"groups": list(hostvars[host].get("group_names") or []),
                      "seconds": cluster_estimate(hostvars[host].get("rolling_update_result"))} for host in clusters}
    try:
        return fleet_plan(waves, budget, planned)
    except PlanError as exc:
        raise AnsibleFilterError(exc.msg) from None


class FilterModule:
    """nodeops.rollout.fleet_plan"""

    def filters(self):
        return {"fleet_plan": fleet_plan_filter}
