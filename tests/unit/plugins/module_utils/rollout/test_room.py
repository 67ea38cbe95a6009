# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/room.py: how many outdated nodes the receiving nodes have room for."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.room import (
    milli,
    node_selected,
    nodes_with_room,
    pod_requests,
    tolerates,
)
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fake_kube import make_node, make_pod


def node(name, cpu="2", memory="8Gi", pods="110", **kwargs):
    raw = make_node(name, **kwargs)
    raw["status"]["allocatable"] = {"cpu": cpu, "memory": memory, "pods": pods}
    return raw


def pod(name, on, cpu="500m", memory="1Gi", owner=("ReplicaSet", "web-rs"), **kwargs):
    raw = make_pod(name, on, owner=owner, **kwargs)
    raw["spec"]["containers"] = [{"name": "main", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
    return raw


def full_node(name, count=3, cpu="500m", **kwargs):
    """``count`` pods of ``cpu`` each on node ``name``."""
    return [pod("%s-p%d" % (name, index), name, cpu=cpu, **kwargs) for index in range(count)]


@pytest.mark.parametrize("value, expected", [("100m", 100), ("2", 2000), ("1.5", 1500), ("1Gi", 1073741824000), ("2e3", 2000000),
                                             (1, 1000), ("bogus", 0), (None, 0)])
def test_quantities_are_read_in_thousandths(value, expected):
    assert milli(value) == expected


def test_effective_requests_take_the_larger_of_containers_and_init_containers_plus_overhead():
    raw = pod("p", "n1", cpu="300m", memory="1Gi")
    raw["spec"]["containers"].append({"name": "side", "resources": {"requests": {"cpu": "200m"}}})
    raw["spec"]["containers"].append({"name": "bare"})
    raw["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "800m", "memory": "512Mi"}}}]
    raw["spec"]["overhead"] = {"cpu": "50m"}
    assert pod_requests(raw) == {"cpu": 850, "memory": 1073741824000, "pods": 1000}


def test_tolerations_match_as_the_api_matches_them():
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    assert tolerates([{"operator": "Exists"}], taint)
    assert tolerates([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}], taint)
    assert tolerates([{"key": "dedicated", "value": "gpu"}], taint)
    assert not tolerates([{"key": "dedicated", "value": "cpu"}], taint)
    assert not tolerates([{"operator": "Exists", "effect": "NoExecute"}], taint)
    assert not tolerates(None, taint)


def test_node_selector_and_required_affinity_choose_nodes():
    labels = {"topology.kubernetes.io/zone": "a", "size": "8"}
    raw = pod("p", None)
    assert node_selected(raw, labels, "n1")
    raw["spec"]["nodeSelector"] = {"topology.kubernetes.io/zone": "b"}
    assert not node_selected(raw, labels, "n1")
    raw["spec"]["nodeSelector"] = {}
    terms = [{"matchExpressions": [{"key": "size", "operator": "Gt", "values": ["16"]}]},
             {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]},
                                   {"key": "spot", "operator": "DoesNotExist"}]}]
    raw["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    assert node_selected(raw, labels, "n1")
    assert not node_selected(raw, dict(labels, spot="true"), "n1")
    terms[:] = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]
    assert not node_selected(raw, labels, "n1") and node_selected(raw, labels, "n2")


def test_a_new_node_with_room_for_one_old_node_takes_one():
    nodes = [node("old1"), node("old2"), node("new1")]
    pods = full_node("old1") + full_node("old2")  # 1.5 cpu each; the new node has 2
    assert nodes_with_room(["old1", "old2"], nodes, pods, excluded=["old1", "old2"]) == 1


def test_daemonset_mirror_finished_and_terminating_pods_need_no_room():
    nodes = [node("old1"), node("new1", cpu="1")]
    pods = [pod("ds", "old1", cpu="900m", owner=("DaemonSet", "agent")),
            pod("mirror", "old1", cpu="900m", owner=None, annotations={"kubernetes.io/config.mirror": "x"}),
            pod("done", "old1", cpu="900m", phase="Succeeded"),
            pod("going", "old1", cpu="900m"),
            pod("app", "old1", cpu="900m")]
    pods[3]["metadata"]["deletionTimestamp"] = "2026-11-25T07:00:00Z"
    assert nodes_with_room(["old1"], nodes, pods, excluded=["old1"]) == 1
    pods.append(pod("app2", "old1", cpu="200m"))
    assert nodes_with_room(["old1"], nodes, pods, excluded=["old1"]) == 0


def test_pods_already_on_a_receiving_node_use_its_room_and_terminating_ones_still_hold_theirs():
    nodes = [node("old1"), node("new1")]
    pods = full_node("old1", count=2) + [pod("busy", "new1", cpu="1500m")]
    assert nodes_with_room(["old1"], nodes, pods, excluded=["old1"]) == 0
    pods[-1]["metadata"]["deletionTimestamp"] = "2026-11-25T07:00:00Z"   # until it is gone, the scheduler counts it
    assert nodes_with_room(["old1"], nodes, pods, excluded=["old1"]) == 0
    pods[-1]["status"]["phase"] = "Succeeded"
    assert nodes_with_room(["old1"], nodes, pods, excluded=["old1"]) == 1


