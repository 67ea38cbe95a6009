"""The StatefulSet controller: ``spec.replicas`` pods named ``<name>-<ordinal>``, each recreated under its own name.

As pkg/controller/statefulset does: ordinals 0..replicas-1 are wanted, others condemned. With the default
``podManagementPolicy: OrderedReady`` the controller is monotonic: it creates ordinal i only once every lower
ordinal is Running and Ready (and available for ``minReadySeconds``), waits while any of them terminates, and
removes condemned pods one at a time from the highest ordinal down, once every other pod is healthy.
``Parallel`` creates and deletes all at once. A pod that is gone (evicted, deleted) comes back with the same
name once the old one has left the store; a Failed or Succeeded pod is deleted so it can be recreated.

Pods carry the labels the real controller adds (``statefulset.kubernetes.io/pod-name``,
``apps.kubernetes.io/pod-index``, ``controller-revision-hash``), ``spec.hostname`` and ``spec.subdomain``
(``serviceName``). A changed template makes a new revision (``<name>-<template hash>``; no ControllerRevision
objects are served): with ``updateStrategy: RollingUpdate`` pods at or above ``partition`` are replaced from the
highest ordinal down, one at a time while all are healthy; ``OnDelete`` waits for them to be deleted.
Status: replicas (pods created), readyReplicas, availableReplicas, currentReplicas, updatedReplicas,
currentRevision, updateRevision, collisionCount, observedGeneration.

Not modelled: volumeClaimTemplates (refused at validation), adoption of orphans, ``ordinals.start``,
``maxUnavailable`` of RollingUpdate (alpha).
"""

from ..errors import ApiError
from ..store import controller_ref, is_ready
from .objects import deleting, delete_pod, int_or, key_of, owner_reference, pod_from_template, shallow, template_hash, update
from .runtime import Controller

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
CLIENT = "sandbox-statefulset-controller"
SCALE_DOWN = {"how": "deleted", "reason": "scale-down", "client": CLIENT}
FAILED = {"how": "deleted", "reason": "statefulset-failed-pod", "client": CLIENT}
ROLLING = {"how": "deleted", "reason": "statefulset-update", "client": CLIENT}


def ordinal_of(set_name, pod_name):
    """The ordinal in ``<set_name>-<ordinal>``, or None for a name of another shape."""
    prefix = set_name + "-"
    if not pod_name.startswith(prefix):
        return None
    tail = pod_name[len(prefix):]
    if not tail.isdigit() or (len(tail) > 1 and tail[0] == "0"):
        return None
    return int(tail)


def revision_of(sts):
    return "%s-%s" % (sts["metadata"]["name"], template_hash((sts.get("spec") or {}).get("template") or {}))


