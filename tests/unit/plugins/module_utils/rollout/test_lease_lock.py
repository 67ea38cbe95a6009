# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The lock's decisions: take, renew, take over or refuse a node group's Lease, and release only our own."""

from __future__ import annotations

import datetime
import re

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import lease_lock

NOW = datetime.datetime(2026, 11, 23, 10, 0, 0, tzinfo=datetime.timezone.utc)
US = "awx-job-42@awx-ee-1/0a1b2c3d"
OTHER = "alice@laptop/9f8e7d6c"


def at(**delta):
    return lease_lock.micro_time(NOW + datetime.timedelta(**delta))


def lease(holder=OTHER, renewed=None, duration=600, acquired=None, transitions=0, rv="7", **spec):
    body = {"holderIdentity": holder, "leaseDurationSeconds": duration, "renewTime": renewed or at(seconds=-60),
            "acquireTime": acquired or at(minutes=-30), "leaseTransitions": transitions}
    body.update(spec)
    return {"metadata": {"name": "nodeops-rollout-workers", "namespace": "kube-system", "resourceVersion": rv},
            "spec": {k: v for k, v in body.items() if v is not lease_lock}}


# ---- acquire: the table -------------------------------------------------------------------------------------------
CASES = [
    # (what, lease, action, transitions after, acquireTime kept)
    ("absent", None, "create", 0, False),
    ("released (no holder)", lease(holder="", duration=1, renewed=at(seconds=-5)), "acquire", 1, False),
    ("holder null", lease(holder=None), "acquire", 1, False),
    ("held by us, fresh", lease(holder=US, transitions=3), "renew", 3, True),
    ("held by us, already expired", lease(holder=US, renewed=at(hours=-2), transitions=3), "renew", 3, True),
    ("held by another, unexpired", lease(), "refuse", None, None),
    ("held by another, expires in a second", lease(renewed=at(seconds=-599)), "refuse", None, None),
    ("held by another, expired a second ago", lease(renewed=at(seconds=-601), transitions=2), "take_over", 3, False),
    ("held by another, expired long ago", lease(renewed=at(days=-3)), "take_over", 1, False),
    ("held by another, renewTime missing", lease(renewed=lease_lock, acquireTime=at(hours=-9)), "refuse", None, None),
    ("held by another, renewTime malformed", lease(renewed="yesterday"), "refuse", None, None),
    ("held by another, duration missing", lease(duration=None), "refuse", None, None),
    ("held by another, duration zero", lease(duration=0), "refuse", None, None),
    ("held by another, duration a string", lease(duration="600"), "refuse", None, None),
    ("no holder, times malformed", lease(holder="", renewed="garbage", acquired="garbage"), "acquire", 1, False),
    ("held by us, times malformed", lease(holder=US, renewed="garbage", acquired="garbage"), "renew", 0, False),
]


@pytest.mark.parametrize("what, current, action, transitions, kept", CASES, ids=[c[0] for c in CASES])
def test_acquire_decision(what, current, action, transitions, kept):
    decision = lease_lock.decide_acquire(current, US, NOW, 1800)
    assert decision["action"] == action, what
    if action == "refuse":
        assert decision["spec"] is None
        return
    spec = decision["spec"]
    assert spec["holderIdentity"] == US and spec["leaseDurationSeconds"] == 1800
    assert spec["renewTime"] == "2026-11-23T10:00:00.000000Z"
    assert spec["leaseTransitions"] == transitions
    assert spec["acquireTime"] == (current["spec"]["acquireTime"] if kept else spec["renewTime"])


def test_expiry_is_renew_time_plus_duration_and_the_boundary_itself_still_holds():
    exactly = lease(renewed=at(seconds=-600))
    assert lease_lock.decide_acquire(exactly, US, NOW, 60)["action"] == "refuse"
    state = lease_lock.lease_state(exactly, NOW)
    assert state["expires"] == NOW and state["expired"] is False
    offset = lease(renewed="2026-11-23T11:59:00.000000+02:00")    # 09:59:00Z, ten minutes
    assert lease_lock.lease_state(offset, NOW)["expires"] == NOW + datetime.timedelta(minutes=9)


