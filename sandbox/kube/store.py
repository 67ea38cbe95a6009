"""The sandbox's object store: what etcd + the registry layer are to kube-apiserver.

Contract for everything built on it (the HTTP API and the controllers):
- Objects are plain dicts in the API's JSON form. Objects returned by ``get``/``list``/watch events are
  shared, immutable snapshots: never modify them. To change an object, build a new dict (``copy_obj``)
  and ``replace`` it, or use ``mutate`` (internal read-modify-write without conflicts).
- Every write bumps one global resourceVersion (a decimal string, as the API returns them) and is
  fanned out to watchers and recorded in a bounded history, so a watch may resume from a
  resourceVersion (410 Gone when it is older than the history).
- Every observable change is written to the event log by ``_derive`` (node added/ready/cordoned/tainted/
  gone, pod created/scheduled/ready/terminating/deleted, PDB status), so components cannot forget to
  log; the component causing a pod's end passes ``cause`` (how, client, reason), which is carried to the
  ``pod.terminating``/``pod.deleted`` events the invariant checker reads (``pod.terminating`` also carries
  ``grace_seconds``, the grace period the deletion gave the pod). When a pod whose graceful end
  had already begun is removed with a different cause (its node died under it), ``pod.deleted`` keeps the
  original cause and adds ``ended_by`` with the one that cut the grace period short.
"""

import collections
import json
import threading
import uuid

from . import disruption
from .errors import already_exists, conflict, invalid, not_found
from .selectors import FieldSelector, LabelSelector

Resource = collections.namedtuple("Resource", "plural group version kind namespaced short_names")

RESOURCES = {r.plural: r for r in (
    Resource("namespaces", "", "v1", "Namespace", False, ["ns"]),
    Resource("nodes", "", "v1", "Node", False, ["no"]),
    Resource("pods", "", "v1", "Pod", True, ["po"]),
    Resource("services", "", "v1", "Service", True, ["svc"]),
    Resource("events", "", "v1", "Event", True, ["ev"]),
    Resource("deployments", "apps", "v1", "Deployment", True, ["deploy"]),
    Resource("replicasets", "apps", "v1", "ReplicaSet", True, ["rs"]),
    Resource("daemonsets", "apps", "v1", "DaemonSet", True, ["ds"]),
    Resource("statefulsets", "apps", "v1", "StatefulSet", True, ["sts"]),
    Resource("poddisruptionbudgets", "policy", "v1", "PodDisruptionBudget", True, ["pdb"]),
    Resource("leases", "coordination.k8s.io", "v1", "Lease", True, []),
    Resource("persistentvolumes", "", "v1", "PersistentVolume", False, ["pv"]),
    Resource("persistentvolumeclaims", "", "v1", "PersistentVolumeClaim", True, ["pvc"]),
    Resource("volumeattachments", "storage.k8s.io", "v1", "VolumeAttachment", False, []),
    # the AWS Load Balancer Controller's custom resource, served as if its CRD were installed
    Resource("targetgroupbindings", "elbv2.k8s.aws", "v1beta1", "TargetGroupBinding", True, []),
    # answered, never stored (server.py): what kubectl auth can-i asks
    Resource("selfsubjectaccessreviews", "authorization.k8s.io", "v1", "SelfSubjectAccessReview", False, []),
    # what docs/rbac.yaml holds beside its roles: stored as kube-apiserver stores it (no token controller)
    Resource("serviceaccounts", "", "v1", "ServiceAccount", True, ["sa"]),
    # discovered so that kubectl maps them, never stored: every request is answered that the embedded backend has no
    # RBAC (server.py), which kubectl apply then prints
    Resource("roles", "rbac.authorization.k8s.io", "v1", "Role", True, []),
    Resource("rolebindings", "rbac.authorization.k8s.io", "v1", "RoleBinding", True, []),
    Resource("clusterroles", "rbac.authorization.k8s.io", "v1", "ClusterRole", False, []),
    Resource("clusterrolebindings", "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", False, []),
)}
# the RBAC resources, enforced on the reference backend only
RBAC = frozenset(["roles", "rolebindings", "clusterroles", "clusterrolebindings"])
# resources a create only asks a question of: answered, never stored, and no change
REVIEWS = frozenset(["selfsubjectaccessreviews"])


