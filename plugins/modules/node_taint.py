#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_taint
short_description: Add or remove taints, labels and annotations on Kubernetes nodes, and cordon or uncordon them
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - For each node in O(nodes), adds or removes the taints in O(taints), sets or removes the labels in O(labels) and
    the annotations in O(annotations), and marks the node unschedulable or schedulable (O(cordon)).
  - Only what is listed is touched. Taints, labels and annotations of other owners (controllers, the cloud
    provider, other tools) are kept as they are.
  - Each node is changed by read-modify-write. The write carries the C(resourceVersion) that was read, so a
    concurrent change makes the API answer 409 Conflict instead of being overwritten. The module then reads the
    node again and decides again, up to 8 times.
  - Every node is read before any is changed. If a node does not exist, the module fails and changes nothing.
  - Used by the rolling update to taint outdated nodes (C(nodeops.rollout/outdated=true:NoSchedule) by default)
    so that no pod moves onto them again, to cordon them, and to label drained nodes
    C(node.kubernetes.io/exclude-from-external-load-balancers=true).
options:
  nodes:
    description:
      - Names of the nodes to change.
      - Required unless O(release) is given; empty only with O(missing=skip).
    type: list
    elements: str
  missing:
    description:
      - What to do when a node of O(nodes) does not exist.
      - V(fail) - fail, changing no node.
      - V(skip) - leave it out (listed in RV(missing)) and change the others; a node that has gone (its instance
        terminated) carries nothing left to change.
    type: str
    choices: [fail, skip]
    default: fail
  release:
    description:
      - Take the marks of a rollout off nodes, instead of O(nodes), O(taints), O(labels), O(annotations) and O(cordon).
      - Each entry is one of the C(marked) or C(marked_outdated) entries of M(nodeops.rollout.node_group_info), with
        C(node) (the node name) and C(marks) (any of C(taint), C(cordon), C(label), C(autoscaler)).
      - C(taint) removes the taint O(taint_key) and C(nodeops.rollout/queued); C(cordon) (and C(label)) uncordons the
        node, removes the annotations C(nodeops.rollout/cordoned) and C(nodeops.rollout/drained-at) and the label
        C(node.kubernetes.io/exclude-from-external-load-balancers); C(autoscaler) removes
        C(cluster-autoscaler.kubernetes.io/scale-down-disabled) and C(nodeops.rollout/scale-down-disabled).
      - Decided on each node as it is read just before the write - a cordon is lifted only while
        C(nodeops.rollout/cordoned) says the rollout made it, the autoscaler annotation only while
        C(nodeops.rollout/scale-down-disabled) says the rollout put it there - so a mark of another owner is never
        taken off. Nodes that have gone are skipped; an empty list changes nothing.
    type: list
    elements: dict
    suboptions:
      node:
        description:
          - The node's name.
        type: str
        required: true
      marks:
        description:
          - The rollout's marks node_group_info found on it; only these kinds are taken off.
        type: list
        elements: str
        default: []
      instance_id:
        description:
          - The node's instance (as node_group_info gives it; not used).
        type: str
      drained:
        description:
          - Whether node_drain finished the node (as node_group_info gives it for C(marked_outdated); not used).
        type: bool
  release_except:
    description:
      - Node names O(release) leaves as they are, whatever their marks. The role passes the nodes whose drain it skipped,
        which stay cordoned, with the pods that kept them from draining, for the operator to look at.
    type: list
    elements: str
    default: []
  release_only:
    description:
      - The kinds of marks O(release) takes off; the others are left.
    type: list
    elements: str
    choices: [taint, cordon, autoscaler]
    default: [taint, cordon, autoscaler]
  taint_key:
    description:
      - The rollout's taint key, which O(release) removes.
    type: str
    default: nodeops.rollout/outdated
  taints:
    description:
      - Taints to add (O(state=present)) or remove (O(state=absent)).
      - A node holds one taint per key and effect. With O(state=present), a taint with the same key and effect
        already on the node gets the value given.
      - With O(state=absent), a taint is removed when its key matches and, if given, its effect and value match.
    type: list
    elements: dict
    default: []
    suboptions:
      key:
        description:
          - The taint key, for example V(nodeops.rollout/outdated).
        type: str
        required: true
      value:
        description:
          - The taint value. Empty when not given.
        type: str
      effect:
        description:
          - The taint effect.
          - Required with O(state=present).
        type: str
        choices: [NoSchedule, PreferNoSchedule, NoExecute]
  state:
    description:
      - Whether the taints, labels and annotations listed should be on the nodes (V(present)) or not (V(absent)).
      - It does not apply to O(cordon).
    type: str
    choices: [present, absent]
    default: present
  cordon:
    description:
      - V(true) marks the nodes unschedulable (cordon), V(false) marks them schedulable (uncordon).
      - When not set, the nodes' schedulability is left as it is.
    type: bool
  labels:
    description:
      - Labels to set (O(state=present)) or remove (O(state=absent); the values are ignored).
      - With O(state=present), a null value removes the label.
    type: dict
    default: {}
  annotations:
    description:
      - Annotations to set (O(state=present)) or remove (O(state=absent); the values are ignored).
      - With O(state=present), a null value removes the annotation.
    type: dict
    default: {}