def test_a_refusal_names_the_holder_since_when_until_when_and_what_to_do():
    current = lease(renewed=at(minutes=-1), acquired=at(minutes=-20))
    decision = lease_lock.decide_acquire(current, US, NOW, 1800)
    message = lease_lock.refusal_message("workers", "kube-system", "nodeops-rollout-workers", decision["state"], NOW)
    assert message == ("node group workers is locked by another run: Lease kube-system/nodeops-rollout-workers "
                       "is held by alice@laptop/9f8e7d6c since 2026-11-23T09:40:00Z, renewed 2026-11-23T09:59:00Z. "
                       "Nothing was changed. A run renews its lock while it works: if that run is alive, wait "
                       "for it to end. If it is gone, its lock frees itself at 2026-11-23T10:09:00Z (in 9m), and "
                       "the next run takes the group over. To release it sooner (from the machine it ran on at once, as "
                       "soon as its process has ended; from elsewhere once it has stopped renewing it): "
                       "ansible-playbook nodeops.rollout.unlock "
                       "-i <inventory> -e rolling_update_unlock_holder='alice@laptop/9f8e7d6c'")
    assert "kubectl" not in message


def test_the_release_of_a_run_said_to_be_gone_is_refused_while_it_renews():
    # renewed a minute ago, within the two minutes a live run renews in: refused, saying when it frees itself
    current = lease(renewed=at(minutes=-1), acquired=at(minutes=-20))
    decision = lease_lock.decide_release(current, "alice@laptop/9f8e7d6c", NOW, quiet_for=120)
    assert decision["action"] == "refuse" and decision["spec"] is None
    message = lease_lock.release_refusal("workers", "kube-system", "nodeops-rollout-workers", decision["state"], 120, NOW)
    assert message == ("node group workers: Lease kube-system/nodeops-rollout-workers is held by alice@laptop/9f8e7d6c, "
                       "which renewed it 60s ago (2026-11-23T09:59:00Z); the Lease records no process of it that this "
                       "machine could look at, so whether it is alive is told by its renewals: a live run renews its lock "
                       "at least every 2m, and this one did within that: that run is taken for alive. Nothing was "
                       "changed. If it is gone, run the unlock again from 2026-11-23T10:01:00Z (in 60s), once it has "
                       "stopped renewing, or its lock frees itself at 2026-11-23T10:09:00Z (in 9m).")
    # silent for longer than that: released, though the Lease's own duration has not passed yet
    quiet = lease(renewed=at(minutes=-3), acquired=at(minutes=-20))
    decision = lease_lock.decide_release(quiet, "alice@laptop/9f8e7d6c", NOW, quiet_for=120)
    assert decision["action"] == "release" and decision["spec"]["holderIdentity"] == ""
    # another holder's Lease is never released, however quiet
    assert lease_lock.decide_release(quiet, "bob@ci/1", NOW, quiet_for=120)["action"] == "none"


def test_a_live_holder_s_renewals_are_apart_at_most_half_the_duration_and_a_margin():
    assert [lease_lock.renewal_gap(seconds) for seconds in (15, 20, 120, 600, 3600)] == [15, 20, 84, 420, 2520]


def test_the_holder_s_process_on_this_machine_decides_before_its_renewals():
    fresh = lease(renewed=at(seconds=-5))
    here_dead = {"here": True, "alive": False, "pid": 4242, "host": "ctl-1"}
    decision = lease_lock.decide_release(fresh, OTHER, NOW, "renewals", here_dead)
    assert decision["action"] == "release" and decision["reason"] == "its process 4242 on this machine (ctl-1) has ended"
    stale = lease(renewed=at(minutes=-9))
    here_alive = dict(here_dead, alive=True)
    decision = lease_lock.decide_release(stale, OTHER, NOW, "renewals", here_alive)
    assert decision["action"] == "refuse"
    message = lease_lock.release_refusal("workers", "kube-system", "nodeops-rollout-workers", decision["state"], "renewals",
                                         NOW, here_alive)
    assert message == ("node group workers: Lease kube-system/nodeops-rollout-workers is held by %s, whose process 4242 "
                       "runs on this machine (ctl-1): that run is alive. Nothing was changed. Stop that run (it releases "
                       "its lock as it ends), or let it finish." % OTHER)
    # elsewhere: the renewals of the Lease's own duration (600 s: at least every 420 s)
    elsewhere = {"here": False, "alive": None, "pid": 4242, "host": "ctl-2"}
    assert lease_lock.decide_release(lease(renewed=at(minutes=-6)), OTHER, NOW, "renewals", elsewhere)["action"] == "refuse"
    gone = lease_lock.decide_release(stale, OTHER, NOW, "renewals", elsewhere)
    assert gone["action"] == "release" and gone["reason"] == "not renewed for 9m, longer than a live run leaves it (7m)"
    # without a quiet_for (the run's own release) nothing of this is asked
    assert lease_lock.decide_release(fresh, OTHER, NOW, None, here_alive)["action"] == "release"


