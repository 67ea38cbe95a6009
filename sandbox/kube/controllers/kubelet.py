"""The kubelets of every node, as one loop.

A pod bound to a Ready node starts (phase Running, container statuses, pod IP) ``pod_start_seconds`` later
and turns Ready ``pod_ready_seconds`` after that (annotation ``sandbox.nodeops.io/ready-seconds`` overrides
it per pod; ``never`` keeps the pod unready, as a failing readiness probe would). Pods wait while their node
is not Ready, and until every volume of its PersistentVolumeClaims is attached to its node (:mod:`.volumes`). A pod
being deleted is marked not Ready at once (it leaves the endpoints) and is removed
``min(shutdown, grace period)`` later, where shutdown is ``pod_shutdown_seconds`` or the annotation
``sandbox.nodeops.io/shutdown-seconds`` (a pod that never started goes at once). Pods on a node whose
instance is stopped are left alone, as a dead kubelet would leave them.
"""

import uuid

from ..errors import ApiError
from ..store import is_ready
from .objects import condition, deleting, int_or, key_of, set_condition, shallow, update
from .runtime import Controller

READY_ANNOTATION = "sandbox.nodeops.io/ready-seconds"
SHUTDOWN_ANNOTATION = "sandbox.nodeops.io/shutdown-seconds"

DEAD_KUBELET_RECHECK = 5.0
WAITING, STARTING, RUNNING, READY, TERMINATING = "waiting", "starting", "running", "ready", "terminating"


def _annotation_seconds(pod, name, default):
    value = (pod["metadata"].get("annotations") or {}).get(name)
    if value is None:
        return default
    if str(value).strip().lower() == "never":
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return default


