# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""node_group_info: groups, instances joined to their nodes, the plan and the recorded state, against moto.

Fixtures (world, run, api_calls, cluster) come from aws_world.py through conftest.py.
"""

from __future__ import annotations

import boto3
import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.runners import node_group as node_group_utils
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.aws_world import AZS, mutating


def test_info_resolves_latest_and_marks_every_old_instance_outdated(world, run):
    assert world.new_version() == 2
    result = run("node_group_info", name="workers", include_nodes=False)
    assert result["changed"] is False
    group = result["node_groups"][0]
    assert (group["min_size"], group["max_size"], group["desired_capacity"]) == (3, 6, 3)
    assert group["availability_zones"] == list(AZS) and group["az_count"] == 3
    assert group["launch_template"]["version_spec"] == "$Latest"
    assert group["launch_template"]["version"] == 2 and group["launch_template"]["image_id"] == world.new_ami
    assert group["target"] == {"launch_template_id": world.lt_id, "version": "2", "image_id": world.new_ami}
    assert sorted(entry["instance_id"] for entry in group["outdated"]) == world.member_ids()
    assert all(instance["outdated"] and "target version is 2" in instance["outdated_reasons"][0] for instance in group["instances"])
    plan = group["plan"]
    # the surged instances come first, so no canary of one; with the surge serving, all 3 drain in one wave
    assert plan["canary"] is False and len(plan["batches"]) == 1 and len(plan["batches"][0]["instance_ids"]) == 3
    # EKS default surge max(2 x 3 AZs, 1) = 6, never more than the 3 outdated instances.
    assert plan["surge_requested"] == 6 and plan["surge"] == 3
    assert group["state"] is None


def test_info_default_version_means_up_to_date(world, run):
    world.new_version()
    world.create_group("pinned", 2, version="$Default")
    group = run("node_group_info", name="pinned", include_nodes=False)["node_groups"][0]
    assert group["launch_template"]["version"] == 1 and group["outdated"] == []
    assert group["plan"]["batches"] == [] and group["plan"]["surge"] == 0


def test_info_reads_mixed_instances_policy(world, run):
    world.new_version()
    world.create_group("mixed", 2, version="$Latest", mixed=True)
    group = run("node_group_info", name="mixed", include_nodes=False)["node_groups"][0]
    assert group["launch_template"]["mixed_instances_policy"] is True
    assert group["launch_template"]["version"] == 2 and group["outdated_count"] == 2


def test_info_finds_groups_by_tags(world, run):
    world.create_group("other-cluster", 1, tags={"kubernetes.io/cluster/other": "owned"})
    world.create_group("gpu", 1, tags={"kubernetes.io/cluster/unit": "owned", "eks:nodegroup-name": "gpu"})
    result = run("node_group_info", tags={"kubernetes.io/cluster/unit": None}, include_nodes=False)
    assert [group["name"] for group in result["node_groups"]] == ["gpu", "workers"]
    result = run("node_group_info", tags={"eks:nodegroup-name": "gpu", "kubernetes.io/cluster/unit": "owned"}, include_nodes=False)
    assert [group["name"] for group in result["node_groups"]] == ["gpu"]


def _info_sees_nodes(monkeypatch, items, attachments=(), volumes=(), version="v1.30.6"):
    """node_group_info's Kubernetes client lists ``items`` as the cluster's nodes (and ``attachments``, ``volumes`` as
    its VolumeAttachments and PersistentVolumes); its /version says ``version``."""

    class Nodes:
        @staticmethod
        def list_nodes():
            return items

        @staticmethod
        def list_volume_attachments():
            return list(attachments)

        @staticmethod
        def list_persistent_volumes():
            return list(volumes)

        @staticmethod
        def server_version():
            Nodes.reads.append("version")
            return {"major": "1", "minor": version.split(".")[1] + "+", "gitVersion": version}

    Nodes.reads = []   # pylint: disable=attribute-defined-outside-init
    for method in ("list_volume_attachments", "list_persistent_volumes"):
        def counted(method=method, original=getattr(Nodes, method)):
            Nodes.reads.append(method)
            return original()
        setattr(Nodes, method, staticmethod(counted))
    monkeypatch.setattr(node_group_utils, "KubeApi", lambda api_client: Nodes())
    monkeypatch.setattr(node_group_utils, "k8s_client", lambda module: object())
    return Nodes.reads


def test_info_joins_nodes_by_provider_id_and_honours_needs_update(world, run, monkeypatch):
    ids = world.member_ids()

    items = []
    for index, instance_id in enumerate(ids):
        annotations = {"nodeops.rollout/needs-update": "true"} if index == 0 else {}
        items.append({"metadata": {"name": "node-%d" % index, "annotations": annotations},
                      "spec": {"providerID": "aws:///%s/%s" % (AZS[index], instance_id), "unschedulable": index == 1,
                               "taints": [{"key": "k", "effect": "NoSchedule"}] if index == 1 else []},
                      "status": {"conditions": [{"type": "Ready", "status": "True" if index != 2 else "False"}]}})
    items.append({"metadata": {"name": "elsewhere"}, "spec": {"providerID": "gce://p/z/vm"}, "status": {}})
    _info_sees_nodes(monkeypatch, items)
    group = run("node_group_info", name="workers")["node_groups"][0]
    by_id = {instance["instance_id"]: instance for instance in group["instances"]}
    assert by_id[ids[0]]["node"] == {"name": "node-0", "ready": True, "schedulable": True, "taints": []}
    assert by_id[ids[1]]["node"]["schedulable"] is False and by_id[ids[1]]["node"]["taints"][0]["key"] == "k"
    assert by_id[ids[2]]["node"]["ready"] is False
    # The group is on its latest version: only the annotated node is outdated.
    assert [entry["instance_id"] for entry in group["outdated"]] == [ids[0]]
    assert "annotated nodeops.rollout/needs-update" in group["outdated"][0]["reason"]


def pinned_volume(name, zone, claim="shop/data"):
    namespace, claim_name = claim.split("/")
    return {"metadata": {"name": name}, "spec": {"claimRef": {"namespace": namespace, "name": claim_name}, "nodeAffinity": {
        "required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}}}


def test_a_volume_on_an_outdated_node_pinned_where_no_node_would_be_left_refuses_the_group(world, run, monkeypatch):
    world.new_version()
    ids = world.member_ids()
    items = [{"metadata": {"name": "node-%d" % index, "labels": {"topology.kubernetes.io/zone": AZS[index]}},
              "spec": {"providerID": "aws:///%s/%s" % (AZS[index], instance_id)},
              "status": {"conditions": [{"type": "Ready", "status": "True"}]}} for index, instance_id in enumerate(ids)]
    attachment = {"metadata": {"name": "csi-1"}, "status": {"attached": True},
                  "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "node-0", "source": {"persistentVolumeName": "pv-d"}}}
    # pv-a can go to a new node in us-east-1a; pv-d is in a zone the group launches nothing in, and no other node is there
    _info_sees_nodes(monkeypatch, items, [attachment, dict(attachment, spec=dict(attachment["spec"], persistentVolumeName="pv-a",
                                                                                 source={"persistentVolumeName": "pv-a"}))],
                     [pinned_volume("pv-d", "us-east-1d"), pinned_volume("pv-a", "us-east-1a", claim="shop/logs")])
    group = run("node_group_info", name="workers", target={"launch_template_id": world.lt_id, "version": 2})["node_groups"][0]
    assert group["refusals"] == [
        "volume pv-d (claim shop/data) on outdated node node-0 is pinned to us-east-1d, where the group launches no instance "
        "(its zones: us-east-1a, us-east-1b, us-east-1c) and no other schedulable node is: its pod could never start again "
        "once the node is drained; add the zone to the group or make room on a node there"]
    # a schedulable node in us-east-1d outside the group is a home: no refusal
    items.append({"metadata": {"name": "other-d", "labels": {"topology.kubernetes.io/zone": "us-east-1d"}}, "spec": {},
                  "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert run("node_group_info", name="workers", target={"launch_template_id": world.lt_id, "version": 2})["node_groups"][0]["refusals"] == []


def test_a_group_with_no_outdated_node_reads_no_volume_attachments(world, run, monkeypatch):
    ids = world.member_ids()
    items = [{"metadata": {"name": "node-%d" % index}, "spec": {"providerID": "aws:///%s/%s" % (AZS[index], instance_id)},
              "status": {"conditions": [{"type": "Ready", "status": "True"}]}} for index, instance_id in enumerate(ids)]
    attachment = {"metadata": {"name": "csi-1"}, "status": {"attached": True},
                  "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "node-0", "source": {"persistentVolumeName": "pv-d"}}}
    reads = _info_sees_nodes(monkeypatch, items, [attachment], [pinned_volume("pv-d", "us-east-1d")])
    # every node runs the group's version: nothing would leave a node, so nothing could be stranded
    group = run("node_group_info", name="workers")["node_groups"][0]
    assert group["outdated"] == [] and group["refusals"] == [] and reads == []
    # once a node is outdated, its volumes are read (once), and the one pinned where no node would be left is named;
    # unless the caller checked them already
    world.new_version()
    group = run("node_group_info", name="workers", check_volumes=False)["node_groups"][0]
    assert len(group["outdated"]) == 3 and group["refusals"] == [] and reads == []
    group = run("node_group_info", name="workers")["node_groups"][0]
    assert reads == ["list_volume_attachments", "list_persistent_volumes"]
    assert [refusal.split(" on ")[0] for refusal in group["refusals"]] == ["volume pv-d (claim shop/data)"]


def test_info_reports_the_recorded_state_and_detached_instances(world, run):
    world.new_version()
    assert run("asg_surge", name="workers", method="detach", surge=1)["changed"] is True
    group = run("node_group_info", name="workers", include_nodes=False)["node_groups"][0]
    state = group["state"]
    assert state["method"] == "detach" and state["original_desired_capacity"] == 3 and state["surge"] == 1
    assert len(group["detached_instances"]) == 1
    detached = [instance for instance in group["instances"] if instance["detached"]]
    assert detached[0]["lifecycle_state"] == "Detached" and detached[0]["outdated"] is True
    assert "detached from the group for surge" in detached[0]["outdated_reasons"][0]


def test_a_recorded_rollout_is_planned_with_the_surge_it_still_owes(world, run):
    """A resumed rollout is never surged anew: with its surge paid back and every node outdated (a rollback of a
    finished rollout), the plan has no surge and taints the outdated nodes PreferNoSchedule, leaving the pods of the
    first drain somewhere to go."""
    world.new_version()
    assert run("asg_surge", name="workers", surge=3, wait=False)["changed"] is True
    assert run("node_group_info", name="workers", include_nodes=False)["node_groups"][0]["plan"]["surge"] == 3
    autoscaling = boto3.client("autoscaling", region_name="us-east-1")
    autoscaling.set_desired_capacity(AutoScalingGroupName="workers", DesiredCapacity=3)   # the surge paid back
    plan = run("node_group_info", name="workers", include_nodes=False)["node_groups"][0]["plan"]
    assert plan["surge"] == 0 and plan["taint_effect"] == "PreferNoSchedule" and plan["outdated_count"] == 3


def test_the_flags_of_a_group_say_what_the_role_acts_on_before_and_after_a_surge(world, run):
    world.new_version()
    before = run("node_group_info", name="workers", include_nodes=False)["node_groups"][0]
    assert before["has"]["rollout"] is False and before["has"]["up_to_date"] is False and before["has"]["payback"] is False
    assert before["has"]["outdated_nodes"] is False and before["outdated_nodes"] == []   # no node read
    assert before["stale_warm"] == [] and before["has"]["stale_warm"] is False and before["has"]["refusal"] is False
    assert run("asg_surge", name="workers", surge=1, wait=False)["changed"] is True
    after = run("node_group_info", name="workers", include_nodes=False)["node_groups"][0]
    assert after["has"]["rollout"] is True and after["has"]["up_to_date"] is bool(after["up_to_date"])


@pytest.mark.parametrize("field, value, words", [
    ("max_unavailable", "150%", "a percentage between 1% and 100%"),
    ("max_unavailable", "abc", "an integer >= 1"),
    ("max_unavailable", 0, "an integer >= 1"),
    ("max_unavailable", -1, "an integer >= 1"),
    ("max_surge", "-1", "an integer >= 0"),
    ("max_surge", "abc", "an integer >= 0"),
])
def test_info_refuses_bad_settings_before_any_call(world, run, api_calls, field, value, words):
    result = run("node_group_info", name="workers", include_nodes=False, **{field: value})
    assert result["failed"] and result["msg"].startswith("%s: %r is not allowed" % (field, value))
    assert words in result["msg"]
    assert api_calls == []


def test_info_refuses_unknown_groups_empty_groups_and_tags_matching_nothing(world, run, api_calls):
    result = run("node_group_info", name="nope", include_nodes=False)
    assert result["msg"] == "name: Auto Scaling group 'nope' not found in region us-east-1"
    world.create_group("empty", 0, low=0, high=3)
    result = run("node_group_info", name="empty", include_nodes=False)
    assert result["msg"].startswith("name: Auto Scaling group 'empty' has no instances")
    result = run("node_group_info", tags={"kubernetes.io/cluster/nope": None}, include_nodes=False)
    assert result["msg"].startswith("tags: no Auto Scaling group in region us-east-1 has the tags")
    assert mutating(api_calls) == []


def test_info_names_both_sides_when_the_groups_instances_are_not_nodes_of_the_cluster(world, run, monkeypatch):
    _info_sees_nodes(monkeypatch, [{"metadata": {"name": "ip-10-9-9-9.ec2.internal"},
                                    "spec": {"providerID": "aws:///eu-west-1a/i-0ddddddddddddddd0"}, "status": {}}])
    result = run("node_group_info", name="workers")
    group = result["node_groups"][0]
    assert group["mismatch"].startswith("none of the 3 instances in service of Auto Scaling group 'workers' (")
    assert all(instance["instance_id"] in group["mismatch"] for instance in group["instances"])
    assert "ip-10-9-9-9.ec2.internal (aws:///eu-west-1a/i-0ddddddddddddddd0)" in group["mismatch"]
    assert result["refusal"].startswith(group["mismatch"])


def test_info_reads_the_operator_s_controls(world, run):
    world.asg.create_or_update_tags(Tags=[{"ResourceId": "workers", "ResourceType": "auto-scaling-group",
                                           "Key": "nodeops.rollout/pause", "Value": "true", "PropagateAtLaunch": False}])
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    cloudwatch.put_metric_alarm(AlarmName="shop-5xx", MetricName="5xx", Namespace="shop", Statistic="Sum", Period=60,
                                EvaluationPeriods=1, Threshold=1, ComparisonOperator="GreaterThanThreshold")
    result = run("node_group_info", name="workers", include_nodes=False, abort_alarms=["shop-5xx"], windows="daily 00:00 24h UTC",
                 step_seconds="10m", bake_time="5m", checkpoints=["50%:1m"])
    group = result["node_groups"][0]
    assert group["pause_requested"] is True and result["alarms"][0]["state"] == "OK"
    assert result["window"]["open"] is True and result["start_refusal"] is None and result["refusal"] is None
    assert group["plan"]["bake_seconds"] == 300 and group["plan"]["checkpoints"][0]["count"] == 2
    cloudwatch.set_alarm_state(AlarmName="shop-5xx", StateValue="ALARM", StateReason="Threshold Crossed")
    refused = run("node_group_info", name="workers", include_nodes=False, abort_alarms=["shop-5xx"])
    assert refused["start_refusal"].startswith("rolling_update_abort_alarms: abort alarm 'shop-5xx' is in ALARM")
    assert refused["refusal"] == refused["start_refusal"]
    missing = run("node_group_info", name="workers", include_nodes=False, abort_alarms=["gone"])
    assert missing["failed"] and missing["msg"].startswith("abort_alarms: CloudWatch alarm(s) gone not found")


def _nodes_of(world, kubelet=None, ids=None):
    return [{"metadata": {"name": "node-%d" % index}, "spec": {"providerID": "aws:///%s/%s" % (AZS[index % 3], instance_id)},
             "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": kubelet or "v1.29.8"}}}
            for index, instance_id in enumerate(ids or world.member_ids())]


def test_a_target_whose_kubelet_is_newer_than_the_control_plane_is_refused_naming_both(world, run, monkeypatch):
    image = world.ec2.register_image(Name="amazon-eks-node-1.31-v20240917", RootDeviceName="/dev/xvda")["ImageId"]
    version = world.new_version(image)
    reads = _info_sees_nodes(monkeypatch, _nodes_of(world), version="v1.30.6-eks-7f9249a")
    group = run("node_group_info", name="workers", target={"launch_template_id": world.lt_id, "version": version,
                                                           "image_id": image})["node_groups"][0]
    assert group["refusals"] == [
        "version skew: AMI %s (amazon-eks-node-1.31-v20240917) runs kubelet 1.31, newer than the control plane's 1.30 "
        "(v1.30.6-eks-7f9249a); a kubelet must not be newer than kube-apiserver: upgrade the control plane to 1.31 first" % image]
    assert group["versions"]["control_plane"] == "v1.30.6-eks-7f9249a" and group["versions"]["kubelet"] == "1.31"
    assert reads.count("version") == 1


def test_the_ssm_path_tells_when_the_name_does_not_and_an_allowed_skew_passes(world, run, monkeypatch):
    image = world.ec2.register_image(Name="golden-2024-09", RootDeviceName="/dev/xvda")["ImageId"]
    version = world.new_version(image)
    _info_sees_nodes(monkeypatch, _nodes_of(world), version="v1.30.6")
    target = {"launch_template_id": world.lt_id, "version": version, "image_id": image}
    group = run("node_group_info", name="workers", target=dict(
        target, ssm_parameter="/aws/service/eks/optimized-ami/1.26/amazon-linux-2/recommended/image_id"))["node_groups"][0]
    assert len(group["refusals"]) == 1 and "kubelet 1.26, 4 minor versions older than the control plane's 1.30" in group["refusals"][0]
    group = run("node_group_info", name="workers", target=dict(
        target, ssm_parameter="/aws/service/eks/optimized-ami/1.27/amazon-linux-2/recommended/image_id"))["node_groups"][0]
    assert group["refusals"] == [] and group["versions"]["kubelet"] == "1.27"
    # without a target or a recorded rollout, nothing is checked (nothing is read for it)
    assert run("node_group_info", name="workers")["node_groups"][0]["versions"] is None


def test_new_nodes_are_checked_against_the_target_kubelet(world, run, monkeypatch):
    # the group's instances run the target (version 1): they are its new nodes, registered with kubelet 1.29
    _info_sees_nodes(monkeypatch, _nodes_of(world, "v1.29.8"), version="v1.30.6")
    target = {"launch_template_id": world.lt_id, "version": 1, "image_id": world.old_ami,
              "ssm_parameter": "/aws/service/eks/optimized-ami/1.30/amazon-linux-2/recommended/image_id"}
    group = run("node_group_info", name="workers", target=target)["node_groups"][0]
    assert group["outdated"] == [] and len(group["refusals"]) == 3
    assert all(refusal.startswith("new node node-") and refusal.endswith(
        "runs kubelet v1.29.8, not the 1.30 of SSM parameter /aws/service/eks/optimized-ami/1.30/amazon-linux-2/recommended/image_id")
        for refusal in group["refusals"]), group["refusals"]
    # a custom AMI named by nothing: the first new node tells, and agrees with the others
    group = run("node_group_info", name="workers", target=dict(target, ssm_parameter=None))["node_groups"][0]
    assert group["refusals"] == [] and group["versions"]["kubelet"] == "1.29"
    assert group["versions"]["kubelet_source"].startswith("new node node-")


def test_the_flags_name_what_a_cancel_and_a_pause_release():
    drained = {"node": "old-1", "instance_id": "i-1", "marks": ["taint"], "drained": True}
    serving = {"node": "old-2", "instance_id": "i-2", "marks": ["taint"], "drained": False}
    new = {"node": "new-1", "instance_id": "i-3", "marks": ["autoscaler"]}
    view = {"outdated": [{"node": "old-1"}, {"node": "old-2"}], "plan": {}, "mismatch": None, "refusals": [],
            "up_to_date": ["i-3"], "marked": [new], "marked_outdated": [drained, serving], "failed_to_join": [],
            "leftovers": [], "payback": [], "state": None, "versions": None}
    flags = node_group_utils.group_flags(view)
    assert flags["marked_all"] == [drained, serving, new]
    assert flags["marked_undrained"] == [serving]
    assert flags["outdated_nodes"] == ["old-1", "old-2"] and flags["has"]["marked"] and not flags["has"]["refusal"]


@pytest.mark.parametrize("state, plan_surge, surge, each_az, unplaced", [
    (None, 3, 3, True, ["us-east-1c"]),
    ({"surge": "2"}, 3, 2, False, []),
])
def test_the_flags_say_where_the_scale_up_waits_for_a_new_node(state, plan_surge, surge, each_az, unplaced):
    view = {"outdated": [{"node": "old-%s" % zone[-1], "az": zone} for zone in ("us-east-1a", "us-east-1b", "us-east-1c")],
            "instances": [{"az": "us-east-1a", "outdated": False}, {"az": "us-east-1b", "outdated": False},
                          {"az": "us-east-1c", "outdated": True}],
            "plan": {"surge": plan_surge}, "az_count": 3, "mismatch": None, "refusals": [], "up_to_date": ["i-9"], "marked": [],
            "marked_outdated": [], "failed_to_join": [], "leftovers": [], "payback": [], "state": state, "versions": None}
    flags = node_group_utils.group_flags(view)
    assert (flags["surge_count"], flags["surge_each_az"], flags["unplaced_azs"]) == (surge, each_az, unplaced)
    assert flags["new_node_azs"] == ["us-east-1a", "us-east-1b"] and flags["has"]["unplaced_azs"] == bool(unplaced)


@pytest.mark.parametrize("method, surge, detached", [("detach", 3, ["i-1", "i-2", "i-3"]), ("detach", 1, ["i-1"]), ("scale", 3, None)])
def test_a_surge_by_detaching_takes_out_the_instances_replaced_first(method, surge, detached):
    view = {"outdated": [], "plan": {"surge": surge, "batches": [{"instance_ids": ["i-1", "i-2"]}, {"instance_ids": ["i-3", "i-4"]}]},
            "surge_method": method, "mismatch": None, "refusals": [], "up_to_date": [], "marked": [], "marked_outdated": [],
            "failed_to_join": [], "leftovers": [], "payback": [], "state": None, "versions": None}
    assert node_group_utils.group_flags(view)["surge_detach"] == detached


# ---- check_access -------------------------------------------------------------------------------------------------------
def _reviews(monkeypatch, refused=(), answer=None, nodes_error=None):
    """node_group_info's Kubernetes client answers each access review allowed unless ``(verb, resource)`` is in ``refused``
    (``answer`` raises instead), lists no node (or raises ``nodes_error``); returns the reviews asked, in order."""
    asked = []

    class Reviews:
        @staticmethod
        def access_review(verb, group, resource, subresource=None, namespace=None):
            asked.append((verb, group, resource, subresource, namespace))
            if answer is not None:
                raise answer
            name = "%s/%s" % (resource, subresource) if subresource else resource
            return {"allowed": (verb, name) not in refused}

        @staticmethod
        def list_nodes():
            if nodes_error is not None:
                raise nodes_error
            return []

    monkeypatch.setattr(node_group_utils, "KubeApi", lambda api_client: Reviews())
    monkeypatch.setattr(node_group_utils, "k8s_client", lambda module: object())
    return asked


def test_check_access_returns_what_the_identity_may_not_do_and_changes_nothing(world, run, monkeypatch, api_calls):
    asked = _reviews(monkeypatch, refused={("create", "pods/eviction"), ("create", "events")})
    result = run("node_group_info", name="workers", include_nodes=False, check_access=True, lock_namespace="nodeops-rollout")
    access = result["access"]
    assert access["checked"] and access["reviews"] == len(asked) == 23
    assert [(entry["verb"], entry["resource"], entry["required"]) for entry in access["missing"]] == [
        ("create", "pods/eviction", True), ("create", "events", False)]
    assert access["refusal"].startswith("the Kubernetes identity of the run may not create pods/eviction (core API group) "
                                        "in every namespace (granted by ClusterRole nodeops-rollout rule")
    assert ("update", "coordination.k8s.io", "leases", None, "nodeops-rollout") in asked
    assert result["node_groups"][0]["name"] == "workers" and mutating(api_calls) == []


def test_the_lock_namespace_defaults_to_the_lock_option_s_then_kube_system(world, run, monkeypatch):
    asked = _reviews(monkeypatch)
    run("node_group_info", name="workers", include_nodes=False, check_access=True)
    assert ("get", "coordination.k8s.io", "leases", None, "kube-system") in asked
    assert node_group_utils.lock_namespace({"lock": {"namespace": "locks"}}) == "locks"


def test_a_server_without_access_reviews_says_it_checked_nothing(world, run, monkeypatch):
    from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fake_kube import api_error
    asked = _reviews(monkeypatch, answer=api_error(404, "the server could not find the requested resource", "NotFound"))
    access = run("node_group_info", name="workers", include_nodes=False, check_access=True)["access"]
    assert len(asked) == 1
    assert access["checked"] is False and access["missing"] == [] and access["refusal"] is None
    assert access["why"].startswith("the API server does not answer access reviews: create "
                                    "selfsubjectaccessreviews.authorization.k8s.io: NotFound")


def test_a_refused_read_after_the_check_fails_with_its_permission_and_the_access_found(world, run, monkeypatch):
    from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fake_kube import api_error
    _reviews(monkeypatch, refused={("list", "nodes")}, nodes_error=api_error(
        403, 'nodes is forbidden: User "u" cannot list resource "nodes" in API group "" at the cluster scope', "Forbidden"))
    result = run("node_group_info", name="workers", check_access=True)
    assert result["failed"]
    assert result["msg"].startswith("list nodes: permission denied: Kubernetes refused list nodes (core API group) at the "
                                    "cluster scope to User \"u\"; granted by ClusterRole nodeops-rollout rule")
    assert result["permission"]["verb"] == "list" and result["permission"]["resource"] == "nodes"
    assert [entry["resource"] for entry in result["access"]["missing"]] == ["nodes"]
