# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Eviction pacing: how many evictions each PodDisruptionBudget can take now (:class:`BudgetGates`), and which pods of
a drain to send a request for, the budgets being shared by every node drained at once (:class:`BudgetPacing`).

An implicit budget (``drain.implicit``: a workload of two or more replicas no PodDisruptionBudget covers) has a gate
like a real budget's, keyed ``implicit:<Kind> <namespace>/<name>``. The API server does not know it and never refuses
its evictions, so its gate is always read before it lets one through (the read counts the workload's Ready pods
cluster-wide, the pods just evicted left out), and a read that fails lets nothing through.

Pure: the budget's status is read by the caller's ``read_budget``; a lock keeps the gates whole between the node
threads of one drain.
"""

from __future__ import annotations

import threading

from ansible_collections.nodeops.rollout.plugins.module_utils.core.backoff import retry_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import is_int
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.budgets import pdb_key
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.implicit import IMPLICIT_PREFIX
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import pod_is_ready
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.work import budget_wait, gate_key

# While the budgets' watch shows a budget allowing nothing, it is read again only every this many poll intervals (every
# poll interval without the watch): the watch brings the change that frees a disruption, the read stays the count's
# source, and a watch that falls behind delays a drain by a few seconds at most.
WATCHED_BUDGET_READ_POLLS = 4


def is_implicit(key):
    """Whether a gate's key names an implicit budget (drain.implicit) rather than a PodDisruptionBudget."""
    return isinstance(key, str) and key.startswith(IMPLICIT_PREFIX)


def paced_by_budget(pod):
    """Whether an eviction of ``pod`` waits at its budget's gate (:class:`BudgetGates`).

    Only a Ready pod surely takes one of the budget's disruptions. A running pod that is not Ready takes none
    when the budget is healthy or its ``unhealthyPodEvictionPolicy`` is AlwaysAllow (``eviction_needs_budget``),
    so a budget at 0 disruptions can still let it go: the Eviction API is asked, and a refusal closes the gate
    as any other does.
    """
    return pod_is_ready(pod)


