# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/steps.py: the next step of a rollout, as a table of group states, and whole rollouts played against it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.steps import cancel_payback, cancel_step, checkpoint_counts, decrement_for, next_step
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fake_kube import make_node, make_pod

NOW = datetime(2026, 11, 25, 7, 0, 0, tzinfo=timezone.utc)


def stamp(seconds_ago):
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def inst(iid, az="a", node="auto", ready=True, cordoned=False, drained=None, ours=True, lifecycle="InService", ready_ago=None):
    """An instance record; ``drained``: seconds since node_drain finished it; ``ready_ago``: since its node turned Ready."""
    if node == "auto":
        annotations = {}
        if cordoned and ours:
            annotations["nodeops.rollout/cordoned"] = "true"
        if drained is not None:
            annotations["nodeops.rollout/drained-at"] = stamp(drained)
        node = {"name": "n-" + iid, "ready": ready, "schedulable": not cordoned, "taints": [], "annotations": annotations,
                "ready_since": stamp(ready_ago) if ready and ready_ago is not None else None}
    return {"instance_id": iid, "az": az, "lifecycle_state": lifecycle, "launch_time": "2026-11-01T00:00:00Z", "node": node}


def old(count, prefix="o", azs="abc"):
    return [inst("%s%d" % (prefix, n), az=azs[n % len(azs)]) for n in range(count)]


def new(count, prefix="u", azs="abc", **kwargs):
    return [inst("%s%d" % (prefix, n), az=azs[n % len(azs)], **kwargs) for n in range(count)]


def ids_of(instances):
    return [i["instance_id"] for i in instances]


def step(instances, outdated, size, unavailable=1, owed=0, desired=None, delay=0, canary=True, skip=(), room=None, limit=None,
         standby="ignore", bake=0, checkpoints=()):
    desired = len([i for i in instances if i["lifecycle_state"] in ("InService", "Pending")]) if desired is None else desired
    return next_step(instances, outdated, size, unavailable, owed, desired, NOW, post_drain_delay=delay, canary=canary, skip=skip,
                     room=room, limit=limit, standby=standby, bake_seconds=bake, checkpoints=checkpoints)


def room_of(instances, pods_per_node=3, cpu="500m", allocatable="2"):
    """The cluster's Nodes and Pods behind ``instances``: every node with ``allocatable`` CPU; every outdated (``o``) node
    holding ``pods_per_node`` pods of ``cpu``, up-to-date ones none."""
    nodes, pods = [], []
    for instance in instances:
        if not instance["node"]:
            continue
        raw = make_node(instance["node"]["name"], ready=instance["node"]["ready"], unschedulable=not instance["node"]["schedulable"])
        raw["status"]["allocatable"] = {"cpu": allocatable, "memory": "8Gi", "pods": "110"}
        nodes.append(raw)
        if instance["instance_id"].startswith("o"):
            for index in range(pods_per_node):
                pod = make_pod("%s-%d" % (instance["node"]["name"], index), instance["node"]["name"])
                pod["spec"]["containers"] = [{"name": "main", "resources": {"requests": {"cpu": cpu}}}]
                pods.append(pod)
    return {"nodes": nodes, "pods": pods}


# ---------------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------------

def test_ready_surge_lets_more_nodes_drain_than_max_unavailable():
    group = old(6) + new(2)
    result = step(group, ids_of(group[:6]), size=6, unavailable=1, owed=2)
    # 8 Ready over a floor of 5: three drain at once, spread over the AZs
    assert result["action"] == "run" and result["floor"] == 5 and result["budget"] == 3
    assert sorted(entry["az"] for entry in result["drain"]) == ["a", "b", "c"]
    assert result["terminate"] == [] and result["validate"] == ["u0", "u1"]


def test_a_step_that_would_drain_serving_nodes_asks_for_the_room_and_drains_only_what_fits():
    group = old(6) + new(2)
    blind = step(group, ids_of(group[:6]), size=6, unavailable=1, owed=2)
    assert blind["needs_room"] and blind["held_for_room"] == 0
    # each new node holds one old node's 1.5 cpu: two of the three the floor allows
    seen = step(group, ids_of(group[:6]), size=6, unavailable=1, owed=2, room=room_of(group))
    assert not seen["needs_room"] and len(seen["drain"]) == 2 and seen["held_for_room"] == 1
    roomy = step(group, ids_of(group[:6]), size=6, unavailable=1, owed=2, room=room_of(group, allocatable="8"))
    assert len(roomy["drain"]) == 3 and roomy["held_for_room"] == 0


def test_when_room_holds_nodes_back_the_step_waits_for_replacements_that_bring_room():
    group = old(4)[2:] + new(2) + [inst("r0", node=None, lifecycle="Pending")]
    full = room_of(group)
    for raw in full["nodes"]:
        if raw["metadata"]["name"].startswith("n-u"):
            raw["status"]["allocatable"]["cpu"] = "900m"   # one 500m pod each: not the three of an old node
    waiting = step(group, ["o2", "o3"], size=4, unavailable=1, owed=0, desired=5, canary=False, room=full)
    assert waiting["action"] == "wait" and waiting["held_for_room"] == 1 and waiting["drain"] == []
    assert "for room for the pods of 1 outdated node(s)" in waiting["waiting_for"][0]


def test_a_full_cluster_with_nothing_on_the_way_still_drains_one_node_at_a_time():
    group = old(4) + new(1)
    full = room_of(group, allocatable="1")   # the new node cannot hold one old node's pods
    result = step(group, ids_of(group[:4]), size=4, unavailable=2, owed=0, desired=5, room=full)
    assert result["action"] == "run" and len(result["drain"]) == 1 and result["held_for_room"] == 2


