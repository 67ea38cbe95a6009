# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""node_drain's options, read and validated once before anything is read or changed. Pure."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.choices import TIMEOUT_ACTIONS
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, parse_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import drain_options
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.preflight import wave_lists

# node_drain's timeout when none is given (the module's argument spec takes it from here; the role's own default is in
# its defaults and argument spec, which the role's unit test keeps equal)
DEFAULT_TIMEOUT = "15m"
# how long a drain waits for its labelled nodes to leave their target groups before it evicts anyway
DEFAULT_LEAVE_TIMEOUT = "60s"


class DrainOptions:
    """The module's drain options, validated (raises PlanError naming the field)."""

    def __init__(self, params):
        self.timeout = parse_duration(DEFAULT_TIMEOUT if params.get("timeout") is None else params["timeout"], "timeout")
        self.timeout_action = params.get("timeout_action") or "fail"
        if self.timeout_action not in TIMEOUT_ACTIONS:
            raise PlanError("timeout_action: %r is not allowed; use one of %s"
                            % (self.timeout_action, ", ".join(TIMEOUT_ACTIONS)))
        self.force = bool(params.get("force"))
        self.delete_emptydir_data = bool(params.get("delete_emptydir_data"))
        self.disable_eviction = bool(params.get("disable_eviction"))
        self.pod_selector = params.get("pod_selector") or None
        self.restart_single_replica = params.get("restart_single_replica", True) is not False
        # a workload of two or more replicas that no PodDisruptionBudget covers keeps a Ready pod (drain.implicit)
        self.implicit_budget = params.get("implicit_budget", True) is not False
        # unset (or empty, as a survey sends it) keeps each pod's own terminationGracePeriodSeconds; 0 is immediate
        grace_period = params.get("grace_period")
        if grace_period is None or (isinstance(grace_period, str) and not grace_period.strip()):
            self.grace_period = None
        else:
            self.grace_period = parse_duration(grace_period, "grace_period")
        self.max_concurrent_nodes = self._positive(params, "max_concurrent_nodes", None)
        self.exclude_from_load_balancers = bool(params.get("exclude_from_load_balancers"))
        # how long the labelled nodes may take to leave their target groups (the runner's target_groups) before their
        # pods are evicted anyway
        self.target_leave_timeout = parse_duration(DEFAULT_LEAVE_TIMEOUT if params.get("target_leave_timeout") in (None, "")
                                                   else params["target_leave_timeout"], "target_leave_timeout")
        zones = params.get("new_node_zones")
        if zones is not None and (not isinstance(zones, (list, tuple)) or not all(isinstance(z, str) and z.strip() for z in zones)):
            raise PlanError("new_node_zones: %r is not allowed; use a list of Availability Zone names" % (zones,))
        self.new_node_zones = [zone.strip() for zone in zones] if zones is not None else None
        self.waves = wave_lists(params.get("waves"))
        self.max_concurrent_evictions = self._positive(params, "max_concurrent_evictions", 10)
        self.poll_interval = self._seconds(params, "poll_interval", 2.0)
        self.retry_max_delay = self._seconds(params, "retry_max_delay", 16.0)
        self.classify = drain_options({"force": self.force, "delete_emptydir_data": self.delete_emptydir_data,
                                       "disable_eviction": self.disable_eviction})

    @staticmethod
    def _positive(params, name, default):
        value = params.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PlanError("%s: %r is not allowed; use an integer >= 1" % (name, value))
        return value

    @staticmethod
    def _seconds(params, name, default):
        value = params.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise PlanError("%s: %r is not allowed; use a number of seconds > 0" % (name, value))
        return float(value)
