# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The collection's version and the user agent every API client sends: AWS and Kubernetes audit logs name the
collection, its version and the module that made the request."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.version import (
    COLLECTION_NAME, COLLECTION_VERSION, module_short_name, user_agent)

GALAXY_YML = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..", "galaxy.yml")


def test_the_version_is_galaxy_yml_s():
    with open(GALAXY_YML) as stream:
        text = stream.read()
    assert re.search(r"^version:\s*(\S+)\s*$", text, re.MULTILINE).group(1) == COLLECTION_VERSION
    namespace = re.search(r"^namespace:\s*(\S+)\s*$", text, re.MULTILINE).group(1)
    name = re.search(r"^name:\s*(\S+)\s*$", text, re.MULTILINE).group(1)
    assert COLLECTION_NAME == "%s.%s" % (namespace, name)


@pytest.mark.parametrize("name, expected", [
    ("nodeops.rollout.asg_surge", "asg_surge"),
    ("asg_surge", "asg_surge"),
    ("", ""),
    (None, ""),
])
def test_module_short_name(name, expected):
    assert module_short_name(name) == expected


@pytest.mark.parametrize("name, expected", [
    ("nodeops.rollout.node_drain", "nodeops.rollout/%s node_drain" % COLLECTION_VERSION),
    ("node_drain", "nodeops.rollout/%s node_drain" % COLLECTION_VERSION),
    (None, "nodeops.rollout/%s" % COLLECTION_VERSION),
    ("", "nodeops.rollout/%s" % COLLECTION_VERSION),
])
def test_the_user_agent_names_the_collection_its_version_and_the_module(name, expected):
    assert user_agent(name) == expected
