"""Kill anywhere, the first half of a rollout: SIGKILL the whole ansible-playbook process tree at a point reached by
construction (the sandbox holds the request the point names), rerun, and nothing is lost (see sandbox/drive/kill.py;
the second half is test_kill_late.py, split so that the two halves run on two workers)."""

import pytest

from sandbox.drive.convergence import record
from sandbox.drive.kill import POINTS, kill_and_rerun


# Only points reached through an AWS request can run on the reference backend (the real kube-apiserver cannot be held);
# one of them runs there, test_kill_late.py's mid-restore, to keep the reference stage short.
@pytest.mark.parametrize("point", ["mid-surge", "surge-then-taint", "mid-drain", "terminated-before-tag-write"])
def test_a_rollout_killed_early_converges_on_the_rerun(sandbox, tmp_path, point):
    outcome = kill_and_rerun(sandbox, tmp_path, POINTS[point])
    assert outcome["killed"] == [True] * len(POINTS[point]), "the run ended before the kill point %s:\n%s" % (point, outcome["ended"])
    assert outcome["rc"] == 0, outcome["output"][-4000:]
    record("kill-" + point, sandbox, killed=outcome["killed"], rerun_rc=outcome["rc"], problems=outcome["problems"])
    assert outcome["problems"] == []
