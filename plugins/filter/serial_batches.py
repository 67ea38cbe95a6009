# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: serial_batches
short_description: The batches of the serial playbook, each node group's by its own count
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - The playbook C(nodeops.rollout.upgrade_serial) replaces its hosts (nodes, from an inventory of the plugin
    C(nodeops.rollout.nodes)) in batches, its play's C(serial) a list of batch sizes. This is that list.
  - Each batch holds the hosts of one node group - a canary of one first, then at most the group's count, its
    C(max_unavailable) resolved against its size - in the order the play takes its hosts. A batch also ends where the
    next host is of another group.
  - Fails naming a host without C(node_group) and C(instance_id) (not a host of that plugin).
options:
  _input:
    description: The play's hosts, in its order (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  hostvars:
    description: Every host's variables (C(hostvars)).
    type: dict
    required: true
  node_groups:
    description:
      - The run's node groups (C(nodeops.rollout.resolved_settings)), each C(name) with C(max_unavailable) its count,
        an integer resolved against its size; 1 for a group not listed.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Batch the nodes, each group by its own count
  ansible.builtin.set_fact:
    batches: "{{ ansible_play_hosts_all | nodeops.rollout.serial_batches(hostvars, [{'name': 'workers', 'max_unavailable': 2}]) }}"
"""

RETURN = r"""
_value:
  description: The batch sizes, in the play's order, as C(serial) takes them.
  type: list
  elements: int
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.serial_hosts import serial_batches


def serial_batches_filter(hosts, hostvars, node_groups):
    try:
        return serial_batches(hosts, hostvars, node_groups)
    except RolloutError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """nodeops.rollout.serial_batches"""

    def filters(self):
        return {"serial_batches": serial_batches_filter}