def test_without_surge_the_first_step_is_a_canary_of_one_and_nothing_more_until_its_replacement_is_ready():
    group = old(4)
    first = step(group, ids_of(group), size=4, unavailable=2)
    assert first["action"] == "run" and len(first["drain"]) == 1 and first["validate"] == []
    canary = first["drain"][0]["instance_id"]
    drained = [inst(i["instance_id"], az=i["az"], cordoned=True, drained=100) if i["instance_id"] == canary else i for i in group]
    second = step(drained, ids_of(group), size=4, unavailable=2)
    assert second["terminate"] == [canary] and second["decrement"] == 0 and second["drain"] == []
    booting = [i for i in drained if i["instance_id"] != canary] + [inst("u0", node=None, lifecycle="Pending")]
    third = step(booting, ids_of(group), size=4, unavailable=2)
    assert third["action"] == "wait" and third["booting"] == 1
    ready = booting[:-1] + [inst("u0")]
    fourth = step(ready, ids_of(group), size=4, unavailable=2)
    assert len(fourth["drain"]) == 2 and fourth["validate"] == ["u0"]
    assert step(ready, ids_of(group), size=4, unavailable=2, canary=False)["drain"]  # the canary rule can be turned off


def test_at_the_floor_the_step_waits_for_replacements_and_says_so():
    group = new(2, cordoned=False) + [inst("o0", cordoned=True), inst("o1", cordoned=True)] + [inst("u9", node=None, lifecycle="Pending")]
    result = step(group, ["o0", "o1"], size=4, unavailable=2)
    # o0, o1 were cordoned by an interrupted drain: drained again, without using the budget
    assert [entry["instance_id"] for entry in result["drain"]] == ["o0", "o1"] and result["budget"] == 0


def test_the_post_drain_delay_is_counted_from_the_drain_and_close_delays_are_waited_for_together():
    group = [inst("o0", cordoned=True, drained=10), inst("o1", cordoned=True, drained=8), inst("o2", cordoned=True, drained=1)]
    group += new(3)
    result = step(group, ["o0", "o1", "o2"], size=3, unavailable=3, delay=60)
    assert result["action"] == "wait" and result["delayed"] == ["n-o0", "n-o1", "n-o2"]
    assert result["wait_seconds"] == pytest.approx(52)  # o1's end: o0's is 2 s before it, o2's 9 s after o0's
    later = step(group, ["o0", "o1", "o2"], size=3, unavailable=3, delay=9)
    assert later["terminate"] == ["o0"] and later["action"] == "run"


def test_an_uncordoned_node_is_not_drained_any_more_whatever_its_annotation_says():
    node = {"name": "n-o0", "ready": True, "schedulable": True, "taints": [],
            "annotations": {"nodeops.rollout/drained-at": stamp(600)}}
    result = step([inst("o0", node=node)] + new(2), ["o0"], size=2, unavailable=1)
    assert result["terminate"] == [] and [entry["instance_id"] for entry in result["drain"]] == ["o0"]


def test_a_bad_drained_at_annotation_means_drain_again():
    node = {"name": "n-o0", "ready": True, "schedulable": False, "taints": [],
            "annotations": {"nodeops.rollout/drained-at": "yesterday"}}
    result = step([inst("o0", node=node)] + new(2), ["o0"], size=2, unavailable=1)
    assert result["terminate"] == [] and [entry["instance_id"] for entry in result["drain"]] == ["o0"]


def test_only_the_last_terminations_pay_the_surge_back():
    assert decrement_for(3, outdated_left=10, surge_owed=2) == 0    # 7 outdated stay: replacements needed
    assert decrement_for(3, outdated_left=4, surge_owed=2) == 1     # 1 stays, 2 owed: one of these pays back
    assert decrement_for(3, outdated_left=3, surge_owed=2) == 2
    assert decrement_for(3, outdated_left=3, surge_owed=5) == 3     # never more than terminated
    group = [inst("o%d" % n, cordoned=True, drained=100) for n in range(3)] + old(1, prefix="p") + new(2)
    result = step(group, ["o0", "o1", "o2", "p0"], size=4, unavailable=1, owed=2, desired=6)
    assert result["terminate"] == ["o0", "o1", "o2"] and result["decrement"] == 1


def test_an_instance_that_never_became_a_node_is_terminated_without_a_drain():
    group = [inst("o0", node=None)] + new(2)
    result = step(group, ["o0"], size=2, unavailable=1, owed=1, desired=3)
    assert result["terminate"] == ["o0"] and result["decrement"] == 1 and result["drain"] == []


def test_an_outdated_instance_still_launching_is_waited_for_not_drained():
    group = [inst("o0", node=None, lifecycle="Pending")] + new(2)
    result = step(group, ["o0"], size=2, unavailable=1)
    assert result["action"] == "wait" and result["drain"] == [] and result["terminate"] == []
    assert result["booting_ids"] == ["o0"]


def test_skipped_nodes_are_neither_drained_nor_terminated_and_the_rollout_ends_without_them():
    group = [inst("o0", cordoned=True)] + new(2)
    result = step(group, ["o0"], size=2, unavailable=1, skip=["n-o0"])
    assert result["action"] == "done" and result["skipped"] == ["n-o0"] and result["outdated_left"] == 1


