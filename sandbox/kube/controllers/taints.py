"""The taint eviction controller: pods on a node with a NoExecute taint they do not tolerate are deleted.

As kube-controller-manager's taint-eviction-controller: a pod that does not tolerate one of its node's
NoExecute taints is deleted at once; a pod that tolerates all of them for a limited ``tolerationSeconds``
is deleted when the shortest of those runs out (counted from when the taint was seen), unless the taint
is removed first. These deletions go through no PodDisruptionBudget, which is why they are logged as
``deleted``/``taint-eviction`` and not as evictions.
"""

from .objects import deleting, delete_pod, key_of, tolerates
from .runtime import Controller

CAUSE = {"how": "deleted", "reason": "taint-eviction", "client": "sandbox-taint-eviction-controller"}


def _no_execute(node):
    return [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]


def eviction_delay(tolerations, taints):
    """None when the pod may stay, 0 to delete it now, or the seconds it may stay.

    As GetMatchingTolerations + getMinTolerationTime: the first toleration that tolerates each taint is
    used; an untolerated taint means now; the smallest tolerationSeconds among the used ones (<= 0: now)
    bounds the stay, and none set means forever."""
    used = []
    for taint in taints:
        match = next((t for t in tolerations or () if tolerates(t, taint)), None)
        if match is None:
            return 0.0
        used.append(match)
    limits = [float(t["tolerationSeconds"]) for t in used if t.get("tolerationSeconds") is not None]
    if not limits:
        return None
    return max(0.0, min(limits))


class TaintEviction(Controller):
    watches = ("nodes", "pods")
    client = "sandbox-taint-eviction-controller"

    def __init__(self, ctl):
        super().__init__(ctl)
        self.tainted = {}       # node name -> (NoExecute taints, simulated time they were first seen)
        self.dirty_nodes = set()
        self.dirty_pods = set()
        self.scheduled = {}     # pod uid -> simulated time of its eviction

    def on_event(self, plural, etype, obj):
        if plural == "nodes":
            name = obj["metadata"]["name"]
            taints = [] if etype == "DELETED" else _no_execute(obj)
            known = self.tainted.get(name)
            if (known[0] if known else []) == taints:
                return
            if taints:
                self.tainted[name] = (taints, self.clock.now())
            else:
                self.tainted.pop(name, None)
            self.dirty_nodes.add(name)
            return
        if etype == "DELETED":
            self.scheduled.pop(obj["metadata"]["uid"], None)
            return
        if (obj.get("spec") or {}).get("nodeName") in self.tainted and not deleting(obj):
            self.dirty_pods.add(key_of(obj))

    def sync(self):
        if not (self.dirty_nodes or self.dirty_pods):
            return False
        nodes, self.dirty_nodes = self.dirty_nodes, set()
        pods, self.dirty_pods = self.dirty_pods, set()
        for name in nodes:
            for pod in self.store.pods_on_node(name):
                pods.add(key_of(pod))
        for key in pods:
            self._judge(self.store.try_get("pods", key[0], key[1]))
        return True

    def _judge(self, pod):
        if pod is None or deleting(pod):
            return
        uid = pod["metadata"]["uid"]
        entry = self.tainted.get((pod.get("spec") or {}).get("nodeName"))
        if entry is None:
            self.scheduled.pop(uid, None)
            return
        delay = eviction_delay((pod.get("spec") or {}).get("tolerations"), entry[0])
        if delay is None:
            self.scheduled.pop(uid, None)
            return
        due = entry[1] + delay
        if due <= self.clock.now():
            self.scheduled.pop(uid, None)
            delete_pod(self.ctl, pod, self.client, dict(CAUSE))
            self.ctl.recorder.record(pod, "TaintManagerEviction", "Marking for deletion Pod %s/%s" % key_of(pod),
                                     "taint-eviction-controller")
        elif self.scheduled.get(uid) != due:
            self.scheduled[uid] = due
            self.ctl.call_at(due, self._due, key_of(pod), uid, due)

    def _due(self, key, uid, due):
        if self.scheduled.get(uid) == due:
            self.dirty_pods.add(key)

    def idle(self):
        return not (self.dirty_nodes or self.dirty_pods)
