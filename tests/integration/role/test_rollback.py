"""Rollback, end to end: an abort alarm that fires mid-rollout rolls the group back (rolling_update_on_failure=rollback)
to the explicit launch template version it launched before - the target came from an SSM parameter, which Instance
Refresh cannot roll back - and a rollout held by a failing hook is rolled back by the playbook nodeops.rollout.rollback,
planned first in check mode. Both drain the new nodes within their budgets and the capacity floor, pods moving back to
the old nodes, and end with the group as it was: its version, its sizes, no state, no mark on any node."""

import os

import pytest

from tests.integration.browser import ROLLED_BACK_BANNER, banners
from tests.integration.controls import (
    GROUP,
    QUICK,
    Watcher,
    assert_invariants,
    group_view,
    node_marks,
    result_of,
    terminated_by_rollout,
)

NODES, AZS, MAX_UNAVAILABLE = 4, 2, 1
ALARM = "shop-5xx"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    handle = start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])
    handle.aws("cloudwatch").put_metric_alarm(
        AlarmName=ALARM, MetricName="5xx", Namespace="shop", Statistic="Sum", Period=60, EvaluationPeriods=1, Threshold=1,
        ComparisonOperator="GreaterThanThreshold")
    return handle


def launched_versions(sandbox, since):
    return sorted({event["lt_version"] for event in sandbox.events()
                   if event["kind"] == "instance.launched" and event["t"] >= since and event.get("group") == GROUP})


def assert_back_where_it_was(sandbox, before):
    after = group_view(sandbox)
    assert after["version"] == before["version"], after
    assert sorted(set(after["members"].values())) == [before["version"]] and len(after["members"]) == NODES, after
    assert after["sizes"] == before["sizes"] and after["state_tags"] == {} and after["suspended"] == [], after
    assert node_marks(sandbox) == {}
    ready = [node for node in sandbox.core().list_node().items
             if any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])]
    assert len(ready) >= NODES


def test_an_abort_alarm_rolls_back_a_rollout_to_an_ssm_parameter_target(sandbox, tmp_path):
    before = group_view(sandbox)
    assert before["version"] == "1" and before["sizes"] == (NODES, NODES, NODES)
    since = sandbox.now()
    # the alarm goes off once the new version serves: after the rollout's first terminations
    cloudwatch = sandbox.aws("cloudwatch")
    watcher = Watcher(sandbox, since, terminated_by_rollout,
                      lambda event: cloudwatch.set_alarm_state(AlarmName=ALARM, StateValue="ALARM",
                                                               StateReason="Threshold Crossed: 5xx above 1"))
    watcher.start()
    report = tmp_path / "result.json"
    try:
        rc, out = sandbox.run_role_playbook(
            tmp_path, report=report, node_groups=[{"name": GROUP, "ssm_parameter": sandbox.state["ssm_parameter"]}],
            extra=QUICK + ["rolling_update_on_failure=rollback", "rolling_update_abort_alarms=" + ALARM,
                           "rolling_update_max_surge=2"])
    finally:
        watcher.stop()
    assert watcher.fired is not None, out[-3000:]
    assert rc != 0, out[-3000:]   # the upgrade did not happen
    result = result_of(report)
    assert result["status"] == "rolled back", result
    assert "abort alarm '%s' is in ALARM" % ALARM in result["reason"], result
    assert result["rolled_back_from"]["version"] == 2 and result["target"]["version"] == 1, result
    assert "rolled back at" in out and "to launch template version 1" in out
    # a real rollout was undone: instances of version 2 served, and a rollback's steps drained them
    assert "2" in launched_versions(sandbox, since)
    assert any(batch["rollback"] for batch in result["batches"]) and any(not batch["rollback"] for batch in result["batches"])
    assert_back_where_it_was(sandbox, before)
    figures = assert_invariants(sandbox.report(), NODES, MAX_UNAVAILABLE)
    print("invariants", figures)
    cloudwatch.set_alarm_state(AlarmName=ALARM, StateValue="OK", StateReason="back to normal")


