#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rollout_step
short_description: Decide the next step of a node group's rollout from the group as it is now
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Reads one Auto Scaling group and its Kubernetes nodes and returns what its rollout does next - which drained
    instances to terminate and how many of them decrement desired capacity, which outdated nodes to drain, which
    up-to-date instances to validate first - or that it must wait (and for what), or that it is done.
  - The rollout is a pipeline with the semantics of a Deployment's maxSurge and maxUnavailable. The group's Ready,
    schedulable nodes never drop below its original desired capacity minus O(max_unavailable), so while surge nodes are
    Ready, more outdated nodes than O(max_unavailable) are drained at once. Desired capacity is never raised above the
    original plus the surge. Terminations keep desired capacity (the group launches a replacement at once) except the
    last ones, as many as the surge still owed, which pay it back. A node's post-drain delay counts from when
    M(nodeops.rollout.node_drain) finished it (node annotation C(nodeops.rollout/drained-at)).
  - A drained instance is not terminated while something still holds it - a target group of the group that lists it
    as an instance target in state C(healthy), C(initial) or C(draining) (until it has left, or
    O(deregistration_timeout) has passed since its drain ended), a VolumeAttachment of its node (until the volume is
    detached, or O(volume_detach_timeout) has passed). When the timeout passes it is terminated anyway, and
    RV(step.hold_timed_out) names it.
  - A serving outdated node with a persistent volume attached that is pinned to a zone (node affinity) where no
    up-to-date node of the group is Ready is drained after the others, as its pod could start again nowhere; when
    nothing else is left to do it is drained all the same (RV(step.drained_without_zone)).
  - Everything the decision needs is on the group and its nodes, so a run that was stopped resumes where it was.
  - With O(wait=true), a step that would wait is waited for here (for a post-drain delay to end, for drained
    instances to leave their target groups, for new instances to become Ready nodes, for a bake time or a checkpoint),
    and the next step that does something is returned.
  - The rollout is done only once no instance of the group is held in C(Terminating:Wait) by a termination lifecycle hook.
    Such an instance is leaving (it is never capacity) and is waited for at the end, at most as long as the group's
    hooks may hold it (their longest heartbeat timeout, and two minutes), even beyond O(wait_timeout). The module never
    completes a lifecycle action, since the hooks belong to other owners.
  - B(Holds.) With O(bake_time), once outdated nodes have been taken out, no further node is drained, and the rollout
    does not end, until nothing is in flight (no drained node left to terminate, no replacement booting) and the newest
    Ready up-to-date node has been Ready for the bake time. O(checkpoints) cap the drains at each percentage of the
    group's original size until the nodes up to it are replaced, Ready, and the checkpoint's wait has passed. Nodes
    already out of service are still drained and drained ones still terminated.
  - B(Controls), asked at every read, while it waits too. An alarm of O(abort_alarms) in state C(ALARM) fails the
    module naming it (RV(alarms)). The group's tag C(nodeops.rollout/pause) with a true value (with O(respect_pause)),
    or a maintenance window of O(windows) that closes before a step of O(step_seconds) could finish, returns the step
    with action V(pause) instead.
  - Makes no changes.
extends_documentation_fragment:
  - nodeops.rollout.aws
  - nodeops.rollout.k8s
  - nodeops.rollout.lock
  - nodeops.rollout.attributes.AWS
attributes:
  check_mode:
    support: full
  diff_mode:
    support: N/A
