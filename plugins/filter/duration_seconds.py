# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: duration_seconds
short_description: Read a duration (90, '90s', '15m', '1h30m') as whole seconds, refusing anything else by name
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Converts a duration written as whole seconds (V(90), V("90")) or with units d, h, m and s combined in that order
    (V(90s), V(15m), V(1h30m)) to an integer number of seconds, with the same parser the collection's modules use.
  - A value that does not parse (V(abc), V(-5s), V(1.5m), V(30 s)) or is shorter than O(minimum) fails the task with a
    message naming O(name) and the forms allowed, where C(| int) would silently turn V(30s) into V(0).
  - The role M(nodeops.rollout.rolling_update) checks every duration variable with it before it changes anything.
positional: name
options:
  _input:
    description: The duration.
    type: raw
    required: true
  name:
    description: The name the error message gives the value, for example the variable it came from.
    type: str
    default: duration
  minimum:
    description: The shortest duration allowed, in seconds; V(1) for a timeout or an interval, where 0 makes no sense.
    type: int
    default: 0
  allow_empty:
    description: Return V(None) for V(None) or an empty string, meaning "not set", instead of failing.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Wait the post-drain delay, given as 60 or as 1m
  ansible.builtin.wait_for:
    timeout: "{{ post_drain_delay | nodeops.rollout.duration_seconds('post_drain_delay') }}"

- name: A timeout must be at least one second
  ansible.builtin.set_fact:
    drain_timeout_seconds: "{{ drain_timeout | nodeops.rollout.duration_seconds('drain_timeout', minimum=1) }}"
"""

RETURN = r"""
_value:
  description: The duration in whole seconds, or V(None) for an empty value with O(allow_empty).
  type: int
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, parse_duration


def duration_seconds(value, name="duration", minimum=0, allow_empty=False):
    """Whole seconds of ``value`` through plan.parse_duration; AnsibleFilterError naming ``name`` when it does not parse."""
    if allow_empty and (value is None or (isinstance(value, str) and not value.strip())):
        return None
    try:
        return parse_duration(value, name, minimum=minimum)
    except PlanError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """nodeops.rollout.duration_seconds"""

    def filters(self):
        return {"duration_seconds": duration_seconds}