def test_a_limit_replaces_its_instances_alone_whatever_state_the_others_are_in():
    # outside the limit: one never registered, one launching, one drained by an earlier run, one serving
    outside = [inst("x0", node=None), inst("x1", node=None, lifecycle="Pending"), inst("x2", cordoned=True, drained=100),
               inst("x3")]
    group = outside + old(2) + new(2)
    outdated = ids_of(outside) + ["o0", "o1"]
    result = step(group, outdated, size=6, unavailable=3, owed=2, desired=8, limit=["o0", "o1"])
    assert result["action"] == "run" and result["terminate"] == [] and result["booting_ids"] == []
    assert sorted(entry["instance_id"] for entry in result["drain"]) == ["o0", "o1"]
    assert result["outside"] == ["x0", "x1", "x2", "x3"] and result["outdated_left"] == 6
    # the surge is paid back only by the last of every outdated instance, those outside the limit included
    drained = [inst(iid, cordoned=True, drained=100) for iid in ("o0", "o1")]
    result = step(outside + drained + new(2), outdated, size=6, unavailable=3, owed=2, desired=8, limit=["o0", "o1"])
    assert result["terminate"] == ["o0", "o1"] and result["decrement"] == 0
    # once only instances outside the limit are left, the limited rollout is done
    result = step(outside + new(4), ids_of(outside), size=6, unavailable=3, owed=2, desired=8, limit=["o0", "o1"])
    assert result["action"] == "done" and result["outside"] == ["x0", "x1", "x2", "x3"]
    # without a limit the same group's instance without a node is terminated and the drained one too
    result = step(outside + new(4), ids_of(outside), size=6, unavailable=3, owed=2, desired=8)
    assert sorted(result["terminate"]) == ["x0", "x2"]


def test_done_when_nothing_outdated_is_left_and_the_last_replacements_are_ready():
    assert step(new(3), [], size=3)["action"] == "done"
    booting = new(2) + [inst("u9", node=None, lifecycle="Pending")]
    result = step(booting, [], size=3)
    assert result["action"] == "wait" and result["waiting_for"] == ["1 new instance(s) to become Ready nodes"]


def test_a_group_below_its_floor_with_nothing_on_the_way_is_blocked_by_name():
    group = old(2) + [inst("u0", ready=False)]
    # u0 is up to date but not Ready and nothing boots: only 2 of 3 Ready, floor 2; the step cannot drain
    result = step(group, ["o0", "o1"], size=3, unavailable=1, desired=3)
    assert result["action"] == "wait"   # u0 counts as booting: its node may still become Ready
    group = old(2) + [inst("x0", node={"name": "n-x0", "ready": True, "schedulable": False, "taints": [], "annotations": {}})]
    blocked = step(group, ["o0", "o1"], size=3, unavailable=1, desired=3)
    assert blocked["action"] == "blocked" and "floor of 2" in blocked["message"] and "max_unavailable" in blocked["message"]


def test_not_ready_outdated_nodes_drain_without_using_the_budget():
    group = [inst("o0", ready=False)] + old(2, prefix="p")
    result = step(group, ["o0", "p0", "p1"], size=3, unavailable=1, canary=False)
    # capacity 2 (o0 is not Ready) = the floor: only o0, which takes nothing more away
    assert [entry["instance_id"] for entry in result["drain"]] == ["o0"] and result["budget"] == 0


def test_terminating_instances_are_neither_capacity_nor_outdated():
    group = old(2) + [inst("o9", lifecycle="Terminating", cordoned=True, drained=500)] + new(1)
    result = step(group, ["o0", "o1", "o9"], size=3, unavailable=1, desired=3)
    assert result["outdated_left"] == 2 and result["capacity"] == 3 and "o9" not in result["terminate"]


# ---------------------------------------------------------------------------------------------------------
# Whole rollouts: play the steps against a simulated group and check the promises at every step
# ---------------------------------------------------------------------------------------------------------

def play(size, unavailable, surge, canary=True):
    """Play a rollout in which every drain and boot finishes before the next step; returns the steps' actions."""
    group = old(size)
    outdated = set(ids_of(group))
    group += new(surge, prefix="s")
    desired, owed, launched, actions = size + surge, surge, 0, []
    for _round in range(4 * size + 10):
        result = step(group, sorted(outdated & set(ids_of(group))), size, unavailable, owed, desired, canary=canary)
        actions.append(result["action"])
        if result["action"] == "done":
            return actions
        if result["action"] == "wait":
            group = [inst(i["instance_id"], az=i["az"]) if i["node"] is None else i for i in group]  # the boots end
            continue
        assert result["action"] == "run"
        serving = sum(1 for i in group if i["node"] and i["node"]["ready"] and i["node"]["schedulable"])
        assert serving - len(result["drain"]) >= size - unavailable, "a drain below the floor"
        gone = set(result["terminate"])
        group = [i for i in group if i["instance_id"] not in gone]
        desired -= result["decrement"]
        owed -= result["decrement"]
        for _launch in range(len(gone) - result["decrement"]):
            launched += 1
            group.append(inst("r%d" % launched, az="abc"[launched % 3], node=None, lifecycle="Pending"))
        assert len(group) <= size + surge, "more instances than size + surge"
        drained = {entry["instance_id"] for entry in result["drain"]}
        group = [inst(i["instance_id"], az=i["az"], cordoned=True, drained=3600) if i["instance_id"] in drained else i
                 for i in group]
    raise AssertionError("the rollout did not end: %s" % actions)


@pytest.mark.parametrize("size,unavailable,surge", [(30, 3, 6), (30, 1, 6), (30, 3, 30), (5, 1, 0), (3, 2, 2), (10, 10, 0), (1, 1, 0)])
def test_every_rollout_ends_replaced_with_the_floor_and_the_instance_cap_held(size, unavailable, surge):
    actions = play(size, unavailable, surge)
    assert actions[-1] == "done"


def test_a_full_surge_drains_every_node_in_one_step():
    actions = play(30, 3, 30)
    assert actions[0] == "run" and actions.count("run") == 2   # drain all 30, then terminate all 30 (paying back)


