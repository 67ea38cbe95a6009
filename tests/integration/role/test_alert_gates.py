"""Alerts as gates (rolling_update_abort_alerts, rolling_update_pause_alerts), read from the real Alertmanager the sandbox
starts (``up --alertmanager``; its alerts and silences posted through its API v2, as Prometheus and an operator do).

- Bad input is refused before any change: a matcher that does not parse, and an Alertmanager that does not answer (in
  the plan and in the upgrade, naming its URL).
- An abort alert that starts firing mid-rollout stops it before its next step, naming the alert, the group held.
- The rerun resumes it while a pause alert fires and a critical alert fires silenced: the silenced one does not count,
  the pause alert holds the next drain (no cordon, eviction or termination while it fires), and once it clears the
  rollout finishes; the progress line and the step say which alert paused it.

Each run with the demo's workloads: no budget violated, no pod killed without eviction, no Deployment without a Ready
pod, the floor kept."""

import json
import os
import re
import time

import pytest

from tests.integration.controls import GROUP, QUICK, assert_invariants, assert_refused_before_any_change, ours, result_of, wait_for

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")
NODES, AZS = 4, 2
CRITICAL = {"alertname": "KubeAPIErrorsHigh", "severity": "critical"}
WARNING = {"alertname": "NodeNetworkSaturated", "severity": "warning", "team": "platform"}
# what a step that drains or terminates does
ACTS = ("node.cordoned", "pod.terminating", "instance.terminated")
# nothing listens on the discard port of the loopback
UNREACHABLE = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[DEMO], alertmanager=True)


def gates(sandbox, **more):
    values = {"rolling_update_alertmanager_url": sandbox.alertmanager_url, "rolling_update_abort_alerts": ['severity="critical"'],
              "rolling_update_pause_alerts": ['severity="warning"', 'team=~"plat.*"'], "rolling_update_pause_alerts_timeout": "10m"}
    values.update(more)
    return values


def test_a_matcher_that_does_not_parse_is_refused_before_any_change(sandbox, tmp_path):
    assert_refused_before_any_change(sandbox, tmp_path, "rolling_update_abort_alerts[0]: 'severity==critical' is not a matcher",
                                     extra=QUICK, host_vars=gates(sandbox, rolling_update_abort_alerts=["severity==critical"]))


def test_an_alertmanager_that_does_not_answer_is_refused_in_the_upgrade_and_the_plan(sandbox, tmp_path):
    message = "the Alertmanager at %s is unreachable" % UNREACHABLE
    assert_refused_before_any_change(sandbox, tmp_path, message, extra=QUICK, host_vars=gates(sandbox, rolling_update_alertmanager_url=UNREACHABLE))
    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, check=True, extra=list(QUICK), host_vars=gates(sandbox, rolling_update_alertmanager_url=UNREACHABLE))
    assert rc != 0 and message in out, out[-3000:]
    assert sandbox.mutating_requests(since=since) == []


@pytest.fixture(scope="module")
def aborted(sandbox, tmp_path_factory):
    directory = tmp_path_factory.mktemp("abort")
    report, output = directory / "result.json", directory / "run.log"
    since = sandbox.now()
    run = sandbox.start_role_playbook(directory, str(output), extra=list(QUICK), report=report, host_vars=gates(sandbox))
    try:
        # the first node is drained: the alert fires mid-rollout
        wait_for(lambda: any(event["kind"] == "node.cordoned" and event["t"] > since for event in sandbox.events()), 300, "first cordon", run)
        sandbox.post_alert(CRITICAL)
        fired = sandbox.now()
        rc = run.wait(timeout=900)
    finally:
        if run.poll() is None:
            run.kill()
    # the alert is resolved, as Prometheus resolves it once its rule holds no more
    sandbox.post_alert(CRITICAL, ends_in=0)
    return {"rc": rc, "out": output.read_text(), "report": report, "fired": fired, "since": since, "invariants": sandbox.report()}


