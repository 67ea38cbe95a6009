# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""validate.Validation: the healthy state held long enough by the API's record (else consecutive passes), interval,
timeout, check mode."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import HealthError
from ansible_collections.nodeops.rollout.plugins.module_utils.runners import validate
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fake_kube import FakeKube, make_node, make_pod


class Clock:
    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


T0 = datetime(2026, 11, 28, 12, 0, 0, tzinfo=timezone.utc)


def stamp(seconds):
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def ready_at(obj, seconds):
    """``obj`` (a node or pod) with its Ready condition turned True at T0 + ``seconds``."""
    obj["status"]["conditions"][0]["lastTransitionTime"] = stamp(seconds)
    return obj


def validation(kube, clock, **params):
    return validate.Validation(kube, opts(**params), clock=clock, sleep=clock.sleep,
                               wall=lambda: T0 + timedelta(seconds=clock.now))


def opts(**params):
    return validate.ValidateOptions(params)


class Scripted(FakeKube):
    """Nodes appear and become Ready as evaluations go by: ``script[i]`` is the node list of evaluation i."""

    def __init__(self, script):
        super().__init__()
        self.script = script
        self.calls = 0

    def list_nodes(self, label_selector=None):
        nodes = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        return nodes


def test_fails_then_passes_as_nodes_come_up():
    kube = Scripted([[], [make_node("a", instance_id="i-1", ready=False)], [make_node("a", instance_id="i-1")],
                     [make_node("a", instance_id="i-1")]])
    clock = Clock()
    result = validate.Validation(kube, opts(instance_ids=["i-1"], passes=2, interval=5, timeout=60), clock=clock,
                                 sleep=clock.sleep).run()
    assert result["ok"] and result["passes_done"] == 2 and result["evaluations"] == 4
    assert clock.sleeps == [5, 5, 5]
    assert result["msg"] == "valid: 1 node(s) Ready and schedulable in us-east-1a (2 consecutive passes)"
    assert [(entry["seconds"], entry["ok"]) for entry in result["history"]] == [(0, False), (5, False), (10, True)]
    assert result["history"][0]["message"] == "not valid: 1 of 1 instance(s) have no node registered: i-1"
    assert result["history"][1]["message"].startswith("not valid: node a (i-1) not Ready")


def test_a_failure_between_passes_starts_the_count_again():
    good = [make_node("a", instance_id="i-1")]
    bad = [make_node("a", instance_id="i-1", ready=False)]
    kube = Scripted([good, bad, good, good])
    clock = Clock()
    result = validate.Validation(kube, opts(instance_ids=["i-1"], passes=2, interval=1, timeout=60), clock=clock,
                                 sleep=clock.sleep).run()
    assert result["ok"] and result["evaluations"] == 4


def test_timeout_fails_with_what_exactly_failed():
    kube = Scripted([[make_node("a", instance_id="i-1", az="us-east-1a")]])
    clock = Clock()
    result = validate.Validation(kube, opts(instance_ids=["i-1", "i-2"], interval=10, timeout=30, each_az=True,
                                            azs=["us-east-1a", "us-east-1b"]), clock=clock, sleep=clock.sleep).run()
    assert result["failed"] and not result["ok"]
    assert result["missing"] == ["i-2"] and result["azs_without_ready_node"] == ["us-east-1b"]
    assert result["msg"] == ("NodeCreationFailure: 1 of 2 instance(s) did not become Ready nodes within 30s (i-2): not valid: "
                             "1 of 2 instance(s) have no node registered: i-2; no Ready schedulable node in AZ(s) us-east-1b")


def test_a_timeout_with_every_new_node_ready_is_a_validation_failure_not_a_node_creation_failure():
    kube = Scripted([[make_node("a", instance_id="i-1", az="us-east-1a")]])
    clock = Clock()
    result = validate.Validation(kube, opts(instance_ids=["i-1"], interval=10, timeout=30, each_az=True,
                                            azs=["us-east-1a", "us-east-1b"]), clock=clock, sleep=clock.sleep).run()
    assert result["failed"]
    assert result["msg"] == "cluster validation timed out after 30s: not valid: no Ready schedulable node in AZ(s) us-east-1b"


def test_too_few_consecutive_passes_at_the_timeout_is_a_failure_that_says_so():
    good = [make_node("a", instance_id="i-1")]
    kube = Scripted([[], [], good])
    clock = Clock()
    result = validate.Validation(kube, opts(instance_ids=["i-1"], passes=3, interval=10, timeout=25), clock=clock,
                                 sleep=clock.sleep).run()
    assert result["failed"] and not result["ok"] and result["passes_done"] == 1
    assert "valid only 1 time(s) in a row, 3 required" in result["msg"]


