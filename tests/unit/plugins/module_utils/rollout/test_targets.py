# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/targets.py: which target groups still hold a drained instance, and how long it may wait for them."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import targets
from ansible_collections.nodeops.rollout.plugins.module_utils.values import PlanError

WEB = {"name": "web", "arn": "arn:tg/web", "target_type": "instance", "deregistration_delay": 300}
API = {"name": "api", "arn": "arn:tg/api", "target_type": "instance", "deregistration_delay": 60}
PODS = {"name": "pods", "arn": "arn:tg/pods", "target_type": "ip", "deregistration_delay": 30}


@pytest.mark.parametrize("state, held", [("healthy", True), ("initial", True), ("draining", True), ("unhealthy", False),
                                         ("unused", False), (None, False)])
def test_an_instance_is_held_while_it_takes_or_finishes_connections(state, held):
    found = targets.holding("i-1", [WEB, PODS], {"arn:tg/web": {"i-1": state} if state else {}, "arn:tg/pods": {"i-1": "healthy"}})
    assert found == ([{"kind": "target_group", "name": "web", "state": state, "timeout": 300 + targets.MARGIN_SECONDS}]
                     if held else [])


def test_each_hold_times_out_after_its_delay_plus_the_margin_unless_a_timeout_is_given():
    states = {"arn:tg/web": {"i-1": "draining"}, "arn:tg/api": {"i-1": "healthy"}}
    assert [hold["timeout"] for hold in targets.holding("i-1", [WEB, API], states)] == [330, 90]
    assert [hold["timeout"] for hold in targets.holding("i-1", [WEB, API], states, timeout=45)] == [45, 45]


@pytest.mark.parametrize("value, seconds", [(None, None), ("", None), ("  ", None), (0, 0), ("0", 0), ("5m", 300), (90, 90)])
def test_the_timeout_option_reads_as_a_duration_or_empty(value, seconds):
    assert targets.parse_deregistration_timeout(value) == seconds


@pytest.mark.parametrize("value", ["soon", -1, "1.5m", True])
def test_a_bad_timeout_is_refused_naming_the_option(value):
    with pytest.raises(PlanError) as raised:
        targets.parse_deregistration_timeout(value, "rolling_update_deregistration_timeout")
    assert str(raised.value).startswith("rolling_update_deregistration_timeout: ")
    assert "leave it empty" in str(raised.value)


def test_the_plan_shows_every_target_group_and_which_are_waited_for():
    assert [(tg["name"], tg["waited_for"]) for tg in targets.plan_target_groups([WEB, PODS])] == [("web", True), ("pods", False)]
