#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_group_info
short_description: Describe Auto Scaling groups as Kubernetes node groups, with what is outdated and the rollout plan
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Reads one Auto Scaling group by name, or every group carrying the given tags, and reports each as a node group.
  - For each group, returns its sizes, its Availability Zones and the launch template and version it launches now, with
    V($Latest) and V($Default) resolved to the version number (also for groups with a MixedInstancesPolicy).
  - Lists every instance (id, Availability Zone, lifecycle state, health, launch template version, image, launch time)
    joined to its Kubernetes node through the node's C(spec.providerID) (name, Ready, schedulable, taints).
    Instances that an earlier rollout detached from the group for surge (EC2 tag C(nodeops.rollout/detached-from))
    are listed too.
  - An instance is outdated when it was launched from another launch template or version than the group's, when its
    node is annotated C(nodeops.rollout/needs-update), or when a rollout detached it for surge.
  - Returns the rollout recorded on the group by M(nodeops.rollout.asg_surge) (the tags C(nodeops.rollout/state) and
    C(nodeops.rollout/progress), or the one tag per field of an earlier release), if any,
    and the plan of a rollout - surge, batch size, canary and batches spread across Availability Zones.
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
    support: partial
    details:
      - Changes nothing. With O(target) (the plan of a rollout, as C(--check --diff) runs it), returns as C(diff) what
        the rollout would change - the group's launch template version and image, its sizes while surged, the
        instances that would go - and the taint and cordon of each outdated node.
      - Ansible prints a diff only for a task that reports a change; the role's plan reports one in diff mode.
