"""The reference backend's half of the invariant report: what the real API server did, written to the
sandbox's event log in the same events the embedded backend's store writes, so ``report.py`` reads either.

Two sources:

- kube-apiserver's **audit log** (every request, stages RequestReceived and ResponseComplete, with the
  User-Agent): each finished request becomes a ``k8s.request`` (the control plane's own components left out),
  and the RequestReceived of an eviction or of a pod DELETE is kept to say how a pod's end began;
- **watches** on nodes, pods, ReplicaSets and PodDisruptionBudgets (list, then watch from its
  resourceVersion, listed again after a 410): ``node.*`` and ``pod.*`` events as the embedded store derives them.

A pod's end (its ``deletionTimestamp`` appearing, or its removal without one) is ``evicted`` when an eviction
of it was received, ``deleted`` by the client that sent a DELETE, and ``killed`` otherwise; the controller
manager's own deletions are named after the controller (the pod garbage collector removing the pods of a
node that is gone is a kill, as it is on the embedded backend). The audit log is written before the API
server acts (``--audit-log-mode blocking``), so the line that explains a change is on disk when the watch
reports it.
"""

import collections
import json
import os
import threading
import time

from ..kube.selectors import LabelSelector
from ..kube.server import client_of
from ..kube.store import owner_of, unschedulable_now
from .rest import RestError

MUTATING = frozenset(("create", "update", "patch", "delete", "deletecollection"))
# creates in name only: the API server answers an access or token review and stores nothing (SelfSubjectAccessReview is
# how a client asks what it may do, kubectl auth can-i), so they change nothing and open no rollout window
REVIEWS = frozenset(("selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews",
                     "localsubjectaccessreviews", "tokenreviews", "selfsubjectreviews"))
# User-Agents of the control plane itself: its requests are not the collection's, nor a test's
COMPONENTS = ("kube-controller-manager", "kube-scheduler", "kwok", "kube-apiserver", "etcd")
# kube-controller-manager's controllers (the last segment of their User-Agent) -> how their pod deletions count
CONTROLLER_DELETES = {
    "pod-garbage-collector": ("killed", "node-gone"),
    "generic-garbage-collector": ("deleted", "garbage-collected"),
    "replicaset-controller": ("deleted", "scale-down"),
    "daemon-set-controller": ("deleted", "daemonset-update"),
    # a StatefulSet's scale-down, rolling update or failed-pod replacement: the audit line does not say which
    "statefulset-controller": ("deleted", "scale-down"),
    "node-controller": ("deleted", "taint-eviction"),
    "taint-eviction-controller": ("deleted", "taint-eviction"),
}
# a pod's end follows the request that began it within milliseconds; an older one explains nothing
CAUSE_SECONDS = 20.0
PLURALS = {"replicasets": "/apis/apps/v1/replicasets", "poddisruptionbudgets": "/apis/policy/v1/poddisruptionbudgets",
           "nodes": "/api/v1/nodes", "pods": "/api/v1/pods", "services": "/api/v1/services"}


def is_ready(obj):
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def _key(obj):
    meta = obj["metadata"]
    return "%s/%s" % (meta["namespace"], meta["name"]) if meta.get("namespace") else meta["name"]


def component_of(user_agent):
    """``kube-controller-manager/<controller>`` (or the component's name) for the control plane's requests, else None."""
    first = (user_agent or "").split("/", 1)[0]
    if first not in COMPONENTS:
        return None
    if first == "kube-controller-manager":
        return "kube-controller-manager/" + user_agent.rstrip("/").rsplit("/", 1)[-1]
    return first