def test_an_abort_alert_firing_mid_rollout_stops_it_naming_the_alert(sandbox, aborted):
    assert aborted["rc"] != 0, aborted["out"][-3000:]
    assert 'abort alert KubeAPIErrorsHigh{severity="critical"} is firing; the rollout stops before its next step' in aborted["out"], aborted["out"][-3000:]
    group = result_of(aborted["report"])
    assert group["status"] == "failed" and group["nodes_replaced"] < NODES, group
    figures = assert_invariants(aborted["invariants"], NODES, 1)
    assert figures["max_evictions_per_pod"] <= 1, figures


@pytest.fixture(scope="module")
def resumed(sandbox, aborted, tmp_path_factory):
    assert aborted["rc"] != 0
    silence = sandbox.silence(CRITICAL)
    sandbox.post_alert(CRITICAL)
    sandbox.post_alert(WARNING)
    directory = tmp_path_factory.mktemp("resume")
    report, output = directory / "result.json", directory / "run.log"
    # the plan first: it lists the alerts firing now, and changes nothing (counted from the events logged after the
    # aborted run's last, whose release of the lock bears the time the plan starts at)
    before = len(sandbox.events())
    plan_rc, plan_out = sandbox.run_role_playbook(directory, check=True, extra=list(QUICK), host_vars=gates(sandbox))
    plan_changes = [event for event in sandbox.events()[before:] if event["kind"] in ("k8s.request", "aws.request")
                    and event.get("mutating") and ours(event)]
    since = sandbox.now()
    run = sandbox.start_role_playbook(directory, str(output), extra=list(QUICK), report=report, host_vars=gates(sandbox))
    try:
        # a step that would drain is being decided: paused, it waits inside rollout_step while the warning fires
        wait_for(lambda: "| decide" in output.read_text(), 300, "first step", run)
        time.sleep(8)
        during = [event for event in sandbox.events() if event["t"] > since and event["kind"] in ACTS]
        cleared = sandbox.now()
        sandbox.post_alert(WARNING, ends_in=0)
        rc = run.wait(timeout=900)
    finally:
        if run.poll() is None:
            run.kill()
    return {"rc": rc, "out": output.read_text(), "result": json.loads(report.read_text()) if report.exists() else {},
            "during": during, "cleared": cleared, "since": since, "silence": silence, "alerts": sandbox.alerts(),
            "plan": (plan_rc, plan_out, plan_changes)}


def test_the_plan_lists_the_alerts_firing_now_not_the_silenced_one(resumed):
    rc, out, changes = resumed["plan"]
    assert rc == 0, out[-3000:]
    # (the debug output escapes the quotes)
    assert re.search(r'alerts firing now: abort none; pause NodeNetworkSaturated\{severity=\\?"warning\\?",team=\\?"platform\\?"\}', out), out[-3000:]
    assert changes == [], changes


def test_a_silenced_alert_does_not_stop_the_rerun_and_a_pause_alert_holds_it_until_it_clears(sandbox, resumed):
    assert resumed["rc"] == 0, resumed["out"][-5000:]
    # the critical alert fired all along, silenced
    assert any(alert["labels"] == CRITICAL and resumed["silence"] in alert["status"]["silencedBy"] for alert in resumed["alerts"]), resumed["alerts"]
    # while the warning fired: no cordon, no pod leaving, no termination
    assert resumed["during"] == [], resumed["during"]
    # the rerun's first drain or termination came once the warning had cleared
    acts = [event for event in sandbox.events() if event["t"] > resumed["since"] and event["kind"] in ACTS]
    assert acts and min(event["t"] for event in acts) > resumed["cleared"], (acts[:2], resumed["cleared"])
    group = next(group for group in resumed["result"]["node_groups"] if group["name"] == GROUP)
    assert group["status"] == "replaced", group
    name = 'NodeNetworkSaturated{severity="warning",team="platform"}'
    assert any("pause alert %s to clear" % name in text for step in group["steps"] for text in step.get("waited_for") or []), group["steps"]
    # the progress line (printed as JSON: its quotes escaped)
    assert re.search(r"; paused [0-9hms ]+ by alert NodeNetworkSaturated\{severity=", resumed["out"]), resumed["out"][-3000:]


def test_the_stopped_and_resumed_rollout_keeps_every_invariant(sandbox, resumed):
    assert resumed["rc"] == 0, resumed["out"][-3000:]
    figures = assert_invariants(sandbox.report(), NODES, 1)
    assert figures["max_evictions_per_pod"] <= 1, figures
