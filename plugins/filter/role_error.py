# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: role_error
short_description: Name the rolling_update role variable behind a module's error
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - The collection's modules begin an error about one of their options with the option's name and a colon. The
    role M(nodeops.rollout.rolling_update) passes its variables to them under other names; this leads such a message
    with the variable the user set instead - C(rolling_update_node_groups[0].image_id (workers)) for the module's
    C(image_id), C(rolling_update_k8s.kubeconfig) for C(kubeconfig).
options:
  _input:
    description: The module's error message.
    type: str
    required: true
  index:
    description: The node group's index in O(rolling_update_node_groups).
    type: int
    required: true
  group:
    description: The node group's name.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Stop, naming the variable
  ansible.builtin.fail:
    msg: "{{ result.msg | nodeops.rollout.role_error(0, 'workers') }}"
"""

RETURN = r"""
_value:
  description: The message, led by the role variable.
  type: str
"""

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import role_error


class FilterModule:
    """nodeops.rollout.role_error"""

    def filters(self):
        return {"role_error": role_error}
