# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The lock's I/O: writes carry the resourceVersion read, a lost race is decided again, check mode writes nothing,
and rollout_lock as Ansible runs it."""

from __future__ import annotations

import copy
import datetime
import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import lease_lock
from ansible_collections.nodeops.rollout.plugins.module_utils.runners import locks
from ansible_collections.nodeops.rollout.plugins.modules import rollout_lock
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fake_kube import api_error

NOW = datetime.datetime(2026, 11, 23, 10, 0, 0, tzinfo=datetime.timezone.utc)
US = "awx-job-42@ee/0a1b"
OTHER = "alice@laptop/9f8e"
NAME = "nodeops-rollout-workers"


class FakeLeases:
    """get/create/replace of leases with resourceVersion checks; ``before_write`` lets a rival write first."""

    def __init__(self):
        self.leases = {}
        self.rv = 10
        self.writes = []
        self.before_write = None
        self.sleep = lambda _seconds: None

    def put(self, namespace, name, spec, annotations=None):
        self.rv += 1
        metadata = {"name": name, "namespace": namespace, "resourceVersion": str(self.rv)}
        if annotations is not None:
            metadata["annotations"] = dict(annotations)
        self.leases[(namespace, name)] = {"metadata": metadata, "spec": spec}

    def get_lease(self, namespace, name):
        if (namespace, name) not in self.leases:
            raise api_error(404, 'leases.coordination.k8s.io "%s" not found' % name, "NotFound")
        return copy.deepcopy(self.leases[(namespace, name)])

    def _rival(self):
        if self.before_write is not None:
            rival, self.before_write = self.before_write, None
            rival(self)

    def create_lease(self, namespace, body):
        self.writes.append(("create", body))
        self._rival()
        name = body["metadata"]["name"]
        if (namespace, name) in self.leases:
            raise api_error(409, 'leases.coordination.k8s.io "%s" already exists' % name, "AlreadyExists")
        self.put(namespace, name, body["spec"], body["metadata"].get("annotations"))
        return copy.deepcopy(self.leases[(namespace, name)])

    def replace_lease(self, namespace, name, body):
        self.writes.append(("replace", body))
        self._rival()
        if body["metadata"]["resourceVersion"] != self.leases[(namespace, name)]["metadata"]["resourceVersion"]:
            raise api_error(409, "the object has been modified", "Conflict")
        self.put(namespace, name, body["spec"], body["metadata"].get("annotations"))
        return copy.deepcopy(self.leases[(namespace, name)])


def held_by(holder, minutes_ago=1, duration=600):
    renewed = lease_lock.micro_time(NOW - datetime.timedelta(minutes=minutes_ago))
    return {"holderIdentity": holder, "leaseDurationSeconds": duration, "acquireTime": renewed, "renewTime": renewed,
            "leaseTransitions": 0}


@pytest.fixture
def api():
    return FakeLeases()


def test_create_when_absent_labels_the_lease_and_names_the_group(api):
    result = locks.hold(api, "workers", "kube-system", US, 1800, now=lambda: NOW)
    assert (result["changed"], result["action"], result["previous_holder"]) == (True, "create", None)
    assert result["lease"]["holder"] == US and result["lease"]["expires_at"] == "2026-11-23T10:30:00.000000Z"
    body = api.writes[0][1]
    assert body["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "nodeops.rollout"}
    assert body["metadata"]["annotations"] == {"nodeops.rollout/node-group": "workers"}


def test_a_create_race_lost_is_decided_again_and_refused(api):
    api.before_write = lambda fake: fake.put("kube-system", NAME, held_by(OTHER, minutes_ago=0))
    with pytest.raises(locks.LockHeld, match="held by alice@laptop/9f8e"):
        locks.hold(api, "workers", "kube-system", US, 1800, now=lambda: NOW)
    assert [w[0] for w in api.writes] == ["create"]


def test_a_take_over_race_lost_is_decided_again_and_refused(api):
    api.put("kube-system", NAME, held_by(OTHER, minutes_ago=60))
    api.before_write = lambda fake: fake.put("kube-system", NAME, held_by("bob@ci/1", minutes_ago=0))
    with pytest.raises(locks.LockHeld, match="held by bob@ci/1"):
        locks.hold(api, "workers", "kube-system", US, 1800, now=lambda: NOW)
    assert api.writes[0][1]["metadata"]["resourceVersion"] == "11"   # the version read went with the write


def test_renew_keeps_acquire_time_and_fields_it_does_not_know(api):
    spec = dict(held_by(US, minutes_ago=5), preferredHolder="x", strategy="OldestEmulationVersion")
    api.put("kube-system", NAME, spec)
    result = locks.hold(api, "workers", "kube-system", US, 1800, now=lambda: NOW)
    assert (result["action"], result["was_expired"]) == ("renew", False)
    stored = api.leases[("kube-system", NAME)]["spec"]
    assert stored["acquireTime"] == spec["acquireTime"] and stored["renewTime"] == "2026-11-23T10:00:00.000000Z"
    assert stored["strategy"] == "OldestEmulationVersion"


def test_check_mode_reads_and_decides_but_writes_nothing(api):
    api.put("kube-system", NAME, held_by(OTHER, minutes_ago=60))
    result = locks.hold(api, "workers", "kube-system", US, 1800, check_mode=True, now=lambda: NOW)
    assert (result["action"], result["previous_holder"]) == ("take_over", OTHER)
    assert locks.release(api, "workers", "kube-system", OTHER, check_mode=True, now=lambda: NOW)["action"] == "release"
    assert api.writes == []


def test_release_then_a_release_of_a_lease_not_ours_changes_nothing(api):
    api.put("kube-system", NAME, held_by(US))
    result = locks.release(api, "workers", "kube-system", US, now=lambda: NOW)
    assert (result["changed"], result["action"], result["lease"]["holder"]) == (True, "release", "")
    api.put("kube-system", NAME, held_by(OTHER))
    result = locks.release(api, "workers", "kube-system", US, now=lambda: NOW)
    assert (result["changed"], result["action"], result["reason"]) == (False, "none", "held by " + OTHER)
    assert len(api.writes) == 1


def test_a_module_s_renewal_writes_only_when_no_other_module_renewed_and_never_takes_a_lock_back(api):
    # renewed a minute ago for 10 minutes: more than half is left, so nothing is written
    api.put("kube-system", NAME, held_by(US, minutes_ago=1))
    keep = locks.hold(api, "workers", "kube-system", US, 600, now=lambda: NOW, renew_only=True, fresh_for=300)
    assert (keep["action"], keep["changed"], keep["lease"]["expires_at"]) == ("keep", False, "2026-11-23T10:09:00.000000Z")
    assert api.writes == []
    # renewed 6 minutes ago: renewed now
    api.put("kube-system", NAME, held_by(US, minutes_ago=6))
    assert locks.hold(api, "workers", "kube-system", US, 600, now=lambda: NOW, renew_only=True, fresh_for=300)["action"] == "renew"
    # released, or gone: a module never takes the lock back
    api.put("kube-system", NAME, dict(held_by(US), holderIdentity=""))
    with pytest.raises(locks.LockGone, match="no longer held by %s" % US):
        locks.hold(api, "workers", "kube-system", US, 600, now=lambda: NOW, renew_only=True, fresh_for=300)
    # another run's now: refused
    api.put("kube-system", NAME, held_by(OTHER))
    with pytest.raises(locks.LockHeld):
        locks.hold(api, "workers", "kube-system", US, 600, now=lambda: NOW, renew_only=True, fresh_for=300)
    assert len(api.writes) == 1


def test_the_release_of_a_run_said_to_be_gone_waits_for_it_to_stop_renewing(api):
    api.put("kube-system", NAME, held_by(OTHER, minutes_ago=1))
    with pytest.raises(locks.LockAlive, match="which renewed it 60s ago .* that run is taken for alive"):
        locks.release(api, "workers", "kube-system", OTHER, now=lambda: NOW, quiet_for=120)
    assert api.writes == []
    api.put("kube-system", NAME, held_by(OTHER, minutes_ago=3))
    result = locks.release(api, "workers", "kube-system", OTHER, now=lambda: NOW, quiet_for=120)
    assert (result["action"], result["lease"]["holder"]) == ("release", "")


def _start_of(pid):
    with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
        return handle.read().rsplit(")", 1)[1].split()[19]


def _recorded(pid, start, machine=None):
    return {locks.PROCESS_ANNOTATION: json.dumps(dict(machine or locks.this_machine(), pid=pid, start=start))}


def test_a_lease_taken_records_the_run_s_process_and_a_release_takes_the_record_off(api):
    process = dict(locks.this_machine(), pid=4242, start="99")
    locks.hold(api, "workers", "kube-system", US, 600, now=lambda: NOW, process=process)
    annotations = api.leases[("kube-system", NAME)]["metadata"]["annotations"]
    assert json.loads(annotations[locks.PROCESS_ANNOTATION]) == process
    # a renewal keeps it; a release takes it off with the holder
    locks.hold(api, "workers", "kube-system", US, 600, now=lambda: NOW, process=dict(process, pid=1))
    assert json.loads(api.leases[("kube-system", NAME)]["metadata"]["annotations"][locks.PROCESS_ANNOTATION])["pid"] == 4242
    locks.release(api, "workers", "kube-system", US, now=lambda: NOW)
    assert locks.PROCESS_ANNOTATION not in api.leases[("kube-system", NAME)]["metadata"]["annotations"]


@pytest.mark.skipif(locks.this_machine()["boot_id"] is None, reason="no /proc: a holder's process cannot be looked at")
def test_the_release_of_a_run_killed_on_this_machine_is_done_at_once_and_of_one_still_running_refused(api):
    # renewed a minute ago: within what a live run leaves it unrenewed, yet its process is gone (a pid no process has)
    api.put("kube-system", NAME, held_by(OTHER, minutes_ago=1), _recorded(2 ** 22 + 7, "1"))
    result = locks.release(api, "workers", "kube-system", OTHER, now=lambda: NOW, quiet_for="renewals")
    assert (result["action"], result["lease"]["holder"]) == ("release", "")
    assert "its process %d on this machine" % (2 ** 22 + 7) in result["reason"] and "has ended" in result["reason"]
    # a pid reused by another process (its start time differs) is not the run's
    api.put("kube-system", NAME, held_by(OTHER, minutes_ago=1), _recorded(os.getpid(), "1"))
    assert locks.release(api, "workers", "kube-system", OTHER, now=lambda: NOW, quiet_for="renewals")["action"] == "release"
    # the process runs: refused, however long ago the lock was renewed
    api.put("kube-system", NAME, held_by(OTHER, minutes_ago=9), _recorded(os.getpid(), _start_of(os.getpid())))
    writes = len(api.writes)
    with pytest.raises(locks.LockAlive, match="whose process %d runs on this machine .*: that run is alive" % os.getpid()):
        locks.release(api, "workers", "kube-system", OTHER, now=lambda: NOW, quiet_for="renewals")
    assert len(api.writes) == writes


def test_the_release_of_a_run_of_another_machine_waits_for_its_renewals_to_stop(api):
    elsewhere = {"host": "awx-ee-other", "boot_id": "not-this-boot"}
    # a 600 s Lease: a live run renews it at least every 300 s + 120 s of margin
    api.put("kube-system", NAME, held_by(OTHER, minutes_ago=6), _recorded(os.getpid(), _start_of(os.getpid()) if
                                                                          os.path.exists("/proc/self/stat") else "1", elsewhere))
    with pytest.raises(locks.LockAlive, match="another machine \\(awx-ee-other\\).*at least every 7m"):
        locks.release(api, "workers", "kube-system", OTHER, now=lambda: NOW, quiet_for="renewals")
    api.put("kube-system", NAME, held_by(OTHER, minutes_ago=8), _recorded(1, "1", elsewhere))
    result = locks.release(api, "workers", "kube-system", OTHER, now=lambda: NOW, quiet_for="renewals")
    assert result["action"] == "release" and result["reason"].startswith("not renewed for 8m"), result


def test_endless_conflicts_give_up_naming_the_lease(api):
    api.put("kube-system", NAME, held_by(US))

    def always_conflict(_namespace, _name, body):
        api.writes.append(("replace", body))
        raise api_error(409, "the object has been modified", "Conflict")

    api.replace_lease = always_conflict
    with pytest.raises(locks.LockContended, match="kube-system/nodeops-rollout-workers of node group workers: 5 writes"):
        locks.hold(api, "workers", "kube-system", US, 1800, now=lambda: NOW)


# ---- the module -----------------------------------------------------------------------------------------------------
def run(args, capsys, api, monkeypatch, check=False):
    monkeypatch.setattr(rollout_lock, "k8s_client", lambda _module: "client")
    monkeypatch.setattr(locks, "KubeApi", lambda _client: api)
    args = dict(args)
    if check:
        args["_ansible_check_mode"] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            rollout_lock.main()
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_module_refuses_naming_the_holder_and_expiry(api, capsys, monkeypatch):
    api.put("kube-system", NAME, dict(held_by(OTHER), renewTime=lease_lock.micro_time(datetime.datetime.now(datetime.timezone.utc))))
    result = run({"name": "workers", "holder": US, "duration": ["15m", 60, "5m"]}, capsys, api, monkeypatch)
    assert result["failed"] and result["action"] == "refuse" and result["holder"] == OTHER
    assert result["msg"].startswith("node group workers is locked by another run: Lease kube-system/nodeops-rollout-workers "
                                    "is held by alice@laptop/9f8e")
    assert result["lease"]["expires_at"]
    assert api.writes == []


def test_module_sums_a_list_of_durations_and_refuses_a_bad_one(api, capsys, monkeypatch):
    result = run({"name": "workers", "holder": US, "duration": ["15m", 60, "1h"]}, capsys, api, monkeypatch)
    assert result["changed"] and result["lease"]["lease_duration_seconds"] == 15 * 60 + 60 + 3600
    result = run({"name": "workers", "holder": US, "duration": "soon"}, capsys, api, monkeypatch)
    assert result["failed"] and result["msg"].startswith("duration: 'soon' is not allowed")
    result = run({"name": "workers", "holder": " ", "state": "released"}, capsys, api, monkeypatch)
    assert result["failed"] and result["msg"].startswith("holder: ")


def test_module_check_mode_sends_no_write(api, capsys, monkeypatch):
    result = run({"name": "workers", "holder": US}, capsys, api, monkeypatch, check=True)
    assert (result["changed"], result["action"]) == (True, "create")
    assert api.writes == [] and api.leases == {}


def test_a_renewal_waits_without_a_request_while_the_lease_still_covers_what_is_asked(api, capsys, monkeypatch):
    taken = run({"name": "workers", "holder": US, "duration": "30m"}, capsys, api, monkeypatch)
    reads = []
    real_get = api.get_lease
    api.get_lease = lambda namespace, name: reads.append(name) or real_get(namespace, name)
    writes = len(api.writes)
    args = {"name": "workers", "holder": US, "duration": "30m", "held_until": taken["lease"]["expires_at"]}
    kept = run(dict(args, min_valid_for="25m"), capsys, api, monkeypatch)
    assert (kept["changed"], kept["action"]) == (False, "keep")
    assert kept["lease"]["expires_at"] == taken["lease"]["expires_at"] and kept["lease"]["holder"] == US
    assert reads == [] and len(api.writes) == writes
    # asked for more than is left: renewed, with a read and a write
    renewed = run(dict(args, min_valid_for="31m"), capsys, api, monkeypatch)
    assert renewed["action"] == "renew" and reads == [NAME] and len(api.writes) == writes + 1


@pytest.mark.parametrize("args, message", [
    ({"held_until": "2026-11-23T10:57:40Z"}, "held_until and min_valid_for: held_until is not allowed alone"),
    ({"min_valid_for": "10m"}, "held_until and min_valid_for: min_valid_for is not allowed alone"),
    ({"held_until": "tomorrow", "min_valid_for": "10m"}, "held_until: 'tomorrow' is not allowed; use the lease.expires_at"),
    ({"held_until": "2026-11-23T10:57:40Z", "min_valid_for": "soon"}, "min_valid_for: 'soon' is not allowed"),
    ({"held_until": "2026-11-23T10:57:40Z", "min_valid_for": "10m", "state": "released"},
     "held_until, min_valid_for: not allowed with state=released"),
])
def test_a_bad_renewal_window_is_named_before_any_request(api, capsys, monkeypatch, args, message):
    result = run(dict({"name": "workers", "holder": US}, **args), capsys, api, monkeypatch)
    assert result["failed"] and result["msg"].startswith(message)
    assert api.writes == []


def test_module_in_diff_mode_shows_the_lease_s_holder_before_and_after(api, capsys, monkeypatch):
    taken = run({"name": "workers", "holder": US, "duration": "15m", "_ansible_diff": True}, capsys, api, monkeypatch)
    assert taken["diff"]["before"] == {"holder": None}
    assert taken["diff"]["after"] == {"holder": US, "expires_at": taken["lease"]["expires_at"]}
    assert taken["diff"]["before_header"] == "Lease kube-system/nodeops-rollout-workers of node group workers"
    released = run({"name": "workers", "holder": US, "state": "released", "_ansible_diff": True}, capsys, api, monkeypatch)
    assert released["diff"]["before"] == {"holder": US} and released["diff"]["after"]["holder"] in (None, "")
    # without --diff, no diff
    assert "diff" not in run({"name": "workers", "holder": US, "duration": "15m"}, capsys, api, monkeypatch)
