#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_validate
short_description: Wait until a group of Kubernetes nodes is healthy enough for a rollout to go on
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Checks the expected nodes. With O(instance_ids), every instance must have a registered node (matched by
    C(spec.providerID) C(aws:///<az>/<instance-id>)). With O(label_selector), at least O(expected_count) of the
    matching nodes must pass. Each expected node must be Ready, and not cordoned unless O(schedulable=false).
  - With O(each_az), every Availability Zone of the expected nodes (or the zones in O(azs)) must have at least one
    Ready, schedulable node.
  - With O(critical_pods), every C(system-cluster-critical) pod, and every C(system-node-critical) pod on the
    expected nodes, must be Ready. The module looks in O(critical_namespaces).
  - The group counts as valid once its healthy state has held for O(passes) - 1 intervals of O(interval), as
    O(passes) consecutive successful evaluations O(interval) apart would show. The API records when each expected
    node, and each critical pod looked at, last turned Ready (the Ready condition's C(lastTransitionTime)), so a state
    that already held that long is valid at the first evaluation, and one that held part of it is evaluated again
    once the rest has passed - no fixed wait on top of what the cluster records. A node or pod that turns Ready again
    in between carries its later time, and the span starts again. Where the API records no time, the evaluations are
    counted, O(interval) apart, and a failed one starts the count again. Without enough within O(timeout), the module
    fails with a message that says exactly what failed.
  - It makes no change. In check mode it evaluates once, does not wait and does not fail, so that a plan can
    show what is not ready yet.
options:
  instance_ids:
    description:
      - EC2 instance ids whose nodes must be registered, Ready and schedulable.
      - Mutually exclusive with O(label_selector).
    type: list
    elements: str
  label_selector:
    description:
      - A label selector for the nodes to check, for example V(eks.amazonaws.com/nodegroup=workers).
      - Requires O(expected_count).
    type: str
  expected_count:
    description:
      - With O(label_selector), how many matching nodes must at least be Ready (and schedulable).
    type: int
  each_az:
    description:
      - Require at least one Ready, schedulable expected node in every Availability Zone of the expected nodes, or in
        every zone of O(azs).
    type: bool
    default: false
  azs:
    description:
      - The Availability Zones O(each_az) must cover. By default, the zones of the expected nodes found.
      - Useful with O(instance_ids) when an instance has no node yet, so its zone is not known from the cluster.
    type: list
    elements: str
  tolerated_taints:
    description:
      - Taints a node may carry and still count, for example the taint every node of a dedicated or GPU pool registers
        with, which the pods that run there tolerate (the role passes the group's own taints, those every node of the
        group carries).
      - With O(schedulable=true), a Ready node that carries any other taint of effect C(NoSchedule) or C(NoExecute)
        does not count until the taint is gone - a startup taint of a CNI, a CSI driver or a GPU operator
        (C(node.cilium.io/agent-not-ready), C(ebs.csi.aws.com/agent-not-ready)) that its agent lifts once it runs;
        C(not_ready_reason) names the taint. The node controller's taints (C(node.kubernetes.io/*)) count as not Ready,
        and the rollout's own (C(nodeops.rollout/*)) never keep a node from counting.
    type: list
    elements: dict
    default: []
    suboptions:
      key:
        description: The taint's key.
        type: str
        required: true
      value:
        description: The taint's value (none for a taint without one).
        type: str
      effect:
        description: The taint's effect.
        type: str
        required: true
        choices: [NoSchedule, NoExecute]
  schedulable:
    description:
      - Whether the expected nodes must be schedulable (not cordoned).
      - V(false) accepts cordoned nodes, for example to validate nodes that are about to be drained.
    type: bool
    default: true
  critical_pods:
    description:
      - Also require every C(system-cluster-critical) pod, and every C(system-node-critical) pod on the expected
        nodes, to be Ready.
    type: bool
    default: false
  critical_namespaces:
    description:
      - Namespaces searched for critical pods.
    type: list
    elements: str
    default: [kube-system]
  passes:
    description:
      - How many consecutive successful evaluations, O(interval) apart, the healthy state must hold for (the span
        recorded by the API counts).
    type: int
    default: 1
  interval:
    description:
      - Time between two evaluations while the group is not valid (or the API records no Ready time), and the unit
        of the span O(passes) asks for, as seconds (V(10)) or a duration (V(10s), V(1m)).
    type: raw
    default: 10s
  timeout:
    description:
      - How long to wait for the passes, as seconds or a duration (V(10m)).
    type: raw
    default: 10m
extends_documentation_fragment:
  - nodeops.rollout.k8s
  - nodeops.rollout.aws
  - nodeops.rollout.lock
  - nodeops.rollout.attributes.K8S
attributes:
  check_mode:
    support: full
    details: Evaluates once, without waiting and without failing; RV(ok) and RV(message) say what was found.
  diff_mode:
    support: N/A
    details: Changes nothing.
notes:
  - The AWS options are used only with O(eks_cluster).
seealso:
  - module: nodeops.rollout.node_drain
"""

EXAMPLES = r"""
- name: Wait until the replacement instances are Ready nodes, in every AZ, twice in a row
  nodeops.rollout.cluster_validate:
    instance_ids: "{{ new_instance_ids }}"
    each_az: true
    critical_pods: true
    passes: 2
    interval: 10s
    timeout: 10m

- name: The group has at least 6 Ready schedulable nodes
  nodeops.rollout.cluster_validate:
    label_selector: eks.amazonaws.com/nodegroup=workers
    expected_count: 6
"""

RETURN = r"""
ok:
  description: Whether the group passed the required number of consecutive evaluations (in check mode, the one evaluation).
  returned: always
  type: bool
message:
  description:
    - What the last evaluation found.
  returned: always
  type: str
  sample: "not valid: 1 of 3 instance(s) have no node registered: i-0abc; no Ready schedulable node in AZ(s) us-east-1c"
nodes:
  description: Per expected node name, C(instance_id), C(az), C(ready), C(not_ready_reason), C(schedulable), C(deleting).
  returned: always
  type: dict
missing:
  description: Instance ids with no registered node.
  returned: always
  type: list
  elements: str
not_ready:
  description: Expected nodes that are not Ready.
  returned: always
  type: list
  elements: str
unschedulable:
  description: Expected nodes that are cordoned (only checked with O(schedulable=true)).
  returned: always
  type: list
  elements: str
azs_without_ready_node:
  description: Availability Zones without a Ready (schedulable) expected node (only with O(each_az)).
  returned: always
  type: list
  elements: str
critical_pods_not_ready:
  description: Critical pods that are not Ready, each with C(pod), C(priority_class), C(node) and C(problem).
  returned: always
  type: list
  elements: dict
ready_count:
  description: How many expected nodes are Ready (and schedulable when required).
  returned: always
  type: int
expected_count:
  description: How many nodes were expected.
  returned: always
  type: int
passes_done:
  description: Consecutive successful evaluations at the end, or the passes O(interval) apart the healthy state held
    for by the API's record.
  returned: always
  type: int
held_seconds:
  description: How long the healthy state had held at the end by the API's record (the latest Ready transition of
    the nodes and critical pods looked at, less a second for its resolution), or null when the API records no time or
    the group is not valid.
  returned: always
  type: float
passes_required:
  description: The value of O(passes).
  returned: always
  type: int
evaluations:
  description: How many evaluations were made.
  returned: always
  type: int
history:
  description:
    - What the evaluations found while the module waited, one entry each time the finding changed, with
      C(seconds) (since the start), C(ok) and C(message).
  returned: always
  type: list
  elements: dict
  sample:
    - {"seconds": 0.0, "ok": false, "message": "not valid: 1 of 4 instance(s) have no node registered: i-0abc"}
    - {"seconds": 20.1, "ok": false, "message": "not valid: node ip-10-0-1-7.ec2.internal (i-0abc) not Ready: KubeletNotReady"}
    - {"seconds": 30.2, "ok": true, "message": "valid: 4 node(s) Ready and schedulable in us-east-1a, us-east-1b"}
seconds:
  description: Seconds spent.
  returned: always
  type: float
msg:
  description: The result in one line; on timeout, what failed in the last evaluation.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC, k8s_client
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.lock_keeper import LOCK_ARGUMENT_SPEC, run_keeping_lock
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.validate import run_cluster_validate


def argument_spec():
    spec = dict(AWS_ARGUMENT_SPEC)
    spec.update(K8S_ARGUMENT_SPEC)
    spec.update(LOCK_ARGUMENT_SPEC)
    spec.update(
        instance_ids=dict(type="list", elements="str"),
        label_selector=dict(type="str"),
        expected_count=dict(type="int"),
        each_az=dict(type="bool", default=False),
        azs=dict(type="list", elements="str"),
        tolerated_taints=dict(type="list", elements="dict", default=[], options=dict(
            key=dict(type="str", required=True, no_log=False), value=dict(type="str"),
            effect=dict(type="str", required=True, choices=["NoSchedule", "NoExecute"]))),
        schedulable=dict(type="bool", default=True),
        critical_pods=dict(type="bool", default=False),
        critical_namespaces=dict(type="list", elements="str", default=["kube-system"]),
        passes=dict(type="int", default=1, no_log=False),
        interval=dict(type="raw", default="10s"),
        timeout=dict(type="raw", default="10m"),
    )
    return spec


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        mutually_exclusive=[("instance_ids", "label_selector")],
        required_one_of=[("instance_ids", "label_selector")],
        required_by={"label_selector": "expected_count"},
        supports_check_mode=True,
    )
    run_keeping_lock(module, run_cluster_validate, k8s_client)


if __name__ == "__main__":
    main()
