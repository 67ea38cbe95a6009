# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: result_lines
short_description: One line per node group of a run's result
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Turns C(rolling_update_result) into one line per node group, as the role prints it at the end of a run - the
    group's status, how many of its outdated nodes were replaced, the time the group took and the evictions; for a
    group that did not finish, the first line of what stopped it; for a plan, the outdated count and the estimate.
options:
  _input:
    description: The run's result (C(rolling_update_result)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Say what happened to each node group
  ansible.builtin.debug:
    msg: "{{ rolling_update_result | nodeops.rollout.result_lines }}"
"""

RETURN = r"""
_value:
  description: The lines, one per node group, in the result's order.
  type: list
  elements: str
"""

from ansible_collections.nodeops.rollout.plugins.module_utils.report.records import summary_lines


class FilterModule:
    """nodeops.rollout.result_lines"""

    def filters(self):
        return {"result_lines": summary_lines}
