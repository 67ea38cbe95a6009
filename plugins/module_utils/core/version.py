# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The collection's version, in one place, and the user agent every API client sends."""

from __future__ import annotations

COLLECTION_NAME = "nodeops.rollout"

# Keep equal to the version in galaxy.yml (a unit test checks it).
COLLECTION_VERSION = "0.1.0"


def module_short_name(name):
    """Return the module name without its collection prefix ("nodeops.rollout.asg_surge" -> "asg_surge")."""
    if not name:
        return ""
    return str(name).rsplit(".", 1)[-1]


def user_agent(module_name=None):
    """Return "nodeops.rollout/<version> <module-name>", the user agent that identifies the calling module."""
    agent = "%s/%s" % (COLLECTION_NAME, COLLECTION_VERSION)
    short = module_short_name(module_name)
    if short:
        agent += " " + short
    return agent
