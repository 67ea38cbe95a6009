# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/control.py: what stops a rollout before a step (an abort alarm, a pause request, a closing window), what keeps
it from starting, and which failures a rollback remedies - as tables."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import control
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.window import parse_windows

NOW = datetime(2026, 12, 1, 3, 0, tzinfo=timezone.utc)          # a Tuesday
OPEN = parse_windows("Tue 02:00 3h UTC", "w")                   # closes at 05:00, two hours from NOW
FIRING = [{"name": "shop-5xx", "state": "ALARM", "reason": "Threshold Crossed"}, {"name": "p99", "state": "OK"}]
QUIET = [{"name": "shop-5xx", "state": "OK"}, {"name": "p99", "state": "INSUFFICIENT_DATA"}]


@pytest.mark.parametrize("action, alarms, pause, step_seconds, stop, reason", [
    ("run", QUIET, False, 600, None, None),
    ("run", FIRING, False, 600, "abort", "abort alarm"),
    ("done", FIRING, False, 600, "abort", "abort alarm"),         # the last bake is watched too
    ("run", FIRING, True, 600, "abort", "abort alarm"),           # an alarm wins over a pause
    ("run", QUIET, True, 600, "pause", "requested"),
    ("wait", QUIET, True, 600, "pause", "requested"),             # also while a step waits
    ("run", QUIET, False, 7200, None, None),                      # exactly fits
    ("run", QUIET, False, 7201, "pause", "window closed"),
    ("done", QUIET, True, 9999, None, None),                      # nothing holds the scale down but an alarm
])
def test_stop_before(action, alarms, pause, step_seconds, stop, reason):
    found = control.stop_before({"action": action}, NOW, alarms, pause=pause, windows=OPEN, step_seconds=step_seconds)
    if stop is None:
        assert found is None
    else:
        assert (found["stop"], found["reason"]) == (stop, reason)


def test_an_alarm_stop_names_the_alarm_and_its_reason():
    found = control.stop_before({"action": "wait"}, NOW, FIRING)
    assert found["alarms"] == ["shop-5xx"]
    assert found["message"] == "abort alarm 'shop-5xx' is in ALARM (Threshold Crossed)"


def test_a_pause_says_how_to_resume():
    assert "remove the tag (or set it to false) and run again" in control.stop_before({"action": "run"}, NOW, pause=True)["message"]
    closing = control.stop_before({"action": "run"}, NOW, windows=OPEN, step_seconds=7201)["message"]
    assert closing.startswith("the maintenance window closes Tue 2026-12-01 05:00 UTC") and closing.endswith("run again inside it to resume")


@pytest.mark.parametrize("tags, requested", [
    ({"nodeops.rollout/pause": "true"}, True), ({"nodeops.rollout/pause": "yes"}, True), ({"nodeops.rollout/pause": "1"}, True),
    ({"nodeops.rollout/pause": "false"}, False), ({"nodeops.rollout/pause": ""}, False), ({}, False), (None, False),
])
def test_pause_requested(tags, requested):
    assert control.pause_requested(tags) is requested


def test_start_refusal():
    assert control.start_refusal(NOW, QUIET, OPEN, 600) is None
    assert control.start_refusal(NOW, FIRING, OPEN, 600).startswith(
        "rolling_update_abort_alarms: abort alarm 'shop-5xx' is in ALARM (Threshold Crossed); the rollout does not start")
    assert "is outside the maintenance window" in control.start_refusal(datetime(2026, 12, 2, tzinfo=timezone.utc), QUIET, OPEN, 600)
    assert control.start_refusal(NOW) is None


def test_window_report():
    assert control.window_report([], NOW) is None
    report = control.window_report(OPEN, NOW)
    assert report == {"windows": ["Tue 02:00 3h UTC"], "open": True, "closes_at": "Tue 2026-12-01 05:00 UTC", "next_start": None}
    closed = control.window_report(OPEN, datetime(2026, 12, 2, tzinfo=timezone.utc))
    assert closed["open"] is False and closed["next_start"] == "Tue 2026-12-08 02:00 UTC"