extends_documentation_fragment:
  - nodeops.rollout.k8s
  - nodeops.rollout.aws
  - nodeops.rollout.lock
  - nodeops.rollout.events
  - nodeops.rollout.attributes.K8S
attributes:
  check_mode:
    support: full
    details: Reads the nodes and reports what would change; nothing is written.
  diff_mode:
    support: full
    details: Shows each node's cordon state, taints, labels and annotations before and after.
notes:
  - The AWS options are used only with O(eks_cluster).
seealso:
  - module: nodeops.rollout.node_drain
"""

EXAMPLES = r"""
- name: Taint the outdated nodes so that no pod is scheduled onto them again
  nodeops.rollout.node_taint:
    nodes: "{{ outdated_nodes }}"
    taints:
      - key: nodeops.rollout/outdated
        value: "true"
        effect: NoSchedule

- name: Cordon two nodes and label them out of external load balancers
  nodeops.rollout.node_taint:
    nodes: [ip-10-0-1-12.ec2.internal, ip-10-0-2-40.ec2.internal]
    cordon: true
    labels:
      node.kubernetes.io/exclude-from-external-load-balancers: "true"

- name: Give back the up-to-date nodes an interrupted rollout left marked
  nodeops.rollout.node_taint:
    release: "{{ group_info.node_groups[0].marked }}"

- name: Roll back - remove the rollout's taint and uncordon
  nodeops.rollout.node_taint:
    nodes: "{{ outdated_nodes }}"
    state: absent
    taints:
      - key: nodeops.rollout/outdated
    cordon: false
"""

RETURN = r"""
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
missing:
  description: The nodes that were not there (O(missing=skip), O(release)), left out.
  returned: success
  type: list
  elements: str
  sample: ["ip-10-0-3-7.ec2.internal"]
nodes:
  description: Per node name, what the node carries after the change (or would carry, in check mode).
  returned: success
  type: dict
  contains:
    changed:
      description: Whether this node was changed (or would be, in check mode).
      type: bool
    changes:
      description: Each change as text, for example C(taint nodeops.rollout/outdated=true:NoSchedule added).
      type: list
      elements: str
    unschedulable:
      description: Whether the node is cordoned.
      type: bool
    taints:
      description: Every taint of the node as C(key=value:Effect).
      type: list
      elements: str
    labels:
      description: Every label of the node.
      type: dict
    annotations:
      description: Every annotation of the node.
      type: dict
    conflicts:
      description: How many writes met a concurrent change (409 Conflict) and were redone from a fresh read.
      type: int
  sample:
    ip-10-0-1-12.ec2.internal:
      changed: true
      changes: ["taint nodeops.rollout/outdated=true:NoSchedule added"]
      unschedulable: false
      taints: ["example.com/gpu=true:NoSchedule", "nodeops.rollout/outdated=true:NoSchedule"]
      labels: {"topology.kubernetes.io/zone": "us-east-1a"}
      annotations: {}
      conflicts: 0
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.event_writer import EVENTS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC, k8s_client
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import TAINT_EFFECTS
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import DEFAULT_TAINT_KEY, RELEASE_KINDS
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.lock_keeper import LOCK_ARGUMENT_SPEC, run_keeping_lock
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.nodes import run_node_taint


def argument_spec():
    spec = dict(AWS_ARGUMENT_SPEC)
    spec.update(K8S_ARGUMENT_SPEC)
    spec.update(LOCK_ARGUMENT_SPEC)
    spec.update(EVENTS_ARGUMENT_SPEC)
    spec.update(
        nodes=dict(type="list", elements="str"),
        missing=dict(type="str", choices=["fail", "skip"], default="fail"),
        release=dict(type="list", elements="dict", options=dict(
            node=dict(type="str", required=True),
            marks=dict(type="list", elements="str", default=[]),
            instance_id=dict(type="str"),
            drained=dict(type="bool"),
        )),
        release_except=dict(type="list", elements="str", default=[]),
        release_only=dict(type="list", elements="str", choices=list(RELEASE_KINDS), default=list(RELEASE_KINDS)),
        taint_key=dict(type="str", default=DEFAULT_TAINT_KEY, no_log=False),
        taints=dict(type="list", elements="dict", default=[], options=dict(
            key=dict(type="str", required=True, no_log=False),
            value=dict(type="str"),
            effect=dict(type="str", choices=list(TAINT_EFFECTS)),
        )),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        cordon=dict(type="bool"),
        labels=dict(type="dict", default={}),
        annotations=dict(type="dict", default={}),
    )
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True, required_one_of=[("nodes", "release")],
                           mutually_exclusive=[("nodes", "release")])
    run_keeping_lock(module, run_node_taint, k8s_client)


if __name__ == "__main__":
    main()
