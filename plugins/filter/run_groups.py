# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: run_groups
short_description: The node groups one part of a run goes through
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - The role M(nodeops.rollout.rolling_update) goes through every node group of the run, one after another; the
    playbook C(nodeops.rollout.upgrade_serial), whose hosts are nodes (an inventory of the plugin
    C(nodeops.rollout.nodes)), runs it in parts.
  - Its start and finish go through the groups with a node among the run's hosts (a group C(--limit) leaves out is not
    touched); a batch goes through each group with a node among the batch's hosts, with the ids of those instances -
    what M(nodeops.rollout.rollout_step) is given as O(nodeops.rollout.rollout_step#module:limit), so that a batch
    replaces exactly its hosts and leaves every other outdated instance alone (outside the batch, or outside C(--limit)).
  - Fails naming a host without C(node_group) and C(instance_id) (not a host of that plugin), or a part not allowed.
options:
  _input:
    description: The run's node groups, as the settings check gave them (each with its C(name)).
    type: list
    elements: dict
    required: true
  part:
    description: V(none) (every run but the serial playbook's), V(start), V(batch) or V(finish).
    type: str
    required: true
  hosts:
    description: The run's hosts (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  batch:
    description: The batch's hosts (C(ansible_play_batch)).
    type: list
    elements: str
    required: true
  hostvars:
    description: Every host's variables (C(hostvars)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Replace the nodes of this batch, node group by node group
  ansible.builtin.include_tasks: node_group.yml
  loop: "{{ groups | nodeops.rollout.run_groups('batch', ansible_play_hosts_all, ansible_play_batch, hostvars) }}"
"""

RETURN = r"""
_value:
  description: The node groups, in the run's order; for a batch each C(name) with C(instances), the ids of the batch's instances in it.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.serial_hosts import run_groups


def run_groups_filter(groups, part, hosts, batch, hostvars):
    try:
        return run_groups(groups, part, hosts, batch, hostvars)
    except RolloutError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """nodeops.rollout.run_groups"""

    def filters(self):
        return {"run_groups": run_groups_filter}
