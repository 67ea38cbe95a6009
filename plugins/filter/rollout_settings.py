# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: rollout_settings
short_description: Check every value of the rolling_update role's input at once and settle it
version_added: 0.2.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Takes a dict of the role M(nodeops.rollout.rolling_update)'s variables, by their names, values as given (an AWX
    survey's strings included), and checks every value - counts and percentages, durations, choices, the taint key,
    the lock namespace, the report path, the connection options' keys, each node group (a name, at most one target,
    a well-formed AMI id or launch template version, listed once).
  - Returns the settled settings, or the first value that is not allowed in C(error), naming the role variable and
    what is allowed. The role fails with that message before it sends any request.
options:
  _input:
    description: The role's variables by name, for example C(rolling_update_max_unavailable) with its value.
    type: dict
    required: true
  base_dir:
    description: Where the task files of C(rolling_update_hooks) given as relative paths are, the playbook's directory.
    type: str
  names:
    description:
      - The names of the variables named C(rolling_update_*) that the run sees (the lookup C(ansible.builtin.varnames)). Each
        must be an option of the role (its C(meta/argument_specs.yml)), a variable of the collection's playbooks
        (C(rolling_update_clusters), C(rolling_update_serial), C(rolling_update_nodes)) or an output of the role
        (C(rolling_update_result), C(rolling_update_results), C(rolling_update_hook)); any other, a misspelt variable
        that would be ignored, is the error, naming the nearest known name. The role's own facts (C(rolling_update__*))
        are let be.
    type: list
    elements: str
  check_mode:
    description: Whether the play runs in check mode (C(ansible_check_mode)); then, as with C(rolling_update_plan), the run only plans.
    type: bool
    default: false
  action:
    description: What the run does with the node groups - V(rollout), V(rollback) or V(cancel); only a rollout is held by C(controls).
    type: str
    default: rollout
"""

EXAMPLES = r"""
- name: Check the whole input before anything changes
  ansible.builtin.set_fact:
    settings: "{{ {'rolling_update_node_groups': groups, 'rolling_update_drain_timeout': '15m'} | nodeops.rollout.rollout_settings }}"
"""

RETURN = r"""
_value:
  description:
    - C(error) the message naming the first value not allowed, or V(None).
    - C(plan_only) whether the run plans and changes nothing (check mode, or C(rolling_update_plan)).
    - C(controls) what holds each step of a rollout - C(bake_seconds), C(checkpoints), C(abort_alarms), C(windows),
      C(respect_pause), C(blocking_pods) and C(alerts) (the alert gates - C(url), C(auth), C(abort), C(pause) and
      C(pause_timeout) - or null; never the token) - and none of it for a rollback or a cancel.
    - C(seconds) every duration in whole seconds (V(None) for an empty grace period or lock duration).
    - C(lock_duration) the lock's duration in seconds (the default computed when empty).
    - C(report_file) the path of the JSON result, C(~) expanded (V("") for none); C(report_html) the HTML report's beside it;
      C(write_report) whether there is one to write; C(report_sections) the report's sections, and as
      C(report_section_urls) and C(report_section_files) those read from a URL and from a file.
    - C(node_groups) each node group with its name, its target and its own C(max_unavailable) and C(max_surge) (null for the
      default surge).
    - C(validate_passes) the number of passes as an integer.
    - C(on_failure), C(windows) (each window as its canonical text, such as V(Sat,Sun 22:00 4h Europe/Berlin)),
      C(bake_seconds), C(checkpoints) (each C(percent) and C(wait) in seconds), C(abort_alarms) (names), C(hooks) (event to
      absolute task file paths) and C(step_seconds), the predicted duration of one step a maintenance window must hold.
  type: dict
"""

import os

import yaml

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import check_role_settings, check_variable_names

# the role's argument spec, in this collection
ARGUMENT_SPECS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                              "roles", "rolling_update", "meta", "argument_specs.yml")


def role_options(path=ARGUMENT_SPECS):
    """The names of the role's options, over all its entry points."""
    with open(path, encoding="utf-8") as fh:
        specs = yaml.safe_load(fh)["argument_specs"]
    return sorted(set(name for entry in specs.values() for name in entry.get("options") or {}))


def rollout_settings(values, base_dir=None, names=None, check_mode=False, action="rollout"):
    """check_variable_names(names, role's options) then check_role_settings(values, base_dir), with the error in
    ``error`` instead of raised, for a clean ``fail`` task."""
    try:
        if names is not None:
            check_variable_names(names, role_options())
        return dict(check_role_settings(dict(values), base_dir, check_mode, action), error=None)
    except PlanError as exc:
        return {"error": str(exc)}


class FilterModule:
    """nodeops.rollout.rollout_settings"""

    def filters(self):
        return {"rollout_settings": rollout_settings}
