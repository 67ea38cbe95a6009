# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""node_health: one validation pass and a message that says exactly what failed."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import node_health
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import HealthError


def node(name, instance_id, az="us-east-1a", ready=True, cordoned=False, labels=None, reason=None, deleting=False):
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    if reason:
        condition["reason"] = reason
    metadata = {"name": name, "labels": dict({"topology.kubernetes.io/zone": az}, **(labels or {}))}
    if deleting:
        metadata["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    spec = {"providerID": "aws:///%s/%s" % (az, instance_id)}
    if cordoned:
        spec["unschedulable"] = True
    return {"metadata": metadata, "spec": spec, "status": {"conditions": [condition]}}


def critical(name, priority, node_name, ready=True, phase="Running", namespace="kube-system"):
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"priorityClassName": priority, "nodeName": node_name},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                                       "reason": None if ready else "ContainersNotReady"}]}}


def test_provider_id_parsing():
    assert node_health.parse_provider_id("aws:///us-east-1a/i-0abc123") == ("us-east-1a", "i-0abc123")
    assert node_health.parse_provider_id("aws:///i-0abc123") == (None, "i-0abc123")
    assert node_health.parse_provider_id("gce://project/zone/vm") == (None, None)
    # the forms the termination gate reads too: one reader for both
    assert node_health.parse_provider_id("aws://us-east-1a/i-0abc123") == ("us-east-1a", "i-0abc123")
    assert node_health.parse_provider_id("aws:///us-east-1a/i-0abc123/") == ("us-east-1a", "i-0abc123")
    assert node_health.parse_provider_id("aws:///us-east-1a/fargate-ip-10-0-0-1") == (None, None)
    assert node_health.parse_provider_id(None) == (None, None)


def test_all_instances_ready_and_schedulable_is_valid():
    nodes = [node("a", "i-1", "us-east-1a"), node("b", "i-2", "us-east-1b"), node("other", "i-9")]
    result = node_health.evaluate(nodes, instance_ids=["i-1", "i-2"], each_az=True)
    assert result["ok"]
    assert sorted(result["nodes"]) == ["a", "b"]
    assert result["message"] == "valid: 2 node(s) Ready and schedulable in us-east-1a, us-east-1b"


def test_missing_not_ready_and_cordoned_are_each_named():
    nodes = [node("a", "i-1", ready=False, reason="KubeletNotReady"), node("b", "i-2", "us-east-1b", ready=True, cordoned=True)]
    result = node_health.evaluate(nodes, instance_ids=["i-1", "i-2", "i-3"])
    assert not result["ok"]
    assert result["missing"] == ["i-3"]
    assert result["not_ready"] == ["a"]
    assert result["unschedulable"] == ["b"]
    assert result["message"] == ("not valid: 1 of 3 instance(s) have no node registered: i-3; node a (i-1) not Ready: "
                                 "KubeletNotReady; node(s) cordoned: b")


def test_cordoned_nodes_pass_when_schedulable_is_not_required():
    result = node_health.evaluate([node("a", "i-1", cordoned=True)], instance_ids=["i-1"], schedulable=False)
    assert result["ok"] and result["unschedulable"] == []


def test_each_az_needs_a_ready_schedulable_node_in_every_zone():
    nodes = [node("a", "i-1", "us-east-1a"), node("b", "i-2", "us-east-1b", ready=False)]
    result = node_health.evaluate(nodes, instance_ids=["i-1", "i-2"], each_az=True)
    assert result["azs_without_ready_node"] == ["us-east-1b"]
    assert "no Ready schedulable node in AZ(s) us-east-1b" in result["message"]


def test_each_az_with_explicit_zones_covers_zones_of_instances_without_nodes():
    result = node_health.evaluate([node("a", "i-1", "us-east-1a")], instance_ids=["i-1"], each_az=True,
                                  azs=["us-east-1a", "us-east-1c"])
    assert result["azs_without_ready_node"] == ["us-east-1c"]


def test_label_selector_mode_counts_ready_nodes():
    nodes = [node("a", "i-1"), node("b", "i-2", ready=False), node("c", "i-3", cordoned=True)]
    result = node_health.evaluate(nodes, expected_count=2, label_selector="group=workers")
    assert not result["ok"] and result["ready_count"] == 1
    assert result["message"].startswith("not valid: 1 node(s) matching group=workers Ready and schedulable, 2 expected")
    assert node_health.evaluate(nodes, expected_count=1, label_selector="group=workers", schedulable=False)["ready_count"] == 2


def test_nodes_being_deleted_do_not_count():
    result = node_health.evaluate([node("a", "i-1", deleting=True)], instance_ids=["i-1"])
    assert result["missing"] == ["i-1"]


