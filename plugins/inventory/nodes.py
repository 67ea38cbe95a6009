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
  - The file must end in C(nodes.yml) or C(nodes.yaml).
options:
  plugin:
    description: The name of this plugin; it marks the file as this plugin's configuration.
    type: str
    required: true
    choices: [nodeops.rollout.nodes]
  node_groups:
    description:
      - The node groups whose instances to list, as O(node_groups[].name) alone or with at most one target, the same
        shape as the role's C(rolling_update_node_groups). A plain name is taken as O(node_groups[].name).
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
extends_documentation_fragment:
  - nodeops.rollout.aws
  - nodeops.rollout.k8s
notes:
  - The connection options fall back to the same environment variables as the modules (E(AWS_REGION),
    E(K8S_AUTH_KUBECONFIG), ...), and choose the Kubernetes connection in the same order, so an AWX inventory source
    with the AWS and Kubernetes credentials of the job templates lists the nodes the jobs roll.
  - Every AWS and Kubernetes request carries the user agent C(nodeops.rollout/<version> nodes).
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
"""

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.node_hosts import check_node_groups, group_name, read_node_hosts

# Connection options that stay out of the host variables: an inventory's variables are shown and stored (AWX keeps them).
SECRET_OPTIONS = ("access_key", "secret_key", "session_token", "api_key")


class InventoryModule(BaseInventoryPlugin):
    """nodeops.rollout.nodes"""

    NAME = "nodeops.rollout.nodes"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(("nodes.yml", "nodes.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        config = self._read_config_data(path) or {}
        try:
            node_groups = check_node_groups(self.get_option("node_groups"))
            params = {name: self.get_option(name) for name in list(AWS_ARGUMENT_SPEC) + list(K8S_ARGUMENT_SPEC)}
            hosts = read_node_hosts(params, node_groups)
        except RolloutError as exc:
            raise AnsibleParserError("%s: %s" % (path, exc)) from None
        self._add_hosts(hosts)
        given = {name: params[name] for name in params if name in config and name not in SECRET_OPTIONS}
        self.inventory.set_variable("all", "rolling_update_node_groups", node_groups)
        self.inventory.set_variable("all", "rolling_update_aws", {name: value for name, value in given.items() if name in AWS_ARGUMENT_SPEC})
        self.inventory.set_variable("all", "rolling_update_k8s", {name: value for name, value in given.items() if name in K8S_ARGUMENT_SPEC})
        self.inventory.set_variable("all", "ansible_connection", "local")

    def _add_hosts(self, hosts):
        for name in ("outdated", "up_to_date"):
            self.inventory.add_group(name)
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
