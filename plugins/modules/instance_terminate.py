#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: instance_terminate
short_description: Terminate drained instances of a node group, through its Auto Scaling group or EC2
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Terminates the listed instances of an Auto Scaling group, each through C(TerminateInstanceInAutoScalingGroup), with or
    without decrementing the group's desired capacity (O(decrement_desired_capacity)).
  - An instance in Standby is terminated without decrementing the desired capacity, whatever
    O(decrement_desired_capacity) says, since it is not part of it and the group would scale in another instance. Nothing
    replaces it. So is an instance of the group's warm pool; the pool launches another from the group's current version.
  - Instances that a rollout detached from the group for surge (EC2 tag C(nodeops.rollout/detached-from=<group>)) are
    terminated through EC2; they no longer count toward the group, so nothing replaces them.
  - An instance that is already terminated, terminating or unknown to EC2 is reported in RV(already_gone) and is not an
    error. A running instance that is neither in the group nor detached from it is refused before anything is terminated.
  - When the group has a rollout recorded by M(nodeops.rollout.asg_surge), each decrement lowers the surge the rollout
    still owes (field C(owed) of the tag C(nodeops.rollout/progress)), written after each termination; decrementing more than
    is owed is refused.
  - Waits until the instances are terminated, deletes the Node objects that outlive their instances, and optionally waits
    until the group has its desired capacity in service again.
  - The termination gate comes first. An instance is terminated only when its node in this cluster (matched by
    C(spec.providerID), or by the instance's private DNS name) is cordoned and holds no pod other than DaemonSet, mirror and
    finished pods, or when it has no node while the cluster's nodes match other instances of the group (it never
    registered). Otherwise nothing is terminated and the module fails, naming each instance, its node and the pods left
    (RV(refused)). Drain the nodes first with M(nodeops.rollout.node_drain). The gate needs the Kubernetes connection.
extends_documentation_fragment:
  - nodeops.rollout.aws
  - nodeops.rollout.k8s
  - nodeops.rollout.lock
  - nodeops.rollout.events
  - nodeops.rollout.attributes.AWS
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: Shows the group's instances and desired capacity before and after the termination.
options:
  asg_name:
    description:
      - Name of the Auto Scaling group the instances belong to (or were detached from).
    type: str
    required: true
  instance_ids:
    description:
      - The instances to terminate, each listed once.
    type: list
    elements: str
    required: true
  decrement_desired_capacity:
    description:
      - Whether terminating an instance also lowers the group's desired capacity, so that the group does not replace it.
      - V(true) for every listed instance, V(false) for none, a whole number N for the first N listed instances only (a
        listed instance that is gone, detached, in Standby or in the warm pool uses its place without decrementing), or
        V(owed) for as many of the first listed instances as the surge the recorded rollout still owes.
      - Each decrement is announced in the group's state tag before it is made, and the surge owed is recomputed from the
        group when the module runs, so a termination whose tag write was interrupted is not paid back twice, and another
        actor's decrement (a cluster-autoscaler's scale-in) is left to that actor. The C(nodeops.rollout.rolling_update)
        role passes V(owed).
      - Refused when the desired capacity would fall below the group's minimum size, or when more of the listed instances
        would decrement it than the surge the recorded rollout still owes.
    type: raw
    default: false
  wait:
    description:
      - Wait until EC2 reports every terminated instance V(terminated), and the listed instances that were already leaving.
    type: bool
    default: true
  wait_timeout:
    description:
      - How long to wait, for O(wait) and again for O(wait_for_replacement), in seconds or as a duration such as V(90s),
        V(15m) or V(1h30m). The module fails on timeout.
      - The wait for O(wait) lasts at least as long as the group's termination lifecycle hooks may hold an instance in
        C(Terminating:Wait) (their longest heartbeat timeout, and two minutes for the shutdown). The module never completes
        a lifecycle action itself, since those hooks belong to other owners.
    type: raw
    default: 600
  wait_for_replacement:
    description:
      - Also wait until the group has exactly its desired capacity in service, and report the instances that replaced the
        terminated ones in RV(replacements).
    type: bool
    default: false
  delete_node:
    description:
      - Delete the Kubernetes Node object of each instance that is terminated (or was already gone) if it still exists.
      - Only nodes of instances that EC2 reports V(terminated) are deleted (a running kubelet would register again), so this
        works best with O(wait=true).
      - Needs C(delete) on nodes, which C(docs/rbac.yaml) does not grant (the role sets V(false)); see C(docs/rbac.md).
    type: bool
    default: true
