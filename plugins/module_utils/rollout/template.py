# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options that name a group's target (launch template version, AMI id, SSM parameter, version description), checked
before any request: by ``launch_template_version`` (``launch_template.py``), by the role's settings
(``rollout/settings.py``) and by the inventory plugin (``node_hosts.py``).

Pure.
"""

from __future__ import annotations

import re

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError

AMI_ID_RE = re.compile(r"^ami-[0-9a-f]{8,17}$")
SYMBOLIC_VERSIONS = ("$Latest", "$Default")
DIGITS_RE = re.compile(r"^[0-9]+$")
# EC2's limit on a launch template version's description.
DESCRIPTION_LIMIT = 255


def check_target_options(params):
    """Refuse a malformed version, AMI id or SSM parameter name (before any request), naming the option."""
    version = params.get("version")
    if version is not None:
        text = str(version).strip()
        if text not in SYMBOLIC_VERSIONS and (not DIGITS_RE.match(text) or int(text) < 1):
            raise RolloutError("version: %r is not allowed; use a version number (1 or more), $Latest or $Default" % (version,))
    image_id = params.get("image_id")
    if image_id is not None and not AMI_ID_RE.match(str(image_id)):
        raise RolloutError("image_id: %r is not an AMI id; use an id such as ami-0123456789abcdef0" % (image_id,))
    if params.get("ssm_parameter") is not None and not str(params["ssm_parameter"]).strip():
        raise RolloutError("ssm_parameter: an empty name is not allowed; use the parameter's name or ARN")
    description = params.get("version_description")
    if description is not None and len(description) > DESCRIPTION_LIMIT:
        raise RolloutError("version_description: %d characters is not allowed; use at most %d" % (len(description), DESCRIPTION_LIMIT))
