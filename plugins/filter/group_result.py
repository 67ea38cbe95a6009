# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: group_result
short_description: A node group's entry in the rollout's result, from its run record
version_added: 0.3.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Turns the record C(nodeops.rollout.run_record) keeps of a node group into the group's entry of
    C(rolling_update_result), with the same fields whether the group finished, stopped or failed (the counts of a
    failed group are what the run did before it stopped) and what stopped it (C(reason), C(message), C(failed_task)).
positional: plan_only
options:
  _input:
    description: The group's run record.
    type: dict
    required: true
  plan_only:
    description: Whether the run only planned.
    type: bool
    default: false
  into:
    description: C(rolling_update_result) so far; given, the filter returns it with the group's entry added to its
      C(node_groups), and C(changed) set when the run changed the group.
    type: dict
"""

EXAMPLES = r"""
- name: Add the group to the result
  ansible.builtin.set_fact:
    groups_done: "{{ groups_done + [rolling_update__run | nodeops.rollout.group_result(ansible_check_mode)] }}"
"""

RETURN = r"""
_value:
  description: (C(rolling_update_result) with this entry added, when C(into) is given) C(name), C(status), C(plan_only),
    C(target), C(nodes_replaced), C(batches), C(evictions), C(deleted), C(force_deleted), C(restarted), C(blockers),
    C(skipped_nodes), C(quarantined) (each node a drain skipped with C(blocked_by), what holds it), C(termination_waits),
    C(phase_seconds), C(seconds), C(plan), C(timeline), C(steps), C(autoscaler_delta), C(new_nodes), and what stopped the
    group.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.report.run import group_result, with_group


def group_result_filter(record, plan_only=False, into=None):
    try:
        return group_result(record, plan_only) if into is None else with_group(into, record, plan_only)
    except (PlanError, KeyError, TypeError) as exc:
        raise AnsibleFilterError("group_result: %r is not a run record (%s)" % (type(record).__name__, exc)) from None


class FilterModule:
    """nodeops.rollout.group_result"""

    def filters(self):
        return {"group_result": group_result_filter}
