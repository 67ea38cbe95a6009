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
        assert recap(out) and all(failed == 0 for _ok, failed in recap(out).values()), recap(out)
    assert sandbox.mutating_requests(since=since) == []

    rc, out, results = serial(sandbox, tmp_path, groups=(GROUP, OTHER), options=["--limit", "node_group_sandbox_nodes"])
    assert rc == 0, out[-4000:]
    assert sorted(results) == [GROUP] and results[GROUP]["status"] == "replaced", results
    assert problems(sandbox, original["sizes"], 2, name=GROUP) == []
    # the other group: not surged, not suspended, not locked, its nodes without a mark of ours
    assert group_view(sandbox, OTHER) == other
    assert lock_holder(sandbox, OTHER) is None and node_marks(sandbox) == {}
    assert_floor(sandbox, 3, 1)


def test_a_limited_run_over_nodes_annotated_needs_update_leaves_the_group_paused_as_with_an_ami(start_sandbox, tmp_path):
    # no target: the group is rolled to the version it launches now, and the nodes annotated needs-update are outdated
    sandbox = start_sandbox(nodes=3, azs=3, speed=20, workloads=[DEMO])
    core = sandbox.core()
    for node in core.list_node().items:
        core.patch_node(node.metadata.name, {"metadata": {"annotations": {"nodeops.rollout/needs-update": "true"}}})
    first = sorted(node.metadata.name for node in core.list_node().items)[0]

    rc, out, results = serial(sandbox, tmp_path, current=True, options=["--limit", first])
    assert rc == 0, out[-4000:]
    group = results[GROUP]
    # the same end as a limited run towards an AMI: paused, reason limited, the nodes left out named as outside the run
    assert (group["status"], group["reason"]) == ("paused", "limited"), group
    assert group["nodes_replaced"] == 1 and "outside this run" in group["message"], group
    assert recap(out)[first][1] == 0, recap(out)
    # held as a pause holds it: surged and recorded for the next run, its processes resumed, no mark on the nodes left
    view = group_view(sandbox)
    assert any(key.startswith("nodeops.rollout/") for key in view["state_tags"]), view
    assert view["suspended"] == [] and node_marks(sandbox) == {} and lock_holder(sandbox) is None, view

    rc, out, results = serial(sandbox, tmp_path, current=True)
    assert rc == 0, out[-4000:]
    assert results[GROUP]["status"] == "replaced" and results[GROUP]["nodes_replaced"] == 2, results[GROUP]
    assert_floor(sandbox, 3, 1)