EVICTION = {"kind": "kubernetes", "verb": "create", "api_group": "", "resource": "pods/eviction", "namespace": "a",
            "granted_by": "ClusterRole nodeops-rollout rule {...} of docs/rbac.yaml"}


@pytest.mark.parametrize("action, result, hook, kind, rollback", [
    ("nodeops.rollout.rollout_step", {"msg": "abort alarm 'x' is in ALARM", "alarms": ["x"]}, None, "alarm", True),
    ("nodeops.rollout.rollout_step", {"msg": "NodeCreationFailure: 2 new instance(s) did not become Ready nodes"}, None,
     "node creation", True),
    ("nodeops.rollout.cluster_validate", {"msg": "NodeCreationFailure: 1 of 2 instance(s) did not become Ready"}, None,
     "node creation", True),
    ("nodeops.rollout.cluster_validate", {"msg": "critical pod kube-system/coredns-1 not Ready"}, None, "validation", True),
    ("ansible.builtin.fail", {"msg": "The after_step hook /h.yml failed"}, {"event": "after_step", "file": "/h.yml",
                                                                            "message": "smoke test failed"}, "hook", True),
    ("nodeops.rollout.node_drain", {"msg": "node n1 not drained after 900s (timeout)"}, None, "other", False),
    ("nodeops.rollout.rollout_lock", {"msg": "held by awx-job-7"}, None, "other", False),
    ("nodeops.rollout.rollout_step", {"msg": "outdated node(s) are left to drain, but the group has 2 Ready"}, {}, "other", False),
    ("nodeops.rollout.node_drain", {"msg": "evict pod a/b: permission denied", "permission": EVICTION}, None,
     "permission", False),
    ("nodeops.rollout.node_drain", {"msg": "1 node not drained", "nodes": {"n1": {"blocking": [
        {"pod": "a/b", "kind": "api_error", "permission": EVICTION}]}}}, None, "permission", False),
    (None, None, None, "other", False),
])
def test_failure_cause(action, result, hook, kind, rollback):
    cause = control.failure_cause(action, result, hook)
    assert (cause["kind"], cause["rollback"]) == (kind, rollback)


def test_a_refused_permission_is_the_reason_with_the_rule_that_grants_it():
    cause = control.failure_cause("nodeops.rollout.node_drain", {"msg": "x", "permission": EVICTION})
    assert cause["reason"] == ('permission refused: create pods/eviction (core API group) in namespace "a" (granted by '
                               'ClusterRole nodeops-rollout rule {...} of docs/rbac.yaml)')
    assert cause["permission"] is EVICTION


def test_a_hook_failure_names_the_event_and_the_file():
    hook = {"event": "after_drain", "file": "/srv/smoke.yml", "message": "HTTP 502"}
    cause = control.failure_cause("ansible.builtin.fail", {"msg": "x"}, hook)
    assert cause["reason"] == "the after_drain hook /srv/smoke.yml failed: HTTP 502"


def test_a_step_that_would_drain_is_held_while_blocking_pods_run_and_names_them():
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.control import hold_for_pods, running_pods
    pods = [{"metadata": {"namespace": "ops", "name": "backup-1"}, "status": {"phase": "Running"}},
            {"metadata": {"namespace": "ops", "name": "backup-0"}, "status": {"phase": "Succeeded"}}]
    assert running_pods(pods) == ["ops/backup-1"]
    entry = {"selector": "app=backup", "namespace": "ops"}
    step = hold_for_pods({"action": "run", "terminate": ["i-1"], "decrement": 1, "drain": [{"node": "n-2"}], "validate": ["i-9"],
                          "wait_seconds": None, "waiting_for": []}, [(entry, running_pods(pods))])
    assert step["action"] == "wait" and step["terminate"] == [] and step["drain"] == [] and step["decrement"] == 0
    assert step["blocking_pods"] == ["ops/backup-1"] and step["wait_seconds"] == 5
    assert step["waiting_for"] == ["pod ops/backup-1 to end (rolling_update_blocking_pods app=backup in namespace ops)"]
    # none running, or a step that only waits: left as it is
    run = {"action": "run", "terminate": ["i-1"], "drain": [], "waiting_for": []}
    assert hold_for_pods(dict(run), [(entry, [])]) == run
    wait = {"action": "wait", "terminate": [], "drain": [], "waiting_for": ["the post-drain delay of 1 node(s)"]}
    assert hold_for_pods(dict(wait), [(entry, ["ops/backup-1"])]) == wait


