# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Validate a node group: evaluate (``node_health.evaluate``) until enough consecutive passes or the timeout."""

from __future__ import annotations

import time

from ansible_collections.nodeops.rollout.plugins.module_utils import node_health
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import KubeApi, kube_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.errors import reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.values import parse_duration


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
        self.passes = params.get("passes") if params.get("passes") is not None else 1
        if isinstance(self.passes, bool) or not isinstance(self.passes, int) or self.passes < 1:
            raise node_health.HealthError("passes: %r is not allowed; use an integer >= 1" % (self.passes,))
        self.interval = parse_duration(params.get("interval", "10s"), "interval")
        self.timeout = parse_duration(params.get("timeout", "10m"), "timeout")


class Validation:
    """``run()`` evaluates until ``passes`` consecutive successes ``interval`` apart, or the timeout."""

    def __init__(self, api, options, check_mode=False, clock=time.monotonic, sleep=time.sleep):
        self.api = api
        self.opts = options
        self.check_mode = check_mode
        self.clock = clock
        self.sleep = sleep

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
                                    schedulable=opts.schedulable, critical_pods=pods)

    def run(self):
        """The module result; ``failed`` is set when the timeout ends the wait (never in check mode)."""
        started = self.clock()
        deadline = started + self.opts.timeout
        passes = 0
        evaluations = 0
        history = []
        while True:
            result = self.evaluate()
            evaluations += 1
            passes = passes + 1 if result["ok"] else 0
            if not history or history[-1]["message"] != result["message"]:
                history.append({"seconds": round(self.clock() - started, 3), "ok": result["ok"], "message": result["message"]})
            if self.check_mode or passes >= self.opts.passes:
                break
            if self.clock() + self.opts.interval > deadline:
                break
            self.sleep(self.opts.interval)
        result["passes_done"] = passes
        result["passes_required"] = self.opts.passes
        result["evaluations"] = evaluations
        result["history"] = history
        result["seconds"] = round(self.clock() - started, 3)
        result["changed"] = False
        done = passes >= self.opts.passes
        if self.check_mode:
            result["msg"] = "check mode, one evaluation: " + result["message"]
        elif done:
            result["msg"] = result["message"] + (" (%d consecutive passes)" % passes if self.opts.passes > 1 else "")
        else:
            if result["ok"]:
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
