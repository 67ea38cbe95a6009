# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Room for the pods a drain moves: how many of the next outdated nodes the nodes that take pods can hold. Pure.

A wave that drains more pods than the up-to-date nodes have room for sends the rest somewhere worse: with the soft
outdated taint (``PreferNoSchedule``) onto outdated nodes that a later wave drains again, so those pods move twice;
with the hard one (``NoSchedule``) into ``Pending`` until a replacement boots. The step therefore drains only the
outdated nodes whose pods fit on the **receiving nodes** (Ready, schedulable, not outdated in this group, no taint
the pod does not tolerate with effect ``NoSchedule``, ``NoExecute`` or ``PreferNoSchedule``), after the pods that
already wait for a node (``Pending``) and the pods still on nodes being drained.

The fit follows the scheduler's NodeResourcesFit filter (the pod's effective requests, the larger of its containers'
sum and its largest init container, plus its overhead, against the node's allocatable less what its pods request,
for every resource the pod requests and the pod count) and its NodeAffinity and TaintToleration filters
(``nodeSelector``, required node affinity, tolerations). Pod affinity, anti-affinity, topology spread and volume
zones are not modelled: where they keep a pod off a node that has room, the pod waits as it would have anyway.

Nodes and pods are dicts in the API's JSON form. Quantities are read with the kubernetes client's
``parse_quantity``, in thousandths (millicores, millibytes), so every resource adds up as integers.
"""

from __future__ import annotations

import heapq

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import (
    ANNOTATION_MIRROR,
    controller_of,
    pod_is_finished,
    pod_is_terminating,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.volumes import term_matches
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import node_ready

try:
    from kubernetes.utils.quantity import parse_quantity
except ImportError:  # the modules that read room fail earlier, where they import the kubernetes client
    parse_quantity = None

PODS = "pods"
CPU = "cpu"
# Effects that keep the scheduler from choosing a node (PreferNoSchedule only while another node has room, which is
# the point: the receiving nodes are the ones a pod lands on without going to an outdated node).
_KEEPING_EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")


def milli(value):
    """A Kubernetes quantity (``'100m'``, ``'1.5Gi'``, ``2``) in thousandths, as an int; 0 for what does not parse."""
    try:
        return int(parse_quantity(value) * 1000)
    except (TypeError, ValueError, ArithmeticError):
        return 0


def _resources(mapping):
    return {name: milli(value) for name, value in (mapping or {}).items()}


def pod_requests(pod):
    """What the pod asks of a node, in thousandths: ``{resource: amount}`` plus ``pods`` (one pod, 1000).

    The effective request per resource: the larger of the sum over its containers and its largest init container,
    plus ``spec.overhead``; a resource without a request asks nothing (the scheduler's fit check)."""
    spec = pod.get("spec") or {}
    total = {}
    for container in spec.get("containers") or []:
        for name, amount in _resources(((container or {}).get("resources") or {}).get("requests")).items():
            total[name] = total.get(name, 0) + amount
    for container in spec.get("initContainers") or []:
        for name, amount in _resources(((container or {}).get("resources") or {}).get("requests")).items():
            total[name] = max(total.get(name, 0), amount)
    for name, amount in _resources(spec.get("overhead")).items():
        total[name] = total.get(name, 0) + amount
    total[PODS] = 1000
    return total


def needs_room(pod):
    """Whether the pod, moved off its node, needs room elsewhere: not finished, not being deleted, not a mirror pod,
    not a DaemonSet's (the DaemonSet runs its own on every node)."""
    if pod_is_finished(pod) or pod_is_terminating(pod):
        return False
    if ANNOTATION_MIRROR in ((pod.get("metadata") or {}).get("annotations") or {}):
        return False
    owner = controller_of(pod)
    return not (owner and owner.get("kind") == "DaemonSet")


def tolerates(tolerations, taint):
    """Whether one of ``tolerations`` tolerates ``taint`` (the API's matching: an empty key with ``Exists`` matches
    every key, an empty effect every effect, ``Equal`` compares the values)."""
    for toleration in tolerations or []:
        if not isinstance(toleration, dict):
            continue
        if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists":
            if not toleration.get("key") or toleration.get("key") == taint.get("key"):
                return True
        elif toleration.get("key") == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def node_selected(pod, labels, name):
    """The pod's ``nodeSelector`` and required node affinity hold for a node with ``labels`` and ``name``."""
    spec = pod.get("spec") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms")
    if terms is None:
        return True
    return any(term_matches(term, labels, name) for term in terms)


class _Receiver:
    __slots__ = ("name", "labels", "taints", "free")

    def __init__(self, node, used):
        metadata, spec = node.get("metadata") or {}, node.get("spec") or {}
        self.name = metadata.get("name")
        self.labels = metadata.get("labels") or {}
        self.taints = [taint for taint in spec.get("taints") or []
                       if isinstance(taint, dict) and taint.get("effect") in _KEEPING_EFFECTS]
        allocatable = _resources((node.get("status") or {}).get("allocatable"))
        self.free = {name: amount - used.get(name, 0) for name, amount in allocatable.items()}

    def takes(self, pod, requests):
        if any(self.free.get(name, 0) < amount for name, amount in requests.items() if amount):
            return False
        tolerations = (pod.get("spec") or {}).get("tolerations")
        if any(not tolerates(tolerations, taint) for taint in self.taints):
            return False
        return node_selected(pod, self.labels, self.name)


class Room:
    """The receiving nodes of a cluster and the room left on them, filled pod by pod as the scheduler would place
    the pods a rollout moves (the most free CPU first, as its least-allocated scoring prefers).

    ``nodes``: every Node; ``pods``: every Pod (bound or not); ``excluded``: names of nodes that take no pods of ours
    (this group's outdated nodes)."""

    def __init__(self, nodes, pods, excluded=()):
        excluded = set(excluded)
        used, self.on_node, self.pending = {}, {}, []
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if not node:
                if needs_room(pod) and (pod.get("status") or {}).get("phase", "Pending") == "Pending":
                    self.pending.append(pod)
                continue
            if pod_is_finished(pod):
                continue
            if needs_room(pod):
                self.on_node.setdefault(node, []).append(pod)
            counted = used.setdefault(node, {})
            for name, amount in pod_requests(pod).items():
                counted[name] = counted.get(name, 0) + amount
        self.receivers = []
        for node in nodes:
            name = (node.get("metadata") or {}).get("name")
            if name in excluded or (node.get("spec") or {}).get("unschedulable") or not node_ready(node)[0]:
                continue
            self.receivers.append(_Receiver(node, used.get(name, {})))
        self._heap = [(-receiver.free.get(CPU, 0), index) for index, receiver in enumerate(self.receivers)]
        heapq.heapify(self._heap)

    def _place(self, pod):
        """Put one pod on the receiver with the most free CPU that takes it; its requests are taken off that receiver's
        room. Returns ``(receiver index, requests)``, or None when no receiver takes it."""
        requests = pod_requests(pod)
        passed, seen = [], set()
        placed = None
        while self._heap:
            entry = heapq.heappop(self._heap)
            receiver = self.receivers[entry[1]]
            if entry[1] in seen or -entry[0] != receiver.free.get(CPU, 0):
                continue  # a stale entry: the receiver's room changed since it was pushed
            seen.add(entry[1])
            passed.append(entry)
            if receiver.takes(pod, requests):
                placed = entry[1]
                break
        if placed is not None:
            receiver = self.receivers[placed]
            for name, amount in requests.items():
                receiver.free[name] = receiver.free.get(name, 0) - amount
            passed = [entry for entry in passed if entry[1] != placed]
            passed.append((-receiver.free.get(CPU, 0), placed))
        for entry in passed:
            heapq.heappush(self._heap, entry)
        return None if placed is None else (placed, requests)

    def _undo(self, placements):
        for index, requests in placements:
            receiver = self.receivers[index]
            for name, amount in requests.items():
                receiver.free[name] = receiver.free.get(name, 0) + amount
            heapq.heappush(self._heap, (-receiver.free.get(CPU, 0), index))

    def settle(self, draining=()):
        """Place what already needs a node: the ``Pending`` pods, then the pods still on the ``draining`` nodes. A pod
        that fits nowhere is left out (it waits whatever the rollout does). Returns how many pods were placed."""
        placed = 0
        for pod in self.pending + [pod for node in draining for pod in self.on_node.get(node, [])]:
            if self._place(pod) is not None:
                placed += 1
        return placed

    def take_node(self, node):
        """Place every pod of ``node`` that needs room, all or none; True when all of them fit."""
        placements = []
        for pod in sorted(self.on_node.get(node, []), key=lambda pod: -pod_requests(pod).get(CPU, 0)):
            placed = self._place(pod)
            if placed is None:
                self._undo(placements)
                return False
            placements.append(placed)
        return True


def nodes_with_room(candidates, nodes, pods, excluded=(), draining=()):
    """How many of ``candidates`` (node names, in the order they would be drained) can be drained one after another
    with every pod they hold finding room on a receiving node, after the ``Pending`` pods and the pods still on the
    ``draining`` nodes. Stops at the first candidate that does not fit, so the order is kept."""
    room = Room(nodes, pods, excluded)
    room.settle(draining)
    count = 0
    for node in candidates:
        if not room.take_node(node):
            break
        count += 1
    return count
