# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: nodes
short_description: The instances of Auto Scaling node groups as hosts, outdated or not
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Lists the instances of the named node groups (Auto Scaling groups whose instances are Kubernetes nodes) as hosts,
    one host per instance in service or launching, named after its node (its instance id while it has none).
  - Each host says whether it is outdated against the target of its node group - the same target the role
    M(nodeops.rollout.rolling_update) rolls to (O(node_groups[].image_id), O(node_groups[].ssm_parameter),
    O(node_groups[].launch_template_version), or what the group launches now), resolved read only as
    M(nodeops.rollout.launch_template_version) does in check mode. Nothing is created or changed.
  - 'Host variables: C(node_name), C(instance_id), C(availability_zone), C(node_group) (the Auto Scaling group),
    C(launch_template_id), C(launch_template_version) (the instance''s), C(target_launch_template_version) (its
    group''s target, a version still to be made counts as the next number), C(image_id), C(lifecycle_state),
    C(ready) (its node is Ready), C(outdated) and C(outdated_reasons).'
  - 'Groups: C(outdated) and C(up_to_date); C(node_group_<name>) per node group and C(az_<zone>) per Availability
    Zone (characters other than letters, digits and _ become _). Hosts come in the order a rollout drains them -
    per node group the outdated ones first, consecutive hosts alternating AZs, the oldest first within an AZ - so a
    play with C(serial) takes its batches across AZs.'
  - 'Variables for every host (the group C(all)): C(rolling_update_node_groups) (O(node_groups), so the role rolls
    exactly the groups listed here), C(rolling_update_aws) and C(rolling_update_k8s) (the connection options set in
    this file, secrets left out - O(access_key), O(secret_key), O(session_token) and O(api_key) stay with the
    inventory source and the environment) and C(ansible_connection=local) - the hosts are never logged into, every
    module runs on the controller (C(nodeops.rollout.upgrade_serial) runs them with the Python running Ansible).'
  - The playbook C(nodeops.rollout.upgrade_serial) rolls the C(outdated) hosts in batches, each node a host with its
    own status.
  - O(include_filters) and O(exclude_filters) choose hosts by their variables, as the filters of C(amazon.aws.aws_ec2)
    do; C(compose), C(groups) and C(keyed_groups) add variables and groups from them, as every C(constructed)-capable
    inventory plugin does (the examples make groups per instance type, launch template version and rollout status).
  - With O(cache=true) the hosts are read from the inventory cache while it holds them, with no AWS or Kubernetes
    request; C(--flush-cache) reads them again.
  - The file must end in C(nodes.yml) or C(nodes.yaml).