# ---------------------------------------------------------------------------------------------------------
# Target groups: a drained instance a target group still holds is not terminated yet
# ---------------------------------------------------------------------------------------------------------

def held_by(state="draining", timeout=330, name="web", kind="target_group"):
    return [{"kind": kind, "name": name, "state": state, "timeout": timeout}]


def test_a_drained_instance_still_in_a_target_group_waits_until_it_has_left():
    group = [inst("o0", cordoned=True, drained=100), inst("o1", cordoned=True, drained=100)] + new(2)
    result = next_step(group, ["o0", "o1"], 2, 1, 0, 4, NOW, post_drain_delay=60, holds={"o0": held_by()})
    # o1 has left its target groups: terminated; o0 drains for 300 s + 30 s from its drain's end, 100 s ago
    assert result["action"] == "run" and result["terminate"] == ["o1"]
    assert result["held"] == [{"instance_id": "o0", "node": "n-o0", "held": held_by(), "until": 230.0}]
    assert result["hold_timed_out"] == []
    alone = next_step(group[:1] + group[2:], ["o0"], 2, 1, 0, 3, NOW, post_drain_delay=60, holds={"o0": held_by()})
    assert alone["action"] == "wait" and alone["wait_seconds"] == 230.0
    assert alone["waiting_for"] == ["1 drained instance(s) to leave their target groups"]
    # a volume still attached holds it too, with its own timeout; the longest hold decides
    both = next_step(group[:1] + group[2:], ["o0"], 2, 1, 0, 3, NOW, post_drain_delay=60,
                     holds={"o0": held_by() + held_by("attached", timeout=360, name="pv-a", kind="volume")})
    assert both["wait_seconds"] == 260.0 and both["waiting_for"] == [
        "1 drained instance(s) to leave their target groups", "1 drained instance(s) to have their volumes detached"]


def test_a_held_instance_is_terminated_once_its_deregistration_timeout_has_passed_and_the_step_says_so():
    group = [inst("o0", cordoned=True, drained=400)] + new(2)
    result = next_step(group, ["o0"], 2, 1, 0, 3, NOW, post_drain_delay=60, holds={"o0": held_by("healthy")})
    assert result["action"] == "run" and result["terminate"] == ["o0"] and result["held"] == []
    assert result["hold_timed_out"] == [{"instance_id": "o0", "node": "n-o0", "held": held_by("healthy")}]
    # a shorter timeout ends sooner; 0 does not wait at all
    shorter = next_step([inst("o0", cordoned=True, drained=100)] + new(2), ["o0"], 2, 1, 0, 3, NOW, post_drain_delay=60,
                        holds={"o0": held_by(timeout=90)})
    assert shorter["terminate"] == ["o0"] and shorter["hold_timed_out"][0]["instance_id"] == "o0"
    assert next_step(group, ["o0"], 2, 1, 0, 3, NOW, holds={"o0": held_by(timeout=0)})["terminate"] == ["o0"]


def test_the_post_drain_delay_comes_first_and_a_held_instance_keeps_the_rollout_from_being_done():
    delayed = [inst("o0", cordoned=True, drained=10)] + new(2)
    result = next_step(delayed, ["o0"], 2, 1, 0, 3, NOW, post_drain_delay=60, holds={"o0": held_by()})
    assert result["action"] == "wait" and result["delayed"] == ["n-o0"] and result["held"] == []
    held = [inst("o0", cordoned=True, drained=100, ready=False)] + new(2)
    assert next_step(held, ["o0"], 2, 1, 0, 3, NOW, post_drain_delay=60, holds={"o0": held_by()})["action"] == "wait"


def test_a_held_instance_counts_as_in_flight_for_the_canary():
    group = [inst("o0", cordoned=True, drained=100)] + old(3, prefix="p")
    result = next_step(group, ["o0", "p0", "p1", "p2"], 4, 2, 0, 4, NOW, post_drain_delay=60, holds={"o0": held_by()})
    assert result["drain"] == [] and result["action"] == "wait"


# ---------------------------------------------------------------------------------------------------------
# Volumes pinned to a zone: such a node drains once its zone has a Ready up-to-date node
# ---------------------------------------------------------------------------------------------------------

def test_a_node_whose_volume_is_pinned_to_a_zone_without_a_new_node_drains_after_the_others():
    group = old(3) + [inst("u0", az="b"), inst("u1", az="c")]
    pinned = {"n-o0": ["a"], "n-o1": ["b"]}
    result = next_step(group, ids_of(group[:3]), 3, 1, 2, 5, NOW, pinned=pinned)
    # o0's volume is in zone a, where no new node is Ready: it waits; o1 (b) and o2 (no volume) drain
    assert sorted(entry["instance_id"] for entry in result["drain"]) == ["o1", "o2"]
    assert result["deferred"] == [{"node": "n-o0", "zones": ["a"]}] and result["drained_without_zone"] == []
    ready_in_a = group + [inst("u2", az="a")]
    assert "o0" in ids_of(next_step(ready_in_a, ids_of(group[:3]), 3, 1, 2, 6, NOW, pinned=pinned)["drain"])


def test_with_nothing_else_left_a_pinned_node_is_drained_all_the_same_and_the_step_says_so():
    group = old(1, azs="a") + [inst("u0", az="b"), inst("u1", az="c")]
    result = next_step(group, ["o0"], 1, 1, 2, 3, NOW, pinned={"n-o0": ["a"]})
    assert ids_of(result["drain"]) == ["o0"] and result["deferred"] == []
    assert result["drained_without_zone"] == [{"node": "n-o0", "zones": ["a"]}]
    # while a replacement boots, it waits instead
    booting = group + [inst("u2", az="a", node=None, lifecycle="Pending")]
    waiting = next_step(booting, ["o0"], 1, 1, 2, 4, NOW, pinned={"n-o0": ["a"]})
    assert waiting["action"] == "wait" and waiting["deferred"] == [{"node": "n-o0", "zones": ["a"]}]


