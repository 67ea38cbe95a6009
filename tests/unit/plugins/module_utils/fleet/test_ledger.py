# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fleet's ledger: a plan pinned once every worker joined, waves in order, the concurrency cap, soak, gates, the
failure budget that stops every worker, and the next run that retries with the pinned targets."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError
from ansible_collections.nodeops.rollout.plugins.module_utils.fleet import ledger
from ansible_collections.nodeops.rollout.plugins.module_utils.fleet.waves import checked_budget, checked_waves, wave_of

T0 = datetime.datetime(2026, 11, 29, 8, 0, 0, tzinfo=datetime.timezone.utc)
WAVES = [{"name": "canary", "clusters": ["canary"]},
         {"name": "early", "clusters": ["early"], "max_concurrency": "50%", "soak": "10m"},
         {"name": "rest", "clusters": ["c-*"], "max_concurrency": 2}]
HOSTS = {"c-1": ["canary"], "c-2": ["early"], "c-3": ["early"], "c-4": [], "c-5": [], "c-6": []}
GATE_TIMEOUT = 3600


def at(minutes):
    return T0 + datetime.timedelta(minutes=minutes)


def settings(workers=3, budget=None, waves=None):
    return {"waves": checked_waves(waves or WAVES), "max_failed_clusters": checked_budget(budget), "workers": workers}


def slices(count):
    """hosts[k::N] as AWX job slicing makes them."""
    names = sorted(HOSTS)
    return [names[k::count] for k in range(count)]


def pinned(workers=3, budget=None, waves=None):
    conf = settings(workers, budget, waves)
    doc = ledger.new("fleet-1", conf, T0)
    for hosts in slices(workers):
        for host in hosts:
            ledger.join(doc, conf, host, wave_of(host, HOSTS[host], conf["waves"]), "+".join(hosts), hosts,
                        [{"name": "ng", "image_id": "ami-new"}], [{"name": "ng", "image_id": "ami-old", "version": 1}], T0)
    return doc


def test_the_plan_is_pinned_only_once_every_worker_has_joined_every_cluster():
    conf = settings()
    doc = ledger.new("fleet-1", conf, T0)
    joined = 0
    for hosts in slices(3):
        for host in hosts:
            assert doc["pinned_at"] is None
            ledger.join(doc, conf, host, wave_of(host, HOSTS[host], conf["waves"]), "+".join(hosts), hosts, [], [], T0)
            joined += 1
    assert joined == 6 and doc["pinned_at"]
    assert [(wave["name"], wave["size"], wave["max_concurrency"]) for wave in doc["waves"]] == [
        ("canary", 1, 1), ("early", 2, 1), ("rest", 3, 2)]
    # a cluster that joins later is not in the plan
    ledger.join(doc, conf, "c-7", 2, "c-7", ["c-7"], [], [], at(1))
    assert "c-7" not in doc["clusters"]
    assert ledger.claim(doc, "c-7", "run-1", at(1), GATE_TIMEOUT)[0] == ledger.SKIP


def test_a_worker_with_other_settings_is_refused_naming_them():
    doc = ledger.new("fleet-1", settings(), T0)
    with pytest.raises(PlanError, match="fleet_waves, fleet_max_failed_clusters and fleet_workers differ"):
        ledger.join(doc, settings(workers=2), "c-1", 0, "c-1", ["c-1"], [], [], T0)


def test_waves_open_in_order_after_the_soak_and_hold_the_concurrency_cap():
    doc = pinned()
    run = "run-1"
    assert ledger.claim(doc, "c-2", run, at(0), GATE_TIMEOUT) == (ledger.WAIT, "wave canary is rolling: c-1")
    assert ledger.claim(doc, "c-1", run, at(0), GATE_TIMEOUT) == (ledger.START, None)
    ledger.finish(doc, "c-1", run, "succeeded", None, [], None, at(5))
    # no soak after the canary's wave
    assert ledger.claim(doc, "c-2", run, at(15), GATE_TIMEOUT) == (ledger.START, None)
    # 50% of two clusters is one at a time
    decision, why = ledger.claim(doc, "c-3", run, at(15), GATE_TIMEOUT)
    assert decision == ledger.WAIT and why == "wave early rolls 1 cluster at once: c-2"
    ledger.finish(doc, "c-2", run, "succeeded", None, [], None, at(20))
    assert ledger.claim(doc, "c-3", run, at(20), GATE_TIMEOUT)[0] == ledger.START
    assert ledger.claim(doc, "c-4", run, at(21), GATE_TIMEOUT)[0] == ledger.WAIT
    ledger.finish(doc, "c-3", run, "succeeded", None, [], None, at(25))
    # the wave 'early' soaks 10 minutes after c-3 ended
    decision, why = ledger.claim(doc, "c-4", run, at(30), GATE_TIMEOUT)
    assert decision == ledger.WAIT and why == "wave early soaks for 10m 00s after its last cluster ended"
    assert [ledger.claim(doc, name, run, at(36), GATE_TIMEOUT)[0] for name in ("c-4", "c-5", "c-6")] == [
        ledger.START, ledger.START, ledger.WAIT]
    assert doc["opened"] == {"0": "2026-11-29T08:00:00.000Z", "1": "2026-11-29T08:15:00.000Z", "2": "2026-11-29T08:36:00.000Z"}


