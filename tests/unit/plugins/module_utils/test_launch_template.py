# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""launch_template.py without a server: the template a group names and the version numbers it resolves to."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.launch_template import resolve_version, template_spec


def test_template_spec_reads_the_template_or_the_mixed_instances_policy():
    assert template_spec({"LaunchTemplate": {"LaunchTemplateId": "lt-1", "LaunchTemplateName": "w"}}) == {
        "id": "lt-1", "name": "w", "version": "$Default", "mixed_instances_policy": False}
    mixed = {"MixedInstancesPolicy": {"LaunchTemplate": {"LaunchTemplateSpecification": {"LaunchTemplateId": "lt-2", "Version": "$Latest"}}}}
    assert template_spec(mixed) == {"id": "lt-2", "name": None, "version": "$Latest", "mixed_instances_policy": True}
    assert template_spec({"LaunchConfigurationName": "old-style"}) is None


TEMPLATE = {"LaunchTemplateId": "lt-1", "LaunchTemplateName": "w", "DefaultVersionNumber": 2, "LatestVersionNumber": 5}


@pytest.mark.parametrize("version, expected", [("$Latest", 5), ("$Default", 2), (None, 2), ("", 2), ("3", 3), (4, 4), ("5", 5)])
def test_resolve_version(version, expected):
    assert resolve_version(TEMPLATE, version) == expected


@pytest.mark.parametrize("version, words", [
    ("6", "has no version 6; its versions go up to 5"), ("0", "is not allowed"), ("latest", "is not allowed"), (True, "is not allowed"),
])
def test_resolve_version_refuses(version, words):
    with pytest.raises(RolloutError) as error:
        resolve_version(TEMPLATE, version)
    assert error.value.msg.startswith("version: ") and words in error.value.msg
