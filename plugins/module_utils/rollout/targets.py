# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Load balancer target groups: when a drained instance has left them, and how long that may take. Pure.

What holds a drained instance back is a *hold* (``{"kind", "name", "state", "timeout"}``); this module makes the holds
of target groups, ``drain.volumes`` those of volumes still attached to the node.

A drained node's instance is not terminated while a target group of its Auto Scaling group still lists it as an
instance target in a state that takes or finishes connections (``healthy``, ``initial``, ``draining``): terminating it
then drops the connections still on it (the 502s of a node that left its load balancer after its pods were gone). The
node carries ``node.kubernetes.io/exclude-from-external-load-balancers`` from the start of its drain, so the AWS Load
Balancer Controller or the cloud provider deregisters it while its pods are evicted, and its deregistration delay runs
alongside the drain. The wait is bounded: by default each target group's deregistration delay plus
:data:`MARGIN_SECONDS`, counted from the end of the drain; then the instance is terminated anyway (the Auto Scaling
group deregisters it from its own target groups as it terminates it), and the step says so.

Target groups are in ``clients.aws.target_group_record``'s shape; the targets of one target group are ``{target id: state}``
as DescribeTargetHealth lists them.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.values import PlanError, parse_duration

# A target in one of these states still takes connections, or finishes the ones it has.
HOLDING_STATES = ("healthy", "initial", "draining")
# Seconds allowed beyond a target group's deregistration delay before the instance is terminated anyway.
MARGIN_SECONDS = 30


def instance_target_groups(target_groups):
    """The target groups whose targets are instances (an ``ip`` target group lists pods, which the drain moved)."""
    return [group for group in target_groups if group.get("target_type") == "instance"]


def holding(instance_id, target_groups, targets, timeout=None):
    """The target groups still holding the instance, as holds ``rollout.steps.next_step`` reads:
    ``[{"kind": "target_group", "name", "state", "timeout"}]``, ``timeout`` being how long after its drain ended the
    instance may wait for it (the ``timeout`` given, else the target group's deregistration delay plus
    :data:`MARGIN_SECONDS`).

    ``targets``: ``{target group arn: {target id: state}}``; a target group missing from it was not read and holds
    nothing."""
    held = []
    for group in instance_target_groups(target_groups):
        state = (targets.get(group["arn"]) or {}).get(instance_id)
        if state in HOLDING_STATES:
            held.append({"kind": "target_group", "name": group["name"], "state": state,
                         "timeout": group["deregistration_delay"] + MARGIN_SECONDS if timeout is None else timeout})
    return held


def parse_deregistration_timeout(value, field="deregistration_timeout"):
    """``None``/empty: each target group's delay plus the margin; else seconds or a duration (``0``: do not wait)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return parse_duration(value, field)
    except PlanError:
        raise PlanError("%s: %r is not allowed; use seconds or a duration such as 5m, 0 not to wait, or leave it empty "
                        "for each target group's deregistration delay plus %ds" % (field, value, MARGIN_SECONDS)) from None


def plan_target_groups(target_groups):
    """What the plan shows of the group's target groups: each one's name, target type and deregistration delay, and
    whether the rollout waits for an instance to leave it (instance targets only)."""
    return [{"name": group["name"], "arn": group["arn"], "target_type": group["target_type"],
             "deregistration_delay": group["deregistration_delay"], "waited_for": group["target_type"] == "instance"}
            for group in target_groups]