FAILING_HOOK = """---
- name: The new nodes fail the operator's own check once a batch has replaced nodes
  ansible.builtin.fail:
    msg: "smoke test failed on {{ rolling_update_hook.nodes | join(', ') }}"
  when: rolling_update_hook.drained | length > 0 or rolling_update_hook.nodes | length > 0
"""


def test_the_rollback_playbook_rolls_back_a_rollout_a_failing_hook_held(sandbox, tmp_path):
    before = group_view(sandbox)
    hook = tmp_path / "smoke.yml"
    hook.write_text(FAILING_HOOK)
    report = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(
        tmp_path, report=report, node_groups=[{"name": GROUP, "image_id": sandbox.state["amis"]["new"]}],
        extra=QUICK + ['{"rolling_update_hooks": {"after_drain": "%s"}}' % hook])
    assert rc != 0, out[-3000:]
    result = result_of(report)
    # held, as rolling_update_on_failure defaults to: the surge and the state stay, the processes are resumed
    assert result["status"] == "failed" and "the after_drain hook %s failed" % hook in result["reason"], result
    held = group_view(sandbox)
    assert held["state"]["prev"] == before["version"], held
    assert held["version"] != before["version"] and held["suspended"] == [] and held["sizes"][2] > NODES, held

    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="rollback.yml", report=report, check=True)
    assert rc == 0, out[-3000:]
    planned = result_of(report)
    assert planned["status"] == "planned" and planned["plan"]["controls"]["rollback"] is True, planned
    assert "rollback: back to launch template version %s" % before["version"] in out
    assert sandbox.mutating_requests(since=since) == []
    assert group_view(sandbox) == held

    rc, out = sandbox.run_role_playbook(tmp_path, playbook="rollback.yml", report=report)
    assert rc == 0, out[-3000:]
    result = result_of(report)
    assert result["status"] == "rolled back" and result["target"]["version"] == int(before["version"]), result
    # its page: the rollback asked for, in a rollback's own colour, not the failure's red, and not saying that the new
    # version's nodes failed: nothing of this run failed, the rollback was asked for
    page = banners(tmp_path / "result.html", tmp_path)
    assert [banner["background"] for banner in page["banners"]] == [ROLLED_BACK_BANNER], page
    assert "The rollback playbook moved the group back" in page["banners"][0]["text"], page
    assert "nodes failed" not in page["banners"][0]["text"], page
    assert_back_where_it_was(sandbox, before)
    figures = assert_invariants(sandbox.report(), NODES, MAX_UNAVAILABLE)
    print("invariants", figures)


def test_the_rollback_plan_of_a_rollout_without_a_previous_version_refuses_with_zero_mutating_requests(sandbox, tmp_path):
    """The quick start's rehearsal (docs/quick-start.md, after its upgrade): every node annotated for replacement and
    rolled to the version it already runs, held by a failure. The rollout records no previous version (there is none),
    so ``nodeops.rollout.rollback --check`` says there is nothing to roll back to and what to do instead - it does not
    crash on a version option the user never set - and sends no mutating request."""
    core = sandbox.core()
    for node in core.list_node().items:
        core.patch_node(node.metadata.name, {"metadata": {"annotations": {"nodeops.rollout/needs-update": "true"}}})
    hook = tmp_path / "smoke.yml"
    hook.write_text(FAILING_HOOK)
    report = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(tmp_path, report=report, node_groups=[{"name": GROUP}],
                                        extra=QUICK + ['{"rolling_update_hooks": {"after_drain": "%s"}}' % hook])
    assert rc != 0, out[-3000:]
    held = group_view(sandbox)
    assert held["state"] and "prev" not in held["state"] and held["state"]["ver"] == held["version"], held

    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="rollback.yml", report=report, check=True)
    assert rc != 0, out[-3000:]
    assert "is not allowed; use a version number" not in out, out[-3000:]
    assert "does not record a launch template version the group launched before" in out, out[-3000:]
    assert "nodeops.rollout.cancel" in out, out[-3000:]
    assert sandbox.mutating_requests(since=since) == []
    assert group_view(sandbox) == held