# ---------------------------------------------------------------------------------------------------------
# Instances in Standby
# ---------------------------------------------------------------------------------------------------------

def test_an_instance_in_standby_is_never_capacity_and_ignored_unless_asked():
    group = old(3) + [inst("s0", lifecycle="Standby")]
    # ignore: not outdated (rollout.outdated leaves it out), not capacity, no work: done once the others are
    ignored = step(group, ids_of(group[:3]), size=3, unavailable=1)
    assert ignored["capacity"] == 3 and ignored["outdated_left"] == 3 and ignored["standby"] == []
    assert "s0" not in [entry["instance_id"] for entry in ignored["drain"]]
    assert step([inst("s0", lifecycle="Standby")] + new(3), [], size=3)["action"] == "done"


def test_terminate_drains_an_instance_in_standby_without_using_the_budget_and_never_decrements_for_it():
    group = old(2) + new(2) + [inst("s0", az="c", lifecycle="Standby")]
    outdated = ["o0", "o1", "s0"]
    first = step(group, outdated, size=2, unavailable=1, owed=2, desired=4, standby="terminate")
    # a Ready serving node in Standby is drained as one that is out already: it costs no capacity
    assert first["capacity"] == 4 and first["budget"] == 3
    assert "s0" in [entry["instance_id"] for entry in first["drain"]]
    drained = [inst(i["instance_id"], az=i["az"], cordoned=True, drained=100, lifecycle=i["lifecycle_state"])
               if i["instance_id"] in outdated else i for i in group]
    second = step(drained, outdated, size=2, unavailable=1, owed=2, desired=4, standby="terminate")
    # members first, so the two decrements pay the surge back with o0 and o1; s0 is not part of desired
    assert second["terminate"] == ["o0", "o1", "s0"] and second["decrement"] == 2
    only_standby = [i for i in drained if i["instance_id"] not in ("o0", "o1")]
    third = step(only_standby, ["s0"], size=2, unavailable=1, owed=2, desired=4, standby="terminate")
    assert third["terminate"] == ["s0"] and third["decrement"] == 0


def test_wait_holds_the_end_until_the_instance_in_standby_is_back_in_service():
    group = new(3) + [inst("s0", lifecycle="Standby")]
    waiting = step(group, ["s0"], size=3, standby="wait")
    assert waiting["action"] == "wait" and waiting["standby"] == ["s0"] and waiting["drain"] == []
    assert "1 outdated instance(s) in Standby to return to service (ExitStandby): s0" in waiting["waiting_for"][0]
    back = step(new(3) + [inst("s0")], ["s0"], size=3, unavailable=1, standby="wait")
    assert back["action"] == "run" and [entry["instance_id"] for entry in back["drain"]] == ["s0"]


def test_the_rollout_is_not_done_while_a_lifecycle_hook_holds_an_instance_it_terminated():
    group = new(3) + [inst("o0", lifecycle="Terminating:Wait"), inst("o1", lifecycle="Terminating")]
    held = step(group, [], size=3)
    # leaving: neither capacity nor work, but the end waits for it
    assert held["action"] == "wait" and held["hooked"] == ["o0"] and held["capacity"] == 3
    assert held["waiting_for"] == ["1 terminated instance(s) held in Terminating:Wait by a termination lifecycle hook: o0"]
    assert step(new(3) + [inst("o1", lifecycle="Terminating")], [], size=3)["action"] == "done"
    # the pipeline does not wait for it: with work left, the step runs
    busy = step(old(1, prefix="x") + group, ["x0"], size=4, owed=1)
    assert busy["action"] == "run" and busy["hooked"] == ["o0"]


# ---------------------------------------------------------------------------------------------------------
# Holds: the bake time and checkpoints
# ---------------------------------------------------------------------------------------------------------

def _after_first_wave(replacements_ready_ago, booting=False):
    """4 outdated nodes, 2 surged: o0-o2 replaced (u2-u4), o3 still serving; surge Ready long ago."""
    group = [inst("o3", az="a")] + new(2, ready_ago=5000)
    group += [inst("u%d" % n, az="abc"[n % 3], ready_ago=replacements_ready_ago) for n in (2, 3)]
    group += [inst("u4", node=None, lifecycle="Pending")] if booting else [inst("u4", az="b", ready_ago=replacements_ready_ago)]
    return group


HOLDS = [
    # (what, group, bake, checkpoints, action, drain count, wait_seconds, waiting for)
    ("no bake before the first wave", old(4) + new(2, ready_ago=10), 300, (), "run", 3, None, None),
    ("the next wave waits the bake time from its replacements' Ready", _after_first_wave(100), 300, (), "wait", 0, 200, "the bake time"),
    ("baked: the next wave drains", _after_first_wave(400), 300, (), "run", 1, None, None),
    ("a replacement still booting: no drain, and no bake counted yet", _after_first_wave(400, booting=True), 300, (), "wait", 0, None,
     "new instance(s)"),
    ("a checkpoint at 50% of 4 caps the first wave at 2", old(4) + new(2, ready_ago=10), 0, ({"percent": 50, "wait_seconds": 600},),
     "run", 2, None, None),
]


