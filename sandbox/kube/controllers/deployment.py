"""The Deployment controller: one ReplicaSet per pod template, the RollingUpdate and Recreate strategies.

Follows pkg/controller/deployment: the new ReplicaSet is ``<deployment>-<pod-template-hash>`` (label and
selector carry the hash); RollingUpdate scales it up within maxSurge (rounded up) and old ones down within
maxUnavailable (rounded down, 1 when both are 0), counting only available pods (Ready for
minReadySeconds), unhealthy old replicas first; Recreate scales old ones to zero and waits until their
pods are gone. Status (zero counts omitted as the API does) and the Available/Progressing conditions are
kept, progressDeadlineSeconds included; old ReplicaSets beyond revisionHistoryLimit are deleted once the
rollout is complete. ``spec.paused`` stops rollouts but not scaling.
"""

from ..errors import ApiError
from ..store import controller_ref
from .objects import (deleting, int_or, key_of, owner_reference, same_conditions, scaled_value, set_condition, shallow,
                      template_hash, update)
from .replicaset import omit_zero
from .runtime import Controller

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"


def strategy_numbers(deployment):
    """(max surge, max unavailable) resolved against spec.replicas, as ResolveFenceposts does.

    Raises ValueError naming the field when a value is neither an integer nor a percentage."""
    spec = deployment.get("spec") or {}
    replicas = int_or(spec.get("replicas"), 1)
    strategy = spec.get("strategy") or {}
    if (strategy.get("type") or "RollingUpdate") == "Recreate":
        return 0, replicas
    rolling = strategy.get("rollingUpdate") or {}
    surge = scaled_value(rolling.get("maxSurge", "25%"), replicas, True, "spec.strategy.rollingUpdate.maxSurge")
    unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), replicas, False,
                               "spec.strategy.rollingUpdate.maxUnavailable")
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, min(unavailable, replicas)


def template_without_hash(template):
    template = dict(template or {})
    meta = dict(template.get("metadata") or {})
    labels = dict(meta.get("labels") or {})
    labels.pop(HASH_LABEL, None)
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    template["metadata"] = meta
    return template


def _replicas(rs):
    return int_or((rs.get("spec") or {}).get("replicas"), 1)


def _status(rs, field):
    return int_or((rs.get("status") or {}).get(field), 0)


def _revision(rs):
    return int_or((rs["metadata"].get("annotations") or {}).get(REVISION), 0)