def test_a_failure_beyond_the_budget_stops_every_worker_and_the_next_run_retries_it():
    doc = pinned()
    run = "run-1"
    ledger.claim(doc, "c-1", run, at(0), GATE_TIMEOUT)
    ledger.finish(doc, "c-1", run, "succeeded", None, [], None, at(1))
    ledger.claim(doc, "c-2", run, at(12), GATE_TIMEOUT)
    ledger.finish(doc, "c-2", run, "failed", "ng: a PodDisruptionBudget allows no eviction", [], None, at(13))
    assert doc["run"]["stopped"]["cause"] == "the failure budget of wave early is spent: c-2 failed (0 allowed)"
    assert ledger.claim(doc, "c-3", run, at(14), GATE_TIMEOUT) == (
        ledger.SKIP, "not started: the failure budget of wave early is spent: c-2 failed (0 allowed)")
    assert ledger.claim(doc, "c-5", run, at(60), GATE_TIMEOUT)[0] == ledger.SKIP
    assert ledger.summary(doc)["counts"] == {"succeeded": 1, "failed": 1, "not started": 2, "waiting": 2}
    # the next run: c-1 is done, c-2 retried first, the rest in order
    run = "run-2"
    assert ledger.claim(doc, "c-1", run, at(70), GATE_TIMEOUT)[0] == ledger.SKIP
    assert ledger.claim(doc, "c-3", run, at(70), GATE_TIMEOUT)[0] == ledger.START
    assert ledger.claim(doc, "c-2", run, at(70), GATE_TIMEOUT)[0] == ledger.WAIT
    ledger.finish(doc, "c-3", run, "succeeded", None, [], None, at(71))
    assert ledger.claim(doc, "c-2", run, at(71), GATE_TIMEOUT)[0] == ledger.START
    assert doc["clusters"]["c-2"]["attempts"] == 2
    # a worker of the old run is turned away
    assert ledger.claim(doc, "c-4", "run-1", at(72), GATE_TIMEOUT) == (ledger.SKIP, "run run-2 of this fleet has started since")
    assert [(run["id"], run["stopped"]["cause"][:31]) for run in doc["runs"]] == [("run-1", "the failure budget of wave earl")]


def test_the_runs_budget_counts_across_waves():
    doc = pinned(budget=1, waves=[dict(wave, max_failed_clusters=5) for wave in WAVES])
    run = "run-1"
    ledger.claim(doc, "c-1", run, at(0), GATE_TIMEOUT)
    ledger.finish(doc, "c-1", run, "failed", "x", [], None, at(1))
    assert doc["run"]["stopped"] is None
    ledger.claim(doc, "c-2", run, at(12), GATE_TIMEOUT)
    ledger.finish(doc, "c-2", run, "failed", "y", [], None, at(13))
    assert doc["run"]["stopped"]["cause"] == "the fleet's failure budget is spent: c-1, c-2 failed (1 allowed)"


def test_a_gate_is_run_once_by_the_first_worker_to_find_the_wave_ended_and_fails_closed():
    waves = [dict(WAVES[0], gate="/gates/canary.yml"), WAVES[1], WAVES[2]]
    doc = pinned(waves=waves)
    run = "run-1"
    ledger.claim(doc, "c-1", run, at(0), GATE_TIMEOUT)
    ledger.finish(doc, "c-1", run, "succeeded", None, [], None, at(1))
    assert ledger.claim(doc, "c-2", run, at(2), GATE_TIMEOUT)[0] == ledger.GATE
    assert ledger.claim(doc, "c-3", run, at(2), GATE_TIMEOUT) == (ledger.WAIT, "the gate after wave canary is running (on c-2)")
    ledger.record_gate(doc, 0, run, True, "probes green", at(3))
    assert ledger.claim(doc, "c-2", run, at(3), GATE_TIMEOUT)[0] == ledger.START
    # a gate that never answers fails the run once its time is up
    doc = pinned(waves=waves)
    ledger.claim(doc, "c-1", run, at(0), GATE_TIMEOUT)
    ledger.finish(doc, "c-1", run, "succeeded", None, [], None, at(1))
    assert ledger.claim(doc, "c-2", run, at(2), GATE_TIMEOUT)[0] == ledger.GATE
    assert ledger.claim(doc, "c-3", run, at(2 + 61), GATE_TIMEOUT) == (
        ledger.SKIP, "not started: the gate after wave canary failed: no answer within 1h 00m")


