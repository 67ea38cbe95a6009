# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The plan as a person reads it: a heading, the waves as a table, blockers grouped by kind; no Python reprs."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.filter.plan_lines import FilterModule
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_text import human_duration, plan_lines

PLAN = {
    "outdated_count": 10, "surge": 6, "batch_size": 1, "canary": False, "taint_effect": "PreferNoSchedule",
    "eta_seconds": 412,
    "batches": [
        {"index": 1, "canary": False, "instance_ids": ["i-%d" % n for n in range(7)],
         "azs": ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1a", "us-east-1b", "us-east-1c", "us-east-1a"],
         "nodes": ["node-%d" % n for n in range(7)]},
        {"index": 2, "canary": False, "instance_ids": ["i-7", "i-8", "i-9"], "azs": ["us-east-1b", "us-east-1c", None],
         "nodes": ["node-7", "node-8", None]},
    ],
}
TARGET = {"launch_template_id": "lt-0abc", "version": 5, "image_id": "ami-0123"}


def test_heading_settings_and_waves_read_as_text_and_a_table():
    lines = plan_lines(PLAN, "workers", 10, TARGET, preflight={})
    assert lines[0] == "workers: 10 outdated of 10 instances; target launch template lt-0abc version 5, image ami-0123"
    assert lines[1] == ("surge 6, max unavailable 1, outdated nodes tainted PreferNoSchedule; 2 drain waves, "
                        "estimated 6m 52s")
    assert lines[2].split() == ["wave", "nodes", "AZs", "node", "names"]
    assert lines[3].startswith("1     7      us-east-1a 3, us-east-1b 2, us-east-1c 2  node-0, node-1")
    assert lines[4].endswith("node-7, node-8, (no node)") and "? 1" in lines[4]
    assert lines[5:] == ["blockers: none", "warnings: none"]
    assert not any("{" in line or "[" in line for line in lines)


def test_blockers_and_warnings_are_grouped_by_kind_with_pod_node_and_budget():
    preflight = {
        "node-1": {"blocking": [
            {"pod": "shop/web-1", "kind": "pdb_zero", "pdb": "shop/web", "severity": "error", "message": "allows 0 disruptions"},
            {"pod": "shop/db-0", "kind": "single_replica", "pdb": None, "severity": "warning", "message": "downtime"}]},
        "node-0": {"blocking": [
            {"pod": "shop/web-2", "kind": "pdb_zero", "pdb": "shop/web", "severity": "error", "message": "allows 0 disruptions"}]},
    }
    lines = plan_lines(PLAN, "workers", 10, TARGET, preflight)
    assert lines[lines.index("blockers (2):"):] == [
        "blockers (2):",
        "  pdb_zero (2)",
        "    shop/web-2 on node-0 (PodDisruptionBudget shop/web): allows 0 disruptions",
        "    shop/web-1 on node-1 (PodDisruptionBudget shop/web): allows 0 disruptions",
        "warnings (1):",
        "  single_replica (1)",
        "    shop/db-0 on node-1: downtime",
    ]
    # a message that names the budget already is not told it twice
    named = {"node-0": {"blocking": [{"pod": "shop/web-2", "kind": "pdb_insufficient", "pdb": "shop/web", "severity": "warning",
                                      "message": "PodDisruptionBudget shop/web allows 1 disruption(s)"}]}}
    assert plan_lines(PLAN, "workers", 10, TARGET, named)[-1] == "    shop/web-2 on node-0: PodDisruptionBudget shop/web allows 1 disruption(s)"


def test_long_waves_name_a_few_nodes_and_count_the_rest_and_an_up_to_date_group_says_so():
    wide = dict(PLAN, batches=[{"index": 1, "nodes": ["n%d" % n for n in range(200)], "azs": ["a"] * 200}])
    row = plan_lines(wide, "big", 200)[3]
    assert row.startswith("1     200    a 200") and row.endswith("n7 and 192 more")
    assert plan_lines({"outdated_count": 0, "batches": []}, "workers", 3, TARGET) == [
        "workers: 0 outdated of 3 instances; target launch template lt-0abc version 5, image ami-0123", "nothing to replace"]