def copy_obj(obj):
    """A deep copy of a JSON-shaped object (faster than copy.deepcopy for plain data)."""
    return json.loads(json.dumps(obj))


def api_version(res):
    return res.version if not res.group else "%s/%s" % (res.group, res.version)


def pod_key(pod):
    return "%s/%s" % (pod["metadata"].get("namespace"), pod["metadata"]["name"])


def is_ready(obj):
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def unschedulable_now(old, new):
    """Whether the scheduler has just found no node for an unbound pod (``PodScheduled`` False, reason
    ``Unschedulable``, which ``old`` did not carry): the start of a wait for capacity, not for the scheduler."""
    def marked(pod):
        if pod is None or (pod.get("spec") or {}).get("nodeName"):
            return False
        return any(cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("reason") == "Unschedulable"
                   for cond in (pod.get("status") or {}).get("conditions") or [])
    return marked(new) and not marked(old)


def controller_ref(obj):
    for ref in (obj or {}).get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def owner_of(pod, replicaset):
    """The workload a pod belongs to, as the invariant report names it: 'Deployment/ns/name' (through its
    ReplicaSet, which ``replicaset(namespace, name)`` returns or None), 'DaemonSet/ns/name', 'ReplicaSet/ns/name',
    'StatefulSet/ns/name', or None for a pod no controller owns."""
    ref = controller_ref(pod)
    if not ref:
        return None
    ns = pod["metadata"].get("namespace")
    if ref.get("kind") == "ReplicaSet":
        up = controller_ref(replicaset(ns, ref.get("name")))
        if up and up.get("kind") == "Deployment":
            return "Deployment/%s/%s" % (ns, up.get("name"))
    return "%s/%s/%s" % (ref.get("kind"), ns, ref.get("name"))


class Watcher:
    """One watch stream: events queued by the store, taken with ``next``."""

    def __init__(self, store, plural, namespace, label_selector, field_selector, notify=None):
        self.store = store
        self.notify = notify
        self.plural = plural
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self._queue = collections.deque()
        self._cond = threading.Condition()
        self.closed = False

    def _visible(self, obj):
        if obj is None:
            return False
        if self.namespace and obj["metadata"].get("namespace") != self.namespace:
            return False
        if self.label_selector and not self.label_selector.matches(obj["metadata"].get("labels")):
            return False
        if self.field_selector and not self.field_selector.matches(obj):
            return False
        return True

    def offer(self, etype, old, new):
        """Queue the event as this watcher sees it (an object leaving the selection is DELETED)."""
        if self.closed:
            return
        was, now = self._visible(old), self._visible(new)
        if etype == "DELETED":
            out = ("DELETED", new) if was else None
        elif now:
            out = ("ADDED" if (etype == "ADDED" or not was) else "MODIFIED", new)
        elif was:
            out = ("DELETED", new)
        else:
            out = None
        if out:
            with self._cond:
                self._queue.append(out)
                self._cond.notify()
            if self.notify is not None:
                self.notify()

    def next(self, timeout):
        """The next (type, object), or None after ``timeout`` wall seconds or when closed."""
        with self._cond:
            if not self._queue and not self.closed:
                self._cond.wait(timeout)
            if self._queue:
                return self._queue.popleft()
            return None

    def close(self):
        self.closed = True
        with self._cond:
            self._cond.notify_all()
        self.store.unwatch(self)