def test_check_mode_evaluates_once_and_does_not_fail():
    kube = Scripted([[]])
    clock = Clock()
    result = validate.Validation(kube, opts(instance_ids=["i-1"], passes=3), check_mode=True, clock=clock, sleep=clock.sleep).run()
    assert "failed" not in result and not result["ok"] and result["evaluations"] == 1 and clock.sleeps == []
    assert result["msg"].startswith("check mode, one evaluation: not valid: 1 of 1 instance(s) have no node registered")


def test_label_selector_and_critical_pods_are_read_from_the_api():
    kube = FakeKube()
    kube.add_node(make_node("a", labels={"group": "workers"}))
    kube.add_node(make_node("b", labels={"group": "other"}))
    result = validate.Validation(kube, opts(label_selector="group=workers", expected_count=1, critical_pods=True,
                                            critical_namespaces=["kube-system", "dns"])).run()
    assert result["ok"] and list(result["nodes"]) == ["a"]
    assert ("list_pods", "kube-system") in kube.requests and ("list_pods", "dns") in kube.requests


@pytest.mark.parametrize("params, message", [
    ({}, "instance_ids or label_selector is required"),
    ({"label_selector": "a=b"}, "expected_count: None is not allowed"),
    ({"instance_ids": ["i-1"], "passes": 0}, "passes: 0 is not allowed"),
    ({"instance_ids": ["i-1"], "interval": "often"}, "interval: 'often' is not allowed"),
    ({"instance_ids": ["node-a"]}, "instance_ids[0]: 'node-a' is not allowed"),
])
def test_bad_options_name_the_field(params, message):
    with pytest.raises((HealthError, ValueError)) as info:
        validate.ValidateOptions(params)
    assert message in str(info.value)


def test_nodes_ready_longer_than_the_passes_span_are_valid_at_once_without_a_wait():
    kube = Scripted([[ready_at(make_node("a", instance_id="i-1"), -300)]])
    clock = Clock()
    result = validation(kube, clock, instance_ids=["i-1"], passes=2, interval=10, timeout=60).run()
    assert result["ok"] and result["evaluations"] == 1 and clock.sleeps == []
    assert result["passes_done"] == 2 and result["held_seconds"] == 299
    assert result["msg"] == "valid: 1 node(s) Ready and schedulable in us-east-1a (Ready for 299s, 2 passes 10s apart required)"


def test_a_node_ready_for_part_of_the_span_is_read_again_once_the_rest_has_passed():
    node = ready_at(make_node("a", instance_id="i-1"), -3)
    kube = Scripted([[node], [node]])
    clock = Clock()
    result = validation(kube, clock, instance_ids=["i-1"], passes=3, interval=10, timeout=60).run()
    # Ready 3s by a record to the second: 2s held of the 20s two intervals ask, then the 18s left, not 2 x 10s more
    assert result["ok"] and result["evaluations"] == 2 and clock.sleeps == [18]


def test_a_node_that_flapped_in_between_starts_the_span_again():
    kube = Scripted([[ready_at(make_node("a", instance_id="i-1"), -3)], [ready_at(make_node("a", instance_id="i-1"), 7)],
                     [ready_at(make_node("a", instance_id="i-1"), 7)]])
    clock = Clock()
    result = validation(kube, clock, instance_ids=["i-1"], passes=2, interval=10, timeout=60).run()
    # read at 0 (held 2s: wait 8), at 8 (turned Ready again at 7: held 0s, wait 10), at 18: held 10s
    assert result["ok"] and result["evaluations"] == 3 and clock.sleeps == [8, 10]


def test_a_critical_pod_that_just_turned_ready_holds_the_validation_for_its_own_span():
    kube = Scripted([[ready_at(make_node("a", instance_id="i-1"), -300)]])
    kube.pods = [ready_at(make_pod("proxy", "a", namespace="kube-system", priority="system-node-critical"), -4)]
    kube.list_pods = lambda namespace=None: [pod for pod in kube.pods if pod["metadata"]["namespace"] == namespace]
    clock = Clock()
    result = validation(kube, clock, instance_ids=["i-1"], passes=2, interval=10, timeout=60, critical_pods=True).run()
    assert result["ok"] and clock.sleeps == [7] and result["evaluations"] == 2


def test_a_state_that_cannot_hold_long_enough_before_the_timeout_says_how_long_it_held():
    kube = Scripted([[ready_at(make_node("a", instance_id="i-1"), -2)]])
    clock = Clock()
    result = validation(kube, clock, instance_ids=["i-1"], passes=4, interval=10, timeout=20).run()
    assert result["failed"] and not result["ok"] and clock.sleeps == []
    assert "valid for only 1s of the 30s required (4 passes 10s apart) when the timeout of 20s was reached" in result["msg"]
