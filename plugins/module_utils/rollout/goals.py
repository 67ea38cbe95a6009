# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The goals of a group's steps, each one method behind one interface: what ``rollout_step`` is asked to work towards.

A goal is made once from the step's resolved settings (:func:`goal_for`) and answers, for one read of the group
(a *view*: its instances with their nodes, its sizes, what holds its drained instances), the one *command* of the next
step (:meth:`Goal.step`: what to terminate, drain, validate and wait for, under the floor, the room and the holds that
``rollout.steps`` keeps for every goal). The runner reads the group, asks the goal which instances it acts on and which
it reads the holds of, executes the command, and never branches on which goal it is; the role loops over the steps of
any goal the same way (``upgrade.yml``).

- ``replace``: the upgrade, every outdated instance replaced by an up-to-date one (``steps.next_step``);
- ``relaunch``: the up-to-date instances that never became Ready nodes within the node-ready timeout, given back so
  that the group launches others (the upgrade's rule on them: no surge paid back by them, no canary, bake or
  checkpoint, no limit, no post-drain delay: they served nothing);
- ``cancel``: the surge the state tags record given back, and every instance detached for surge, the outdated nodes
  left in place (``steps.cancel_step``); the scale down's payback at the end of an upgrade is this goal too.

Only ``replace`` is what an operator stops from outside (a pause, a maintenance window, an abort alarm) and keeps its
new nodes from the cluster-autoscaler's scale down: a cancel is what an operator does instead of a rollout, a relaunch
gives back what no workload uses.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, int_at_least
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import ANNOTATION_CORDONED, ANNOTATION_DRAINED_AT
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import failed_to_join
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.steps import (
    BLOCKED,
    CANCEL,
    DONE,
    RELAUNCH,
    REPLACE,
    RUN,
    cancel_step,
    next_step,
)


class Goal:
    """One goal; ``settings`` are the step's resolved options (:func:`goal_for`)."""

    name = None
    # stopped between steps by a pause request, a maintenance window or an abort alarm
    stoppable = False
    # its new nodes are kept from the cluster-autoscaler's scale down while it runs
    protects_new_nodes = False

    def __init__(self, settings):
        self.settings = dict(settings)

    @property
    def post_drain_delay(self):
        """Seconds a drained node waits before its instance may be terminated."""
        return self.settings.get("post_drain_delay", 0)

    def targets(self, records, fresh, outdated, now):  # pylint: disable=unused-argument
        """The instances (ids) the goal acts on, of ``records`` (``fresh``: the up-to-date ones, ``outdated``: the
        ones on an earlier launch target)."""
        return list(outdated)

    def reads(self, records, targets):  # pylint: disable=unused-argument
        """The instances (ids) whose nodes, holds and volumes the step reads."""
        return set(targets)

    def step(self, view, room=None):
        """The command of the next step for one read of the group (``view``: ``instances``, ``outdated_ids``,
        ``original_size``, ``max_unavailable``, ``surge_owed``, ``desired_capacity``, ``now``, ``holds``, ``pinned``, as
        :func:`rollout.steps.next_step` reads them); ``room``: every
        Node and Pod of the cluster, given once the first answer said ``needs_room``."""
        raise NotImplementedError

    def _common(self):
        return {"skip": list(self.settings.get("skip") or ()), "taint_key": self.settings.get("taint_key")}


class Replace(Goal):
    """The upgrade: each outdated instance drained and replaced, a canary of one first, the bake time and checkpoints
    between drains, only the ``limit`` instances when given (the serial playbook's batch)."""

    name = REPLACE
    stoppable = True
    protects_new_nodes = True

    def step(self, view, room=None):
        return next_step(view["instances"], view["outdated_ids"], view["original_size"], view["max_unavailable"],
                         view["surge_owed"], view["desired_capacity"], view["now"], post_drain_delay=self.post_drain_delay,
                         canary=self.settings.get("canary", True), holds=view.get("holds"), pinned=view.get("pinned"),
                         room=room, limit=self.settings.get("limit"), standby=self.settings.get("standby", "ignore"),
                         bake_seconds=self.settings.get("bake_seconds", 0),
                         checkpoints=self.settings.get("checkpoints") or (), **self._common())


class Relaunch(Goal):
    """The up-to-date instances that never became Ready nodes within ``join_timeout`` seconds, given back for others."""

    name = RELAUNCH

    @property
    def post_drain_delay(self):
        # a node that never became Ready served no load balancer
        return 0

    def targets(self, records, fresh, outdated, now):
        return [entry["instance_id"] for entry in failed_to_join(records, fresh, now, self.settings.get("join_timeout", 600))]

    def step(self, view, room=None):
        # no surge is paid back by them: the group launches their replacements
        return next_step(view["instances"], view["outdated_ids"], view["original_size"], view["max_unavailable"], 0,
                         view["desired_capacity"], view["now"], post_drain_delay=0, canary=False, holds=view.get("holds"), pinned=view.get("pinned"),
                         room=room, standby=self.settings.get("standby", "ignore"), **self._common())


class Cancel(Goal):
    """The surge given back, the outdated nodes left in place; any instance of the group may be what is given back."""

    name = CANCEL

    def reads(self, records, targets):
        return set(record["instance_id"] for record in records)

    def step(self, view, room=None):
        return cancel_step(view["instances"], view["outdated_ids"], view["original_size"], view["max_unavailable"],
                           view["surge_owed"], view["desired_capacity"], view["now"], post_drain_delay=self.post_drain_delay,
                           holds=view.get("holds"), pinned=view.get("pinned"), room=room, **self._common())