def test_a_paused_rollout_is_pending_not_a_failure():
    result = {"node_groups": [{"name": "ng", "status": "paused", "reason": "window closed", "target": {"image_id": "ami-n", "version": 4}}]}
    assert ledger.outcome_of(result) == ("pending", "ng: window closed", [{"name": "ng", "image_id": "ami-n", "version": 4}])
    assert ledger.outcome_of({}, "lock held by alice")[0:2] == ("failed", "lock held by alice")
    assert ledger.outcome_of({"node_groups": [{"name": "ng", "status": "replaced", "target": {}}]})[0] == "succeeded"


def test_a_cluster_whose_target_did_not_resolve_is_left_out_and_holds_no_one_back():
    conf = settings(workers=1)
    doc = ledger.new("fleet-1", conf, T0)
    ledger.join(doc, conf, "c-1", 0, "w", ["c-1", "c-2"], [], [], T0, unresolved="ng: SSM parameter /x not found")
    ledger.join(doc, conf, "c-2", 1, "w", ["c-1", "c-2"], [], [], T0)
    assert doc["pinned_at"]
    assert ledger.claim(doc, "c-1", "run-1", at(0), GATE_TIMEOUT) == (
        ledger.SKIP, "left out of the plan, its target did not resolve: ng: SSM parameter /x not found")
    assert ledger.claim(doc, "c-2", "run-1", at(0), GATE_TIMEOUT) == (ledger.START, None)


def test_a_relaunched_worker_starts_its_cluster_again_knowing_the_stopped_attempts_lock_holder():
    doc = pinned()
    run = "run-1"
    assert ledger.claim(doc, "c-1", run, at(0), GATE_TIMEOUT, holder="awx-job-7@node-1/aaaa") == (ledger.START, None)
    entry = doc["clusters"]["c-1"]
    assert (entry["holder"], entry["stopped_holder"]) == ("awx-job-7@node-1/aaaa", None)
    # its worker was killed while c-1 rolled; the relaunch of the same run starts it again, at once
    assert ledger.claim(doc, "c-1", run, at(5), GATE_TIMEOUT, holder="awx-job-7@node-2/bbbb") == (ledger.START, None)
    assert (entry["holder"], entry["stopped_holder"], entry["attempts"]) == ("awx-job-7@node-2/bbbb", "awx-job-7@node-1/aaaa", 2)
    # a new run's start is no resume: nothing of an earlier run's attempt is waited for
    ledger.finish(doc, "c-1", run, "failed", "x", [], None, at(6))
    assert ledger.claim(doc, "c-1", "run-2", at(7), GATE_TIMEOUT, holder="h3") == (ledger.START, None)
    assert entry["stopped_holder"] is None


def test_a_busy_cluster_ends_its_part_in_the_run_without_spending_the_budget():
    doc = pinned()
    run = "run-1"
    ledger.claim(doc, "c-1", run, at(0), GATE_TIMEOUT)
    ledger.finish(doc, "c-1", run, "succeeded", None, [], None, at(1))
    ledger.claim(doc, "c-2", run, at(12), GATE_TIMEOUT)
    outcome, reason, after = ledger.outcome_of({}, "the rollout failed", busy="c-2 is busy, not failed: node group ng is locked by another run")
    assert (outcome, after) == ("busy", []) and reason.startswith("c-2 is busy")
    ledger.finish(doc, "c-2", run, outcome, reason, after, None, at(13))
    # no failure: the run goes on, c-3 takes the wave's other place, and the next wave opens once c-3 ended
    assert doc["run"]["stopped"] is None and ledger.spent(doc) is None
    assert ledger.claim(doc, "c-2", run, at(14), GATE_TIMEOUT) == (ledger.SKIP, reason)
    assert ledger.claim(doc, "c-3", run, at(14), GATE_TIMEOUT)[0] == ledger.START
    ledger.finish(doc, "c-3", run, "succeeded", None, [], None, at(15))
    assert ledger.claim(doc, "c-4", run, at(26), GATE_TIMEOUT)[0] == ledger.START
    assert ledger.summary(doc)["counts"]["busy"] == 1
    # the next run takes it up
    assert ledger.claim(doc, "c-2", "run-2", at(40), GATE_TIMEOUT)[0] == ledger.START


def test_an_outcome_outside_the_known_ones_is_refused_naming_them():
    doc = pinned()
    ledger.claim(doc, "c-1", "run-1", at(0), GATE_TIMEOUT)
    with pytest.raises(PlanError, match=r"outcome: 'locked' is not allowed; use succeeded, failed, pending, busy"):
        ledger.finish(doc, "c-1", "run-1", "locked", None, [], None, at(1))