def test_critical_pods_cluster_critical_anywhere_node_critical_only_on_expected_nodes():
    pods = [critical("coredns-1", "system-cluster-critical", "elsewhere", ready=False),
            critical("agent-a", "system-node-critical", "a", ready=False),
            critical("agent-x", "system-node-critical", "elsewhere", ready=False),
            critical("app", None, "a", ready=False),
            critical("coredns-2", "system-cluster-critical", None, ready=False, phase="Pending")]
    result = node_health.evaluate([node("a", "i-1")], instance_ids=["i-1"], critical_pods=pods)
    assert [entry["pod"] for entry in result["critical_pods_not_ready"]] == ["kube-system/agent-a", "kube-system/coredns-1",
                                                                             "kube-system/coredns-2"]
    assert "critical pod kube-system/coredns-2 (system-cluster-critical) not Ready: Pending (not scheduled)" in result["message"]


def test_critical_pods_ready_is_said():
    result = node_health.evaluate([node("a", "i-1")], instance_ids=["i-1"], critical_pods=[critical("c", "system-cluster-critical", "a")])
    assert result["ok"] and result["message"].endswith("; critical pods Ready")


@pytest.mark.parametrize("value, message", [
    ([], "instance_ids: [] is not allowed"),
    (["i-1", "web-1"], "instance_ids[1]: 'web-1' is not allowed; use an EC2 instance id (i-...)"),
    ("i-1", "instance_ids: 'i-1' is not allowed"),
])
def test_bad_instance_ids(value, message):
    with pytest.raises(HealthError) as info:
        node_health.check_instance_ids(value)
    assert message in str(info.value)


def test_duplicate_instance_ids_are_collapsed():
    assert node_health.check_instance_ids(["i-1", "i-1", "i-2"]) == ["i-1", "i-2"]


def _joined(instance_id, launched, node=None, ready=False, lifecycle="InService", detached=False):
    return {"instance_id": instance_id, "az": "us-east-1a", "lifecycle_state": lifecycle, "detached": detached,
            "launch_time": launched, "node": None if node is None else {"name": node, "ready": ready}}


def test_failed_to_join_lists_up_to_date_instances_that_had_their_time_and_are_no_ready_node():
    from datetime import datetime, timezone  # pylint: disable=import-outside-toplevel
    now = datetime(2026, 11, 24, 12, 10, tzinfo=timezone.utc)
    instances = [
        _joined("i-never", "2026-11-24T12:00:00Z"),                                  # no node after 600 s
        _joined("i-notready", "2026-11-24T11:59:00Z", node="n-2"),                     # node NotReady after 660 s
        _joined("i-ready", "2026-11-24T12:00:00Z", node="n-3", ready=True),           # fine
        _joined("i-young", "2026-11-24T12:08:00Z"),                                  # still within its timeout
        _joined("i-old", "2026-11-24T11:00:00Z"),                                    # outdated: not the rollout's
        _joined("i-pending", "2026-11-24T11:00:00Z", lifecycle="Pending"),           # the group is still launching it
        _joined("i-detached", "2026-11-24T11:00:00Z", detached=True),
    ]
    up_to_date = ["i-never", "i-notready", "i-ready", "i-young", "i-pending", "i-detached"]
    found = node_health.failed_to_join(instances, up_to_date, now, 300)
    assert [entry["instance_id"] for entry in found] == ["i-notready", "i-never"]
    assert found[0]["node"] == "n-2" and found[0]["reason"] == "node n-2 not Ready 660s after launch"
    assert found[1]["node"] is None and found[1]["reason"] == "no node registered 600s after launch"
    assert node_health.failed_to_join(instances, up_to_date, now, 3600) == []


def test_node_summary_of_an_instance_node():
    node = {"metadata": {"name": "ip-10-0-0-1.ec2.internal", "labels": {"a": "b"}, "annotations": {"x": "y"}},
            "spec": {"providerID": "aws:///us-east-1a/i-0abc12345", "unschedulable": True,
                     "taints": [{"key": "nodeops.rollout/outdated", "value": "true", "effect": "NoSchedule", "timeAdded": "t"}]},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}]}}
    summary = node_health.node_summary(node, node_health.INSTANCE_NODE_FIELDS)
    assert summary["name"] == "ip-10-0-0-1.ec2.internal" and summary["ready"] is True and summary["schedulable"] is False
    assert summary["taints"] == [{"key": "nodeops.rollout/outdated", "value": "true", "effect": "NoSchedule"}]
    assert summary["labels"] == {"a": "b"} and summary["annotations"] == {"x": "y"}
    bare = node_health.node_summary({"metadata": {"name": "n"}}, node_health.INSTANCE_NODE_FIELDS)
    assert bare["ready"] is False and bare["schedulable"] is True and bare["taints"] == []


