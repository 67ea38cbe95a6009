# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The version skew rule of EKS managed node groups: a target whose kubelet the control plane does not support is
refused before any change. Pure.

Kubernetes' version skew policy: a kubelet must not be newer than kube-apiserver, and may be up to three minor
versions older than it (since Kubernetes 1.28; kubelets older than 1.25 only two, so a control plane before 1.28 takes
kubelets at most two minor versions older). EKS refuses a node group update that breaks it, naming both versions.

The kubelet a target runs is known, first found, from the EKS-optimized AMI's name (``amazon-eks-node-1.29-v20240117``,
``amazon-eks-node-al2023-x86_64-standard-1.30-v20240729``, ``bottlerocket-aws-k8s-1.29-x86_64-v1.19.0-...``,
``Windows_Server-2022-English-Core-EKS_Optimized-1.29-...``, ``ubuntu-eks/k8s_1.29/...``), from the SSM parameter it
came from (``/aws/service/eks/optimized-ami/1.29/...``, ``/aws/service/bottlerocket/aws-k8s-1.29/...``), or, for a
custom AMI, from ``status.nodeInfo.kubeletVersion`` of the first new node once the surge has launched some. New nodes
are then checked against the kubelet expected: one that registers with another minor version is refused too.
"""

from __future__ import annotations

import re

# minor versions a kubelet may be behind kube-apiserver: three since 1.28 (KEP-3935), two before
LAG_SINCE_1_28 = 3
LAG_BEFORE_1_28 = 2

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?$")
_IMAGE_PATTERNS = (
    re.compile(r"^amazon-eks-(?:[a-z0-9_]+-)*node-(?:[a-z0-9_]+-)*?(\d+)\.(\d+)-v\d"),   # AL2 and AL2023, x86/arm/gpu
    re.compile(r"^bottlerocket-aws-k8s-(\d+)\.(\d+)-"),
    re.compile(r"EKS_Optimized-(\d+)\.(\d+)(?:-|$)"),
    re.compile(r"^ubuntu-eks(?:-pro)?/k8s_(\d+)\.(\d+)/"),
)
_SSM_PATTERNS = (
    re.compile(r"/aws/service/eks/optimized-ami/(\d+)\.(\d+)/"),
    re.compile(r"/aws/service/bottlerocket/aws-k8s-(\d+)\.(\d+)(?:-[a-z0-9]+)?/"),
    re.compile(r"/aws/service/ami-windows-latest/[^/]*EKS_Optimized-(\d+)\.(\d+)/"),
    re.compile(r"/aws/service/canonical/ubuntu/eks(?:-pro)?/[0-9.]+/(\d+)\.(\d+)/"),
)


def parse_version(text):
    """``(major, minor)`` of ``v1.29.3-eks-ae9a62a``, ``1.29`` or ``v1.29``; None for anything else."""
    match = _VERSION_RE.match(str(text or "").strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def version_text(version):
    return "%d.%d" % version


def server_version(document):
    """``(major, minor)`` of the API server's ``/version``: its ``major`` and ``minor`` (EKS says ``29+``), else its
    gitVersion. A kube-apiserver built without release stamps says ``v0.0.0-master+$Format:%H$`` as gitVersion and the
    true version in major and minor only."""
    document = document or {}
    if document.get("major") and document.get("minor"):
        found = parse_version("%s.%s" % (document["major"], str(document["minor"]).rstrip("+")))
        if found is not None:
            return found
    return parse_version(document.get("gitVersion"))


def server_version_text(document):
    """How the control plane's version is named: its gitVersion when it agrees with major and minor, else
    ``major.minor``; None when ``/version`` says neither."""
    found = server_version(document)
    if found is None:
        return None
    git_version = (document or {}).get("gitVersion")
    return git_version if parse_version(git_version) == found else version_text(found)


def _first(patterns, text):
    for pattern in patterns:
        match = pattern.search(text or "")
        if match:
            return int(match.group(1)), int(match.group(2))
    return None


def kubelet_from_image_name(name):
    """The kubelet minor version an EKS-optimized AMI's name says, or None (a custom AMI's name says nothing)."""
    return _first(_IMAGE_PATTERNS, name)


def kubelet_from_ssm_parameter(name):
    """The kubelet minor version in the path of an SSM parameter EKS or Bottlerocket publishes (a name or an ARN)."""
    return _first(_SSM_PATTERNS, name)


def expected_kubelet(image_id=None, image_name=None, ssm_parameter=None):
    """``(version, source)`` of the kubelet a target runs, first found: the AMI's name, then the SSM parameter's
    path; ``(None, None)`` when neither says (the first new node's kubelet then tells)."""
    version = kubelet_from_image_name(image_name)
    if version is not None:
        return version, "AMI %s (%s)" % (image_id, image_name) if image_id else "AMI %s" % image_name
    version = kubelet_from_ssm_parameter(ssm_parameter)
    if version is not None:
        return version, "SSM parameter %s" % ssm_parameter
    return None, None


def max_lag(control_plane):
    """How many minor versions a kubelet may be behind a control plane at ``control_plane``."""
    return LAG_SINCE_1_28 if control_plane >= (1, 28) else LAG_BEFORE_1_28


def skew_refusal(kubelet, control_plane, source, control_plane_text=None):
    """Why kubelet ``kubelet`` (from ``source``) cannot join a control plane at ``control_plane``, or None.

    Versions are ``(major, minor)``; either unknown (None) refuses nothing."""
    if kubelet is None or control_plane is None:
        return None
    detail = " (%s)" % control_plane_text if control_plane_text else ""
    plane = "the control plane's %s%s" % (version_text(control_plane), detail)
    if kubelet > control_plane:
        return ("version skew: %s runs kubelet %s, newer than %s; a kubelet must not be newer than kube-apiserver: upgrade "
                "the control plane to %s first" % (source, version_text(kubelet), plane, version_text(kubelet)))
    lag = max_lag(control_plane)
    if kubelet[0] != control_plane[0] or control_plane[1] - kubelet[1] > lag:
        oldest = (control_plane[0], max(0, control_plane[1] - lag))
        return ("version skew: %s runs kubelet %s, %s minor versions older than %s; kube-apiserver %s supports kubelets "
                "%s to %s: roll to an AMI of Kubernetes %s or newer" % (
                    source, version_text(kubelet), control_plane[1] - kubelet[1] if kubelet[0] == control_plane[0] else "many",
                    plane, version_text(control_plane), version_text(oldest), version_text(control_plane), version_text(oldest)))
    return None


def new_node_refusals(expected, expected_source, new_nodes):
    """The new nodes (``[(name, kubeletVersion)]``, in launch order) that run another kubelet minor version than the
    target's (``expected``, from ``expected_source``): ``(refusals, expected, source)``, where ``expected`` is the
    first new node's own when the target named none."""
    refusals = []
    for name, kubelet_version in new_nodes:
        found = parse_version(kubelet_version)
        if found is None:
            continue
        if expected is None:
            expected, expected_source = found, "new node %s (kubelet %s)" % (name, kubelet_version)
            continue
        if found != expected:
            refusals.append("new node %s runs kubelet %s, not the %s of %s"
                            % (name, kubelet_version, version_text(expected), expected_source))
    return refusals, expected, expected_source
