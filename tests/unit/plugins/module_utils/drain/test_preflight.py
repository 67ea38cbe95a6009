# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""drain/preflight.py: every blocker of a batch before anything is drained."""

from __future__ import annotations

import json

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.implicit import implicit_budget
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.preflight import (
    drain_preflight, eviction_preflight, stop_message, upgrade_stops)
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import assert_plan_error, pdb, pod


# ---------------------------------------------------------------------------------------------------------
# Eviction pre-flight
# ---------------------------------------------------------------------------------------------------------

def kinds(report, node="node-1"):
    return sorted(blocker["kind"] for blocker in report[node]["blockers"])


def test_preflight_clean_node_is_ok():
    web = [pod("web-%d" % n, node="node-%d" % n) for n in range(3)]
    ds = pod("agent", owner=("DaemonSet", "agent"), node="node-1", labels={"app": "agent"})
    job = pod("job-1", owner=("Job", "j"), phase="Succeeded", ready=False, node="node-1", labels={"app": "job"})
    report = eviction_preflight({"node-1": [web[1], ds, job]}, web + [ds, job], [pdb("p", max_unavailable=1)])
    assert report["node-1"] == {"would_evict": ["default/web-1"], "would_delete": ["default/job-1"],
                                "skipped": [{"pod": "default/agent", "reason": "managed by DaemonSet agent"}],
                                "blockers": [], "predicted": "ok"}


def test_preflight_pdb_zero_with_single_replica():
    only = pod("api-0", owner=("ReplicaSet", "api-1"), labels={"app": "api"})
    budget = pdb("api", selector={"matchLabels": {"app": "api"}}, min_available=1)
    report = eviction_preflight({"node-1": [only]}, [only], [budget])
    assert kinds(report) == ["pdb_zero", "single_replica"]
    zero = [blocker for blocker in report["node-1"]["blockers"] if blocker["kind"] == "pdb_zero"][0]
    assert zero["pdb"] == "default/api" and zero["pod"] == "default/api-0" and zero["severity"] == "error"
    assert "allows 0 disruptions: it needs 1 healthy pods and has 1" in zero["reason"]
    assert "can never allow one" in zero["reason"]
    single = [blocker for blocker in report["node-1"]["blockers"] if blocker["kind"] == "single_replica"][0]
    assert single["severity"] == "warning" and single["owner"] == "ReplicaSet/api-1"
    assert "ReplicaSet default/api-1 has 1 replica" in single["reason"]
    assert report["node-1"]["predicted"] == "blocked"


def test_preflight_pdb_insufficient_counts_the_whole_batch():
    pods = [pod("web-0", node="node-1"), pod("web-1", node="node-1"), pod("web-2", node="node-2"), pod("web-3", node="node-3")]
    budget = pdb("web", max_unavailable=1)
    report = eviction_preflight({"node-1": pods[:2], "node-2": pods[2:3]}, pods, [budget])
    assert kinds(report, "node-1") == ["pdb_insufficient", "pdb_insufficient"]
    assert kinds(report, "node-2") == ["pdb_insufficient"]
    reason = report["node-2"]["blockers"][0]["reason"]
    assert "allows 1 disruption(s) but 3 of its pods are on the nodes drained together" in reason
    assert report["node-1"]["predicted"] == "ok"  # slower, not stuck
    # One node alone fits the budget.
    alone = eviction_preflight({"node-2": pods[2:3]}, pods, [budget])
    assert alone["node-2"]["blockers"] == []


