# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The termination gate: whether an instance may be terminated (or scaled in) without hurting a workload.

Pure: nodes and pods as the Kubernetes API returns them (JSON dicts), instances in ``clients.aws.instance_record``'s
shape. ``instance_terminate`` asks it before every termination, so no path of the collection ends an instance
that still serves pods.

An instance may be terminated when

- its node in this cluster (the node whose ``spec.providerID`` names the instance, or failing that the node
  named as the instance's private DNS name, as EKS names nodes, when that node's providerID names no EC2
  instance) is cordoned and holds no pod other
  than DaemonSet pods, mirror pods and pods that have finished; or
- it has no node in this cluster and never registered: no node names it, while the cluster's nodes do match
  other instances of its group (so the cluster is the right one).

When no node of the cluster matches any instance of the group, the kubeconfig points at another cluster (or the
nodes' providerIDs are not AWS ones): nothing is terminated, and the message names both sides.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import ANNOTATION_MIRROR, controller_of, pod_is_finished, pod_key
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import instance_id_of

_SHOWN = 5


def node_index(nodes):
    """``({instance id: node}, {node name: node})`` for the cluster's nodes (API JSON form)."""
    by_instance, by_name = {}, {}
    for node in nodes:
        metadata = node.get("metadata") or {}
        by_name[metadata.get("name")] = node
        instance_id = instance_id_of((node.get("spec") or {}).get("providerID"))
        if instance_id:
            by_instance[instance_id] = node
    return by_instance, by_name


def node_of(instance, index):
    """The node of ``instance`` (``{"instance_id", "private_dns_name"}``) in this cluster, or None.

    A node named after the instance's private DNS name counts only when its providerID names no EC2 instance: private
    DNS names repeat across VPCs with the same CIDR, so a node of another cluster can carry the same name."""
    by_instance, by_name = index
    node = by_instance.get(instance["instance_id"])
    if node is None and instance.get("private_dns_name"):
        named = by_name.get(instance["private_dns_name"])
        if named is not None and instance_id_of((named.get("spec") or {}).get("providerID")) is None:
            node = named
    return node


def _listed(items):
    items = list(items)
    shown = ", ".join(items[:_SHOWN])
    return shown + (" and %d more" % (len(items) - _SHOWN) if len(items) > _SHOWN else "")


def cluster_mismatch(group_name, instances, nodes):
    """The message when no node of the cluster matches any instance of the group (None when some do, or when the
    group has no instance in service yet)."""
    serving = [instance for instance in instances if instance.get("lifecycle_state") == "InService"]
    if not serving:
        return None
    index = node_index(nodes)
    if any(node_of(instance, index) is not None for instance in serving):
        return None
    cluster_side = ["%s (%s)" % ((node.get("metadata") or {}).get("name"), (node.get("spec") or {}).get("providerID") or "no providerID")
                    for node in nodes]
    return ("none of the %d instances in service of Auto Scaling group '%s' (%s) is a node of this Kubernetes cluster, whose "
            "%d nodes are %s: the Kubernetes connection (kubeconfig, context, host, eks_cluster) points at another cluster, or "
            "the nodes' spec.providerID does not name their EC2 instances (aws:///<az>/<instance id>); nothing was changed"
            % (len(serving), group_name, _listed(instance["instance_id"] for instance in serving), len(nodes),
               _listed(cluster_side) or "none"))


def pods_left(pods):
    """The pods that keep a node from being terminated: all but DaemonSet, mirror and finished pods."""
    left = []
    for pod in pods:
        if pod_is_finished(pod):
            continue
        if ANNOTATION_MIRROR in ((pod.get("metadata") or {}).get("annotations") or {}):
            continue
        controller = controller_of(pod)
        if controller is not None and controller.get("kind") == "DaemonSet":
            continue
        left.append(pod_key(pod))
    return sorted(left)


def termination_refusals(candidates, group_instances, nodes, pods_by_node, group_name):
    """Why each of ``candidates`` may not be terminated: ``[{"instance_id", "node", "reason"}]``, empty when all may.

    ``group_instances``: every instance of the group (members and instances detached from it), to tell an instance
    that never registered from a cluster that is not the group's. ``pods_by_node``: the pods of each candidate's
    node, by node name (a node missing from it counts as unread and is refused).
    """
    index = node_index(nodes)
    cluster_matches = any(node_of(instance, index) is not None for instance in group_instances)
    refusals = []
    for instance in candidates:
        node = node_of(instance, index)
        instance_id = instance["instance_id"]
        if node is None:
            if not cluster_matches:
                refusals.append({"instance_id": instance_id, "node": None, "reason": (
                    "%s has no node in this cluster, and neither has any other instance of Auto Scaling group '%s': the "
                    "Kubernetes connection points at another cluster, so whether it runs pods cannot be told"
                    % (instance_id, group_name))})
            continue
        name = (node.get("metadata") or {}).get("name")
        reasons = []
        if not (node.get("spec") or {}).get("unschedulable"):
            reasons.append("node %s is not cordoned" % name)
        if name not in pods_by_node:
            reasons.append("the pods of node %s were not read" % name)
        else:
            left = pods_left(pods_by_node[name])
            if left:
                reasons.append("node %s still runs %d pod(s) that are not DaemonSet or mirror pods: %s"
                               % (name, len(left), _listed(left)))
        if reasons:
            refusals.append({"instance_id": instance_id, "node": name,
                             "reason": "%s: %s; drain it first (node_drain)" % (instance_id, ", and ".join(reasons))})
    return refusals


def refusal_message(refusals, group_name):
    """One message for every refusal of a termination request."""
    return ("refused to terminate %d instance(s) of Auto Scaling group '%s' that are not drained, nothing was terminated: %s"
            % (len(refusals), group_name, "; ".join(refusal["reason"] for refusal in refusals)))
