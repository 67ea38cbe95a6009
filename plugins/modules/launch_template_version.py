#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: launch_template_version
short_description: Point an Auto Scaling group at an explicit launch template version with the target AMI
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - The setup step of a node rollout. Resolves the target from O(image_id), from an SSM parameter that holds an AMI id
    (O(ssm_parameter)), or from an existing launch template O(version); with none of them the target is the version the
    group launches now.
  - When the target AMI differs from the AMI of the version the group launches now, creates a new version of the group's
    launch template from that version with only the AMI changed. With the same AMI nothing is created, so the module is
    idempotent. A version left by an interrupted run (the template's latest version, made from a later source with the same
    AMI) is reused instead of creating another one.
  - Points the group at the explicit version number instead of V($Latest) or V($Default), so that every instance launched
    during the rollout comes from the version the rollout compares against. For a group with a MixedInstancesPolicy, the
    policy's launch template specification is updated, and so is every override that names the same launch template, so
    that every instance type launches from the target.
  - A MixedInstancesPolicy override that launches its instance type from another launch template than the group's is
    refused before any change, naming the override, since its target cannot be told (its AMI may be for another architecture),
    and its instances would stay outdated for ever.
  - Optionally makes the version the template's default.
  - When the group has a rollout recorded (C(nodeops.rollout/*) tags, see M(nodeops.rollout.asg_surge)) whose target is
    another version, the recorded target follows the group to the new version before the group is pointed at it; moving
    it back to the version the rollout recorded as the group's previous one is how a rollback starts.
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
  asg_name:
    description:
      - Name of the Auto Scaling group. It must use a launch template (directly or through a MixedInstancesPolicy).
    type: str
    required: true
  image_id:
    description:
      - The AMI id to roll to. It must exist in the region and be available.
      - Mutually exclusive with O(ssm_parameter) and O(version).
    type: str
  ssm_parameter:
    description:
      - Name of an SSM parameter whose value is the AMI id to roll to, for example
        V(/aws/service/eks/optimized-ami/1.30/amazon-linux-2/recommended/image_id).
      - Mutually exclusive with O(image_id) and O(version).
    type: str
  version:
    description:
      - An existing version of the group's launch template to roll to, a number or V($Latest) or V($Default) (resolved
        to its number).
      - Mutually exclusive with O(image_id) and O(ssm_parameter).
    type: str
  set_default:
    description:
      - Also make the target version the launch template's default version.
    type: bool
    default: false
  version_description:
    description:
      - Description of a version this module creates (at most 255 characters).
      - Default names the AMI and the source version.
    type: str
  max_node_age:
    description:
      - Rotation by age, as Karpenter's C(expireAfter) - an instance launched longer ago than this is outdated even when it
        runs the target version, with the reason C(age) and its launch time.
      - A duration (V(720h), V(30d)) or seconds, at least one hour. The time before which an instance is aged is settled
        now, and returned in RV(target) as C(launched_before), so every later read of the rollout compares with one time
        and the instances it launches are never aged by it.
      - Unset, nothing is outdated for its age.
    type: str
seealso:
  - module: nodeops.rollout.node_group_info
  - module: nodeops.rollout.asg_surge
"""

EXAMPLES = r"""
- name: Roll the group to a new AMI
  nodeops.rollout.launch_template_version:
    asg_name: eks-workers-20240501
    image_id: ami-0123456789abcdef0
  register: target

- name: Roll to the AMI EKS recommends for Kubernetes 1.30, and make it the template's default
  nodeops.rollout.launch_template_version:
    asg_name: eks-workers-20240501
    ssm_parameter: /aws/service/eks/optimized-ami/1.30/amazon-linux-2/recommended/image_id
    set_default: true

- name: Roll to a version prepared by hand
  nodeops.rollout.launch_template_version:
    asg_name: eks-workers-20240501
    version: "7"

- name: Pin the group to the version $Latest means today, without other changes
  nodeops.rollout.launch_template_version:
    asg_name: eks-workers-20240501
"""

RETURN = r"""
asg_name:
  description: Name of the Auto Scaling group.
  returned: always
  type: str
launch_template_id:
  description: The group's launch template id.
  returned: success
  type: str
  sample: lt-0123456789abcdef0
launch_template_name:
  description: The group's launch template name.
  returned: success
  type: str
version:
  description: The explicit version number the group launches from now (predicted in check mode).
  returned: success
  type: int
  sample: 5
previous_version:
  description: The version number the group launched from before, resolved.
  returned: success
  type: int
  sample: 4
previous_version_spec:
  description: The version as the group named it before, V($Latest), V($Default) or a number.
  returned: success
  type: str
  sample: $Latest
image_id:
  description: The AMI of the target version.
  returned: success
  type: str
  sample: ami-0123456789abcdef0
previous_image_id:
  description: The AMI of the previous version.
  returned: success
  type: str
created:
  description: Whether a new launch template version was (or in check mode would be) created.
  returned: success
  type: bool
reused_interrupted_version:
  description: Whether the template's latest version, left by an interrupted run with the same AMI, was used instead of a new one.
  returned: success
  type: bool
default_version:
  description: The launch template's default version afterwards.
  returned: success
  type: int
rollout_retargeted:
  description: Whether the recorded rollout's target version was (or in check mode would be) moved to RV(version).
  returned: success
  type: bool
mixed_instances_policy:
  description: Whether the launch template comes from the group's MixedInstancesPolicy.
  returned: success
  type: bool
target:
  description:
    - The target as node_group_info and the role use it, C(launch_template_id), C(version) and C(image_id), and
      C(ssm_parameter) when the AMI came from O(ssm_parameter) (node_group_info reads the Kubernetes version in its path).
    - With O(max_node_age), also C(launched_before) (an instance launched before it is outdated, the reason C(age)) and
      C(max_node_age) in seconds.
  returned: success
  type: dict
  sample:
    launch_template_id: lt-0123456789abcdef0
    version: 5
    image_id: ami-0123456789abcdef0
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.launch_template import run_launch_template_version
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.lock_keeper import LOCK_ARGUMENT_SPEC, run_keeping_lock


def argument_spec():
    spec = dict(AWS_ARGUMENT_SPEC)
    spec.update(K8S_ARGUMENT_SPEC)
    spec.update(LOCK_ARGUMENT_SPEC)
    spec.update(
        asg_name=dict(type="str", required=True),
        image_id=dict(type="str"),
        ssm_parameter=dict(type="str"),
        version=dict(type="str"),
        set_default=dict(type="bool", default=False),
        version_description=dict(type="str"),
        max_node_age=dict(type="str"),
    )
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), mutually_exclusive=[("image_id", "ssm_parameter", "version")],
                           supports_check_mode=True)
    run_keeping_lock(module, run_launch_template_version)


if __name__ == "__main__":
    main()
