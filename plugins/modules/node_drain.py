#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_drain
short_description: Drain Kubernetes nodes concurrently through the Eviction API, within PodDisruptionBudgets
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Cordons every node in O(nodes), then moves every pod off them, all nodes at the same time.
  - Pods are listed once for all the nodes (the cluster's pods, in pages of 500, when that takes fewer requests than a
    list per node; without O(pod_selector)), then followed per node. DaemonSet pods and mirror pods are left alone.
    Finished pods (Succeeded, Failed) are deleted. Every other pod is evicted through the C(policy/v1) Eviction API,
    which enforces the pods' PodDisruptionBudgets.
  - An eviction refused with 429 (a budget with no disruption left) is retried with capped exponential backoff
    and jitter, honouring C(Retry-After). A refusal is never retried at once.
  - Evictions are paced by budget rather than refused pod by pod. A refusal closes the budget for every pod it
    covers. The module then reads the budget's C(disruptionsAllowed) (one request, every O(poll_interval)) and
    sends that many evictions. Draining 100 pods under one budget costs about one eviction request per pod.
  - A pod of a Deployment with one replica whose rolling update keeps the old pod until the new one is Ready
    is not evicted when O(restart_single_replica=true). That is strategy C(RollingUpdate) with maxUnavailable
    resolving to 0 and maxSurge to at least 1 (as the Deployment controller resolves them, a percentage of
    maxUnavailable rounded down and of maxSurge rounded up; the default 25%/25% qualifies), not paused. The
    Deployment is restarted instead, as C(kubectl rollout restart) does. The new pod starts on another node
    (this one is cordoned) and the controller removes the old pod once the new one is available, so the workload
    has no downtime.
  - Any other single-replica Deployment (C(Recreate), maxUnavailable 1 or more, paused, or a pod that mounts a
    C(ReadWriteOnce) or C(ReadWriteOncePod) PersistentVolumeClaim, which the new pod of a restart could never attach
    while the old one holds it) has its pod evicted, so its PodDisruptionBudget decides. A restart would let the
    controller stop the pod before its replacement is Ready and bypass the budget. A budget that needs the pod refuses the eviction (429) and the node is held
    until O(timeout) and O(timeout_action). The result lists the pod under C(downtime) (and C(blocking) while a
    budget holds it), naming the Deployment, its maxUnavailable and maxSurge, and the budget.
  - A Deployment, StatefulSet or ReplicaSet of two or more replicas that no PodDisruptionBudget covers keeps a Ready
    pod with O(implicit_budget=true), the default. The module gives it an implicit budget with a C(minAvailable) of 1,
    or that of the workload's own rolling update where it is stricter (a Deployment's C(maxUnavailable), a percentage
    of its replicas rounded down; a StatefulSet counts as one pod at a time). The API server does not know that
    budget, so the module holds each eviction until the workload has enough Ready pods without it, counting them
    cluster-wide (the pods it just evicted left out). The nodes drained at once share it, as they share real budgets.
    A pod held by it waits as one held by a real budget does, within O(timeout) and O(timeout_action), and
    RV(nodes.blocking) names it (kind C(implicit_budget)).
  - The module waits until every evicted pod is gone (deleted, or replaced by a pod with another UID). It does
    not read pods one by one; it lists the node's pods every O(poll_interval).
  - Some pods can never be evicted under the options given. These are pods with C(emptyDir) volumes without
    O(delete_emptydir_data), pods without a controller or annotated C(karpenter.sh/do-not-disrupt=true) without
    O(force), and pods selected by two PodDisruptionBudgets. With O(timeout_action=fail), the module names them
    and fails before changing anything. With V(skip), their node is left cordoned and skipped at once. With
    V(force), they are deleted once the rest of the node is drained.
  - A node that is not Ready (its kubelet stopped posting status, or reports NotReady) cannot confirm that its pods
    are gone. A pod whose eviction (or deletion) was accepted and that is still there 10 seconds after the end of the
    grace period its deletion gave it is deleted with grace 0, as it serves nothing (the node controller marked it not
    Ready); RV(nodes.force_deleted) names each one and why.
  - When a node is not drained within O(timeout), O(timeout_action) decides what happens. The failure message
    names every pod still there and the PodDisruptionBudget holding it.
  - In check mode the module is a pre-flight that changes nothing. For each node it reports what would be
    evicted, deleted or restarted, and every blocker with its reason. Blockers are budgets that allow 0
    disruptions or fewer than the pods on the nodes drained together, pods under two budgets, pods without a
    controller, do-not-disrupt annotations, C(emptyDir) data, single-replica workloads that would be evicted
    (flagged as downtime, naming the Deployment's maxUnavailable and maxSurge and the budget), workloads of two or
    more replicas without a budget (C(implicit_budget), a warning saying how their pods will be paced), pods that
    tolerate every taint, and pods whose persistent volume is pinned to a zone (C(zonal_volume), an error
    C(volume_without_node) when they could start again nowhere, see O(new_node_zones)). It also predicts the outcome.
options:
  nodes:
    description:
      - Names of the nodes to drain. They are drained concurrently (see O(max_concurrent_nodes)).
    type: list
    elements: str
    required: true
  timeout:
    description:
      - How long each node may take to drain, as seconds (V(900)) or a duration (V(15m), V(1h30m)).
    type: raw
    default: 15m
  timeout_action:
    description:
      - What happens to a node that is not drained within O(timeout), or where only pods that can never be
        evicted are left.
      - V(fail) fails the module once every node has finished, naming each pod still there and the budget
        holding it. The node stays cordoned.
      - V(skip) leaves the node cordoned, labels it C(nodeops.rollout/quarantined=true) (as AKS labels the nodes it
        cannot drain; a release of the rollout's marks takes the label off with the cordon), reports it under
        RV(skipped_nodes) and goes on with the other nodes. Its Event names the pods and budgets that hold it. The module
        does not fail.
      - V(force) deletes the pods still there without the Eviction API, ignoring their budgets, as the force
        flag of EKS managed node groups does. It waits up to their grace period for them to go.
    type: str
    choices: [fail, skip, force]
    default: fail
  force:
    description:
      - Also evict pods that no controller manages, and pods annotated C(karpenter.sh/do-not-disrupt=true),
        C(cluster-autoscaler.kubernetes.io/safe-to-evict=false) or C(nodeops.rollout/do-not-evict=true).
      - They are still evicted through the Eviction API; a naked pod is not recreated anywhere.
    type: bool
    default: false
  grace_period:
    description:
      - Grace period given to each evicted or deleted pod, instead of the pod's own C(terminationGracePeriodSeconds),
        as seconds (V(30)) or a duration (V(30s), V(2m), V(1h)). V(0) means immediately.
      - Not set (or an empty string) keeps each pod's own C(terminationGracePeriodSeconds).
      - A value that is not a whole number of seconds or such a duration (V(abc), V(-5s), V(1.5m)) is refused
        before anything changes.
    type: raw
  delete_emptydir_data:
    description:
      - Also evict pods that use C(emptyDir) volumes; their data is lost.
    type: bool
    default: false
  pod_selector:
    description:
      - Drain only the pods matching this label selector, for example V(app=web,tier!=cache).
    type: str
  disable_eviction:
    description:
      - Delete pods instead of evicting them. This bypasses every PodDisruptionBudget.
    type: bool
    default: false
  restart_single_replica:
    description:
      - Move the pod of a single-replica Deployment by restarting the Deployment through its rolling update,
        so that the new pod is Ready before the old one stops. Only Deployments whose rolling update keeps the
        old pod until the new one is Ready (maxUnavailable 0, maxSurge at least 1, not paused) and whose pod mounts no
        C(ReadWriteOnce) claim are restarted; the pods of the others are evicted, within their PodDisruptionBudget.
      - V(false) evicts such pods like any other; the workload is down until its replacement is Ready.
    type: bool
    default: true
  implicit_budget:
    description:
      - Give a Deployment, StatefulSet or ReplicaSet of two or more replicas that no PodDisruptionBudget covers an
        implicit budget, so that the drain never evicts the last of its Ready pods (or more than its rolling update's
        C(maxUnavailable) at once, where that is stricter). Each eviction waits until another pod of the workload is
        Ready.
      - V(false) evicts such pods as Kubernetes allows and C(kubectl drain) does, all at once if they are on the nodes
        drained together, and the workload can be left with no Ready pod until its replacements are Ready.
      - Has no effect with O(disable_eviction), which bypasses every budget.
    type: bool
    default: true
  max_concurrent_nodes:
    description:
      - How many nodes are drained at the same time. All of them when not set.
    type: int
  exclude_from_load_balancers:
    description:
      - Label each node this run drains C(node.kubernetes.io/exclude-from-external-load-balancers=true) when it
        cordons it, in the same request, so that the AWS Load Balancer Controller or the cloud provider deregisters the
        node from external load balancers while its pods are evicted, and the target groups' deregistration delay
        runs alongside the drain instead of after it.
      - With O(target_groups), no pod is evicted before the nodes have left them.
    type: bool
    default: false
  target_groups:
    description:
      - The target groups the drained nodes' instances serve in, as M(nodeops.rollout.node_group_info) returns them in
        C(load_balancers.target_groups) (each with C(name), C(arn), C(target_type), C(deregistration_delay)); only those
        of C(target_type) V(instance) are read.
      - With O(exclude_from_load_balancers=true), once the nodes are labelled the drain waits until none of these target
        groups sends their instances new connections (each target V(draining), V(unused) or gone, read every half
        second) before it evicts a pod, for at most O(target_leave_timeout); a node whose pods went first would be sent
        requests it has no pod for until its load balancer controller reacts. Needs
        C(elasticloadbalancing:DescribeTargetHealth). Not read in check mode.
    type: list
    elements: dict
  target_leave_timeout:
    description:
      - How long the drain waits for the nodes to leave O(target_groups) before it evicts anyway (the result's
        C(load_balancers) then says which nodes still served). Seconds or a duration such as V(60s).
    type: raw
    default: 60s
  new_node_zones:
    description:
      - The Availability Zones new nodes will be launched in (the node group's zones). A pod whose persistent volume is
        pinned to a zone by node affinity can only start again on a node there; when no Ready, schedulable node outside
        the nodes drained matches its volume and none of these zones does, the module fails before changing anything,
        naming the pod, its volume and its zones, whatever O(timeout_action) says (in check mode the pre-flight reports it
        as an error). Unset, such a pod is only reported, as a warning - it waits C(Pending) until a node comes in its zone.
      - Every pod with a volume pinned to a zone is named in the pre-flight (kind C(zonal_volume)).
    type: list
    elements: str
  waves:
    description:
      - Check mode only. The waves the nodes will be drained in, each a list of node names, or the batches of the plan
        M(nodeops.rollout.node_group_info) returns (each with its C(nodes)). A budget's pods are then counted wave by
        wave, as the drains will meet them, for C(pdb_insufficient); the nodes in no wave count together. Unset, every
        node given counts as drained together.
    type: list
    elements: raw
  max_concurrent_evictions:
    description:
      - How many eviction requests of one node are in flight at the same time.
    type: int
    default: 10
  poll_interval:
    description:
      - Seconds between two looks at a node's pods while waiting for them to go (one list request per node).
    type: float
    default: 2.0
  retry_max_delay:
    description:
      - The longest wait, in seconds, between two attempts to evict a pod whose eviction was refused.
      - The wait starts at 1/16 of it (1 second by default) and doubles with each refusal in a row, with jitter.
    type: float
    default: 16.0
extends_documentation_fragment:
  - nodeops.rollout.k8s
  - nodeops.rollout.aws
  - nodeops.rollout.lock
  - nodeops.rollout.events
  - nodeops.rollout.attributes.K8S
attributes:
  check_mode:
    support: full
    details: A pre-flight that makes no change. It reports per node what would move and every blocker.
  diff_mode:
    support: full
    details: Shows each node's cordon state and pods before and after.
notes:
  - The AWS options are used only with O(eks_cluster).
  - Nodes are cordoned first and stay cordoned whatever happens; uncordon them with M(nodeops.rollout.node_taint).
  - Every pod has to be gone before a node counts as drained, including pods that were already terminating.
seealso:
  - module: nodeops.rollout.node_taint
  - module: nodeops.rollout.cluster_validate
"""

EXAMPLES = r"""
- name: Pre-flight - what would block draining this batch?
  nodeops.rollout.node_drain:
    nodes: "{{ batch_nodes }}"
  check_mode: true
  register: preflight

- name: Drain a batch of nodes; give up on a node after 15 minutes but go on with the others
  nodeops.rollout.node_drain:
    nodes: "{{ batch_nodes }}"
    delete_emptydir_data: true
    timeout: 15m
    timeout_action: skip
  register: drain

- name: Drain as EKS does with its force flag
  nodeops.rollout.node_drain:
    nodes: [ip-10-0-1-12.ec2.internal]
    timeout: 10m
    timeout_action: force
"""

RETURN = r"""
load_balancers:
  description:
    - With O(target_groups) and O(exclude_from_load_balancers), how the nodes left their target groups before their pods
      were evicted - C(waited_seconds), C(still_serving) (node to the target groups that still sent it new connections
      when the wait ended; empty when every node had left) and C(timed_out) (the wait reached O(target_leave_timeout)).
      Null when there was nothing to leave (or in check mode).
  returned: always
  type: dict
  sample: {"waited_seconds": 1.2, "still_serving": {}, "timed_out": false}
events:
  description: The Events written on the nodes (see O(events)).
  returned: success
  type: dict
  contains:
    written:
      description: How many Events the API server accepted.
      type: int
    not_written:
      description: How many were refused, or not sent after a refusal.
      type: int
    error:
      description: Why the first one was not written, or null.
      type: str
  sample: {"written": 2, "not_written": 0, "error": null}
nodes:
  description:
    - Per node name, what the drain did (in check mode, what it would do).
  returned: always
  type: dict
  contains:
    status:
      description:
        - V(drained), V(skipped) (left cordoned), V(failed), or V(not started) when the module failed before
          changing anything. In check mode, a description of what would happen.
      type: str
    cordoned:
      description: Whether this run cordoned the node (it was schedulable before).
      type: bool
    quarantined:
      description: Whether the node was skipped and labelled C(nodeops.rollout/quarantined) (O(timeout_action=skip)).
      type: bool
    started_at:
      description: When the drain of the node began (UTC, ISO 8601), its cordon done; not in check mode.
      type: str
    drained_at:
      description:
        - When the drain of the node ended (UTC, ISO 8601), for a node drained by this run; also recorded on the node as
          the annotation C(nodeops.rollout/drained-at), from which a rollout counts the post-drain delay (a node
          uncordoned later is not drained any more).
      type: str
    evicted:
      description: Pods evicted through the Eviction API (C(namespace/name)).
      type: list
      elements: str
    deleted:
      description: Pods deleted without the Eviction API, which are finished pods, pods under O(disable_eviction)
        and pods deleted by O(timeout_action=force).
      type: list
      elements: str
    restarted:
      description:
        - Pods of single-replica Deployments moved by restarting their Deployment.
        - Each has C(pod), C(deployment), and C(ready) (the Deployment had a Ready pod once the old one was gone).
          In check mode each also has C(reason) and C(zero_downtime).
      type: list
      elements: dict
    skipped:
      description: Pods the drain left alone (DaemonSet pods, mirror pods) or only waited for (already
        terminating), each with C(pod) and C(reason).
      type: list
      elements: dict
    blocking:
      description:
        - Pods that held the node when the drain ended, each with C(pod), C(kind) (V(pdb), V(implicit_budget), V(multiple_pdbs),
          V(naked_pod), V(emptydir), V(do_not_disrupt), V(api_error), V(throttled), V(retry)), C(pdb), and the
          API's C(message); an V(api_error) the API server's authorizer gave (the identity may not evict or delete the
          pod, or restart its Deployment) also has C(permission), as in a failed result (see C(docs/rbac.md)).
        - In check mode, every blocker found, including warnings (V(pdb_zero), V(pdb_insufficient),
          V(single_replica), V(implicit_budget), V(tolerates_all)), each with C(severity) V(error) or V(warning).
      type: list
      elements: dict
    remaining:
      description: Pods still on the node when the drain ended.
      type: list
      elements: str
    downtime:
      description: Pods of single-replica workloads that are evicted, so the workload is down until their
        replacement is Ready, each with C(pod) and C(reason). For a Deployment the reason names its
        maxUnavailable and maxSurge and the PodDisruptionBudget that decides; outside check mode each also has
        C(deployment).
      type: list
      elements: dict
    force_deleted:
      description:
        - Pods of a node that is not Ready deleted with grace 0 once their grace period had ended, no kubelet having
          confirmed them gone, each with C(pod) and C(reason) (the node's state and the wait).
      type: list
      elements: dict
    eviction_retries:
      description: How many refused requests (429 and transient errors) were retried.
      type: int
    forced:
      description: Whether O(timeout_action=force) deleted pods of this node.
      type: bool
    seconds:
      description: Seconds the node's drain took.
      type: float
    message:
      description: One line about the node's drain; for a node not drained, every pod still there and why.
      type: str
    predicted:
      description: Check mode only. V(ok), V(downtime) or V(blocked).
      type: str
    outcome:
      description: Check mode only. One sentence predicting how the drain of this node would end.
      type: str
  sample:
    ip-10-0-1-12.ec2.internal:
      status: drained
      cordoned: true
      started_at: "2026-11-25T07:04:13.120Z"
      drained_at: "2026-11-25T07:04:54.310Z"
      evicted: ["shop/web-7d4b9-x2x8k", "shop/api-5f6c7-8hj2q"]
      deleted: []
      restarted: [{"pod": "shop/checkout-worker-6d9f-2kq7z", "deployment": "shop/checkout-worker", "ready": true}]
      skipped: [{"pod": "kube-system/node-agent-4xk2p", "reason": "managed by DaemonSet node-agent"}]
      blocking: []
      remaining: []
      downtime: []
      force_deleted: []
      eviction_retries: 3
      forced: false
      seconds: 41.2
      message: node ip-10-0-1-12.ec2.internal drained
drained:
  description: Nodes drained.
  returned: always
  type: list
  elements: str
skipped_nodes:
  description: Nodes left cordoned, labelled quarantined and skipped (O(timeout_action=skip)).
  returned: always
  type: list
  elements: str
failed_nodes:
  description: Nodes not drained.
  returned: always
  type: list
  elements: str
preflight_ok:
  description: Check mode only. Whether no node is predicted to be blocked.
  returned: check mode
  type: bool
would_stop:
  description:
    - Check mode only. The blockers no wait ever clears under these options, which would stop a drain (and the
      rolling_update role's upgrade, which stops on them before any change) - with O(timeout_action=fail) only. They are a
      budget that can never allow an eviction (V(pdb_zero) with its expected pods no more than it needs healthy), a pod two
      budgets select, a pod no controller manages, one annotated do-not-disrupt, one with emptyDir data.
    - Each names C(node), C(pod), C(kind), C(pdb), C(message) and C(gets_past), the options that would get past it
      (C(option), C(value), C(effect)). Their entries in RV(nodes) C(blocking) carry C(stops_upgrade=true) and the same
      C(gets_past).
  returned: check mode
  type: list
  elements: dict
seconds:
  description: Seconds the whole drain took.
  returned: when not in check mode
  type: float
started_at:
  description: When the drain began, before the nodes were cordoned (UTC, ISO 8601).
  returned: when not in check mode and a node was cordoned
  type: str
msg:
  description: A summary; on failure, every pod still on a node and the budget holding it.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.event_writer import EVENTS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC, k8s_client
from ansible_collections.nodeops.rollout.plugins.module_utils.core.choices import TIMEOUT_ACTIONS
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.options import DEFAULT_LEAVE_TIMEOUT, DEFAULT_TIMEOUT
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.lock_keeper import LOCK_ARGUMENT_SPEC, run_keeping_lock
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.node_drain import run_node_drain


def argument_spec():
    spec = dict(AWS_ARGUMENT_SPEC)
    spec.update(K8S_ARGUMENT_SPEC)
    spec.update(LOCK_ARGUMENT_SPEC)
    spec.update(EVENTS_ARGUMENT_SPEC)
    spec.update(
        nodes=dict(type="list", elements="str", required=True),
        timeout=dict(type="raw", default=DEFAULT_TIMEOUT),
        timeout_action=dict(type="str", choices=list(TIMEOUT_ACTIONS), default="fail"),
        force=dict(type="bool", default=False),
        grace_period=dict(type="raw"),
        delete_emptydir_data=dict(type="bool", default=False),
        pod_selector=dict(type="str"),
        disable_eviction=dict(type="bool", default=False),
        restart_single_replica=dict(type="bool", default=True),
        implicit_budget=dict(type="bool", default=True),
        max_concurrent_nodes=dict(type="int"),
        exclude_from_load_balancers=dict(type="bool", default=False),
        target_groups=dict(type="list", elements="dict"),
        target_leave_timeout=dict(type="raw", default=DEFAULT_LEAVE_TIMEOUT),
        new_node_zones=dict(type="list", elements="str"),
        waves=dict(type="list", elements="raw"),
        max_concurrent_evictions=dict(type="int", default=10),
        poll_interval=dict(type="float", default=2.0),
        retry_max_delay=dict(type="float", default=16.0),
    )
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_keeping_lock(module, run_node_drain, k8s_client)


if __name__ == "__main__":
    main()
