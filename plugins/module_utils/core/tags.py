# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The names of the collection's AWS tags, and AWS's tag lists as dicts: what the AWS client writes and the pure rules
read (``rollout/state.py`` the group's state tags, ``rollout/outdated.py`` the detached instances).

Shared values at the bottom of module_utils: imports nothing of the collection.
"""

from __future__ import annotations

TAG_PREFIX = "nodeops.rollout/"

# EC2 tags on instances detached from their group for surge: the rollout's id, and the group's name.
TAG_INSTANCE_DETACHED = TAG_PREFIX + "detached"
TAG_INSTANCE_DETACHED_FROM = TAG_PREFIX + "detached-from"


def tags_to_dict(tags):
    """``[{"Key": k, "Value": v}, ...]`` (as Auto Scaling and EC2 return tags) -> ``{k: v}``."""
    return {tag["Key"]: tag.get("Value", "") for tag in tags or [] if "Key" in tag}