class Kubelet(Controller):
    watches = ("nodes", "pods")
    client = "sandbox-kubelet"

    def __init__(self, ctl):
        super().__init__(ctl)
        self.pods = {}            # pod key -> [uid, node, stage]
        self.waiting = {}         # node -> {pod keys} waiting for the node to be Ready
        self.node_ready = {}      # node -> bool
        self.unsettled = set()    # pod keys not Ready yet or terminating
        self.dirty = set()
        self._next_ip = 0

    # ---- events -----------------------------------------------------------------------------------
    def on_event(self, plural, etype, obj):
        if plural == "nodes":
            name = obj["metadata"]["name"]
            if etype == "DELETED":
                self.node_ready.pop(name, None)
                return
            ready = is_ready(obj)
            if ready and not self.node_ready.get(name):
                self.dirty.update(self.waiting.pop(name, ()))
            self.node_ready[name] = ready
            return
        key = key_of(obj)
        if etype == "DELETED":
            self._forget(key)
            self.dirty.discard(key)
            return
        self.dirty.add(key)

    def _forget(self, key):
        state = self.pods.pop(key, None)
        self.unsettled.discard(key)
        if state and state[2] == WAITING:
            keys = self.waiting.get(state[1])
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.waiting[state[1]]

    def _set(self, key, uid, node, stage):
        old = self.pods.get(key)
        if old and old[2] == WAITING and stage != WAITING:
            keys = self.waiting.get(old[1])
            if keys is not None:
                keys.discard(key)
        self.pods[key] = [uid, node, stage]
        if stage == READY:
            self.unsettled.discard(key)
        else:
            self.unsettled.add(key)
        if stage == WAITING:
            self.waiting.setdefault(node, set()).add(key)

    def _alive(self, node):
        return self.ctl.nodes.kubelet_alive(node)

    def _can_start(self, node, pod):
        return self.node_ready.get(node, False) and self._alive(node) and self.ctl.volumes.attached_for(pod, node)

    def volumes_changed(self, node):
        """A volume was attached to ``node``: look again at its pods waiting to start."""
        self.dirty.update(self.waiting.get(node, ()))

    # ---- the pass ----------------------------------------------------------------------------------------
    def sync(self):
        if not self.dirty:
            return False
        keys, self.dirty = self.dirty, set()
        for key in keys:
            self._examine(key)
        return True

    def _examine(self, key):
        pod = self.store.try_get("pods", key[0], key[1])
        if pod is None:
            self._forget(key)
            return
        uid = pod["metadata"]["uid"]
        state = self.pods.get(key)
        if state is not None and state[0] != uid:
            self._forget(key)
            state = None
        node = (pod.get("spec") or {}).get("nodeName")
        if deleting(pod):
            if state is None or state[2] != TERMINATING:
                self._terminate(key, pod, node, state)
            return
        if not node:
            return
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            self._forget(key)
            return
        if state is None:
            if is_ready(pod):
                self._set(key, uid, node, READY)
            elif phase == "Running":
                self._set(key, uid, node, RUNNING)
                self._schedule_ready(key, pod)
            else:
                self._set(key, uid, node, WAITING)
                state = self.pods[key]
                if self.store.try_get("nodes", None, node) is None:
                    self.ctl.nodes.watch_orphans(node)
        if state is not None and state[2] == WAITING:
            if self._can_start(node, pod):
                self._set(key, uid, node, STARTING)
                self.ctl.call_after(self.cfg.pod_start_seconds, self._start, key, uid)
            else:
                self.waiting.setdefault(node, set()).add(key)

    def _schedule_ready(self, key, pod):
        delay = _annotation_seconds(pod, READY_ANNOTATION, self.cfg.pod_ready_seconds)
        if delay is not None:
            self.ctl.call_after(delay, self._ready, key, pod["metadata"]["uid"])

    def _current(self, key, uid, stage):
        state = self.pods.get(key)
        if state is None or state[0] != uid or state[2] != stage:
            return None
        pod = self.store.try_get("pods", key[0], key[1])
        if pod is None or pod["metadata"]["uid"] != uid or deleting(pod):
            return None
        return pod

    # ---- start and readiness ----------------------------------------------------------------------------
    def _pod_ip(self):
        self._next_ip += 1
        n = self._next_ip
        return "100.%d.%d.%d" % (64 + (n >> 16) % 64, (n >> 8) & 255, n & 255)

    def _host_ip(self, node_name):
        node = self.store.try_get("nodes", None, node_name)
        for addr in ((node or {}).get("status") or {}).get("addresses") or []:
            if addr.get("type") == "InternalIP":
                return addr.get("address")
        return None

    def _start(self, key, uid):
        pod = self._current(key, uid, STARTING)
        if pod is None:
            return
        node = pod["spec"]["nodeName"]
        if not self._can_start(node, pod):
            self._set(key, uid, node, WAITING)
            return
        ts = self.clock.timestamp()
        host_ip, pod_ip = self._host_ip(node), self._pod_ip()
        if (pod.get("spec") or {}).get("hostNetwork"):
            pod_ip = host_ip

        def run(current):
            if current["metadata"]["uid"] != uid or deleting(current):
                return None
            spec = current.get("spec") or {}
            status = dict(current.get("status") or {})
            conds = status.get("conditions")
            conds = set_condition(conds, "PodReadyToStartContainers", "True", ts, probe=True)
            conds = set_condition(conds, "Initialized", "True", ts, probe=True)
            names = [c.get("name") for c in spec.get("containers") or []]
            unready = "containers with unready status: [%s]" % " ".join(names)
            conds = set_condition(conds, "Ready", "False", ts, "ContainersNotReady", unready, probe=True)
            conds = set_condition(conds, "ContainersReady", "False", ts, "ContainersNotReady", unready, probe=True)
            conds = set_condition(conds, "PodScheduled", "True", ts, probe=True)
            status.update({
                "phase": "Running", "conditions": conds, "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
                "podIP": pod_ip, "podIPs": [{"ip": pod_ip}], "startTime": ts,
                "containerStatuses": [self._container_status(c, ts, False) for c in spec.get("containers") or []],
            })
            if spec.get("initContainers"):
                status["initContainerStatuses"] = [self._init_status(c, ts) for c in spec["initContainers"]]
            return shallow(current, status=status)
        written = update(self.store, "pods", key[0], key[1], run, self.client)
        if written is None:
            return
        self._set(key, uid, node, RUNNING)
        self._schedule_ready(key, written)

    @staticmethod
    def _container_status(container, ts, ready):
        image = container.get("image") or ""
        return {"name": container.get("name"), "image": image,
                "imageID": "%s@sha256:%s" % (image.split(":")[0], uuid.uuid5(uuid.NAMESPACE_URL, image).hex * 2),
                "containerID": "containerd://" + uuid.uuid4().hex * 2,
                "ready": ready, "started": True, "restartCount": 0, "lastState": {},
                "state": {"running": {"startedAt": ts}}}

    @staticmethod
    def _init_status(container, ts):
        image = container.get("image") or ""
        return {"name": container.get("name"), "image": image, "imageID": image, "ready": True, "restartCount": 0,
                "containerID": "containerd://" + uuid.uuid4().hex * 2, "lastState": {}, "started": False,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": ts, "finishedAt": ts}}}

    def _ready(self, key, uid):
        pod = self._current(key, uid, RUNNING)
        if pod is None:
            return
        ts = self.clock.timestamp()

        def ready(current):
            if current["metadata"]["uid"] != uid or deleting(current) or is_ready(current):
                return None
            status = dict(current.get("status") or {})
            conds = set_condition(status.get("conditions"), "Ready", "True", ts, probe=True)
            status["conditions"] = set_condition(conds, "ContainersReady", "True", ts, probe=True)
            status["containerStatuses"] = [dict(c, ready=True) for c in status.get("containerStatuses") or []]
            return shallow(current, status=status)
        if update(self.store, "pods", key[0], key[1], ready, self.client) is not None:
            self._set(key, uid, pod["spec"]["nodeName"], READY)

    # ---- termination --------------------------------------------------------------------------------------
    def _terminate(self, key, pod, node, state):
        uid = pod["metadata"]["uid"]
        if not node or self.store.try_get("nodes", None, node) is None:
            # never scheduled, or its node is gone: the API server / pod GC delete it outright
            self._forget(key)
            self._remove(pod, uid, "sandbox-pod-gc")
            return
        if not self._alive(node):
            self._set(key, uid, node, TERMINATING)   # a dead kubelet cannot end it; look again later
            self.ctl.call_after(DEAD_KUBELET_RECHECK, self._finish, key, uid)
            return
        started = (pod.get("status") or {}).get("phase") == "Running" or (state is not None and state[2] in (RUNNING, READY))
        self._set(key, uid, node, TERMINATING)
        grace = int_or(pod["metadata"].get("deletionGracePeriodSeconds"),
                       int_or((pod.get("spec") or {}).get("terminationGracePeriodSeconds"), 30))
        shutdown = _annotation_seconds(pod, SHUTDOWN_ANNOTATION, self.cfg.pod_shutdown_seconds)
        if shutdown is None:
            shutdown = float(grace)
        delay = min(shutdown, float(grace)) if started else 0.0
        if started:
            ts = self.clock.timestamp()

            def unready(current):
                if current["metadata"]["uid"] != uid:
                    return None
                cond = condition(current, "Ready")
                if cond is not None and cond.get("status") == "False":
                    return None
                status = dict(current.get("status") or {})
                conds = set_condition(status.get("conditions"), "Ready", "False", ts, "ContainersNotReady",
                                      "containers with unready status", probe=True)
                status["conditions"] = set_condition(conds, "ContainersReady", "False", ts, "ContainersNotReady",
                                                     "containers with unready status", probe=True)
                status["containerStatuses"] = [dict(c, ready=False) for c in status.get("containerStatuses") or []]
                return shallow(current, status=status)
            update(self.store, "pods", key[0], key[1], unready, self.client)
            names = ", ".join(c.get("name") or "" for c in (pod.get("spec") or {}).get("containers") or [])
            self.ctl.recorder.record(pod, "Killing", "Stopping container %s" % names, "kubelet", host=node)
        self.ctl.call_after(delay, self._finish, key, uid)

    def _finish(self, key, uid):
        state = self.pods.get(key)
        if state is None or state[0] != uid:
            return
        pod = self.store.try_get("pods", key[0], key[1])
        if pod is None or pod["metadata"]["uid"] != uid:
            self._forget(key)
            return
        if not self._alive(state[1]):
            self.ctl.call_after(DEAD_KUBELET_RECHECK, self._finish, key, uid)
            return
        self._forget(key)
        self._remove(pod, uid, self.client)

    def _remove(self, pod, uid, client):
        ns, name = key_of(pod)
        with self.store.lock:
            current = self.store.try_get("pods", ns, name)
            if current is None or current["metadata"]["uid"] != uid:
                return
            try:
                self.store.remove("pods", ns, name, client=client)
            except ApiError:
                pass

    def idle(self):
        return not self.unsettled and not self.dirty
