# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: group_end
short_description: What the end of a node group's run does, for the way it ends
version_added: 0.3.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - The role ends every node group with the same tasks (read the nodes, give them back, hold the surge or restore the
    group, keep the end in the run record), whichever way the group ends. This filter says what differs between the
    ways, each as a plain value those tasks read.
  - C(done) the scale down's end, the group replaced or up to date (its sizes restored); C(held) a clean stop with
    the surge kept (a step said pause, or the serial playbook left outdated nodes out or stopped its batches);
    C(cancelled) a cancel gave the surge back; C(failed) a failure (the group held, unless it was rolled back or
    another run holds it now).
positional: way
options:
  _input:
    description: The group's run record (C(rolling_update__run)).
    type: dict
    required: true
  way:
    description: How the group ends.
    type: str
    required: true
    choices: [done, held, cancelled, failed]
  group:
    description: The end's read of the group (a node group M(nodeops.rollout.node_group_info) returned); given, the
      nodes to give back are in RV(_value.release).
    type: dict
  kept:
    description: A failed group is still this run's (C(nodeops.rollout.failure_cause)'s C(kept)).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: How the group ends
  ansible.builtin.set_fact:
    rolling_update__end: "{{ rolling_update__run | nodeops.rollout.group_end('held') }}"
"""

RETURN = r"""
_value:
  description:
    - C(read) whether the group's nodes are read; C(release) the entries for M(nodeops.rollout.node_taint)'s release,
      each with the marks to take off, and C(releases) whether there are any; C(check_end) whether the end is read
      again and the run stops if the group is not replaced; C(surge) the state for M(nodeops.rollout.asg_surge)
      (C(held), C(restored), or null); C(serving) whether the nodes that can take pods are read for the failure
      message; C(strict) whether a failure of the end stops the run (not for a failure's end, which is best effort);
      C(closes_window) whether the run starts no later group; C(title) and C(surge_task), for the tasks' names.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.report.run import group_end


def group_end_filter(record, way, group=None, kept=True):
    try:
        return group_end(record, way, group=group, kept=kept)
    except PlanError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """nodeops.rollout.group_end"""

    def filters(self):
        return {"group_end": group_end_filter}
