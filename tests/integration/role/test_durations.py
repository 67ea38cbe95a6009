"""Durations are durations: every duration variable of the role takes whole seconds or '30s'/'15m'/'1h', as a string
from a survey or ``-e`` too, and reaches the cluster as that many seconds; a value that does not parse is refused
naming the role variable and the forms allowed, before anything changes."""

import json
import os

import pytest

from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"
ALLOWED = "use a number of seconds (90) or a duration such as '90s', '15m' or '1h30m'"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=3, azs=3, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


def run(sandbox, tmp_path, extra, report):
    return sandbox.run_role_playbook(tmp_path, extra=extra, report=report)


@pytest.mark.parametrize("setting, variable", [
    ("rolling_update_grace_period=abc", "rolling_update_grace_period"),
    ("rolling_update_drain_timeout=-5s", "rolling_update_drain_timeout"),
    ("rolling_update_post_drain_delay=1.5x", "rolling_update_post_drain_delay"),
    ("rolling_update_node_ready_timeout=0", "rolling_update_node_ready_timeout"),   # a timeout of 0 makes no sense
    ("rolling_update_validate_interval=1.5m", "rolling_update_validate_interval"),   # no fractions
])
def test_a_duration_that_does_not_parse_is_refused_by_name_before_anything_changes(sandbox, tmp_path, setting, variable):
    since = sandbox.now() + 0.01
    rc, out = run(sandbox, tmp_path, [setting], tmp_path / "r.json")
    assert rc != 0, out[-3000:]
    assert variable + ":" in out, out[-3000:]
    assert ALLOWED in out, out[-3000:]
    assert [e for e in sandbox.mutating_requests(since=since) if e["t"] > since] == []
    # refused in plan mode as well
    rc, out = run(sandbox, tmp_path, [setting, "rolling_update_plan=true"], tmp_path / "r.json")
    assert rc != 0 and variable + ":" in out, out[-3000:]


def test_a_grace_period_written_as_a_duration_reaches_every_evicted_pod(sandbox, tmp_path):
    """'45s' (not 30s: the demo pods' own terminationGracePeriodSeconds is 30, so 30 could not tell an honoured grace
    period from an ignored one) gives every evicted pod 45 seconds; every other duration comes as a string too."""
    report = tmp_path / "result.json"
    since = sandbox.now() + 0.01
    extra = ["rolling_update_grace_period=45s", "rolling_update_drain_timeout=5m", "rolling_update_post_drain_delay=1s",
             "rolling_update_node_ready_timeout=15m", "rolling_update_validate_interval=1s", "rolling_update_validate_timeout=10m",
             "rolling_update_validate_passes=1", "rolling_update_max_unavailable=2"]
    rc, out = run(sandbox, tmp_path, extra, report)
    assert rc == 0, out[-3000:]
    group = json.loads(report.read_text())["node_groups"][0]
    assert group["status"] == "replaced" and int(group["nodes_replaced"]) == 3, group
    evicted = [e for e in sandbox.events() if e["kind"] == "pod.terminating" and e["t"] > since and e.get("how") == "evicted"
               and str(e.get("client") or "").startswith("nodeops.rollout")]
    assert len(evicted) >= 3, evicted
    assert sorted(set(e.get("grace_seconds") for e in evicted)) == [45], [(e["pod"], e.get("grace_seconds")) for e in evicted]
    assert "drained 1s or more ago" in out
    assert_safe(sandbox.report())
