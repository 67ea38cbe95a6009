# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""drain/options.py: node_drain's options, validated before anything is read."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.options import DrainOptions


@pytest.mark.parametrize("grace_period", [None, "", "  "])
def test_no_grace_period_keeps_the_pods_own(grace_period):
    assert DrainOptions({"grace_period": grace_period}).grace_period is None


def test_waves_are_node_names_from_lists_or_the_plans_batches():
    assert DrainOptions({"waves": [["n-1"], {"nodes": ["n-2", None], "index": 2}]}).waves == [["n-1"], ["n-2"]]
    assert DrainOptions({}).waves is None


@pytest.mark.parametrize("params, message", [
    ({"timeout": "soon"}, "timeout: 'soon' is not allowed"),
    ({"timeout_action": "retry"}, "timeout_action: 'retry' is not allowed; use one of fail, skip, force"),
    ({"grace_period": -1}, "grace_period: -1 is not allowed"),
    ({"grace_period": "abc"}, "grace_period: 'abc' is not allowed; use a number of seconds (90) or a duration such as '90s'"),
    ({"grace_period": "-5s"}, "grace_period: '-5s' is not allowed"),
    ({"grace_period": "1.5x"}, "grace_period: '1.5x' is not allowed"),
    ({"max_concurrent_evictions": 0}, "max_concurrent_evictions: 0 is not allowed; use an integer >= 1"),
    ({"poll_interval": 0}, "poll_interval: 0 is not allowed"),
    ({"waves": [["n-1"], "n-2"]}, "waves: [['n-1'], 'n-2'] is not allowed; use a list of lists of node names"),
    ({"waves": [{"nodes": [3]}]}, "waves: [{'nodes': [3]}] is not allowed"),
])
def test_bad_options_name_the_field(params, message):
    with pytest.raises(PlanError) as info:
        DrainOptions(params)
    assert message in str(info.value)
