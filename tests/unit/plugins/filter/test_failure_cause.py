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


def test_given_the_run_s_action_it_says_whether_to_roll_back_now_or_hold():
    cause = FilterModule().filters()["failure_cause"]
    invalid = {"msg": "pod not Ready"}
    decide = {"run_action": "rollout", "on_failure": "rollback", "lock_kept": True}
    validate = "nodeops.rollout.cluster_validate"
    assert cause(invalid, validate, None, **decide)["roll_back"] is True
    # a hold is asked, the group is another run's (lock refused or lost), or the run is itself a rollback or a cancel
    for changed in ({"on_failure": "hold"}, {"lock_kept": False}, {"run_action": "cancel"}):
        assert cause(invalid, validate, None, **{key: changed.get(key, value) for key, value in decide.items()})["roll_back"] is False
    assert cause(invalid, validate, None, run_action="rollout", on_failure="rollback", lock_kept=False)["kept"] is False
    # a failure a rollback does not remedy is held, whatever on_failure says
    held = cause({"msg": "timeout"}, "nodeops.rollout.node_drain", None, **decide)
    assert held["roll_back"] is False and held["kept"] is True
