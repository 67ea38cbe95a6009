# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: hook_context
short_description: What a task file of rolling_update_hooks is given, from the group's run record
version_added: 0.3.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Builds C(rolling_update_hook) for one event of the role's hooks from the node group's run record
    (C(nodeops.rollout.run_record)) - the event, the group, the step (for C(before_step), C(after_drain) and
    C(after_step)) with the nodes and instance ids it drains and the instances it terminates, the nodes drained (for
    C(after_drain)), whether the run rolls back, a message, and the group's entry of C(rolling_update_result) so far.
positional: event
options:
  _input:
    description: The group's run record.
    type: dict
    required: true
  event:
    description: The hook event.
    type: str
    required: true
    choices: [before_rollout, before_step, after_drain, after_step, on_failure, after_rollout]
  step:
    description: The step M(nodeops.rollout.rollout_step) returned (its C(step)), for the step's events.
    type: dict
  drained:
    description: The nodes the step's drain drained, for C(after_drain).
    type: list
    elements: str
  rollback:
    description: Whether the run rolls the group back.
    type: bool
    default: false
  message:
    description: The failure, for C(on_failure); what stopped the group, for C(after_rollout).
    type: str
    default: ""
  page:
    description: The path of the run's HTML page, for a message to point at (empty for none).
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Run one hook task file
  ansible.builtin.include_tasks: "{{ hook_file }}"
  vars:
    rolling_update_hook: "{{ rolling_update__run | nodeops.rollout.hook_context('after_step', step=rolling_update__step.step) }}"
"""

RETURN = r"""
_value:
  description: C(event), C(group), C(step) (its number, or null), C(nodes), C(instance_ids), C(terminate), C(drained),
    C(rollback), C(message), C(result) (the group's entry of C(rolling_update_result) so far), C(summary) (the group's
    one line, as the end of a run prints it) and C(page) (O(page)).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.report.run import hook_context
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import HOOK_EVENTS


def hook_context_filter(record, event, step=None, drained=None, rollback=False, message="", page=""):
    if event not in HOOK_EVENTS:
        raise AnsibleFilterError("hook_context: event %r is not allowed; use one of %s" % (event, ", ".join(HOOK_EVENTS)))
    try:
        return hook_context(record, event, step, drained, boolean(rollback, strict=False), message, page)
    except (PlanError, KeyError, TypeError) as exc:
        raise AnsibleFilterError("hook_context: %r is not a run record (%s)" % (type(record).__name__, exc)) from None


class FilterModule:
    """nodeops.rollout.hook_context"""

    def filters(self):
        return {"hook_context": hook_context_filter}
