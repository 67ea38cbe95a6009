# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""meta/runtime.yml's action groups: each holds exactly the modules that take its connection options.

A play that sets kubeconfig through module_defaults group/nodeops.rollout.k8s must reach every module that takes
the Kubernetes options, and group/nodeops.rollout.aws every module that takes the AWS ones; a module left out of a
group would run with its defaults instead (another cluster, another region). The aws and k8s groups extend amazon.aws's
and kubernetes.core's; the connection options set on those two groups reach these modules through their action plugins
(plugin_utils/foreign_groups.py), below the task's own arguments. End to end: tests/integration/modules/test_conventions.py."""

from __future__ import annotations

import importlib
import os

import pytest
import yaml

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.plugin_utils.foreign_groups import foreign_connection_defaults, group_entries

COLLECTION = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULE_DIR = os.path.join(COLLECTION, "plugins", "modules")
# fleet_state takes the AWS options of the fleet's ledger, one account for every cluster of the fleet: a cluster's
# connection set on a group (the rolling_update role sets group/nodeops.rollout.all to each cluster's) must never reach it.
LEDGER_MODULES = ("fleet_state",)
MODULE_NAMES = sorted(name[:-3] for name in os.listdir(MODULE_DIR)
                      if name.endswith(".py") and not name.startswith("_") and name[:-3] not in LEDGER_MODULES)


def action_groups():
    with open(os.path.join(COLLECTION, "meta", "runtime.yml"), encoding="utf-8") as stream:
        return yaml.safe_load(stream)["action_groups"]


def modules_of(group):
    """The module names of an action group (its metadata entry left out)."""
    return sorted(entry for entry in action_groups()[group] if isinstance(entry, str))


def metadata_of(group):
    entries = [entry["metadata"] for entry in action_groups()[group] if isinstance(entry, dict)]
    assert len(entries) <= 1 and all(set(entry) == {"metadata"} for entry in action_groups()[group] if isinstance(entry, dict))
    return entries[0] if entries else {}


def argument_spec(name):
    return importlib.import_module("ansible_collections.nodeops.rollout.plugins.modules." + name).argument_spec()


def takes(name, options):
    return set(options) <= set(argument_spec(name))


def test_every_module_is_in_the_all_group():
    assert modules_of("all") == MODULE_NAMES


@pytest.mark.parametrize("group, options", [("aws", AWS_ARGUMENT_SPEC), ("k8s", K8S_ARGUMENT_SPEC)])
def test_a_connection_group_holds_every_module_that_takes_its_options(group, options):
    expected = [name for name in MODULE_NAMES if takes(name, options)]
    assert modules_of(group) == expected


@pytest.mark.parametrize("group", ["all", "aws", "k8s"])
def test_the_fleets_ledger_is_in_no_group_of_a_clusters_connection(group):
    assert not set(LEDGER_MODULES) & set(modules_of(group))


@pytest.mark.parametrize("name", ["node_group_info", "instance_terminate", "rollout_step"])
def test_the_modules_that_call_both_apis_are_in_both_groups(name):
    assert name in modules_of("aws") and name in modules_of("k8s")


@pytest.mark.parametrize("group, extended", [("aws", ["amazon.aws.aws"]), ("k8s", ["kubernetes.core.k8s"]), ("all", None)])
def test_the_connection_groups_extend_the_groups_of_amazon_aws_and_kubernetes_core(group, extended):
    assert metadata_of(group).get("extend_group") == extended


def test_the_other_groups_connection_reaches_the_modules_of_our_groups_and_never_the_ledger():
    # the ledger is in none of our groups, and group/aws or amazon.aws's group set for the clusters must not reach it
    assert len(MODULE_NAMES) > 1 and LEDGER_MODULES, MODULE_NAMES
    for name in MODULE_NAMES + list(LEDGER_MODULES):
        action = importlib.import_module("ansible_collections.nodeops.rollout.plugins.action." + name).ActionModule
        assert action.group_defaults is (name not in LEDGER_MODULES), name


AWS_GROUP = "group/amazon.aws.aws"
K8S_GROUP = "group/kubernetes.core.k8s"


def defaults(module_defaults, args):
    return foreign_connection_defaults(group_entries(module_defaults), args)


def test_the_aws_options_of_amazon_aws_group_reach_a_module_under_the_names_given():
    values = {AWS_GROUP: {"aws_region": "eu-west-1", "aws_access_key_id": "AKIA", "aws_secret_access_key": "s", "ec2_url": "http://x"}}
    assert defaults(values, {"name": "web"}) == values[AWS_GROUP]


@pytest.mark.parametrize("aws_group, k8s_group", [("group/ansible.builtin.aws", "group/ansible.builtin.k8s"), ("group/aws", "group/k8s")])
def test_ansible_core_s_short_groups_aws_and_k8s_reach_a_module(aws_group, k8s_group):
    # group/aws and group/k8s are ansible-core's (ansible.builtin.aws, ansible.builtin.k8s, as it writes them once
    # resolved): they extend amazon.aws's and kubernetes.core's groups, and these modules take them as those take them
    values = {aws_group: {"region": "eu-west-1", "aws_config": {}}, k8s_group: {"kubeconfig": "/k", "username": "u"}}
    assert defaults(values, {"name": "web"}) == {"region": "eu-west-1", "kubeconfig": "/k"}


def test_options_these_modules_do_not_take_are_left_out():
    values = {AWS_GROUP: {"region": "eu-west-1", "aws_config": {"retries": 1}, "debug_botocore_endpoint_logs": True, "kubeconfig": "/k"},
              K8S_GROUP: {"kubeconfig": "/k", "username": "u", "password": "p", "persist_config": True, "region": "us-east-1"}}
    # a Kubernetes option on the AWS group (and the other way round) is not that group's: amazon.aws modules do not take it
    assert defaults(values, {}) == {"region": "eu-west-1", "kubeconfig": "/k"}


@pytest.mark.parametrize("given", [{"region": "us-east-1"}, {"aws_region": "us-east-1"}, {"ec2_region": "us-east-1"}])
def test_the_task_and_this_collection_s_defaults_win_whatever_name_they_use(given):
    values = {AWS_GROUP: {"region": "eu-west-1", "profile": "prod"}, K8S_GROUP: {"verify_ssl": False}}
    assert defaults(values, dict(given, validate_certs=True)) == {"profile": "prod"}


def test_validate_certs_on_both_groups_is_taken_once_from_the_kubernetes_group():
    values = {AWS_GROUP: {"validate_certs": True}, K8S_GROUP: {"verify_ssl": False}}
    assert defaults(values, {}) == {"verify_ssl": False}


def test_entries_merge_as_ansible_core_merges_them():
    # a later entry of a group replaces the earlier one whole (play, then block, then task), as amazon.aws's modules see it
    module_defaults = [{AWS_GROUP: {"region": "a", "profile": "p"}}, {"group/nodeops.rollout.aws": {"region": "b"}},
                       {AWS_GROUP: {"region": "c"}}]
    assert group_entries(module_defaults) == [(AWS_GROUP, {"region": "c"})]
    assert group_entries({K8S_GROUP: {"host": "h"}}) == [(K8S_GROUP, {"host": "h"})]
    assert group_entries(None) == []
    # two groups of one kind: the one named later wins, option by option
    both = [{"group/ansible.builtin.aws": {"region": "short", "profile": "p"}}, {AWS_GROUP: {"region": "long"}}]
    assert defaults(both, {}) == {"region": "long", "profile": "p"}