def test_a_ready_node_still_tainted_by_the_node_controller_takes_no_pod_yet():
    # kube-controller-manager keeps node.kubernetes.io/not-ready on a new node for a while after its kubelet reports Ready
    lingering = node("n1", "i-1")
    lingering["spec"]["taints"] = [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]
    summary = node_health.node_summary(lingering)
    assert summary["ready"] is False
    assert summary["not_ready_reason"] == "Ready, but still tainted node.kubernetes.io/not-ready:NoExecute by the node controller"
    # the cordon's own taint is the cordon, and other owners' taints are theirs: the node is Ready
    for key, effect in (("node.kubernetes.io/unschedulable", "NoSchedule"), ("example.com/gpu", "NoSchedule"),
                        ("node.kubernetes.io/not-ready", "PreferNoSchedule")):
        other = node("n2", "i-2")
        other["spec"]["taints"] = [{"key": key, "effect": effect}]
        assert node_health.node_summary(other)["ready"] is True, key


def test_ready_since_is_the_ready_conditions_last_transition_while_ready():
    ready = node("a", "i-1")
    ready["status"]["conditions"][0]["lastTransitionTime"] = "2026-11-25T07:00:05Z"
    assert node_health.ready_since(ready) == "2026-11-25T07:00:05Z"
    not_ready = node("b", "i-2", ready=False)
    not_ready["status"]["conditions"][0]["lastTransitionTime"] = "2026-11-25T07:00:05Z"
    assert node_health.ready_since(not_ready) is None
    assert node_health.ready_since(node("c", "i-3")) is None   # Ready, but no time reported


@pytest.mark.parametrize("provider_id, expected", [
    ("aws:///us-east-1a/i-0abc", "i-0abc"), ("aws:///us-east-1a/i-0abc/", "i-0abc"), ("gce://p/z/vm", None), (None, None),
    ("aws:///us-east-1a/fargate-ip-1", None),
])
def test_instance_id_of(provider_id, expected):
    assert node_health.instance_id_of(provider_id) == expected


@pytest.mark.parametrize("provider_id, expected", [
    ("aws:///us-east-1a/i-0123456789abcdef0", "i-0123456789abcdef0"),
    ("aws:///us-east-1a/i-0123456789abcdef0/", "i-0123456789abcdef0"),
    ("aws://us-east-1a/i-0abc12345", "i-0abc12345"),
    ("gce://project/zone/vm-1", None),
    ("aws:///us-east-1a/fargate-ip-10-0-0-1", None),
    ("", None),
    (None, None),
])
def test_instance_id_of_more_provider_id_forms(provider_id, expected):
    assert node_health.instance_id_of(provider_id) == expected


def test_a_startup_taint_keeps_a_ready_node_from_validating_and_is_named():
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import evaluate, keeping_pods_off
    node = {"metadata": {"name": "ip-1"}, "spec": {"providerID": "aws:///us-east-1a/i-0001",
                                                   "taints": [{"key": "node.cilium.io/agent-not-ready", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-25T07:00:00Z"}]}}
    result = evaluate([node], instance_ids=["i-0001"])
    assert not result["ok"] and result["not_ready"] == ["ip-1"]
    assert "tainted node.cilium.io/agent-not-ready:NoSchedule" in result["message"]
    # the group's own taint is tolerated, and the rollout's own never counts against a node
    tolerated = [{"key": "node.cilium.io/agent-not-ready", "value": None, "effect": "NoSchedule"}]
    assert evaluate([node], instance_ids=["i-0001"], tolerated_taints=tolerated)["ok"]
    assert keeping_pods_off([{"key": "nodeops.rollout/outdated", "value": "true", "effect": "NoSchedule"},
                             {"key": "ebs.csi.aws.com/agent-not-ready", "effect": "NoExecute"},
                             {"key": "soft", "effect": "PreferNoSchedule"}]) == ["ebs.csi.aws.com/agent-not-ready:NoExecute"]
    # not checked when the validation does not ask for schedulable nodes
    assert evaluate([node], instance_ids=["i-0001"], schedulable=False)["ok"]


def test_group_taints_are_those_every_node_carries():
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import group_taints
    gpu = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    startup = {"key": "node.cilium.io/agent-not-ready", "value": None, "effect": "NoSchedule"}
    assert group_taints([{"taints": [gpu]}, {"taints": [gpu, startup]}]) == [gpu]
    assert group_taints([{"taints": [startup]}, {"taints": []}]) == []
    assert group_taints([]) == []
