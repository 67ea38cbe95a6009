"""The ReplicaSet controller: ``spec.replicas`` active pods from the template, and the status.

Active pods are the ones neither terminating nor finished. Missing pods are created (at most 500 per
pass, as burstReplicas), surplus ones deleted gracefully, choosing first the unscheduled, then pending,
then not Ready, then Ready for the shortest time, then the newest (controller.ActivePods ordering).
Status follows the API's JSON (zero counts other than ``replicas`` are omitted): replicas,
fullyLabeledReplicas, readyReplicas, availableReplicas (Ready for minReadySeconds), observedGeneration.

Pods are claimed as the real controller does: a pod whose labels stop matching the selector is released
(its owner reference removed, so a replacement is made) and an orphan that matches is adopted.

Counts are kept per ReplicaSet from each pod's last seen state (and from the controller's own writes at
once), so a sync costs O(1) unless pods must be chosen for deletion.
"""

from ..errors import ApiError
from ..selectors import LabelSelector
from ..store import controller_ref, is_ready
from .objects import deleting, int_or, key_of, owner_reference, pod_from_template, random_suffix, shallow, update, delete_pod
from .runtime import Controller

BURST = 500
SCALE_DOWN = {"how": "deleted", "reason": "scale-down", "client": "sandbox-replicaset-controller"}
ACTIVE, READY, AVAILABLE, LABELLED = range(4)


def active(pod):
    return not deleting(pod) and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def omit_zero(status, keep=()):
    return {k: v for k, v in status.items() if v or k in keep}


def _labels_match(template_labels, labels):
    labels = labels or {}
    return all(labels.get(k) == v for k, v in template_labels.items())


