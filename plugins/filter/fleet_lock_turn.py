# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_lock_turn
short_description: Say whether a fleet worker may roll its cluster now, from the locks of its node groups
version_added: 0.3.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - The role C(nodeops.rollout.fleet) asks it before each cluster's rollout, with what M(nodeops.rollout.rollout_lock)
    answered in check mode for each of the cluster's node groups.
  - V(free) - every lock is free, or held by a run whose lock has expired - the rollout takes them.
  - V(wait) - a lock is held by this fleet run's earlier attempt on the cluster, whose worker stopped before it finished
    (O(stopped_holder)); it frees itself when its duration runs out, so the worker waits that long, then resumes the
    cluster from its state tags.
  - V(busy) - another run holds a lock, or the earlier attempt renewed its lock while the worker waited (it is alive
    elsewhere). The cluster is not rolled and that is no failure; the next run of the fleet takes it up.
  - V(failed) - a lock could not be read.
options:
  _input:
    description:
      - The results of M(nodeops.rollout.rollout_lock) in check mode, with
        O(nodeops.rollout.rollout_lock#module:state=acquired), in a loop over the node groups.
    type: list
    elements: dict
    required: true
  cluster:
    description: The cluster, as messages name it.
    type: str
    required: true
  stopped_holder:
    description:
      - The lock holder of this run's earlier attempt on the cluster (C(stopped_holder) of
        M(nodeops.rollout.fleet_state)'s claim), or null.
    type: str
  seen:
    description: The C(seen) of this filter's previous answer in the same wait, V({}) at first.
    type: dict
"""

EXAMPLES = r"""
- name: May the cluster be rolled now?
  ansible.builtin.set_fact:
    turn: "{{ locks.results | nodeops.rollout.fleet_lock_turn(inventory_hostname, claim.stopped_holder, {}) }}"
"""

RETURN = r"""
_value:
  description:
    - C(decision) (V(free), V(wait), V(busy) or V(failed)), C(message) (a sentence), C(wait_seconds) (with V(wait), how long
      until the latest of the earlier attempt's locks has expired) and C(seen) (to give the next call of the same wait).
  type: dict
"""

from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.fleet.lock_turn import lock_turn


def fleet_lock_turn(reads, cluster, stopped_holder=None, seen=None):
    return lock_turn(reads, cluster, stopped_holder, seen, datetime.now(timezone.utc))


class FilterModule:
    """nodeops.rollout.fleet_lock_turn"""

    def filters(self):
        return {"fleet_lock_turn": fleet_lock_turn}
