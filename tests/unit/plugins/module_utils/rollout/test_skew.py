# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The version skew rule: which kubelet a target runs, and whether the control plane supports it."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import skew


@pytest.mark.parametrize("name, version", [
    ("amazon-eks-node-1.29-v20240117", (1, 29)),
    ("amazon-eks-arm64-node-1.28-v20231230", (1, 28)),
    ("amazon-eks-gpu-node-1.27-v20240110", (1, 27)),
    ("amazon-eks-node-al2023-x86_64-standard-1.30-v20240729", (1, 30)),
    ("amazon-eks-node-al2023-arm64-nvidia-1.31-v20241024", (1, 31)),
    ("bottlerocket-aws-k8s-1.29-x86_64-v1.19.0-c5fb0e4b", (1, 29)),
    ("bottlerocket-aws-k8s-1.30-nvidia-aarch64-v1.21.1-82691b51", (1, 30)),
    ("Windows_Server-2022-English-Core-EKS_Optimized-1.29-2024.01.09", (1, 29)),
    ("ubuntu-eks/k8s_1.29/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20240126", (1, 29)),
    ("sandbox-node-1.29-v20240101", None),          # a custom AMI's name says nothing
    ("my-golden-image-2024-01", None),
    ("amazon-eks-node-v20240117", None),
    (None, None),
])
def test_kubelet_from_the_ami_name(name, version):
    assert skew.kubelet_from_image_name(name) == version


@pytest.mark.parametrize("path, version", [
    ("/aws/service/eks/optimized-ami/1.29/amazon-linux-2/recommended/image_id", (1, 29)),
    ("/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id", (1, 30)),
    ("arn:aws:ssm:us-east-1::parameter/aws/service/eks/optimized-ami/1.28/amazon-linux-2-gpu/recommended/image_id", (1, 28)),
    ("/aws/service/bottlerocket/aws-k8s-1.29/x86_64/latest/image_id", (1, 29)),
    ("/aws/service/bottlerocket/aws-k8s-1.29-nvidia/x86_64/latest/image_id", (1, 29)),
    ("/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.29/image_id", (1, 29)),
    ("/aws/service/canonical/ubuntu/eks/22.04/1.29/stable/current/amd64/hvm/ebs-gp2/ami-id", (1, 29)),
    ("/golden/ami/latest", None),
])
def test_kubelet_from_the_ssm_parameter(path, version):
    assert skew.kubelet_from_ssm_parameter(path) == version


def test_the_ami_name_comes_first_then_the_ssm_path():
    assert skew.expected_kubelet("ami-1", "amazon-eks-node-1.29-v1", "/aws/service/eks/optimized-ami/1.30/x") == (
        (1, 29), "AMI ami-1 (amazon-eks-node-1.29-v1)")
    assert skew.expected_kubelet("ami-1", "golden", "/aws/service/eks/optimized-ami/1.30/x") == (
        (1, 30), "SSM parameter /aws/service/eks/optimized-ami/1.30/x")
    assert skew.expected_kubelet("ami-1", "golden", None) == (None, None)


def test_server_and_kubelet_versions():
    assert skew.server_version({"major": "1", "minor": "29+", "gitVersion": "v1.29.4-eks-036c24b"}) == (1, 29)
    assert skew.server_version({"major": "1", "minor": "30+"}) == (1, 30)
    assert skew.server_version({}) is None
    # a kube-apiserver built without release stamps (the reference backend's) names its version in major and minor only
    unstamped = {"major": "1", "minor": "34", "gitVersion": "v0.0.0-master+$Format:%H$"}
    assert skew.server_version(unstamped) == (1, 34) and skew.server_version_text(unstamped) == "1.34"
    assert skew.server_version_text({"major": "1", "minor": "29+", "gitVersion": "v1.29.4-eks-036c24b"}) == "v1.29.4-eks-036c24b"
    assert skew.server_version({"gitVersion": "v1.31.2"}) == (1, 31) and skew.server_version_text({}) is None
    assert skew.parse_version("v1.29.3-eks-ae9a62a") == (1, 29)
    assert skew.parse_version("1.30") == (1, 30) and skew.parse_version("latest") is None


@pytest.mark.parametrize("kubelet, plane, refused", [
    ((1, 30), (1, 30), False),
    ((1, 31), (1, 30), True),          # newer than the control plane
    ((1, 27), (1, 30), False),         # three behind, 1.28 or later
    ((1, 26), (1, 30), True),          # four behind
    ((1, 25), (1, 28), False),         # three behind at 1.28
    ((1, 24), (1, 27), True),          # three behind before 1.28: two only
    ((1, 25), (1, 27), False),         # two behind before 1.28
    ((2, 0), (1, 30), True),
    ((0, 30), (1, 30), True),
    (None, (1, 30), False),            # unknown: nothing refused
    ((1, 30), None, False),
])
def test_the_skew_rule_and_its_edges(kubelet, plane, refused):
    assert (skew.skew_refusal(kubelet, plane, "AMI x") is not None) is refused


def test_the_refusal_names_both_versions():
    newer = skew.skew_refusal((1, 31), (1, 30), "AMI ami-1 (amazon-eks-node-1.31-v1)", "v1.30.6")
    assert newer == ("version skew: AMI ami-1 (amazon-eks-node-1.31-v1) runs kubelet 1.31, newer than the control plane's "
                     "1.30 (v1.30.6); a kubelet must not be newer than kube-apiserver: upgrade the control plane to 1.31 first")
    older = skew.skew_refusal((1, 26), (1, 30), "AMI ami-2 (amazon-eks-node-1.26-v1)")
    assert "kubelet 1.26, 4 minor versions older than the control plane's 1.30" in older
    assert "supports kubelets 1.27 to 1.30" in older


def test_new_nodes_are_checked_against_the_expected_kubelet():
    refusals, expected, source = skew.new_node_refusals((1, 30), "AMI ami-1 (n-1.30)", [("a", "v1.30.2"), ("b", "v1.29.9")])
    assert refusals == ["new node b runs kubelet v1.29.9, not the 1.30 of AMI ami-1 (n-1.30)"] and expected == (1, 30)
    # a custom AMI: the first new node tells, the others must agree with it
    refusals, expected, source = skew.new_node_refusals(None, None, [("a", "v1.31.0"), ("b", "v1.31.1"), ("c", "")])
    assert refusals == [] and expected == (1, 31) and source == "new node a (kubelet v1.31.0)"
