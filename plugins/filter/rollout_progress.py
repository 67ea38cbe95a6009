# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: rollout_progress
short_description: Where a node group's upgrade is, as one line a person reads at a glance
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - From the C(step) that M(nodeops.rollout.rollout_step) decided, says how many nodes are replaced of the total, how
    many are draining, the step's number, the time elapsed since the group's rollout began and the time left.
  - The time left is the plan's model (the waves still to drain, each draining, waiting the post-drain delay and
    booting replacements, as the plan's estimate counts them) corrected by the pace measured so far - once a node is
    replaced, the model's time for what is left is scaled by the upgrade's measured seconds over the model's seconds
    for what is done.
options:
  _input:
    description: The C(step) returned by M(nodeops.rollout.rollout_step).
    type: dict
    required: true
  number:
    description: The step's number in this run.
    type: int
    required: true
  replaced:
    description: Outdated instances terminated so far, this step's terminations included.
    type: int
    required: true
  total:
    description: Outdated instances when the upgrade began.
    type: int
    required: true
  started_at:
    description: When the group's rollout began (ISO 8601).
    type: str
    required: true
  now:
    description: Now (ISO 8601).
    type: str
    required: true
  upgrade_started_at:
    description: When the upgrade phase began (ISO 8601); O(started_at) otherwise.
    type: str
  surge:
    description: The surge the upgrade began with.
    type: int
    default: 0
  timings:
    description: The plan's C(timings) (C(boot_seconds), C(drain_seconds), C(post_drain_delay), C(validate_seconds)).
    type: dict
  name:
    description: The node group's name, to begin the line with.
    type: str
  batch:
    description: How many nodes are replaced at a time when a play's C(serial) decides it (the playbook
      C(nodeops.rollout.upgrade_serial)); the model then counts the nodes left in batches of this size.
    type: int
  steps:
    description:
      - The group's steps recorded so far (the C(steps) of the role's run record, as
        C(nodeops.rollout.step_record) keeps them).
      - The upgrade began at the first one's start when that is earlier than O(upgrade_started_at) - the playbook
        C(nodeops.rollout.upgrade_serial) starts the upgrade's clock again at each batch - so the pace, and the time
        left, are the whole group's.
    type: list
    elements: dict
"""

EXAMPLES = r"""
- name: Say where the upgrade is
  ansible.builtin.debug:
    msg: >-
      {{ (step.step | nodeops.rollout.rollout_progress(number=7, replaced=12, total=30, started_at=started,
          now=rolling_update__now, surge=3, timings=plan.timings, name='workers')).line }}
"""

RETURN = r"""
_value:
  description: >-
    C(step), C(replaced), C(total), C(draining), C(elapsed_seconds), C(left_seconds), C(model_left_seconds)
    (the model's time left before the correction), C(pace) (measured over modelled seconds, null before a node is
    replaced), C(batch_done) (the step ended a batch of the serial playbook while outdated instances are left outside it:
    the line says C(batch done) and the group's time left, never C(done)) and C(line), for example
    C(workers: step 7: 12 of 30 nodes replaced, draining 3, 4m 10s elapsed, about 6m 20s left).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.progress import rollout_progress


def rollout_progress_filter(step, number, replaced, total, started_at, now, upgrade_started_at=None, surge=0, timings=None,
                            name=None, batch=None, steps=None):
    try:
        return rollout_progress(step, number, replaced, total, started_at, now, upgrade_started_at, surge, timings, name, batch,
                                steps)
    except PlanError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """nodeops.rollout.rollout_progress"""

    def filters(self):
        return {"rollout_progress": rollout_progress_filter}
