# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: batch_instances
short_description: The instances a batch of node hosts replaces, per node group
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Given the hosts of a batch (C(ansible_play_batch)) of an inventory of the plugin C(nodeops.rollout.nodes), returns
    each node group's instances among them, in the batch's order - what the playbook C(nodeops.rollout.upgrade_serial)
    gives M(nodeops.rollout.rollout_step) as O(nodeops.rollout.rollout_step#module:limit), so that a batch replaces
    exactly its hosts and leaves every other outdated instance alone (outside the batch, or outside C(--limit)).
  - Fails naming a host without C(node_group) and C(instance_id) (not a host of that plugin).
options:
  _input:
    description: The batch's hosts.
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
  ansible.builtin.include_tasks: batch.yml
  loop: "{{ ansible_play_batch | nodeops.rollout.batch_instances(hostvars) | dict2items }}"
"""

RETURN = r"""
_value:
  description: Per node group (its name), the ids of the batch's instances in it.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.module_utils.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.node_hosts import batch_instances


def batch_instances_filter(batch, hostvars):
    try:
        return batch_instances(batch, hostvars)
    except RolloutError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """nodeops.rollout.batch_instances"""

    def filters(self):
        return {"batch_instances": batch_instances_filter}
