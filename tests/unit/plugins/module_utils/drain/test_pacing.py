# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Eviction pacing: each budget's gate (how many evictions it takes now, the backoff after a refusal, one read at a
time), and the pacing shared by the nodes of one drain: which pods are sent now, which wait and why, and that an
implicit budget, which no API server enforces, lets nothing through before it is read."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pacing import (
    WATCHED_BUDGET_READ_POLLS, BudgetGates, BudgetPacing, is_implicit, paced_by_budget)
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.work import PodWork
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import pdb as make_pdb
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import pod as make_pod

IMPLICIT = "implicit:Deployment shop/worker"


# ---- budget gates --------------------------------------------------------------------------------

def test_an_unknown_budget_is_open():
    gates = BudgetGates()
    assert gates.decide("shop/web", 0.0) == ("go", None)
    assert gates.decide(None, 0.0) == ("go", None)


def test_seeded_tokens_let_that_many_through_then_ask_for_a_read_once_they_are_answered():
    gates = BudgetGates(settle=0.1)
    gates.seed("shop/web", 2)
    for _attempt in range(2):
        assert gates.decide("shop/web", 0.0) == ("go", None)
        gates.sent("shop/web")
    # the handler takes a disruption off the status when it admits an eviction: a read before the answers counts twice
    assert gates.decide("shop/web", 0.0) == ("wait", 0.1)
    gates.answered("shop/web")
    assert gates.decide("shop/web", 0.1) == ("wait", 0.2)
    gates.answered("shop/web")
    assert gates.decide("shop/web", 0.2) == ("check", None)


def test_one_reader_at_a_time_and_its_count_is_spent_once():
    """Two nodes of one drain meet a budget at 0: one reads it, the other waits for that read instead of reading
    too (each read's count spent by each node would send twice what the budget allows)."""
    gates = BudgetGates(settle=0.1)
    gates.refused("shop/web", 0.0)
    assert gates.decide("shop/web", 5.0) == ("check", None)
    gates.reading("shop/web")
    assert gates.decide("shop/web", 5.0) == ("wait", 5.1)   # the other node
    assert gates.checked("shop/web", 2, 5.0) == ("go", None)
    verdicts = []
    for _node in range(3):
        verdict = gates.decide("shop/web", 5.1)
        verdicts.append(verdict[0])
        if verdict[0] == "go":
            gates.sent("shop/web")
    assert verdicts == ["go", "go", "wait"]


def test_a_refusal_closes_the_budget_with_growing_backoff():
    gates = BudgetGates(cap=16.0, jitter=lambda: 1.0)
    assert gates.refused("shop/web", 10.0) == 11.0
    assert gates.decide("shop/web", 10.5) == ("wait", 11.0)
    assert gates.decide("shop/web", 11.0) == ("check", None)
    assert gates.checked("shop/web", 0, 11.0) == ("wait", 13.0)
    assert gates.checked("shop/web", 0, 13.0) == ("wait", 17.0)
    assert gates.checked("shop/web", 0, 17.0) == ("wait", 25.0)
    assert gates.checked("shop/web", 0, 25.0) == ("wait", 41.0)
    assert gates.checked("shop/web", 0, 41.0) == ("wait", 57.0)  # capped at 16 s
    assert gates.checked("shop/web", 3, 57.0) == ("go", None)
    gates.accepted("shop/web")
    assert gates.refused("shop/web", 60.0) == 61.0  # backoff started over after an accepted eviction


def test_retry_after_holds_the_gate_longer():
    gates = BudgetGates(cap=1.0, jitter=lambda: 1.0)
    assert gates.refused("shop/web", 0.0, retry_after=5) == 5.0


def test_an_unreadable_budget_gets_one_probe_and_a_deleted_one_is_forgotten():
    gates = BudgetGates()
    gates.refused("shop/web", 0.0)
    assert gates.checked("shop/web", None, 100.0) == ("go", None)
    gates.sent("shop/web")
    gates.answered("shop/web")
    assert gates.decide("shop/web", 100.0) == ("check", None)
    gates.forget("shop/web")
    assert gates.decide("shop/web", 100.0) == ("go", None)


def test_bad_seeds_are_ignored():
    gates = BudgetGates()
    gates.seed("shop/web", None)
    gates.seed("shop/api", -1)
    gates.seed("shop/db", True)
    assert gates.gates == {}


def test_reads_finding_zero_repeat_at_the_check_interval_not_the_backoff():
    gates = BudgetGates(cap=16.0, jitter=lambda: 1.0, check_interval=2.0)
    gates.refused("shop/web", 0.0)
    assert [gates.checked("shop/web", 0, t)[1] for t in (1.0, 3.0, 5.0, 7.0)] == [3.0, 5.0, 7.0, 9.0]


@pytest.mark.parametrize("conditions, paced", [
    ([{"type": "Ready", "status": "True"}], True),
    ([{"type": "Ready", "status": "False"}], False),
    ([], False),
])
def test_only_ready_pods_wait_at_their_budgets_gate(conditions, paced):
    # a pod that is not Ready may leave under a budget at 0 disruptions (healthy budget, or AlwaysAllow): the API decides
    pod = {"metadata": {"name": "p", "namespace": "n"}, "status": {"phase": "Running", "conditions": conditions}}
    assert paced_by_budget(pod) is paced


# ---- the pacing of one drain ---------------------------------------------------------------------------------------