def test_preflight_with_waves_counts_a_budgets_pods_wave_by_wave():
    pods = [pod("web-0", node="node-1"), pod("web-1", node="node-1"), pod("web-2", node="node-2"), pod("web-3", node="node-3")]
    budget = pdb("web", max_unavailable=2)
    nodes = {"node-1": pods[:2], "node-2": pods[2:3], "node-3": pods[3:]}
    # drained together, 4 of its pods against 2 disruptions; in the waves the rollout drains, at most 2 in one wave
    assert kinds(eviction_preflight(nodes, pods, [budget]), "node-3") == ["pdb_insufficient"]
    apart = eviction_preflight(nodes, pods, [budget], waves=[["node-1"], ["node-2", "node-3"]])
    assert sorted(apart) == ["node-1", "node-2", "node-3"] and all(entry["blockers"] == [] for entry in apart.values()), apart
    # a wave that holds more than the budget allows is named as one wave; a node in no wave counts with the others
    crowded = eviction_preflight(nodes, pods, [pdb("web", max_unavailable=1)], waves=[["node-1"], ["node-2"]])
    assert kinds(crowded, "node-1") == ["pdb_insufficient", "pdb_insufficient"] and kinds(crowded, "node-2") == []
    assert "1 disruption(s) but 2 of its pods are on the nodes of one wave" in crowded["node-1"]["blockers"][0]["reason"]
    assert kinds(crowded, "node-3") == []
    assert_plan_error(lambda: eviction_preflight(nodes, pods, [budget], waves=[["node-1"], "node-2"]),
                      "waves", "a list of lists of node names")


def test_preflight_multiple_pdbs():
    web = pod("web-0")
    others = [pod("web-1", node="node-2"), pod("web-2", node="node-3")]
    pdbs = [pdb("a", max_unavailable=1), pdb("b", selector={}, max_unavailable=1)]
    report = eviction_preflight({"node-1": [web]}, [web] + others, pdbs)
    blocker = report["node-1"]["blockers"][0]
    assert kinds(report) == ["multiple_pdbs"]
    assert blocker["pdb"] == "default/a, default/b" and "HTTP 500" in blocker["reason"]
    assert report["node-1"]["predicted"] == "blocked"


def test_preflight_multiple_pdbs_do_not_matter_for_pods_the_api_deletes_directly():
    pending = pod("web-0", phase="Pending", ready=False)
    pdbs = [pdb("a", max_unavailable=1), pdb("b", selector={}, max_unavailable=1)]
    report = eviction_preflight({"node-1": [pending]}, [pending], pdbs)
    assert kinds(report) == ["single_replica"]


def test_preflight_option_blockers():
    pods = [pod("debug", owner=None), pod("cache", volumes=[{"name": "c", "emptyDir": {}}], owner=("ReplicaSet", "cache-1")),
            pod("batch", annotations={"karpenter.sh/do-not-disrupt": "true"}, owner=("ReplicaSet", "batch-1"))]
    replicas = {"default/ReplicaSet/cache-1": 2, "default/ReplicaSet/batch-1": 2}
    report = eviction_preflight({"node-1": pods}, pods, [], replicas_by_owner=replicas)
    by_pod = {blocker["pod"]: blocker for blocker in report["node-1"]["blockers"]}
    assert by_pod["default/debug"]["kind"] == "naked_pod"
    assert by_pod["default/cache"]["kind"] == "emptydir"
    assert by_pod["default/batch"]["kind"] == "do_not_disrupt"
    assert all(blocker["severity"] == "error" and blocker["pdb"] is None for blocker in by_pod.values())
    assert report["node-1"]["would_evict"] == []
    assert report["node-1"]["predicted"] == "blocked"
    forced = eviction_preflight({"node-1": pods}, pods, [], {"force": True, "delete_emptydir_data": True}, replicas)
    assert forced["node-1"]["blockers"] == [] and len(forced["node-1"]["would_evict"]) == 3
    assert forced["node-1"]["predicted"] == "ok"


def test_preflight_single_replica_uses_the_replica_map_when_given():
    one = pod("web-0", owner=("ReplicaSet", "web-1"))
    assert eviction_preflight({"node-1": [one]}, [one], [])["node-1"]["predicted"] == "downtime"
    scaled = eviction_preflight({"node-1": [one]}, [one], [], replicas_by_owner={"default/ReplicaSet/web-1": 3})
    assert scaled["node-1"]["blockers"] == [] and scaled["node-1"]["predicted"] == "ok"
    two = [one, pod("web-1", owner=("ReplicaSet", "web-1"), node="node-2")]
    assert eviction_preflight({"node-1": [one]}, two, [])["node-1"]["blockers"] == []
    # A Job is not a replicated workload.
    job = pod("job-0", owner=("Job", "j"))
    assert eviction_preflight({"node-1": [job]}, [job], [])["node-1"]["blockers"] == []


