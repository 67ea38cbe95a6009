#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: asg_surge
short_description: Add extra instances to an Auto Scaling group for a node rollout, and give them back afterwards
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - With O(state=surged), records a rollout on the group in two tags, C(nodeops.rollout/state) (rollout id, original min,
    max and desired sizes, the surge, the target launch template version, the version the group launched before, the start
    time) and C(nodeops.rollout/progress) (the surge still owed, the processes it suspends), suspends C(AZRebalance) (only if
    it was not suspended already), then adds the surge. A group that has no room for two more tags and an operator's pause
    request (C(nodeops.rollout/pause); AWS allows 50 tags per group) is refused before any change, naming its tag count; so
    is, with O(method=detach), an instance without room for the two tags of a detached instance.
  - A rollout recorded by an earlier release (one C(nodeops.rollout/*) tag per field) is read as it is and recorded in the
    two tags at its next write.
  - O(method=scale) raises the group's maximum size and desired capacity by the surge, as EKS managed node groups do.
    O(method=detach) surges as kops does, detaching outdated instances from the group without decrementing its desired
    capacity so that the group launches their replacements; each detached instance is first tagged
    C(nodeops.rollout/detached=<rollout id>) and C(nodeops.rollout/detached-from=<group>), so no run loses track of it.
  - A rerun on a group with a rollout recorded resumes it and never surges twice; it finishes steps an interruption left
    undone (a suspension, the resize, a detach).
  - With O(state=restored), puts the maximum size back to the recorded original (or as high as desired needs, when a
    cluster-autoscaler moved desired during the rollout, whose change is left alone, as EKS does), resumes only the processes
    the rollout suspended, then removes the rollout's tags.
  - A restore never lowers desired capacity, since the group would then choose which instances go, drained or not. The
    surge is paid back before, by draining named instances and terminating them with M(nodeops.rollout.instance_terminate)
    and O(nodeops.rollout.instance_terminate#module:decrement_desired_capacity=owed); a restore while surge is still owed
    fails before any change.
  - A rerun of O(state=surged) while a restore is under way does not surge again (RV(restoring)).
  - The minimum size is never changed.
  - This module calls only AWS APIs. It accepts the Kubernetes connection options too, so that one
    C(module_defaults) group (C(group/nodeops.rollout.all)) can set every connection option of the collection once;
    they are not used.
extends_documentation_fragment:
  - nodeops.rollout.aws
  - nodeops.rollout.k8s
  - nodeops.rollout.lock
  - nodeops.rollout.attributes.AWS
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  name:
    description:
      - Name of the Auto Scaling group.
    type: str
    required: true
  state:
    description:
      - V(surged) starts or resumes the surge; V(restored) ends the rollout.
      - V(held) is for a rollout that stopped before its end - the surge and the rollout's tags stay, so the cluster keeps
        its capacity and the next run resumes, and the processes the rollout suspended are resumed, so the group heals and
        rebalances meanwhile. The C(nodeops.rollout.rolling_update) role does this when a rollout fails.
    type: str
    choices: [surged, held, restored]
    default: surged
  surge:
    description:
      - How many extra instances to add, a whole number (V(0) records the rollout without extra instances) or a percentage
        of the group's desired capacity such as V(50%) (rounded up).
      - Default is the EKS rule, the larger of twice the number of the group's Availability Zones and O(max_unavailable).
      - Pass the C(plan.surge) of M(nodeops.rollout.node_group_info) to surge only as much as the rollout replaces.
      - With O(method=detach), at most this many outdated instances are detached (fewer when fewer are outdated).
      - Ignored when a rollout is recorded already.
    type: raw
  max_unavailable:
    description:
      - The rollout's batch size, a whole number or a percentage of the desired capacity (rounded down, at least 1). Only used
        for the default O(surge).
    type: raw
  method:
    description:
      - V(scale) raises max and desired by the surge; V(detach) detaches outdated instances without decrementing desired.
    type: str
    choices: [scale, detach]
    default: scale
  instance_ids:
    description:
      - With O(method=detach), the instances to detach (in service in the group), instead of the oldest outdated instances
        spread across Availability Zones.
    type: list
    elements: str
  max_size_limit:
    description:
      - The largest maximum size the group may have, for example to stay within an EC2 instance quota or a budget.
      - A surge whose desired capacity would exceed it is refused before anything changes, and the error names the
        largest surge that fits. The new maximum size is capped at it.
    type: int
  suspend_processes:
    description:
      - Scaling processes to suspend for the rollout. Only those not suspended already are suspended and recorded, and only
        those are resumed by O(state=restored).
      - C(Launch) and C(Terminate) cannot be suspended here; a rollout needs both.
    type: list
    elements: str
    choices: [AZRebalance, AddToLoadBalancer, AlarmNotification, HealthCheck, InstanceRefresh, ReplaceUnhealthy, ScheduledActions]
    default: [AZRebalance]
  previous_version:
    description:
      - The explicit version of the group's launch template that the group launched before it was pointed at the
        rollout's target, recorded so that a rollback can point it back (RV(nodeops.rollout.launch_template_version#module:previous_version)).
      - When it is not given, or is the target itself (the group was pointed at the target by a run that stopped before
        recording the rollout), the version most of the group's other instances were launched from is recorded.
      - Ignored when a rollout is recorded already.
    type: int
  rollout_id:
    description:
      - Id of the rollout to record (1 to 64 letters, digits, C(.), C(_), C(:) or C(-)). Default is generated from the
        time, for example C(r-20240501T120000Z-1a2b3c).
      - When a rollout is recorded already, a different id is refused.
    type: str
  wait:
    description:
      - Wait until the group has exactly its desired capacity in service (new instances launched and in service after a
        surge, scale-in finished after a restore).
    type: bool
    default: false
  wait_timeout:
    description:
      - How long to wait with O(wait), in seconds or as a duration such as V(90s), V(15m) or V(1h30m). On timeout the module
        fails; the rollout stays recorded, so a rerun resumes it.
    type: raw
    default: 600
seealso:
  - module: nodeops.rollout.node_group_info
  - module: nodeops.rollout.instance_terminate
"""

EXAMPLES = r"""
- name: Surge as planned and wait for the new instances
  nodeops.rollout.asg_surge:
    name: eks-workers-20240501
    surge: "{{ workers.node_groups[0].plan.surge }}"
    wait: true

- name: Surge as kops does, detaching two outdated instances
  nodeops.rollout.asg_surge:
    name: nodes-eu-west-1a.prod.k8s.local
    method: detach
    surge: 2

- name: Never let the group grow past 40 instances
  nodeops.rollout.asg_surge:
    name: eks-workers-20240501
    surge: 25%
    max_size_limit: 40

- name: A rollout failed - keep its surge and state for the next run, give the group its processes back
  nodeops.rollout.asg_surge:
    name: eks-workers-20240501
    state: held

- name: End the rollout
  nodeops.rollout.asg_surge:
    name: eks-workers-20240501
    state: restored
"""

RETURN = r"""
name:
  description: Name of the Auto Scaling group.
  returned: always
  type: str
state:
  description: The requested state.
  returned: always
  type: str
rollout_id:
  description: Id of the rollout recorded on the group (null after a restore when none was recorded).
  returned: success
  type: str
  sample: r-20240501T120000Z-1a2b3c
method:
  description: The recorded method, V(scale) or V(detach).
  returned: when O(state=surged)
  type: str
resumed:
  description: Whether a rollout was recorded already, so this run resumed it instead of surging again.
  returned: when O(state=surged)
  type: bool
surge:
  description: The recorded surge (extra instances; detached instances for O(method=detach)).
  returned: when O(state=surged)
  type: int
sizes:
  description: C(before) and C(after), each with C(min_size), C(max_size) and C(desired_capacity).
  returned: success
  type: dict
  sample:
    before: {min_size: 3, max_size: 6, desired_capacity: 3}
    after: {min_size: 3, max_size: 12, desired_capacity: 9}
suspended_processes:
  description: Processes suspended on the group afterwards.
  returned: when O(state=surged)
  type: list
  elements: str
suspended_by_rollout:
  description: Processes the rollout suspended (and will resume).
  returned: when O(state=surged)
  type: list
  elements: str
detached_instances:
  description: Instances detached by this run (O(method=detach)).
  returned: when O(state=surged)
  type: list
  elements: str
rollout_state:
  description: The rollout as recorded, in the shape of C(state) in M(nodeops.rollout.node_group_info).
  returned: when a rollout is recorded
  type: dict
steps:
  description: What this run changed, in order, among V(recorded), V(suspended), V(resized), V(detached), V(resumed), V(cleared).
  returned: when changed and not in check mode
  type: list
  elements: str
in_service_instances:
  description: Instances in service once the wait ended.
  returned: when O(wait=true)
  type: list
  elements: str
restored:
  description: Whether a recorded rollout was ended.
  returned: when O(state=restored)
  type: bool
held:
  description: Whether a recorded rollout was held (its surge and tags kept, its suspended processes resumed).
  returned: when O(state=held)
  type: bool
original_sizes:
  description: The recorded original C(min_size), C(max_size) and C(desired_capacity).
  returned: when O(state=restored) and a rollout was recorded
  type: dict
surge_owed:
  description:
    - The surge the rollout still owed when it was restored or held; for a restore it is recomputed from the group (never
      more than desired stands above the original desired capacity) and is 0, since a restore refuses to run while surge is owed.
  returned: when O(state=restored) or O(state=held), and a rollout was recorded
  type: int
autoscaler_moved:
  description: Whether desired capacity differed from what the rollout left, so only the rollout's own surge was taken back.
  returned: when O(state=restored)
  type: bool
autoscaler_delta:
  description: By how much something else moved desired capacity during the rollout.
  returned: when O(state=restored) and a rollout was recorded
  type: int
restoring:
  description: Whether a restore of the recorded rollout is under way (its sizes recorded), so the surge is not applied again.
  returned: when O(state=surged)
  type: bool
resumed_processes:
  description: Processes resumed by the restore or the hold (only those the rollout suspended).
  returned: when O(state=restored) or O(state=held)
  type: list
  elements: str
removed_tags:
  description: The C(nodeops.rollout/*) state tags removed from the group.
  returned: when O(state=restored)
  type: list
  elements: str
detached_remaining:
  description: Instances detached from the group for surge that are still running (drain and terminate them).
  returned: when O(state=restored)
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.core.choices import METHODS
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.lock_keeper import LOCK_ARGUMENT_SPEC, run_keeping_lock
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.surge import run_asg_surge

SUSPENDABLE = ["AZRebalance", "AddToLoadBalancer", "AlarmNotification", "HealthCheck", "InstanceRefresh", "ReplaceUnhealthy",
               "ScheduledActions"]


def argument_spec():
    spec = dict(AWS_ARGUMENT_SPEC)
    spec.update(K8S_ARGUMENT_SPEC)
    spec.update(LOCK_ARGUMENT_SPEC)
    spec.update(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["surged", "held", "restored"], default="surged"),
        surge=dict(type="raw"),
        max_unavailable=dict(type="raw"),
        method=dict(type="str", choices=list(METHODS), default="scale"),
        instance_ids=dict(type="list", elements="str"),
        max_size_limit=dict(type="int"),
        suspend_processes=dict(type="list", elements="str", choices=SUSPENDABLE, default=["AZRebalance"]),
        previous_version=dict(type="int"),
        rollout_id=dict(type="str"),
        wait=dict(type="bool", default=False),
        wait_timeout=dict(type="raw", default=600),
    )
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_keeping_lock(module, run_asg_surge)


if __name__ == "__main__":
    main()