options:
  name:
    description:
      - Name of the Auto Scaling group.
      - The module fails when the group does not exist or has no instances.
      - Exactly one of O(name) and O(tags) is required.
    type: str
  tags:
    description:
      - Find every Auto Scaling group that carries all of these tags (keys and values), for example the tag
        C(eks:nodegroup-name) of an EKS node group, C(kubernetes.io/cluster/<cluster>) for every group of a cluster, or
        C(kops.k8s.io/instancegroup) of a kops instance group.
      - A value of V(null) or an empty string matches the tag key alone, whatever its value.
      - The module fails when no group matches. Matching groups without instances are reported with an empty plan.
    type: dict
  max_unavailable:
    description:
      - How many nodes may be out of service at once, the batch size of the plan.
      - A whole number, or a percentage of the group's desired capacity such as V(25%) (rounded down).
        The result is at least 1 and at most 100 (the EKS quota).
      - While a rollout is recorded, percentages are of the group's original desired capacity.
      - Default is one node, as EKS.
    type: raw
  max_surge:
    description:
      - How many extra instances the plan launches before draining.
      - A whole number (V(0) for none), or a percentage of the group's desired capacity such as V(20%) (rounded up).
      - Default is the EKS rule, the larger of twice the number of the group's Availability Zones and the batch size.
      - The plan never surges more than the number of outdated instances in the group.
    type: raw
  target:
    description:
      - Compare the instances with this target instead of the launch template version the group launches now.
      - For planning before the target exists, as in check mode, where M(nodeops.rollout.launch_template_version) returns the
        version it would create as RV(nodeops.rollout.launch_template_version#module:target).
      - Options not given are taken from what the group launches now.
    type: dict
    suboptions:
      launch_template_id:
        description: The launch template id.
        type: str
      version:
        description: The explicit launch template version number.
        type: raw
        required: true
      image_id:
        description: The AMI of that version.
        type: str
      ssm_parameter:
        description:
          - The SSM parameter the AMI was resolved from, as M(nodeops.rollout.launch_template_version) returns it. Its path
            names the Kubernetes version of an EKS-optimized AMI (C(/aws/service/eks/optimized-ami/1.30/...)) when the AMI's
            name does not (see RV(node_groups.versions)).
        type: str
      launched_before:
        description:
          - With a C(max_node_age), the time before which an instance is outdated whatever it runs (the reason C(age)), as
            M(nodeops.rollout.launch_template_version) returns it; the plan lists these instances in C(aged) of RV(node_groups[].plan).
        type: str
      max_node_age:
        description: The max_node_age behind O(target.launched_before), in seconds (for the reason's text).
        type: int
  timings:
    description:
      - What the estimated duration of the plan (C(eta_seconds) in RV(node_groups[].plan)) assumes, each as seconds or a duration.
    type: dict
    suboptions:
      boot_seconds:
        description: From launch to a Ready node.
        type: raw
        default: 180
      drain_seconds:
        description: The drain of one wave of nodes.
        type: raw
        default: 90
      validate_seconds:
        description: One validation of the new nodes.
        type: raw
        default: 30
      task_seconds:
        description:
          - What Ansible takes to run one task of the role on this controller (module start-up and return); the estimate
            counts it for the tasks outside the waits.
        type: raw
        default: 1
  bake_time:
    description:
      - The rollout's bake time, in the plan (C(bake_seconds), each batch's C(hold_seconds) and C(eta_seconds)), as seconds or
        a duration (V(10m)), at most 48 hours; see M(nodeops.rollout.rollout_step).
    type: raw
    default: 0
  checkpoints:
    description:
      - The rollout's checkpoints, in the plan (no batch crosses one; C(checkpoints), each batch's C(hold_seconds) and
        C(eta_seconds)) - a list of C(percent) and C(wait), or texts such as V(50%:10m); see M(nodeops.rollout.rollout_step).
    type: list
    elements: raw
    default: []
  abort_alarms:
    description:
      - Names of CloudWatch alarms (metric or composite) to read, returned in RV(alarms). An alarm that does not exist fails the
        module, naming it; one in state C(ALARM) makes RV(start_refusal) say so.
    type: list
    elements: str
    default: []
  alerts:
    description:
      - The alert gates (see M(nodeops.rollout.rollout_step)'s O(nodeops.rollout.rollout_step#module:alerts)) - the alerts
        firing now are returned in RV(alerts); an abort alert firing makes RV(start_refusal) say so; an Alertmanager that
        does not answer fails the module, naming its URL.
    type: dict
  alertmanager_token:
    description:
      - The bearer token of O(alerts) C(auth) V(bearer).
    type: str
  windows:
    description:
      - Maintenance windows, each with C(days), C(start), C(duration) and C(timezone), or a text such as
        V(Mon-Fri 22:00 4h Europe/Berlin) (several separated by C(;)); see M(nodeops.rollout.rollout_step). Reported in
        RV(window); outside them RV(start_refusal) says when the next one starts.
    type: raw
  step_seconds:
    description:
      - The predicted duration of one step, as seconds or a duration; RV(start_refusal) also refuses when the open window
        closes sooner.
    type: raw
    default: 0
  join_timeout:
    description:
      - How long a new instance may take to become a Ready node, as seconds (V(600)) or a duration (V(10m)).
      - When set, up-to-date instances in service that have had that long since launch and are still no Ready node are listed
        in RV(node_groups[].failed_to_join); the C(nodeops.rollout.rolling_update) role replaces them once per run.
      - Not set, nothing is listed.
    type: raw
  include_nodes:
    description:
      - Join instances to their Kubernetes nodes. This needs the Kubernetes connection options.
      - With V(false) no Kubernetes API is called; the node annotation C(nodeops.rollout/needs-update) is then not seen.
    type: bool
    default: true
  post_drain_delay:
    description:
      - The wait between a node's drain and its termination, as seconds (V(60)) or a duration (V(90s)); V(0) does not wait.
      - Empty (the default) - none where every load balancer that routes to the nodes can be read (each drained node waits
        instead for its instance to leave the target groups that list it, see RV(node_groups[].load_balancers)), and 60
        seconds (EKS's delay) where a Service of type LoadBalancer routes through a load balancer that cannot be read.
      - The plan's estimate counts it (C(timings.post_drain_delay) in RV(node_groups[].plan)).
    type: raw
    default: ""
  load_balancers:
    description:
      - With O(include_nodes), read the load balancers that route to the cluster's nodes - the Services of type
        LoadBalancer and the ELBv2 load balancers their status names, and the AWS Load Balancer Controller's
        TargetGroupBindings where the cluster serves them - to add their instance target groups to what a drained node
        waits for, and to settle O(post_drain_delay). V(false) reads only the group's own target groups, and an empty
        O(post_drain_delay) is then 0.
    type: bool
    default: false
  check_volumes:
    description:
      - With O(include_nodes), list the cluster's VolumeAttachments (and PersistentVolumes) to name, among
        RV(node_groups[].refusals), the volumes a rollout would strand. The C(nodeops.rollout.rolling_update) role checks
        them before it changes a group, and reads the group without them afterwards.
    type: bool
    default: true
  taint_key:
    description:
      - The key of the taint the rollout puts on outdated nodes, to find up-to-date nodes that still carry it (RV(node_groups[].marked)).
    type: str
    default: nodeops.rollout/outdated
  standby_instances:
    description:
      - What the rollout does with outdated instances in Standby (see M(nodeops.rollout.rollout_step)). With V(terminate)
        or V(wait) they are outdated (RV(node_groups[].outdated)); with V(ignore) they are not, and are only listed in
        C(standby) of RV(node_groups[].plan).
    type: str
    choices: [ignore, terminate, wait]
    default: ignore
  surge_method:
    description:
      - How the rollout will surge (see M(nodeops.rollout.asg_surge)); with V(detach), RV(node_groups[].refusals) names the
        outdated instances without room for the two tags of an instance detached for surge, and
        RV(node_groups[].surge_detach) the instances to detach.
    type: str
    choices: [scale, detach]
    default: scale
  taint_effect:
    description:
      - The effect asked for the taint on outdated nodes. The plan's C(taint_effect) (in RV(node_groups[].plan)) is this effect when the surge
        replaces every outdated node, and V(PreferNoSchedule) otherwise, so that the Ready schedulable nodes never fall
        below the group's original size while the surge covers a batch.
    type: str
    choices: [NoSchedule, PreferNoSchedule]
    default: NoSchedule
  check_access:
    description:
      - Ask the Kubernetes API server, before any other request, whether the identity of the Kubernetes connection may do
        each thing the rules of the collection's C(docs/rbac.yaml) grant - one C(SelfSubjectAccessReview) (what
        C(kubectl auth can-i) asks) per verb and resource, four at a time - and return what it may not in RV(access).
        An access review stores nothing and changes nothing, and every authenticated identity may send one (the default
        ClusterRole C(system:basic-user)).
      - The ClusterRole's rules are asked for in every namespace, Events in the namespace C(default) (where the rollout
        writes them), the lock's Leases in O(lock_namespace).
      - Works with O(include_nodes=false) too (the Kubernetes connection is then used for the reviews only).
    type: bool
    default: false
  require_access:
    description:
      - Check the access as O(check_access) does, and fail when the identity lacks a permission the rollout needs (Events
        are best effort, not needed), before any other request, with the error of a refused permission - its message
        names each missing permission and the rule of C(docs/rbac.yaml) that grants it, its C(permission) the first of
        them, its C(access) the whole check. The role's runs ask this before they take the lock
        (C(rolling_update_check_access)).
    type: bool
    default: false
  lock_namespace:
    description:
      - With O(check_access) or O(require_access), the namespace of the rollout lock's Leases (the role's C(rolling_update_lock_namespace)).
      - Default is the namespace of O(lock) when it is given, else V(kube-system).
    type: str
