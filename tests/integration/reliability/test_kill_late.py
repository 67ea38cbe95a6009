"""Kill anywhere, the second half of a rollout: waiting for replacements, mid-validation, mid-restore (a rollout killed
twice is test_kill_random.py's), and one rerun that waits for the dead run's lock to expire instead of deleting it (see
sandbox/drive/kill.py and test_kill_early.py)."""

import pytest

from sandbox.drive.convergence import record
from sandbox.drive.kill import POINTS, kill_and_rerun


@pytest.mark.parametrize("point", ["waiting-for-replacements", "mid-validation", pytest.param("mid-restore", marks=pytest.mark.reference)])
def test_a_rollout_killed_late_converges_on_the_rerun(sandbox, tmp_path, point):
    # one of them waits for the dead run's lock to expire, as an operator who does not delete it would
    wait = point == "mid-validation"
    extra = ["rolling_update_lock_duration=20s"] if wait else []
    outcome = kill_and_rerun(sandbox, tmp_path, POINTS[point], extra=extra, wait_for_lock=wait)
    assert outcome["killed"] == [True] * len(POINTS[point]), "the run ended before the kill point %s:\n%s" % (point, outcome["ended"])
    assert outcome["rc"] == 0, outcome["output"][-4000:]
    record("kill-" + point, sandbox, killed=outcome["killed"], rerun_rc=outcome["rc"], problems=outcome["problems"])
    assert outcome["problems"] == []
