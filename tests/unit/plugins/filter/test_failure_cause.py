# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The failure_cause filter: the role's rescue asks it whether a failure is one a rollback remedies."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.filter.failure_cause import FilterModule


def test_the_filter_takes_the_failed_result_the_module_and_a_hook_failure():
    cause = FilterModule().filters()["failure_cause"]
    assert cause({"msg": "abort alarm 'x' is in ALARM", "alarms": ["x"]}, "nodeops.rollout.rollout_step", {})["kind"] == "alarm"
    assert cause({"msg": "pod not Ready"}, "nodeops.rollout.cluster_validate")["rollback"] is True
    assert cause({"msg": "timeout"}, "nodeops.rollout.node_drain", {}) == {"kind": "other", "rollback": False, "reason": "timeout"}