GOALS = {goal.name: goal for goal in (Replace, Cancel, Relaunch)}


def goal_for(name, settings):
    """The goal ``name`` made from the step's resolved ``settings``: ``post_drain_delay`` (seconds), ``canary``,
    ``skip`` (node names), ``taint_key``, ``limit`` (instance ids or None), ``standby``, ``bake_seconds``,
    ``checkpoints`` (``[{"percent", "wait_seconds"}]``), ``join_timeout`` (seconds)."""
    if name not in GOALS:
        raise PlanError("goal: %r is not allowed; use one of %s" % (name, ", ".join(GOALS)))
    return GOALS[name](settings)


# the plan's model starts at this moment; only the differences of its times matter
_MODEL_START = datetime(2000, 1, 1, tzinfo=timezone.utc)
_ZONES = "abc"


def _model_instance(instance_id, number, now):
    return {"instance_id": instance_id, "az": _ZONES[number % len(_ZONES)], "lifecycle_state": "InService",
            "launch_time": _stamp(now),
            "node": {"name": "node-" + instance_id, "ready": True, "schedulable": True, "taints": [], "annotations": {},
                     "ready_since": _stamp(now)}}


def _stamp(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def planned_waves(goal, outdated_count, max_unavailable, surge, up_to_date_count=0, original_size=None):
    """How many outdated nodes each step of ``goal`` drains on the plan's model of a group (:func:`planned_steps`'s
    ``waves``)."""
    return planned_steps(goal, outdated_count, max_unavailable, surge, up_to_date_count, original_size)["waves"]


def planned_steps(goal, outdated_count, max_unavailable, surge, up_to_date_count=0, original_size=None):
    """``{"waves", "fewest_ready"}``: how many outdated nodes each step of ``goal`` drains on the plan's model of a
    group, the steps that drain none left out, and the fewest Ready schedulable nodes the model's group has between two
    steps (a step's drains are out; what it terminates is replaced by the next step's read, and while it boots the group
    has no more). The engine's own method (:meth:`Goal.step`) run on ``outdated_count`` Ready outdated nodes,
    ``up_to_date_count`` up-to-date ones and ``surge`` more launched and Ready before the first drain, where every
    drain, termination and boot of a step ends before the next (the post-drain delay and the bake time only cost time,
    the model's waits end at once; a checkpoint's cap on a wave stays). Where the model's group is stuck (the engine
    would answer ``blocked``), what is left is one more step. ``original_size``: the group's desired capacity before the
    rollout, which the floor and the checkpoints are counted from (default: the outdated and up-to-date nodes).

    Each step reads every instance of the model, as the engine reads the group: the model costs the square of the
    group's size over ``max_unavailable``, about a second for 300 nodes one at a time."""
    outdated_count = int_at_least(outdated_count, "outdated_count", 0)
    up_to_date_count = int_at_least(up_to_date_count, "up_to_date_count", 0)
    owed = int_at_least(surge, "surge", 0)
    model = type(goal)(dict(goal.settings, post_drain_delay=0, bake_seconds=0, limit=None))
    now = _MODEL_START
    made = itertools.count()
    outdated = ["outdated-%d" % next(made) for _index in range(outdated_count)]
    instances = [_model_instance(instance_id, number, now) for number, instance_id in enumerate(outdated)]
    instances += [_model_instance("new-%d" % number, number, now) for number in (next(made) for _index in range(up_to_date_count + owed))]
    original = outdated_count + up_to_date_count if original_size is None else int_at_least(original_size, "original_size", 0)
    desired = original + owed
    waves = []
    fewest = len(instances)
    # each node is drained once, and a step that drains none is followed by one that does
    for _attempt in range(4 * outdated_count + 8):
        # what the group launches (replacements, or up to a desired capacity above its instances) is Ready at once
        instances += [_model_instance("new-%d" % number, number, now)
                      for number in (next(made) for _index in range(desired - len(instances)))]
        view = {"instances": instances, "outdated_ids": outdated, "original_size": original, "max_unavailable": max_unavailable,
                "surge_owed": owed, "desired_capacity": desired, "now": now, "holds": None, "pinned": {}}
        # the room of the receiving nodes is not modelled: a step that would ask for it drains what the floor lets go
        command = model.step(view)
        if command["action"] in (DONE, BLOCKED):
            break
        now += timedelta(seconds=1 + (command["wait_seconds"] or 0))
        if command["action"] != RUN:
            continue
        gone = set(command["terminate"])
        desired -= command["decrement"]
        owed -= command["decrement"]
        instances = [instance for instance in instances if instance["instance_id"] not in gone]
        draining = set(entry["instance_id"] for entry in command["drain"])
        for instance in instances:
            if instance["instance_id"] in draining:
                instance["node"].update(schedulable=False, annotations={ANNOTATION_CORDONED: "true", ANNOTATION_DRAINED_AT: _stamp(now)})
        if draining:
            waves.append(len(draining))
            fewest = min(fewest, sum(1 for instance in instances if instance["node"]["schedulable"]))
    # a model that cannot go on (the engine would say blocked, and the run says why when it gets there) plans what is
    # left as one more step: the plan is a forecast, never what stops a rollout
    left = outdated_count - sum(waves)
    return {"waves": waves + [left] if left > 0 else waves, "fewest_ready": fewest}
