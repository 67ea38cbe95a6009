# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: resolved_settings
short_description: The run's settings with each node group's max_unavailable resolved against the group's size
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - The role M(nodeops.rollout.rolling_update) reads every node group (M(nodeops.rollout.node_group_info), in check
    mode) before it changes any; that read resolves the group's C(max_unavailable) (its own, else the role's; a
    percentage of the group's original size, else its desired capacity) into a count, its plan's C(batch_size).
  - This filter puts that count in each group of the settings (C(nodeops.rollout.rollout_settings)), once, so that every
    later module of the run and the batches of C(nodeops.rollout.upgrade_serial) are given the integer, never the text.
options:
  _input:
    description: The settings, as C(nodeops.rollout.rollout_settings) settled them.
    type: dict
    required: true
  reads:
    description: The results of M(nodeops.rollout.node_group_info), one per node group (a loop's C(results)).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Resolve each group's max_unavailable, once
  ansible.builtin.set_fact:
    settings: "{{ settings | nodeops.rollout.resolved_settings(groups_read.results) }}"
"""

RETURN = r"""
_value:
  description: The settings, each of C(node_groups) with C(max_unavailable) the group's count (an integer, at least 1).
  type: dict
"""

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import resolved_settings


class FilterModule:
    """nodeops.rollout.resolved_settings"""

    def filters(self):
        return {"resolved_settings": resolved_settings}