notes:
  - The plan is data for the C(nodeops.rollout.rolling_update) role and for review in check mode; the estimated duration
    follows the rollout's pipeline with the timings of O(timings).
  - A group with target groups costs one DescribeTargetGroups and one DescribeTargetGroupAttributes per target group.
  - With O(include_nodes) and O(check_volumes), when an outdated instance has a node, the cluster's VolumeAttachments are
    listed (and its PersistentVolumes, when a volume is attached) to find the volumes a rollout would strand
    (RV(node_groups[].refusals)).
seealso:
  - module: nodeops.rollout.asg_surge
  - module: nodeops.rollout.launch_template_version
  - module: nodeops.rollout.instance_terminate
"""

EXAMPLES = r"""
- name: Describe one node group and plan a rollout two nodes at a time
  nodeops.rollout.node_group_info:
    name: eks-workers-20240501
    max_unavailable: 2
    region: eu-west-1
    kubeconfig: ~/.kube/prod
  register: workers

- name: Show what would be replaced
  ansible.builtin.debug:
    msg: "{{ workers.node_groups[0].outdated | map(attribute='instance_id') | list }}"

- name: Every node group of an EKS cluster, 25% of each group at a time, no extra surge beyond two instances
  nodeops.rollout.node_group_info:
    tags:
      kubernetes.io/cluster/prod: owned
    max_unavailable: 25%
    max_surge: 2
    eks_cluster: prod

- name: Before a rollout, what the run's Kubernetes identity may not do of what docs/rbac.yaml grants
  nodeops.rollout.node_group_info:
    name: eks-workers-20240501
    check_access: true
    kubeconfig: ~/.kube/nodeops-rollout
  register: workers

- name: Stop when a permission the rollout needs is missing
  ansible.builtin.fail:
    msg: "{{ workers.access.refusal }}"
  when: workers.access.refusal is not none

- name: A kops instance group, AWS only
  nodeops.rollout.node_group_info:
    tags:
      kops.k8s.io/instancegroup: nodes-eu-west-1a
    include_nodes: false