class AuditTail:
    """Reads the audit log as it grows; ``catch_up()`` is safe to call from any thread."""

    def __init__(self, path, events):
        self.path = path
        self.events = events
        self.lock = threading.Lock()
        self._fh = None
        self._partial = ""
        self.began = {}   # (namespace, name) -> ("evicted" | "deleted", client, wall time): received, not yet explained a pod's end
        self.requests = 0

    def catch_up(self):
        with self.lock:
            if self._fh is None:
                if not os.path.exists(self.path):
                    return
                self._fh = open(self.path, encoding="utf-8")  # pylint: disable=consider-using-with
            chunk = self._fh.read()
            if not chunk:
                return
            text = self._partial + chunk
            lines = text.split("\n")
            self._partial = lines.pop()
            for line in lines:
                if line.strip():
                    self._entry(json.loads(line))

    def _entry(self, entry):
        ref = entry.get("objectRef") or {}
        verb, stage = entry.get("verb"), entry.get("stage")
        user_agent = entry.get("userAgent") or ""
        component = component_of(user_agent)
        client = component or client_of(user_agent)
        pod = (ref.get("namespace"), ref.get("name"))
        evict = ref.get("resource") == "pods" and ref.get("subresource") == "eviction" and verb == "create"
        delete = ref.get("resource") == "pods" and not ref.get("subresource") and verb == "delete" and ref.get("name")
        if stage == "RequestReceived":
            if evict:
                self.began[pod] = ("evicted", client, time.monotonic())
            elif delete:
                self.began[pod] = ("deleted", client, time.monotonic())
            return
        if stage != "ResponseComplete" and stage != "Panic":
            return
        code = (entry.get("responseStatus") or {}).get("code") or 0
        if (evict or delete) and code >= 300 and self.began.get(pod, (None, None, 0))[1] == client:
            self.began.pop(pod, None)   # refused: it began nothing
        if component:
            return
        self.requests += 1
        dry_run = "dryRun=" in (entry.get("requestURI") or "")
        fields = {"verb": "evict" if evict else verb, "resource": ref.get("resource"), "namespace": ref.get("namespace"),
                  "name": ref.get("name"), "client": client, "code": code,
                  "mutating": (evict or verb in MUTATING) and not dry_run and ref.get("resource") is not None
                  and ref.get("resource") not in REVIEWS}
        if ref.get("subresource") and not evict:
            fields["subresource"] = ref["subresource"]
        if ref.get("resource") is None:
            fields["path"] = (entry.get("requestURI") or "").split("?", 1)[0]
        if dry_run:
            fields["dry_run"] = True
        self.events.emit("k8s.request", **fields)

    def cause(self, namespace, name):
        """How the end of pod namespace/name began: {"how", "client"[, "reason"]}."""
        self.catch_up()
        with self.lock:
            how, client, when = self.began.pop((namespace, name), (None, None, 0.0))
        if how is not None and time.monotonic() - when > CAUSE_SECONDS:
            how = None   # a request long past (a dry run, a namesake's final delete) began nothing now
        if how is None:
            return {"how": "killed", "reason": "unexplained", "client": None}
        if client and client.startswith("kube-controller-manager/"):
            how, reason = CONTROLLER_DELETES.get(client.rsplit("/", 1)[-1], (how, "controller"))
            return {"how": how, "reason": reason, "client": client}
        return {"how": how, "client": client}

    def close(self):
        with self.lock:
            if self._fh:
                self._fh.close()
                self._fh = None


