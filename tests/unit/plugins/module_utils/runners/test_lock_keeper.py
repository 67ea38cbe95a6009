# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import datetime
import time

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.runners import lock_keeper
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.lock_keeper import LockKeeper, LockLost, renew_due

NOW = datetime.datetime(2026, 11, 23, 10, 0, 0, tzinfo=datetime.timezone.utc)


class Refused(Exception):
    """Stands for locks.LockHeld: another run holds the Lease."""


class Clock:
    def __init__(self, moment=NOW):
        self.moment = moment

    def __call__(self):
        return self.moment

    def advance(self, seconds):
        self.moment += datetime.timedelta(seconds=seconds)


class Renewals:
    """renew(): each call answers the next of ``answers`` (an exception to raise, or None for 'renewed for duration')."""

    def __init__(self, clock, duration, answers=()):
        self.clock, self.duration, self.answers, self.calls = clock, duration, list(answers), 0

    def __call__(self):
        self.calls += 1
        if self.answers and self.answers[0] is not None:
            raise self.answers.pop(0)
        if self.answers:
            self.answers.pop(0)
        return self.clock() + datetime.timedelta(seconds=self.duration)


def keeper(clock, renew, held_for=100, duration=120, lineage=(), alive=lambda pid: True, **kwargs):
    held_until = None if held_for is None else clock() + datetime.timedelta(seconds=held_for)
    return LockKeeper("node group workers", renew, duration, held_until, now=clock, lineage=list(lineage), alive=alive,
                      refused=(Refused,), **kwargs)


def test_a_renewal_is_due_when_less_than_half_the_duration_is_left_or_nothing_is_known():
    assert renew_due(None, 120, NOW)
    assert not renew_due(NOW + datetime.timedelta(seconds=60), 120, NOW)
    assert renew_due(NOW + datetime.timedelta(seconds=59), 120, NOW)


def test_a_module_that_ends_soon_makes_no_request_and_a_long_one_renews_every_half_duration():
    clock = Clock()
    renew = Renewals(clock, 120)
    keep = keeper(clock, renew, held_for=100)
    assert keep.check() is None and renew.calls == 0          # 100 s left of 120: nothing to do
    clock.advance(41)
    assert keep.check() is None and renew.calls == 1          # 59 s left: renewed, for 120 s from now
    clock.advance(59)
    assert keep.check() is None and renew.calls == 1
    clock.advance(2)
    assert keep.check() is None and renew.calls == 2


def test_a_lock_taken_over_by_another_run_stops_the_module():
    clock = Clock()
    keep = keeper(clock, Renewals(clock, 120, [Refused("node group workers is locked by another run: ...")]), held_for=10)
    assert keep.check() == "the lock of node group workers was lost while this module ran: node group workers is locked by another run: ..."


def test_renewals_that_fail_are_tried_again_while_the_hold_lasts_then_the_module_stops():
    clock = Clock()
    renew = Renewals(clock, 120, [ConnectionError("refused")] * 3)
    keep = keeper(clock, renew, held_for=30)
    assert keep.check() is None                               # out of reach, 30 s of the hold left: try again later
    clock.advance(29)
    assert keep.check() is None
    clock.advance(2)
    reason = keep.check()
    assert reason.startswith("the lock of node group workers expired while this module ran: it could not be renewed (refused)")
    assert renew.calls == 3


def test_a_run_that_is_gone_stops_the_keeper_without_a_renewal():
    clock = Clock()
    renew = Renewals(clock, 120)
    keep = keeper(clock, renew, held_for=None, lineage=[4242, 17], alive=lambda pid: pid != 17)
    assert keep.check().startswith("the run that started this module is gone (process 17 ended)")
    assert renew.calls == 0


def test_the_run_is_the_processes_up_to_the_topmost_of_ansible(monkeypatch):
    # the module <- sh <- sh <- the task's worker <- ansible-playbook <- the shell that started it <- init
    monkeypatch.setattr(lock_keeper.os, "getppid", lambda: 500)
    parents = {500: 400, 400: 300, 300: 200, 200: 100, 100: 1}
    commands = {500: "/bin/sh -c python3 AnsiballZ_node_drain.py", 400: "/bin/sh -c ...", 300: "python ansible-playbook -i x",
                200: "python ansible-playbook -i x", 100: "-bash"}
    assert lock_keeper.ancestors(parent_of=parents.get, command_line=commands.get) == [500, 400, 300, 200]
    assert lock_keeper.ancestors(count=2, parent_of=parents.get, command_line=commands.get) == [500]
    # no command line to read: the parent alone
    assert lock_keeper.ancestors(parent_of=parents.get, command_line=lambda pid: "") == [500]


def test_the_keeper_renews_at_once_when_nothing_is_known_and_stops_the_main_thread_when_the_lock_is_lost():
    clock = Clock()
    # renewed at the start; then, after the clock moves past half the duration, refused: the main thread is stopped
    renew = Renewals(clock, 2, [None, Refused("taken over")])
    with pytest.raises(LockLost, match="^Stopped: the lock of node group workers was lost while this module ran: taken over.$"):
        with keeper(clock, renew, held_for=None, duration=2, check_seconds=0.02):
            assert renew.calls == 1
            clock.advance(1.5)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.01)
    assert renew.calls == 2


def test_a_lock_that_cannot_be_kept_at_the_start_stops_the_module_before_any_change():
    clock = Clock()
    with pytest.raises(LockLost, match="^Stopped before any change: the lock of node group workers was lost"):
        with keeper(clock, Renewals(clock, 120, [Refused("gone")]), held_for=None):
            raise AssertionError("the module's work must not start")


def test_a_module_that_ends_stops_its_keeper():
    clock = Clock()
    keep = keeper(clock, Renewals(clock, 120), held_for=100, check_seconds=0.01)
    with keep:
        time.sleep(0.05)
    assert not keep._thread.is_alive()  # pylint: disable=protected-access
