# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fixed choices of options that more than one layer checks: a module's argument spec, the client or runner that
uses the value, and the role's settings (``rollout/settings.py``), which check them before any change.

Shared values at the bottom of module_utils: imports nothing of the collection.
"""

from __future__ import annotations

# botocore's retry modes (the AWS options' ``retry_mode``).
RETRY_MODES = ("standard", "adaptive")
# What node_drain does with a node whose drain timed out (``timeout_action``).
TIMEOUT_ACTIONS = ("fail", "skip", "force")
# How asg_surge makes room for the surge (``method``), recorded in the rollout's state.
METHODS = ("scale", "detach")
# How a request to the Alertmanager of the alert gates is authenticated (``alertmanager.auth``): none, a bearer token,
# or AWS SigV4 (Amazon Managed Service for Prometheus).
ALERTMANAGER_AUTH = ("none", "bearer", "sigv4")
