# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The collection's tag names and AWS's tag lists read as dicts."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.tags import (
    TAG_INSTANCE_DETACHED, TAG_INSTANCE_DETACHED_FROM, TAG_PREFIX, tags_to_dict)


def test_the_collection_s_tags_share_one_prefix():
    assert TAG_PREFIX == "nodeops.rollout/"
    assert TAG_INSTANCE_DETACHED == "nodeops.rollout/detached"
    assert TAG_INSTANCE_DETACHED_FROM == "nodeops.rollout/detached-from"


@pytest.mark.parametrize("tags, expected", [
    (None, {}),
    ([], {}),
    ([{"Key": "team", "Value": "web"}], {"team": "web"}),
    # Auto Scaling's tags carry more fields than the key and value; they are left out
    ([{"Key": "team", "Value": "web", "PropagateAtLaunch": True, "ResourceId": "workers"}], {"team": "web"}),
    # a tag without a value reads as the empty string, as the console shows it
    ([{"Key": "empty"}], {"empty": ""}),
    # an entry without a key is no tag
    ([{"Value": "orphan"}, {"Key": "a", "Value": "1"}], {"a": "1"}),
    # the last of a repeated key wins
    ([{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}], {"a": "2"}),
])
def test_tags_to_dict(tags, expected):
    assert tags_to_dict(tags) == expected
