# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""``asg_surge``: give a group extra instances for a rollout and take them back afterwards.

``surged`` records the rollout on the group first (original sizes, surge, target, the processes it suspends),
then suspends those processes, then raises max and desired (``scale``) or detaches outdated instances without
decrementing desired (``detach``). Each step is checked against what the group already shows, so a rerun after
an interruption finishes the same rollout instead of starting a second one. ``restored`` puts the sizes back
(only the rollout's own outstanding surge when something else moved desired), resumes only the processes the
rollout suspended, and removes the rollout's tags last.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws import (
    INSTANCE_ID_RE,
    aws_clients,
    aws_errors,
    detached_instances,
    group_azs,
    group_instances,
    group_tags,
    members,
    clear_state,
    detach_for_surge,
    require_group,
    resume_group_processes,
    set_group_sizes,
    suspend_group_processes,
    suspended_processes,
    tagged_by_rollout,
    wait_for,
    write_state,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError, reporting, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import outdated_instances, previous_version
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.launch_template import group_target
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.sizes import (
    check_surge_syntax,
    detach_candidates,
    group_settled,
    max_unavailable_count,
    resolve_surge,
    restore_sizes,
    resume_sizes,
    sizes_of,
    surge_applied,
    surged_sizes,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.state import (
    after_writes,
    detach_room_refusal,
    format_time,
    group_state,
    new_rollout_id,
    recorded_tags,
    state_tags,
    state_writes,
    tag_room_refusal,
    valid_rollout_id,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.tags import TAG_INSTANCE_DETACHED
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, parse_duration


def check_options(params):
    """Refuse bad options before any API call."""
    check_surge_syntax(params.get("surge"))
    if params.get("max_unavailable") is not None:
        max_unavailable_count(params["max_unavailable"], 0)
    previous = params.get("previous_version")
    if previous is not None and previous < 1:
        raise PlanError("previous_version: %r is not allowed; use a launch template version number (1 or more)" % (previous,))
    limit = params.get("max_size_limit")
    if limit is not None and limit < 0:
        raise PlanError("max_size_limit: %r is not allowed; use a whole number >= 0" % (limit,))
    if params.get("wait_timeout") is not None:
        params["wait_timeout"] = parse_duration(params["wait_timeout"], "wait_timeout")
    ids = params.get("instance_ids")
    if ids:
        if params["method"] != "detach" or params["state"] != "surged":
            raise PlanError("instance_ids: only allowed with method=detach and state=surged (the instances to detach)")
        for instance_id in ids:
            if not isinstance(instance_id, str) or not INSTANCE_ID_RE.match(instance_id):
                raise PlanError("instance_ids: %r is not an EC2 instance id; use ids such as i-0123456789abcdef0" % (instance_id,))
        if len(set(ids)) != len(ids):
            raise PlanError("instance_ids: each instance may be listed once")
    rollout_id = params.get("rollout_id")
    if rollout_id is not None and not valid_rollout_id(rollout_id):
        raise PlanError("rollout_id: %r is not allowed; use 1-64 letters, digits, '.', '_', ':' or '-', starting with a letter or digit"
                        % (rollout_id,))


def _sizes(current):
    return {key: current[key] for key in ("min_size", "max_size", "desired_capacity")}


def _sizes_diff(sizes, processes, tags):
    return {"min_size": sizes["min_size"], "max_size": sizes["max_size"], "desired_capacity": sizes["desired_capacity"],
            "suspended_processes": sorted(processes), "tags": dict(sorted(tags.items()))}


class _Surge:
    """The decisions of ``state: surged`` for one group, made before anything changes."""

    def __init__(self, params, group, ec2):
        self.params = params
        self.group = group
        self.name = group["AutoScalingGroupName"]
        self.current = sizes_of(group)
        self.suspended_now = suspended_processes(group)
        self.state = group_state(group)
        self.resumed = self.state is not None
        self.write = {}
        self.to_suspend = []
        self.new_sizes = None
        self.to_detach = []
        self.restoring = False
        if self.state:
            self._resume(ec2)
        else:
            self._start(ec2)

    def _resume(self, ec2):
        state = self.state
        if state.get("restore_sizes"):
            # A restore is under way (it records its sizes before it resizes): the rollout is ending, never surge again.
            self.restoring = True
            return
        if state["method"] != self.params["method"]:
            raise RolloutError("method: Auto Scaling group '%s' has rollout %s recorded with method %s; use method=%s to resume "
                               "it, or end it with state=restored first" % (self.name, state["rollout_id"], state["method"], state["method"]))
        if self.params.get("rollout_id") and self.params["rollout_id"] != state["rollout_id"]:
            raise RolloutError("rollout_id: Auto Scaling group '%s' has rollout %s recorded, not %s; end it with state=restored first"
                               % (self.name, state["rollout_id"], self.params["rollout_id"]))
        # Interrupted between recording the state and suspending: suspend what the state says is ours.
        self.to_suspend = [name for name in state["suspended_processes"] if name not in self.suspended_now]
        if state["method"] == "scale":
            if not surge_applied(state, self.current):
                self.new_sizes = resume_sizes(state, self.current)
        elif not tagged_by_rollout(ec2, self.name, state["rollout_id"]):
            # Recorded, then stopped before it tagged any instance (refused, killed): the surge is still to be made, or
            # the rollout would drain its outdated nodes with no new capacity beside them.
            self.to_detach = self._detach_choice(ec2, members(self.group), group_target(ec2, self.group), state["surge"])
        else:
            tagged = set(instance["InstanceId"] for instance in detached_instances(ec2, self.name)
                         if any(tag["Key"] == TAG_INSTANCE_DETACHED and tag["Value"] == state["rollout_id"] for tag in instance.get("Tags") or []))
            self.to_detach = sorted(instance["InstanceId"] for instance in members(self.group) if instance["InstanceId"] in tagged)

    def _start(self, ec2):
        params = self.params
        in_group = members(self.group)
        if not in_group:
            raise RolloutError("name: Auto Scaling group '%s' has no instances (desired capacity %d): there is nothing to surge for"
                               % (self.name, self.current["desired_capacity"]))
        target = group_target(ec2, self.group)
        if target is None:
            raise RolloutError("name: Auto Scaling group '%s' uses a launch configuration; only groups with a launch template can be rolled"
                               % self.name)
        refusal = tag_room_refusal(group_tags(self.group), self.name)
        if refusal:
            raise RolloutError("name: %s" % refusal)
        desired = self.current["desired_capacity"]
        surge = resolve_surge(params.get("surge"), desired, len(group_azs(self.group)),
                              max_unavailable_count(params.get("max_unavailable"), desired))
        if params["method"] == "scale":
            surged = surged_sizes(self.current, surge, params.get("max_size_limit"))
            self.new_sizes = surged if surge else None
        else:
            self.to_detach = self._detach_choice(ec2, in_group, target, surge)
            surge = len(self.to_detach)
            # Detached instances keep running next to their replacements: the same limit applies.
            surged = surged_sizes(self.current, surge, params.get("max_size_limit"))
        self.to_suspend = [name for name in params["suspend_processes"] if name not in self.suspended_now]
        now = datetime.now(timezone.utc)
        self.state = {
            "rollout_id": params.get("rollout_id") or new_rollout_id(now, secrets.token_hex(3)),
            "method": params["method"],
            "original_min_size": self.current["min_size"],
            "original_max_size": self.current["max_size"],
            "original_desired_capacity": self.current["desired_capacity"],
            "surge": surge,
            "surge_owed": surge if params["method"] == "scale" else 0,
            "surged_max_size": surged["surged_max_size"] if params["method"] == "scale" else None,
            "target_launch_template": target["launch_template_id"],
            "target_version": target["version"],
            "previous_version": self._previous(ec2, target),
            "suspended_processes": self.to_suspend,
            "started_at": format_time(now),
            "restore_sizes": None,
            "paying": None,
        }
        self.write = state_tags(self.state)

    def _previous(self, ec2, target):
        given = self.params.get("previous_version")
        if given is not None and given != target["version"]:
            return given
        plan_target = {"launch_template_id": target["launch_template_id"], "version": target["version"]}
        return previous_version(group_instances(ec2, self.group, include_detached=True), plan_target)

    def _detach_choice(self, ec2, in_group, target, surge):
        ids = self.params.get("instance_ids")
        records = [record for record in group_instances(ec2, self.group, include_detached=False)
                   if record["lifecycle_state"] == "InService"]
        if ids:
            in_service = set(instance["InstanceId"] for instance in in_group if instance.get("LifecycleState") == "InService")
            for instance_id in ids:
                if instance_id not in in_service:
                    raise RolloutError("instance_ids: %s is not an instance in service in Auto Scaling group '%s'" % (instance_id, self.name))
            chosen = list(ids)
        else:
            plan_target = {"launch_template_id": target["launch_template_id"], "version": target["version"], "image_id": target["image_id"]}
            chosen = [record["instance_id"] for record in detach_candidates(outdated_instances(records, plan_target), surge)]
        tags = {record["instance_id"]: record["tags"] for record in records}
        refusals = [refusal for refusal in (detach_room_refusal(instance_id, tags.get(instance_id)) for instance_id in chosen) if refusal]
        if refusals:
            raise RolloutError("method: Auto Scaling group '%s': %s" % (self.name, "; ".join(refusals)))
        return chosen

    @property
    def changed(self):
        return bool(self.write or self.to_suspend or self.new_sizes or self.to_detach)

    def diff(self):
        tags_before = recorded_tags(group_tags(self.group))
        tags_after = dict(tags_before, **self.write)
        after_sizes = self.new_sizes or self.current
        return {"before": _sizes_diff(self.current, self.suspended_now, tags_before),
                "after": _sizes_diff(after_sizes, set(self.suspended_now) | set(self.to_suspend), tags_after)}

    def apply(self, autoscaling, ec2):
        """Record, suspend, then resize or detach; the order keeps every interruption resumable."""
        steps = []
        if self.write:
            write_state(autoscaling, self.name, self.write)
            steps.append("recorded")
        if self.to_suspend:
            suspend_group_processes(autoscaling, self.name, self.to_suspend)
            steps.append("suspended")
        if self.new_sizes:
            set_group_sizes(autoscaling, self.name, self.new_sizes["max_size"], self.new_sizes["desired_capacity"])
            steps.append("resized")
        if self.to_detach:
            detach_for_surge(autoscaling, ec2, self.name, self.to_detach, self.state["rollout_id"])
            steps.append("detached")
        return steps


class _Restore:
    """The decisions of ``state: restored`` for one group."""

    def __init__(self, group, ec2):
        self.group = group
        self.name = group["AutoScalingGroupName"]
        self.current = sizes_of(group)
        self.suspended_now = suspended_processes(group)
        self.state = group_state(group)
        self.all_tags = group_tags(group)
        self.tags = recorded_tags(self.all_tags)
        self.sizes = None
        self.to_resume = []
        self.detached_remaining = []
        if self.state is None:
            return
        self.sizes = restore_sizes(self.state, self.current)
        if self.sizes["owed"]:
            # Lowering desired lets the group pick which instances go, drained or not: the surge is paid back through
            # the termination gate instead, by named instances.
            raise RolloutError(
                "state: Auto Scaling group '%s' still holds %d instance(s) of surge owed by rollout %s (desired capacity %d, "
                "original %d); a restore never scales in, since the group would choose instances without a drain: drain "
                "that many up-to-date nodes (node_group_info lists them in plan.payback) and terminate them with "
                "instance_terminate and decrement_desired_capacity=owed first (the rolling_update role does this)"
                % (self.name, self.sizes["owed"], self.state["rollout_id"], self.current["desired_capacity"],
                   self.state["original_desired_capacity"]), owed=self.sizes["owed"])
        self.to_resume = [name for name in self.state["suspended_processes"] if name in self.suspended_now]
        self.detached_remaining = [instance["InstanceId"] for instance in detached_instances(ec2, self.name)]

    @property
    def resize(self):
        if self.sizes is None:
            return False
        return any(self.sizes[key] != self.current[key] for key in ("min_size", "max_size", "desired_capacity"))

    @property
    def changed(self):
        return bool(self.state is not None and (self.resize or self.to_resume or self.tags))

    def diff(self):
        after_sizes = self.sizes or self.current
        return {"before": _sizes_diff(self.current, self.suspended_now, self.tags),
                "after": _sizes_diff(after_sizes, set(self.suspended_now) - set(self.to_resume), {})}

    def apply(self, autoscaling):
        """Fix the sizes first (recorded, so an interrupted restore does not take the surge back twice), resume,
        and remove the rollout's tags last."""
        steps = []
        tags = self.all_tags
        if self.resize:
            if not self.state.get("restore_sizes"):
                restoring = dict(self.state, restore_sizes={key: self.sizes[key] for key in ("min_size", "max_size", "desired_capacity")})
                write, delete = state_writes(restoring, tags)
                write_state(autoscaling, self.name, write, delete)
                tags = after_writes(tags, write, delete)
            set_group_sizes(autoscaling, self.name, self.sizes["max_size"], self.sizes["desired_capacity"],
                            min_size=self.sizes["min_size"])
            steps.append("resized")
        if self.to_resume:
            resume_group_processes(autoscaling, self.name, self.to_resume)
            steps.append("resumed")
        if clear_state(autoscaling, self.name, recorded_tags(tags)):
            steps.append("cleared")
        return steps


class _Hold:
    """The decisions of ``state: held``: a rollout stopped before its end.

    The surge and the state tags stay, so the cluster keeps its capacity and the next run resumes; the processes
    the rollout suspended are given back, so the group heals and rebalances while nobody is watching it."""

    def __init__(self, group):
        self.name = group["AutoScalingGroupName"]
        self.current = sizes_of(group)
        self.suspended_now = suspended_processes(group)
        self.state = group_state(group)
        self.to_resume = []
        if self.state is not None:
            self.to_resume = [name for name in self.state["suspended_processes"] if name in self.suspended_now]

    @property
    def changed(self):
        return bool(self.to_resume)

    def diff(self):
        return {"before": {"suspended_processes": sorted(self.suspended_now)},
                "after": {"suspended_processes": sorted(set(self.suspended_now) - set(self.to_resume))}}

    def apply(self, autoscaling):
        if not self.to_resume:
            return []
        resume_group_processes(autoscaling, self.name, self.to_resume)
        return ["resumed"]


def _hold_result(decision):
    state = decision.state
    if state is None:
        return {"rollout_id": None, "held": False, "resumed_processes": [], "sizes": {"before": _sizes(decision.current), "after": _sizes(decision.current)},
                "msg": "no rollout is recorded on Auto Scaling group '%s'; nothing to hold" % decision.name}
    return {"rollout_id": state["rollout_id"], "held": True, "resumed_processes": list(decision.to_resume),
            "surge_owed": state["surge_owed"], "sizes": {"before": _sizes(decision.current), "after": _sizes(decision.current)},
            "rollout_state": state}


def _wait_settled(autoscaling, name, region, timeout):
    def check():
        group = require_group(autoscaling, name, region)
        instances = group.get("Instances") or []
        settled = group_settled(instances, group["DesiredCapacity"])
        states = {}
        for instance in instances:
            states[instance.get("LifecycleState")] = states.get(instance.get("LifecycleState"), 0) + 1
        detail = "desired capacity %d, instances by lifecycle state %s" % (
            group["DesiredCapacity"], ", ".join("%s=%d" % item for item in sorted(states.items())) or "none")
        return settled, detail, group

    return wait_for(check, timeout, "Auto Scaling group '%s' to have exactly its desired capacity in service" % name)


@reports_errors
def run_asg_surge(module):
    params = module.params
    check_options(params)
    connection, autoscaling, ec2 = aws_clients(module, "autoscaling", "ec2")
    region = connection.region
    name = params["name"]
    resource = "Auto Scaling group '%s'" % name
    with aws_errors("DescribeAutoScalingGroups", resource):
        group = require_group(autoscaling, name, region)
        if params["state"] == "surged":
            decision = _Surge(params, group, ec2)
        elif params["state"] == "held":
            decision = _Hold(group)
        else:
            decision = _Restore(group, ec2)

    result = {"changed": decision.changed, "name": name, "state": params["state"]}
    if params["state"] == "surged":
        result.update(_surge_result(decision))
        if decision.resumed and params.get("surge") is not None and str(params["surge"]).strip() != str(decision.state["surge"]):
            module.warn("Auto Scaling group '%s' has rollout %s recorded with a surge of %d; surge=%s is ignored (a rerun resumes the "
                        "recorded rollout; restore it first to surge differently)"
                        % (name, decision.state["rollout_id"], decision.state["surge"], params["surge"]))
    elif params["state"] == "held":
        result.update(_hold_result(decision))
    else:
        result.update(_restore_result(decision))
        if decision.detached_remaining:
            module.warn("instances detached from Auto Scaling group '%s' for surge are still running: %s; drain and terminate them "
                        "(node_group_info lists them as outdated)" % (name, ", ".join(decision.detached_remaining)))
    if module._diff:  # pylint: disable=protected-access
        result["diff"] = decision.diff()
    with reporting(result):
        if module.check_mode or not decision.changed:
            if params["wait"] and not module.check_mode and decision.state is not None and params["state"] != "held":
                _finish_wait(autoscaling, name, region, params, result)
            module.exit_json(**result)

        with aws_errors("UpdateAutoScalingGroup", resource):
            if params["state"] == "surged":
                result["steps"] = decision.apply(autoscaling, ec2)
            else:
                result["steps"] = decision.apply(autoscaling)
        if params["wait"] and params["state"] != "held":
            _finish_wait(autoscaling, name, region, params, result)
    module.exit_json(**result)


def _finish_wait(autoscaling, name, region, params, result):
    with aws_errors("DescribeAutoScalingGroups", "Auto Scaling group '%s'" % name):
        group = _wait_settled(autoscaling, name, region, params["wait_timeout"])
    result["in_service_instances"] = sorted(instance["InstanceId"] for instance in group.get("Instances") or []
                                            if instance.get("LifecycleState") == "InService")


def _surge_result(decision):
    state = decision.state
    after = decision.new_sizes or decision.current
    return {
        "rollout_id": state["rollout_id"],
        "method": state["method"],
        "resumed": decision.resumed,
        "surge": state["surge"],
        "sizes": {"before": _sizes(decision.current),
                  "after": {key: after[key] for key in ("min_size", "max_size", "desired_capacity")}},
        "suspended_processes": sorted(set(decision.suspended_now) | set(decision.to_suspend)),
        "suspended_by_rollout": list(state["suspended_processes"]),
        "detached_instances": list(decision.to_detach),
        "restoring": decision.restoring,
        "rollout_state": state,
    }


def _restore_result(decision):
    if decision.state is None:
        return {"rollout_id": None, "restored": False, "sizes": {"before": _sizes(decision.current), "after": _sizes(decision.current)},
                "resumed_processes": [], "autoscaler_moved": False, "removed_tags": [], "detached_remaining": [],
                "msg": "no rollout is recorded on Auto Scaling group '%s'; nothing to restore" % decision.name}
    sizes = decision.sizes
    return {
        "rollout_id": decision.state["rollout_id"],
        "restored": True,
        "sizes": {"before": _sizes(decision.current),
                  "after": {key: sizes[key] for key in ("min_size", "max_size", "desired_capacity")}},
        "original_sizes": {"min_size": decision.state["original_min_size"], "max_size": decision.state["original_max_size"],
                           "desired_capacity": decision.state["original_desired_capacity"]},
        "surge_owed": sizes["owed"],
        "autoscaler_moved": sizes["autoscaler_moved"],
        "autoscaler_delta": sizes["autoscaler_delta"],
        "resumed_processes": list(decision.to_resume),
        "removed_tags": sorted(decision.tags),
        "detached_remaining": list(decision.detached_remaining),
        "rollout_state": decision.state,
    }