def test_a_refusal_of_an_unreadable_lease_says_what_cannot_be_read():
    decision = lease_lock.decide_acquire(lease(duration=None), US, NOW, 1800)
    message = lease_lock.refusal_message("workers", "kube-system", "nodeops-rollout-workers", decision["state"], NOW)
    assert "held by alice@laptop/9f8e7d6c; its spec.leaseDurationSeconds None is not a number of seconds, so nobody can " \
           "tell when it expires" in message


def test_acquire_refuses_a_bad_holder_or_duration():
    for holder in ("", "  ", None, 42):
        with pytest.raises(lease_lock.LockError, match="^holder: "):
            lease_lock.decide_acquire(None, holder, NOW, 60)
    for duration in (0, -1, True, 1.5, "60", 2 ** 31):
        with pytest.raises(lease_lock.LockError, match="^duration: "):
            lease_lock.decide_acquire(None, US, NOW, duration)


# ---- release ------------------------------------------------------------------------------------------------------
def test_release_clears_only_our_own_hold_as_release_on_cancel_does():
    decision = lease_lock.decide_release(lease(holder=US, transitions=4), US, NOW)
    assert decision["action"] == "release"
    assert decision["spec"] == {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": "2026-11-23T10:00:00.000000Z",
                                "renewTime": "2026-11-23T10:00:00.000000Z", "leaseTransitions": 4}
    # after a release the next run acquires at once
    released = lease(holder="", duration=1, renewed=at(), acquired=at(), transitions=4)
    assert lease_lock.decide_acquire(released, OTHER, NOW, 60)["action"] == "acquire"


@pytest.mark.parametrize("current, reason", [(None, "no lease"), (lease(holder=""), "not held"),
                                             (lease(holder=OTHER), "held by " + OTHER)])
def test_release_leaves_a_missing_free_or_foreign_lease_alone(current, reason):
    decision = lease_lock.decide_release(current, US, NOW)
    assert (decision["action"], decision["spec"], decision["reason"]) == ("none", None, reason)


# ---- names and times ----------------------------------------------------------------------------------------------
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@pytest.mark.parametrize("group, expected", [
    ("workers", "nodeops-rollout-workers"),
    ("eks-prod-eu1-workers-a", "nodeops-rollout-eks-prod-eu1-workers-a"),
    ("Workers_A", "nodeops-rollout-workers-a-%s" % __import__("hashlib").sha256(b"Workers_A").hexdigest()[:8]),
    ("eks.nodes/gpu", None),
    ("a" * 200, None),
    ("___", None),
])
def test_lease_names_are_dns_labels_and_distinct_for_distinct_groups(group, expected):
    name = lease_lock.lease_name(group)
    if expected:
        assert name == expected
    assert len(name) <= 63 and _DNS_LABEL.match(name), name
    assert name.startswith("nodeops-rollout-")


def test_groups_differing_only_in_case_or_punctuation_get_different_leases():
    names = {lease_lock.lease_name(group) for group in ("workers-a", "Workers-A", "workers_a", "workers.a")}
    assert len(names) == 4
    assert lease_lock.lease_name("b" * 100) != lease_lock.lease_name("b" * 101)
    with pytest.raises(lease_lock.LockError, match="^name: "):
        lease_lock.lease_name("")


def test_micro_time_always_has_six_fractional_digits_and_parse_time_reads_rfc3339():
    assert lease_lock.micro_time(NOW) == "2026-11-23T10:00:00.000000Z"
    east = datetime.timezone(datetime.timedelta(hours=2))
    assert lease_lock.micro_time(datetime.datetime(2026, 11, 23, 12, 0, 0, 5, tzinfo=east)) == "2026-11-23T10:00:00.000005Z"
    assert lease_lock.parse_time("2026-11-23T10:00:00.123456Z") == NOW.replace(microsecond=123456)
    assert lease_lock.parse_time("2026-11-23T10:00:00Z") == NOW
    assert lease_lock.parse_time("2026-11-23T12:00:00.5+02:00") == NOW.replace(microsecond=500000)
    for bad in ("", "now", "2026-13-01T00:00:00Z", "2026-11-23 10:00:00", None, 1700000000):
        assert lease_lock.parse_time(bad) is None
