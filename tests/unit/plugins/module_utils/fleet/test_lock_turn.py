# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A fleet worker's locks before a cluster's rollout: free goes, this run's stopped attempt is waited for until its lock
expires, another run (or a stopped attempt that renews its lock: alive elsewhere) makes the cluster busy."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.fleet.lock_turn import lock_turn
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.lease_lock import LockError

NOW = datetime.datetime(2026, 12, 1, 20, 0, 0, tzinfo=datetime.timezone.utc)
STOPPED = "awx-job-7@node-1/aaaa"


def free(group, action="take_over"):
    return {"item": {"name": group}, "changed": True, "action": action, "lease": {"holder": "x"}}


def held(group, holder, expires="2026-12-01T20:00:25.000000Z"):
    return {"item": {"name": group}, "failed": False, "action": "refuse", "holder": holder, "msg": "locked by another run",
            "lease": {"name": "nodeops-rollout-" + group, "holder": holder, "expires_at": expires}}


def test_free_or_expired_locks_let_the_rollout_take_them():
    turn = lock_turn([free("a", "create"), free("b", "acquire"), free("c")], "c-2", STOPPED, {}, NOW)
    assert turn["decision"] == "free" and turn["wait_seconds"] == 0


def test_the_stopped_attempts_lock_is_waited_for_until_it_expires():
    turn = lock_turn([free("a"), held("b", STOPPED)], "c-2", STOPPED, {}, NOW)
    assert turn["decision"] == "wait", turn
    # 25 s until it expires, then a second for it to count as expired
    assert turn["wait_seconds"] == 27
    assert turn["seen"] == {"b": "2026-12-01T20:00:25.000000Z"}
    assert ("c-2: node group b is held by %s, this run's stopped attempt on c-2, until 2026-12-01T20:00:25.000000Z" % STOPPED
            in turn["message"])
    # read again after the wait: expired, taken over
    assert lock_turn([free("a"), free("b")], "c-2", STOPPED, turn["seen"], NOW)["decision"] == "free"
    # read again with the same expiry (the clocks a moment apart): still waited for
    assert lock_turn([held("b", STOPPED)], "c-2", STOPPED, turn["seen"], NOW + datetime.timedelta(seconds=26))["decision"] == "wait"


def test_a_stopped_attempt_that_renews_its_lock_is_alive_and_the_cluster_busy():
    seen = {"b": "2026-12-01T20:00:25.000000Z"}
    turn = lock_turn([held("b", STOPPED, "2026-12-01T20:00:50.000000Z")], "c-2", STOPPED, seen, NOW)
    assert turn["decision"] == "busy", turn
    assert "which renewed it while this worker waited" in turn["message"] and "is busy, not failed" in turn["message"]


def test_a_lock_another_run_holds_makes_the_cluster_busy_not_failed_and_is_never_waited_for():
    turn = lock_turn([held("a", STOPPED), held("b", "alice@laptop/1234")], "c-2", STOPPED, {}, NOW)
    assert turn["decision"] == "busy" and turn["wait_seconds"] == 0
    assert turn["message"].startswith("c-2 is busy, not failed: node group b is locked by another run, alice@laptop/1234")
    # no stopped attempt (a fresh start, or after a failure): any holder is another run
    assert lock_turn([held("a", STOPPED)], "c-2", None, {}, NOW)["decision"] == "busy"


def test_a_lock_that_could_not_be_read_is_a_failure_naming_it():
    turn = lock_turn([{"item": {"name": "a"}, "failed": False, "msg": "Unauthorized: get Lease kube-system/nodeops-rollout-a"}],
                     "c-2", STOPPED, {}, NOW)
    assert turn == {"decision": "failed", "seen": {}, "wait_seconds": 0,
                    "message": "c-2: the lock of node group a could not be read: Unauthorized: get Lease kube-system/nodeops-rollout-a"}


def test_reads_that_are_not_a_list_are_refused_naming_the_input():
    with pytest.raises(LockError, match=r"reads: \{\} is not allowed; use the results of rollout_lock"):
        lock_turn({}, "c-2")
