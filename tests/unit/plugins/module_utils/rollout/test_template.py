# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A group's target options are checked before any request: a malformed version, AMI id, SSM parameter name or
version description is refused with one line naming the option and what is allowed."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.template import DESCRIPTION_LIMIT, check_target_options


@pytest.mark.parametrize("params", [
    {},
    {"version": 1}, {"version": "12"}, {"version": " 3 "}, {"version": "$Latest"}, {"version": "$Default"},
    {"image_id": "ami-0123abcd"}, {"image_id": "ami-0123456789abcdef0"},
    {"ssm_parameter": "/aws/service/eks/optimized-ami/1.30/amazon-linux-2/recommended/image_id"},
    {"version_description": "x" * DESCRIPTION_LIMIT}, {"version_description": ""},
    {"version": None, "image_id": None, "ssm_parameter": None, "version_description": None},
])
def test_well_formed_targets_pass(params):
    assert check_target_options(params) is None


@pytest.mark.parametrize("params, message", [
    ({"version": 0}, "version: 0 is not allowed; use a version number (1 or more), $Latest or $Default"),
    ({"version": "-1"}, "version: '-1' is not allowed; use a version number (1 or more), $Latest or $Default"),
    ({"version": "latest"}, "version: 'latest' is not allowed; use a version number (1 or more), $Latest or $Default"),
    ({"version": "1.5"}, "version: '1.5' is not allowed; use a version number (1 or more), $Latest or $Default"),
    ({"image_id": "ami-123"}, "image_id: 'ami-123' is not an AMI id; use an id such as ami-0123456789abcdef0"),
    ({"image_id": "ami-0123456789ABCDEF0"},
     "image_id: 'ami-0123456789ABCDEF0' is not an AMI id; use an id such as ami-0123456789abcdef0"),
    ({"image_id": "i-0123456789abcdef0"}, "image_id: 'i-0123456789abcdef0' is not an AMI id; use an id such as ami-0123456789abcdef0"),
    ({"ssm_parameter": "  "}, "ssm_parameter: an empty name is not allowed; use the parameter's name or ARN"),
    ({"version_description": "x" * (DESCRIPTION_LIMIT + 1)},
     "version_description: 256 characters is not allowed; use at most 255"),
])
def test_malformed_targets_are_refused_naming_the_option(params, message):
    with pytest.raises(RolloutError) as error:
        check_target_options(params)
    assert str(error.value) == message


def test_the_first_malformed_option_in_order_is_named():
    with pytest.raises(RolloutError, match=r"^version: "):
        check_target_options({"version": "x", "image_id": "bad"})