@pytest.mark.parametrize("what, group, bake, checkpoints, action, drains, wait, waiting", HOLDS, ids=[row[0] for row in HOLDS])
def test_holds(what, group, bake, checkpoints, action, drains, wait, waiting):
    outdated = [i["instance_id"] for i in group if i["instance_id"].startswith("o")]
    result = step(group, outdated, size=4, unavailable=1, owed=2, desired=len(group), bake=bake, checkpoints=checkpoints)
    assert (result["action"], len(result["drain"])) == (action, drains), (what, result)
    if wait is not None:
        assert abs(result["wait_seconds"] - wait) < 1.5, result["wait_seconds"]
    if waiting is not None:
        assert any(waiting in text for text in result["waiting_for"]), result["waiting_for"]


def test_a_checkpoint_holds_until_its_nodes_are_replaced_and_its_wait_has_passed():
    checkpoint = ({"percent": 50, "wait_seconds": 600},)
    # o0, o1 replaced by u2, u3; o2, o3 serving: 2 of 4 taken, the checkpoint reached
    group = [inst("o2", az="c"), inst("o3", az="a")] + new(2, ready_ago=5000)
    replaced = group + [inst("u2", az="a", ready_ago=100), inst("u3", az="b", ready_ago=100)]
    held = step(replaced, ["o2", "o3"], size=4, unavailable=1, owed=2, checkpoints=checkpoint)
    assert held["action"] == "wait" and held["drain"] == [] and held["taken"] == 2
    assert abs(held["wait_seconds"] - 500) < 1.5 and "the checkpoint at 2 of 4 nodes (600s)" in held["waiting_for"][0]
    passed = [dict(i, node=dict(i["node"], ready_since=stamp(700))) if i["instance_id"] in ("u2", "u3") else i for i in replaced]
    going = step(passed, ["o2", "o3"], size=4, unavailable=1, owed=2, checkpoints=checkpoint)
    assert going["action"] == "run" and len(going["drain"]) == 2 and going["hold"] is None


def test_a_hold_still_drains_what_is_out_and_terminates_what_is_drained():
    group = [inst("o1", az="b", cordoned=True), inst("o2", az="c", cordoned=True, drained=100), inst("o3", az="a")]
    group += new(2, ready_ago=5000) + [inst("u2", az="a", ready_ago=10)]
    result = step(group, ["o1", "o2", "o3"], size=4, unavailable=1, owed=2, bake=300)
    assert result["action"] == "run" and result["terminate"] == ["o2"]
    assert [entry["instance_id"] for entry in result["drain"]] == ["o1"]          # o3, serving, is held back
    assert result["hold"] == {"reason": "the bake time (300s)", "seconds": None}


def test_the_last_nodes_bake_before_the_rollout_ends_and_a_checkpoint_at_100_percent_waits():
    done = new(4, ready_ago=100)
    assert step(done, [], size=4)["action"] == "done"
    baking = step(done, [], size=4, bake=300)
    assert baking["action"] == "wait" and abs(baking["wait_seconds"] - 200) < 1.5
    assert step(done, [], size=4, bake=60)["action"] == "done"
    last = step(done, [], size=4, checkpoints=({"percent": 100, "wait_seconds": 900},))
    assert last["action"] == "wait" and abs(last["wait_seconds"] - 800) < 1.5


def test_the_bake_counts_from_the_newest_drain_while_its_node_is_still_listed():
    """The last wave's terminations pay the surge back: no replacement turns Ready after its drain, so the drain
    itself (on the leaving instance's node) is where the bake counts from."""
    leaving = inst("o3", az="a", cordoned=True, drained=50, lifecycle="Terminating")
    result = step(new(4, ready_ago=1000) + [leaving], [], size=4, bake=300)
    assert result["action"] == "wait" and abs(result["wait_seconds"] - 250) < 1.5


@pytest.mark.parametrize("checkpoints, size, expected", [
    (({"percent": 50, "wait_seconds": 60},), 4, {2: 60}),
    (({"percent": 30, "wait_seconds": 60},), 6, {2: 60}),                            # rounded up
    (({"percent": 25, "wait_seconds": 60}, {"percent": 24, "wait_seconds": 90}), 6, {2: 90}),  # one count, the longer wait
    (({"percent": 1, "wait_seconds": 10},), 3, {1: 10}),                             # at least one node
])
def test_checkpoint_counts(checkpoints, size, expected):
    assert checkpoint_counts(checkpoints, size) == expected


# ---------------------------------------------------------------------------------------------------------
# cancel_step: the surge given back by the same rules
# ---------------------------------------------------------------------------------------------------------

def cancel(instances, outdated, size, unavailable=1, owed=0, desired=None, delay=0, skip=(), holds=None, room=None):
    desired = len([i for i in instances if i["lifecycle_state"] in ("InService", "Pending")]) if desired is None else desired
    return cancel_step(instances, outdated, size, unavailable, owed, desired, NOW, post_drain_delay=delay, skip=skip,
                       holds=holds, room=room)


def test_cancel_after_a_failed_boot_gives_back_the_nodes_that_never_became_ready_and_no_ready_node():
    group = old(6) + new(6, ready=False)
    first = cancel(group, ids_of(group[:6]), size=6, unavailable=1, owed=6)
    # the NotReady nodes are drained (cordoned, nothing to evict) at no cost to the floor; not one Ready old node
    assert first["action"] == "run" and first["terminate"] == [] and first["validate"] == []
    assert sorted(entry["node"] for entry in first["drain"]) == ["n-u%d" % n for n in range(6)]
    assert first["capacity"] == 6 and first["floor"] == 5 and not first["needs_room"]
    drained = old(6) + new(6, ready=False, cordoned=True, drained=30)
    second = cancel(drained, ids_of(drained[:6]), size=6, unavailable=1, owed=6, delay=10)
    assert second["action"] == "run" and sorted(second["terminate"]) == ["u%d" % n for n in range(6)] and second["decrement"] == 6
    assert second["drain"] == []
    assert cancel(old(6), ids_of(old(6)), size=6, unavailable=1, owed=0)["action"] == "done"