def test_pending_pods_and_pods_of_nodes_being_drained_are_placed_first():
    nodes = [node("old1"), node("old2"), node("old3"), node("new1"), node("new2")]
    pods = full_node("old1") + full_node("old2") + full_node("old3")
    assert nodes_with_room(["old2", "old3"], nodes, pods, excluded=["old1", "old2", "old3"]) == 2
    # old1 is being drained: its pods take one new node's room first
    assert nodes_with_room(["old2", "old3"], nodes, pods, excluded=["old1", "old2", "old3"], draining=["old1"]) == 1
    pending = [pod("wait-%d" % index, None, phase="Pending") for index in range(3)]
    assert nodes_with_room(["old2", "old3"], nodes, pods + pending, excluded=["old1", "old2", "old3"]) == 1
    # a Pending pod that fits nowhere takes no room from the others
    huge = [pod("huge", None, cpu="64", phase="Pending")]
    assert nodes_with_room(["old2", "old3"], nodes, pods + huge, excluded=["old1", "old2", "old3"]) == 2


def test_receiving_nodes_are_ready_schedulable_and_without_a_taint_the_pod_does_not_tolerate():
    outdated = [node("old1")]
    pods = full_node("old1")
    assert nodes_with_room(["old1"], outdated + [node("new1", ready=False)], pods, excluded=["old1"]) == 0
    assert nodes_with_room(["old1"], outdated + [node("new1", unschedulable=True)], pods, excluded=["old1"]) == 0
    soft = [{"key": "nodeops.rollout/queued", "value": "true", "effect": "PreferNoSchedule"}]
    assert nodes_with_room(["old1"], outdated + [node("other", taints=soft)], pods, excluded=["old1"]) == 0
    tolerant = [dict(raw, spec=dict(raw["spec"], tolerations=[{"operator": "Exists"}])) for raw in pods]
    assert nodes_with_room(["old1"], outdated + [node("other", taints=soft)], tolerant, excluded=["old1"]) == 1
    # an outdated node of the group never receives, whatever its room
    assert nodes_with_room(["old1"], outdated + [node("old2")], pods, excluded=["old1", "old2"]) == 0


def test_pods_pinned_to_a_zone_need_room_in_that_zone():
    nodes = [node("old1", az="a"), node("new-b", az="b"), node("new-c", az="c")]
    pods = full_node("old1", count=1)
    pods[0]["spec"]["nodeSelector"] = {"topology.kubernetes.io/zone": "a"}
    assert nodes_with_room(["old1"], nodes, pods, excluded=["old1"]) == 0
    nodes.append(node("new-a", az="a"))
    assert nodes_with_room(["old1"], nodes, pods, excluded=["old1"]) == 1


def test_pod_count_and_memory_are_resources_too():
    nodes = [node("old1"), node("new1", pods="2")]
    assert nodes_with_room(["old1"], nodes, full_node("old1", cpu="10m"), excluded=["old1"]) == 0
    nodes = [node("old1"), node("new1", memory="2Gi")]
    assert nodes_with_room(["old1"], nodes, full_node("old1", cpu="10m"), excluded=["old1"]) == 0


def test_the_order_is_kept_a_node_that_does_not_fit_stops_the_count():
    nodes = [node("old1"), node("old2"), node("new1")]
    pods = full_node("old1", count=4, cpu="600m") + full_node("old2", count=1)
    assert nodes_with_room(["old1", "old2"], nodes, pods, excluded=["old1", "old2"]) == 0
    assert nodes_with_room(["old2", "old1"], nodes, pods, excluded=["old1", "old2"]) == 1


def test_a_node_s_pods_spread_over_several_receivers():
    nodes = [node("old1", cpu="4"), node("new1"), node("new2")]
    pods = full_node("old1", count=6, cpu="600m")   # 3.6 cpu over two nodes of 2
    assert nodes_with_room(["old1"], nodes, pods, excluded=["old1"]) == 1
    pods.append(pod("one-more", "old1", cpu="600m"))
    assert nodes_with_room(["old1"], nodes, pods, excluded=["old1"]) == 0


def test_many_nodes_are_counted_exactly():
    nodes = [node("old%d" % n) for n in range(300)] + [node("new%d" % n) for n in range(100)]
    pods = [entry for n in range(300) for entry in full_node("old%d" % n, count=20, cpu="50m", memory="64Mi")]
    # each new node holds 2 cpu = 40 pods of 50m = two old nodes' worth
    assert nodes_with_room(["old%d" % n for n in range(300)], nodes, pods, excluded=["old%d" % n for n in range(300)]) == 200