seealso:
  - module: nodeops.rollout.node_group_info
  - module: nodeops.rollout.asg_surge
  - module: nodeops.rollout.node_drain
"""

EXAMPLES = r"""
- name: Terminate a drained batch, paying back the surge for two of them, and wait for the replacements
  nodeops.rollout.instance_terminate:
    asg_name: eks-workers-20240501
    instance_ids:
      - i-0123456789abcdef0
      - i-0fedcba9876543210
      - i-00112233445566778
    decrement_desired_capacity: 2
    wait_for_replacement: true

- name: Terminate instances detached for surge, AWS only
  nodeops.rollout.instance_terminate:
    asg_name: nodes-eu-west-1a.prod.k8s.local
    instance_ids: "{{ group.detached_instances }}"
    delete_node: false
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
asg_name:
  description: Name of the Auto Scaling group.
  returned: always
  type: str
rollout_id:
  description: Id of the rollout recorded on the group, or null.
  returned: success
  type: str
members:
  description: Listed instances that were in the group.
  returned: success
  type: list
  elements: str
detached:
  description: Listed instances that were detached from the group for surge.
  returned: success
  type: list
  elements: str
terminated:
  description: Instances terminated through the group (predicted in check mode).
  returned: success
  type: list
  elements: str
terminated_detached:
  description: Detached instances terminated through EC2 (predicted in check mode).
  returned: success
  type: list
  elements: str
refused:
  description:
    - The instances the termination gate refused, each with its node (null when it has none) and why; when any is refused
      the module fails and nothing is terminated.
  returned: always
  type: list
  elements: dict
  sample: [{"instance_id": "i-0123456789abcdef0", "node": "ip-10-0-1-10.ec2.internal",
            "reason": "i-0123456789abcdef0: node ip-10-0-1-10.ec2.internal is not cordoned; drain it first (node_drain)"}]
already_gone:
  description: Listed instances already terminated, terminating or unknown.
  returned: success
  type: list
  elements: str
decremented:
  description: Instances whose termination decremented desired capacity.
  returned: success
  type: list
  elements: str
desired_capacity:
  description: The group's desired capacity C(before) and C(after).
  returned: success
  type: dict
  sample: {before: 9, after: 7}
surge_owed:
  description: The recorded rollout's surge still owed C(before) and C(after) (both null without a rollout).
  returned: success
  type: dict
  sample: {before: 6, after: 4}
nodes_deleted:
  description: Node objects deleted because their instances were gone.
  returned: success
  type: list
  elements: str
nodes_left:
  description: Node objects left in place because their instances were not terminated yet.
  returned: success
  type: list
  elements: str
replacements:
  description: Instances launched by the group meanwhile, with C(instance_id), C(az), C(lifecycle_state),
    C(launch_template_id), C(launch_template_version) and C(image_id).
  returned: when O(wait_for_replacement=true)
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.event_writer import EVENTS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.lock_keeper import LOCK_ARGUMENT_SPEC, run_keeping_lock
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.terminate import run_instance_terminate


def argument_spec():
    spec = dict(AWS_ARGUMENT_SPEC, **K8S_ARGUMENT_SPEC)
    spec.update(LOCK_ARGUMENT_SPEC)
    spec.update(EVENTS_ARGUMENT_SPEC)
    spec.update(
        asg_name=dict(type="str", required=True),
        instance_ids=dict(type="list", elements="str", required=True),
        decrement_desired_capacity=dict(type="raw", default=False),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="raw", default=600),
        wait_for_replacement=dict(type="bool", default=False),
        delete_node=dict(type="bool", default=True),
    )
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_keeping_lock(module, run_instance_terminate)


if __name__ == "__main__":
    main()