"""

RETURN = r"""
node_groups:
  description: One entry per Auto Scaling group, sorted by name.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: Name of the Auto Scaling group.
      type: str
      sample: eks-workers-20240501
    arn:
      description: ARN of the Auto Scaling group.
      type: str
    min_size:
      description: Minimum size of the group now.
      type: int
      sample: 3
    max_size:
      description: Maximum size of the group now.
      type: int
      sample: 6
    desired_capacity:
      description: Desired capacity of the group now.
      type: int
      sample: 3
    availability_zones:
      description: The group's Availability Zones.
      type: list
      elements: str
      sample: [eu-west-1a, eu-west-1b, eu-west-1c]
    az_count:
      description: Number of the group's Availability Zones.
      type: int
      sample: 3
    suspended_processes:
      description: Scaling processes suspended on the group.
      type: list
      elements: str
      sample: [AZRebalance]
    tags:
      description: The group's tags.
      type: dict
    launch_template:
      description: The launch template the group launches now, resolved.
      type: dict
      contains:
        launch_template_id:
          description: Launch template id.
          type: str
          sample: lt-0123456789abcdef0
        launch_template_name:
          description: Launch template name.
          type: str
        version:
          description: The explicit version number new instances are launched from.
          type: int
          sample: 4
        version_spec:
          description: The version as the group names it, V($Latest), V($Default) or a number.
          type: str
          sample: $Latest
        default_version:
          description: The template's default version.
          type: int
        latest_version:
          description: The template's latest version.
          type: int
        image_id:
          description: The AMI of that version.
          type: str
          sample: ami-0123456789abcdef0
        instance_type:
          description: The instance type of that version, if it sets one.
          type: str
        mixed_instances_policy:
          description: Whether the template comes from the group's MixedInstancesPolicy.
          type: bool
    target:
      description: What instances are compared with, C(launch_template_id), C(version) (text) and C(image_id).
      type: dict
    instance_count:
      description: Instances in the group that are not leaving it.
      type: int
    in_service_count:
      description: Instances in the group that are InService.
      type: int
    instances:
      description: Every instance of the group, then the instances detached from it for surge.
      type: list
      elements: dict
      contains:
        instance_id:
          description: EC2 instance id.
          type: str
        az:
          description: Availability Zone.
          type: str
        lifecycle_state:
          description: Auto Scaling lifecycle state (V(InService), V(Pending), ...); V(Detached) for detached instances.
          type: str
        health_status:
          description: Auto Scaling health status.
          type: str
        launch_template:
          description: C(id), C(name) and C(version) the instance was launched from.
          type: dict
        image_id:
          description: The instance's AMI.
          type: str
        instance_type:
          description: The instance type.
          type: str
        launch_time:
          description: Launch time, UTC, ISO 8601.
          type: str
        private_dns_name:
          description: Private DNS name (the node name on EKS).
          type: str
        ec2_state:
          description: EC2 state (V(pending), V(running), ...).
          type: str
        protected_from_scale_in:
          description: Whether the instance is protected from scale-in.
          type: bool
        detached:
          description: Whether a rollout detached the instance from the group for surge.
          type: bool
        node:
          description:
            - The instance's node as a dict - C(name), C(ready), C(schedulable), C(taints) - or null when none is
              registered or O(include_nodes=false).
            - Unlike C(outdated[].node), which is the node's name only; here the name is C(node.name).
          type: dict
        outdated:
          description: Whether the instance must be replaced.
          type: bool
        outdated_reasons:
          description: Why it must be replaced.
          type: list
          elements: str
    detached_instances:
      description: Ids of the instances detached from the group for surge and still alive.
      type: list
      elements: str
    outdated:
      description: The outdated instances, in the order of C(instances).
      type: list
      elements: dict
      contains:
        instance_id:
          description: EC2 instance id.
          type: str
        az:
          description: Availability Zone.
          type: str
        node:
          description:
            - The name of the instance's node (a string, not the dict of C(instances[].node)), or null when none is
              registered or O(include_nodes=false).
          type: str
        launch_time:
          description: Launch time, UTC, ISO 8601.
          type: str
        lifecycle_state:
          description: Auto Scaling lifecycle state; V(Detached) for an instance detached for surge.
          type: str
        reason:
          description: Every reason the instance must be replaced, as one text (C(reasons) joined by C(; )).
          type: str
        reasons:
          description: Every reason the instance must be replaced.
          type: list
          elements: str
    outdated_count:
      description: Number of outdated instances.
      type: int
    up_to_date:
      description: Ids of the instances in service or pending that need nothing.
      type: list
      elements: str
    nodes_joined:
      description: Whether instances were joined to nodes (O(include_nodes)).
      type: bool
    mismatch:
      description:
        - Null, or why the group's instances in service are not nodes of this cluster (none of them is), because the
          Kubernetes connection points at another cluster or the nodes' C(spec.providerID) does not name their instances. The message
          names the instances and the cluster's nodes. The C(nodeops.rollout.rolling_update) role stops on it before any change.
        - Null as well with O(include_nodes=false).
      type: str
    refusals:
      description:
        - Why the group cannot be rolled as it stands, one sentence each naming what to change; empty when it can. A group
          takes at most 50 tags and a rollout records its state in two (C(nodeops.rollout/state), C(nodeops.rollout/progress)),
          so a group with more than 48 others is named with its tag count. With O(surge_method=detach), so is each outdated
          instance without room for the two tags of an instance detached for surge. So is a MixedInstancesPolicy override
          that launches from another launch template than the group's, which the rollout could not move to the target.
          So is each persistent volume attached to an outdated node (a VolumeAttachment) that is pinned by node affinity
          to zones where the group launches no instance and no other schedulable node is, since its pod could never
          start again once the node is drained.
          So is a target whose kubelet the control plane does not support (the version skew rule, RV(node_groups.versions)),
          naming both versions, and each new node that registered with another kubelet version than the target's.
        - The C(nodeops.rollout.rolling_update) role stops on them before any change.
      type: list
      elements: str
    versions:
      description:
        - The version skew check, made when O(target) is given or a rollout is recorded on the group (else null), as EKS
          managed node groups make it - a kubelet must not be newer than the control plane, nor more minor versions older
          than it than Kubernetes supports (three since Kubernetes 1.28, two before).
        - The kubelet of the target is, first found, the one the EKS-optimized AMI's name says (C(amazon-eks-node-1.29-v...),
          C(amazon-eks-node-al2023-x86_64-standard-1.30-v...), C(bottlerocket-aws-k8s-1.29-...)), the one its SSM
          parameter's path says (C(/aws/service/eks/optimized-ami/1.29/...)), or the kubelet of the first new node (a custom
          AMI); every new node is checked against it. A breach is in RV(node_groups.refusals).
        - Costs one DescribeImages and one read of the API server's C(/version) (once for all groups).
      type: dict
      contains:
        control_plane:
          description:
            - The API server's C(gitVersion) (C(major.minor) when its gitVersion does not agree with them, as on a
              kube-apiserver built without release stamps), null when it could not be read (then nothing is refused).
          type: str
          sample: v1.30.6-eks-7f9249a
        kubelet:
          description: The kubelet minor version of the target, null when nothing tells it yet.
          type: str
          sample: "1.30"
        kubelet_source:
          description: Where RV(node_groups.versions.kubelet) comes from.
          type: str
          sample: AMI ami-0123456789abcdef0 (amazon-eks-node-1.30-v20240917)
        refusals:
          description: The version skew refusals alone.
          type: list
          elements: str
    surge_owed:
      description:
        - The surge the recorded rollout still owes, from what the group holds now (never more than the recorded C(surge_owed),
          never more than desired capacity stands above the original); 0 without a rollout.
      type: int
    payback:
      description:
        - When no outdated instance is left but surge is still owed, the up-to-date instances to drain and terminate with a
          decrement to pay it back, each C(instance_id), C(az) and C(node) (a name). Empty otherwise.
      type: list
      elements: dict
    marked:
      description:
        - Up-to-date instances whose node still carries a mark of a rollout, each C(instance_id), C(node) (a name) and C(marks),
          a list of C(taint) (O(taint_key)), C(cordon) (cordoned by M(nodeops.rollout.node_drain), annotated
          C(nodeops.rollout/cordoned)), C(label) (C(node.kubernetes.io/exclude-from-external-load-balancers) on such a node)
          and C(autoscaler) (C(cluster-autoscaler.kubernetes.io/scale-down-disabled) put by the rollout, which annotates
          C(nodeops.rollout/scale-down-disabled) beside it).
      type: list
      elements: dict
    tolerated_taints:
      description:
        - The group's own taints, those every node of the group carries (C(key), C(value), C(effect)), such as a dedicated
          or GPU pool's taint that its pods tolerate. Any other C(NoSchedule) or C(NoExecute) taint but the rollout's own (a startup
          taint of a CNI or CSI driver not lifted yet, an operator's C(dedicated) taint) keeps a node from counting as
          capacity. Empty with O(include_nodes=false).
      type: list
      elements: dict
    taking_pods:
      description:
        - The group's nodes that can take pods now (Ready, not cordoned, no taint that keeps the pods to move off them, see
          RV(node_groups[].tolerated_taints)), sorted. Empty with O(include_nodes=false).
      type: list
      elements: str
    unprotected:
      description:
        - The nodes of the up-to-date instances that carry no C(cluster-autoscaler.kubernetes.io/scale-down-disabled)
          annotation (the cluster-autoscaler may scale them in). Empty with O(include_nodes=false).
      type: list
      elements: str
    marked_outdated:
      description:
        - Outdated instances whose node carries a mark of the rollout, as RV(node_groups[].marked), each also with C(drained)
          (M(nodeops.rollout.node_drain) finished it, annotation C(nodeops.rollout/drained-at)). A rollout that stops cleanly
          (a pause) releases those not drained; a cancel releases those it does not terminate.
      type: list
      elements: dict
    marked_all:
      description:
        - RV(node_groups[].marked_outdated) then RV(node_groups[].marked) - every node with a mark of the rollout, as
          M(nodeops.rollout.node_taint)'s O(nodeops.rollout.node_taint#module:release) takes them (what a cancel or a
          rollback with no rollout recorded gives back).
      type: list
      elements: dict
    marked_undrained:
      description:
        - The entries of RV(node_groups[].marked_outdated) not drained - what a rollout that stops cleanly gives back
          (drained nodes stay cordoned for the run that terminates them).
      type: list
      elements: dict
    surge_count:
      description: The rollout's surge - the count its state tags record once surged, else the plan's.
      type: int
    surge_each_az:
      description: Whether RV(node_groups[].surge_count) covers every AZ of the group, so that a new node is awaited in each.
      type: bool
    surge_detach:
      description:
        - With O(surge_method=detach), the instances a surge detaches - the first RV(node_groups[].surge_count) of the
          plan's batches, in the order they are replaced; null with O(surge_method=scale).
      type: list
      elements: str
    new_node_azs:
      description: The AZs of the outdated nodes where the group has an up-to-date instance.
      type: list
      elements: str
    unplaced_azs:
      description:
        - With RV(node_groups[].surge_each_az), the AZs of the outdated nodes where the group has no up-to-date instance
          (insufficient capacity there, or the AZ left the group); empty otherwise.
      type: list
      elements: str
    cancel_payback:
      description:
        - While a rollout is recorded, what cancelling it drains and terminates to give the surge back, each C(instance_id),
          C(az), C(node) (a name, or null for an instance that is no node) and C(drained) - as many members as the surge
          still owed, in the order the cancel's steps take them (M(nodeops.rollout.rollout_step) with C(goal=cancel)) -
          instances that hold no pods (no node, still launching, a node that is not Ready), drained nodes, cordoned ones, then serving nodes,
          outdated first (spread across AZs); then every instance detached for surge. The cancel's steps drain serving
          nodes only as far as the capacity floor allows.
      type: list
      elements: dict
    pause_requested:
      description: Whether the group carries the tag C(nodeops.rollout/pause) with a true value, asking a rollout to pause.
      type: bool
    failed_to_join:
      description:
        - With O(join_timeout), the up-to-date instances in service that have had that long since launch and are still no Ready
          node, oldest first, each C(instance_id), C(az), C(node) (a name, or null when none registered), C(launch_time) and
          C(reason). Empty otherwise.
      type: list
      elements: dict
    leftovers:
      description:
        - Why the group is not fully replaced yet, one sentence each (outdated instances left, marked up-to-date nodes, surge
          not paid back, detached instances still running, warm pool instances built from another version); empty when a
          rollout may end. Null with O(include_nodes=false).
      type: list
      elements: str
    outdated_nodes:
      description: The names of the outdated instances' nodes (outdated instances that are no node are left out).
      type: list
      elements: str
    standby_left:
      description: The outdated instances in Standby (see C(plan.standby)), which a rollout with O(standby_instances=ignore) leaves.
      type: list
      elements: str
    stale_warm:
      description: The warm pool's instances built from another version than the target (C(plan.warm_pool.outdated)).
      type: list
      elements: str
    has:
      description:
        - What the role's tasks ask of the group, each a flag - C(refusal) (C(mismatch) or C(refusals) says the group cannot
          be rolled), C(outdated_nodes), C(up_to_date), C(marked), C(failed_to_join), C(leftovers), C(standby_left),
          C(stale_warm) and C(payback) (the lists of the same names are not empty), C(rollout) (a rollout is recorded),
          C(kubelet_refusal) (C(versions.refusals) is not empty).
      type: dict
    load_balancers:
      description:
        - What a drained node of the group waits for before its termination, as M(nodeops.rollout.rollout_step) is told.
        - C(target_groups) - the target groups watched, as C(plan.target_groups) lists them with their C(sources).
        - C(unseen) - each Service of type LoadBalancer whose load balancer cannot be read (not an Application or Network
          Load Balancer of this account and region, or known by its IP address only), with C(service), C(address) and
          C(why).
        - C(post_drain_delay) - the seconds between a node's drain and its termination (O(post_drain_delay) as given,
          else 0, or 60 where C(unseen) is not empty); C(post_drain_delay_set) - whether it was given.
        - C(read) - whether the cluster's load balancers were read (O(include_nodes) and O(load_balancers)).
      type: dict
    state:
      description:
        - The rollout recorded on the group, or null when none is.
        - C(rollout_id), C(method), C(original_min_size), C(original_max_size), C(original_desired_capacity), C(surge),
          C(surge_owed) (desired capacity still to give back), C(surged_max_size), C(target_launch_template),
          C(target_version), C(previous_version) (the version the group launched before the rollout; when it equals
          C(target_version) the rollout is a rollback), C(suspended_processes) (suspended by the rollout), C(started_at),
          C(restore_sizes).
      type: dict
    plan:
      description:
        - The rollout plan. C(batch_size) (maxUnavailable resolved), C(surge) (extra instances to launch, never more than the
          outdated instances in the group), C(surge_requested), C(canary) (true when nothing is up to date, so the first
          batch has one instance), C(batches) (each with C(index), C(canary), C(instance_ids), C(azs), C(nodes) and
          C(hold_seconds), the bake time or checkpoint wait after it), C(batch_count), C(eta_seconds), C(taint_effect) (see
          O(taint_effect)), C(bake_seconds), C(checkpoints) (each C(percent), C(wait_seconds) and C(count), the nodes it
          stands for) and the inputs C(group_size), C(az_count), C(azs), C(target).
        - C(post_drain_delay) - how the post-drain delay (C(timings.post_drain_delay)) was settled, with O(load_balancers) -
          C(set) (O(post_drain_delay) was given) and C(unseen) (as in RV(node_groups[].load_balancers)); null without
          the read.
        - C(surge_choices) - the surge priced, so that it is chosen knowingly - at the surge the plan uses, at none
          (the strategy C(terminate_first)), at EKS's default (the larger of twice the AZs and the batch size) and at
          100 % (a new instance for each outdated one, all at once), each never more than the outdated instances in the
          group; choices that come to the same count are one entry. Each has C(surge), C(choices) (the names of the
          choices it is - V(configured), V(terminate first), V(EKS default), V(100%)), C(eta_seconds) and C(wave_count)
          (as the plan's, by the waves the rollout would drain at that surge), C(extra_instance_minutes), the instances
          above the group's desired size over the rollout, and C(fewest_ready), the fewest Ready schedulable nodes the
          group keeps at that surge (never below the floor, its size less the batch size). The smallest surge first;
          empty when nothing in the group is outdated.
        - C(target_groups) - the target groups watched (the group's own and the cluster's load balancers', see
          RV(node_groups[].load_balancers)), each with C(name), C(arn), C(target_type), C(deregistration_delay) (seconds),
          C(waited_for) (true for instance targets - a drained instance is terminated only once it has left them, see
          M(nodeops.rollout.rollout_step)) and C(sources) (what registers the nodes in it - V(group), V(service
          <namespace>/<name>), V(targetgroupbinding <namespace>/<name>)). The estimate counts the longest delay, which
          runs from the start of each drain.
        - C(standby) - C(policy) (O(standby_instances)) and C(instances), every instance in Standby with C(instance_id), C(az),
          C(node), C(outdated) and C(reasons). Instances in Standby are in no batch.
        - C(aged) - rotation by age, null without C(max_node_age) in O(target) - C(launched_before), C(max_node_age)
          (seconds) and C(instances), the outdated instances launched before that time, each C(instance_id), C(node),
          C(launch_time) and C(only_age) (true when its age is its only reason, as it runs the target).
        - C(protected) - the outdated instances protected from scale in. They are replaced like the others, since scale-in
          protection does not hold back C(TerminateInstanceInAutoScalingGroup).
        - C(termination_hooks) - the group's termination lifecycle hooks, each C(name), C(heartbeat_timeout) (seconds) and
          C(default_result). Each may hold an instance the rollout terminates in C(Terminating:Wait) that long.
        - C(warm_pool) - null, or the group's warm pool - C(min_size), C(max_group_prepared_capacity), C(pool_state),
          C(instances) (each C(instance_id), C(az), C(node), C(lifecycle_state), C(outdated), C(reasons)) and C(outdated), the
          ids of the warm instances built from another version than the target; the group would launch them as they are, so
          the rollout terminates them before the surge.
        - C(capacity) - the group's nodes as the capacity floor counts them - C(taking_pods) (the names of the nodes that are Ready,
          not cordoned, with no C(NoSchedule) or C(NoExecute) taint but the rollout's own and the group's own), C(not_counted)
          (each C(node) and C(why) - C(not Ready), C(cordoned), or C(tainted) with the taints that keep pods off it, a
          startup taint not lifted yet or an operator's C(dedicated) taint), C(tolerated_taints) (the group's own
          taints, which every node carries) and C(floor) (how many of them the capacity floor keeps, the group's size less
          C(batch_size)).
      type: dict
      sample:
        batch_size: 1
        surge: 6
        canary: true
        batches:
          - index: 1
            canary: true
            instance_ids: [i-0123456789abcdef0]
            azs: [eu-west-1a]
            nodes: [ip-10-0-1-2.eu-west-1.compute.internal]
            hold_seconds: 0
        surge_choices:
          - surge: 0
            choices: [terminate first]
            eta_seconds: 2179
            wave_count: 6
            extra_instance_minutes: 0.0
            fewest_ready: 5
          - surge: 6
            choices: [configured, EKS default, 100%]
            eta_seconds: 379
            wave_count: 1
            extra_instance_minutes: 36.6
            fewest_ready: 6
