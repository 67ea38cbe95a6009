"""The rollout stopped at a random point - a pause request, or a kill - then ended by the cancel or the rollback
playbook (sandbox/drive/stop_then_end.py): nothing of the rollout is left, the floor held, no budget was violated
and no pod ended without eviction. Two trials keep the suite's time; bench/stop_then_end.py runs many."""

import random

import pytest

from sandbox.drive.convergence import record
from sandbox.drive.stop_then_end import trial

# the collection's request count in a clean 3-node rollout with sandbox/drive/kill.py's ROLE_VARS (bench.kill_rerun)
CLEAN_RUN_REQUESTS = 164


@pytest.mark.parametrize("stop, end, seed", [("pause", "cancel", 7), ("kill", "rollback", 6)])
def test_a_rollout_stopped_anywhere_ends_with_nothing_of_it_left(sandbox, tmp_path, stop, end, seed):
    nth = random.Random(seed).randint(1, CLEAN_RUN_REQUESTS)
    outcome = trial(sandbox, tmp_path, stop, end, nth)
    record("stop-then-end-%s-%s" % (stop, end), sandbox, nth=nth, stopped=outcome["stopped"], status=outcome["status"],
           problems=outcome["problems"])
    assert outcome["stopped"], "the run ended before the %s at request %d: the trial proved nothing" % (stop, nth)
    assert outcome["problems"] == [], (outcome["problems"], outcome["output"][-4000:])