class BudgetGates:
    """How many evictions each PodDisruptionBudget can take now, so that a budget is not hammered with evictions
    it will refuse.

    A budget with no gate is open. A refusal (429) closes it for a backoff delay (:func:`retry_delay`, growing with
    each refusal in a row). Once the delay is over the caller reads the budget's ``status.disruptionsAllowed`` (one
    request instead of one refused eviction per pod), and the gate lets that many evictions through before the
    budget is read again. While a read finds 0, the budget is read again every ``check_interval`` seconds (the
    drain's poll interval: a replacement becoming Ready frees a disruption at any moment, and a read costs one
    request whatever the number of pods waiting); without ``check_interval`` the backoff applies to reads too.

    The nodes of one drain share the gates, so a budget is read by one caller at a time, and only once every
    eviction it let through has its answer: the eviction handler takes a disruption off ``status.disruptionsAllowed``
    when it admits an eviction, so a read made while evictions are in flight (or by two nodes at once, each then
    spending the whole count) counts disruptions twice and ends in refusals. Callers that meet a gate being read or
    waiting for answers try again after ``settle`` seconds.
    Pure bookkeeping: the caller supplies the clock and does the reading.
    """

    def __init__(self, cap=16.0, jitter=None, check_interval=None, settle=0.1):
        self.cap = cap
        self.jitter = jitter
        self.check_interval = check_interval
        self.settle = settle
        self.gates = {}

    @staticmethod
    def _gate(tokens=0):
        return {"until": 0.0, "attempts": 0, "tokens": tokens, "inflight": 0, "reading": False}

    def seed(self, pdb, disruptions_allowed):
        """Start with what the budget's status said when the drain began (a hint; the Eviction API decides)."""
        if isinstance(disruptions_allowed, int) and not isinstance(disruptions_allowed, bool) and disruptions_allowed >= 0:
            self.gates[pdb] = self._gate(disruptions_allowed)

    def decide(self, pdb, now):
        """``("go", None)``: send one eviction now; ``("wait", t)``: not before ``t``; ``("check", None)``: read the
        budget first (:meth:`reading`, then :meth:`checked`)."""
        gate = self.gates.get(pdb) if pdb else None
        if gate is None:
            return "go", None
        if now < gate["until"]:
            return "wait", gate["until"]
        if gate["tokens"] > 0:
            return "go", None
        if gate["reading"] or gate["inflight"] > 0:
            return "wait", now + self.settle
        return "check", None

    def closed_until_read(self, pdb):
        """A budget nobody refuses evictions for (an implicit budget): with no gate yet, it starts with none to let
        through, so the first eviction waits for a read of it."""
        if pdb not in self.gates:
            self.gates[pdb] = self._gate(0)

    def reading(self, pdb):
        """The caller that got ``"check"`` reads the budget: nobody else does until :meth:`checked`."""
        self.gates.setdefault(pdb, self._gate())["reading"] = True

    def forget(self, pdb):
        """The budget is gone: its pods are free to go."""
        self.gates.pop(pdb, None)

    def sent(self, pdb):
        """One eviction of the budget's pods is on its way: it uses one of the disruptions counted, and the budget is
        not read again before its answer (:meth:`answered`)."""
        gate = self.gates.get(pdb) if pdb else None
        if gate is not None:
            gate["tokens"] = max(0, gate["tokens"] - 1)
            gate["inflight"] += 1

    def answered(self, pdb):
        """An eviction let through by :meth:`sent` has its answer, whatever it was."""
        gate = self.gates.get(pdb) if pdb else None
        if gate is not None and gate["inflight"] > 0:
            gate["inflight"] -= 1

    def accepted(self, pdb):
        """The budget took an eviction: the backoff starts over."""
        gate = self.gates.get(pdb) if pdb else None
        if gate is not None:
            gate["attempts"] = 0

    def refused(self, pdb, now, retry_after=None):
        """The budget refused an eviction (429): closed until the backoff delay is over; returns that time."""
        gate = self.gates.setdefault(pdb, self._gate())
        gate["attempts"] += 1
        gate["tokens"] = 0
        gate["until"] = max(gate["until"], now + retry_delay(gate["attempts"], retry_after, self.cap, self.jitter))
        return gate["until"]

    def checked(self, pdb, disruptions_allowed, now):
        """The budget was read: let ``disruptions_allowed`` evictions through, or wait again when it is 0.

        ``None`` (unknown) lets one eviction through to ask the Eviction API itself.
        """
        gate = self.gates.setdefault(pdb, self._gate())
        gate["reading"] = False
        if disruptions_allowed is None:  # the budget could not be read, or has no status yet: let one eviction probe it
            gate["tokens"] = 1
            return "go", None
        if isinstance(disruptions_allowed, int) and not isinstance(disruptions_allowed, bool) and disruptions_allowed > 0:
            gate["tokens"] = disruptions_allowed
            return "go", None
        gate["attempts"] += 1
        gate["tokens"] = 0
        if self.check_interval:
            gate["until"] = now + self.check_interval
        else:
            gate["until"] = now + retry_delay(gate["attempts"], None, self.cap, self.jitter)
        return "wait", gate["until"]