window:
  description:
    - With O(windows), C(windows) (each as text), C(open), C(closes_at) (when open) and C(next_start) (when closed), the times
      in the window's time zone and in UTC; null without windows.
  returned: success
  type: dict
start_refusal:
  description:
    - Why a rollout may not start now - an alarm of O(abort_alarms) in state C(ALARM), an abort alert of O(alerts) firing,
      or outside the O(windows) (or too close to the end of the open one for a step of O(step_seconds)) - naming the next
      window's start; null when it may.
  returned: success
  type: str
diff:
  description:
    - In diff mode with O(target), what the rollout would change, as Ansible's diff entries - one per group (C(before)
      and C(after) of its C(launch_template_version), C(image_id), C(min_size), C(max_size), C(desired_capacity) while
      surged and C(instances)), then one per outdated node (C(unschedulable) and C(taints)). Empty when nothing is
      outdated.
  returned: diff mode, with O(target)
  type: list
  elements: dict
refusal:
  description:
    - Why the groups read cannot be rolled here, or not now, in one message - each group's C(mismatch) and C(refusals),
      then RV(start_refusal); null when nothing refuses.
  returned: success
  type: str
access:
  description:
    - With O(check_access), what the Kubernetes identity may not do of what C(docs/rbac.yaml) grants. Also in the failed
      result when a later request fails (a refused read names its own C(permission)).
    - C(checked) - whether the API server answered the access reviews; when it does not (it serves no
      C(authorization.k8s.io) and answers 404, or it answers 403), C(why) says so and C(missing) is empty.
    - C(reviews) - the access reviews sent.
    - C(missing) - each permission the identity lacks, with C(kind) (V(kubernetes)), C(verb), C(api_group) (empty for the
      core group), C(resource) (with its subresource, such as V(pods/eviction)), C(namespace) (null - every namespace,
      or the cluster scope for a cluster-scoped resource), C(granted_by) (the rule of C(docs/rbac.yaml) that grants it),
      C(required) (false for Events, which the rollout writes best effort) and C(reason) when the authorizer gave one.
    - C(refusal) - one message naming every required permission missing and its rule; null when none is.
  returned: when O(check_access) or O(require_access) is true
  type: dict
  sample:
    checked: true
    reviews: 23
    missing:
      - kind: kubernetes
        verb: create
        api_group: ""
        resource: pods/eviction
        namespace: null
        granted_by: 'ClusterRole nodeops-rollout rule {apiGroups: [""], resources: [pods/eviction], verbs: [create]} of docs/rbac.yaml'
        required: true
    refusal: >-
      the Kubernetes identity of the run may not create pods/eviction (core API group) in every namespace (granted by
      ClusterRole nodeops-rollout rule {apiGroups: [""], resources: [pods/eviction], verbs: [create]} of docs/rbac.yaml);
      apply docs/rbac.yaml (docs/rbac.md) or bind its roles to this identity
    why: null
