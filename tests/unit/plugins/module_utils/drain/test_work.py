# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""drain/work.py: what a drain does with each pod, what each API answer changes, and how a node's drain ends."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.drain import work as dw
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import drain_options
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import pdb, pod

OPTIONS = drain_options({})


def node_result():
    return {"skipped": [], "downtime": [], "evicted": [], "deleted": [], "eviction_retries": 0}


def decide(one, pdbs=(), restart=None, disable_eviction=False):
    result = node_result()
    work = dw.pod_work(one, OPTIONS, disable_eviction, list(pdbs), lambda _pod: restart, result)
    return work, result


def test_daemonset_pods_are_left_alone_and_terminating_pods_waited_for():
    work, result = decide(pod("ds", owner=("DaemonSet", "fluent-bit")))
    assert (work.mode, work.state) == ("ignore", "ignored")
    assert result["skipped"] == [{"pod": "default/ds", "reason": "managed by DaemonSet fluent-bit"}]
    work, result = decide(pod("old", deleting=True))
    assert (work.mode, work.state) == ("wait", "sent")
    assert result["skipped"][0]["reason"] == "already terminating; waited for until gone"


def test_a_pod_under_one_budget_is_evicted_paced_by_that_budget():
    work, _result = decide(pod("web-1"), pdbs=[pdb("web", min_available=1)])
    assert (work.mode, work.state, work.pdb) == ("evict", "todo", "default/web")


def test_a_naked_pod_is_blocked_naming_why():
    work, _result = decide(pod("debug", owner=None))
    assert work.state == "blocked" and work.blocking["kind"] == "naked_pod"
    assert "set force" in work.why


def test_a_single_replica_deployment_not_restarted_is_evicted_and_listed_as_downtime():
    restart = {"restart": False, "replicas": 1, "deployment": "default/web", "reason": "its rolling update may stop the pod first"}
    work, result = decide(pod("web-1"), restart=restart)
    assert work.mode == "evict" and work.note == restart["reason"]
    assert result["downtime"][0]["deployment"] == "default/web"
    restarting = dict(restart, restart=True)
    work, result = decide(pod("web-1"), restart=restarting)
    assert work.mode == "restart" and work.restart is restarting and result["downtime"] == []


def test_an_accepted_eviction_tells_the_budget_gate():
    work, _result = decide(pod("web-1"), pdbs=[pdb("web", min_available=1)])
    result = node_result()
    gate = dw.apply_answer(work, {"kind": "done", "message": "", "pdb": None}, 10.0, lambda attempts: 2.0, None, False, [], result)
    assert gate == ("accepted", "default/web")
    assert work.state == "sent" and result["evicted"] == ["default/web-1"]


def test_a_refused_eviction_is_retried_and_closes_its_budget():
    budgets = [pdb("web", min_available=1)]
    work, _result = decide(pod("web-1"), pdbs=budgets)
    result = node_result()
    answer = {"kind": "pdb", "message": "Cannot evict pod as it would violate the pod's disruption budget.", "pdb": "web"}
    gate = dw.apply_answer(work, answer, 10.0, lambda attempts: 2.5 * attempts, None, False, budgets, result)
    assert gate == ("refused", "default/web")
    assert (work.state, work.attempts, work.next_try) == ("todo", 1, 12.5)
    assert result["eviction_retries"] == 1
    assert work.blocking == {"pod": "default/web-1", "kind": "pdb", "pdb": "default/web", "message": answer["message"]}
    assert work.why.startswith("eviction refused by PodDisruptionBudget default/web")


def test_a_pod_under_two_budgets_is_blocked_naming_both():
    budgets = [pdb("a", min_available=1), pdb("b", max_unavailable=0)]
    work, _result = decide(pod("web-1"), pdbs=budgets)
    work.state = "todo"   # the API, not the pre-flight, found it here
    gate = dw.apply_answer(work, {"kind": "multiple_pdbs", "message": "This pod has more than one PodDisruptionBudget",
                                  "pdb": None}, 1.0, lambda attempts: 1.0, None, False, budgets, node_result())
    assert gate is None and work.state == "blocked"
    assert work.blocking["pdb"] == "default/a, default/b" and work.blocking["kind"] == "multiple_pdbs"


def test_a_restart_whose_deployment_is_gone_falls_back_to_the_eviction():
    restart = {"restart": True, "replicas": 1, "deployment": "default/web", "reason": "restarted"}
    work, _result = decide(pod("web-1"), restart=restart)
    assert dw.apply_answer(work, {"kind": "fallback", "message": "", "pdb": None}, 5.0, lambda attempts: 4.0, None, False, [],
                           node_result()) is None
    assert (work.mode, work.next_try) == ("evict", 5.0)


def test_a_budget_that_holds_a_pod_is_named_with_its_numbers():
    work, _result = decide(pod("web-1"), pdbs=[pdb("web", min_available=1)])
    dw.budget_wait(work, {"disruptionsAllowed": 0, "desiredHealthy": 2, "currentHealthy": 2})
    assert work.blocking["message"] == "PodDisruptionBudget default/web allows 0 disruption(s): it needs 2 healthy pods and has 2"
    assert work.why == "waiting: " + work.blocking["message"]


def test_how_a_node_ends():
    assert dw.node_outcome("n1", [], None, False, False, [], 3.0, 900) == {"status": "drained", "message": "node n1 drained"}
    forced = dw.node_outcome("n1", [], "force", False, True, ["default/a"], 3.0, 900)
    assert forced["status"] == "drained" and forced["forced"] is True and "1 pod(s) deleted without eviction" in forced["message"]

    work, _result = decide(pod("web-1"), pdbs=[pdb("web", min_available=1)])
    dw.budget_wait(work, {"disruptionsAllowed": 0})
    skipped = dw.node_outcome("n1", [work], "skip", False, False, [], 900.0, 900)
    assert skipped["status"] == "skipped" and skipped["remaining"] == ["default/web-1"]
    assert skipped["message"].startswith("node n1 skipped and left cordoned (timeout 900s reached): 1 pod(s) still there")
    failed = dw.node_outcome("n1", [work], "fail", True, False, [], 5.0, 900)
    assert failed["status"] == "failed" and failed["blocking"] == [work.blocking]


def test_unconfirmed_are_the_sent_pods_past_their_grace_by_the_slack():
    from datetime import datetime, timezone  # pylint: disable=import-outside-toplevel
    ending = {"metadata": {"name": "web-1", "namespace": "shop", "uid": "u1", "deletionTimestamp": "2026-11-25T07:00:00Z"}}
    live = {"metadata": {"name": "web-2", "namespace": "shop", "uid": "u2"}}
    works = {"a": dw.PodWork(ending, "evict"), "b": dw.PodWork(live, "evict"), "c": dw.PodWork(ending, "ignore")}
    works["a"].state = works["b"].state = "sent"
    now = datetime(2026, 11, 25, 7, 0, 10, tzinfo=timezone.utc)
    assert dw.unconfirmed(works, now) == [works["a"]]
    assert dw.unconfirmed(works, now, slack=11) == []
