"""A killed run's lock frees itself within its short duration, and a live run keeps its lock whatever it waits for:

- a step that waits longer than the lock's duration (a bake time) keeps the lock, so a second run started meanwhile is
  refused, and so is the unlock playbook named with the live run's holder: its process runs on this machine;
- the unlock playbook releases the lock of a run that was killed at once, within the lock's duration: the run's process,
  recorded in its Lease, has ended on this machine; nothing else is changed.

test_kill_random.py kills runs at random points and reruns them one lock duration later, with no Lease deleted.
"""

import datetime
import re

from kubernetes import client

from sandbox.drive.convergence import problems, sizes
from sandbox.drive.handle import wait_until
from sandbox.drive.kill import LEASE, ROLE_VARS, kill_tree, run_until_held
from tests.integration.modules.conftest import assert_safe

NAMESPACE = "kube-system"
LOCK = 20


def lease_of(sandbox):
    return client.CoordinationV1Api(sandbox.kube("test-observer")).read_namespaced_lease(LEASE, NAMESPACE)


def held(sandbox):
    try:
        lease = lease_of(sandbox)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return lease if lease.spec.holder_identity else None


def unlock(sandbox, tmp_path, holder):
    return sandbox.run_role_playbook(tmp_path, playbook="unlock.yml", extra=[
        "rolling_update_unlock_holder=%s" % holder, "rolling_update_lock_duration=%ds" % LOCK])


def recap_changed(output):
    """The changed= count of the play recap's one host."""
    return int(re.search(r"changed=(\d+)", output.rsplit("PLAY RECAP", 1)[1]).group(1))


def others(events, since):
    """The mutating requests since ``since`` that are not writes of the Lease."""
    return [e for e in events if e["t"] > since and e.get("resource") != "leases"]


def test_a_step_that_waits_longer_than_the_lock_keeps_it_and_a_second_run_is_refused(sandbox, tmp_path):
    original = sizes(sandbox)
    extra = list(ROLE_VARS) + ["rolling_update_lock_duration=%ds" % LOCK, "rolling_update_bake_time=45s"]
    first = sandbox.start_role_playbook(tmp_path, str(tmp_path / "first.log"), extra=extra)
    try:
        # the bake keeps each step's rollout_step waiting for 45 s, over twice the lock's 20 s
        wait_until("the first run to hold the lock past its duration",
                   lambda: held(sandbox) is not None and
                   (datetime.datetime.now(datetime.timezone.utc) - held(sandbox).spec.acquire_time).total_seconds() > LOCK + 10,
                   timeout=300, interval=1)
        lease = held(sandbox)
        assert lease.spec.lease_duration_seconds == LOCK
        assert (datetime.datetime.now(datetime.timezone.utc) - lease.spec.renew_time).total_seconds() < LOCK, \
            "the lock lapsed while the first run waited: %s" % lease.spec
        holder = lease.spec.holder_identity

        # the first run changes the group meanwhile: what the second run and the unlock did is in their recaps
        (tmp_path / "second").mkdir()
        rc, out = sandbox.run_role_playbook(tmp_path / "second", extra=extra)
        assert rc != 0 and "is locked by another run" in out and holder in out, out[-3000:]
        assert "nodeops.rollout.unlock" in out and "kubectl" not in out, out[-3000:]
        assert recap_changed(out) == 0, out[-3000:]
        rc, out = unlock(sandbox, tmp_path, holder)
        assert rc != 0 and "that run is alive" in out and "runs on this machine" in out, out[-3000:]
        assert recap_changed(out) == 0, out[-3000:]
        assert held(sandbox).spec.holder_identity == holder, "the unlock released a live run's lock"
        assert first.poll() is None, "the first run ended before the second was refused: the test proved nothing"

        assert first.wait(timeout=600) == 0, (tmp_path / "first.log").read_text()[-4000:]
    finally:
        if first.poll() is None:
            kill_tree(first)
    assert problems(sandbox, original, 2) == []
    assert held(sandbox) is None
    assert_safe(sandbox.report())


def test_the_unlock_playbook_releases_a_killed_run_s_lock_at_once_and_changes_nothing_else(sandbox, tmp_path):
    original = sizes(sandbox)
    # a lock longer than the whole test: released sooner, or not at all
    extra = ["rolling_update_lock_duration=30m"]
    hold = {"match": {"api": "k8s", "verb": "evict", "resource": "pods/eviction", "module": "node_drain"}, "nth": 2}
    assert run_until_held(sandbox, tmp_path, hold, extra), "the run ended before its drain"
    lease = held(sandbox)
    holder = lease.spec.holder_identity
    assert "nodeops.rollout/holder-process" in (lease.metadata.annotations or {}), lease.metadata

    since = sandbox.now() + 0.01
    # at once, the killed run's lock still valid for most of its 30 minutes: its process is gone from this machine
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="unlock.yml", extra=["rolling_update_unlock_holder=%s" % holder])
    assert rc == 0, out[-3000:]
    assert "on this machine" in out and "has ended" in out, out[-3000:]
    assert held(sandbox) is None
    assert others(sandbox.mutating_requests(since=since), since) == []

    rc, out = sandbox.run_role_playbook(tmp_path, extra=list(ROLE_VARS) + extra)
    assert rc == 0, out[-4000:]
    assert problems(sandbox, original, 2) == []