alarms:
  description:
    - With O(abort_alarms), each alarm's C(name), C(found), C(state) (V(OK), V(ALARM) or V(INSUFFICIENT_DATA)), C(reason) and
      C(updated) (when its state last changed).
  returned: when O(abort_alarms) is given
  type: list
  elements: dict
alerts:
  description:
    - With O(alerts), the alerts firing now (active, neither silenced nor inhibited) by gate - C(abort) and C(pause), each a
      list of V(name{label="value"}) texts.
  returned: when O(alerts) has matchers
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import STANDBY_POLICIES
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.sizes import OUTDATED_TAINT_EFFECTS
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.lock_keeper import LOCK_ARGUMENT_SPEC, run_keeping_lock
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.node_group import run_node_group_info


def argument_spec():
    spec = dict(AWS_ARGUMENT_SPEC, **K8S_ARGUMENT_SPEC)
    spec.update(LOCK_ARGUMENT_SPEC)
    spec.update(
        name=dict(type="str"),
        tags=dict(type="dict"),
        max_unavailable=dict(type="raw"),
        max_surge=dict(type="raw"),
        include_nodes=dict(type="bool", default=True),
        check_access=dict(type="bool", default=False),
        require_access=dict(type="bool", default=False),
        lock_namespace=dict(type="str"),
        check_volumes=dict(type="bool", default=True),
        post_drain_delay=dict(type="raw", default=""),
        load_balancers=dict(type="bool", default=False),
        taint_key=dict(type="str", default="nodeops.rollout/outdated", no_log=False),
        taint_effect=dict(type="str", choices=list(OUTDATED_TAINT_EFFECTS), default="NoSchedule"),
        surge_method=dict(type="str", choices=["scale", "detach"], default="scale"),
        standby_instances=dict(type="str", choices=list(STANDBY_POLICIES), default="ignore"),
        join_timeout=dict(type="raw"),
        bake_time=dict(type="raw", default=0),
        checkpoints=dict(type="list", elements="raw", default=[]),
        abort_alarms=dict(type="list", elements="str", default=[]),
        alerts=dict(type="dict"),
        alertmanager_token=dict(type="str", no_log=True),
        windows=dict(type="raw"),
        step_seconds=dict(type="raw", default=0),
        timings=dict(type="dict", options=dict(
            boot_seconds=dict(type="raw", default=180),
            drain_seconds=dict(type="raw", default=90),
            validate_seconds=dict(type="raw", default=30),
            task_seconds=dict(type="raw", default=1),
        )),
        target=dict(type="dict", options=dict(
            launch_template_id=dict(type="str"),
            version=dict(type="raw", required=True),
            image_id=dict(type="str"),
            ssm_parameter=dict(type="str"),
            launched_before=dict(type="str"),
            max_node_age=dict(type="int"),
        )),
    )
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), mutually_exclusive=[("name", "tags")],
                           required_one_of=[("name", "tags")], supports_check_mode=True)
    run_keeping_lock(module, run_node_group_info)


if __name__ == "__main__":
    main()