class ReplicaSetController(Controller):
    watches = ("replicasets", "pods")
    client = "sandbox-replicaset-controller"

    def __init__(self, ctl):
        super().__init__(ctl)
        self.dirty = set()
        self.pods = {}     # pod key -> (rs uid, rs key, (active, ready, available, labelled))
        self.counts = {}   # rs uid -> [active, ready, available, labelled]
        self.templates = {}  # rs uid -> (template labels, minReadySeconds)
        self.selectors = {}  # namespace -> {rs uid: (rs key, selector)}
        self.claims = {}     # pod key -> rs uid to adopt it, or None to release it
        self.orphans = {}    # namespace -> {pod keys} of active pods without a controller

    # ---- per-pod state -----------------------------------------------------------------------------
    def on_event(self, plural, etype, obj):
        if plural == "replicasets":
            uid = obj["metadata"]["uid"]
            ns = obj["metadata"].get("namespace")
            if etype == "DELETED" or deleting(obj):
                self.selectors.get(ns, {}).pop(uid, None)
            if etype == "DELETED":
                self.templates.pop(uid, None)
                return
            spec = obj.get("spec") or {}
            if spec.get("selector") and not deleting(obj):
                selector = LabelSelector.from_object(spec["selector"])
                known = self.selectors.setdefault(ns, {}).get(uid)
                self.selectors[ns][uid] = (key_of(obj), selector)
                if known is None or known[1].requirements != selector.requirements:
                    for pkey in list(self.orphans.get(ns, ())):
                        self.observe(pkey, self.store.try_get("pods", pkey[0], pkey[1]))
            shape = ((((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}),
                     int_or(spec.get("minReadySeconds"), 0))
            if self.templates.get(uid) != shape:
                self.templates[uid] = shape
                for pkey in list(self.ctl.index.owned["pods"].get(uid, ())):
                    self.observe(pkey, self.store.try_get("pods", pkey[0], pkey[1]))
            self.dirty.add(key_of(obj))
            return
        self.observe(key_of(obj), None if etype == "DELETED" else obj)

    def observe(self, key, pod):
        """Account ``pod`` (its latest version, or None when gone) in its ReplicaSet's counts."""
        old = self.pods.get(key)
        new = None
        self.claims.pop(key, None)
        orphans = self.orphans.get(key[0])
        if orphans is not None:
            orphans.discard(key)
        if pod is not None:
            ref = controller_ref(pod)
            if ref is None and active(pod):
                self.orphans.setdefault(key[0], set()).add(key)
                self._maybe_adopt(key, pod)
            elif ref and ref.get("kind") == "ReplicaSet" and not self._selected(ref.get("uid"), pod):
                self.claims[key] = None
            elif ref and ref.get("kind") == "ReplicaSet":
                rs_uid = ref.get("uid")
                labels, min_ready = self.templates.get(rs_uid, ({}, 0))
                is_active = active(pod)
                ready = is_active and is_ready(pod)
                available = False
                if ready:
                    since = self.ctl.index.ready_since_of(pod)
                    available = self.clock.now() - since >= min_ready
                    if not available:
                        self.ctl.call_at(since + min_ready, self._recheck, key)
                state = (is_active, ready, available, is_active and _labels_match(labels, pod["metadata"].get("labels")))
                new = (rs_uid, (pod["metadata"].get("namespace"), ref.get("name")), state)
        if old == new:
            return
        if old is not None:
            counts = self.counts.get(old[0])
            if counts is not None:
                for i, flag in enumerate(old[2]):
                    counts[i] -= flag
                if not any(counts) and old[0] not in self.templates:
                    del self.counts[old[0]]
            self.dirty.add(old[1])
        if new is None:
            self.pods.pop(key, None)
            return
        self.pods[key] = new
        counts = self.counts.setdefault(new[0], [0, 0, 0, 0])
        for i, flag in enumerate(new[2]):
            counts[i] += flag
        self.dirty.add(new[1])

    def _selected(self, rs_uid, pod):
        ns = pod["metadata"].get("namespace")
        entry = self.selectors.get(ns, {}).get(rs_uid)
        return entry is None or entry[1].matches(pod["metadata"].get("labels"))

    def _maybe_adopt(self, key, pod):
        labels = pod["metadata"].get("labels")
        for uid, (rs_key, selector) in sorted(self.selectors.get(pod["metadata"].get("namespace"), {}).items(),
                                              key=lambda item: item[1][0]):
            if selector.matches(labels):
                self.claims[key] = uid
                self.dirty.add(rs_key)
                return

    def _claim(self, key, rs_uid):
        """Adopt the pod into ReplicaSet ``rs_uid``, or release it from its ReplicaSet (rs_uid None)."""
        pod = self.store.try_get("pods", key[0], key[1])
        if pod is None:
            return
        owner = None
        if rs_uid is not None:
            entry = self.selectors.get(key[0], {}).get(rs_uid)
            owner = self.store.try_get("replicasets", *entry[0]) if entry else None
            if owner is None or owner["metadata"]["uid"] != rs_uid:
                return
        uid = pod["metadata"]["uid"]

        def claim(current):
            if current["metadata"]["uid"] != uid or deleting(current):
                return None
            refs = list(current["metadata"].get("ownerReferences") or [])
            ref = controller_ref(current)
            if owner is None:
                if ref is None or self._selected(ref.get("uid"), current):
                    return None
                refs = [r for r in refs if r is not ref]
            else:
                if ref is not None:
                    return None
                refs.append(owner_reference(owner, "apps/v1", "ReplicaSet"))
            new = shallow(current)
            if refs:
                new["metadata"]["ownerReferences"] = refs
            else:
                new["metadata"].pop("ownerReferences", None)
            return new
        written = update(self.store, "pods", key[0], key[1], claim, self.client)
        if written is not None:
            self.ctl.index.add("pods", written)
            self.observe(key, written)

    def _recheck(self, key):
        self.observe(key, self.store.try_get("pods", key[0], key[1]))

    def resync(self):
        for rs in self.store.list("replicasets")[0]:
            self.dirty.add(key_of(rs))

    # ---- sync ---------------------------------------------------------------------------------------
    def sync(self):
        if self.claims:
            claims, self.claims = self.claims, {}
            for key, rs_uid in claims.items():
                self._claim(key, rs_uid)
        return self.sync_dirty()

    def _sync_one(self, key):
        rs = self.store.try_get("replicasets", key[0], key[1])
        if rs is None:
            return
        uid = rs["metadata"]["uid"]
        counts = self.counts.setdefault(uid, [0, 0, 0, 0])
        want = int_or((rs.get("spec") or {}).get("replicas"), 1)
        if not deleting(rs):
            diff = counts[ACTIVE] - want
            if diff < 0:
                self._create(rs, min(-diff, BURST))
                if -diff > BURST:
                    self.dirty.add(key)
                    self.ctl.poke()
            elif diff > 0:
                alive = [p for p in self.ctl.index.owned_objects(self.store, "pods", uid) if active(p)]
                for pod in self._victims(alive, diff):
                    delete_pod(self.ctl, pod, self.client, dict(SCALE_DOWN))
                    pkey = key_of(pod)
                    self.observe(pkey, self.store.try_get("pods", pkey[0], pkey[1]))
        self._update_status(rs, counts)

    def _create(self, rs, count):
        template = (rs.get("spec") or {}).get("template")
        if not template:
            return
        ns, name = key_of(rs)
        ref = owner_reference(rs, "apps/v1", "ReplicaSet")
        for _pod in range(count):
            for _attempt in range(5):
                pod = pod_from_template(template, "%s-%s" % (name, random_suffix()), ns, ref)
                try:
                    created = self.store.create("pods", pod, client=self.client)
                except ApiError as exc:
                    if exc.code == 409:
                        continue
                    self.ctl.error("ReplicaSetController create %s/%s" % (ns, name), exc)
                    return
                self.ctl.index.add("pods", created)
                self.ctl.index.created_at.setdefault(created["metadata"]["uid"], self.clock.now())
                self.observe(key_of(created), created)
                break

    def _victims(self, pods, count):
        index = self.ctl.index

        def rank(pod):
            status = pod.get("status") or {}
            phase = status.get("phase")
            uid = pod["metadata"]["uid"]
            return (1 if (pod.get("spec") or {}).get("nodeName") else 0,
                    {"Pending": 0, "Unknown": 1, "Running": 2}.get(phase, 0),
                    1 if is_ready(pod) else 0,
                    -index.ready_since.get(uid, float("inf")) if is_ready(pod) else 0,
                    -index.created_at.get(uid, 0.0))
        return sorted(pods, key=rank)[:count]

    def _update_status(self, rs, counts):
        status = omit_zero({"replicas": counts[ACTIVE], "fullyLabeledReplicas": counts[LABELLED],
                            "readyReplicas": counts[READY], "availableReplicas": counts[AVAILABLE],
                            "observedGeneration": rs["metadata"].get("generation", 1)}, keep=("replicas",))
        old = rs.get("status") or {}
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        if status == old:
            return
        uid = rs["metadata"]["uid"]

        def write(current):
            if current["metadata"]["uid"] != uid or current.get("status") == status:
                return None
            return shallow(current, status=status)
        update(self.store, "replicasets", rs["metadata"]["namespace"], rs["metadata"]["name"], write, self.client)

    def idle(self):
        return not self.dirty and not self.claims