ABORT = [{"name": "KubeAPIErrorsHigh", "labels": {"alertname": "KubeAPIErrorsHigh", "severity": "critical"}, "since": "t"}]
PAUSE = [{"name": "NodeNetworkSaturated", "labels": {"alertname": "NodeNetworkSaturated", "team": "platform", "severity": "warning"}},
         {"name": "NodeNetworkSaturated", "labels": {"alertname": "NodeNetworkSaturated", "team": "platform", "severity": "warning"}}]


def test_alerts_are_named_by_alertname_and_their_other_labels_once_each():
    assert control.alert_names(PAUSE) == ['NodeNetworkSaturated{severity="warning",team="platform"}']
    assert control.alert_names([{"name": "Watchdog", "labels": {"alertname": "Watchdog"}}]) == ["Watchdog"]


def test_an_abort_alert_firing_stops_the_rollout_as_a_failure_and_refuses_its_start():
    stop = control.stop_before({"action": "run"}, NOW, abort_alerts=ABORT)
    assert stop == {"stop": "abort", "reason": "abort alert", "alarms": [], "alerts": ['KubeAPIErrorsHigh{severity="critical"}'],
                    "message": 'abort alert KubeAPIErrorsHigh{severity="critical"} is firing'}
    # the end of a rollout too: only giving back is left, and the alert still names why the run failed
    assert control.stop_before({"action": "done"}, NOW, abort_alerts=ABORT)["stop"] == "abort"
    assert control.stop_before({"action": "run"}, NOW, abort_alerts=[]) is None
    assert control.start_refusal(NOW, abort_alerts=ABORT) == ('rolling_update_abort_alerts: abort alert KubeAPIErrorsHigh{severity="critical"} '
                                                              'is firing; the rollout does not start. Nothing was changed')
    # an abort alert's failure is one of the new nodes: rolling back helps
    assert control.failure_cause("nodeops.rollout.rollout_step", {"msg": "abort alert ...", "alerts": ["KubeAPIErrorsHigh"]})["kind"] == "alarm"


def test_a_pause_alert_holds_a_step_that_would_drain_or_terminate_and_no_other():
    step = control.hold_for_alerts({"action": "run", "terminate": ["i-1"], "decrement": 1, "drain": [{"node": "n-2"}], "validate": ["i-9"],
                                    "wait_seconds": None, "waiting_for": []}, PAUSE)
    assert step["action"] == "wait" and step["terminate"] == [] and step["drain"] == [] and step["validate"] == [] and step["wait_seconds"] == 5
    assert step["paused_by_alerts"] == ['NodeNetworkSaturated{severity="warning",team="platform"}']
    assert step["waiting_for"] == ['pause alert NodeNetworkSaturated{severity="warning",team="platform"} to clear (rolling_update_pause_alerts)']
    wait = {"action": "wait", "terminate": [], "drain": [], "waiting_for": ["1 new instance(s) to become Ready nodes"]}
    assert control.hold_for_alerts(dict(wait), PAUSE) == wait
    run = {"action": "run", "terminate": ["i-1"], "drain": [], "waiting_for": []}
    assert control.hold_for_alerts(dict(run), []) == run


def test_a_pause_alert_that_outlasts_its_timeout_stops_the_run_paused():
    assert control.alerts_stop(PAUSE, 599, 600) is None
    assert control.alerts_stop([], 900, 600) is None
    stop = control.alerts_stop(PAUSE, 600, 600)
    assert stop["stop"] == "pause" and stop["reason"] == control.PAUSED_ALERT == "alert firing" and stop["alarms"] == []
    assert stop["message"].startswith('pause alert NodeNetworkSaturated{severity="warning",team="platform"} is firing after 600s '
                                      '(rolling_update_pause_alerts_timeout)')
