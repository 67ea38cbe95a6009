# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: group_checks
short_description: What the read-only check of every node group found, before any change
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - The role M(nodeops.rollout.rolling_update) resolves the target of every node group of a run and reads every group
    (in check mode) before it changes any. This filter takes what those reads returned and gives the first error, led by
    the role variable behind it - C(rolling_update_node_groups[0].image_id (workers)) for the module's C(image_id),
    C(rolling_update_k8s.kubeconfig) for C(kubeconfig) - or the outdated nodes of the groups rolled after the first.
options:
  _input:
    description: The results of resolving each node group's target (C(nodeops.rollout.launch_template_version)), in order.
    type: list
    elements: dict
    required: true
  groups:
    description: The results of reading each node group (C(nodeops.rollout.node_group_info)); skipped where its target failed.
    type: list
    elements: dict
    required: true
  action:
    description: What the run does with the groups; only a rollout soft-taints the groups rolled later.
    type: str
    default: rollout
  plan_only:
    description: Whether the run only plans (then nothing is tainted).
    type: bool
    default: false
  queue:
    description: Whether the run soft-taints the groups rolled later (not the serial playbook, whose batches mix the groups).
    type: bool
    default: true
  preflights:
    description:
      - The results of the drain pre-flight of each node group's outdated nodes (C(nodeops.rollout.node_drain) in check
        mode), in the same order. A rollout (not a plan) stops on a group whose pre-flight found a blocker no option of the
        run gets past (its C(would_stop)), naming the pod, its budget and the role variables that would get past it.
    type: list
    elements: dict
"""

EXAMPLES = r"""
- name: Stop, naming the variable
  ansible.builtin.fail:
    msg: "{{ (targets.results | nodeops.rollout.group_checks(groups.results)).error }}"
"""

RETURN = r"""
_value:
  description:
    - C(error) the first error, led by the role variable behind it, or V(None); C(group) the node group it is about and
      C(permission) the permission that read was refused, or V(None).
    - C(queued) the outdated nodes of every node group after the first, for a rollout that changes them, and C(taint_queued)
      whether there are any.
  type: dict
"""

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import group_checks


class FilterModule:
    """nodeops.rollout.group_checks"""

    def filters(self):
        return {"group_checks": group_checks}
