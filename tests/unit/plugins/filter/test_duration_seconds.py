# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The duration_seconds filter: what the role turns every duration variable into seconds with, instead of '| int'
(which reads '30s' as 0). It must be the modules' own parser, and refuse by the name it is given."""

from __future__ import annotations

import pytest

from ansible.module_utils import _internal as module_utils_internal

WAS_CONTROLLER = module_utils_internal.is_controller

# pylint: disable=wrong-import-position
from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.filter import duration_seconds as filter_plugin
from ansible_collections.nodeops.rollout.plugins.filter.duration_seconds import FilterModule, duration_seconds
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import parse_duration

# Importing controller code (ansible.errors, for this controller-side plugin) marks the whole process as the
# controller, and module_utils then sends AnsibleModule.warn() to the controller's display instead of the module's
# result. The module unit tests collected into the same process run modules as a target does: put the flag back.
module_utils_internal.is_controller = WAS_CONTROLLER

ALLOWED = "use a number of seconds (90) or a duration such as '90s', '15m' or '1h30m'"


def test_the_filter_is_registered_under_its_documented_name():
    assert FilterModule().filters() == {"duration_seconds": duration_seconds}


def test_the_filter_uses_the_modules_parser():
    assert filter_plugin.parse_duration is parse_duration


@pytest.mark.parametrize("value, seconds", [
    ("30s", 30), ("30", 30), (30, 30), ("15m", 900), ("1h", 3600), ("1h30m", 5400), (" 2m ", 120), ("0", 0), (0, 0),
])
def test_durations_become_whole_seconds(value, seconds):
    assert duration_seconds(value, "rolling_update_grace_period") == seconds


@pytest.mark.parametrize("value", ["abc", "-5s", -5, "1.5x", "1.5m", 1.5, "30 s", "", None, True, "1w", "m"])
def test_anything_else_is_refused_naming_the_variable_and_the_forms_allowed(value):
    with pytest.raises(AnsibleFilterError) as caught:
        duration_seconds(value, "rolling_update_drain_timeout")
    message = str(caught.value)
    assert message.startswith("rolling_update_drain_timeout: %r is not allowed" % (value,)), message
    assert ALLOWED in message


@pytest.mark.parametrize("value", [0, "0", "0s", "0m"])
def test_a_minimum_refuses_zero_where_it_makes_no_sense(value):
    with pytest.raises(AnsibleFilterError) as caught:
        duration_seconds(value, "rolling_update_validate_interval", minimum=1)
    assert "rolling_update_validate_interval: %r is not allowed" % (value,) in str(caught.value)
    assert "of at least 1 second" in str(caught.value)
    assert duration_seconds("1s", "rolling_update_validate_interval", minimum=1) == 1


@pytest.mark.parametrize("value", ["", "  ", None])
def test_empty_is_unset_only_when_allowed(value):
    assert duration_seconds(value, "rolling_update_grace_period", allow_empty=True) is None
    with pytest.raises(AnsibleFilterError):
        duration_seconds(value, "rolling_update_grace_period")


def test_allow_empty_still_refuses_a_bad_value():
    with pytest.raises(AnsibleFilterError) as caught:
        duration_seconds("abc", "rolling_update_grace_period", allow_empty=True)
    assert "rolling_update_grace_period: 'abc' is not allowed" in str(caught.value)


def test_the_default_name_is_duration():
    with pytest.raises(AnsibleFilterError) as caught:
        duration_seconds("abc")
    assert str(caught.value).startswith("duration: 'abc'")
