# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""``instance_terminate``: terminate drained instances of a node group.

Every listed instance passes the termination gate first (``termination_gate``): its node in this cluster is
cordoned and holds only DaemonSet and mirror pods, or it provably never registered; otherwise nothing is
terminated. Members go through the Auto Scaling group (decrementing desired only for the instances the caller
says, so the group never scales in a node that was not drained); instances detached for surge go through EC2
(they no longer count toward the group). The surge still owed by a recorded rollout goes down with each
decrement: each is announced in the state (``paying``) before it is made, so a run interrupted before the next tag
write never pays the surge back twice, and another actor's decrement is never taken for ours
(``rollout.sizes.surge_owed_now``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws import (
    GONE_EC2_STATES,
    INSTANCE_ID_RE,
    LEAVING_STATES,
    aws_clients,
    aws_errors,
    describe_instances,
    ec2_state,
    hold_seconds,
    members,
    require_group,
    terminate_detached,
    terminate_in_group,
    termination_hooks,
    wait_for,
    warm_pool,
    write_state,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import KubeApi, kube_errors, node_pods
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import k8s_client
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError, reporting, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import node_events
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import nodes_by_instance
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import STANDBY_STATES
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.nodes import node_event_writer
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.sizes import (
    DECREMENT_OWED,
    check_decrement,
    decrement_count,
    group_settled,
    sizes_of,
    surge_owed_now,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.tags import TAG_INSTANCE_DETACHED_FROM, tags_to_dict
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, parse_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.state import after_writes, group_state, state_writes
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.termination_gate import node_index, node_of, refusal_message, termination_refusals

# Nodes whose pods the termination gate lists at once.
GATE_WORKERS = 8
# TerminateInstanceInAutoScalingGroup calls at once for instances that keep desired capacity (botocore's retry mode
# absorbs the account's Auto Scaling throttling; a step of a large group terminates hundreds).
TERMINATE_WORKERS = 4


def check_options(params):
    """Refuse bad options before any API call; returns how many of the listed instances decrement desired."""
    ids = params.get("instance_ids") or []
    if not ids:
        raise PlanError("instance_ids: an empty list is not allowed; list the instances to terminate (i-...)")
    for instance_id in ids:
        if not isinstance(instance_id, str) or not INSTANCE_ID_RE.match(instance_id):
            raise PlanError("instance_ids: %r is not an EC2 instance id; use ids such as i-0123456789abcdef0" % (instance_id,))
    if len(set(ids)) != len(ids):
        duplicate = next(instance_id for instance_id in ids if ids.count(instance_id) > 1)
        raise PlanError("instance_ids: %s is listed more than once; list each instance once" % duplicate)
    if params.get("wait_timeout") is not None:
        params["wait_timeout"] = parse_duration(params["wait_timeout"], "wait_timeout")
    return decrement_count(params.get("decrement_desired_capacity"), len(ids))


class _Termination:
    """Which listed instance is a member, detached from the group, or already gone -- decided before any change."""

    def __init__(self, group, ec2, instance_ids, count, warm=()):
        self.name = group["AutoScalingGroupName"]
        self.group = group
        self.current = sizes_of(group)
        self.state = group_state(group)
        self.instance_ids = list(instance_ids)
        listed = describe_instances(ec2, self.instance_ids)
        in_group = set(instance["InstanceId"] for instance in members(group))
        leaving = set(instance["InstanceId"] for instance in group.get("Instances") or []
                      if instance.get("LifecycleState") in LEAVING_STATES)
        # Not part of the desired capacity (in Standby, or in the warm pool, ``warm``): a decrement for one would make
        # the group scale in another instance.
        self.standby = set(instance["InstanceId"] for instance in group.get("Instances") or []
                           if instance.get("LifecycleState") in STANDBY_STATES) | set(warm)
        in_group |= set(warm)
        self.members, self.detached, self.gone = [], [], []
        for instance_id in self.instance_ids:
            instance = listed.get(instance_id)
            tags = tags_to_dict((instance or {}).get("Tags"))
            if instance_id in in_group:
                self.members.append(instance_id)
            elif instance_id in leaving or instance is None or ec2_state(instance) in GONE_EC2_STATES:
                self.gone.append(instance_id)
            elif tags.get(TAG_INSTANCE_DETACHED_FROM) == self.name:
                self.detached.append(instance_id)
            else:
                other = tags.get("aws:autoscaling:groupName")
                where = "it is in Auto Scaling group '%s'" % other if other else "it belongs to no Auto Scaling group"
                raise RolloutError("instance_ids: %s is not in Auto Scaling group '%s' (%s) and was not detached from it"
                                   % (instance_id, self.name, where))
        if count == DECREMENT_OWED:
            count = min(len(self.instance_ids), surge_owed_now(self.state, self.current))
        # "The first N listed": a listed instance that is gone, detached, in Standby or warm uses its place without decrementing.
        self.decrement = [instance_id for instance_id in self.instance_ids[:count]
                          if instance_id in self.members and instance_id not in self.standby]
        check_decrement(self.current, len(self.decrement), self.state, self.name)
        self.records = [{"instance_id": instance_id, "private_dns_name": (listed.get(instance_id) or {}).get("PrivateDnsName") or None}
                        for instance_id in self.members + self.detached]
        self.refusals = []
        self.nodes = {}   # instance id -> its node, as the gate read it

    def check_gate(self, api, ec2):
        """The termination gate, asked for every member and detached instance listed (reads nodes and their pods)."""
        if not self.records:
            return
        nodes = api.list_nodes()
        index = node_index(nodes)
        self.nodes = {record["instance_id"]: node_of(record, index) for record in self.records}
        names = [node["metadata"]["name"] for node in self.nodes.values() if node is not None]
        # one consistent read of the pods (the cluster's, in pages), or one list per node when that is fewer requests
        pods_by_node = node_pods(api, names, workers=GATE_WORKERS)[0]
        # Whether the cluster is the group's: a listed instance (a member, or detached from the group) with a node says
        # so; only when none has one are the group's other instances described to tell a new one from another cluster.
        group_records = self.records
        if not names:
            group_ids = [instance["InstanceId"] for instance in self.group.get("Instances") or []] + self.detached
            known = describe_instances(ec2, group_ids) if group_ids else {}
            group_records = [{"instance_id": instance_id, "private_dns_name": (known.get(instance_id) or {}).get("PrivateDnsName") or None}
                             for instance_id in group_ids]
        self.refusals = termination_refusals(self.records, group_records, nodes, pods_by_node, self.name)

    @property
    def changed(self):
        return bool(self.members or self.detached)

    def owed_before(self):
        if self.state is None:
            return None
        if self.state["method"] != "scale":
            return self.state["surge_owed"]
        return surge_owed_now(self.state, self.current)

    def owed_after(self):
        if self.state is None or self.state["method"] != "scale":
            return self.owed_before()
        return max(0, self.owed_before() - len(self.decrement))

    def predicted_desired(self):
        return self.current["desired_capacity"] - len(self.decrement)


def _terminate_replaced(autoscaling, instance_ids, result):
    """The members that keep desired capacity, ``TERMINATE_WORKERS`` calls at a time (each is one request with no
    bookkeeping after it). Every call is answered before an error is raised, so the result lists what went."""
    if not instance_ids:
        return
    with ThreadPoolExecutor(max_workers=max(1, min(TERMINATE_WORKERS, len(instance_ids)))) as pool:
        futures = [(instance_id, pool.submit(terminate_in_group, autoscaling, instance_id, False)) for instance_id in instance_ids]
    failure = None
    for instance_id, future in futures:
        try:
            went = future.result()
        except Exception as exc:  # pylint: disable=broad-except
            failure = failure or exc   # the first error, raised once every answer is recorded
            continue
        result["terminated" if went else "already_gone"].append(instance_id)
    if failure is not None:
        raise failure


def _terminate(autoscaling, ec2, termination, result):
    """Terminate every member (desired decremented as decided) then the detached instances. The members that keep
    desired go several at once; those that decrement it go one at a time.

    Before each termination that decrements desired, the surge owed is written with that instance as ``paying`` (one
    write also records the previous decrement); after the last one, the surge owed without it. A run killed in between
    leaves ``paying``: once that instance has left the group the decrement is known to be ours (``surge_owed_now``)."""
    owed = termination.owed_before()
    tags = tags_to_dict(termination.group.get("Tags"))
    scale = termination.state is not None and termination.state["method"] == "scale"

    def record(paying):
        nonlocal tags
        write, delete = state_writes(dict(termination.state, surge_owed=owed, paying=paying), tags)
        write_state(autoscaling, termination.name, write, delete)
        tags = after_writes(tags, write, delete)

    _terminate_replaced(autoscaling, [instance_id for instance_id in termination.members if instance_id not in termination.decrement],
                        result)
    for instance_id in termination.decrement:
        if scale:
            record(instance_id)
        if not terminate_in_group(autoscaling, instance_id, True):
            result["already_gone"].append(instance_id)
            continue
        result["terminated"].append(instance_id)
        result["decremented"].append(instance_id)
        if scale:
            owed = max(0, owed - 1)
    if scale and termination.decrement:
        record(None)
    listed = {instance_id: index for index, instance_id in enumerate(termination.instance_ids)}
    for key in ("terminated", "already_gone"):
        result[key].sort(key=lambda instance_id: listed.get(instance_id, len(listed)))   # in the order they were listed
    for chunk in terminate_detached(ec2, termination.detached):
        result["terminated_detached"].extend(chunk)
    if owed is not None:
        result["surge_owed"]["after"] = owed


def _wait_terminated(ec2, instance_ids, timeout):
    def check():
        listed = describe_instances(ec2, instance_ids)
        pending = {instance_id: ec2_state(listed[instance_id]) for instance_id in instance_ids
                   if instance_id in listed and ec2_state(listed[instance_id]) != "terminated"}
        detail = ", ".join("%s is %s" % item for item in sorted(pending.items()))
        return not pending, detail, None

    wait_for(check, timeout, "instances %s to be terminated" % ", ".join(instance_ids))


def _wait_replacements(autoscaling, ec2, name, region, before, timeout):
    def check():
        group = require_group(autoscaling, name, region, field="asg_name")
        instances = group.get("Instances") or []
        states = {}
        for instance in instances:
            states[instance.get("LifecycleState")] = states.get(instance.get("LifecycleState"), 0) + 1
        detail = "desired capacity %d, instances by lifecycle state %s" % (
            group["DesiredCapacity"], ", ".join("%s=%d" % item for item in sorted(states.items())) or "none")
        return group_settled(instances, group["DesiredCapacity"]), detail, group

    group = wait_for(check, timeout, "Auto Scaling group '%s' to have its desired capacity in service again" % name)
    new = [instance for instance in group.get("Instances") or [] if instance["InstanceId"] not in before]
    details = describe_instances(ec2, [instance["InstanceId"] for instance in new]) if new else {}
    replacements = []
    for instance in sorted(new, key=lambda item: item["InstanceId"]):
        template = instance.get("LaunchTemplate") or {}
        replacements.append({
            "instance_id": instance["InstanceId"],
            "az": instance.get("AvailabilityZone"),
            "lifecycle_state": instance.get("LifecycleState"),
            "launch_template_id": template.get("LaunchTemplateId"),
            "launch_template_version": template.get("Version"),
            "image_id": (details.get(instance["InstanceId"]) or {}).get("ImageId"),
        })
    return group, replacements


def _delete_lingering_nodes(api, ec2, instance_ids, result):
    """Delete the Node objects of instances EC2 reports terminated (a kubelet still running would register again)."""
    listed = describe_instances(ec2, instance_ids)
    terminated = [instance_id for instance_id in instance_ids
                  if instance_id not in listed or ec2_state(listed[instance_id]) == "terminated"]
    nodes = nodes_by_instance(api.list_nodes())
    for instance_id in instance_ids:
        node = nodes.get(instance_id)
        if node is None:
            continue
        if instance_id not in terminated:
            result["nodes_left"].append(node["name"])
            continue
        if api.delete_node(node["name"]):
            result["nodes_deleted"].append(node["name"])


def _recorded_target(state):
    """The target of the rollout recorded on the group, as an Event names it, or None."""
    if not state or state.get("target_version") is None:
        return None
    template = state.get("target_launch_template")
    template_id = template.get("id") if isinstance(template, dict) else template
    return node_events.target_text(template_id, state["target_version"])


def termination_diff(name, in_group, result):
    """instance_terminate's diff: the group's instances (``in_group``, as read, and the detached ones named) and desired
    capacity before, and after the instances of ``result`` (the module's) are terminated."""
    gone = set(result["terminated"]) | set(result["terminated_detached"])
    instances = sorted(set(in_group) | set(result["detached"]))
    return {"before_header": "Auto Scaling group %s" % name, "after_header": "Auto Scaling group %s" % name,
            "before": {"desired_capacity": result["desired_capacity"]["before"], "instances": instances},
            "after": {"desired_capacity": result["desired_capacity"]["after"],
                      "instances": [instance_id for instance_id in instances if instance_id not in gone]}}


@reports_errors
def run_instance_terminate(module):
    params = module.params
    count = check_options(params)
    connection, autoscaling, ec2 = aws_clients(module, "autoscaling", "ec2")
    # The gate reads every node it lets go, so the Kubernetes connection is needed whether or not nodes are deleted.
    api = KubeApi(k8s_client(module))
    region = connection.region
    name = params["asg_name"]
    resource = "Auto Scaling group '%s'" % name
    instances = ", ".join(params["instance_ids"])
    with aws_errors("DescribeInstances", resource):
        group = require_group(autoscaling, name, region, field="asg_name")
        with aws_errors("DescribeWarmPool", resource):
            pool = warm_pool(autoscaling, ec2, group)
        termination = _Termination(group, ec2, params["instance_ids"], count,
                                   warm=[record["instance_id"] for record in (pool or {}).get("instances") or []])
        with kube_errors("list", "the nodes and pods of instances %s (the termination gate)" % instances):
            termination.check_gate(api, ec2)
    if termination.refusals:
        raise RolloutError(refusal_message(termination.refusals, name), refused=termination.refusals, changed=False)

    result = {
        "changed": termination.changed,
        "asg_name": name,
        "rollout_id": termination.state["rollout_id"] if termination.state else None,
        "members": list(termination.members),
        "detached": list(termination.detached),
        "terminated": [],
        "terminated_detached": [],
        "already_gone": list(termination.gone),
        "decremented": [],
        "desired_capacity": {"before": termination.current["desired_capacity"], "after": termination.predicted_desired()},
        "surge_owed": {"before": termination.owed_before(), "after": termination.owed_after()},
        "refused": [],
        "nodes_deleted": [],
        "nodes_left": [],
        "replacements": [],
    }
    in_group = [instance["InstanceId"] for instance in group.get("Instances") or []]
    if module.check_mode:
        result["terminated"] = list(termination.members)
        result["terminated_detached"] = list(termination.detached)
        result["decremented"] = list(termination.decrement)
        if module._diff:  # pylint: disable=protected-access
            result["diff"] = termination_diff(name, in_group, result)
        module.exit_json(**result)

    events = node_event_writer(module, api, target=_recorded_target(termination.state))
    with reporting(result):
        try:
            with aws_errors("TerminateInstanceInAutoScalingGroup", resource):
                _terminate(autoscaling, ec2, termination, result)
        finally:
            for instance_id in result["terminated"] + result["terminated_detached"]:
                events.record(termination.nodes.get(instance_id), node_events.termination_event(
                    instance_id, name, instance_id in result["decremented"], events.context))
            result["events"] = events.summary()
        result["changed"] = bool(result["terminated"] or result["terminated_detached"])
        ended = result["terminated"] + result["terminated_detached"]
        if params["wait"] and (ended or termination.gone):
            # the listed instances already leaving too: their Node objects are deleted once they are terminated. A
            # termination lifecycle hook holds an instance in Terminating:Wait up to its heartbeat timeout: so long at most.
            with aws_errors("DescribeLifecycleHooks", resource):
                timeout = max(params["wait_timeout"], hold_seconds(termination_hooks(autoscaling, name)))
            with aws_errors("DescribeInstances", resource):
                _wait_terminated(ec2, ended + list(termination.gone), timeout)
        if params["delete_node"]:
            with aws_errors("delete nodes", resource), kube_errors("delete", "nodes of instances %s" % instances):
                _delete_lingering_nodes(api, ec2, ended + list(termination.gone), result)
            if result["nodes_left"]:
                module.warn("Node objects %s were left in place: their instances are not terminated yet (set wait: true to wait)"
                            % ", ".join(result["nodes_left"]))
        if params["wait_for_replacement"]:
            before = set(instance["InstanceId"] for instance in group.get("Instances") or [])
            with aws_errors("DescribeAutoScalingGroups", resource):
                group_after, result["replacements"] = _wait_replacements(autoscaling, ec2, name, region, before, params["wait_timeout"])
            result["desired_capacity"]["after"] = group_after["DesiredCapacity"]
    if module._diff:  # pylint: disable=protected-access
        result["diff"] = termination_diff(name, in_group, result)
    module.exit_json(**result)