def test_the_surge_priced_is_a_table_under_the_waves_each_count_once_the_smallest_first():
    priced = dict(PLAN, group_size=18, surge_choices=[
        {"surge": 0, "choices": ["terminate first"], "eta_seconds": 6139, "wave_count": 18, "extra_instance_minutes": 0.0,
         "fewest_ready": 17},
        {"surge": 6, "choices": ["configured", "EKS default"], "eta_seconds": 1111, "wave_count": 3,
         "extra_instance_minutes": 97.6, "fewest_ready": 17},
        {"surge": 18, "choices": ["100%"], "eta_seconds": 379, "wave_count": 1, "extra_instance_minutes": 109.8,
         "fewest_ready": 18}])
    lines = plan_lines(priced, "workers", 10, TARGET, preflight={})
    assert lines[5:] == [
        "surge priced (extra instance-minutes: instances above the group's desired size, over the rollout):",
        "  surge                        estimated  extra instance-minutes  fewest Ready",
        "  0 (terminate first)          1h 42m     0                       17 of 18",
        "  6 (configured, EKS default)  18m 31s    98                      17 of 18",
        "  18 (100%)                    6m 19s     110                     18 of 18",
        "blockers: none", "warnings: none"]
    # a small surge is not rounded to none, no surge is none; a plan written before the fewest Ready says so
    small = dict(PLAN, surge_choices=[
        {"surge": 0, "choices": ["configured"], "eta_seconds": 2179, "extra_instance_minutes": 0.0},
        {"surge": 1, "choices": ["EKS default", "100%"], "eta_seconds": 400, "extra_instance_minutes": 0.4}])
    assert [line.split()[-2:] for line in plan_lines(small, "workers", 1, TARGET)[-2:]] == [["0", "?"], ["0.4", "?"]]
    # a plan without them (a result written before) prints none
    assert not any(line.startswith("surge priced") for line in plan_lines(PLAN, "workers", 10, TARGET))


def test_durations_read_as_a_person_says_them():
    assert [human_duration(s) for s in (None, 42, 412, 5400.4)] == ["unknown", "42s", "6m 52s", "1h 30m"]


def test_the_filter_is_the_function():
    assert FilterModule().filters()["plan_lines"] is plan_lines


def test_the_target_groups_are_listed_with_their_delays_when_the_group_has_some():
    plan = dict(PLAN, target_groups=[
        {"name": "web", "target_type": "instance", "deregistration_delay": 300, "waited_for": True},
        {"name": "pods", "target_type": "ip", "deregistration_delay": 30, "waited_for": False}])
    lines = plan_lines(plan, "workers", 10, TARGET, preflight={})
    assert lines[5] == ("target groups: web (instance targets, deregistration delay 5m 00s: waited for), "
                        "pods (ip targets, deregistration delay 30s: not waited for)")
    assert lines[6:] == ["blockers: none", "warnings: none"]


def test_standby_and_protected_instances_are_named_with_what_the_rollout_does_with_them():
    states = dict(PLAN, protected=["i-0", "i-3"], standby={"policy": "ignore", "instances": [
        {"instance_id": "i-s1", "outdated": True}, {"instance_id": "i-s2", "outdated": False}]})
    lines = plan_lines(states, "workers", 10, TARGET)
    assert lines[1] == ("in Standby (never counted as capacity): i-s1, i-s2; 1 outdated, left as they are and reported "
                        "(standby_instances: ignore): i-s1")
    assert lines[2] == ("protected from scale in (replaced like the others: scale-in protection does not hold back "
                        "TerminateInstanceInAutoScalingGroup): i-0, i-3")
    assert lines[3].startswith("surge 6")
    waiting = {"outdated_count": 1, "batches": [], "standby": {"policy": "wait", "instances": [{"instance_id": "i-s1", "outdated": True}]}}
    assert plan_lines(waiting, "workers", 3, TARGET)[1:] == [
        "in Standby (never counted as capacity): i-s1; 1 outdated, waited for until they return to service, then replaced "
        "(standby_instances: wait): i-s1", "no drain wave: every outdated instance is in Standby"]


def test_termination_hooks_are_named_with_how_long_they_may_hold_an_instance():
    hooked = dict(PLAN, termination_hooks=[{"name": "ntth", "heartbeat_timeout": 300, "default_result": "CONTINUE"}])
    assert plan_lines(hooked, "workers", 10, TARGET)[1] == (
        "termination lifecycle hooks (never completed by the rollout): ntth (heartbeat timeout 5m 00s, default result CONTINUE); "
        "a terminated instance may stay in Terminating:Wait that long, and the rollout waits for the last ones at its end")


def test_the_warm_pool_is_shown_with_the_instances_refreshed_before_the_surge():
    warm = dict(PLAN, warm_pool={"pool_state": "Stopped", "min_size": 1, "instances": [{"instance_id": "i-w1"}, {"instance_id": "i-w2"}],
                                 "outdated": ["i-w1"]})
    assert plan_lines(warm, "workers", 10, TARGET)[1] == (
        "warm pool (Stopped, min 1): 2 instance(s); 1 built from another version, terminated before the surge so that the pool "
        "refills from the target and no new instance comes from them: i-w1")
    fresh = dict(warm, warm_pool=dict(warm["warm_pool"], outdated=[]))
    assert plan_lines(fresh, "workers", 10, TARGET)[1] == "warm pool (Stopped, min 1): 2 instance(s), all from the target"


