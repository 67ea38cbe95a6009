# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The termination gate as a table: which instance may be terminated, and why not."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import termination_gate as gate


def _node(name, instance_id=None, cordoned=True, provider=None):
    spec = {"unschedulable": cordoned}
    if instance_id or provider:
        spec["providerID"] = provider or "aws:///us-east-1a/%s" % instance_id
    return {"metadata": {"name": name}, "spec": spec}


def _pod(name, kind="ReplicaSet", phase="Running", mirror=False):
    metadata = {"namespace": "shop", "name": name}
    if kind:
        metadata["ownerReferences"] = [{"kind": kind, "name": "owner", "controller": True}]
    if mirror:
        metadata["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    return {"metadata": metadata, "status": {"phase": phase}}


GROUP = [{"instance_id": "i-1", "private_dns_name": "ip-1"}, {"instance_id": "i-2", "private_dns_name": "ip-2"},
         {"instance_id": "i-3", "private_dns_name": "ip-3"}]


@pytest.mark.parametrize("node, pods, refused_because", [
    (_node("ip-1", "i-1"), [], None),
    (_node("ip-1", "i-1"), [_pod("fluent", kind="DaemonSet"), _pod("kube-proxy", kind=None, mirror=True),
                            _pod("done", phase="Succeeded"), _pod("crashed", phase="Failed")], None),
    (_node("ip-1", "i-1", cordoned=False), [], "node ip-1 is not cordoned"),
    (_node("ip-1", "i-1"), [_pod("web-1")], "still runs 1 pod(s) that are not DaemonSet or mirror pods: shop/web-1"),
    (_node("ip-1", "i-1"), [_pod("naked", kind=None)], "shop/naked"),
    # a pod being evicted still serves until it is gone
    (_node("ip-1", "i-1"), [dict(_pod("leaving"), metadata=dict(_pod("leaving")["metadata"], deletionTimestamp="2024-01-01T00:00:00Z"))],
     "shop/leaving"),
    # matched by name when the providerID does not name the instance (EKS names nodes after the private DNS name)
    (_node("ip-1", provider="kind://docker/x/ip-1", cordoned=False), [], "node ip-1 is not cordoned"),
])
def test_a_node_must_be_cordoned_and_hold_only_daemonset_mirror_or_finished_pods(node, pods, refused_because):
    nodes = [node, _node("ip-2", "i-2"), _node("ip-3", "i-3")]
    refusals = gate.termination_refusals([GROUP[0]], GROUP, nodes, {"ip-1": pods}, "workers")
    if refused_because is None:
        assert refusals == []
    else:
        assert len(refusals) == 1 and refusals[0]["instance_id"] == "i-1" and refusals[0]["node"] == "ip-1"
        assert refused_because in refusals[0]["reason"] and refusals[0]["reason"].endswith("drain it first (node_drain)")


def test_a_node_of_another_instance_with_the_same_name_is_not_this_instances_node():
    # private DNS names repeat across VPCs with one CIDR: a node named ip-1 whose providerID names i-77 is somebody else's
    nodes = [_node("ip-1", "i-77"), _node("ip-2", "i-88")]
    refusals = gate.termination_refusals([GROUP[0]], GROUP, nodes, {}, "workers")
    assert refusals[0]["node"] is None and "neither has any other instance" in refusals[0]["reason"]
    serving = [dict(instance, lifecycle_state="InService") for instance in GROUP]
    assert gate.cluster_mismatch("workers", serving, nodes) is not None


def test_pods_not_read_are_not_taken_as_none():
    refusals = gate.termination_refusals([GROUP[0]], GROUP, [_node("ip-1", "i-1")], {}, "workers")
    assert "the pods of node ip-1 were not read" in refusals[0]["reason"]


def test_an_instance_that_never_registered_may_go_only_when_the_cluster_is_the_groups():
    # i-1 has no node while i-2 and i-3 have: it never registered
    assert gate.termination_refusals([GROUP[0]], GROUP, [_node("ip-2", "i-2"), _node("ip-3", "i-3")], {}, "workers") == []
    # no node matches any instance: another cluster
    refusals = gate.termination_refusals([GROUP[0]], GROUP, [_node("other", "i-9")], {}, "workers")
    assert refusals[0]["node"] is None and "neither has any other instance of Auto Scaling group 'workers'" in refusals[0]["reason"]


def test_cluster_mismatch_names_both_sides():
    serving = [dict(instance, lifecycle_state="InService") for instance in GROUP]
    assert gate.cluster_mismatch("workers", serving, [_node("ip-2", "i-2")]) is None
    assert gate.cluster_mismatch("workers", [dict(GROUP[0], lifecycle_state="Pending")], []) is None
    message = gate.cluster_mismatch("workers", serving, [_node("n-%d" % index, "i-9%d" % index) for index in range(7)])
    assert message.startswith("none of the 3 instances in service of Auto Scaling group 'workers' (i-1, i-2, i-3) is a node of this "
                              "Kubernetes cluster, whose 7 nodes are n-0 (aws:///us-east-1a/i-90)")
    assert "and 2 more" in message and message.endswith("nothing was changed")


def test_refusal_message_lists_each_instance():
    refusals = [{"instance_id": "i-1", "node": "ip-1", "reason": "i-1: node ip-1 is not cordoned; drain it first (node_drain)"},
                {"instance_id": "i-2", "node": None, "reason": "i-2: no node"}]
    assert gate.refusal_message(refusals, "workers") == (
        "refused to terminate 2 instance(s) of Auto Scaling group 'workers' that are not drained, nothing was terminated: "
        "i-1: node ip-1 is not cordoned; drain it first (node_drain); i-2: no node")
