# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: plan_lines
short_description: A node group's rollout plan as lines a person reads
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Turns the C(plan) that M(nodeops.rollout.node_group_info) returns for a node group into lines of text - a
    heading with the outdated count and the target, the surge, max unavailable, the taint and the estimated
    duration, the drain waves as a table (wave, nodes, AZs, node names), the surge priced as a table (the surge
    configured, EKS's default and 100 %, each with its estimated duration and extra instance-minutes, from the plan's
    C(surge_choices)), and, given the drain pre-flight of
    M(nodeops.rollout.node_drain) in check mode, its blockers and warnings grouped by kind with the pod, its node and
    its PodDisruptionBudget named.
options:
  _input:
    description: The node group's C(plan) (C(node_groups[0].plan) of M(nodeops.rollout.node_group_info)).
    type: dict
    required: true
  name:
    description: The node group's name.
    type: str
    required: true
  instance_count:
    description: How many instances the group has (C(node_groups[0].instance_count)); the plan's group size otherwise.
    type: int
  target:
    description: The target (C(target) of M(nodeops.rollout.launch_template_version)); the plan's otherwise.
    type: dict
  preflight:
    description: The C(nodes) of M(nodeops.rollout.node_drain) run in check mode; without it no blocker is listed.
    type: dict
  controls:
    description:
      - The operator's controls to state, each optional - C(on_failure) (V(hold) or V(rollback)), C(previous_version) (the
        version a rollback goes back to), C(rollback) (the plan is of a rollback), C(window) (RV(nodeops.rollout.node_group_info#module:window)),
        C(alarms) (RV(nodeops.rollout.node_group_info#module:alarms)), C(alerts)
        (RV(nodeops.rollout.node_group_info#module:alerts)), C(refusal) (why the rollout would not start now),
        C(hooks) (event to task files). The plan's bake time and checkpoints are stated with them.
    type: dict
"""

EXAMPLES = r"""
- name: Show the plan of node group workers
  ansible.builtin.debug:
    msg: "{{ info.node_groups[0].plan | nodeops.rollout.plan_lines('workers', info.node_groups[0].instance_count, ltv.target, preflight.nodes) }}"
"""

RETURN = r"""
_value:
  description: The lines, in order.
  type: list
  elements: str
"""

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import plan_lines


class FilterModule:
    """nodeops.rollout.plan_lines"""

    def filters(self):
        return {"plan_lines": plan_lines}