class Reads:
    """The caller's read_budget: answers in turn, each read counted."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = []

    def __call__(self, key):
        self.calls.append(key)
        return self.answers.pop(0)


class Clock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


def evict_work(name, pdb_key="default/web", implicit=None, ready=True, mode="evict"):
    made = make_pod(name, ready=ready)
    made["metadata"]["uid"] = "uid-" + name
    work = PodWork(made, mode)
    work.pdb = pdb_key
    work.implicit = implicit
    return work


def works_of(*works):
    return {work.key: work for work in works}


def pacing(reads, clock=None, poll=1.0):
    return BudgetPacing(poll, 16.0, clock or Clock(), reads)


def budget(name="web", allowed=1, healthy=3, desired=2):
    made = make_pdb(name, max_unavailable=1)
    made["status"] = {"disruptionsAllowed": allowed, "currentHealthy": healthy, "desiredHealthy": desired}
    return made


@pytest.mark.parametrize("key, implicit", [(IMPLICIT, True), ("shop/web", False), (None, False), ("", False)])
def test_is_implicit(key, implicit):
    assert is_implicit(key) is implicit


def test_a_budget_allowing_one_lets_one_pod_go_and_the_next_waits_naming_the_budget():
    reads = Reads()
    paced = pacing(reads)
    paced.seed([budget(allowed=1)])
    first, second = evict_work("web-0"), evict_work("web-1")
    due = paced.select_due(works_of(first, second), 0.0)
    assert due == [first] and first.admitted == "default/web"
    assert second.next_try > 0.0
    assert second.why == "waiting: PodDisruptionBudget default/web allows 1 disruption(s): it needs 2 healthy pods and has 3"
    assert reads.calls == []      # the seeded count needs no read


def test_once_the_eviction_has_its_answer_the_budget_is_read_again_before_the_next():
    reads = Reads({"disruptionsAllowed": 1})
    paced = pacing(reads)
    paced.seed([budget(allowed=1)])
    first, second = evict_work("web-0"), evict_work("web-1")
    assert paced.select_due(works_of(first, second), 0.0) == [first]
    first.state = "sent"
    paced.answer(first, ("accepted", "default/web"), 0.5, None)
    paced.answered(first)
    assert first.admitted is None
    second.next_try = 0.0
    assert paced.select_due(works_of(first, second), 1.0) == [second]
    assert reads.calls == ["default/web"]


def test_a_refusal_holds_the_pod_until_the_retry_after():
    paced = pacing(Reads())
    paced.seed([budget(allowed=1)])
    work = evict_work("web-0")
    assert paced.select_due(works_of(work), 0.0) == [work]
    paced.answer(work, ("refused", "default/web"), 10.0, 30)
    assert work.next_try >= 40.0


def test_pods_no_budget_paces_go_at_once():
    reads = Reads()
    paced = pacing(reads)
    paced.seed([budget(allowed=0)])
    unready = evict_work("web-0", ready=False)     # takes none of the budget's disruptions: the API decides
    deleted = evict_work("done-0", pdb_key=None, mode="delete")
    free = evict_work("free-0", pdb_key=None)
    later = evict_work("web-1")
    later.next_try = 5.0
    assert paced.select_due(works_of(unready, deleted, free, later), 0.0) == [unready, deleted, free]
    assert reads.calls == []


def test_a_budget_at_zero_is_read_once_per_poll_and_lets_nothing_through():
    reads = Reads({"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2})
    paced = pacing(reads, poll=2.0)
    paced.seed([budget(allowed=0)])
    work = evict_work("web-0")
    assert paced.select_due(works_of(work), 0.0) == []
    assert reads.calls == ["default/web"] and work.next_try == 2.0
    assert work.why == "waiting: PodDisruptionBudget default/web allows 0 disruption(s): it needs 2 healthy pods and has 2"


def test_a_deleted_budget_frees_its_pods():
    paced = pacing(Reads("gone"))
    paced.seed([budget(allowed=0)])
    work = evict_work("web-0")
    assert paced.select_due(works_of(work), 0.0) == [work]
    assert work.pdb is None and work.admitted is None


def test_an_implicit_budget_lets_nothing_through_before_a_read_and_nothing_when_the_read_fails():
    reads = Reads(None, {"disruptionsAllowed": 1, "implicit": "Deployment shop/worker: 2 Ready, 1 may go"})
    paced = pacing(reads)
    work = evict_work("worker-0", pdb_key=None, implicit=IMPLICIT)
    assert paced.select_due(works_of(work), 0.0) == []
    assert reads.calls == [IMPLICIT]
    assert work.why == ("waiting: waiting for the implicit budget of Deployment shop/worker (no PodDisruptionBudget) "
                        "to allow a disruption")
    work.next_try = 0.0
    assert paced.select_due(works_of(work), 1.0) == [work]
    paced.answer(work, ("accepted", IMPLICIT), 1.5, None)
    assert paced.evicted == {"uid-worker-0"}


class Watch:
    healthy = True

    def __init__(self, allowed):
        self.allowed = allowed

    def get(self, key):
        return {"status": {"disruptionsAllowed": self.allowed}}


def test_while_the_watch_shows_a_budget_at_zero_no_read_is_made_for_a_few_polls():
    clock = Clock(0.0)
    reads = Reads({"disruptionsAllowed": 0}, {"disruptionsAllowed": 0})
    paced = pacing(reads, clock=clock, poll=1.0)
    paced.watch = Watch(0)
    paced.seed([budget(allowed=0)])
    work = evict_work("web-0")
    assert paced.select_due(works_of(work), 0.0) == [] and len(reads.calls) == 1
    clock.now = 1.0
    work.next_try = 0.0
    assert paced.select_due(works_of(work), 1.0) == [] and len(reads.calls) == 1   # the watch said it: no request
    clock.now = float(WATCHED_BUDGET_READ_POLLS)
    work.next_try = 0.0
    assert paced.select_due(works_of(work), clock.now) == [] and len(reads.calls) == 2   # read again after a few polls