options:
  plugin:
    description: The name of this plugin; it marks the file as this plugin's configuration.
    type: str
    required: true
    choices: [nodeops.rollout.nodes]
  node_groups:
    description:
      - The node groups whose instances to list, as O(node_groups[].name) alone or with at most one target and its own
        counts, the same shape as the role's C(rolling_update_node_groups), checked by the same rule. A plain name is
        taken as O(node_groups[].name).
    type: list
    elements: raw
    required: true
    suboptions:
      name:
        description: The Auto Scaling group's name.
        type: str
        required: true
      image_id:
        description: The AMI the group is to run; instances launched from another one are outdated.
        type: str
      ssm_parameter:
        description: An SSM parameter holding the AMI id (as EKS publishes its AMIs).
        type: str
      launch_template_version:
        description: A version of the group's launch template (a number, V($Latest) or V($Default)).
        type: str
      max_unavailable:
        description:
          - The group's own batch size, over the role's C(rolling_update_max_unavailable), as the role's
            C(rolling_update_node_groups) takes it - a whole number or a percentage of the group's size.
          - The playbook C(nodeops.rollout.upgrade_serial) batches the group's hosts by it.
        type: raw
      max_surge:
        description: The group's own surge, over the role's C(rolling_update_max_surge) (a whole number or a percentage).
        type: raw
      strategy:
        description: The group's own strategy, over the role's C(rolling_update_strategy).
        type: str
        choices: [surge, terminate_first]
      max_node_age:
        description:
          - Rotation by age, as the role's C(rolling_update_max_node_age) - a node launched longer ago than this (V(720h),
            V(30d), at least one hour) is in the group C(outdated), its C(outdated_reasons) naming its age, even when it
            runs the target.
        type: raw
  include_filters:
    description:
      - Only the hosts that match one of these filters are listed; without it, every host.
      - Each filter is a dict of host variable to a value or a list of values (alternatives); a host matches when each
        of its variables is one of the values. Booleans match V(true)/V(false).
      - 'The variables to filter on: C(node_name), C(instance_id), C(availability_zone), C(node_group),
        C(launch_template_id), C(launch_template_version), C(target_launch_template_version), C(image_id),
        C(lifecycle_state), C(ready) and C(outdated); any other key is refused, naming the filter.'
      - A host left out is as a host outside C(--limit) - the playbook C(nodeops.rollout.upgrade_serial) leaves its
        instance as it is - and its groups do not list it.
    type: list
    elements: dict
    default: []
  exclude_filters:
    description:
      - The hosts that match one of these filters are left out, even when O(include_filters) matches them. Filters as
        in O(include_filters).
    type: list
    elements: dict
    default: []
extends_documentation_fragment:
  - nodeops.rollout.aws
  - nodeops.rollout.k8s
  - constructed
  - inventory_cache
notes:
  - The connection options fall back to the same environment variables as the modules (E(AWS_REGION),
    E(K8S_AUTH_KUBECONFIG), ...), and choose the Kubernetes connection in the same order, so an AWX inventory source
    with the AWS and Kubernetes credentials of the job templates lists the nodes the jobs roll.
  - Every AWS and Kubernetes request carries the user agent C(nodeops.rollout/<version> nodes).
  - C(compose), C(groups) and C(keyed_groups) see the host variables listed above. With O(strict=true) an expression
    that fails stops the inventory with one error naming the file, the host and the expression; without it, the host
    is left without that variable or group.
  - The cache holds the hosts as read, outdated or not; a rollout changes them. Use a O(cache_timeout) shorter than a
    rollout, or C(--flush-cache) before one.
"""

EXAMPLES = r"""
# prod-eu1.nodes.yml - the nodes of two node groups, the first one to move to a new AMI
plugin: nodeops.rollout.nodes
region: eu-west-1
eks_cluster: prod-eu1
node_groups:
  - name: prod-eu1-workers
    ssm_parameter: /aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id
  - prod-eu1-batch

# ansible-inventory -i prod-eu1.nodes.yml --graph outdated
# ansible-playbook -i prod-eu1.nodes.yml nodeops.rollout.upgrade_serial -e rolling_update_max_unavailable=2
# ansible-playbook -i prod-eu1.nodes.yml nodeops.rollout.upgrade_serial --limit az_eu_west_1a

---
# stage-eu1.nodes.yml - one AZ's Ready nodes only, groups per launch template version and status, and a cache
plugin: nodeops.rollout.nodes
aws_region: eu-west-1
aws_profile: stage
eks_cluster: stage-eu1
node_groups: [stage-eu1-workers]
include_filters:
  - availability_zone: [eu-west-1a]
    ready: true
exclude_filters:
  - lifecycle_state: Pending
compose:
  rollout_status: "'outdated' if outdated else 'current'"
  ansible_host: node_name
keyed_groups:
  - key: launch_template_version
    prefix: lt_version
  - key: rollout_status
    prefix: status
groups:
  not_ready: not ready
