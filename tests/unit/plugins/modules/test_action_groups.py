# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""meta/runtime.yml's action groups: each holds exactly the modules that take its connection options.

A play that sets kubeconfig through module_defaults group/nodeops.rollout.k8s must reach every module that takes
the Kubernetes options, and group/nodeops.rollout.aws every module that takes the AWS ones; a module left out of a
group would run with its defaults instead (another cluster, another region)."""

from __future__ import annotations

import importlib
import os

import pytest
import yaml

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC

COLLECTION = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULE_DIR = os.path.join(COLLECTION, "plugins", "modules")
MODULE_NAMES = sorted(name[:-3] for name in os.listdir(MODULE_DIR) if name.endswith(".py") and not name.startswith("_"))


def action_groups():
    with open(os.path.join(COLLECTION, "meta", "runtime.yml"), encoding="utf-8") as stream:
        return yaml.safe_load(stream)["action_groups"]


def argument_spec(name):
    return importlib.import_module("ansible_collections.nodeops.rollout.plugins.modules." + name).argument_spec()


def takes(name, options):
    return set(options) <= set(argument_spec(name))


def test_every_module_is_in_the_all_group():
    assert sorted(action_groups()["all"]) == MODULE_NAMES


@pytest.mark.parametrize("group, options", [("aws", AWS_ARGUMENT_SPEC), ("k8s", K8S_ARGUMENT_SPEC)])
def test_a_connection_group_holds_every_module_that_takes_its_options(group, options):
    expected = [name for name in MODULE_NAMES if takes(name, options)]
    assert sorted(action_groups()[group]) == expected


@pytest.mark.parametrize("name", ["node_group_info", "instance_terminate", "rollout_step"])
def test_the_modules_that_call_both_apis_are_in_both_groups(name):
    groups = action_groups()
    assert name in groups["aws"] and name in groups["k8s"]