def test_the_operator_s_controls_and_the_holds_are_stated():
    plan = dict(PLAN, bake_seconds=600, checkpoints=[{"percent": 50, "wait_seconds": 1800, "count": 5}],
                batches=[dict(batch, hold_seconds=hold) for batch, hold in zip(PLAN["batches"], (1800, 600))])
    controls = {"on_failure": "rollback", "previous_version": 4, "alarms": [{"name": "shop-5xx", "state": "OK"}],
                "window": {"windows": ["Mon,Tue 22:00 4h Europe/Berlin"], "open": False,
                           "next_start": "Mon 2026-11-30 22:00 CET (Europe/Berlin), 2026-11-30T21:00:00Z"},
                "refusal": "rolling_update_window: ... is outside the maintenance window", "hooks": {"after_step": ["/h/notify.yml"]}}
    lines = plan_lines(plan, "workers", 10, TARGET, preflight={}, controls=controls)
    assert lines[2:8] == [
        "on a failure of the new nodes: roll back to launch template version 4",
        "maintenance window Mon,Tue 22:00 4h Europe/Berlin: closed now; the next opens Mon 2026-11-30 22:00 CET (Europe/Berlin), "
        "2026-11-30T21:00:00Z",
        "holds: bake 10m 00s after each wave; checkpoint at 50% (5 nodes), then 30m 00s",
        "abort alarms: shop-5xx (OK)",
        "would not start now: rolling_update_window: ... is outside the maintenance window",
        "hooks: after_step /h/notify.yml",
    ]
    assert lines[8].split() == ["wave", "nodes", "AZs", "then", "node", "names"]
    assert "hold 30m 00s" in lines[9] and "hold 10m 00s" in lines[10]


def test_a_rollback_plan_says_so_and_a_hold_without_controls_says_nothing():
    lines = plan_lines(PLAN, "workers", 10, TARGET, controls={"rollback": True, "previous_version": 4, "on_failure": "hold"})
    assert lines[2].startswith("rollback: back to launch template version 4, the version the group launched before")
    assert plan_lines(PLAN, "workers", 10, TARGET, controls={"on_failure": "hold"})[2] == \
        "on a failure of the new nodes: hold (surge and state kept for a rerun)"


def test_the_post_drain_delay_says_what_it_waits_for_and_names_a_load_balancer_it_cannot_read():
    def line(delay, seconds, target_groups=()):
        plan = dict(PLAN, post_drain_delay=delay, timings={"post_drain_delay": seconds}, target_groups=list(target_groups))
        return [text for text in plan_lines(plan, "workers", 10, TARGET) if text.startswith("post-drain delay")]

    web = {"name": "k8s-web", "target_type": "instance", "deregistration_delay": 300, "waited_for": True,
           "sources": ["service shop/web"]}
    assert line({"set": False, "unseen": []}, 0, [web]) == [
        "post-drain delay: none - every load balancer that routes to the nodes is read; a drained node waits for its target groups"]
    assert "k8s-web (instance targets of service shop/web, deregistration delay 5m 00s: waited for)" in "\n".join(
        plan_lines(dict(PLAN, target_groups=[web]), "workers", 10, TARGET))
    unseen = [{"service": "shop/metal", "address": "203.0.113.10", "why": "known by its IP address only"}]
    assert line({"set": False, "unseen": unseen}, 60, [web]) == [
        "post-drain delay: 1m 00s - a load balancer that routes to the nodes cannot be read: service shop/metal at 203.0.113.10, "
        "known by its IP address only"]
    assert line({"set": True, "unseen": unseen}, 90) == ["post-drain delay: 1m 30s, as set"]
    # a plan made without the reads (node_group_info's own, not the role's) says nothing of it
    assert line(None, 0) == []


def test_a_blocker_no_option_gets_past_says_last_that_the_upgrade_would_stop_before_any_change():
    held = {"pod": "shop/web-1", "kind": "pdb_zero", "pdb": "shop/web", "severity": "error", "message": "can never allow one",
            "stops_upgrade": True, "gets_past": [{"option": "timeout_action", "value": "skip", "effect": "skips the node"}]}
    lines = plan_lines(PLAN, "workers", 10, TARGET, {"node-1": {"blocking": [held]}})
    assert lines[-1] == (
        "stops before any change: the upgrade would stop at the drain of 1 node(s), whatever it waited "
        "for: pod shop/web-1 on node node-1: can never allow one; gets past with rolling_update_drain_timeout_action: skip "
        "(skips the node). Nothing was changed: fix what holds them (a budget: relax it or add replicas), or run with an "
        "option named above")
    # a blocker the drain waits for says nothing of the kind
    waited = dict(held, stops_upgrade=False)
    assert not any("would stop" in line for line in plan_lines(PLAN, "workers", 10, TARGET, {"node-1": {"blocking": [waited]}}))


def test_one_drain_wave_and_one_instance_are_said_in_the_singular():
    one = dict(PLAN, outdated_count=1, batches=[PLAN["batches"][1]])
    lines = plan_lines(one, "workers", 1, TARGET)
    assert lines[0].startswith("workers: 1 outdated of 1 instance; target")
    assert "; 1 drain wave, estimated" in lines[1], lines[1]