@pytest.mark.parametrize("toleration, flagged", [
    ({"operator": "Exists"}, True),
    ({"operator": "Exists", "effect": "NoSchedule"}, True),
    ({"operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "dedicated", "operator": "Exists"}, False),
    ({"key": "dedicated", "operator": "Equal", "value": "x"}, False),
])
def test_preflight_tolerates_all(toleration, flagged):
    pods = [pod("web-0", tolerations=[toleration]), pod("web-1", node="node-2")]
    report = eviction_preflight({"node-1": pods[:1]}, pods, [])
    assert (kinds(report) == ["tolerates_all"]) is flagged
    if flagged:
        assert report["node-1"]["blockers"][0]["severity"] == "warning"
        assert report["node-1"]["predicted"] == "ok"


def test_preflight_tolerates_all_follows_the_taint_effect():
    pods = [pod("web-0", tolerations=[{"operator": "Exists", "effect": "PreferNoSchedule"}]), pod("web-1", node="node-2")]
    assert kinds(eviction_preflight({"node-1": pods[:1]}, pods, [])) == []
    soft = eviction_preflight({"node-1": pods[:1]}, pods, [], {"taint_effect": "PreferNoSchedule"})
    assert kinds(soft) == ["tolerates_all"]


def test_preflight_unready_pods_follow_the_eviction_handler():
    budget = pdb("web", min_available=2)
    # Budget satisfied by the other two: the unready pod leaves without using a disruption.
    pods = [pod("web-0", ready=False), pod("web-1", node="node-2"), pod("web-2", node="node-3")]
    assert kinds(eviction_preflight({"node-1": pods[:1]}, pods, [budget])) == []
    # Budget not satisfied: the unready pod needs a disruption there is none of.
    pods = [pod("web-0", ready=False), pod("web-1", node="node-2"), pod("web-2", ready=False, node="node-3")]
    assert kinds(eviction_preflight({"node-1": pods[:1]}, pods, [budget])) == ["pdb_zero"]
    # ... unless the budget lets unhealthy pods go.
    lenient = pdb("web", min_available=2, spec_extra={"unhealthyPodEvictionPolicy": "AlwaysAllow"})
    assert kinds(eviction_preflight({"node-1": pods[:1]}, pods, [lenient])) == []


def test_preflight_expected_pods_from_the_replica_map():
    pods = [pod("web-0"), pod("web-1", node="node-2")]
    budget = pdb("web", max_unavailable=1)
    assert kinds(eviction_preflight({"node-1": pods[:1]}, pods, [budget])) == []
    short = eviction_preflight({"node-1": pods[:1]}, pods, [budget], replicas_by_owner={"default/ReplicaSet/web-abc": 3})
    assert kinds(short) == ["pdb_zero"]
    assert "needs 2 healthy pods and has 2" in short["node-1"]["blockers"][0]["reason"]


def test_preflight_disable_eviction_turns_budgets_into_warnings():
    only = pod("api-0", owner=("ReplicaSet", "api-1"), labels={"app": "api"})
    other = pod("api-1", owner=("ReplicaSet", "api-1"), labels={"app": "api"}, node="node-2")
    pdbs = [pdb("api", selector={"matchLabels": {"app": "api"}}, min_available=2), pdb("all", selector={}, max_unavailable=0)]
    report = eviction_preflight({"node-1": [only]}, [only, other], pdbs, {"disable_eviction": True})
    node = report["node-1"]
    assert node["would_delete"] == ["default/api-0"] and node["would_evict"] == []
    assert kinds(report) == ["pdb_zero", "pdb_zero"]
    assert all(blocker["severity"] == "warning" and "breaks the budget" in blocker["reason"] for blocker in node["blockers"])
    assert node["predicted"] == "ok"


def test_preflight_terminating_pods_are_skipped_and_node_pods_missing_from_all_pods_count():
    leaving = pod("web-9", deleting=True)
    web = pod("web-0")
    report = eviction_preflight({"node-1": [leaving, web]}, [], [pdb("web", min_available=1)])
    assert report["node-1"]["skipped"] == [{"pod": "default/web-9", "reason": "already terminating"}]
    # web-0 is the only healthy pod and the budget wants one: nothing may go.
    assert kinds(report) == ["pdb_zero", "single_replica"]


def test_preflight_names_every_blocker_kind():
    pods = [
        pod("api-0", owner=("ReplicaSet", "api-1"), labels={"app": "api"}),                       # pdb_zero + single_replica
        pod("web-0", labels={"app": "web"}), pod("web-1", labels={"app": "web"}),                  # pdb_insufficient
        pod("two-0", owner=("ReplicaSet", "two-1"), labels={"app": "two", "team": "x"}),           # multiple_pdbs
        pod("naked", owner=None, labels={}),
        pod("cache-0", owner=("ReplicaSet", "cache-1"), labels={}, volumes=[{"name": "c", "emptyDir": {}}]),
        pod("keep-0", owner=("ReplicaSet", "keep-1"), labels={}, annotations={"nodeops.rollout/do-not-evict": "true"}),
        pod("mesh-0", owner=("ReplicaSet", "mesh-1"), labels={}, tolerations=[{"operator": "Exists"}]),
        pod("jobs-0", owner=("ReplicaSet", "jobs-1"), labels={"app": "jobs"}),                    # implicit_budget
    ]
    elsewhere = [pod("web-2", node="node-2"), pod("two-1", owner=("ReplicaSet", "two-1"), labels={"app": "two", "team": "x"}, node="node-2")]
    pdbs = [pdb("api", selector={"matchLabels": {"app": "api"}}, min_available=1), pdb("web", max_unavailable=1),
            pdb("two", selector={"matchLabels": {"app": "two"}}, max_unavailable=1),
            pdb("team", selector={"matchExpressions": [{"key": "team", "operator": "Exists"}]}, max_unavailable=1)]
    replicas = {"default/ReplicaSet/cache-1": 2, "default/ReplicaSet/keep-1": 2, "default/ReplicaSet/mesh-1": 2,
                "default/ReplicaSet/web-abc": 3, "default/ReplicaSet/two-1": 2}
    jobs = implicit_budget(pods[-1], {"default/jobs-1": {"metadata": {"name": "jobs-1", "namespace": "default"},
                                                         "spec": {"replicas": 2}}}, {})
    report = eviction_preflight({"node-1": pods}, pods + elsewhere, pdbs, replicas_by_owner=replicas,
                                implicit={"default/jobs-0": jobs})
    found = set(kinds(report))
    assert found == {"pdb_zero", "pdb_insufficient", "multiple_pdbs", "naked_pod", "emptydir", "do_not_disrupt",
                     "single_replica", "implicit_budget", "tolerates_all"}
    assert report["node-1"]["predicted"] == "blocked"
    json.dumps(report)


def test_preflight_bad_input():
    assert_plan_error(lambda: eviction_preflight([], [], []), "node_pods_by_node")
    assert_plan_error(lambda: eviction_preflight({"n": "x"}, [], []), "node_pods_by_node[n]")
    assert_plan_error(lambda: eviction_preflight({}, [], [], replicas_by_owner=[1]), "replicas_by_owner")
    one = pod("web-0")
    assert_plan_error(lambda: eviction_preflight({"node-1": [one]}, [one], [], replicas_by_owner={"default/ReplicaSet/web-abc": "3"}),
                      "replicas_by_owner[default/ReplicaSet/web-abc]")


# ---------------------------------------------------------------------------------------------------------
# What stops an upgrade before any change
# ---------------------------------------------------------------------------------------------------------

def _stopping(report, node="node-1"):
    return [(stop["pod"], stop["kind"]) for stop in report[node]["stops"]]


def test_a_budget_that_can_never_allow_an_eviction_stops_the_upgrade_under_fail_only():
    web = [pod("web-%d" % n, node="node-%d" % n, owner=("ReplicaSet", "web-1"), labels={"app": "web"}) for n in range(2)]
    never = pdb("web", selector={"matchLabels": {"app": "web"}}, min_available=2)
    report = drain_preflight({"node-1": web[1:]}, web, [never], None, {"default/ReplicaSet/web-1": 2}, {}, "fail")
    assert _stopping(report) == [("default/web-1", "pdb_zero")]
    [stop] = report["node-1"]["stops"]
    assert [(entry["option"], entry["value"]) for entry in stop["gets_past"]] == [("timeout_action", "force"), ("timeout_action", "skip")]
    # force deletes it after the timeout, skip leaves the node: neither stops
    for action in ("force", "skip"):
        assert drain_preflight({"node-1": web[1:]}, web, [never], None, {"default/ReplicaSet/web-1": 2}, {}, action)["node-1"]["stops"] == []


def test_a_budget_at_zero_for_now_only_is_waited_for_not_a_stop():
    # three replicas, two needed, one not Ready: no disruption now, one once it is Ready
    web = [pod("web-%d" % n, node="node-%d" % n, owner=("ReplicaSet", "web-1"), labels={"app": "web"}, ready=n != 2)
           for n in range(3)]
    budget = pdb("web", selector={"matchLabels": {"app": "web"}}, min_available=2)
    report = drain_preflight({"node-1": web[1:2]}, web, [budget], None, {"default/ReplicaSet/web-1": 3}, {}, "fail")
    assert [b["kind"] for b in report["node-1"]["blockers"]] == ["pdb_zero"] and report["node-1"]["stops"] == []


def test_a_single_replica_pod_held_by_its_budget_gets_past_with_a_restart_and_the_option_blockers_name_theirs():
    only = pod("api-0", owner=("ReplicaSet", "api-1"), labels={"app": "api"})
    budget = pdb("api", selector={"matchLabels": {"app": "api"}}, min_available=1)
    report = drain_preflight({"node-1": [only]}, [only], [budget], None, None, {}, "fail")
    [stop] = report["node-1"]["stops"]
    assert stop["gets_past"][0] == {"option": "restart_single_replica", "value": True,
                                    "effect": "a Deployment's pod is restarted through its rolling update instead of evicted"}
    naked = pod("debug", owner=None, labels={"app": "debug"})
    report = drain_preflight({"node-1": [naked]}, [naked], [], None, None, {}, "fail")
    assert _stopping(report) == [("default/debug", "naked_pod")]
    assert report["node-1"]["stops"][0]["gets_past"][0]["option"] == "force"
    # with the option, nothing is left to stop on
    assert drain_preflight({"node-1": [naked]}, [naked], [], {"force": True}, None, {}, "fail")["node-1"]["stops"] == []


def test_the_stop_message_names_each_pod_its_node_why_and_what_gets_past_it():
    stops = [{"node": "n1", "pod": "shop/a", "message": "held", "gets_past": [{"option": "force", "value": True, "effect": "x"}]},
             {"node": "n1", "pod": "shop/b", "message": "held too", "gets_past": []}]
    assert stop_message([]) is None
    assert stop_message(stops, {"force": "rolling_update_force"}) == (
        "the upgrade would stop at the drain of 1 node(s), whatever it waited for: pod shop/a on node n1: held; gets past "
        "with rolling_update_force: true (x); pod shop/b on node n1: held too. Nothing was changed: fix what holds them (a "
        "budget: relax it or add replicas), or run with an option named above")
    assert upgrade_stops({"blockers": [{"pod": "p", "kind": "naked_pod", "severity": "error"}]}, "skip") == []
