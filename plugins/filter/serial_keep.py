# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: serial_keep
short_description: Keep a node group's facts between the plays of the serial playbook
version_added: 0.3.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - The playbook C(nodeops.rollout.upgrade_serial) runs each node group in parts, one per play, and keeps the group's
    facts (its run record, its lock, its last read, its settings) on the play's first host between them. This filter
    puts a group's facts in the place of what was kept of it before.
options:
  _input:
    description: What the playbook keeps (C(rolling_update__serial_state)), by node group; null at the start.
    type: dict
    required: true
  group:
    description: The node group's name.
    type: str
    required: true
  names:
    description: The names of the facts kept.
    type: list
    elements: str
    required: true
  values:
    description: Their values, in the order of O(names) (those unset as an empty dict).
    type: list
    elements: raw
    required: true
"""

EXAMPLES = r"""
- name: Keep the group for the next part
  ansible.builtin.set_fact:
    kept: >-
      {{ kept | default({}) | nodeops.rollout.serial_keep('workers', ['rolling_update__run'],
         query('ansible.builtin.vars', 'rolling_update__run', default={})) }}
"""

RETURN = r"""
_value:
  description: What the playbook keeps, with the group's facts by name.
  type: dict
"""

from ansible_collections.nodeops.rollout.plugins.module_utils.report.run import serial_keep


def serial_keep_filter(state, group, names, values):
    return serial_keep(state, group, dict(zip(names, values)))


class FilterModule:
    """nodeops.rollout.serial_keep"""

    def filters(self):
        return {"serial_keep": serial_keep_filter}