def test_cancel_gives_back_a_replacement_still_launching_before_any_serving_node():
    # surge 1, max_unavailable 1: the surge node and four old nodes serve, step 1's two replacements launch
    group = old(4) + new(1) + [inst("r0", node=None, lifecycle="Pending"), inst("r1", node=None, lifecycle="Pending")]
    result = cancel(group, ids_of(group[:4]), size=6, unavailable=1, owed=1, desired=7)
    assert result["action"] == "run" and result["terminate"] == ["r0"] and result["decrement"] == 1 and result["drain"] == []


def test_cancel_drains_serving_nodes_outdated_first_only_as_far_as_the_floor_and_the_room_allow():
    group = old(4) + new(2)
    blind = cancel(group, ids_of(group[:4]), size=4, unavailable=1, owed=2)
    assert blind["needs_room"] and [entry["instance_id"][0] for entry in blind["drain"]] == ["o", "o"]
    roomy = cancel(group, ids_of(group[:4]), size=4, unavailable=1, owed=2, room=room_of(group, allocatable="8"))
    assert roomy["action"] == "run" and len(roomy["drain"]) == 2 and not roomy["needs_room"]
    # six Ready over a floor of three would allow three; two are owed: never more than the surge
    assert roomy["budget"] == 3
    tight = old(2) + new(1)
    floor = cancel(tight, ["o0", "o1"], size=3, unavailable=1, owed=2, desired=3)
    assert floor["budget"] == 1 and len(floor["drain"]) == 1 and floor["action"] == "run"


def test_cancel_stops_at_the_floor_saying_why_and_cordons_nothing_it_will_not_drain():
    group = new(1)
    result = cancel(group, [], size=2, unavailable=1, owed=1, desired=1)
    assert result["action"] == "blocked" and result["drain"] == [] and result["terminate"] == []
    assert "1 Ready schedulable node(s) against its floor of 1 (original size 2 - max_unavailable 1)" in result["message"]
    assert "draining n-u0 would take it below" in result["message"] and "held" in result["message"]


def test_cancel_stops_when_the_pods_would_find_no_room():
    group = old(2) + new(1)
    full = room_of(group, allocatable="1")
    result = cancel(group, ["o0", "o1"], size=2, unavailable=2, owed=1, room=full)
    assert result["action"] == "blocked" and result["held_for_room"] == 1
    assert "would find no room on the nodes left" in result["message"]


def test_cancel_waits_for_the_target_groups_before_terminating_what_it_drained():
    group = old(4) + [inst("u0", cordoned=True, drained=100), inst("u1", cordoned=True, drained=100)]
    waiting = cancel(group, ids_of(group[:4]), size=4, owed=2, delay=60, holds={"u0": held_by(), "u1": held_by()})
    assert waiting["action"] == "wait" and waiting["terminate"] == [] and waiting["wait_seconds"] == 230.0
    assert waiting["waiting_for"] == ["2 drained instance(s) to leave their target groups"]
    let_go = cancel(group, ids_of(group[:4]), size=4, owed=2, delay=60, holds={"u0": held_by()})
    assert let_go["action"] == "run" and let_go["terminate"] == ["u1"] and let_go["decrement"] == 1


def test_cancel_leaves_drained_nodes_the_surge_does_not_need_and_gives_back_every_detached_instance():
    group = [inst("o0", cordoned=True, drained=100), inst("o1", cordoned=True, drained=100)] + old(2, prefix="p") + new(1)
    detached = inst("d0")
    detached["tags"] = {"nodeops.rollout/detached": "true"}
    result = cancel(group + [detached], ["o0", "o1", "p0", "p1", "d0"], size=4, unavailable=1, owed=1, desired=5)
    assert result["terminate"] == ["o0"] and result["decrement"] == 1
    # the detached instance serves: drained first, never a decrement
    assert [entry["instance_id"] for entry in result["drain"]] == ["d0"] and result["needs_room"]


def test_cancel_waits_for_launches_rather_than_drain_a_serving_node_and_is_done_once_nothing_leaves():
    group = old(3) + new(1)
    launching = cancel(group, ids_of(group[:3]), size=3, unavailable=1, owed=1, desired=5)
    assert launching["action"] == "wait" and launching["drain"] == [] and launching["booting"] == 1
    leaving = cancel(old(3) + [inst("u9", lifecycle="Terminating")], ids_of(old(3)), size=3, owed=0, desired=3)
    assert leaving["action"] == "wait" and leaving["leaving"] == ["u9"]
    assert leaving["waiting_for"] == ["1 instance(s) given back to leave the group"]


def test_the_cancel_payback_is_the_order_of_the_cancel_steps_and_every_detached_instance_last():
    old_nodes = [inst("o1", az="a", cordoned=True, drained=100), inst("o2", az="b"), inst("o3", az="a"),
                 inst("o4", az="b", cordoned=True, drained=100), inst("o5", az="b", ready=False)]
    group = old_nodes + new(2)
    outdated = ids_of(old_nodes)
    # the node that is not Ready first, then the drained ones, then an outdated node in service, then a new node
    assert [e["instance_id"] for e in cancel_payback(group, outdated, 1, NOW)] == ["o5"]
    chosen = cancel_payback(group, outdated, 4, NOW)
    assert [(e["instance_id"], e["drained"]) for e in chosen[:3]] == [("o5", False), ("o1", True), ("o4", True)]
    assert chosen[3]["instance_id"] in ("o2", "o3") and not chosen[3]["drained"]
    assert [e["instance_id"] for e in cancel_payback(group, outdated, 7, NOW)][-1].startswith("u")
    detached = inst("d1")
    detached.update(tags={"nodeops.rollout/detached": "r-1"}, lifecycle_state="Detached")
    assert [e["instance_id"] for e in cancel_payback(group + [detached], outdated + ["d1"], 1, NOW)] == ["o5", "d1"]
    assert cancel_payback(group, outdated, 0, NOW) == []