class Store:
    def __init__(self, clock, events, history=250000):
        self.clock = clock
        self.events = events
        self.lock = threading.RLock()
        self._rv = 1
        self._objs = {p: {} for p in RESOURCES}
        self._pods_by_node = collections.defaultdict(set)   # node name -> {(ns, name)}
        self._by_ns = {p: collections.defaultdict(set) for p in RESOURCES}  # plural -> ns -> {name}
        self._by_label = {p: collections.defaultdict(set) for p in RESOURCES}  # plural -> (key, value) -> {(ns, name)}
        self._history = collections.deque(maxlen=history)    # (rv, plural, type, old, new)
        self._watchers = set()
        # pod watchers that select one node (spec.nodeName=X, as a drain watches each node): offered only that
        # node's events, not every pod event of the cluster
        self._node_watchers = collections.defaultdict(set)
        self._causes = {}    # pod uid -> cause dict recorded when its end began
        # per plural: bumped when an object comes, goes, or changes anything but its status (what indexes of
        # selectors, such as the budgets' in disruption.pdbs_for_pod, are built from)
        self.shape_versions = collections.Counter()

    # ---- reads -------------------------------------------------------------------------------
    @property
    def resource_version(self):
        return str(self._rv)

    def get(self, plural, namespace, name):
        obj = self._objs[plural].get((namespace or None, name))
        if obj is None:
            res = RESOURCES[plural]
            raise not_found(plural, name, res.group)
        return obj

    def try_get(self, plural, namespace, name):
        return self._objs[plural].get((namespace or None, name))

    def list(self, plural, namespace=None, label_selector=None, field_selector=None, sort=True):
        """(items, resourceVersion). Selectors may be strings or parsed selector objects.

        Items come sorted by (namespace, name) unless ``sort`` is False (cheaper for large scans)."""
        if isinstance(label_selector, str):
            label_selector = LabelSelector.parse(label_selector) if label_selector else None
        if isinstance(field_selector, str):
            field_selector = FieldSelector.parse(field_selector, plural) if field_selector else None
        with self.lock:
            table = self._objs[plural]
            node = field_selector.equality_value("spec.nodeName") if (field_selector and plural == "pods") else None
            by_label = self._label_candidates(plural, label_selector)
            if node is not None:
                keys = list(self._pods_by_node.get(node, ()))
                candidates = [table[k] for k in keys if k in table]
            elif by_label is not None:
                candidates = [table[k] for k in by_label if k in table]
            elif namespace:
                candidates = [table[(namespace, n)] for n in self._by_ns[plural].get(namespace, ())]
            else:
                candidates = list(table.values())
            rv = str(self._rv)
        out = []
        for obj in candidates:
            if namespace and obj["metadata"].get("namespace") != namespace:
                continue
            if label_selector and not label_selector.matches(obj["metadata"].get("labels")):
                continue
            if field_selector and not field_selector.matches(obj):
                continue
            out.append(obj)
        if sort:
            out.sort(key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]))
        return out, rv

    def _label_candidates(self, plural, label_selector):
        """The smallest label-index set among the selector's ``key=value`` requirements, or None."""
        best = None
        for key, op, values in getattr(label_selector, "requirements", None) or ():
            if op == "In" and len(values) == 1:
                keys = self._by_label[plural].get((key, values[0]), ())
                if best is None or len(keys) < len(best):
                    best = keys
        return list(best) if best is not None else None

    def pods_on_node(self, node):
        with self.lock:
            table = self._objs["pods"]
            return [table[k] for k in self._pods_by_node.get(node, ()) if k in table]

    # ---- writes ------------------------------------------------------------------------------
    def _next_rv(self):
        self._rv += 1
        return str(self._rv)

    def create(self, plural, obj, client=None):
        """Create ``obj`` (a dict the caller gives up). Fills uid, resourceVersion, creationTimestamp."""
        res = RESOURCES[plural]
        meta = obj.setdefault("metadata", {})
        obj["apiVersion"] = api_version(res)
        obj["kind"] = res.kind
        with self.lock:
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            name = meta.get("name")
            if not name:
                raise invalid(res.kind, "", [("metadata.name", "Required value: name or generateName is required")])
            ns = meta.get("namespace") if res.namespaced else None
            if res.namespaced and not ns:
                raise invalid(res.kind, name, [("metadata.namespace", "Required value")])
            if not res.namespaced:
                meta.pop("namespace", None)
            if res.namespaced and plural != "events" and (None, ns) not in self._objs["namespaces"]:
                raise not_found("namespaces", ns)
            if (ns, name) in self._objs[plural]:
                raise already_exists(plural, name, res.group)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = self.clock.timestamp()
            meta.setdefault("generation", 1)
            meta["resourceVersion"] = self._next_rv()
            self._store(plural, (ns, name), None, obj)
            self._publish(plural, "ADDED", None, obj, client, None)
            return obj

    def replace(self, plural, obj, client=None, cause=None, check_rv=True):
        """Store a new version of an existing object (PUT semantics).

        With ``check_rv`` and a resourceVersion in ``obj``, a stale version is a 409 Conflict, exactly as
        the API answers an update based on an old read."""
        res = RESOURCES[plural]
        meta = obj.setdefault("metadata", {})
        name = meta.get("name")
        ns = meta.get("namespace") if res.namespaced else None
        with self.lock:
            old = self._objs[plural].get((ns, name))
            if old is None:
                raise not_found(plural, name, res.group)
            if check_rv and meta.get("resourceVersion") and meta["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise conflict(plural, name, res.group)
            for keep in ("uid", "creationTimestamp"):
                meta[keep] = old["metadata"][keep]
            if "deletionTimestamp" in old["metadata"]:
                meta.setdefault("deletionTimestamp", old["metadata"]["deletionTimestamp"])
                meta.setdefault("deletionGracePeriodSeconds", old["metadata"].get("deletionGracePeriodSeconds"))
            if old.get("spec") != obj.get("spec"):
                meta["generation"] = old["metadata"].get("generation", 1) + 1
            else:
                meta["generation"] = old["metadata"].get("generation", 1)
            obj["apiVersion"] = api_version(res)
            obj["kind"] = res.kind
            meta["resourceVersion"] = self._next_rv()
            self._store(plural, (ns, name), old, obj)
            self._publish(plural, "MODIFIED", old, obj, client, cause)
            return obj

    def mutate(self, plural, namespace, name, fn, client=None, cause=None):
        """Internal read-modify-write: ``fn(copy)`` edits a copy in place; return False from it to skip.

        Returns the stored object (new or unchanged), or None when the object does not exist."""
        with self.lock:
            old = self._objs[plural].get((namespace or None, name))
            if old is None:
                return None
            new = copy_obj(old)
            if fn(new) is False or new == old:
                return old
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            return self.replace(plural, new, client=client, cause=cause)

    def remove(self, plural, namespace, name, client=None, cause=None):
        """Delete the object now (the end of a graceful deletion, or an immediate one)."""
        res = RESOURCES[plural]
        with self.lock:
            key = (namespace or None, name)
            old = self._objs[plural].get(key)
            if old is None:
                raise not_found(plural, name, res.group)
            gone = copy_obj(old)
            gone["metadata"]["resourceVersion"] = self._next_rv()
            self._store(plural, key, old, None)
            self._publish(plural, "DELETED", old, gone, client, cause)
            return gone

    def _store(self, plural, key, old, new):
        table = self._objs[plural]
        ns, name = key
        if new is None:
            table.pop(key, None)
            self._by_ns[plural][ns].discard(name)
        else:
            table[key] = new
            self._by_ns[plural][ns].add(name)
        old_labels = (old or {}).get("metadata", {}).get("labels") or {}
        new_labels = (new or {}).get("metadata", {}).get("labels") or {}
        if old_labels != new_labels:
            index = self._by_label[plural]
            for item in old_labels.items():
                if new_labels.get(item[0]) != item[1]:
                    index[item].discard(key)
                    if not index[item]:
                        del index[item]
            for item in new_labels.items():
                if old_labels.get(item[0]) != item[1]:
                    index[item].add(key)
        if plural == "pods":
            old_node = (old or {}).get("spec", {}).get("nodeName")
            new_node = (new or {}).get("spec", {}).get("nodeName")
            if old_node and old_node != new_node:
                self._pods_by_node[old_node].discard(key)
            if new_node:
                self._pods_by_node[new_node].add(key)

    # ---- watch -------------------------------------------------------------------------------
    def watch(self, plural, namespace=None, label_selector=None, field_selector=None, since=None, notify=None):
        """A Watcher; with ``since`` (a resourceVersion) the history after it is replayed first.

        ``notify`` (optional, no arguments) is called after each event is queued, so one consumer can wait
        for several watchers at once; it runs under the store lock and must only signal (e.g. Event.set).
        Raises ApiError 410 Expired when ``since`` is older than the retained history."""
        if isinstance(label_selector, str):
            label_selector = LabelSelector.parse(label_selector) if label_selector else None
        if isinstance(field_selector, str):
            field_selector = FieldSelector.parse(field_selector, plural) if field_selector else None
        w = Watcher(self, plural, namespace, label_selector, field_selector, notify)
        with self.lock:
            if since not in (None, "", "0"):
                since_i = int(since)
                if self._history and since_i < self._history[0][0] - 1 and since_i < self._rv:
                    from .errors import ApiError  # pylint: disable=import-outside-toplevel
                    raise ApiError(410, "Expired", "too old resource version: %s (%s)" % (since, self._history[0][0]))
                newer = []     # walk back from the newest entry: a resume is usually from a recent version
                for entry in reversed(self._history):
                    if entry[0] <= since_i:
                        break
                    newer.append(entry)
                for _rv, p, etype, old, new in reversed(newer):
                    if p == plural:
                        w.offer(etype, old, new)
            elif since is None or since == "":
                pass
            else:  # "0": start with the current state as ADDED events, as the API's watch does
                for obj in self._objs[plural].values():
                    w.offer("ADDED", None, obj)
            node = self._watched_node(w)
            if node is None:
                self._watchers.add(w)
            else:
                self._node_watchers[node].add(w)
        return w

    @staticmethod
    def _watched_node(watcher):
        if watcher.plural != "pods" or watcher.field_selector is None:
            return None
        return watcher.field_selector.equality_value("spec.nodeName")

    def unwatch(self, watcher):
        with self.lock:
            self._watchers.discard(watcher)
            node = self._watched_node(watcher)
            if node is not None:
                self._node_watchers[node].discard(watcher)
                if not self._node_watchers[node]:
                    del self._node_watchers[node]

    def _publish(self, plural, etype, old, new, client, cause):
        self._history.append((self._rv, plural, etype, old, new))
        if etype != "MODIFIED" or old is None or old.get("spec") != new.get("spec") \
                or old["metadata"].get("labels") != new["metadata"].get("labels"):
            self.shape_versions[plural] += 1
        for w in list(self._watchers):
            if w.plural == plural:
                w.offer(etype, old, new)
        if plural == "pods" and self._node_watchers:
            nodes = {((obj or {}).get("spec") or {}).get("nodeName") or "" for obj in (old, new) if obj is not None}
            for node in nodes:
                for w in list(self._node_watchers.get(node, ())):
                    w.offer(etype, old, new)
        self._derive(plural, etype, old, new, client, cause)

    # ---- derived events (what the invariant checker reads) --------------------------------------
    def owner_of(self, pod):
        """'Deployment/ns/name', 'DaemonSet/ns/name', 'ReplicaSet/ns/name' or None for a pod."""
        return owner_of(pod, lambda ns, name: self._objs["replicasets"].get((ns, name)))

    def _derive(self, plural, etype, old, new, client, cause):
        if plural == "nodes":
            self._derive_node(etype, old, new, client)
        elif plural == "pods":
            self._derive_pod(etype, old, new, client, cause)
        elif plural == "poddisruptionbudgets" and etype != "DELETED":
            st_old, st_new = (old or {}).get("status") or {}, new.get("status") or {}
            keys = ("currentHealthy", "desiredHealthy", "disruptionsAllowed", "expectedPods")
            if any(st_old.get(k) != st_new.get(k) for k in keys):
                self.events.emit("pdb.status", pdb="%s/%s" % (new["metadata"]["namespace"], new["metadata"]["name"]),
                                 **{k: st_new.get(k) for k in keys})

    def _derive_node(self, etype, old, new, client):
        name = new["metadata"]["name"]
        labels = new["metadata"].get("labels") or {}
        base = {"node": name, "group": labels.get("eks.amazonaws.com/nodegroup"), "client": client}
        if etype == "ADDED":
            self.events.emit("node.added", zone=labels.get("topology.kubernetes.io/zone"),
                             provider_id=new.get("spec", {}).get("providerID"), **base)
        if etype == "DELETED":
            self.events.emit("node.deleted", **base)
            return
        was_ready, now_ready = bool(old) and is_ready(old), is_ready(new)
        if now_ready != was_ready:
            self.events.emit("node.ready" if now_ready else "node.notready", **base)
        was_cordon = bool((old or {}).get("spec", {}).get("unschedulable"))
        now_cordon = bool(new.get("spec", {}).get("unschedulable"))
        if was_cordon != now_cordon:
            self.events.emit("node.cordoned" if now_cordon else "node.uncordoned", **base)
        t_old = (old or {}).get("spec", {}).get("taints") or []
        t_new = new.get("spec", {}).get("taints") or []
        if t_old != t_new:
            self.events.emit("node.taints", taints=["%s=%s:%s" % (t.get("key"), t.get("value", ""), t.get("effect"))
                                                    for t in t_new], **base)

    def _derive_pod(self, etype, old, new, client, cause):
        meta = new["metadata"]
        base = {"pod": pod_key(new), "uid": meta["uid"], "node": new.get("spec", {}).get("nodeName"),
                "owner": self.owner_of(new)}
        if etype == "ADDED":
            self.events.emit("pod.created", client=client, **base)
        if old and not old.get("spec", {}).get("nodeName") and base["node"]:
            self.events.emit("pod.scheduled", **base)
        if etype != "DELETED" and unschedulable_now(old, new):
            self.events.emit("pod.unschedulable", **base)
        was_ready, now_ready = bool(old) and is_ready(old), is_ready(new) and etype != "DELETED"
        starting_end = etype != "DELETED" and "deletionTimestamp" in meta and not (old and "deletionTimestamp" in old["metadata"])
        if starting_end or (etype == "DELETED" and meta["uid"] not in self._causes):
            info = dict(cause or {"how": "deleted", "client": client})
            info.setdefault("client", client)
            self._causes[meta["uid"]] = info
            src = old or new
            # the grace period the pod got: what its deletion set, 0 when it was removed at once
            grace = meta.get("deletionGracePeriodSeconds", 0) if etype == "DELETED" else meta.get("deletionGracePeriodSeconds")
            self.events.emit("pod.terminating", was_ready=is_ready(src),
                             phase=(src.get("status") or {}).get("phase"), grace_seconds=grace,
                             pdbs=disruption.pdb_snapshot(self, src), **dict(base, **info))
        if was_ready and not now_ready and etype != "DELETED":
            self.events.emit("pod.unready", **base)
        elif now_ready and not was_ready:
            self.events.emit("pod.ready", **base)
        if etype == "DELETED":
            info = self._causes.pop(meta["uid"], {})
            if cause and cause.get("how") != info.get("how"):  # a graceful end cut short
                info = dict(info, ended_by=dict(cause, client=cause.get("client", client)))
            self.events.emit("pod.deleted", was_ready=bool(old) and is_ready(old), **dict(base, **info))
