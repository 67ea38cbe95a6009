"""The Kubernetes API server unreachable for 30 seconds in the middle of a drain (every connection cut, none served):
the drain waits it out (kube_api.UNREACHABLE_SECONDS) and the same run finishes the group, with no pod killed or deleted
without eviction and no node terminated before it was drained (the invariant report, through convergence.problems)."""

from sandbox.drive.convergence import problems, record, sizes
from sandbox.drive.handle import wait_until

FAST = ["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"]
DOWN_SECONDS = 30


def evictions(sandbox):
    return [e for e in sandbox.events() if e["kind"] == "k8s.request" and e.get("verb") == "evict"
            and str(e.get("client") or "").startswith("nodeops.rollout")]


def test_an_api_server_down_for_30s_mid_drain_is_ridden_out_without_losing_a_pod(sandbox, tmp_path):
    original = sizes(sandbox)
    run = sandbox.start_role_playbook(tmp_path, tmp_path / "first.log", extra=FAST)
    try:
        wait_until("the first eviction", lambda: evictions(sandbox) or run.poll() is not None, timeout=300, interval=0.2)
        assert run.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
        sandbox.fault(k8s_down=DOWN_SECONDS)
        rc = run.wait(timeout=900)
    finally:
        if run.poll() is None:
            run.kill()
    first = (tmp_path / "first.log").read_text()
    assert rc == 0, first[-3000:]
    # the run went on draining after the API came back
    down = [e["wall"] for e in sandbox.events() if e["kind"] == "api.down"]
    assert len(down) == 1 and [e for e in evictions(sandbox) if e["wall"] > down[0] + DOWN_SECONDS], "no eviction after the outage"
    record("kubernetes-api-down-30s-mid-drain", sandbox, outcome="finished in the same run", rc=rc)
    assert problems(sandbox, original, 2) == [], first[-3000:]
