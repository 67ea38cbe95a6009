"""kube-scheduler, reduced to the plugins that decide where a rollout's pods go.

Filters, in the default profile's order (the first failure names the node's reason):
NodeUnschedulable ("node(s) were unschedulable", unless the pod tolerates the unschedulable taint),
TaintToleration (NoSchedule/NoExecute: "node(s) had untolerated taint {key: value}"), NodeAffinity
(nodeSelector and required terms: "node(s) didn't match Pod's node affinity/selector"), node Ready, VolumeBinding
(a claim not bound yet: "pod has unbound immediate PersistentVolumeClaims"; a bound volume whose required node affinity
the node does not match: "node(s) had volume node affinity conflict"), then NodeResourcesFit ("Too many pods",
"Insufficient cpu", "Insufficient memory").
Scores, best first: no untolerated PreferNoSchedule taint (TaintToleration's weight makes it decisive),
fewer pods of the same owner on the node (the default spreading of replicas), least requested resources
(requests without values count as 100m/200Mi), then the node name.

The usage table is incremental (pod bound or gone), the per-node static verdict for a pod "shape"
(tolerations, selector, affinity) is cached and updated per node change, and pods of one owner with one
shape are placed together from one heap, so a decision costs O(log nodes) after O(nodes) per group.
"""

import heapq
import json

from .objects import (condition, count_untolerated, first_untolerated, node_selected, pod_requests, allocatable,
                      set_condition, shallow, taint_text, term_matches, tolerates, update, key_of, deleting, int_or)
from .volumes import claim_names
from ..store import controller_ref, is_ready
from .runtime import Controller

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
UNBOUND = "unbound"
UNBOUND_REASON = "pod has unbound immediate PersistentVolumeClaims"
VOLUME_CONFLICT = "node(s) had volume node affinity conflict"
DEFAULT_SCHEDULER = "default-scheduler"
MAX_SHAPES = 512


class NodeInfo:
    __slots__ = ("name", "labels", "taints", "unschedulable", "ready", "cpu", "mem", "pods")

    def __init__(self, node):
        self.name = node["metadata"]["name"]
        self.labels = node["metadata"].get("labels") or {}
        spec = node.get("spec") or {}
        self.taints = spec.get("taints") or []
        self.unschedulable = bool(spec.get("unschedulable"))
        self.ready = is_ready(node)
        try:
            self.cpu, self.mem, self.pods = allocatable((node.get("status") or {}).get("allocatable"))
        except ValueError:
            self.cpu, self.mem, self.pods = 0, 0, 0


class Shape:
    """What decides a pod's static fit: tolerations, nodeSelector, required node affinity, its volumes' node affinity
    (``volumes``: None without claims, ``UNBOUND`` while one is not bound, else each volume's required terms)."""

    __slots__ = ("tolerations", "spec", "volumes", "verdicts")

    def __init__(self, spec, volumes=None):
        self.tolerations = spec.get("tolerations") or []
        self.spec = {"nodeSelector": spec.get("nodeSelector"), "affinity": spec.get("affinity")}
        self.volumes = volumes
        self.verdicts = {}   # node name -> (reason or None, untolerated PreferNoSchedule count)

    def judge(self, info):
        if info.unschedulable and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in self.tolerations):
            return ("node(s) were unschedulable", 0)
        taint = first_untolerated(self.tolerations, info.taints)
        if taint is not None:
            return ("node(s) had untolerated taint %s" % taint_text(taint), 0)
        if not node_selected(self.spec, info.labels, info.name):
            return ("node(s) didn't match Pod's node affinity/selector", 0)
        if not info.ready:
            return ("node(s) had untolerated taint {node.kubernetes.io/not-ready: }", 0)
        if self.volumes == UNBOUND:
            return (UNBOUND_REASON, 0)
        for terms in self.volumes or ():
            if not any(term_matches(term, info.labels, info.name) for term in terms):
                return (VOLUME_CONFLICT, 0)
        return (None, count_untolerated(self.tolerations, info.taints, "PreferNoSchedule"))


def shape_key(spec, volumes=None):
    return json.dumps([spec.get("tolerations") or [], spec.get("nodeSelector") or {},
                       ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                           "requiredDuringSchedulingIgnoredDuringExecution"), volumes], sort_keys=True)


