# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Validate a node group: evaluate (``node_health.evaluate``) until the healthy state has held long enough, or the
timeout."""

from __future__ import annotations

import time
from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import KubeApi, kube_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import parse_duration, parse_time
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import node_health

# Kubernetes writes lastTransitionTime to the second: a state is taken to have held one second less than it reads.
TIME_RESOLUTION = 1.0


class ValidateOptions:
    """The module's options, validated (raises node_health.HealthError or PlanError naming the field)."""

    def __init__(self, params):
        self.instance_ids = None
        if params.get("instance_ids") is not None:
            self.instance_ids = node_health.check_instance_ids(params["instance_ids"])
        self.label_selector = params.get("label_selector") or None
        self.expected_count = params.get("expected_count")
        if self.instance_ids is None and self.label_selector is None:
            raise node_health.HealthError("instance_ids or label_selector is required: name the instances, or select the "
                                          "nodes by label and give expected_count")
        if self.instance_ids is None:
            if self.expected_count is None or isinstance(self.expected_count, bool) or not isinstance(self.expected_count, int) \
                    or self.expected_count < 0:
                raise node_health.HealthError("expected_count: %r is not allowed; with label_selector use an integer >= 0"
                                              % (self.expected_count,))
        self.each_az = bool(params.get("each_az"))
        self.azs = list(params.get("azs") or []) or None
        self.critical_pods = bool(params.get("critical_pods"))
        self.critical_namespaces = list(params.get("critical_namespaces") or ["kube-system"])
        self.schedulable = params.get("schedulable", True) is not False
        self.tolerated_taints = list(params.get("tolerated_taints") or [])
        self.passes = params.get("passes") if params.get("passes") is not None else 1
        if isinstance(self.passes, bool) or not isinstance(self.passes, int) or self.passes < 1:
            raise node_health.HealthError("passes: %r is not allowed; use an integer >= 1" % (self.passes,))
        self.interval = parse_duration(params.get("interval", "10s"), "interval")
        self.timeout = parse_duration(params.get("timeout", "10m"), "timeout")


class Validation:
    """``run()`` evaluates until the healthy state has held for ``passes - 1`` intervals, or the timeout.

    ``passes`` consecutive passes ``interval`` apart are what the healthy state must hold for; the API records when each
    node and critical pod last turned Ready (``node_health.healthy_since``), so a state that already held that long is
    valid at once, and one that has held part of it is evaluated again once the rest has passed - never a fixed wait
    on top of what the cluster says. A node or pod that flaps in between carries its later transition and the wait
    starts again. Where the API records no time, passes are counted ``interval`` apart."""

    def __init__(self, api, options, check_mode=False, clock=time.monotonic, sleep=time.sleep, wall=None):
        self.api = api
        self.opts = options
        self.check_mode = check_mode
        self.clock = clock
        self.sleep = sleep
        self.wall = wall or (lambda: datetime.now(timezone.utc))

    def evaluate(self):
        opts = self.opts
        nodes = self.api.list_nodes(label_selector=opts.label_selector)
        pods = None
        if opts.critical_pods:
            pods = []
            for namespace in opts.critical_namespaces:
                pods.extend(self.api.list_pods(namespace=namespace))
        return node_health.evaluate(nodes, instance_ids=opts.instance_ids, expected_count=opts.expected_count,
                                    label_selector=opts.label_selector, each_az=opts.each_az, azs=opts.azs,
                                    schedulable=opts.schedulable, critical_pods=pods,
                                    tolerated_taints=opts.tolerated_taints)

    def held_for(self, result):
        """How long the healthy state of ``result`` has held by the API's record, or None when it records no time."""
        if not result["ok"] or not result.get("healthy_since"):
            return None
        since = parse_time(result["healthy_since"], "lastTransitionTime")
        return max(0.0, (self.wall() - since).total_seconds() - TIME_RESOLUTION)

    def run(self):
        """The module result; ``failed`` is set when the timeout ends the wait (never in check mode)."""
        started = self.clock()
        deadline = started + self.opts.timeout
        needed = (self.opts.passes - 1) * self.opts.interval
        passes = 0
        evaluations = 0
        history = []
        held = None
        while True:
            result = self.evaluate()
            evaluations += 1
            passes = passes + 1 if result["ok"] else 0
            if not history or history[-1]["message"] != result["message"]:
                history.append({"seconds": round(self.clock() - started, 3), "ok": result["ok"], "message": result["message"]})
            held = self.held_for(result)
            if held is not None:
                # passes interval apart the state has held for, by the API's record (reads closer together count once)
                passes = self.opts.passes if held >= needed else min(self.opts.passes, 1 + int(held // self.opts.interval))
            if self.check_mode or passes >= self.opts.passes:
                break
            # the rest of the span the state must hold, by the API's record; else the next pass an interval on
            wait = self.opts.interval if held is None else needed - held
            if self.clock() + wait > deadline:
                break
            self.sleep(wait)
        result["passes_done"] = passes
        result["passes_required"] = self.opts.passes
        result["evaluations"] = evaluations
        result["history"] = history
        result["held_seconds"] = None if held is None else round(held, 3)
        result["seconds"] = round(self.clock() - started, 3)
        result["changed"] = False
        done = passes >= self.opts.passes
        if self.check_mode:
            result["msg"] = "check mode, one evaluation: " + result["message"]
        elif done:
            how = ""
            if self.opts.passes > 1 and held is not None:
                how = " (Ready for %ds, %d passes %ds apart required)" % (held, self.opts.passes, self.opts.interval)
            elif self.opts.passes > 1:
                how = " (%d consecutive passes)" % passes
            result["msg"] = result["message"] + how
        else:
            if result["ok"] and held is not None:
                result["message"] = ("valid for only %ds of the %ds required (%d passes %ds apart) when the timeout of %ds "
                                     "was reached" % (held, needed, self.opts.passes, self.opts.interval, self.opts.timeout))
            elif result["ok"]:
                result["message"] = ("valid only %d time(s) in a row, %d required, when the timeout of %ds was reached"
                                     % (passes, self.opts.passes, self.opts.timeout))
            seconds = int(round(result["seconds"]))
            unborn = result["missing"] + [result["nodes"][name]["instance_id"] or name for name in result["not_ready"]]
            if self.opts.instance_ids is not None and unborn:
                # EKS's name for new instances that do not become Ready nodes: a broken image or bootstrap, a CNI that
                # never starts, a node role the cluster does not admit; nothing drains until they do.
                result["msg"] = ("NodeCreationFailure: %d of %d instance(s) did not become Ready nodes within %ds (%s): %s"
                                 % (len(unborn), len(self.opts.instance_ids), seconds, ", ".join(unborn), result["message"]))
            else:
                result["msg"] = "cluster validation timed out after %ds: %s" % (seconds, result["message"])
            result["failed"] = True
        result["ok"] = bool(result["ok"]) and (done or self.check_mode)
        return result


@reports_errors
def run_cluster_validate(module, make_client):
    """cluster_validate: validate the options, build the client (``make_client(module)``), wait, exit the module."""
    options = ValidateOptions(module.params)
    validation = Validation(KubeApi(make_client(module)), options, check_mode=module.check_mode)
    with kube_errors("validate", "nodes"):
        output = validation.run()
    if output.pop("failed", False):
        module.fail_json(**output)
    module.exit_json(**output)
