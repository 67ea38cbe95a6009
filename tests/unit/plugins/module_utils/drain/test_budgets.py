# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""drain/budgets.py: PodDisruptionBudget arithmetic as the disruption controller does it."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, strategies as st

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.budgets import (
    BudgetIndex,
    pdb_desired_healthy,
    pdb_selects,
    pdb_status,
    pdbs_selecting,
)
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import assert_plan_error, pdb, pod


def allowed(budget, pods, expected_pods=None):
    """status.disruptionsAllowed as pdb_status computes it."""
    return pdb_status(budget, pods, expected_pods)["disruptions_allowed"]


# ---------------------------------------------------------------------------------------------------------
# PodDisruptionBudgets
# ---------------------------------------------------------------------------------------------------------

def test_pdb_selects_by_namespace_and_selector():
    web = pod("web-1", labels={"app": "web", "tier": "front"})
    assert pdb_selects(pdb("p"), web)
    assert not pdb_selects(pdb("p", namespace="other"), web)
    assert not pdb_selects(pdb("p", null_selector=True), web)       # null selects nothing
    assert pdb_selects(pdb("p", selector={}), web)                   # empty selects the namespace
    assert not pdb_selects(pdb("p", selector={}, namespace="other"), web)
    assert not pdb_selects(pdb("p", selector={"matchLabels": {"app": "db"}}), web)

    def expr(operator, values=None, key="tier"):
        body = {"key": key, "operator": operator}
        if values is not None:
            body["values"] = values
        return pdb("p", selector={"matchExpressions": [body]})

    assert pdb_selects(expr("In", ["front", "back"]), web)
    assert not pdb_selects(expr("In", ["back"]), web)
    assert not pdb_selects(expr("In", ["front"], key="zone"), web)
    assert not pdb_selects(expr("NotIn", ["front"]), web)
    assert pdb_selects(expr("NotIn", ["back"]), web)
    assert pdb_selects(expr("NotIn", ["x"], key="zone"), web)        # absent label: NotIn matches
    assert pdb_selects(expr("Exists"), web)
    assert not pdb_selects(expr("Exists", key="zone"), web)
    assert pdb_selects(expr("DoesNotExist", key="zone"), web)
    assert not pdb_selects(expr("DoesNotExist"), web)
    both = pdb("p", selector={"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]})
    assert not pdb_selects(both, web)
    assert_plan_error(lambda: pdb_selects(expr("Like", ["f"]), web),
                      "PodDisruptionBudget default/p: spec.selector.matchExpressions[0].operator",
                      "'Like'", "In, NotIn, Exists, DoesNotExist")


LABELS = st.dictionaries(st.sampled_from(["app", "tier", "zone"]), st.sampled_from(["web", "db", "a"]), max_size=3)
SELECTORS = st.one_of(
    st.none(),
    st.builds(lambda labels: {"matchLabels": labels}, LABELS),
    st.builds(lambda labels, key, values: {"matchLabels": labels,
                                           "matchExpressions": [{"key": key, "operator": "In", "values": values}]},
              LABELS, st.sampled_from(["app", "tier", "zone"]), st.lists(st.sampled_from(["web", "db", "a"]), max_size=2)),
    st.builds(lambda key: {"matchExpressions": [{"key": key, "operator": "DoesNotExist"}]}, st.sampled_from(["app", "zone"])))


@given(st.lists(st.tuples(SELECTORS, st.sampled_from(["default", "shop"])), max_size=8),
       st.lists(st.tuples(LABELS, st.sampled_from(["default", "shop"])), max_size=8))
def test_the_budget_index_finds_exactly_the_budgets_a_scan_of_every_budget_finds(budgets, pods):
    pdbs = [pdb("b-%d" % n, selector=selector, null_selector=selector is None, namespace=namespace)
            for n, (selector, namespace) in enumerate(budgets)]
    pods = [pod("p-%d" % n, labels=labels, namespace=namespace) for n, (labels, namespace) in enumerate(pods)]
    index = BudgetIndex(pdbs)
    for one in pods:
        assert pdbs_selecting(one, index) == pdbs_selecting(one, pdbs)
    assert index.pods_selected(pods) == [[one for one in pods if pdb_selects(budget, one)] for budget in pdbs]


def test_the_budget_index_still_refuses_a_bad_selector_naming_the_budget():
    bad = pdb("p", selector={"matchExpressions": [{"key": "tier", "operator": "Like"}]})
    assert_plan_error(lambda: BudgetIndex([pdb("ok"), bad]).selecting(pod("web-1")),
                      "PodDisruptionBudget default/p: spec.selector.matchExpressions[0].operator", "'Like'")


def test_pdb_min_available_two_of_three_healthy_allows_one():
    pods = [pod("web-%d" % n) for n in range(3)]
    assert allowed(pdb("p", min_available=2), pods) == 1


def test_pdb_max_unavailable_25_percent_of_four_allows_one():
    pods = [pod("web-%d" % n) for n in range(4)]
    status = pdb_status(pdb("p", max_unavailable="25%"), pods)
    assert status["desired_healthy"] == 3 and status["disruptions_allowed"] == 1


def test_pdb_unready_and_terminating_pods_are_not_healthy():
    pods = [pod("web-0"), pod("web-1"), pod("web-2", ready=False)]
    assert allowed(pdb("p", min_available=2), pods) == 0
    pods = [pod("web-0"), pod("web-1"), pod("web-2", deleting=True)]
    status = pdb_status(pdb("p", min_available=2), pods)
    assert status["current_healthy"] == 2 and status["expected_pods"] == 3 and status["disruptions_allowed"] == 0


def test_pdb_pods_recorded_as_disrupted_are_not_healthy():
    pods = [pod("web-%d" % n) for n in range(3)]
    budget = pdb("p", min_available=1, status={"disruptedPods": {"web-0": "2024-05-01T12:00:00Z"}})
    assert pdb_status(budget, pods)["current_healthy"] == 2
    assert allowed(budget, pods) == 1


@pytest.mark.parametrize("spec, pods, desired, allowed", [
    ({"min_available": "50%"}, 3, 2, 1),      # 1.5 rounds up to 2
    ({"min_available": "34%"}, 3, 2, 1),      # 1.02 rounds up to 2
    ({"min_available": "100%"}, 3, 3, 0),
    ({"min_available": 0}, 3, 0, 3),
    ({"min_available": "0%"}, 3, 0, 3),
    ({"max_unavailable": "30%"}, 4, 2, 2),    # 1.2 rounds up to 2 unavailable
    ({"max_unavailable": "1%"}, 10, 9, 1),    # 0.1 rounds up to 1
    ({"max_unavailable": 0}, 3, 3, 0),
    ({"max_unavailable": 5}, 3, 0, 3),        # never below 0
    ({"max_unavailable": "100%"}, 3, 0, 3),
    ({}, 3, 0, 3),                            # neither field: nothing required
    ({"min_available": 1}, 1, 1, 0),
    ({"min_available": 1}, 0, 1, 0),
    ({"max_unavailable": 1}, 0, 0, 0),        # nothing expected: nothing allowed
])
def test_pdb_arithmetic_hand_computed(spec, pods, desired, allowed):
    budget = pdb("p", **spec)
    status = pdb_status(budget, [pod("web-%d" % n) for n in range(pods)])
    assert status["desired_healthy"] == desired
    assert status["disruptions_allowed"] == allowed


def test_pdb_expected_pods_override_follows_the_controller():
    pods = [pod("web-0"), pod("web-1")]  # the Deployment wants 3, one is missing
    assert allowed(pdb("p", max_unavailable=1), pods) == 1
    assert allowed(pdb("p", max_unavailable=1), pods, expected_pods=3) == 0
    assert allowed(pdb("p", min_available="100%"), pods, expected_pods=3) == 0
    # A workload scaled to zero whose pods are still there: nothing is expected, nothing may be disrupted.
    assert allowed(pdb("p", max_unavailable=1), pods, expected_pods=0) == 0
    # An integer minAvailable counts the selected pods; the scale does not matter to the controller.
    assert pdb_status(pdb("p", min_available=1), pods, expected_pods=3)["expected_pods"] == 2


def test_pdb_only_counts_selected_pods():
    pods = [pod("web-0"), pod("web-1"), pod("db-0", labels={"app": "db"}), pod("web-x", namespace="other")]
    status = pdb_status(pdb("p", min_available=1), pods)
    assert status["matching_pods"] == ["default/web-0", "default/web-1"]
    assert status["disruptions_allowed"] == 1


@pytest.mark.parametrize("field, value", [("minAvailable", "abc"), ("minAvailable", "2"), ("maxUnavailable", "150%"),
                                          ("maxUnavailable", -1), ("minAvailable", 1.5), ("minAvailable", True)])
def test_pdb_bad_values_name_the_field(field, value):
    budget = pdb("p")
    budget["spec"][field] = value
    assert_plan_error(lambda: pdb_desired_healthy(budget, 3), "PodDisruptionBudget default/p: spec." + field,
                      "use an integer >= 0 or a percentage between 0% and 100%")


@given(st.lists(st.tuples(st.booleans(), st.booleans()), max_size=15),
       st.one_of(st.integers(min_value=0, max_value=20).map(lambda n: ("minAvailable", n)),
                 st.integers(min_value=0, max_value=100).map(lambda n: ("minAvailable", "%d%%" % n)),
                 st.integers(min_value=0, max_value=20).map(lambda n: ("maxUnavailable", n)),
                 st.integers(min_value=0, max_value=100).map(lambda n: ("maxUnavailable", "%d%%" % n))))
def test_disruptions_allowed_against_a_reference(flags, setting):
    pods = [pod("web-%d" % n, ready=ready, deleting=deleting) for n, (ready, deleting) in enumerate(flags)]
    budget = pdb("p")
    budget["spec"][setting[0]] = setting[1]
    expected = len(pods)
    healthy = sum(1 for ready, deleting in flags if ready and not deleting)
    value = setting[1]
    if isinstance(value, str):
        scaled = math.ceil(Fraction(int(value[:-1]), 100) * expected)
    else:
        scaled = value
    desired = max(0, expected - scaled) if setting[0] == "maxUnavailable" else scaled
    reference = max(0, healthy - desired) if expected > 0 else 0
    assert allowed(budget, pods) == reference
    # Making one more pod Ready never lowers the allowance.
    for index, (ready, deleting) in enumerate(flags):
        if not ready and not deleting:
            better = list(pods)
            better[index] = pod("web-%d" % index)
            assert allowed(budget, better) >= reference
            break