class BudgetPacing:
    """The budgets' gates of one drain, shared by its node threads: which pods are due now, and what each answer
    changes. ``read_budget(pdb)`` reads a budget's status (``{...}``; None when unknown, ``"gone"`` when the budget no
    longer exists); ``watch``, when set, is the budgets' watch (``get(pdb)``, ``healthy``)."""

    def __init__(self, poll_interval, retry_max_delay, clock, read_budget):
        self.poll_interval = poll_interval
        self.clock = clock
        self.read_budget = read_budget
        self.watch = None
        self.gates = BudgetGates(cap=retry_max_delay, check_interval=poll_interval, settle=min(0.1, poll_interval))
        self._lock = threading.Lock()
        self._status = {}
        self._read_at = {}
        self.evicted = set()   # uids of the pods evicted under an implicit budget: no longer counted Ready by its reads

    def seed(self, pdbs):
        """The budgets as listed before the drain: each gate starts from its ``disruptionsAllowed``."""
        for pdb in pdbs:
            self.gates.seed(pdb_key(pdb), (pdb.get("status") or {}).get("disruptionsAllowed"))
            self._status[pdb_key(pdb)] = pdb.get("status") or {}

    def select_due(self, works, now):
        """The pods to send a request for now; evictions are paced by their budget (BudgetGates, shared by the nodes)."""
        due = []
        for work in works.values():
            if work.state != "todo" or work.next_try > now:
                continue
            pdb = gate_key(work)
            if work.mode != "evict" or not pdb or not paced_by_budget(work.pod):
                due.append(work)
                continue
            with self._lock:
                if is_implicit(pdb):
                    self.gates.closed_until_read(pdb)
                verdict, when = self._decide_and_take(pdb, now)
                if verdict == "check":
                    self.gates.reading(pdb)
            if verdict == "check":
                verdict, when = self._check_budget(pdb, now)
                if verdict == "gone":
                    if work.pdb:
                        work.pdb = None
                    else:
                        work.implicit = None
                    due.append(work)
                    continue
            if verdict == "go":
                work.admitted = pdb
                due.append(work)
            else:  # "wait", or "check" again: the pods just let through hold the budget's count
                work.next_try = when if verdict == "wait" else now + self.poll_interval
                budget_wait(work, self._status.get(pdb) or {})
        return due

    def answered(self, work):
        """A request let through by its budget's gate has its answer (whatever it is)."""
        if work.admitted:
            with self._lock:
                self.gates.answered(work.admitted)
            work.admitted = None

    def answer(self, work, gate, now, retry_after):
        """What ``drain.work.apply_answer`` said of the budget (``(verdict, pdb)`` or None): an accepted eviction opens
        the gate again, a refusal closes it until the pod's next try."""
        if gate is None:
            return
        verdict, pdb = gate
        with self._lock:
            if verdict == "accepted":
                self.gates.accepted(pdb)
                if is_implicit(pdb):
                    self.evicted.add(work.uid)
            else:
                work.next_try = self.gates.refused(pdb, now, retry_after)

    def _decide_and_take(self, pdb, now):
        """The gate's verdict, with the disruption taken at once on "go" (the caller holds the lock): two nodes must not
        both be let through on the last one."""
        verdict, when = self.gates.decide(pdb, now)
        if verdict == "go":
            self.gates.sent(pdb)
        return verdict, when

    def _check_budget(self, pdb, now):
        """Read the budget this caller holds the gate of; the gate's verdict for the next pod, or "gone"."""
        if self._still_zero(pdb):
            with self._lock:
                self.gates.checked(pdb, 0, self.clock())
                return self._decide_and_take(pdb, now)
        allowed = None
        try:
            self._read_at[pdb] = self.clock()
            allowed = self._disruptions_allowed(pdb)
            if allowed is None and is_implicit(pdb):
                allowed = 0   # no API server refuses for it: not knowing lets nothing through
        finally:
            with self._lock:
                if allowed == "gone":
                    self.gates.forget(pdb)
                else:
                    self.gates.checked(pdb, allowed, self.clock())
        if allowed == "gone":
            return "gone", None
        with self._lock:
            return self._decide_and_take(pdb, now)

    def _still_zero(self, pdb):
        """Whether the budgets' watch shows ``pdb`` still allowing nothing since it was last read, recently enough that
        no request is needed to know it."""
        watch = self.watch
        if watch is None or not watch.healthy:
            return False
        seen = watch.get(pdb)
        read_at = self._read_at.get(pdb)
        return (seen is not None and read_at is not None and (seen.get("status") or {}).get("disruptionsAllowed") == 0
                and self.clock() - read_at < WATCHED_BUDGET_READ_POLLS * self.poll_interval)

    def _disruptions_allowed(self, pdb):
        """The budget's status.disruptionsAllowed; None when unknown, "gone" when the budget no longer exists."""
        status = self.read_budget(pdb)
        if status is None or status == "gone":
            return status
        with self._lock:
            self._status[pdb] = status
        value = status.get("disruptionsAllowed")
        return value if is_int(value) else None
