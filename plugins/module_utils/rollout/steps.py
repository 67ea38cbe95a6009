# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The next step of a group's rollout, decided from the group as it is now. Pure.

The role repeats: read the group (``rollout_step``), do what :func:`next_step` says (terminate, validate, drain),
until it says ``done``. Every fact the decision needs is on the group or its nodes, so a run that was killed
resumes where the last one stopped: a node we cordoned and did not finish draining is drained again; a node
``node_drain`` finished carries ``nodeops.rollout/drained-at`` and is terminated once the post-drain delay has
passed since then.

The surge is a pipeline with the semantics of a Deployment's ``maxSurge``/``maxUnavailable`` (and kops's):

- **the capacity floor**: the group's Ready, schedulable nodes never drop below ``N - max_unavailable`` by our
  hand, N being the group's original desired capacity. So while surge nodes are Ready and unused, more outdated
  nodes than ``max_unavailable`` are drained at once; a node that is already out (not Ready, cordoned) is
  drained without using the budget;
- **at most N + surge instances**: desired capacity is raised once, by the surge, and never again. A termination
  keeps desired (the group launches a replacement at once) unless the surge still owed covers every outdated
  instance left after it: only the last ``surge owed`` terminations decrement, so the surge stays in service,
  lending its capacity to every wave, until the end;
- terminations never wait for replacements: replacements boot while other nodes drain, and a node's post-drain
  delay runs while other nodes drain;
- a canary of one: while no up-to-date node is Ready (nothing surged, nothing replaced yet), one outdated node
  at a time, until its replacement is Ready;
- a drained instance that something still holds - a target group of the group that lists it (``rollout.targets``),
  a volume still attached to its node (``drain.volumes``) - is not terminated before it is let go, or the hold's
  timeout has passed since its drain ended;
- a serving node with a volume pinned to a zone (node affinity) where no up-to-date node of the group is Ready yet is
  drained after the others: its pod could not start again anywhere. When nothing else is left to do, it is drained
  anyway (its pod waits for the replacement in that zone) and the step says so;
- holds (Instance Refresh's BakeTime and CheckpointPercentages, AKS's node soak): with a bake time, once outdated
  nodes have been taken out, no further node is drained - and the rollout does not end - until nothing is in flight
  (no drained node left to terminate, no replacement booting) and the newest Ready up-to-date node (or the newest
  drain, while its node is still listed) has been so for the bake time. A checkpoint at X % of the group caps the
  drains so that no more than X % of the original size is taken out until the same holds for the checkpoint's wait.
  Nodes already out of service (an interrupted drain) are still drained and drained nodes still terminated: a hold
  only stops new drains.