class Scheduler(Controller):
    watches = ("nodes", "pods")
    client = "sandbox-scheduler"

    def __init__(self, ctl):
        super().__init__(ctl)
        self.queue = {}          # pod key -> None, pods to try (insertion ordered)
        self.pod_groups = {}     # pod uid -> (priority, shape key, requests, owner uid) of a pending pod
        self.unschedulable = {}  # pod key -> simulated time of the last attempt
        self.assigned = {}       # pod key -> (node, cpu, mem, nz cpu, nz mem, owner uid)
        self.usage = {}          # node -> [cpu, mem, pods, nz cpu, nz mem]
        self.owner_nodes = {}    # owner uid -> {node: pods}
        self.nodes = {}          # name -> NodeInfo
        self.shapes = {}         # shape key -> Shape (insertion ordered, bounded)
        self.changed = False     # something freed or added capacity since the last retry
        self.last_retry = float("-inf")
        self.retry_timer = False
        self.volume_blocked = set()   # uids of pods a volume's node affinity keeps from every node (logged)

    def volumes_changed(self):
        """A claim or a volume changed: pods' volume constraints are read again, unschedulable pods retried."""
        self.pod_groups.clear()
        self.changed = True

    def _volume_constraint(self, pod):
        """None (no claim), UNBOUND, or the required node selector terms of each of the pod's bound volumes."""
        names = claim_names(pod)
        if not names:
            return None
        terms = []
        for name in names:
            claim = self.store.try_get("persistentvolumeclaims", pod["metadata"].get("namespace"), name)
            volume_name = ((claim or {}).get("spec") or {}).get("volumeName")
            volume = self.store.try_get("persistentvolumes", None, volume_name) if volume_name else None
            if claim is None or (claim.get("status") or {}).get("phase") != "Bound" or volume is None:
                return UNBOUND
            required = ((((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {})
                        .get("nodeSelectorTerms"))
            if required:
                terms.append(required)
        return terms or None

    # ---- events -----------------------------------------------------------------------------------
    def on_event(self, plural, etype, obj):
        if plural == "nodes":
            self._on_node(etype, obj)
        else:
            self._on_pod(etype, obj)

    def _on_node(self, etype, node):
        name = node["metadata"]["name"]
        if etype == "DELETED":
            self.nodes.pop(name, None)
            for shape in self.shapes.values():
                shape.verdicts.pop(name, None)
            return
        info = NodeInfo(node)
        self.nodes[name] = info
        self.usage.setdefault(name, [0, 0, 0, 0, 0])
        for shape in self.shapes.values():
            shape.verdicts[name] = shape.judge(info)
        self.changed = True

    def _on_pod(self, etype, pod):
        key = key_of(pod)
        if etype == "DELETED":
            self.queue.pop(key, None)
            self.unschedulable.pop(key, None)
            self.pod_groups.pop(pod["metadata"]["uid"], None)
            self.volume_blocked.discard(pod["metadata"]["uid"])
            if self._release(key):
                self.changed = True
            return
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        terminal = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if node:
            self.queue.pop(key, None)
            self.unschedulable.pop(key, None)
            self.pod_groups.pop(pod["metadata"]["uid"], None)
            if terminal:
                if self._release(key):
                    self.changed = True
            elif key not in self.assigned:
                self._account(key, node, pod)
            return
        if deleting(pod) or terminal or (spec.get("schedulerName") or DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
            self.queue.pop(key, None)
            self.unschedulable.pop(key, None)
            return
        if key not in self.unschedulable:
            self.queue[key] = None

    def _account(self, key, node, pod):
        try:
            cpu, mem, nz_cpu, nz_mem = pod_requests(pod)
        except ValueError:
            cpu = mem = nz_cpu = nz_mem = 0
        ref = controller_ref(pod)
        owner = ref.get("uid") if ref else None
        self.assigned[key] = (node, cpu, mem, nz_cpu, nz_mem, owner)
        use = self.usage.setdefault(node, [0, 0, 0, 0, 0])
        use[0] += cpu
        use[1] += mem
        use[2] += 1
        use[3] += nz_cpu
        use[4] += nz_mem
        if owner:
            counts = self.owner_nodes.setdefault(owner, {})
            counts[node] = counts.get(node, 0) + 1

    def _release(self, key):
        entry = self.assigned.pop(key, None)
        if entry is None:
            return False
        node, cpu, mem, nz_cpu, nz_mem, owner = entry
        use = self.usage.get(node)
        if use is not None:
            use[0] -= cpu
            use[1] -= mem
            use[2] -= 1
            use[3] -= nz_cpu
            use[4] -= nz_mem
            if use[2] <= 0 and node not in self.nodes:
                del self.usage[node]
        if owner:
            counts = self.owner_nodes.get(owner)
            if counts is not None:
                counts[node] -= 1
                if counts[node] <= 0:
                    del counts[node]
                if not counts:
                    del self.owner_nodes[owner]
        return True

    def resync(self):
        if self.unschedulable:
            self.changed = True

    # ---- scheduling -----------------------------------------------------------------------------------
    def sync(self):
        now = self.clock.now()
        if self.changed and self.unschedulable:
            if now - self.last_retry >= self.cfg.scheduler_backoff_seconds:
                for key in self.unschedulable:
                    self.queue[key] = None
                self.unschedulable.clear()
                self.changed = False
                self.last_retry = now
            elif not self.retry_timer:
                self.retry_timer = True
                self.ctl.call_at(self.last_retry + self.cfg.scheduler_backoff_seconds, self._retry_due)
        elif not self.unschedulable:
            self.changed = False
        if not self.queue:
            return False
        keys = list(self.queue)
        self.queue.clear()
        groups = {}
        for key in keys:
            pod = self.store.try_get("pods", key[0], key[1])
            if pod is None or deleting(pod) or (pod.get("spec") or {}).get("nodeName"):
                continue
            group = self.pod_groups.get(pod["metadata"]["uid"])
            if group is None:
                spec = pod.get("spec") or {}
                try:
                    req = pod_requests(pod)
                except ValueError as exc:
                    self._unschedulable(pod, "0/%d nodes are available: %s." % (len(self.nodes), exc), now)
                    continue
                ref = controller_ref(pod)
                group = (-int_or(spec.get("priority"), 0), shape_key(spec, self._volume_constraint(pod)), req,
                         ref.get("uid") if ref else None)
                self.pod_groups[pod["metadata"]["uid"]] = group
            groups.setdefault(group, []).append(pod)
        for group in sorted(groups, key=lambda g: g[0]):
            self._place(group, groups[group], now)
        return True

    def _retry_due(self):
        self.retry_timer = False
        self.ctl.poke()

    def _shape(self, key, spec):
        shape = self.shapes.get(key)
        if shape is None:
            if len(self.shapes) >= MAX_SHAPES:
                del self.shapes[next(iter(self.shapes))]
            shape = Shape(spec, json.loads(key)[3])
            for name, info in self.nodes.items():
                shape.verdicts[name] = shape.judge(info)
        else:
            del self.shapes[key]   # move to the end: most recently used
        self.shapes[key] = shape
        return shape

    def _node_key(self, name, pns, req, owner_counts):
        info, use = self.nodes[name], self.usage[name]
        score = 0
        if info.cpu > 0:
            score += max(0, info.cpu - use[3] - req[2]) * 100 // info.cpu
        if info.mem > 0:
            score += max(0, info.mem - use[4] - req[3]) * 100 // info.mem
        return (1 if pns else 0, owner_counts.get(name, 0) if owner_counts else 0, -(score // 2), name)

    def _fits(self, name, req):
        info, use = self.nodes[name], self.usage[name]
        return use[2] + 1 <= info.pods and use[0] + req[0] <= info.cpu and use[1] + req[1] <= info.mem

    def _place(self, group, pods, now):
        skey, req, owner = group[1:]
        shape = self._shape(skey, pods[0].get("spec") or {})
        counts = self.owner_nodes.get(owner) if owner else None
        heap = []
        for name, (reason, pns) in shape.verdicts.items():
            if reason is None and name in self.nodes and self._fits(name, req):
                heap.append(self._node_key(name, pns, req, counts))
        heapq.heapify(heap)
        message = None
        for pod in pods:
            placed = False
            while heap:
                entry = heapq.heappop(heap)
                name = entry[-1]
                if name not in self.nodes or not self._fits(name, req):
                    continue
                bound = self._bind(pod, name, now)
                if bound is not None:
                    self._account(key_of(bound), name, bound)
                    counts = self.owner_nodes.get(owner) if owner else None
                    placed = True
                if self._fits(name, req):
                    heapq.heappush(heap, self._node_key(name, shape.verdicts[name][1], req, counts))
                break
            if not placed and not heap:
                if message is None:
                    message = self._explain(shape, req)
                self._unschedulable(pod, message, now)

    def _explain(self, shape, req):
        reasons = {}
        for name, info in self.nodes.items():
            verdict = shape.verdicts.get(name) or shape.judge(info)
            found = [verdict[0]] if verdict[0] else []
            if not found:
                use = self.usage.get(name, [0, 0, 0, 0, 0])
                if use[2] + 1 > info.pods:
                    found.append("Too many pods")
                if use[0] + req[0] > info.cpu:
                    found.append("Insufficient cpu")
                if use[1] + req[1] > info.mem:
                    found.append("Insufficient memory")
            for reason in found:
                reasons[reason] = reasons.get(reason, 0) + 1
        total = len(self.nodes)
        parts = sorted("%d %s" % (n, r) for r, n in reasons.items())
        text = "0/%d nodes are available" % total
        if parts:
            text += ": " + ", ".join(parts)
        return text + ". preemption: 0/%d nodes are available: %d Preemption is not helpful for scheduling." % (total, total)

    def _bind(self, pod, node, now):
        uid = pod["metadata"]["uid"]
        ts = self.clock.timestamp(now)

        def bind(current):
            spec = current.get("spec") or {}
            if current["metadata"]["uid"] != uid or spec.get("nodeName") or deleting(current):
                return None
            status = dict(current.get("status") or {})
            status["conditions"] = set_condition(status.get("conditions"), "PodScheduled", "True", ts, probe=True)
            status.setdefault("phase", "Pending")
            return shallow(current, spec=dict(spec, nodeName=node), status=status)
        bound = update(self.store, "pods", pod["metadata"].get("namespace"), pod["metadata"]["name"], bind, self.client)
        if bound is not None and uid in self.volume_blocked:
            self.volume_blocked.discard(uid)
            self.ctl.events.emit("pod.volume_scheduled", pod="%s/%s" % key_of(bound), uid=uid, node=node)
        if bound is not None:
            self.ctl.recorder.record(bound, "Scheduled", "Successfully assigned %s/%s to %s"
                                     % (pod["metadata"].get("namespace"), pod["metadata"]["name"], node),
                                     "default-scheduler")
        return bound

    def _unschedulable(self, pod, message, now):
        key = key_of(pod)
        self.unschedulable[key] = now
        if (VOLUME_CONFLICT in message or UNBOUND_REASON in message) and pod["metadata"]["uid"] not in self.volume_blocked:
            self.volume_blocked.add(pod["metadata"]["uid"])
            self.ctl.events.emit("pod.volume_unschedulable", pod="%s/%s" % key, uid=pod["metadata"]["uid"], message=message)
        cond = condition(pod, "PodScheduled")
        if cond and cond.get("status") == "False" and cond.get("message") == message:
            return
        uid = pod["metadata"]["uid"]
        ts = self.clock.timestamp(now)

        def mark(current):
            if current["metadata"]["uid"] != uid or (current.get("spec") or {}).get("nodeName") or deleting(current):
                return None
            status = dict(current.get("status") or {})
            status["conditions"] = set_condition(status.get("conditions"), "PodScheduled", "False", ts,
                                                 "Unschedulable", message, probe=True)
            status.setdefault("phase", "Pending")
            return shallow(current, status=status)
        written = update(self.store, "pods", key[0], key[1], mark, self.client)
        if written is not None:
            self.ctl.recorder.record(written, "FailedScheduling", message, "default-scheduler", event_type="Warning")

    def idle(self):
        return not self.queue and not self.unschedulable
