# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """The events option of the modules that change nodes (plugins/module_utils/clients/event_writer.py: EVENTS_ARGUMENT_SPEC)."""

    DOCUMENTATION = r"""
options:
  events:
    description:
      - The Kubernetes Events the module writes on the nodes it changes, as Cluster API and Karpenter do, so that
        C(kubectl describe node) shows what the rollout did to the node and why.
      - They are core/v1 Events in the C(default) namespace whose C(involvedObject) is the Node, reported by
        C(nodeops.rollout), with reasons C(RolloutCordoned), C(RolloutUncordoned), C(RolloutTainted), C(RolloutUntainted),
        C(DrainSucceeded), C(DrainBlocked) (a Warning naming the pods and PodDisruptionBudgets that blocked the drain),
        C(DrainFailed) (Warning) and C(RolloutTerminating).
      - Best effort. An Event the API server refuses (no C(create) on C(events) in the RBAC, a missing namespace,
        any error) never fails the module or stops the rollout; each is sent once with a short timeout, and after a
        refusal that would answer the others the same way (401, 403, 404, no answer) no other Event is sent. The
        result's RV(events) counts them.
      - Nothing is written in check mode.
    type: dict
    suboptions:
      enabled:
        description: Whether to write the Events.
        type: bool
        default: true
      run:
        description:
          - The run named in each Event's message. Unset, the holder of O(lock) (the run's identity), when given.
        type: str
      target:
        description:
          - What the rollout rolls the nodes to, named in each Event's message, for example
            V(launch template lt-0123456789abcdef0 version 7 (ami-0123456789abcdef0)).
          - M(nodeops.rollout.instance_terminate) names the target recorded on the group when this is unset.
        type: str
"""