Instances are in ``clients.aws.instance_record``'s shape with ``node`` joined (``node_health.node_summary`` with
``INSTANCE_NODE_FIELDS``).
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.batches import next_batch
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import ANNOTATION_DRAINED_AT
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import group_taints, keeping_pods_off
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import (
    check_standby_policy,
    instance_in_standby,
    instance_is_active,
    instance_is_detached,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, ceil_percent, int_at_least, parse_time
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.room import nodes_with_room

# Post-drain delays that end this close to the first one are waited for together: one termination call, not several.
COALESCE_SECONDS = 5

RUN, WAIT, DONE, BLOCKED = "run", "wait", "done", "blocked"

# What a rollout_step is for, each goal one class of rollout.goals: replace the outdated instances (the upgrade, the
# rollback), cancel the rollout (give its surge back, leave the outdated nodes in place), or relaunch the up-to-date
# instances that never became Ready nodes.
REPLACE, CANCEL, RELAUNCH = "replace", "cancel", "relaunch"

# The order in which a cancel gives instances back: those that hold no pods first (never a node, still launching, a
# node that is not Ready), then those drained already, then the nodes it drains at no cost to the floor (cordoned, a
# drain interrupted), then serving nodes, outdated ones first (their pods move once, to up-to-date nodes).
_NO_NODE, _NOT_READY, _DRAINED, _DRAINING, _CORDONED, _OUTDATED, _UP_TO_DATE = range(7)

# Where a termination lifecycle hook holds an instance the group is terminating, until its owner completes the action or
# its heartbeat timeout passes: leaving, no capacity, still running.
HELD_STATE = "Terminating:Wait"


def _node(instance):
    node = instance.get("node")
    return node if isinstance(node, dict) else None


def _leaving(instance):
    return (instance.get("lifecycle_state") or "").startswith("Terminat") or instance.get("ec2_state") in ("shutting-down", "terminated")


def _serving(node, tolerated=(), own_keys=()):
    """A node that takes pods: Ready (the node controller's not-ready taints count as not Ready), not cordoned, and
    without a NoSchedule or NoExecute taint that keeps the pods to move off it (``node_health.keeping_pods_off``: a
    startup taint not lifted yet, an operator's ``dedicated`` taint; not the rollout's own, nor one of ``tolerated``,
    the group's own taints)."""
    return (node is not None and bool(node.get("ready")) and bool(node.get("schedulable"))
            and not keeping_pods_off(node.get("taints"), tolerated, own_keys))


def taking_pods(instances, taint_key=None):
    """The nodes of ``instances`` (the group's, leaving ones aside) that can take pods now, by :func:`_serving`'s rule,
    sorted: what a message that says the group keeps serving counts."""
    return capacity_view(instances, taint_key)["taking_pods"]


def capacity_view(instances, taint_key=None):
    """The group's capacity as the floor counts it: ``{"taking_pods": [node names], "not_counted": [{"node", "why"}],
    "tolerated_taints"}``; ``why`` is ``not Ready``, ``cordoned`` or ``tainted <key=value:Effect, ...>`` (a taint that
    keeps the pods to move off the node, :func:`_serving`). Instances leaving the group, or with no node, are neither."""
    tolerated = tolerated_taints(instances)
    own_keys = (taint_key,) if taint_key else ()
    able, not_counted = [], []
    for instance in instances:
        node = _node(instance)
        if node is None or _leaving(instance):
            continue
        if _serving(node, tolerated, own_keys):
            able.append(node["name"])
        elif not node.get("ready"):
            not_counted.append({"node": node["name"], "why": "not Ready"})
        elif not node.get("schedulable"):
            not_counted.append({"node": node["name"], "why": "cordoned"})
        else:
            not_counted.append({"node": node["name"], "why": "tainted %s" % ", ".join(
                keeping_pods_off(node.get("taints"), tolerated, own_keys))})
    return {"taking_pods": sorted(able), "not_counted": sorted(not_counted, key=lambda entry: entry["node"]),
            "tolerated_taints": tolerated}


def tolerated_taints(instances):
    """The group's own taints (``node_health.group_taints`` over the nodes of ``instances``): those every node of the
    group carries, which its pods tolerate; any other NoSchedule/NoExecute taint keeps a node from counting."""
    return group_taints([_node(instance) for instance in instances if _node(instance) is not None])


def drained_at(node):
    """When node_drain finished draining the node (an aware datetime), or None. A node uncordoned since is not
    drained any more: pods may have landed on it."""
    if node is None or node.get("schedulable"):
        return None
    value = (node.get("annotations") or {}).get(ANNOTATION_DRAINED_AT)
    if not value:
        return None
    try:
        return parse_time(value, "annotation %s of node %s" % (ANNOTATION_DRAINED_AT, node.get("name")))
    except PlanError:
        return None  # not ours to trust: drain it again, which is harmless


def _moment(value, what):
    if not value:
        return None
    try:
        return parse_time(value, what)
    except PlanError:
        return None


def _newest(instances, up_to_date_ids):
    """The latest of: an up-to-date node turning Ready, a node of the group (leaving ones included) being drained."""
    wanted = set(up_to_date_ids)
    moments = []
    for instance in instances:
        node = _node(instance)
        if node is None:
            continue
        if instance["instance_id"] in wanted and node.get("ready") and node.get("schedulable"):
            moments.append(_moment(node.get("ready_since"), "Ready condition of node %s" % node.get("name")))
        moments.append(drained_at(node))
    moments = [moment for moment in moments if moment is not None]
    return max(moments) if moments else None


def checkpoint_counts(checkpoints, original_size):
    """``[{"percent", "wait_seconds"}]`` -> ``{count: wait_seconds}``: each checkpoint as the number of the group's
    original size it stands for (rounded up, at least 1), the longest wait where two fall on one count."""
    counts = {}
    for checkpoint in checkpoints or ():
        count = max(1, ceil_percent(int(checkpoint["percent"]), original_size))
        counts[count] = max(counts.get(count, 0), int(checkpoint["wait_seconds"]))
    return counts


def _hold(state, taken, counts, bake, in_flight, newest, now):
    """The hold before the next drain (or before the end): None, or ``{"reason", "seconds"}`` (seconds None while
    something is still in flight: the hold starts once it has landed)."""
    waits = []
    if bake and taken > 0:
        waits.append(("the bake time (%ds)" % bake, bake))
    if taken in counts:
        waits.append(("the checkpoint at %d of %d nodes (%ds)" % (taken, state["original_size"], counts[taken]), counts[taken]))
    if not waits:
        return None
    reason = " and ".join(text for text, _seconds in waits)
    if in_flight:
        return {"reason": reason, "seconds": None}
    left = 0 if newest is None else (newest - now).total_seconds() + max(seconds for _text, seconds in waits)
    return {"reason": reason, "seconds": left} if left > 0 else None


def _entry(instance, member=True):
    node = _node(instance)
    return {"instance_id": instance["instance_id"], "az": instance.get("az"), "node": node["name"] if node else None,
            "launch_time": instance.get("launch_time"), "member": member}


def classify(instances, outdated_ids, now, post_drain_delay, skip=(), holds=None, limit=None, standby="ignore",
             taint_key=None):
    """Sort the group's instances by where they are in the rollout.

    Returns ``{"serving", "out", "drained", "delayed", "held", "no_node", "skipped", "outside", "standby"}``
    (outdated instances: serving pods and taking new ones; out of service but not drained (not Ready, cordoned, a
    drain interrupted); drained and past the post-drain delay; drained and still in the delay, with ``until`` seconds
    from now; drained, past the delay, but still held (``holds``: instance id -> holds, each ``{"kind", "name",
    "state", "timeout"}``), with ``until`` seconds left of the longest hold's timeout counted from the end of its
    drain; never a node; named in ``skip``; not in ``limit`` (instance ids; None: every outdated instance is the
    rollout's) whatever their state; in Standby while ``standby`` is ``wait``; a drained entry held until its timeout
    passed carries ``held`` and ``timed_out``), ``"outdated_left"`` (every outdated instance left),
    ``"member_outdated_left"`` (those that count toward the desired capacity: neither detached nor in Standby),
    ``"capacity"`` (serving nodes of the group, outdated or not; an instance in Standby never counts), ``"hooked"``
    (instances leaving the group that a termination lifecycle hook holds in ``Terminating:Wait``; never capacity),
    ``"up_to_date_ready"`` (instance ids), ``"ready_zones"`` (their zones), ``"booting"`` (instances still launching,
    and up-to-date instances without a Ready node yet; a Ready node cordoned by someone else is not) and
    ``"members"`` (active members). Entries carry ``member``: whether terminating the instance can decrement desired.

    An outdated instance in Standby is in ``outdated_ids`` only when the policy replaces it (``terminate``: drained
    and terminated like a detached instance, without costing capacity; ``wait``: waited for until it is back in service).

    **Capacity is what can take the pods** (:func:`_serving`): a node with a startup taint its agent has not lifted is
    still booting (a new node) or out of service (an outdated one, drained without costing the floor); the group's own
    taints (``"tolerated"``, :func:`tolerated_taints`) do not count against a node; ``taint_key``: the rollout's own
    taint when not the default (it never does).
    """
    wanted = set(outdated_ids)
    skip = set(skip or ())
    limit = None if limit is None else set(limit)
    holds = holds or {}
    standby = check_standby_policy(standby)
    sorted_ = {"serving": [], "out": [], "drained": [], "delayed": [], "held": [], "no_node": [], "skipped": [],
               "outside": [], "standby": []}
    capacity = members = 0
    up_to_date_ready, booting = [], []
    outdated_left = member_outdated_left = 0
    hooked = []
    tolerated = tolerated_taints(instances)
    own_keys = (taint_key,) if taint_key else ()

    def serving(node):
        return _serving(node, tolerated, own_keys)

    for instance in instances:
        if _leaving(instance):
            if instance.get("lifecycle_state") == HELD_STATE:
                hooked.append(instance["instance_id"])
            continue
        node = _node(instance)
        detached = instance_is_detached(instance)
        in_standby = instance_in_standby(instance)
        if in_standby and instance["instance_id"] not in wanted:
            continue  # left alone, or up to date: neither capacity nor work
        if not instance_is_active(instance) and not detached and not in_standby:
            continue
        outside = detached or in_standby
        if not outside:
            members += 1
        if serving(node) and not in_standby:
            capacity += 1
        if instance["instance_id"] not in wanted:
            if serving(node):
                up_to_date_ready.append(instance["instance_id"])
            elif node is None or not node.get("ready") or node.get("schedulable"):
                # not Ready yet, or Ready with a taint that keeps the pods off it (a startup taint not lifted yet)
                booting.append(instance["instance_id"])
            continue
        outdated_left += 1
        member_outdated_left += 0 if outside else 1
        entry = _entry(instance, member=not outside)
        ended = drained_at(node)
        if limit is not None and instance["instance_id"] not in limit:
            # another run's to replace: not drained, not terminated, not waited for, whether it has a node or not
            sorted_["outside"].append(entry)
        elif in_standby and standby == "wait":
            sorted_["standby"].append(entry)
        elif node is None and (instance.get("lifecycle_state") == "InService" or outside):
            sorted_["no_node"].append(entry)
        elif node is None:
            # still launching: nothing to drain yet, and it may still become a node; waited for like a replacement
            booting.append(instance["instance_id"])
        elif node["name"] in skip:
            sorted_["skipped"].append(entry)
        elif ended is not None:
            remaining = (ended - now).total_seconds() + post_drain_delay
            held = holds.get(instance["instance_id"])
            if remaining > 0:
                entry["until"] = remaining
                sorted_["delayed"].append(entry)
            elif held:
                entry["held"] = held
                entry["until"] = (ended - now).total_seconds() + max(hold["timeout"] for hold in held)
                entry["timed_out"] = entry["until"] <= 0
                sorted_["drained" if entry["timed_out"] else "held"].append(entry)
            else:
                sorted_["drained"].append(entry)
        elif serving(node) and not in_standby:
            sorted_["serving"].append(entry)
        else:
            sorted_["out"].append(entry)
    sorted_.update({"outdated_left": outdated_left, "member_outdated_left": member_outdated_left, "capacity": capacity,
                    "members": members, "up_to_date_ready": up_to_date_ready, "booting": booting, "hooked": hooked,
                    "tolerated": tolerated,
                    "ready_zones": sorted(set(instance.get("az") for instance in instances
                                              if instance["instance_id"] in set(up_to_date_ready)))})
    return sorted_


def _waiting_text(held):
    """What the held instances wait for, by kind of hold."""
    kinds = {}
    for entry in held:
        for kind in sorted(set(hold["kind"] for hold in entry["held"])):
            kinds[kind] = kinds.get(kind, 0) + 1
    words = {"target_group": "to leave their target groups", "volume": "to have their volumes detached"}
    return ["%d drained instance(s) %s" % (count, words.get(kind, "to be let go by %s" % kind)) for kind, count in sorted(kinds.items())]


def capacity_floor(original_size, max_unavailable):
    """The Ready schedulable nodes a group keeps while it rolls: its original size less ``max_unavailable`` (the
    resolved count), never below none."""
    return max(0, original_size - max_unavailable)


def _read_group(instances, outdated_ids, original_size, max_unavailable, surge_owed, desired_capacity, now, post_drain_delay,
                **classified):
    """The opening of every goal's step (:func:`next_step`, :func:`cancel_step`): the sizes checked, the instances
    classified (:func:`classify`, with ``classified``'s options), and what the capacity floor lets go.
    ``(state, (original_size, max_unavailable, surge_owed, floor, budget, pending_launches))``: ``floor`` the Ready
    schedulable nodes the group keeps (``original_size - max_unavailable``), ``budget`` how many more it has,
    ``pending_launches`` the instances the group has yet to launch (desired above its members)."""
    original_size = int_at_least(original_size, "original_size", 0)
    # max_unavailable is the group's resolved count (rollout.sizes.max_unavailable_count), never text here
    surge_owed = int_at_least(surge_owed, "surge_owed", 0)
    desired_capacity = int_at_least(desired_capacity, "desired_capacity", 0)
    delay = int_at_least(post_drain_delay, "post_drain_delay", 0)
    state = classify(instances, outdated_ids, now, delay, **classified)
    state["original_size"] = original_size
    floor = capacity_floor(original_size, max_unavailable)
    return state, (original_size, max_unavailable, surge_owed, floor, state["capacity"] - floor,
                   max(0, desired_capacity - state["members"]))


def _without_zone(serving, pinned, ready_zones):
    """The serving nodes with a volume pinned to a zone where the group has no Ready up-to-date node:
    ``{node: [zones]}``."""
    found = {}
    for entry in serving:
        missing = [zone for zone in pinned.get(entry["node"]) or [] if zone not in ready_zones]
        if missing:
            found[entry["node"]] = missing
    return found


def decrement_for(terminating, outdated_left, surge_owed):
    """How many of ``terminating`` outdated instances decrement desired: only as many as the surge still owed
    exceeds the outdated instances that stay after them, so the surge serves until the last terminations."""
    return max(0, min(terminating, surge_owed - (outdated_left - terminating)))


def _waits(step, state, held=0):
    """Fill in what the step waits for (post-drain delays, holds, booting instances, lifecycle hooks, Standby) and
    make it a ``wait`` when there is any; True then."""
    timed = state["delayed"] + state["held"]
    if timed:
        first = min(entry["until"] for entry in timed)
        soonest = max(entry["until"] for entry in timed if entry["until"] <= first + COALESCE_SECONDS)
        step["wait_seconds"] = soonest if step["wait_seconds"] is None else min(step["wait_seconds"], soonest)
    if state["delayed"]:
        step["waiting_for"].append("the post-drain delay of %d node(s)" % len(state["delayed"]))
    step["waiting_for"].extend(_waiting_text(state["held"]))
    if step["booting"]:
        step["waiting_for"].append("%d new instance(s) to become Ready nodes%s" % (
            step["booting"], ", for room for the pods of %d outdated node(s)" % held if held else ""))
    if step["hooked"]:
        step["waiting_for"].append("%d terminated instance(s) held in %s by a termination lifecycle hook: %s"
                                   % (len(step["hooked"]), HELD_STATE, ", ".join(step["hooked"])))
    if step["standby"]:
        step["waiting_for"].append("%d outdated instance(s) in Standby to return to service (ExitStandby): %s; or set standby_instances "
                                   "to terminate or ignore" % (len(step["standby"]), ", ".join(step["standby"])))
    if step.get("leaving"):
        step["waiting_for"].append("%d instance(s) given back to leave the group" % len(step["leaving"]))
    if step["waiting_for"]:
        step["action"] = WAIT
        return True
    return False


def next_step(instances, outdated_ids, original_size, max_unavailable, surge_owed, desired_capacity, now,
              post_drain_delay=0, canary=True, skip=(), holds=None, pinned=None, room=None, limit=None, standby="ignore",
              bake_seconds=0, checkpoints=(), taint_key=None):
    """What the rollout of one group does next.

    ``instances``: the group's instances with their nodes; ``outdated_ids``: the ones to replace;
    ``original_size``: N, the desired capacity before the rollout; ``max_unavailable``: the resolved count;
    ``surge_owed``: the surge not paid back yet (``rollout.sizes.surge_owed_now``); ``desired_capacity``: the
    group's now; ``now``: an aware datetime; ``post_drain_delay``: seconds; ``canary``: one node first while
    nothing is up to date; ``skip``: node names a drain gave up on in this run (left cordoned, not retried);
    ``holds``: for drained instances, what still holds them (``{"kind", "name", "state", "timeout"}`` each:
    ``rollout.targets.holding``, ``drain.volumes.volume_holds``); ``pinned``: node name -> the zones its attached
    volumes are pinned to (``drain.volumes.pinned_zones``); ``room``: ``{"nodes", "pods"}``, every Node and Pod of the
    cluster (API JSON), or None when not read; ``limit``: the outdated instances (ids) this rollout may replace, every
    other outdated instance left as it is (the serial playbook's batch), or None for all of them; ``standby``: what is
    done with outdated instances in Standby (``rollout.outdated.STANDBY_POLICIES``); ``bake_seconds``: the bake time;
    ``checkpoints``: ``[{"percent", "wait_seconds"}]`` of the original size.

    **Room.** Of the outdated nodes the floor lets go, only as many are drained as the receiving nodes have room for
    (``rollout.room.nodes_with_room``): pods that fit nowhere new would land on an outdated node and move twice, or
    wait Pending. When nothing on its way adds room (no instance booting, no replacement about to launch), one node
    goes anyway, so a full cluster is rolled one node at a time instead of never. A step that would drain serving
    nodes but was given no ``room`` says so with ``needs_room``: read the pods and decide again.

    Returns ``{"action", "terminate", "decrement", "drain", "validate", "tolerated_taints", "wait_seconds", "waiting_for", "message",
    "outdated_left", "capacity", "floor", "budget", "booting", "booting_ids", "delayed", "held", "hold_timed_out",
    "deferred", "drained_without_zone", "skipped", "outside", "needs_room", "held_for_room", "standby", "hooked",
    "taken", "hold"}``; ``outside``: the outdated instances ``limit`` leaves out; ``held_for_room``: outdated nodes the
    floor let go but the room did not; ``held`` lists the drained instances something still holds (``instance_id``,
    ``node``, ``held``, ``until``), ``hold_timed_out`` those of ``terminate`` terminated while still held, their
    timeout passed; ``deferred`` the serving nodes not drained yet because a volume of theirs is pinned to a zone
    without a Ready up-to-date node (``node``, ``zones``), ``drained_without_zone`` those drained all the same because
    nothing else was left to do; ``taken`` how many of the original size are out of the outdated nodes' service or
    replaced; ``hold`` a bake or checkpoint keeping new drains back, ``{"reason", "seconds"}``, or None. ``action`` is
    ``run`` (do
    ``terminate`` (instance ids, members first; the first ``decrement`` of them decrementing desired; an instance in
    Standby or detached never does), then validate the
    ``validate`` instances and drain the ``drain`` nodes), ``wait`` (``wait_seconds`` at most, for
    ``waiting_for``), ``done`` (nothing outdated is left but ``skipped`` nodes and ``outside`` instances, every
    replacement is a Ready node, and no instance is ``hooked``: held in ``Terminating:Wait`` by a lifecycle hook), or
    ``blocked`` (nothing in flight
    can lift the group back over its floor; ``message`` says why).
    """
    state, (original_size, max_unavailable, surge_owed, floor, budget, pending_launches) = _read_group(
        instances, outdated_ids, original_size, max_unavailable, surge_owed, desired_capacity, now, post_drain_delay,
        skip=skip, holds=holds, limit=limit, standby=standby, taint_key=taint_key)
    bake = int_at_least(bake_seconds, "bake_seconds", 0)
    counts = checkpoint_counts(checkpoints, original_size)

    ending = sorted(state["drained"] + state["no_node"], key=lambda entry: not entry["member"])
    terminate = [entry["instance_id"] for entry in ending]
    decrement = decrement_for(sum(1 for entry in ending if entry["member"]), state["member_outdated_left"], surge_owed)

    drain = list(state["out"])  # out of service already: draining them costs no capacity
    in_flight = (state["out"] or state["delayed"] or state["held"] or state["drained"] or state["booting"]
                 or pending_launches)
    homeless = _without_zone(state["serving"], pinned or {}, state["ready_zones"])
    candidates = [entry for entry in state["serving"] if entry["node"] not in homeless]
    forced = []
    if not candidates and homeless and not in_flight:
        # nothing else can bring a Ready node to those zones: drain them, their pods wait for the replacements
        candidates, forced = state["serving"], sorted(homeless)
    if canary and not state["up_to_date_ready"]:
        allowed = 0 if in_flight else 1
    else:
        allowed = len(candidates)
    take = max(0, min(budget, allowed, len(candidates)))
    taken = max(0, original_size - len(state["serving"]) - len(state["outside"]))
    # a checkpoint ahead caps the drains at it
    ahead = [count for count in counts if count > taken]
    if ahead:
        take = min(take, min(ahead) - taken)
    landing = bool(terminate or state["out"] or state["delayed"] or state["held"] or state["booting"] or pending_launches)
    newest = _newest(instances, state["up_to_date_ready"]) if (bake or counts) else None
    hold = _hold(state, taken, counts, bake, landing, newest, now) if candidates else None
    if hold is not None:
        take = 0
    held = 0
    if take and room is not None:
        ordered = next_batch(candidates, 1, take)
        outdated_nodes = [entry["node"] for key in ("serving", "out", "drained", "delayed", "held", "skipped", "outside",
                                                    "standby")
                          for entry in state[key] if entry["node"]]
        fits = nodes_with_room([entry["node"] for entry in ordered], room["nodes"], room["pods"],
                               excluded=outdated_nodes, draining=[entry["node"] for entry in state["out"]])
        adds_room = (state["booting"] or pending_launches or state["delayed"] or state["held"]
                     or sum(1 for entry in ending if entry["member"]) > decrement)  # replacements launch
        held = take - (fits if fits or adds_room else 1)
        take -= held
    if take:
        drain.extend(next_batch(candidates, 1, take))
    drained_names = set(entry["node"] for entry in drain)
    drain = [{key: entry[key] for key in ("instance_id", "az", "node")} for entry in drain]

    step = {"terminate": terminate, "decrement": decrement, "drain": drain,
            "validate": list(state["up_to_date_ready"]) if drain else [],
            "tolerated_taints": state["tolerated"],
            "wait_seconds": None, "waiting_for": [], "message": "",
            "outdated_left": state["outdated_left"], "capacity": state["capacity"], "floor": floor,
            "budget": budget, "booting": len(state["booting"]) + pending_launches,
            "booting_ids": list(state["booting"]),
            "delayed": [entry["node"] for entry in state["delayed"]],
            "held": [{key: entry[key] for key in ("instance_id", "node", "held", "until")} for entry in state["held"]],
            "hold_timed_out": [{key: entry[key] for key in ("instance_id", "node", "held")}
                               for entry in state["drained"] if entry.get("timed_out")],
            "deferred": [{"node": name, "zones": homeless[name]} for name in sorted(homeless) if name not in drained_names],
            "drained_without_zone": [{"node": name, "zones": homeless[name]} for name in forced if name in drained_names],
            "skipped": [entry["node"] for entry in state["skipped"]],
            "outside": [entry["instance_id"] for entry in state["outside"]],
            "needs_room": bool(take) and room is None, "held_for_room": held,
            "standby": [entry["instance_id"] for entry in state["standby"]],
            "hooked": list(state["hooked"]),
            "taken": taken, "hold": hold}
    if terminate or drain:
        step["action"] = RUN
        return step
    if state["outdated_left"] == len(state["skipped"]) + len(state["outside"]) and not step["booting"] and not state["delayed"] \
            and not state["held"] and not state["hooked"]:
        # the last nodes bake too (and a checkpoint at 100 % waits) before the rollout ends
        step["hold"] = _hold(state, taken, counts, bake, False, newest, now)
        if step["hold"] is None:
            step["action"] = DONE
            return step
    if step["hold"] is not None and step["hold"]["seconds"] is not None:
        step["wait_seconds"] = step["hold"]["seconds"]
        step["waiting_for"].append(step["hold"]["reason"])
    if _waits(step, state, held):
        return step
    step["action"] = BLOCKED
    step["message"] = (
        "%d outdated node(s) are left to drain, but the group has %d Ready schedulable node(s), not above its floor of %d "
        "(original size %d - max_unavailable %d), and no new instance is on its way: draining one more would leave the "
        "pods less room than promised. Bring the group's nodes back to Ready (or raise max_unavailable) and run again"
        % (len(candidates), state["capacity"], floor, original_size, max_unavailable))
    return step


def _cancel_order(state, instances, outdated_ids, pinned):
    """Every instance a cancel may give back, ``(rank, entry)`` in the order it gives them back; skipped nodes are
    not among them. A serving node with a volume pinned to a zone where no other serving node is goes after the
    others of its rank."""
    by_id = dict((instance["instance_id"], instance) for instance in instances)
    ranked = [(_NO_NODE, entry) for entry in state["no_node"]]
    ranked.extend((_NO_NODE, _entry(by_id[instance_id], member=not instance_is_detached(by_id[instance_id])))
                  for instance_id in state["booting"])
    ranked.extend((_NOT_READY if not _node(by_id[entry["instance_id"]]).get("ready") else _CORDONED, entry)
                  for entry in state["out"])
    ranked.extend((_DRAINED, entry) for entry in state["drained"])
    ranked.extend((_DRAINING, entry) for entry in state["delayed"] + state["held"])
    outdated = set(outdated_ids)
    zones = {}
    for entry in state["serving"]:
        zones.setdefault(entry["az"], set()).add(entry["node"])
    for rank, wanted in ((_OUTDATED, True), (_UP_TO_DATE, False)):
        serving = [entry for entry in state["serving"] if (entry["instance_id"] in outdated) == wanted]
        homeless = set(entry["node"] for entry in serving
                       if any(not zones.get(zone, set()) - set([entry["node"]]) for zone in (pinned or {}).get(entry["node"]) or []))
        for group in ([entry for entry in serving if entry["node"] not in homeless],
                      [entry for entry in serving if entry["node"] in homeless]):
            ranked.extend((rank, entry) for entry in (next_batch(group, 1, len(group)) if group else []))

    def priority(item):
        # a node that is not Ready goes first whether or not it is drained yet: the cancel's own drain of it must not
        # send it behind a node the rollout drained, which a later step would then give back in its place
        rank, entry = item
        not_ready = rank in (_DRAINED, _DRAINING) and not (_node(by_id[entry["instance_id"]]) or {}).get("ready", True)
        return (_NOT_READY if not_ready else rank, rank)

    return sorted(ranked, key=priority)


def _cancel_choice(state, instances, outdated_ids, owed, pinned=None):
    """What a cancel gives back, ``(rank, entry)`` each: the first ``owed`` members in :func:`_cancel_order`, then every
    instance detached for surge (outside the group, so never left running)."""
    ranked = _cancel_order(state, instances, outdated_ids, pinned)
    return [item for item in ranked if item[1]["member"]][:owed] + [item for item in ranked if not item[1]["member"]]


def cancel_payback(instances, outdated_ids, owed, now):
    """What cancelling the rollout would give back, as :func:`cancel_step` picks it (the floor aside): ``[{"instance_id",
    "az", "node", "drained"}]`` (``node`` None for an instance that is no node; ``drained``: node_drain finished it)."""
    owed = int_at_least(owed, "owed", 0)
    live = [instance["instance_id"] for instance in instances if not instance_in_standby(instance)]
    state = classify(instances, live, now, 0)
    return [dict({key: entry[key] for key in ("instance_id", "az", "node")}, drained=rank in (_DRAINED, _DRAINING))
            for rank, entry in _cancel_choice(state, instances, outdated_ids, owed)]


def cancel_step(instances, outdated_ids, original_size, max_unavailable, surge_owed, desired_capacity, now,
                post_drain_delay=0, skip=(), holds=None, pinned=None, room=None, taint_key=None):
    """What cancelling the rollout of one group does next: give back the surge its state tags record (``surge_owed``
    members, each termination decrementing desired) and every instance detached for surge, and leave the outdated
    nodes in place (the role then takes the rollout's marks off every node left).

    The arguments are :func:`next_step`'s (``outdated_ids``: the instances the rollout was replacing, which go before
    the up-to-date ones among serving nodes). The rules are the upgrade's, on the same reads:

    - the instances that hold no pods are given back first: never a node (``no_node``), still launching, a node that is
      not Ready (drained already or not); then the nodes drained already, then the nodes out of service, then serving
      nodes (outdated first);
    - **the capacity floor**: a serving node is drained only while the group keeps ``original_size - max_unavailable``
      Ready, schedulable nodes without it, and only as many as the nodes left have room for (``rollout.room``); while
      the group still has to launch instances (desired above its members), their launch is waited for, as they hold no
      pods. What the floor or the room does not allow is ``blocked``, with a ``message`` that says why: nothing is
      cordoned that will not be drained, and the group stays held for the next run;
    - a drained instance is terminated once its post-drain delay has passed and nothing holds it (target groups,
      volumes: ``holds``), as in the upgrade; the ``no_node`` ones at once (the termination gate lets go what never
      registered);
    - drained nodes the surge does not need are left, for the role to give back to service.

    Returns :func:`next_step`'s fields (``validate``, ``outside``, ``deferred``, ``hold`` empty) and ``leaving``
    (instances given back that still leave the group); ``done`` once nothing is owed, no detached instance runs and
    none given back is still leaving.
    """
    live = [instance["instance_id"] for instance in instances if not instance_in_standby(instance)]
    state, (original_size, max_unavailable, surge_owed, floor, budget, pending_launches) = _read_group(
        instances, live, original_size, max_unavailable, surge_owed, desired_capacity, now, post_drain_delay, skip=skip,
        holds=holds, taint_key=taint_key)

    chosen = _cancel_choice(state, instances, outdated_ids, surge_owed, pinned)
    terminate = [entry["instance_id"] for rank, entry in chosen if rank in (_NO_NODE, _DRAINED)]
    decrement = sum(1 for rank, entry in chosen if rank in (_NO_NODE, _DRAINED) and entry["member"])
    drain = [entry for rank, entry in chosen if rank in (_NOT_READY, _CORDONED)]
    serving = [entry for rank, entry in chosen if rank in (_OUTDATED, _UP_TO_DATE)]
    waiting = set(entry["instance_id"] for rank, entry in chosen if rank == _DRAINING)

    # while the group still launches instances, they are what is given back: their launch is waited for
    allowed = take = 0 if pending_launches else max(0, min(budget, len(serving)))
    if take and room is not None:
        names = set(entry["node"] for _rank, entry in chosen if entry["node"])
        take = nodes_with_room([entry["node"] for entry in serving[:take]], room["nodes"], room["pods"], excluded=names,
                               draining=[entry["node"] for entry in drain])
    drain.extend(serving[:take])
    left = serving[take:]
    leaving = [instance["instance_id"] for instance in instances
               if _leaving(instance) and instance.get("lifecycle_state") != HELD_STATE]

    step = {"terminate": terminate, "decrement": decrement,
            "drain": [{key: entry[key] for key in ("instance_id", "az", "node")} for entry in drain],
            "validate": [], "tolerated_taints": state["tolerated"], "wait_seconds": None, "waiting_for": [], "message": "",
            "outdated_left": len(chosen), "capacity": state["capacity"], "floor": floor, "budget": budget,
            "booting": pending_launches if left else 0, "booting_ids": [],
            "delayed": [entry["node"] for entry in state["delayed"] if entry["instance_id"] in waiting],
            "held": [{key: entry[key] for key in ("instance_id", "node", "held", "until")}
                     for entry in state["held"] if entry["instance_id"] in waiting],
            "hold_timed_out": [{key: entry[key] for key in ("instance_id", "node", "held")}
                               for entry in state["drained"] if entry.get("timed_out") and entry["instance_id"] in terminate],
            "deferred": [], "drained_without_zone": [],
            "skipped": [entry["node"] for entry in state["skipped"]], "outside": [],
            "needs_room": bool(take) and room is None, "held_for_room": allowed - take,
            "standby": [], "hooked": list(state["hooked"]), "leaving": leaving, "taken": 0, "hold": None}
    if terminate or drain:
        step["action"] = RUN
        return step
    if not chosen and not state["hooked"] and not leaving:
        step["action"] = DONE
        return step
    timed = {"delayed": [entry for entry in state["delayed"] if entry["instance_id"] in waiting],
             "held": [entry for entry in state["held"] if entry["instance_id"] in waiting]}
    if _waits(step, timed):
        return step
    step["action"] = BLOCKED
    if allowed < len(serving):
        why = ("the group has %d Ready schedulable node(s) against its floor of %d (original size %d - max_unavailable %d): "
               "draining %s would take it below" % (state["capacity"], floor, original_size, max_unavailable,
                                                    ", ".join(entry["node"] for entry in left)))
        remedy = "bring its nodes back to Ready or raise max_unavailable"
    else:
        why = "the pods of %s would find no room on the nodes left" % ", ".join(entry["node"] for entry in left)
        remedy = "make room for those pods"
    step["message"] = (
        "%d instance(s) of surge are left to give back, but %s. The cancel stops with the group held (its state tags and "
        "surge kept for the next run, no node cordoned that is not drained): %s, and run the cancel again"
        % (len(left), why, remedy))
    return step
