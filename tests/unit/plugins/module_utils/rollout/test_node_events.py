# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What kubectl describe node shows of a rollout: the wording and the shape of the Events."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.result import node_result
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import node_events as ev

RUN = "awx-job-12@ctl/9f8e"
CONTEXT = {"enabled": True, "run": RUN, "target": "launch template lt-0abc version 7 (ami-0130)"}


def test_the_run_is_the_lock_holder_unless_named():
    assert ev.event_context(None, {"holder": RUN}) == {"enabled": True, "run": RUN, "target": None}
    assert ev.event_context({"run": "other", "target": "v7", "enabled": None}, {"holder": RUN})["run"] == "other"
    assert ev.event_context({"enabled": False}, None) == {"enabled": False, "run": None, "target": None}


def test_taint_and_cordon_say_who_and_why():
    found = ev.edit_events("n1", ["taint nodeops.rollout/outdated=true:NoSchedule added", "cordoned",
                                  "label node.kubernetes.io/exclude-from-external-load-balancers=true set"], CONTEXT)
    assert [(kind, reason) for kind, reason, _message in found] == [("Normal", "RolloutCordoned"), ("Normal", "RolloutTainted")]
    assert found[1][2] == ("Tainted nodeops.rollout/outdated=true:NoSchedule by rollout run %s, rolling to launch template "
                           "lt-0abc version 7 (ami-0130): no new pod is scheduled here" % RUN)
    assert RUN in found[0][2] and "lt-0abc version 7" in found[0][2]


def test_a_soft_taint_says_what_it_means():
    [(_kind, reason, message)] = ev.edit_events("n1", ["taint nodeops.rollout/queued=true:PreferNoSchedule added"], {"run": "r"})
    assert reason == "RolloutTainted"
    assert message == "Tainted nodeops.rollout/queued=true:PreferNoSchedule by rollout run r: new pods go to other nodes where they can"


def test_labels_and_annotations_alone_make_no_event():
    assert ev.edit_events("n1", ["annotation cluster-autoscaler.kubernetes.io/scale-down-disabled=true set"], CONTEXT) == []


def test_release_says_untainted_and_uncordoned():
    found = ev.edit_events("n1", ["taint nodeops.rollout/outdated=true:NoSchedule removed", "uncordoned"], {"run": None})
    assert [reason for _kind, reason, _message in found] == ["RolloutUncordoned", "RolloutUntainted"]
    assert found[1][2] == "Taint nodeops.rollout/outdated=true:NoSchedule removed by nodeops.rollout"


def test_a_drained_node_counts_what_moved():
    result = node_result("drained", evicted=["shop/a", "shop/b"], restarted=[{"pod": "shop/c"}], seconds=12.4)
    assert ev.drain_event("n1", result, CONTEXT) == (
        "Normal", "DrainSucceeded", "Drained in 12s by rollout run %s, rolling to launch template lt-0abc version 7 (ami-0130): "
        "2 pod(s) evicted, 1 restarted on new nodes" % RUN)


def test_a_blocked_drain_names_the_pods_and_budgets():
    blocking = [{"pod": "shop/web-%d" % i, "kind": "pdb", "pdb": "shop/web", "message": "0 disruptions allowed"} for i in range(7)]
    kind, reason, message = ev.drain_event("n1", node_result("skipped", blocking=blocking, seconds=900), CONTEXT)
    assert (kind, reason) == ("Warning", "DrainBlocked")
    assert message.startswith("Drain skipped after 900s by rollout run %s" % RUN)
    assert "blocked by shop/web-0 (PodDisruptionBudget shop/web): 0 disruptions allowed" in message
    assert message.endswith("and 2 more")
    kind, reason, message = ev.drain_event("n1", node_result("failed", remaining=["shop/x"], message="timeout"), {})
    assert (kind, reason) == ("Warning", "DrainFailed") and "1 pod(s) still there: shop/x" in message


def test_a_drain_refused_before_any_change():
    _kind, reason, message = ev.drain_event("n2", node_result("not started", message=""), CONTEXT)
    assert reason == "DrainBlocked" and "another node of the same drain" in message and "nothing was changed" in message


def test_termination_and_message_limit():
    _kind, reason, message = ev.termination_event("i-0abc", "workers", True, CONTEXT)
    assert reason == "RolloutTerminating"
    assert message.startswith("Terminating instance i-0abc through Auto Scaling group workers (desired capacity decremented)")
    long = ev.drain_event("n1", node_result("skipped", blocking=[{"pod": "p", "pdb": None, "message": "x" * 3000}]), CONTEXT)[2]
    assert len(long) == ev.MESSAGE_LIMIT and long.endswith("...")


def test_the_event_is_about_the_node_as_kubectl_describe_searches():
    node = {"metadata": {"name": "ip-10-0-1-5.ec2.internal", "uid": "5f0c"}}
    body = ev.event_body(node, ("Normal", "RolloutCordoned", "Cordoned"), "2026-01-01T00:00:00Z", RUN)
    assert body["metadata"] == {"generateName": "ip-10-0-1-5.ec2.internal.", "namespace": "default"}
    assert body["involvedObject"] == {"apiVersion": "v1", "kind": "Node", "name": "ip-10-0-1-5.ec2.internal", "uid": "5f0c"}
    assert body["source"] == {"component": "nodeops.rollout"} and body["reportingComponent"] == "nodeops.rollout"
    assert body["reportingInstance"] == RUN and body["count"] == 1 and body["firstTimestamp"] == body["lastTimestamp"]
    assert ev.target_text("lt-1", 7, "ami-1") == "launch template lt-1 version 7 (ami-1)" and ev.target_text() is None