def _finished(pod):
    return (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")


def _running_ready(pod):
    return (pod.get("status") or {}).get("phase") == "Running" and is_ready(pod)


class StatefulSetController(Controller):
    watches = ("statefulsets", "pods")
    client = CLIENT

    def __init__(self, ctl):
        super().__init__(ctl)
        self.dirty = set()    # statefulset keys
        self.rechecks = set()  # (statefulset key, simulated time) already asked for: one timer each

    def on_event(self, plural, etype, obj):
        if plural == "statefulsets":
            if etype != "DELETED":
                self.dirty.add(key_of(obj))
            return
        ref = controller_ref(obj)
        if ref and ref.get("kind") == "StatefulSet":
            self.dirty.add((obj["metadata"].get("namespace"), ref.get("name")))

    def resync(self):
        for sts in self.store.list("statefulsets")[0]:
            self.dirty.add(key_of(sts))

    def sync(self):
        return self.sync_dirty()

    def idle(self):
        return not self.dirty

    def _recheck(self, key, at):
        self.rechecks.discard((key, at))
        self.dirty.add(key)
        self.ctl.poke()

    # ---- one StatefulSet ------------------------------------------------------------------------------
    def _available(self, key, pod, min_ready):
        if not _running_ready(pod):
            return False
        if min_ready <= 0:
            return True
        since = self.ctl.index.ready_since_of(pod)
        if self.clock.now() - since >= min_ready:
            return True
        if (key, since + min_ready) not in self.rechecks:
            self.rechecks.add((key, since + min_ready))
            self.ctl.call_at(since + min_ready, self._recheck, key, since + min_ready)
        return False

    def _sync_one(self, key):
        sts = self.store.try_get("statefulsets", key[0], key[1])
        if sts is None:
            return
        spec = sts.get("spec") or {}
        name = sts["metadata"]["name"]
        uid = sts["metadata"]["uid"]
        replicas = int_or(spec.get("replicas"), 1)
        min_ready = int_or(spec.get("minReadySeconds"), 0)
        monotonic = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        update_revision = revision_of(sts)
        status = sts.get("status") or {}
        current_revision = status.get("currentRevision") or update_revision

        wanted, condemned = {}, []
        for pod in self.ctl.index.owned_objects(self.store, "pods", uid):
            ordinal = ordinal_of(name, pod["metadata"]["name"])
            if ordinal is not None and ordinal < replicas:
                wanted[ordinal] = pod
            else:
                condemned.append((-1 if ordinal is None else ordinal, pod))
        condemned.sort(key=lambda item: item[0], reverse=True)

        if not deleting(sts):
            self._reconcile(sts, key, replicas, wanted, condemned, monotonic, min_ready, current_revision, update_revision)
        pods = list(wanted.values()) + [pod for _ordinal, pod in condemned]
        self._update_status(sts, key, pods, replicas, min_ready, current_revision, update_revision)

    def _reconcile(self, sts, key, replicas, wanted, condemned, monotonic, min_ready, current_revision, update_revision):
        spec = sts.get("spec") or {}
        # as the real controller: every wanted ordinal first, then the condemned, then the rolling update
        for ordinal in range(replicas):
            pod = wanted.get(ordinal)
            if pod is not None and _finished(pod) and not deleting(pod):
                delete_pod(self.ctl, pod, self.client, dict(FAILED))
                if monotonic:
                    return
                continue
            if pod is None:
                created = self._create(sts, ordinal, update_revision)
                if created is None or monotonic:
                    return
                wanted[ordinal] = created
                continue
            if monotonic and (deleting(pod) or not self._available(key, pod, min_ready)):
                return
        for _ordinal, pod in condemned:
            if deleting(pod):
                if monotonic:
                    return
                continue
            if monotonic and any(deleting(p) or not self._available(key, p, min_ready) for p in wanted.values()):
                return
            delete_pod(self.ctl, pod, self.client, dict(SCALE_DOWN))
            if monotonic:
                return
        if condemned:
            return
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        if any(deleting(p) or not self._available(key, p, min_ready) for p in wanted.values()):
            return
        partition = self._partition(spec)
        for ordinal in range(replicas - 1, partition - 1, -1):
            pod = wanted.get(ordinal)
            if pod is not None and (pod["metadata"].get("labels") or {}).get(REVISION_LABEL) != update_revision:
                delete_pod(self.ctl, pod, self.client, dict(ROLLING))
                return

    @staticmethod
    def _partition(spec):
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return 0
        return int_or((strategy.get("rollingUpdate") or {}).get("partition"), 0)

    def _create(self, sts, ordinal, revision):
        spec = sts.get("spec") or {}
        ns, name = key_of(sts)
        pod_name = "%s-%d" % (name, ordinal)
        template = spec.get("template") or {}   # the current one: older templates are not kept (no ControllerRevisions)
        pod = pod_from_template(template, pod_name, ns, owner_reference(sts, "apps/v1", "StatefulSet"),
                                extra_labels={POD_NAME_LABEL: pod_name, POD_INDEX_LABEL: str(ordinal), REVISION_LABEL: revision})
        pod["spec"]["hostname"] = pod_name
        if spec.get("serviceName"):
            pod["spec"]["subdomain"] = spec["serviceName"]
        try:
            created = self.store.create("pods", pod, client=self.client)
        except ApiError as exc:
            if exc.code != 409:   # 409: a pod of that name is still there (not ours, or not yet seen gone)
                self.ctl.error("StatefulSetController create %s/%s" % (ns, pod_name), exc)
            return None
        self.ctl.index.add("pods", created)
        self.ctl.index.created_at.setdefault(created["metadata"]["uid"], self.clock.now())
        return created

    def _update_status(self, sts, key, pods, replicas, min_ready, current_revision, update_revision):
        counts = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "currentReplicas": 0, "updatedReplicas": 0}
        for pod in pods:
            counts["replicas"] += 1
            if _running_ready(pod):
                counts["readyReplicas"] += 1
                if self._available(key, pod, min_ready):
                    counts["availableReplicas"] += 1
            if not deleting(pod):
                revision = (pod["metadata"].get("labels") or {}).get(REVISION_LABEL)
                counts["currentReplicas"] += revision == current_revision
                counts["updatedReplicas"] += revision == update_revision
        if counts["updatedReplicas"] == replicas and counts["readyReplicas"] >= replicas and len(pods) == replicas:
            current_revision = update_revision
            counts["currentReplicas"] = counts["updatedReplicas"]
        status = {k: v for k, v in counts.items() if v or k in ("replicas", "availableReplicas")}
        status.update({"observedGeneration": sts["metadata"].get("generation", 1), "currentRevision": current_revision,
                       "updateRevision": update_revision, "collisionCount": 0})
        old = sts.get("status") or {}
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        if status == old:
            return
        uid = sts["metadata"]["uid"]

        def write(current):
            if current["metadata"]["uid"] != uid or current.get("status") == status:
                return None
            return shallow(current, status=status)
        update(self.store, "statefulsets", key[0], key[1], write, self.client)
