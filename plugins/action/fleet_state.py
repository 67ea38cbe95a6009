# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet_state module, run inside the worker when its host is this machine (plugin_utils/in_worker.py)."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.modules import fleet_state
from ansible_collections.nodeops.rollout.plugins.plugin_utils.in_worker import InWorkerAction


class ActionModule(InWorkerAction):
    module = fleet_state
    # the fleet's ledger is one account for every cluster: a connection set on group/aws (or amazon.aws's group) for the
    # clusters must not reach it, as it is in none of this collection's groups
    group_defaults = False