class DeploymentController(Controller):
    watches = ("deployments", "replicasets", "pods")
    client = "sandbox-deployment-controller"

    def __init__(self, ctl):
        super().__init__(ctl)
        self.dirty = set()
        self.progress = {}     # deployment uid -> simulated time of the last progress
        self.bad_spec = {}     # deployment uid -> message logged once
        self.deadline_due = {}  # deployment uid -> simulated time its progress deadline is checked

    def on_event(self, plural, etype, obj):
        if plural == "deployments":
            if etype == "DELETED":
                uid = obj["metadata"]["uid"]
                self.progress.pop(uid, None)
                self.bad_spec.pop(uid, None)
                self.deadline_due.pop(uid, None)
            else:
                self.dirty.add(key_of(obj))
            return
        ref = controller_ref(obj)
        if plural == "replicasets":
            if ref and ref.get("kind") == "Deployment":
                self.dirty.add((obj["metadata"].get("namespace"), ref.get("name")))
            return
        # a pod gone lets a Recreate rollout go on
        if etype == "DELETED" and ref and ref.get("kind") == "ReplicaSet":
            rs = self.store.try_get("replicasets", obj["metadata"].get("namespace"), ref.get("name"))
            up = controller_ref(rs) if rs else None
            if up and up.get("kind") == "Deployment":
                self.dirty.add((obj["metadata"].get("namespace"), up.get("name")))

    def resync(self):
        for d in self.store.list("deployments")[0]:
            self.dirty.add(key_of(d))

    def sync(self):
        return self.sync_dirty()

    # ---- one deployment ---------------------------------------------------------------------------------
    def _sync_one(self, key):
        d = self.store.try_get("deployments", key[0], key[1])
        if d is None:
            return
        uid = d["metadata"]["uid"]
        # oldest first; the revision orders them where one-second creation timestamps cannot
        rss = sorted(self.ctl.index.owned_objects(self.store, "replicasets", uid),
                     key=lambda r: (_revision(r), r["metadata"].get("creationTimestamp") or "", r["metadata"]["name"]))
        spec = d.get("spec") or {}
        if not spec.get("selector") or not spec.get("template"):
            self._bad(d, "spec.selector and spec.template are required")
            return
        try:
            surge, unavailable = strategy_numbers(d)
        except ValueError as exc:
            self._bad(d, str(exc))
            return
        self.bad_spec.pop(uid, None)
        new_rs = self._find_new(d, rss)
        old_rss = [r for r in rss if new_rs is None or r["metadata"]["uid"] != new_rs["metadata"]["uid"]]
        if new_rs is not None and old_rss and _revision(new_rs) <= max(_revision(r) for r in old_rss):
            new_rs = self._bump_revision(d, new_rs, max(_revision(r) for r in old_rss) + 1) or new_rs
        if deleting(d):
            self._write_status(d, new_rs, rss, unavailable)
            return
        if spec.get("paused"):
            if new_rs is not None and not old_rss and _replicas(new_rs) != int_or(spec.get("replicas"), 1):
                self._scale(new_rs, int_or(spec.get("replicas"), 1), d, surge)
            self._write_status(d, new_rs, rss, unavailable, paused=True)
            return
        if ((spec.get("strategy") or {}).get("type") or "RollingUpdate") == "Recreate":
            self._recreate(d, new_rs, old_rss, rss, unavailable)
            return
        self._rolling(d, new_rs, old_rss, rss, surge, unavailable)

    def _bad(self, d, message):
        uid = d["metadata"]["uid"]
        if self.bad_spec.get(uid) != message:
            self.bad_spec[uid] = message
            self.ctl.events.emit("controller.error", where="DeploymentController",
                                 error="%s/%s: %s" % (d["metadata"]["namespace"], d["metadata"]["name"], message))

    def _find_new(self, d, rss):
        wanted = template_without_hash((d.get("spec") or {}).get("template"))
        for rs in rss:
            if template_without_hash((rs.get("spec") or {}).get("template")) == wanted:
                return rs
        return None

    def _rolling(self, d, new_rs, old_rss, rss, surge, unavailable):
        replicas = int_or(d["spec"].get("replicas"), 1)
        if new_rs is None:
            total = sum(_replicas(r) for r in rss)
            start = max(0, min(replicas + surge - total, replicas)) if old_rss else replicas
            new_rs = self._create_rs(d, rss, start)
            if new_rs is None:
                return
            rss = rss + [new_rs]
            self._write_status(d, new_rs, rss, unavailable, progressed=True,
                               reason=("NewReplicaSetCreated", 'Created new replica set "%s"' % new_rs["metadata"]["name"]))
            return
        # scale up the new ReplicaSet within maxSurge
        current = _replicas(new_rs)
        if current > replicas:
            target = replicas
        elif current < replicas:
            total = sum(_replicas(r) for r in rss)
            room = replicas + surge - total
            target = current + max(0, min(room, replicas - current))
        else:
            target = current
        if target != current:
            self._scale(new_rs, target, d, surge)
            self._write_status(d, new_rs, rss, unavailable, progressed=True)
            return
        if self._scale_down_old(d, new_rs, old_rss, rss, unavailable):
            self._write_status(d, new_rs, rss, unavailable, progressed=True)
            return
        complete = self._write_status(d, new_rs, rss, unavailable)
        if complete:
            self._cleanup(d, old_rss)

    def _scale_down_old(self, d, new_rs, old_rss, rss, unavailable):
        replicas = int_or(d["spec"].get("replicas"), 1)
        old_count = sum(_replicas(r) for r in old_rss)
        if old_count == 0:
            return False
        all_count = sum(_replicas(r) for r in rss)
        min_available = replicas - unavailable
        new_unavailable = _replicas(new_rs) - _status(new_rs, "availableReplicas")
        budget = all_count - min_available - new_unavailable
        if budget <= 0:
            return False
        scaled = False
        # old replicas that are not available go first: removing them costs no availability
        for rs in old_rss:
            if budget <= 0:
                break
            have, avail = _replicas(rs), _status(rs, "availableReplicas")
            if have == 0 or avail >= have:
                continue
            cut = min(budget, have - avail)
            self._scale(rs, have - cut, d, 0)
            budget -= cut
            scaled = True
            rs_now = self.store.try_get("replicasets", rs["metadata"]["namespace"], rs["metadata"]["name"])
            if rs_now is not None:
                old_rss = [rs_now if r["metadata"]["uid"] == rs_now["metadata"]["uid"] else r for r in old_rss]
        available = _status(new_rs, "availableReplicas") + sum(_status(r, "availableReplicas") for r in old_rss)
        can_cut = min(available - min_available, budget)
        for rs in old_rss:
            if can_cut <= 0:
                break
            have = _replicas(rs)
            if have == 0:
                continue
            cut = min(have, can_cut)
            self._scale(rs, have - cut, d, 0)
            can_cut -= cut
            scaled = True
        return scaled

    def _recreate(self, d, new_rs, old_rss, rss, unavailable):
        replicas = int_or(d["spec"].get("replicas"), 1)
        running_old = [r for r in old_rss if _replicas(r) > 0]
        if running_old:
            for rs in running_old:
                self._scale(rs, 0, d, 0)
            self._write_status(d, new_rs, rss, unavailable, progressed=True)
            return
        if any(self.ctl.index.owned.get("pods", {}).get(r["metadata"]["uid"]) for r in old_rss):
            self._write_status(d, new_rs, rss, unavailable)   # wait for the old pods to be gone
            return
        if new_rs is None:
            new_rs = self._create_rs(d, rss, replicas)
            if new_rs is None:
                return
            rss = rss + [new_rs]
            self._write_status(d, new_rs, rss, unavailable, progressed=True,
                               reason=("NewReplicaSetCreated", 'Created new replica set "%s"' % new_rs["metadata"]["name"]))
            return
        if _replicas(new_rs) != replicas:
            self._scale(new_rs, replicas, d, 0)
            self._write_status(d, new_rs, rss, unavailable, progressed=True)
            return
        if self._write_status(d, new_rs, rss, unavailable):
            self._cleanup(d, old_rss)

    # ---- ReplicaSets ------------------------------------------------------------------------------------
    def _create_rs(self, d, rss, replicas):
        spec = d["spec"]
        ns, name = key_of(d)
        collisions = int_or((d.get("status") or {}).get("collisionCount"), 0)
        template = template_without_hash(spec["template"])
        for _attempt in range(10):
            hashed = template_hash(template, collisions)
            rs_name = "%s-%s" % (name, hashed)
            existing = self.store.try_get("replicasets", ns, rs_name)
            if existing is None:
                break
            collisions += 1
        else:
            return None
        if collisions != int_or((d.get("status") or {}).get("collisionCount"), 0):
            self._set_collisions(d, collisions)
        meta = dict(template.get("metadata") or {})
        meta["labels"] = dict(meta.get("labels") or {}, **{HASH_LABEL: hashed})
        rs_template = dict(template, metadata=meta)
        selector = dict(spec["selector"])
        selector["matchLabels"] = dict(selector.get("matchLabels") or {}, **{HASH_LABEL: hashed})
        surge = strategy_numbers(d)[0]
        revision = max([_revision(r) for r in rss] + [0]) + 1
        rs = {"metadata": {"name": rs_name, "namespace": ns, "labels": dict(meta["labels"]),
                           "annotations": {REVISION: str(revision), DESIRED: str(int_or(spec.get("replicas"), 1)),
                                           MAX_REPLICAS: str(int_or(spec.get("replicas"), 1) + surge)},
                           "ownerReferences": [owner_reference(d, "apps/v1", "Deployment")]},
              "spec": {"replicas": replicas, "minReadySeconds": int_or(spec.get("minReadySeconds"), 0),
                       "selector": selector, "template": rs_template},
              "status": {"replicas": 0}}
        try:
            created = self.store.create("replicasets", rs, client=self.client)
        except ApiError as exc:
            self.ctl.error("DeploymentController create ReplicaSet %s/%s" % (ns, rs_name), exc)
            return None
        self.ctl.index.add("replicasets", created)
        self._annotate_revision(d, revision)
        self.ctl.recorder.record(d, "ScalingReplicaSet", "Scaled up replica set %s to %d" % (rs_name, replicas),
                                 "deployment-controller")
        return created

    def _scale(self, rs, replicas, d, surge):
        uid = rs["metadata"]["uid"]
        want = int_or(d["spec"].get("replicas"), 1)
        before = _replicas(rs)

        def scale(current):
            if current["metadata"]["uid"] != uid:
                return None
            annotations = dict(current["metadata"].get("annotations") or {})
            annotations[DESIRED] = str(want)
            annotations[MAX_REPLICAS] = str(want + surge)
            spec = dict(current.get("spec") or {}, replicas=replicas,
                        minReadySeconds=int_or(d["spec"].get("minReadySeconds"), 0))
            if spec == current.get("spec") and annotations == (current["metadata"].get("annotations") or {}):
                return None
            new = shallow(current, spec=spec)
            new["metadata"]["annotations"] = annotations
            return new
        written = update(self.store, "replicasets", rs["metadata"]["namespace"], rs["metadata"]["name"], scale, self.client)
        if written is not None and before != replicas:
            self.ctl.recorder.record(d, "ScalingReplicaSet", "Scaled %s replica set %s to %d from %d"
                                     % ("up" if replicas > before else "down", rs["metadata"]["name"], replicas, before),
                                     "deployment-controller")
        return written

    def _bump_revision(self, d, rs, revision):
        """A rollback to an older template makes its ReplicaSet the newest revision again."""
        uid = rs["metadata"]["uid"]

        def annotate(current):
            if current["metadata"]["uid"] != uid:
                return None
            new = shallow(current)
            new["metadata"]["annotations"] = dict(current["metadata"].get("annotations") or {}, **{REVISION: str(revision)})
            return new
        written = update(self.store, "replicasets", rs["metadata"]["namespace"], rs["metadata"]["name"], annotate, self.client)
        self._annotate_revision(d, revision)
        return written

    def _annotate_revision(self, d, revision):
        uid = d["metadata"]["uid"]

        def annotate(current):
            if current["metadata"]["uid"] != uid:
                return None
            annotations = dict(current["metadata"].get("annotations") or {})
            if annotations.get(REVISION) == str(revision):
                return None
            annotations[REVISION] = str(revision)
            new = shallow(current)
            new["metadata"]["annotations"] = annotations
            return new
        update(self.store, "deployments", d["metadata"]["namespace"], d["metadata"]["name"], annotate, self.client)

    def _set_collisions(self, d, count):
        uid = d["metadata"]["uid"]

        def write(current):
            if current["metadata"]["uid"] != uid:
                return None
            return shallow(current, status=dict(current.get("status") or {}, collisionCount=count))
        update(self.store, "deployments", d["metadata"]["namespace"], d["metadata"]["name"], write, self.client)

    def _cleanup(self, d, old_rss):
        limit = int_or((d.get("spec") or {}).get("revisionHistoryLimit"), 10)
        idle = [r for r in old_rss if _replicas(r) == 0 and _status(r, "replicas") == 0
                and not deleting(r) and not self.ctl.index.owned.get("pods", {}).get(r["metadata"]["uid"])]
        extra = len(idle) - limit
        if extra <= 0:
            return
        for rs in sorted(idle, key=_revision)[:extra]:
            try:
                self.store.remove("replicasets", rs["metadata"]["namespace"], rs["metadata"]["name"], client=self.client)
            except ApiError:
                pass

    # ---- status -----------------------------------------------------------------------------------------
    def _write_status(self, d, new_rs, rss, unavailable, progressed=False, reason=None, paused=False):
        """Write the status; True when the rollout is complete."""
        spec = d.get("spec") or {}
        replicas = int_or(spec.get("replicas"), 1)
        uid = d["metadata"]["uid"]
        fresh = [self.store.try_get("replicasets", r["metadata"]["namespace"], r["metadata"]["name"]) for r in rss]
        fresh = [r for r in fresh if r is not None]
        new_now = None
        if new_rs is not None:
            new_now = next((r for r in fresh if r["metadata"]["uid"] == new_rs["metadata"]["uid"]), None)
        total = sum(_status(r, "replicas") for r in fresh)
        updated = _status(new_now, "replicas") if new_now else 0
        ready = sum(_status(r, "readyReplicas") for r in fresh)
        available = sum(_status(r, "availableReplicas") for r in fresh)
        spec_total = sum(_replicas(r) for r in fresh)
        old_status = d.get("status") or {}
        generation = d["metadata"].get("generation", 1)
        status = omit_zero({"observedGeneration": generation, "replicas": total, "updatedReplicas": updated,
                            "readyReplicas": ready, "availableReplicas": available,
                            "unavailableReplicas": max(0, spec_total - available)})
        if old_status.get("collisionCount"):
            status["collisionCount"] = old_status["collisionCount"]
        complete = (new_now is not None and updated == replicas and total == replicas and available == replicas)
        now = self.clock.now()
        ts = self.clock.timestamp(now)
        old_conds = old_status.get("conditions") or []
        conds = list(old_conds)
        if available >= replicas - unavailable:
            conds = set_condition(conds, "Available", "True", ts, "MinimumReplicasAvailable",
                                  "Deployment has minimum availability.", extra={"lastUpdateTime": ts})
        else:
            conds = set_condition(conds, "Available", "False", ts, "MinimumReplicasUnavailable",
                                  "Deployment does not have minimum availability.", extra={"lastUpdateTime": ts})
        rs_name = new_now["metadata"]["name"] if new_now else d["metadata"]["name"]
        deadline = spec.get("progressDeadlineSeconds", 600)
        moved = progressed or reason is not None or any(
            status.get(k, 0) > old_status.get(k, 0) for k in ("updatedReplicas", "readyReplicas", "availableReplicas")) \
            or status.get("replicas", 0) < old_status.get("replicas", 0)
        if uid not in self.progress or moved:
            self.progress[uid] = now
        if paused:
            conds = set_condition(conds, "Progressing", "Unknown", ts, "DeploymentPaused", "Deployment is paused",
                                  extra={"lastUpdateTime": ts})
        elif complete:
            conds = set_condition(conds, "Progressing", "True", ts, "NewReplicaSetAvailable",
                                  'ReplicaSet "%s" has successfully progressed.' % rs_name, extra={"lastUpdateTime": ts})
        elif reason is not None:
            conds = set_condition(conds, "Progressing", "True", ts, reason[0], reason[1], extra={"lastUpdateTime": ts})
        elif deadline is not None and now - self.progress[uid] > int_or(deadline, 600):
            conds = set_condition(conds, "Progressing", "False", ts, "ProgressDeadlineExceeded",
                                  'ReplicaSet "%s" has timed out progressing.' % rs_name, extra={"lastUpdateTime": ts})
        elif moved or not any(c.get("type") == "Progressing" for c in conds):
            conds = set_condition(conds, "Progressing", "True", ts, "ReplicaSetUpdated",
                                  'ReplicaSet "%s" is progressing.' % rs_name, extra={"lastUpdateTime": ts})
        if not complete and not paused and deadline is not None:
            due = self.progress[uid] + int_or(deadline, 600) + 0.001
            if due > now and uid not in self.deadline_due:
                self.deadline_due[uid] = due
                self.ctl.call_at(due, self._deadline, key_of(d), uid, due)
        status["conditions"] = conds if not same_conditions(conds, old_conds) else old_conds
        if status != old_status:
            def write(current):
                if current["metadata"]["uid"] != uid:
                    return None
                merged = dict(status)
                if (current.get("status") or {}).get("collisionCount"):
                    merged["collisionCount"] = current["status"]["collisionCount"]
                if merged == current.get("status"):
                    return None
                return shallow(current, status=merged)
            update(self.store, "deployments", d["metadata"]["namespace"], d["metadata"]["name"], write, self.client)
        return complete

    def _mark(self, key):
        self.dirty.add(key)

    def _deadline(self, key, uid, due):
        if self.deadline_due.get(uid) == due:
            del self.deadline_due[uid]
            self.dirty.add(key)

    def idle(self):
        return not self.dirty