class Observer:
    """Watches the reference API server and writes the embedded backend's ``node.*`` / ``pod.*`` events."""

    def __init__(self, rest, audit_path, events):
        self.rest = rest
        self.events = events
        self.audit = AuditTail(audit_path, events)
        self.lock = threading.RLock()
        self.cache = {plural: {} for plural in PLURALS}   # plural -> key -> object
        self.synced = {plural: threading.Event() for plural in PLURALS}
        self.stopping = threading.Event()
        self.errors = collections.deque(maxlen=20)
        self.threads = []

    def start(self):
        threading.Thread(target=self._tail_audit, name="audit-tail", daemon=True).start()
        for plural in ("replicasets", "poddisruptionbudgets", "nodes", "pods", "services"):
            thread = threading.Thread(target=self._inform, args=(plural,), name="watch-" + plural, daemon=True)
            thread.start()
            self.threads.append(thread)
            if not self.synced[plural].wait(60):
                raise RuntimeError("could not list %s from the reference API server: %s" % (plural, list(self.errors)))
        return self

    def stop(self):
        self.stopping.set()
        self.audit.close()

    # ---- reading -------------------------------------------------------------------------------
    def _tail_audit(self):
        while not self.stopping.is_set():
            try:
                self.audit.catch_up()
            except (OSError, ValueError) as exc:
                self.errors.append("audit: %s" % exc)
            time.sleep(0.05)

    def _inform(self, plural):
        path = PLURALS[plural]
        while not self.stopping.is_set():
            try:
                listing = self.rest.get(path)
                self._resync(plural, listing.get("items") or [])
                self.synced[plural].set()
                version = listing["metadata"]["resourceVersion"]
                while not self.stopping.is_set():
                    for etype, obj in self.rest.watch(path, version, timeout_seconds=30):
                        version = obj["metadata"].get("resourceVersion") or version
                        if etype != "BOOKMARK":
                            self.apply(plural, etype, obj)
            except RestError as exc:
                if exc.code != 410:   # 410: the version is too old; list again
                    self.errors.append("%s: %s" % (plural, exc))
                    time.sleep(0.5)
            except Exception as exc:  # pylint: disable=broad-except
                self.errors.append("%s: %r" % (plural, exc))
                time.sleep(0.5)

    def _resync(self, plural, items):
        fresh = {_key(obj): obj for obj in items}
        with self.lock:
            for key in list(self.cache[plural]):
                if key not in fresh:
                    self.apply(plural, "DELETED", self.cache[plural][key])
            for obj in items:
                current = self.cache[plural].get(_key(obj))
                if current is None or current["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                    self.apply(plural, "MODIFIED" if current else "ADDED", obj)

    # ---- deriving ------------------------------------------------------------------------------
    def apply(self, plural, etype, obj):
        with self.lock:
            key = _key(obj)
            old = self.cache[plural].get(key)
            if old is not None and old["metadata"].get("uid") != obj["metadata"].get("uid"):
                self.apply(plural, "DELETED", old)   # replaced by a namesake: the old one is gone
                old = None
            if etype == "DELETED":
                self.cache[plural].pop(key, None)
            else:
                self.cache[plural][key] = obj
            if plural == "nodes":
                self._node(etype, old, obj)
            elif plural == "pods":
                self._pod(etype, old, obj)

    def _node(self, etype, old, new):
        labels = new["metadata"].get("labels") or {}
        base = {"node": new["metadata"]["name"], "group": labels.get("eks.amazonaws.com/nodegroup"), "client": None}
        if old is None and etype != "DELETED":
            self.events.emit("node.added", zone=labels.get("topology.kubernetes.io/zone"),
                             provider_id=(new.get("spec") or {}).get("providerID"), **base)
        if etype == "DELETED":
            self.events.emit("node.deleted", **base)
            return
        if is_ready(new) != (bool(old) and is_ready(old)):
            self.events.emit("node.ready" if is_ready(new) else "node.notready", **base)
        cordoned = bool((new.get("spec") or {}).get("unschedulable"))
        if cordoned != bool(((old or {}).get("spec") or {}).get("unschedulable")):
            self.events.emit("node.cordoned" if cordoned else "node.uncordoned", **base)
        taints = (new.get("spec") or {}).get("taints") or []
        if taints != (((old or {}).get("spec") or {}).get("taints") or []):
            self.events.emit("node.taints", taints=["%s=%s:%s" % (t.get("key"), t.get("value", ""), t.get("effect"))
                                                    for t in taints], **base)

    def owner_of(self, pod):
        return owner_of(pod, self._replicaset)

    def _replicaset(self, namespace, name):
        rs = self.cache["replicasets"].get("%s/%s" % (namespace, name))
        if rs is None:   # the ReplicaSets' watch is behind the pods': ask
            try:
                rs = self.rest.get("/apis/apps/v1/namespaces/%s/replicasets/%s" % (namespace, name))
            except RestError:
                rs = None
        return rs

    def _budgets(self, pod):
        """Each budget selecting ``pod``: its healthy pods now (Ready, not terminating) and desiredHealthy."""
        ns = pod["metadata"].get("namespace")
        labels = pod["metadata"].get("labels") or {}
        out = []
        for pdb in sorted(self.cache["poddisruptionbudgets"].values(), key=_key):
            if pdb["metadata"].get("namespace") != ns:
                continue
            selector = LabelSelector.from_object((pdb.get("spec") or {}).get("selector"))
            if not selector.matches(labels):
                continue
            healthy = sum(1 for p in self.cache["pods"].values()
                          if p["metadata"].get("namespace") == ns and selector.matches(p["metadata"].get("labels"))
                          and is_ready(p) and not p["metadata"].get("deletionTimestamp"))
            out.append({"pdb": _key(pdb), "healthy": healthy,
                        "desired": (pdb.get("status") or {}).get("desiredHealthy", 0)})
        return out

    def _pod(self, etype, old, new):
        meta = new["metadata"]
        base = {"pod": _key(new), "uid": meta["uid"], "node": (new.get("spec") or {}).get("nodeName"),
                "owner": self.owner_of(new)}
        if old is None and etype != "DELETED":
            self.events.emit("pod.created", client=None, **base)
        if old and not (old.get("spec") or {}).get("nodeName") and base["node"]:
            self.events.emit("pod.scheduled", **base)
        if etype != "DELETED" and unschedulable_now(old, new):
            self.events.emit("pod.unschedulable", **base)
        ending = etype != "DELETED" and meta.get("deletionTimestamp") and not (old and old["metadata"].get("deletionTimestamp"))
        vanished = etype == "DELETED" and not (old and old["metadata"].get("deletionTimestamp"))
        source = old or new
        if ending or vanished:
            info = self.audit.cause(meta.get("namespace"), meta["name"])
            self.events.emit("pod.terminating", was_ready=is_ready(source), phase=(source.get("status") or {}).get("phase"),
                             grace_seconds=0 if vanished else meta.get("deletionGracePeriodSeconds"),
                             pdbs=self._budgets(new), **dict(base, **info))
        was_ready = bool(old) and is_ready(old)
        now_ready = etype != "DELETED" and is_ready(new)
        if was_ready and not now_ready and etype != "DELETED":
            self.events.emit("pod.unready", **base)
        elif now_ready and not was_ready:
            self.events.emit("pod.ready", **base)
        if etype == "DELETED":
            self.events.emit("pod.deleted", was_ready=was_ready, **base)
