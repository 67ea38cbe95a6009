"""The garbage collector: dependents whose owners are all gone are deleted (background propagation).

Owners are found through ``metadata.ownerReferences`` (uid must match: a new object with the old name is
not the owner). A ReplicaSet goes at once (its pods follow when its deletion is seen); pods are deleted
gracefully and logged as deleted/garbage-collected. Owners being deleted with the ``foregroundDeletion``
finalizer lose their dependents first and are then removed; with the ``orphan`` finalizer their dependents
lose the owner reference and are kept.
"""

from ..errors import ApiError
from .objects import deleting, delete_pod, shallow, update
from .runtime import Controller

KIND_PLURAL = {"Deployment": "deployments", "ReplicaSet": "replicasets", "DaemonSet": "daemonsets", "StatefulSet": "statefulsets",
               "Pod": "pods",
               "Node": "nodes", "Namespace": "namespaces", "PodDisruptionBudget": "poddisruptionbudgets"}
COLLECTED = {"how": "deleted", "reason": "garbage-collected", "client": "sandbox-garbage-collector"}
ABSENT_OWNER_DELAY = 2.0
FOREGROUND, ORPHAN = "foregroundDeletion", "orphan"


class GarbageCollector(Controller):
    watches = ("deployments", "replicasets", "daemonsets", "statefulsets", "pods")
    client = "sandbox-garbage-collector"

    def __init__(self, ctl):
        super().__init__(ctl)
        self.gone = set()        # owner uids whose dependents must be looked at
        self.check = set()       # (plural, key) dependents to verify
        self.finalizing = {}     # owner uid -> (plural, key) owners being deleted with a finalizer

    def on_event(self, plural, etype, obj):
        meta = obj["metadata"]
        uid = meta["uid"]
        if etype == "DELETED":
            self.finalizing.pop(uid, None)
            if uid in self.ctl.index.dependents:
                self.gone.add(uid)
            return
        if deleting(obj) and (FOREGROUND in (meta.get("finalizers") or []) or ORPHAN in (meta.get("finalizers") or [])):
            self.finalizing[uid] = (plural, (meta.get("namespace"), meta["name"]))
        refs = meta.get("ownerReferences")
        if etype == "ADDED" and refs and not any(self._owner_alive(meta.get("namespace"), ref) for ref in refs):
            self.ctl.call_after(ABSENT_OWNER_DELAY, self.check.add, (plural, (meta.get("namespace"), meta["name"])))

    def sync(self):
        if not (self.gone or self.check or self.finalizing):
            return False
        work = False
        gone, self.gone = self.gone, set()
        for uid in gone:
            for dep in list(self.ctl.index.dependents.get(uid, ())):
                self.check.add(dep)
        check, self.check = self.check, set()
        for plural, key in check:
            work |= self._collect(plural, key)
        for uid, (plural, key) in list(self.finalizing.items()):
            work |= self._finalize(uid, plural, key)
        return work

    def _owner_alive(self, namespace, ref):
        plural = KIND_PLURAL.get(ref.get("kind"))
        if plural is None:
            return True     # a kind the sandbox does not serve: leave its dependents alone
        name = ref.get("name")
        owner = self.store.try_get(plural, None if plural in ("nodes", "namespaces") else namespace, name)
        return owner is not None and (not ref.get("uid") or owner["metadata"]["uid"] == ref.get("uid"))

    def _collect(self, plural, key):
        obj = self.store.try_get(plural, key[0], key[1])
        if obj is None or deleting(obj):
            return False
        refs = obj["metadata"].get("ownerReferences") or []
        if not refs or any(self._owner_alive(key[0], ref) for ref in refs):
            return False
        if plural == "pods":
            return delete_pod(self.ctl, obj, self.client, dict(COLLECTED))
        try:
            self.store.remove(plural, key[0], key[1], client=self.client)
        except ApiError:
            return False
        return True

    def _finalize(self, uid, plural, key):
        owner = self.store.try_get(plural, key[0], key[1])
        if owner is None or owner["metadata"]["uid"] != uid:
            self.finalizing.pop(uid, None)
            return False
        finalizers = owner["metadata"].get("finalizers") or []
        deps = list(self.ctl.index.dependents.get(uid, ()))
        if ORPHAN in finalizers:
            for dep_plural, dep_key in deps:
                self._drop_reference(dep_plural, dep_key, uid)
            return self._remove_finalizer(owner, ORPHAN)
        if FOREGROUND in finalizers:
            remaining = False
            for dep_plural, dep_key in deps:
                dep = self.store.try_get(dep_plural, dep_key[0], dep_key[1])
                if dep is None:
                    continue
                remaining = True
                if not deleting(dep):
                    if dep_plural == "pods":
                        delete_pod(self.ctl, dep, self.client, dict(COLLECTED))
                    else:
                        try:
                            self.store.remove(dep_plural, dep_key[0], dep_key[1], client=self.client)
                        except ApiError:
                            pass
            if not remaining:
                return self._remove_finalizer(owner, FOREGROUND)
            return False
        self.finalizing.pop(uid, None)
        return False

    def _drop_reference(self, plural, key, uid):
        def drop(current):
            refs = current["metadata"].get("ownerReferences") or []
            kept = [r for r in refs if r.get("uid") != uid]
            if kept == refs:
                return None
            new = shallow(current)
            if kept:
                new["metadata"]["ownerReferences"] = kept
            else:
                new["metadata"].pop("ownerReferences", None)
            return new
        update(self.store, plural, key[0], key[1], drop, self.client)

    def _remove_finalizer(self, owner, finalizer):
        meta = owner["metadata"]
        kept = [f for f in meta.get("finalizers") or [] if f != finalizer]
        self.finalizing.pop(meta["uid"], None)
        plural = KIND_PLURAL.get(owner.get("kind"))
        namespace = meta.get("namespace")
        with self.store.lock:
            current = self.store.try_get(plural, namespace, meta["name"])
            if current is None or current["metadata"]["uid"] != meta["uid"]:
                return False
            if kept:
                new = shallow(current)
                new["metadata"]["finalizers"] = kept
                self.store.replace(plural, new, client=self.client, check_rv=False)
            else:
                self.store.remove(plural, namespace, meta["name"], client=self.client)
        return True

    def idle(self):
        return not (self.gone or self.check or self.finalizing)
