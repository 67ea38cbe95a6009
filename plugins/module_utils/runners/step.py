# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""``rollout_step``: read one group, return the next step of its rollout (``rollout.steps.next_step``), and, when
the step is to wait, wait in here until it is not.

One read is one DescribeAutoScalingGroups, one DescribeInstances (two while instances are detached for surge), one
list of nodes and, while outdated nodes are left, one list of VolumeAttachments (and of PersistentVolumes, once per
call, when a volume is attached to one of them); when a drained instance of a group with target groups may be
terminated, one DescribeTargetHealth per target group too (the target groups themselves are described once per call);
a step that would drain serving nodes also lists the cluster's pods once, to drain no more nodes than the others have
room for (``rollout.room``). While the step waits for new instances to become Ready nodes, only the nodes are listed,
every ``poll_interval``; while it waits for drained instances to leave their target groups or have their volumes
detached, only those are read, every ``poll_interval``; the group is read again when a node changes, when an instance
has been let go, when a post-drain delay, a hold's timeout, a bake or a checkpoint ends, every ``ALARM_SECONDS`` while
abort alarms are watched (one DescribeAlarms a read), or every ``REREAD_SECONDS`` at the latest.

Every read also asks the operator's controls (``rollout.control.stop_before``): an abort alarm firing fails the module
naming it (with ``alarms`` in the result), a pause request or a maintenance window closing returns the step with action
``pause``.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws import (
    aws_clients,
    aws_errors,
    iso_time,
    group_instances,
    group_target_groups,
    hold_seconds,
    read_alarms,
    require_group,
    target_group_states,
    termination_hooks,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import KubeApi, kube_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import k8s_client
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.core.tags import tags_to_dict
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.volumes import attachments_by_node, pinned_zones, volume_holds
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.alertmanager import read_gates
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.control import (
    alert_names,
    alerts_stop,
    hold_for_alerts,
    hold_for_pods,
    pause_requested,
    running_pods,
    stop_before,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import check_alerts_option, check_blocking_pods
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.goals import goal_for
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import DEFAULT_TAINT_KEY, autoscaler_unprotected, marked_up_to_date
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import node_summary, nodes_by_instance, ready_since
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import normalize_target, outdated_instances, up_to_date_instances
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.sizes import base_size, max_unavailable_count, sizes_of, surge_owed_now
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.state import group_state
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.node_group import join_nodes
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.steps import (
    BLOCKED,
    DONE,
    REPLACE,
    WAIT,
    drained_at,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.targets import (
    checked_target_groups,
    holding,
    instance_target_groups,
    parse_deregistration_timeout,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import (
    PlanError,
    parse_checkpoints,
    parse_duration,
    parse_hold,
    parse_time,
    counted,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.window import parse_windows

REREAD_SECONDS = 60
# How long a drained node's volumes may take to detach before its instance is terminated anyway: the attach/detach
# controller's own limit before it detaches a volume whose unmount it cannot confirm (maxWaitForUnmountDuration).
DEFAULT_VOLUME_DETACH_TIMEOUT = "6m"
# how often the abort alarms are read while a step waits (a bake, a checkpoint, new instances booting)
ALARM_SECONDS = 10
PAUSE = "pause"


def check_options(params):
    """Refuse bad options before any API call; returns ``(target, post_drain_delay, wait_timeout)``
    (``deregistration_timeout`` is read by :class:`StepReader`)."""
    target = normalize_target(params.get("target"))
    delay = parse_duration(0 if params.get("post_drain_delay") is None else params["post_drain_delay"], "post_drain_delay")
    timeout = parse_duration("10m" if params.get("wait_timeout") is None else params["wait_timeout"], "wait_timeout", minimum=1)
    if params.get("max_unavailable") is not None:
        max_unavailable_count(params["max_unavailable"], 0)
    poll = params.get("poll_interval")
    if isinstance(poll, bool) or not isinstance(poll, (int, float)) or poll <= 0:
        raise PlanError("poll_interval: %r is not allowed; use a number of seconds > 0" % (poll,))
    for index, name in enumerate(params.get("skip") or []):
        if not isinstance(name, str) or not name.strip():
            raise PlanError("skip[%d]: %r is not allowed; use a node name" % (index, name))
    for index, instance_id in enumerate(params.get("limit") or []):
        if not isinstance(instance_id, str) or not instance_id.strip().startswith("i-"):
            raise PlanError("limit[%d]: %r is not allowed; use an instance id (i-...)" % (index, instance_id))
    parse_deregistration_timeout(params.get("deregistration_timeout"))
    goal_of(params, delay, timeout)
    parse_duration(DEFAULT_VOLUME_DETACH_TIMEOUT if params.get("volume_detach_timeout") in (None, "") else params["volume_detach_timeout"],
                   "volume_detach_timeout")
    for index, name in enumerate(params.get("abort_alarms") or []):
        if not isinstance(name, str) or not name.strip():
            raise PlanError("abort_alarms[%d]: %r is not allowed; use the name of a CloudWatch alarm" % (index, name))
    params["windows"] = parse_windows(params.get("windows"), "windows")
    params["step_seconds"] = parse_duration(params.get("step_seconds") or 0, "step_seconds")
    params["bake_time"] = parse_hold(params.get("bake_time") or 0, "bake_time")
    params["checkpoints"] = parse_checkpoints(params.get("checkpoints"), "checkpoints")
    params["blocking_pods"] = check_blocking_pods(params.get("blocking_pods"), "blocking_pods")
    params["alerts"] = check_alerts_option(params.get("alerts"), params.get("alertmanager_token"))
    return target, delay, timeout


def _fingerprint(raw_nodes):
    """What of the nodes can change a step: which are there, Ready and schedulable."""
    return frozenset((summary["name"], summary["ready"], summary["schedulable"])
                     for summary in (node_summary(raw, ("name", "ready", "schedulable")) for raw in raw_nodes))


def new_nodes(records, outdated_ids, raw_nodes, since):
    """The up-to-date instances launched at or after ``since`` (the rollout's recorded start; None: none) - the surge
    and the replacements - each ``{"instance_id", "az", "node", "launch_time", "ready_at"}`` (``ready_at``: when its
    node turned Ready, None while it is not), in launch order. What a report pairs with the replaced nodes."""
    if not since:
        return []
    start = parse_time(since, "started_at")
    ready = {summary["name"]: ready_since(raw) for summary, raw in
             ((node_summary(raw, ("name",)), raw) for raw in raw_nodes or [])}
    found = []
    for record in records:
        launched = record.get("launch_time")
        if record["instance_id"] in outdated_ids or not launched or parse_time(launched, "launch_time") < start:
            continue
        node = record.get("node")
        name = node.get("name") if isinstance(node, dict) else None
        found.append({"instance_id": record["instance_id"], "az": record.get("az"), "node": name,
                      "launch_time": launched, "ready_at": ready.get(name)})
    return sorted(found, key=lambda entry: (entry["launch_time"], entry["instance_id"]))


def held_since(entries):
    """The ``held`` entries of earlier steps (``{"instance_id", "node", "since", "target_groups", "volumes"}``) as
    :class:`StepReader` keeps them, ``since`` an aware datetime; entries it cannot read are left out."""
    found = {}
    for entry in entries or []:
        try:
            since = parse_time(entry["since"], "held[].since")
        except (KeyError, TypeError, PlanError):
            continue
        found[entry.get("instance_id")] = {"since": since, "node": entry.get("node"),
                                           "target_groups": list(entry.get("target_groups") or []),
                                           "volumes": list(entry.get("volumes") or [])}
    return found


def goal_of(params, delay, join_timeout):
    """The goal of the step (``rollout.goals``), made from the module's options: ``delay`` the post-drain delay and
    ``join_timeout`` the node-ready timeout, in seconds."""
    return goal_for(params.get("goal") or REPLACE, {
        "post_drain_delay": delay, "canary": params.get("canary", True),
        "skip": [name.strip() for name in params.get("skip") or []], "taint_key": params.get("taint_key"),
        "limit": None if params.get("limit") is None else [iid.strip() for iid in params["limit"]],
        "standby": params.get("standby_instances"), "bake_seconds": params.get("bake_time") or 0,
        "checkpoints": params.get("checkpoints") or (), "join_timeout": join_timeout})


class StepReader:  # pylint: disable=too-many-instance-attributes
    """Reads the group, its nodes, the cluster's VolumeAttachments and, for the drained instances, the group's target
    groups; decides; remembers how long each drained instance waited to be let go; asks the operator's controls."""

    def __init__(self, params, autoscaling, ec2, api, region, target, delay, now=None, elbv2=None, cloudwatch=None,
                 join_timeout=600, credentials=None):
        self.params = params
        # the run's AWS credentials (a function), for an Alertmanager that takes SigV4
        self.credentials = credentials
        # seconds since launch after which an up-to-date instance that is no Ready node is relaunched (goal relaunch)
        self.join_timeout = join_timeout
        self.autoscaling, self.ec2, self.api, self.region, self.elbv2 = autoscaling, ec2, api, region, elbv2
        self.cloudwatch = cloudwatch
        self.target, self.delay = target, delay
        self.goal = goal_of(params, delay, join_timeout)
        self.target_timeout = parse_deregistration_timeout(params.get("deregistration_timeout"))
        detach = params.get("volume_detach_timeout")
        self.volume_timeout = parse_duration(DEFAULT_VOLUME_DETACH_TIMEOUT if detach in (None, "") else detach,
                                             "volume_detach_timeout")
        self.now = now or (lambda: datetime.now(timezone.utc))
        self.reads = 0
        self.raw_nodes = []
        self.target_groups = None    # the group's instance target groups, described once
        self.targets = {}            # target group arn -> {target id: state}, as last read
        self.attached = {}           # node -> volumes attached to it (drain.volumes.attachments_by_node), as last read
        self.volumes = None          # PersistentVolume name -> volume, read once when a volume is attached to an outdated node
        # instance id -> since when (a datetime), on which node and by what it has been held: the earlier steps' (the
        # role hands back each step's ``held``) and this call's
        self.held = held_since(params.get("held"))
        self.hooks = None            # the group's termination lifecycle hooks, read once an instance is in Terminating:Wait

    @property
    def hold_seconds(self):
        return hold_seconds(self.hooks or [])

    def blocking_running(self, entry):
        """The pods that ``entry`` of blocking_pods selects and that run (``namespace/name``)."""
        with kube_errors("list", "pods", self.params):
            return running_pods(self.api.list_pods(namespace=entry.get("namespace"), label_selector=entry["selector"], resource_version="0"))

    def firing_alerts(self):
        """``{"abort": [alerts], "pause": [alerts]}`` firing now, of the gates of ``alerts`` (none without)."""
        gates = self.params.get("alerts")
        if not gates:
            return {}
        return read_gates(gates, {"abort": gates["abort"], "pause": gates["pause"]},
                          self.credentials() if gates["auth"] == "sigv4" and self.credentials else None, self.region)

    def list_nodes(self):
        with kube_errors("list", "nodes", self.params):
            self.raw_nodes = self.api.list_nodes()
        return self.raw_nodes

    def read_targets(self, group=None):
        """Read the health of the group's instance target groups (describing them first, once); ``{}`` without."""
        if self.target_groups is None:
            given = self.params.get("target_groups")
            if self.elbv2 is None or self.target_timeout == 0:
                self.target_groups = []
            elif given is not None:
                # the target groups node_group_info found watched: the group's own and the cluster's load balancers'
                self.target_groups = instance_target_groups(checked_target_groups(given))
            elif not (group or {}).get("TargetGroupARNs"):
                self.target_groups = []
            else:
                with aws_errors("DescribeTargetGroups", "the target groups of Auto Scaling group '%s'" % self.params["name"], self.params):
                    self.target_groups = instance_target_groups(group_target_groups(self.elbv2, group))
        if self.target_groups:
            with aws_errors("DescribeTargetHealth", "the target groups of Auto Scaling group '%s'" % self.params["name"], self.params):
                self.targets = target_group_states(self.elbv2, self.target_groups)
        return self.targets

    def read_attachments(self):
        """The cluster's VolumeAttachments by node (one list)."""
        with kube_errors("list", "volumeattachments", self.params):
            self.attached = attachments_by_node(self.api.list_volume_attachments())
        return self.attached

    def read_volumes(self):
        """The cluster's PersistentVolumes by name, listed once per call (a volume's node affinity never changes)."""
        if self.volumes is None:
            with kube_errors("list", "persistentvolumes", self.params):
                self.volumes = {volume["metadata"]["name"]: volume for volume in self.api.list_persistent_volumes()}
        return self.volumes

    def holds(self, instance_id, node):
        """What holds the drained instance back (the last reads): the target groups listing it, the volumes still
        attached to its node."""
        held = holding(instance_id, self.target_groups or [], self.targets, self.target_timeout)
        if self.volume_timeout:
            held.extend(volume_holds(node, self.attached, self.volume_timeout))
        return held

    def released_any(self, step):
        """Whether a held instance the step waits for has been let go (a health read of the target groups, a list of
        the VolumeAttachments, as the holds need)."""
        kinds = set(hold["kind"] for entry in step["held"] for hold in entry["held"])
        if "target_group" in kinds:
            self.read_targets()
        if "volume" in kinds:
            self.read_attachments()
        return any(not self.holds(entry["instance_id"], entry["node"]) for entry in step["held"])

    def _termination_waits(self, step):
        """The instances this step terminates that something held at a decision of this call, with how long this call
        waited for them."""
        waits = []
        timed_out = {entry["instance_id"] for entry in step["hold_timed_out"]}
        for instance_id in step["terminate"]:
            held = self.held.pop(instance_id, None)
            if held is not None:
                waits.append({"instance_id": instance_id, "node": held["node"], "target_groups": held["target_groups"],
                              "volumes": held["volumes"], "waited_seconds": round((self.now() - held["since"]).total_seconds(), 1),
                              "timed_out": instance_id in timed_out})
        return waits

    def decide(self):
        name = self.params["name"]
        self.reads += 1
        with aws_errors("DescribeAutoScalingGroups", "Auto Scaling group '%s'" % name, self.params):
            group = require_group(self.autoscaling, name, self.region)
            state = group_state(group)
            records = group_instances(self.ec2, group, include_detached=state is None or state.get("method") == "detach")
        raw_nodes = self.list_nodes()
        join_nodes(records, nodes_by_instance(raw_nodes), raw_nodes)
        standby = self.params.get("standby_instances")
        now = self.now()
        goal = self.goal
        fresh = [entry["instance_id"] for entry in up_to_date_instances(records, self.target)]
        outdated = goal.targets(records, fresh, [entry["instance_id"] for entry in outdated_instances(records, self.target, standby=standby)],
                                now)
        wanted = goal.reads(records, outdated)
        nodes_of = {record["instance_id"]: record["node"]["name"] for record in records
                    if record["instance_id"] in wanted and isinstance(record.get("node"), dict)}
        # what holds an instance back matters only once it could be terminated: drained, past the post-drain delay
        delay = goal.post_drain_delay
        drained = [record for record in records if record["instance_id"] in wanted and drained_at(record.get("node"))
                   and drained_at(record["node"]) + timedelta(seconds=delay) <= now]
        holds, pinned = {}, {}
        if nodes_of:
            self.read_attachments()
            if any(self.attached.get(node) for node in nodes_of.values()):
                volumes = self.read_volumes()
                pinned = {node: pinned_zones(node, self.attached, volumes) for node in nodes_of.values()}
        if drained:
            self.read_targets(group)
            for record in drained:
                held = self.holds(record["instance_id"], record["node"]["name"])
                if held:
                    holds[record["instance_id"]] = held
        sizes = sizes_of(group)
        original = base_size(state, sizes["desired_capacity"])
        unavailable = max_unavailable_count(self.params.get("max_unavailable"), original)
        owed = surge_owed_now(state, sizes)
        view = {"instances": records, "outdated_ids": outdated, "original_size": original, "max_unavailable": unavailable,
                "surge_owed": owed, "desired_capacity": sizes["desired_capacity"], "now": now, "holds": holds, "pinned": pinned}
        step = goal.step(view)
        if step["needs_room"]:
            # only a step that would drain serving nodes reads the pods: one list, from the API server's cache
            with kube_errors("list", "pods", self.params):
                pods = self.api.list_pods(resource_version="0")
            step = goal.step(view, room={"nodes": raw_nodes, "pods": pods})
        for entry in step["held"] + step["hold_timed_out"]:
            held = self.held.setdefault(entry["instance_id"], {"since": now, "node": entry["node"],
                                                               "target_groups": [], "volumes": []})
            for kind, field in (("target_group", "target_groups"), ("volume", "volumes")):
                held[field] = sorted(set(held[field]) | set(hold["name"] for hold in entry["held"] if hold["kind"] == kind))
            entry.update(since=iso_time(held["since"]), target_groups=held["target_groups"], volumes=held["volumes"])
        step["termination_waits"] = self._termination_waits(step)
        step["new_nodes"] = new_nodes(records, set(outdated), raw_nodes, state.get("started_at") if state else None)
        # while the rollout runs, its new nodes are kept from the cluster-autoscaler's scale down
        step["protect"] = autoscaler_unprotected(records, fresh) if state and goal.protects_new_nodes else []
        # the last step names what the rollout left on its up-to-date nodes: the scale down gives it back before its
        # one read of the end
        step["marked"] = (marked_up_to_date(records, fresh, self.params.get("taint_key") or DEFAULT_TAINT_KEY)
                          if step["action"] == DONE else [])
        if step["hooked"] and self.hooks is None:
            with aws_errors("DescribeLifecycleHooks", "Auto Scaling group '%s'" % name, self.params):
                self.hooks = termination_hooks(self.autoscaling, name)
        step["group"] = {"desired_capacity": sizes["desired_capacity"], "original_size": original,
                         "max_unavailable": unavailable, "surge_owed": owed,
                         "rollout_id": state["rollout_id"] if state else None}
        step["goal"] = goal.name
        names = self.params.get("abort_alarms") or [] if goal.stoppable else []
        step["alarms"] = read_alarms(self.cloudwatch, names, self.params) if names else []
        fired = self.firing_alerts() if goal.stoppable else {}
        # the alerts of the gates firing now, by name (rolling_update_abort_alerts, rolling_update_pause_alerts)
        step["alerts"] = {gate: alert_names(alerts) for gate, alerts in fired.items()}
        # a cancel is what an operator does instead of a rollout, a relaunch gives back what no workload uses: no pause,
        # window or alarm stops them
        step["stop"] = None if not goal.stoppable else stop_before(
            step, now, step["alarms"],
            pause=self.params.get("respect_pause", True) and pause_requested(tags_to_dict(group.get("Tags"))),
            windows=self.params.get("windows") or (), step_seconds=self.params.get("step_seconds") or 0,
            abort_alerts=fired.get("abort"))
        # a pod of rolling_update_blocking_pods running anywhere holds back a step that would terminate or drain
        blocking = self.params.get("blocking_pods") or [] if goal.stoppable else []
        if blocking and step["stop"] is None and (step["terminate"] or step["drain"]):
            hold_for_pods(step, [(entry, self.blocking_running(entry)) for entry in blocking])
        # a pause alert firing holds it back too, until it clears
        if fired.get("pause") and step["stop"] is None and (step["terminate"] or step["drain"]):
            hold_for_alerts(step, fired["pause"])
        if step["stop"] is not None and step["stop"]["stop"] == PAUSE:
            # a paused step does nothing: what it would have done waits for the run that resumes the rollout
            step.update(action=PAUSE, terminate=[], decrement=0, drain=[], validate=[])
        step["does"] = step_does(step)
        step["words"] = step_words(step)
        return step


def step_does(step):
    """What a step does, as the flags the role's tasks run on: each task of a step asks one of them."""
    return {"terminate": bool(step["terminate"]), "drain": bool(step["drain"]), "validate": bool(step["validate"]),
            "protect": bool(step.get("protect")), "work": bool(step["terminate"] or step["drain"]),
            "pause": step["action"] == PAUSE}


def step_words(step):
    """What a step does, counted as the role's task names say it: ``1 instance``, ``2 nodes``."""
    return {"terminate": counted(len(step["terminate"]), "instance"), "drain": counted(len(step["drain"]), "node"),
            "validate": counted(len(step["validate"]), "up-to-date node"),
            "protect": counted(len(step.get("protect") or []), "new node")}


def timeout_message(step, timeout, hooks=()):
    """What a step that waited ``timeout`` seconds in vain says: new instances that are no Ready nodes are EKS's
    NodeCreationFailure, named; instances a termination lifecycle hook (``hooks``) still holds name the hook; a delay that
    never ends cannot happen (it is bounded by the post-drain delay)."""
    if step["booting"]:
        launches = step["booting"] - len(step["booting_ids"])
        return ("NodeCreationFailure: %d new instance(s) did not become Ready nodes within %ds: %s%s. The rollout is held: "
                "look at those instances (did they boot, did their kubelets join the cluster?) and run again"
                % (step["booting"], timeout, ", ".join(step["booting_ids"]) or "none launched yet",
                   "; %d more the group has not launched" % launches if launches and step["booting_ids"] else ""))
    if step.get("hooked") and not step.get("standby"):
        return ("%d terminated instance(s) still in Terminating:Wait after %ds: %s, held by the termination lifecycle hook(s) %s of "
                "their owner; a rollout never completes another owner's lifecycle action. The rollout is held: complete the "
                "actions (CompleteLifecycleAction) or let them time out, and run again"
                % (len(step["hooked"]), timeout, ", ".join(step["hooked"]),
                   ", ".join("%s (heartbeat timeout %ds, default result %s)" % (hook["name"], hook["heartbeat_timeout"], hook["default_result"])
                             for hook in hooks) or "of the group"))
    return "waited %ds for %s; the rollout is held, run again" % (timeout, " and ".join(step["waiting_for"]))


def wait_for_step(reader, timeout, poll_interval, clock=time.monotonic, sleep=time.sleep):
    """Decide; while the step is to wait, sleep until a delay ends or a node changes, and decide again.

    Fails naming what it waited for when ``timeout`` seconds pass while new instances or instances in Standby are waited
    for; while only instances held in ``Terminating:Wait`` by termination lifecycle hooks are, not before the hooks'
    heartbeat timeout (and a margin) has passed."""
    started = clock()
    waited_for = []
    held_by, paused_by = set(), set()
    paused_since = None
    while True:
        step = reader.decide()
        if step.get("paused_by_alerts"):
            # the pause alerts hold the step at most rolling_update_pause_alerts_timeout: then the run stops paused
            paused_since = clock() if paused_since is None else paused_since
            stop = alerts_stop(step["paused_by_alerts"], clock() - paused_since, (reader.params.get("alerts") or {}).get("pause_timeout") or 0)
            if stop is not None:
                step.update(stop=stop, action=PAUSE)
                step.update(does=step_does(step), words=step_words(step))
        if step["action"] != WAIT or step.get("stop") is not None:
            step["waited_seconds"] = round(clock() - started, 1)
            step["waited_for"] = waited_for
            # the blocking pods and the pause alerts this step waited for, for its progress line
            step["held_by_pods"] = sorted(held_by)
            step["held_by_alerts"] = sorted(paused_by)
            return step
        waited_for = waited_for or list(step["waiting_for"])
        now = clock()
        # new instances and outdated instances in Standby are waited for at most ``timeout``; instances a termination
        # lifecycle hook holds, when nothing else is, at most as long as the hooks may hold them; a post-drain delay and a
        # deregistration timeout end by themselves
        held_by.update(step.get("blocking_pods") or ())
        paused_by.update(step.get("paused_by_alerts") or ())
        # a blocking pod is waited for at most ``timeout`` too
        bounded = bool(step["booting"] or step.get("standby") or step.get("hooked") or step.get("leaving") or step.get("blocking_pods"))
        limit = timeout if (step["booting"] or step.get("standby") or step.get("blocking_pods")) else max(timeout, reader.hold_seconds)
        deadline = started + limit
        if now >= deadline and bounded:
            raise RolloutError(timeout_message(step, limit, reader.hooks), step=step)
        wake = now + (step["wait_seconds"] if step["wait_seconds"] is not None else REREAD_SECONDS)
        if bounded:
            wake = min(deadline, wake)
        if step.get("alarms") or step.get("alerts"):
            wake = min(wake, now + ALARM_SECONDS)
        seen = _fingerprint(reader.raw_nodes)
        while clock() < wake:
            sleep(max(0.0, min(poll_interval, wake - clock())))
            # a new node turning Ready, or the node of an instance a lifecycle hook held going away with it
            if (step["booting"] or step.get("hooked") or step.get("leaving")) and _fingerprint(reader.list_nodes()) != seen:
                break
            if step["held"] and reader.released_any(step):
                break


@reports_errors
def run_rollout_step(module):
    params = module.params
    target, delay, timeout = check_options(params)
    connection, autoscaling, ec2, elbv2, cloudwatch = aws_clients(module, "autoscaling", "ec2", "elbv2", "cloudwatch")
    api = KubeApi(k8s_client(module))
    reader = StepReader(params, autoscaling, ec2, api, connection.region, target, delay, elbv2=elbv2, cloudwatch=cloudwatch,
                        join_timeout=timeout, credentials=connection.session.get_credentials)
    if params["wait"]:
        step = wait_for_step(reader, timeout, float(params["poll_interval"]))
    else:
        step = reader.decide()
        step["waited_seconds"] = 0
        step["waited_for"] = []
    step["reads"] = reader.reads
    step["decided_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    if step["stop"] is not None and step["stop"]["stop"] != PAUSE:
        module.fail_json(msg="%s; the rollout stops before its next step" % step["stop"]["message"], step=step,
                         alarms=step["stop"]["alarms"], alerts=step["stop"].get("alerts") or [])
    if step["action"] == BLOCKED:
        module.fail_json(msg=step["message"], step=step)
    module.exit_json(changed=False, step=step)
