"""Kill anywhere, at random: the whole ansible-playbook process tree is SIGKILLed before the k-th request of the
collection (k drawn, seeded, from a clean run's request count; the trial here is killed twice, its rerun killed again),
and the rerun starts once the dead run's lock has freed itself, one lock duration after its last renewal, with no Lease
deleted by anyone. One trial keeps the suite's time; bench/kill_rerun.py runs 20 such trials, every third killed twice."""

import random

import pytest

from sandbox.drive.convergence import record
from sandbox.drive.kill import kill_and_rerun, random_point

LOCK = 15
# the collection's request count in a clean 3-node rollout with sandbox/drive/kill.py's ROLE_VARS (bench.kill_rerun)
CLEAN_RUN_REQUESTS = 164


@pytest.mark.parametrize("trial", [0])
def test_a_run_killed_at_a_random_point_converges_on_a_rerun_one_lock_duration_later(sandbox, tmp_path, trial):
    rng = random.Random(33 + trial)
    point = random_point(rng, CLEAN_RUN_REQUESTS)
    if trial % 3 == 0:
        point += random_point(rng, CLEAN_RUN_REQUESTS)   # every third trial: its rerun is killed too
    outcome = kill_and_rerun(sandbox, tmp_path, point, extra=["rolling_update_lock_duration=%ds" % LOCK], wait_for_lock=True)
    record("kill-random-%d" % trial, sandbox, point=point, killed=outcome["killed"], rerun_rc=outcome["rc"],
           problems=outcome["problems"])
    assert outcome["killed"][0], "the run ended before the kill point %s: the test proved nothing" % point
    assert outcome["rc"] == 0, outcome["output"][-4000:]
    assert outcome["problems"] == []
