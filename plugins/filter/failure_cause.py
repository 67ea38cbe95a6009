# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: failure_cause
short_description: Say why a node group's rollout failed, and whether rolling it back is the remedy
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - The role M(nodeops.rollout.rolling_update) asks it when a rollout fails, to hold the group or roll it back
    (C(rolling_update_on_failure)).
  - Only failures of the new nodes are rolled back - an abort alarm in state C(ALARM), a failed hook (the operator's own
    check), new instances that never became Ready nodes (C(NodeCreationFailure)), a failed validation of the new nodes.
    Any other failure (a drain a PodDisruptionBudget holds, an API outage, the lock) would fail the same way on the way
    back, so the group is held for a rerun.
options:
  _input:
    description: The failed task's result (C(ansible_failed_result)).
    type: dict
    required: true
  action:
    description: The failed task's module (C(ansible_failed_task.action)).
    type: str
  hook:
    description: What a failed hook recorded, C(event), C(file) and C(message), or an empty dict.
    type: dict
  run_action:
    description: What the run does with the group - V(rollout), V(rollback) or V(cancel); given, the cause also says what to do now.
    type: str
  on_failure:
    description: The role's C(rolling_update_on_failure), V(hold) or V(rollback).
    type: str
    default: hold
  lock_kept:
    description: Whether the run held the group's lock to the end (not refused, not lost).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Why did it fail?
  ansible.builtin.set_fact:
    cause: "{{ ansible_failed_result | nodeops.rollout.failure_cause(ansible_failed_task.action, {}) }}"
"""

RETURN = r"""
_value:
  description:
    - C(kind) (V(alarm), V(hook), V(node creation), V(validation) or V(other)), C(rollback) (whether rolling back is the
      remedy) and C(reason) (a sentence).
    - With O(run_action), C(kept) (the group was the run's to the end, O(lock_kept)) and C(roll_back) (roll it back now -
      a rollout's own failure of the new nodes, with O(on_failure) V(rollback), on a group the run kept).
  type: dict
"""

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.control import failure_cause


class FilterModule:
    """nodeops.rollout.failure_cause"""

    def filters(self):
        return {"failure_cause": lambda result, action=None, hook=None, **decide: failure_cause(action, result, hook, **decide)}
