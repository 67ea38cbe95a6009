# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/plan_text.py: the plan as lines a person reads."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import capacity_line, group_state_lines


def test_the_plan_names_the_nodes_that_cannot_take_pods_and_the_floor_the_others_keep():
    plan = {"group_size": 4, "batch_size": 1,
            "capacity": {"taking_pods": ["a", "b", "c"], "tolerated_taints": [], "floor": 3,
                         "not_counted": [{"node": "d", "why": "tainted dedicated=infra:NoSchedule"}]}}
    assert capacity_line(plan) == ("3 of 4 node(s) can take pods now, the floor keeps at least 3 of them; not counted: "
                                   "d (tainted dedicated=infra:NoSchedule)")
    assert group_state_lines(plan)[0] == capacity_line(plan)


def test_a_group_whose_every_node_takes_pods_gets_no_capacity_line():
    plan = {"group_size": 3, "batch_size": 1, "capacity": {"taking_pods": ["a", "b", "c"], "not_counted": []}}
    assert capacity_line(plan) is None and group_state_lines(plan) == []


def test_the_plan_states_the_alerts_firing_now_by_gate():
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import control_lines
    lines = control_lines({"alerts": {"abort": [], "pause": ['NodeNetworkSaturated{severity="warning"}']}})
    assert lines == ['alerts firing now: abort none; pause NodeNetworkSaturated{severity="warning"}']
    assert control_lines({"alerts": {"abort": ["KubeAPIErrorsHigh"]}}) == ["alerts firing now: abort KubeAPIErrorsHigh"]
    assert control_lines({"alerts": None}) == []