strict: true
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/ansible-inventory
cache_timeout: 300
# ansible-inventory -i stage-eu1.nodes.yml --graph lt_version_3
# ansible-inventory -i stage-eu1.nodes.yml --list --flush-cache
"""

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.node_hosts import (
    check_host_filters,
    check_node_groups,
    filter_hosts,
    group_name,
    read_node_hosts,
)

# Connection options that stay out of the host variables: an inventory's variables are shown and stored (AWX keeps them).
SECRET_OPTIONS = ("access_key", "secret_key", "session_token", "api_key")


def _given(config, spec):
    """The options of ``spec`` that the inventory file sets, under any of their names (amazon.aws's and
    kubernetes.core's aliases too)."""
    return [name for name, definition in spec.items() if any(key in config for key in [name] + list(definition.get("aliases") or ()))]


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    """nodeops.rollout.nodes"""

    NAME = "nodeops.rollout.nodes"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(("nodes.yml", "nodes.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        config = self._read_config_data(path) or {}
        try:
            node_groups = check_node_groups(self.get_option("node_groups"))
            include = check_host_filters(self.get_option("include_filters"), "include_filters")
            exclude = check_host_filters(self.get_option("exclude_filters"), "exclude_filters")
            params = {name: self.get_option(name) for name in list(AWS_ARGUMENT_SPEC) + list(K8S_ARGUMENT_SPEC)}
            hosts = self._hosts(path, cache, params, node_groups)
        except RolloutError as exc:
            raise AnsibleParserError("%s: %s" % (path, exc)) from None
        self._add_hosts(path, filter_hosts(hosts, include, exclude))
        given = {name: params[name] for name in _given(config, AWS_ARGUMENT_SPEC) + _given(config, K8S_ARGUMENT_SPEC)
                 if name not in SECRET_OPTIONS}
        self.inventory.set_variable("all", "rolling_update_node_groups", node_groups)
        self.inventory.set_variable("all", "rolling_update_aws", {name: value for name, value in given.items() if name in AWS_ARGUMENT_SPEC})
        self.inventory.set_variable("all", "rolling_update_k8s", {name: value for name, value in given.items() if name in K8S_ARGUMENT_SPEC})
        self.inventory.set_variable("all", "ansible_connection", "local")

    def _hosts(self, path, cache, params, node_groups):
        """Every node group's hosts: from the inventory cache when it is on (O(cache)) and holds them and Ansible lets
        it be read (not C(--flush-cache)), else read from AWS and Kubernetes (and put in the cache when it is on)."""
        key = self.get_cache_key(path)
        use_cache = self.get_option("cache")
        if use_cache and cache:
            try:
                return self._cache[key]["hosts"]
            except KeyError:
                pass  # not cached yet, or expired: read and cache below
        hosts = read_node_hosts(params, node_groups)
        if use_cache:
            self._cache[key] = {"hosts": hosts}
        return hosts

    def _add_hosts(self, path, hosts):
        for name in ("outdated", "up_to_date"):
            self.inventory.add_group(name)
        strict = self.get_option("strict")
        for entry in hosts:
            host, values = entry["host"], entry["vars"]
            self.inventory.add_host(host)
            for key, value in values.items():
                self.inventory.set_variable(host, key, value)
            for group in ("outdated" if values["outdated"] else "up_to_date",
                          group_name("node_group_", values["node_group"]),
                          group_name("az_", values["availability_zone"] or "unknown")):
                self.inventory.add_group(group)
                self.inventory.add_child(group, host)
            self._construct(path, host, values, strict)

    def _construct(self, path, host, values, strict):
        """compose, then groups and keyed_groups over the host's variables and the composed ones (as in constructed);
        with strict, an expression that fails stops the inventory with one error naming the file, the option, the host
        and the expression."""
        steps = (("compose", self._set_composite_vars), ("groups", self._add_host_to_composed_groups),
                 ("keyed_groups", self._add_host_to_keyed_groups))
        for option, step in steps:
            try:
                step(self.get_option(option), values if option == "compose" else self.inventory.get_host(host).get_vars(), host, strict=strict)
            except AnsibleError as exc:
                raise AnsibleParserError("%s: %s: %s" % (path, option, " ".join(str(exc.message).split()))) from None
