# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: run_record
short_description: A node group's run record after one event of its rollout
version_added: 0.3.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - The role keeps one record per node group while it rolls it, and changes it only through this filter, one event at a
    time, with what a module returned - the phases' clocks, each step of the step engine (its terminations, drains and
    times), how the group stopped. M(nodeops.rollout.rollout_step) decides; the record only keeps what happened.
  - C(nodeops.rollout.group_result) turns the record into the group's entry of C(rolling_update_result).
positional: event
options:
  _input:
    description: The group's record (anything for the event C(start)).
    type: raw
    required: true
  event:
    description:
      - C(start) (with C(name)) begins a record; C(open) (with C(phase)) and C(close) time a phase; C(target) (with
        C(target) and C(plan)) keeps what the setup resolved; C(steps) (with C(total), C(count), C(replaced) or
        C(apart), C(goal), C(replace), C(cancel) or C(relaunch), and C(phase), a phase the loop opens and closes once
        done or paused) begins a step loop, whose C(loop.ran_out) words the stop when its steps run out; C(step) (with
        C(step), what rollout_step returned), C(drained) (with C(step) and
        C(drain), what node_drain returned) and C(step_end) (with C(step) and C(drain)) keep one step; C(stop) (with
        C(status), C(reason), C(message) and more fields of the stop) or C(status) end the group; C(rollback) begins a
        rollback's phases; C(hook_failure) (with C(failure)) and C(restored) (with C(restore), what asg_surge
        returned) keep those; C(left) (with C(outdated), the outdated nodes left, and C(stopped), whether a group of
        the run failed) says at the end of the serial playbook whether the group is held (C(holding), and C(hold) with its
        C(reason) and C(message)); C(end) (with C(way), as C(nodeops.rollout.group_end) takes it, C(group), the end's
        read of the group, C(surge), what asg_surge returned, C(serving), the read of the nodes that can take pods, and
        C(failure), for a failure what failed) keeps how the group ended.
    type: str
    required: true
    choices: [start, open, close, target, steps, step, drained, step_end, stop, status, rollback, hook_failure, restored, left, end]
"""

EXAMPLES = r"""
- name: Keep the step
  ansible.builtin.set_fact:
    rolling_update__run: "{{ rolling_update__run | nodeops.rollout.run_record('step', step=rolling_update__step.step) }}"
"""

RETURN = r"""
_value:
  description: The record after the event.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.report.run import apply


def run_record(record, event, **data):
    try:
        return apply(record, event, **data)
    except PlanError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """nodeops.rollout.run_record"""

    def filters(self):
        return {"run_record": run_record}