options:
  name:
    description: Name of the Auto Scaling group.
    type: str
    required: true
  target:
    description:
      - The launch template version the rollout moves the group to, as M(nodeops.rollout.launch_template_version)
        returns it (RV(nodeops.rollout.launch_template_version#module:target)).
    type: dict
    required: true
    suboptions:
      launch_template_id:
        description: The launch template id.
        type: str
        required: true
      version:
        description: The explicit launch template version number.
        type: raw
        required: true
      image_id:
        description: The AMI of that version.
        type: str
      ssm_parameter:
        description: The SSM parameter the AMI was resolved from, when it was.
        type: str
      launched_before:
        description:
          - With a C(max_node_age), the time before which an instance is outdated whatever it runs (the reason C(age)), as
            M(nodeops.rollout.launch_template_version) returns it.
        type: str
      max_node_age:
        description: The max_node_age behind O(target.launched_before), in seconds (for the reason's text).
        type: int
  max_unavailable:
    description:
      - How many nodes may be below the group's original desired capacity at once, a whole number or a percentage of
        the original desired capacity (rounded down), at least 1. Default is one node, as EKS.
    type: raw
  post_drain_delay:
    description:
      - How long a drained node stays before its instance is terminated, as seconds or a duration (V(60s)).
    type: raw
    default: 0
  target_groups:
    description:
      - The target groups a drained instance must have left before it is terminated, as M(nodeops.rollout.node_group_info)
        returns them in C(load_balancers.target_groups) of RV(nodeops.rollout.node_group_info#module:node_groups) - the
        group's own and those the cluster's load balancers register its nodes in; only instance target groups are waited for.
      - Unset, the group's own target groups (C(TargetGroupARNs)), described by the module.
    type: list
    elements: dict
  deregistration_timeout:
    description:
      - How long after its drain ended a drained instance may wait at most for the group's target groups to let it go,
        as seconds or a duration (V(5m)); V(0) does not wait.
      - Unset (or empty), each target group's C(deregistration_delay.timeout_seconds) plus 30 seconds (the longest of
        the target groups that still hold the instance).
    type: raw
  volume_detach_timeout:
    description:
      - How long after its drain ended a drained instance may wait at most for the volumes attached to its node to be
        detached (its VolumeAttachments gone), as seconds or a duration; V(0) does not wait. As Cluster API's
        C(nodeVolumeDetachTimeout), but bounded by default.
    type: raw
    default: 6m
  held:
    description:
      - RV(step.held) of the previous step, handed back so that a wait that spans several steps is counted from its
        start in RV(step.termination_waits).
    type: list
    elements: dict
    default: []
  canary:
    description:
      - While no up-to-date node is Ready, replace one outdated node at a time until its replacement is Ready.
    type: bool
    default: true
  skip:
    description:
      - Nodes a drain of this run gave up on (left cordoned); they are neither drained again nor terminated.
    type: list
    elements: str
    default: []
  limit:
    description:
      - The outdated instances (ids) to replace; every other outdated instance is left as it is - not drained, not
        terminated, not waited for, whether it has a node or not - and the step is V(done) once only those are left.
        The playbook C(nodeops.rollout.upgrade_serial) gives the instances of its current batch.
      - Unset, every outdated instance of the group is replaced.
    type: list
    elements: str
  standby_instances:
    description:
      - What to do with outdated instances in Standby, as Instance Refresh's C(StandbyInstances) preference. They are
        never counted as capacity, and terminating one never decrements the desired capacity (it is not part of it).
      - V(ignore) leaves them as they are; they are not waited for.
      - V(terminate) drains their nodes and terminates them, without replacement.
      - V(wait) waits (at most O(wait_timeout)) for them to return to service (C(ExitStandby)); they are replaced then.
    type: str
    choices: [ignore, terminate, wait]
    default: ignore
  wait:
    description:
      - Wait here while the step is to wait, and return the next step that does something.
    type: bool
    default: true
  wait_timeout:
    description:
      - How long to wait at most, as seconds or a duration (V(10m)); the module then fails, naming what it waited for.
    type: raw
    default: 10m
  poll_interval:
    description:
      - Seconds between two lists of the nodes while new instances boot.
    type: float
    default: 2.0
  bake_time:
    description:
      - How long the newest up-to-date nodes must have been Ready before more nodes are drained and before the rollout
        ends, as seconds or a duration (V(10m)), at most 48 hours. V(0) does not bake.
    type: raw
    default: 0
  checkpoints:
    description:
      - Percentages of the group's original size to stop at, each with a wait - a list of C(percent) and C(wait)
        (a duration), or texts such as V(50%:10m).
    type: list
    elements: raw
    default: []
  abort_alarms:
    description:
      - Names of CloudWatch alarms (metric or composite) that stop the rollout when one is in state C(ALARM), read at every
        read of the group and every 10 seconds while the step waits. An alarm that does not exist is an error.
    type: list
    elements: str
    default: []
  alerts:
    description:
      - The alert gates, read from an Alertmanager's API v2 at every read of the group and every 10 seconds while the step
        waits, counting only alerts that are active (neither silenced nor inhibited) and match every matcher of a gate.
      - C(url), the Alertmanager; C(auth), V(none), V(bearer) (with O(alertmanager_token)) or V(sigv4) (the AWS
        credentials and region of the module, service C(aps), for Amazon Managed Service for Prometheus).
      - C(abort), matchers (V(severity="critical")) - an alert firing fails the module naming it (RV(alerts)), as an
        abort alarm does.
      - C(pause), matchers - while an alert fires, a step that would terminate or drain waits, naming it in
        C(waiting_for) and RV(step.paused_by_alerts), and goes on once it clears; after C(pause_timeout) (a duration) the
        step returns with action V(pause), reason V(alert firing).
      - Null, or no matchers, for no gate. An Alertmanager that does not answer is an error naming its URL. A cancel's
        or a relaunch's steps are not stopped.
    type: dict
  alertmanager_token:
    description:
      - The bearer token of O(alerts) C(auth) V(bearer).
    type: str
  respect_pause:
    description:
      - Whether the group's tag C(nodeops.rollout/pause) with a true value (V(true), V(yes), V(1)) pauses the rollout.
    type: bool
    default: true
  blocking_pods:
    description:
      - Pods that hold the rollout while they run, as kured's C(blockingPodSelector) (a backup, a migration) - while a pod
        one of them selects has not ended, anywhere in the cluster or in the entry's C(namespace), a step that would
        terminate or drain waits, naming the pods in C(waiting_for), and goes on once none runs; it waits at most
        O(wait_timeout), then fails naming them, the group held.
      - Each a dict with C(selector), a label selector (V(app=backup), V(job-name in (nightly,weekly))), and optionally
        C(namespace); or the label selector alone.
      - A cancel's or a relaunch's steps are not held.
    type: list
    elements: raw
    default: []
  windows:
    description:
      - Maintenance windows, each with C(days), C(start), C(duration) and C(timezone), or a text such as
        V(Mon-Fri 22:00 4h Europe/Berlin) (several separated by C(;)). Outside them, or when the open one closes before a
        step of O(step_seconds) could finish, the step is V(pause). Empty means any time.
    type: raw
  step_seconds:
    description:
      - The predicted duration of one step, for O(windows), as seconds or a duration.
    type: raw
    default: 0
  taint_key:
    description:
      - The key of the rollout's taint on outdated nodes, to tell the rollout's marks on up-to-date nodes (RV(step.marked)).
    type: str
    default: nodeops.rollout/outdated
  goal:
    description:
      - V(replace) replaces the outdated instances (the upgrade, the rollback).
      - V(cancel) gives back the surge the group's state tags record, and every instance detached for surge, leaving the
        outdated nodes in place - first the instances that hold no pods (never a node, still launching, a node that is
        not Ready), then drained ones, then serving nodes, never below the capacity floor nor beyond the room the other
        nodes have for their pods; what the floor does not allow fails the module with RV(step) and the reason, the group
        left held. No pause request, maintenance window or abort alarm stops a cancel, and RV(step.protect) is empty.
      - V(relaunch) replaces the up-to-date instances in service that had O(wait_timeout) since their launch and are still
        no Ready node (an earlier run waited for them and stopped with NodeCreationFailure) - each node drained, then the
        instance terminated without decrementing the desired capacity, so the group launches another; the step waits
        for those replacements as for any booting instance. The floor, the room, the target-group and volume holds are
        the upgrade's; no canary, bake time, checkpoint, post-drain delay, O(limit), pause request, window or alarm
        applies, and RV(step.protect) is empty.
    type: str
    choices: [replace, cancel, relaunch]
    default: replace
notes:
  - Each read is one DescribeAutoScalingGroups, one DescribeInstances and one list of nodes; while waiting for new
    instances only the nodes are listed, and the group is read again when a node changes.
  - When a drained instance may be terminated and the group has target groups, each read also makes one
    DescribeTargetHealth per target group (DescribeTargetGroups and DescribeTargetGroupAttributes once per call); while
    waiting for drained instances to leave them, only their health is read, every O(poll_interval).
  - While outdated nodes are left, each read also lists the cluster's VolumeAttachments (and once per call its
    PersistentVolumes, when a volume is attached to an outdated node).
  - With O(abort_alarms), each read also makes one CloudWatch DescribeAlarms, and a wait reads them every 10 seconds.
"""

EXAMPLES = r"""
- name: Decide the next step
  nodeops.rollout.rollout_step:
    name: workers-blue
    target: "{{ ltv.target }}"
    max_unavailable: 2
    post_drain_delay: 60s
  register: next_step

- name: Terminate what is drained
  nodeops.rollout.instance_terminate:
    asg_name: workers-blue
    instance_ids: "{{ next_step.step.terminate }}"
    decrement_desired_capacity: "{{ next_step.step.decrement }}"
  when: next_step.step.terminate | length > 0
"""

RETURN = r"""
step:
  description: The next step.
  returned: success, and on failure when the step is known
  type: dict
  contains:
    action:
      description:
        - V(run) - terminate RV(step.terminate), then validate RV(step.validate), then drain RV(step.drain).
        - V(wait) - only with O(wait=false) - nothing can be done before RV(step.waiting_for).
        - V(done) - no outdated instance is left but the RV(step.skipped) nodes and the RV(step.outside) instances; with
          O(goal=cancel), no surge is owed, no instance detached for surge runs and none given back still leaves the group.
        - V(blocked) - the module fails - the group is at its capacity floor and nothing in flight can lift it.
        - V(pause) - a pause was requested or the maintenance window closes; RV(step.stop) says which.
      type: str
    stop:
      description:
        - Why the rollout stops before this step, or null - C(stop) (V(pause), or V(abort) when an abort alarm fires, and the
          module fails), C(reason) (V(requested), V(window closed), V(alert firing), V(abort alarm) or V(abort alert)),
          C(message), C(alarms) (the names of the alarms firing) and, for an abort alert, C(alerts) (the alerts firing).
      type: dict
    alerts:
      description: The alerts of O(alerts) firing at the last read, by gate - C(abort) and C(pause), each a list of
        V(name{label="value"}) texts; empty without gates.
      type: dict
    paused_by_alerts:
      description: The pause alerts this step waits for (returned while it waits on them).
      type: list
      elements: str
    held_by_alerts:
      description: The pause alerts the step waited for before it returned.
      type: list
      elements: str
    alarms:
      description: The abort alarms as last read, C(name), C(found), C(state), C(reason) and C(updated) each.
      type: list
      elements: dict
    hold:
      description:
        - The bake time or checkpoint that keeps new drains back, C(reason) and C(seconds) (left; null while something it
          waits for is still in flight), or null.
      type: dict
    taken:
      description: How many of the group's original size are taken out of the outdated nodes' service or replaced.
      type: int
    terminate:
      description:
        - Outdated instances drained and past the post-drain delay (or that never became nodes); members of the desired
          capacity first, then instances in Standby or detached for surge.
      type: list
      elements: str
    decrement:
      description: How many of RV(step.terminate), the first ones, decrement desired capacity (pay the surge back).
      type: int
    drain:
      description: The outdated nodes to drain now, C(instance_id), C(az) and C(node) each.
      type: list
      elements: dict
    validate:
      description: The up-to-date instances with Ready nodes, to validate before the drain.
      type: list
      elements: str
    tolerated_taints:
      description:
        - The group's own taints (C(key), C(value), C(effect)), those every node of the group carries. A node with any
          other C(NoSchedule) or C(NoExecute) taint but the rollout's own (a startup taint not lifted yet, an operator's
          C(dedicated) taint) is no capacity. The role hands them to M(nodeops.rollout.cluster_validate).
      type: list
      elements: dict
    outdated_left:
      description: Outdated instances still in the group, those in RV(step.terminate) included.
      type: int
    capacity:
      description: Ready, schedulable nodes of the group now.
      type: int
    floor:
      description: The capacity the group never drops below by the rollout's hand.
      type: int
    budget:
      description: How many more nodes may go out of service now (capacity - floor).
      type: int
    booting:
      description: Up-to-date instances that are not Ready nodes yet, and launches the group has still to start.
      type: int
    delayed:
      description: Drained nodes still in their post-drain delay.
      type: list
      elements: str
    held:
      description:
        - Drained instances past their post-drain delay that something still holds, each with C(instance_id), C(node),
          C(held) (each hold's C(kind) - C(target_group) or C(volume) -, C(name), C(state) and C(timeout)), C(until)
          (seconds left before the longest hold's timeout), C(since) (when a step first found it held, UTC) and the
          C(target_groups) and C(volumes) that held it so far.
      type: list
      elements: dict
    hold_timed_out:
      description: The instances of RV(step.terminate) still held when their hold's timeout ended.
      type: list
      elements: dict
    termination_waits:
      description:
        - The instances of RV(step.terminate) that a step found held (this one, or an earlier one whose RV(step.held)
          came back in O(held)), each with C(instance_id), C(node), C(target_groups), C(volumes), C(waited_seconds)
          (from the first decision that found it held to this one) and C(timed_out).
      type: list
      elements: dict
    deferred:
      description:
        - Serving outdated nodes not drained yet because a volume attached to them is pinned to zones (C(zones)) where
          no up-to-date node of the group is Ready, each with C(node) and C(zones).
      type: list
      elements: dict
    drained_without_zone:
      description: Nodes of RV(step.drain) drained although such a zone had no Ready up-to-date node, nothing else being left.
      type: list
      elements: dict
    skipped:
      description: The outdated nodes of O(skip).
      type: list
      elements: str
    outside:
      description: The outdated instances O(limit) leaves out.
      type: list
      elements: str
    standby:
      description: With O(standby_instances=wait), the outdated instances still in Standby.
      type: list
      elements: str
    hooked:
      description: Instances leaving the group that a termination lifecycle hook holds in C(Terminating:Wait).
      type: list
      elements: str
    leaving:
      description: With O(goal=cancel), the instances still leaving the group, waited for before the cancel is done.
      type: list
      elements: str
    goal:
      description: O(goal), as decided.
      type: str
    does:
      description:
        - What the step does, as flags (the role's tasks each run on one of them) - C(terminate), C(drain),
          C(validate) and C(protect) (the lists of the same names are not empty), C(work) (it terminates or drains),
          C(pause) (the action is V(pause)).
      type: dict
    words:
      description:
        - The lists C(terminate), C(drain), C(validate) and C(protect) counted in words, as the role's task names say
          them (V(1 instance), V(2 nodes)).
      type: dict
    protect:
      description:
        - While a rollout is recorded on the group, the nodes of its up-to-date instances that carry no
          C(cluster-autoscaler.kubernetes.io/scale-down-disabled) annotation, for the role to annotate so that the
          cluster-autoscaler does not scale the surge in under the rollout.
      type: list
      elements: str
    marked:
      description:
        - When the step is V(done), the up-to-date instances whose node carries a mark of the rollout (its taints, its
          cordon with the drain's annotations and label, the cluster-autoscaler annotation it put), each with
          C(instance_id), C(node) and C(marks) (as node_group_info's C(marked)); empty otherwise.
      type: list
      elements: dict
    waiting_for:
      description: What the step waited for (or, with O(wait=false), waits for).
      type: list
      elements: str
    wait_seconds:
      description: With O(wait=false), when the next post-drain delay ends, in seconds from now.
      type: float
    waited_seconds:
      description: How long the module waited.
      type: float
    waited_for:
      description: What the module waited for when it began to wait (empty when it did not wait).
      type: list
      elements: str
    reads:
      description: How many times the group was read.
      type: int
    decided_at:
      description: When the step was decided, after any wait (UTC, ISO 8601); the step's terminations follow at once.
      type: str
    new_nodes:
      description:
        - The up-to-date instances launched since the rollout recorded its start on the group (the surge and the
          replacements), in launch order, each with C(instance_id), C(az), C(node) (null until it registers),
          C(launch_time) and C(ready_at) (when its node turned Ready, null while it is not). Empty before the rollout
          is recorded.
      type: list
      elements: dict
    group:
      description: C(desired_capacity), C(original_size), C(max_unavailable) (resolved), C(surge_owed) and C(rollout_id).
      type: dict
  sample:
    action: run
    terminate: [i-0a1b2c3d4e5f60001]
    decrement: 0
    drain: [{"instance_id": "i-0a1b2c3d4e5f60004", "az": "eu-west-1b", "node": "ip-10-0-2-4.eu-west-1.compute.internal"}]
    validate: [i-0a1b2c3d4e5f60100, i-0a1b2c3d4e5f60101]
    outdated_left: 7
    capacity: 11
    floor: 9
    budget: 2
    booting: 1
    delayed: []
    held: []
    hold_timed_out: []
    termination_waits: [{"instance_id": "i-0a1b2c3d4e5f60001", "node": "ip-10-0-1-7.eu-west-1.compute.internal",
                         "target_groups": ["web-tg"], "volumes": [], "waited_seconds": 41.0, "timed_out": false}]
    deferred: []
    drained_without_zone: []
    skipped: []
    outside: []
    waiting_for: []
    wait_seconds: null
    waited_seconds: 31.5
    waited_for: ["2 new instance(s) to become Ready nodes"]
    reads: 3
    decided_at: "2026-11-25T07:04:12.431Z"
    new_nodes: [{"instance_id": "i-0a1b2c3d4e5f60100", "az": "eu-west-1a", "node": "ip-10-0-1-100.eu-west-1.compute.internal",
                 "launch_time": "2026-11-25T07:00:31Z", "ready_at": "2026-11-25T07:02:40Z"}]
    group: {"desired_capacity": 12, "original_size": 10, "max_unavailable": 1, "surge_owed": 2, "rollout_id": "r-20261125T0700Z-ab12"}
    stop: null
    alarms: []
    hold: null
    taken: 3
alarms:
  description: The names of the abort alarms in state C(ALARM) when the module failed on them.
  returned: failure, when an abort alarm fired
  type: list
  elements: str
alerts:
  description: The abort alerts firing when the module failed on them.
  returned: failure, when an abort alert fired
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import DEFAULT_TAINT_KEY
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import STANDBY_POLICIES
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.goals import GOALS
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.lock_keeper import LOCK_ARGUMENT_SPEC, run_keeping_lock
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.step import run_rollout_step


def argument_spec():
    spec = dict(AWS_ARGUMENT_SPEC, **K8S_ARGUMENT_SPEC)
    spec.update(LOCK_ARGUMENT_SPEC)
    spec.update(
        name=dict(type="str", required=True),
        target=dict(type="dict", required=True, options=dict(
            launch_template_id=dict(type="str", required=True),
            version=dict(type="raw", required=True),
            image_id=dict(type="str"),
            ssm_parameter=dict(type="str"),
            launched_before=dict(type="str"),
            max_node_age=dict(type="int"),
        )),
        max_unavailable=dict(type="raw"),
        post_drain_delay=dict(type="raw", default=0),
        deregistration_timeout=dict(type="raw"),
        volume_detach_timeout=dict(type="raw", default="6m"),
        held=dict(type="list", elements="dict", default=[]),
        target_groups=dict(type="list", elements="dict"),
        canary=dict(type="bool", default=True),
        skip=dict(type="list", elements="str", default=[]),
        limit=dict(type="list", elements="str"),
        standby_instances=dict(type="str", choices=list(STANDBY_POLICIES), default="ignore"),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="raw", default="10m"),
        poll_interval=dict(type="float", default=2.0),
        bake_time=dict(type="raw", default=0),
        checkpoints=dict(type="list", elements="raw", default=[]),
        abort_alarms=dict(type="list", elements="str", default=[]),
        respect_pause=dict(type="bool", default=True),
        blocking_pods=dict(type="list", elements="raw", default=[]),
        alerts=dict(type="dict"),
        alertmanager_token=dict(type="str", no_log=True),
        windows=dict(type="raw"),
        step_seconds=dict(type="raw", default=0),
        taint_key=dict(type="str", default=DEFAULT_TAINT_KEY, no_log=False),
        goal=dict(type="str", choices=list(GOALS), default="replace"),
    )
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_keeping_lock(module, run_rollout_step)


if __name__ == "__main__":
    main()
