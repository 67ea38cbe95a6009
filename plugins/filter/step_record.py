# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: step_record
short_description: One step of a node group's upgrade as the rollout's result keeps it
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Turns what the modules returned for one step of an upgrade - the C(step) of M(nodeops.rollout.rollout_step) and
    the result of M(nodeops.rollout.node_drain) - into the step's entry of C(steps) in the role's
    C(rolling_update_result) - when the step began (before it waited) and was decided, what it waited for, what it
    terminated (and how many of those paid the surge back), how many nodes it validated, and each node it drained with
    the drain's start and end, its seconds, how many pods were evicted, restarted and deleted, and the pods that
    blocked with their PodDisruptionBudget.
  - The role's HTML report draws the timeline and the node table from these entries.
positional: number, drain
options:
  _input:
    description: The C(step) returned by M(nodeops.rollout.rollout_step).
    type: dict
    required: true
  number:
    description: The step's number in this run.
    type: int
    required: true
  drain:
    description: The result of M(nodeops.rollout.node_drain) for the step's drain (a failed drain's result too), or
      nothing when the step drained no node.
    type: dict
"""

EXAMPLES = r"""
- name: Keep the step
  ansible.builtin.set_fact:
    steps_done: "{{ steps_done + [step.step | nodeops.rollout.step_record(step_number, drain | default(none))] }}"
"""

RETURN = r"""
_value:
  description: The step, with C(index), C(started_at), C(decided_at), C(waited_seconds), C(waited_for), C(terminated),
    C(decrement), C(validated), C(drain_started_at), C(drain_seconds), C(ended_at), C(outdated_left) and C(nodes).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.module_utils.report.records import step_record
from ansible_collections.nodeops.rollout.plugins.module_utils.values import PlanError


def step_record_filter(step, number, drain=None):
    try:
        return step_record(step, number, drain)
    except PlanError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """nodeops.rollout.step_record"""

    def filters(self):
        return {"step_record": step_record_filter}
