# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: serial_outcome
short_description: What the node groups of the serial playbook came to, and what each node host says of itself
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - The playbook C(nodeops.rollout.upgrade_serial) keeps each node group's run record on its first host between its
    plays. This filter reads them - the failures of the groups (a failure stops the batches of every group, and the run
    ends with them) - and, for a node host, whether its own instance was replaced.
options:
  _input:
    description: The groups' facts the playbook keeps (C(rolling_update__serial_state)), by node group.
    type: dict
    required: true
  host:
    description: The node host (C(inventory_hostname)).
    type: str
  group:
    description: The host's node group (its C(node_group)).
    type: str
  instance_id:
    description: The host's instance (its C(instance_id)); given, the outcome also says what the host came to.
    type: str
"""

EXAMPLES = r"""
- name: Whether this node was replaced
  ansible.builtin.assert:
    that: outcome.node_ok
    fail_msg: "{{ outcome.node_line }}"
  vars:
    outcome: "{{ state | nodeops.rollout.serial_outcome(inventory_hostname, node_group, instance_id) }}"
"""

RETURN = r"""
_value:
  description:
    - C(failures) the words of each group that failed, and C(stopped) whether any did.
    - With O(instance_id), C(node_replaced) (the host's instance was replaced, and not rolled back), C(node_ok) (replaced,
      or its group paused - a clean stop) and C(node_line), what the host says of itself.
  type: dict
"""

from ansible_collections.nodeops.rollout.plugins.module_utils.report.run import serial_outcome


class FilterModule:
    """nodeops.rollout.serial_outcome"""

    def filters(self):
        return {"serial_outcome": serial_outcome}
