# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The strategies and what each makes of the group's surge."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.strategies import (
    STRATEGIES,
    check_strategy,
    strategy_surge,
)


def test_each_strategy_is_taken_and_anything_else_refused_naming_the_field():
    assert [check_strategy(name) for name in STRATEGIES] == ["surge", "terminate_first"]
    with pytest.raises(PlanError) as caught:
        check_strategy("blue-green", "rolling_update_strategy")
    assert str(caught.value) == "rolling_update_strategy: 'blue-green' is not allowed; use one of surge, terminate_first"


@pytest.mark.parametrize("max_surge, expected", [(None, None), ("", ""), (0, 0), ("3", "3"), ("50%", "50%")])
def test_surge_keeps_the_surge_as_given(max_surge, expected):
    assert strategy_surge("surge", max_surge) == expected


@pytest.mark.parametrize("max_surge", [None, "", " ", 0, "0", "0%"])
def test_terminate_first_launches_no_extra_instance(max_surge):
    assert strategy_surge("terminate_first", max_surge) == 0


@pytest.mark.parametrize("max_surge", [1, "2", "25%"])
def test_terminate_first_refuses_a_surge_that_asks_for_instances(max_surge):
    with pytest.raises(PlanError) as caught:
        strategy_surge("terminate_first", max_surge, "rolling_update_node_groups[0].max_surge",
                       "rolling_update_node_groups[0].strategy")
    assert str(caught.value) == (
        "rolling_update_node_groups[0].max_surge: %r is not allowed with rolling_update_node_groups[0].strategy "
        "terminate_first, which launches no extra instance; leave it unset or 0, or use "
        "rolling_update_node_groups[0].strategy surge" % (max_surge,))


def test_a_surge_that_does_not_parse_is_refused_as_max_surge_is():
    with pytest.raises(PlanError, match=r"^max_surge: 'lots' is not allowed"):
        strategy_surge("terminate_first", "lots")
