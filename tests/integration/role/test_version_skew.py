"""The version skew rule of EKS managed node groups, end to end: a target AMI whose kubelet the control plane does not
support (newer than it, or more minor versions behind it than Kubernetes allows) is refused by the plan and by the
rollout before any change, naming both versions; a supported skew goes through."""

import os

import pytest
from kubernetes import client

from sandbox.drive.handle import KUBE_ENV
from tests.integration.controls import GROUP, QUICK, assert_invariants, group_view, result_of
from tests.integration.modules.conftest import assert_safe

pytestmark = pytest.mark.reference   # the real kube-apiserver's /version on the reference backend

NODES = 3


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=3, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


def control_plane(sandbox):
    """(major, minor, how the refusal names it) from the API server's /version: its gitVersion, unless that disagrees
    with major and minor (a kube-apiserver built without release stamps, as the reference backend's, says v0.0.0-master)."""
    code = client.VersionApi(sandbox.kube()).get_code()
    major, minor = int(code.major), int(code.minor.rstrip("+"))
    return major, minor, " (%s)" % code.git_version if code.git_version.startswith("v%d.%d." % (major, minor)) else ""


def refused_before_any_change(sandbox, tmp_path, image_id, playbook):
    since = sandbox.now() + 0.01
    before = group_view(sandbox)
    rc, out = sandbox.run_role_playbook(tmp_path, playbook=playbook, extra=QUICK,
                                        node_groups=[{"name": GROUP, "image_id": image_id}])
    assert rc != 0, out[-3000:]
    assert sandbox.mutating_requests(since=since) == []
    assert group_view(sandbox) == before
    assert_safe(sandbox.report())
    return out


def test_a_kubelet_newer_than_the_control_plane_is_refused_by_the_plan_and_the_rollout(sandbox, tmp_path):
    major, minor, git_version = control_plane(sandbox)
    name = "amazon-eks-node-%d.%d-v20240917" % (major, minor + 1)
    image = sandbox.register_image(name)
    for playbook in ("plan.yml", "upgrade.yml"):
        out = refused_before_any_change(sandbox, tmp_path, image, playbook)
        expected = ("version skew: AMI %s (%s) runs kubelet %d.%d, newer than the control plane's %d.%d%s; a kubelet must "
                    "not be newer than kube-apiserver" % (image, name, major, minor + 1, major, minor, git_version))
        assert expected in out.replace("\\n", " "), out[-3000:]


def test_skews_set_on_the_control_plane_older_by_ssm_path_refused_and_allowed(sandbox, tmp_path):
    if os.environ.get(KUBE_ENV) == "reference":
        pytest.skip("the reference backend's control plane runs the kube-apiserver it built; its version cannot be set")
    sandbox.set_control_plane_version("v1.31.2-eks-7f9249a")
    try:
        # a custom AMI name says nothing; the SSM parameter EKS publishes it under says 1.27: four minor versions behind
        custom = sandbox.register_image("golden-node-2024-09")
        parameter = "/aws/service/eks/optimized-ami/1.27/amazon-linux-2/recommended/image_id"
        sandbox.publish_parameter(parameter, custom)
        since = sandbox.now() + 0.01
        rc, out = sandbox.run_role_playbook(tmp_path, playbook="plan.yml", extra=QUICK,
                                            node_groups=[{"name": GROUP, "ssm_parameter": parameter}])
        assert rc != 0 and sandbox.mutating_requests(since=since) == []
        assert ("version skew: SSM parameter %s runs kubelet 1.27, 4 minor versions older than the control plane's 1.31 "
                "(v1.31.2-eks-7f9249a); kube-apiserver 1.31 supports kubelets 1.28 to 1.31" % parameter) in out.replace("\\n", " "), out[-3000:]

        # three minor versions behind a 1.31 control plane: supported, and the rollout goes through
        allowed = sandbox.register_image("amazon-eks-node-1.28-v20240917")
        report = tmp_path / "result.json"
        rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK, node_groups=[{"name": GROUP, "image_id": allowed}])
        assert rc == 0, out[-3000:]
        assert "version skew" not in out
        assert result_of(report)["status"] == "replaced"
        assert_invariants(sandbox.report(), NODES, 1)
    finally:
        sandbox.set_control_plane_version("v1.30.6")


def test_new_nodes_whose_kubelet_is_not_the_ami_s_stop_the_rollout_after_the_scale_up(start_sandbox, tmp_path):
    """An AMI named for the control plane's version whose image runs a kubelet one minor version older (the sandbox's
    kubelet-version AMI tag): the check before any change passes, the new nodes register with the other kubelet, and
    the run stops after the scale up, before any old node is drained, naming both versions. What it leaves is what a
    failed scale up leaves (docs/reliability.md): the surge and the rollout's state kept, processes resumed, every old
    node in service, untouched by a drain."""
    fresh = start_sandbox(nodes=NODES, azs=3, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])
    major, minor = control_plane(fresh)[:2]
    name = "amazon-eks-node-%d.%d-v20241105" % (major, minor)
    kubelet = "v%d.%d.8-eks-sandbox" % (major, minor - 1)
    image = fresh.register_image(name, kubelet_version=kubelet)
    before = group_view(fresh)
    report = tmp_path / "result.json"
    rc, out = fresh.run_role_playbook(tmp_path, report=report, extra=QUICK, node_groups=[{"name": GROUP, "image_id": image}])
    assert rc != 0, out[-3000:]

    group = result_of(report)
    assert group["status"] == "failed", group
    assert "fail if a new node's kubelet is not the target's" in group["failed_task"], group["failed_task"]
    expected = "runs kubelet %s, not the %d.%d of AMI %s (%s)" % (kubelet, major, minor, image, name)
    assert expected in group["message"], group["message"]
    new_nodes = [node for node in fresh.core().list_node().items
                 if node.status.node_info.kubelet_version == kubelet]
    assert new_nodes and all(node.metadata.name in group["message"] for node in new_nodes), (group["message"], new_nodes)

    after = group_view(fresh)
    assert after["sizes"][2] > before["sizes"][2], (before["sizes"], after["sizes"])   # the surge is kept
    assert after["state"], after["state_tags"]                                        # and the rollout's state
    assert after["suspended"] == [], after["suspended"]
    assert set(before["members"]) <= set(after["members"]), "an old instance left the group"
    old_nodes = [node for node in fresh.core().list_node().items if node.status.node_info.kubelet_version != kubelet]
    assert len(old_nodes) == NODES and not any(node.spec.unschedulable for node in old_nodes), old_nodes
    invariants = fresh.report()
    assert_invariants(invariants, NODES, 1)
    assert invariants["evictions"]["total"] == 0, invariants["evictions"]
    assert invariants["min_ready_schedulable_nodes"][GROUP] >= NODES, invariants["min_ready_schedulable_nodes"]
