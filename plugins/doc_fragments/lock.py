# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """The lock option of the modules of a rollout (plugins/module_utils/runners/lock_keeper.py: LOCK_ARGUMENT_SPEC)."""

    DOCUMENTATION = r"""
options:
  lock:
    description:
      - The node group's lock (see M(nodeops.rollout.rollout_lock)) that this run holds, kept alive while the module runs,
        so that no wait of the module outlasts it. The rolling_update role sets it on every module of a rollout once it
        holds the lock.
      - The module renews the Lease from its own process whenever less than half of O(lock.duration) is left of it
        (counted from O(lock.held_until), then from its own renewals); a module that ends sooner makes no request for it.
        A renewal reads the Lease first and writes it only when no other module of the run renewed it meanwhile.
      - The module stops, failing with a message that says why, when the Lease is no longer this run's (another run took
        it over), when its hold expires while renewals fail, or when the run that started it is gone (its controller
        process ended), since without the lock it must not change the group, and a dead run's lock must expire.
      - Not used in check mode.
    type: dict
    suboptions:
      name:
        description: The node group (Auto Scaling group) the lock is for.
        type: str
        required: true
      namespace:
        description: The namespace of the Lease.
        type: str
        default: kube-system
      holder:
        description: This run's identity, the Lease's C(holderIdentity).
        type: str
        required: true
      duration:
        description: How long the Lease stays valid after each renewal - seconds or a duration such as V(2m); a list is added up.
        type: raw
        required: true
      held_until:
        description:
          - The RV(nodeops.rollout.rollout_lock#module:lease.expires_at) of this run's last M(nodeops.rollout.rollout_lock)
            call. Unset, the Lease is renewed when the module starts.
        type: str
"""
