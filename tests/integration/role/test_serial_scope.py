"""nodeops.rollout.upgrade_serial touches only what its run names: a plan (--check, or rolling_update_plan) makes no
mutating request, and a run limited to one node group's hosts replaces that group and leaves the other one as it was -
not surged, not suspended, not locked, no mark on its nodes. The invariant report is checked at the end."""

from tests.integration.controls import GROUP, group_view, lock_holder, node_marks
from sandbox.drive.convergence import problems
from tests.integration.serial_runs import DEMO, assert_floor, recap, serial

OTHER = "sandbox-nodes-2"


def test_a_plan_changes_nothing_and_a_run_limited_to_one_group_leaves_the_other_alone(start_sandbox, tmp_path):
    sandbox = start_sandbox(nodes=3, azs=3, groups=2, speed=20, workloads=[DEMO])
    other = group_view(sandbox, OTHER)
    original = group_view(sandbox, GROUP)

    since = sandbox.now()
    for plan in (["--check"], ["-e", "rolling_update_plan=true"]):
        rc, out, results = serial(sandbox, tmp_path, groups=(GROUP, OTHER), options=plan)
        assert rc == 0, out[-4000:]
        assert sorted(results) == [GROUP, OTHER] and all(
            group["status"] == "planned" and len(group["plan"]["outdated"]) == 3 for group in results.values()), results
        assert all(failed == 0 for _ok, failed in recap(out).values()), recap(out)
    assert sandbox.mutating_requests(since=since) == []

    rc, out, results = serial(sandbox, tmp_path, groups=(GROUP, OTHER), options=["--limit", "node_group_sandbox_nodes"])
    assert rc == 0, out[-4000:]
    assert sorted(results) == [GROUP] and results[GROUP]["status"] == "replaced", results
    assert problems(sandbox, original["sizes"], 2, name=GROUP) == []
    # the other group: not surged, not suspended, not locked, its nodes without a mark of ours
    assert group_view(sandbox, OTHER) == other
    assert lock_holder(sandbox, OTHER) is None and node_marks(sandbox) == {}
    assert_floor(sandbox, 3, 1)