def test_a_cancel_keeps_giving_back_the_not_ready_node_it_drained_rather_than_an_old_node_the_rollout_drained():
    # paused while step 1's replacement boots (it never turns Ready) and step 2's old node is in its post-drain delay
    old_drained = inst("o2", az="c", cordoned=True, drained=20)
    boot = inst("u1", az="a", ready=False)
    group = old(2) + [old_drained] + new(1) + [boot]
    outdated = ["o0", "o1", "o2"]
    first = cancel(group, outdated, size=4, unavailable=1, owed=1, delay=60)
    assert first["action"] == "run" and [entry["instance_id"] for entry in first["drain"]] == ["u1"]
    # the cancel drained it: it still holds no pods and is still not Ready, so it is still what the cancel gives back
    drained = old(2) + [old_drained] + new(1) + [inst("u1", az="a", ready=False, cordoned=True, drained=1)]
    second = cancel(drained, outdated, size=4, unavailable=1, owed=1, delay=60)
    assert second["action"] == "wait" and second["delayed"] == ["n-u1"]
    later = old(2) + [inst("o2", az="c", cordoned=True, drained=100)] + new(1) + [
        inst("u1", az="a", ready=False, cordoned=True, drained=70)]
    third = cancel(later, outdated, size=4, unavailable=1, owed=1, delay=60)
    assert third["action"] == "run" and third["terminate"] == ["u1"] and third["decrement"] == 1


# Capacity is what can take the pods: a NoSchedule/NoExecute taint of another owner keeps a node from counting.
STARTUP = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoSchedule"}
DEDICATED = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
OURS = {"key": "nodeops.rollout/outdated", "value": "true", "effect": "NoSchedule"}


def tainted(instances, *taints):
    for instance in instances:
        instance["node"]["taints"] = list(instance["node"]["taints"]) + list(taints)
    return instances


def test_new_nodes_with_a_startup_taint_are_waited_for_not_counted():
    # 4 old nodes tainted by the rollout, 4 surge nodes whose CNI has not lifted its startup taint yet
    group = tainted(old(4), OURS) + tainted(new(4), STARTUP)
    result = step(group, ids_of(group[:4]), 4, unavailable=1, owed=4)
    # only the 4 old nodes can take pods: the floor of 3 lets one drain, and nothing of the surge counts
    assert result["capacity"] == 4 and result["budget"] == 1
    # nothing up to date takes pods yet: the step waits for the surge, it drains nothing beside it
    assert result["booting"] == 4 and result["drain"] == [] and result["action"] == "wait"
    # once the taint is lifted the surge serves: 8 nodes over a floor of 3
    for instance in group[4:]:
        instance["node"]["taints"] = []
    lifted = step(group, ids_of(group[:4]), 4, unavailable=1, owed=4)
    assert lifted["capacity"] == 8 and lifted["booting"] == 0 and len(lifted["drain"]) == 4


def test_without_room_read_a_startup_tainted_surge_is_no_canary_pass():
    # nothing up to date can take pods: the canary waits for the new nodes instead of draining beside them
    group = old(3) + tainted(new(1), STARTUP)
    result = step(group, ids_of(group[:3]), 3, unavailable=1, owed=1)
    assert result["drain"] == [] and result["action"] == "wait"
    assert "1 new instance(s) to become Ready nodes" in " ".join(result["waiting_for"])


def test_an_operator_taint_on_an_old_node_takes_it_out_of_the_capacity():
    # surge 0: 4 old nodes, one dedicated to infra pods; 3 can take the pods to move, against a floor of 3
    group = old(4)
    tainted(group[:1], DEDICATED)
    result = step(group, ids_of(group), 4, unavailable=1, canary=False)
    assert result["capacity"] == 3 and result["budget"] == 0
    # the dedicated node costs the floor nothing: it alone is drained; no node that takes pods is
    assert [entry["node"] for entry in result["drain"]] == ["n-o0"]


def test_the_groups_own_taint_is_tolerated():
    # a GPU pool: every node registers with the pool's taint, which its pods tolerate
    gpu = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    group = tainted(old(3) + new(3), gpu)
    result = step(group, ids_of(group[:3]), 3, unavailable=1, owed=3)
    assert result["capacity"] == 6 and result["tolerated_taints"] == [gpu]
    assert len(result["drain"]) == 3


def test_a_prefer_no_schedule_taint_keeps_a_node_in_the_capacity():
    group = old(3) + tainted(new(1), dict(STARTUP, effect="PreferNoSchedule"))
    result = step(group, ids_of(group[:3]), 3, unavailable=1, owed=1)
    assert result["capacity"] == 4 and result["booting"] == 0


def test_the_capacity_view_names_every_node_the_floor_does_not_count_and_why():
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.steps import capacity_view
    group = old(2) + [inst("x", ready=False), inst("y", cordoned=True)] + tainted(new(1), STARTUP) + tainted(new(1, prefix="v"), OURS)
    view = capacity_view(group)
    assert view["taking_pods"] == ["n-o0", "n-o1", "n-v0"]
    assert view["not_counted"] == [{"node": "n-u0", "why": "tainted node.cilium.io/agent-not-ready=true:NoSchedule"},
                                   {"node": "n-x", "why": "not Ready"}, {"node": "n-y", "why": "cordoned"}]
