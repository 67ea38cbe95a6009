"""nodeops.rollout.upgrade_serial ends every stop as nodeops.rollout.upgrade does: a drain it skipped, a pause request
and a failure rolled back each leave the group released (no lock, no suspended process) and the result written, the
nodes it did not replace said so host by host. Each test checks the invariant report (floor, budgets, no pod ended
without eviction)."""

from sandbox.drive.tags import PAUSE_TAG, delete_tag, set_tag
from tests.integration.controls import (
    GROUP,
    Watcher,
    group_view,
    lock_holder,
    node_marks,
    terminated_by_rollout,
)
from sandbox.drive.convergence import problems
from tests.integration.serial_runs import DEMO, PINNED, assert_floor, recap, serial
FAILING_HOOK = """
- name: smoke test the new nodes
  ansible.builtin.fail:
    msg: "smoke test failed on {{ rolling_update_hook.drained | join(', ') }}"
  when: rolling_update_hook.drained | length > 0 and not rolling_update_hook.rollback
"""


def assert_released(sandbox, group=GROUP):
    """The end of a stopped serial run: the group's lock released and no process of it left suspended."""
    assert lock_holder(sandbox, group) is None
    view = group_view(sandbox, group)
    assert view["suspended"] == [], view
    return view


def test_a_drain_it_skipped_ends_the_run_with_the_group_held_released_and_reported(start_sandbox, tmp_path):
    sandbox = start_sandbox(nodes=4, azs=2, speed=20, workloads=[DEMO, PINNED])
    original = group_view(sandbox)
    pinned = sandbox.core().list_namespaced_pod("shop", label_selector="app=pinned").items[0].spec.node_name

    # the pod is evicted (not restarted): its budget never lets it go
    rc, out, results = serial(sandbox, tmp_path, "rolling_update_drain_timeout=20s", "rolling_update_drain_timeout_action=skip",
                              "rolling_update_restart_single_replica=false")
    assert rc != 0, out[-4000:]
    result = results[GROUP]
    assert result["status"] == "failed" and pinned in result["skipped_nodes"], result
    assert "could not be drained" in result["message"], result
    # held as the upgrade holds a skipped drain: the surge and the state tags kept, only the skipped node still cordoned
    held = assert_released(sandbox)
    assert held["state_tags"] and held["sizes"][2] > original["sizes"][2], held
    assert node_marks(sandbox) == {pinned: ["nodeops.rollout/outdated", "cordon (ours)"]}, node_marks(sandbox)
    # every other node was replaced, and its host says so; the pinned node's host says it was not
    hosts = recap(out)   # the run's first host also carries the run's stop
    assert hosts[pinned][1] == 1 and sum(failed for _ok, failed in hosts.values()) <= 2, hosts
    assert "not replaced: node group %s failed" % GROUP in out, out[-3000:]
    assert_floor(sandbox, 4, 1)


def test_a_pause_request_ends_the_run_cleanly_and_the_next_run_finishes(start_sandbox, tmp_path):
    sandbox = start_sandbox(nodes=4, azs=2, speed=20, workloads=[DEMO])
    original = group_view(sandbox)
    # the operator pauses once the canary is replaced: the batches after it stop before their next step
    watcher = Watcher(sandbox, sandbox.now(), terminated_by_rollout, lambda event: set_tag(sandbox, PAUSE_TAG, "true"))
    watcher.start()
    try:
        rc, out, results = serial(sandbox, tmp_path)
    finally:
        watcher.stop()
    assert watcher.fired is not None
    assert rc == 0, out[-4000:]
    result = results[GROUP]
    assert result["status"] == "paused" and result["reason"] == "requested", result
    assert 0 < result["nodes_replaced"] < 4, result
    held = assert_released(sandbox)
    assert held["state_tags"] and held["sizes"][2] > original["sizes"][2], held
    # nothing cordoned or tainted that is not drained
    assert all(marks == ["nodeops.rollout/outdated", "cordon (ours)"] for marks in node_marks(sandbox).values()), node_marks(sandbox)
    assert "not replaced: node group %s paused" % GROUP in out, out[-3000:]
    assert recap(out) and all(failed == 0 for _ok, failed in recap(out).values()), recap(out)

    delete_tag(sandbox, PAUSE_TAG)
    rc, out, results = serial(sandbox, tmp_path)
    assert rc == 0 and results[GROUP]["status"] == "replaced", out[-4000:]
    assert problems(sandbox, original["sizes"], 2) == []
    assert_floor(sandbox, 4, 1)


def test_a_failure_in_a_batch_rolls_the_whole_group_back(start_sandbox, tmp_path):
    sandbox = start_sandbox(nodes=4, azs=2, speed=20, workloads=[DEMO])
    original = group_view(sandbox)
    hook = tmp_path / "smoke.yml"
    hook.write_text(FAILING_HOOK)
    rc, out, results = serial(sandbox, tmp_path, "rolling_update_on_failure=rollback",
                              '{"rolling_update_hooks": {"after_drain": "%s"}}' % hook)
    assert rc != 0, out[-4000:]
    result = results[GROUP]
    assert result["status"] == "rolled back" and "smoke test failed" in result["message"], (result, out[-6000:])
    # the group is back where it was: every instance on version 1, its sizes, nothing of ours left
    assert problems(sandbox, original["sizes"], 1) == []
    assert set(group_view(sandbox)["members"].values()) == {"1"}
    assert_floor(sandbox, 4, 1)
