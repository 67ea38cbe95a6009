# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """Attribute descriptions shared by every module; each module adds C(support) for check_mode and diff_mode.

    Use exactly one of C(nodeops.rollout.attributes) (action group C(all) only), C(nodeops.rollout.attributes.aws)
    (groups C(all) and C(aws)) or C(nodeops.rollout.attributes.k8s) (groups C(all) and C(k8s)), matching meta/runtime.yml.
    """

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and return a changed status prediction without modifying the target.
  diff_mode:
    description: Returns details on what has changed (or would change in check mode) when run in diff mode.
  action_group:
    description: Use C(group/nodeops.rollout.all) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - nodeops.rollout.all
"""

    AWS = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and return a changed status prediction without modifying the target.
  diff_mode:
    description: Returns details on what has changed (or would change in check mode) when run in diff mode.
  action_group:
    description: Use C(group/nodeops.rollout.all) or C(group/nodeops.rollout.aws) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - nodeops.rollout.all
      - nodeops.rollout.aws
"""

    K8S = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and return a changed status prediction without modifying the target.
  diff_mode:
    description: Returns details on what has changed (or would change in check mode) when run in diff mode.
  action_group:
    description: Use C(group/nodeops.rollout.all) or C(group/nodeops.rollout.k8s) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - nodeops.rollout.all
      - nodeops.rollout.k8s
"""
