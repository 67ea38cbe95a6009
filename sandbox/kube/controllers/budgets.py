"""The disruption controller: every PodDisruptionBudget's status, kept current as pods change.

The arithmetic is the sandbox's own (``kube/disruption.py``: expectedPods from the controllers' scale,
desiredHealthy from minAvailable/maxUnavailable, fail-safe to zero when a controller cannot be scaled).
This controller adds what belongs to the loop: which pods each budget selects and which of them are
healthy (kept per pod from the watch, so a pod change costs a look-up, not a scan of the namespace),
``status.disruptedPods`` (written by the eviction handler; an entry counts its pod as not healthy until
the pod is being deleted or gone, or for two minutes), observedGeneration and the DisruptionAllowed
condition. Recomputation is debounced per namespace by one tick.
"""

from .. import disruption
from ..selectors import LabelSelector
from ..store import controller_ref
from .objects import deleting, int_or, key_of, same_conditions, set_condition, shallow
from .runtime import Controller

DELETION_TIMEOUT = 120.0


def _counts_pods(spec):
    """True when expectedPods is the number of matching pods (an integer minAvailable)."""
    if spec.get("maxUnavailable") is not None:
        return False
    value = spec.get("minAvailable")
    return value is not None and not (isinstance(value, str) and value.endswith("%"))


class Budget:
    __slots__ = ("key", "uid", "selector", "members", "healthy", "controllers", "spec", "anchor")

    def __init__(self, pdb):
        self.key = key_of(pdb)
        self.uid = pdb["metadata"]["uid"]
        self.spec = pdb.get("spec") or {}
        try:
            self.selector = LabelSelector.from_object(self.spec.get("selector"))
        except Exception:  # pylint: disable=broad-except
            self.selector = LabelSelector.from_object(None)
        self.members = set()       # pod keys selected
        self.healthy = set()       # pod keys selected and healthy (Ready, not being deleted)
        self.controllers = {}      # controller uid -> {pod keys}: one pod per controller gives the scale
        # one label the selector requires (key, value): pods without it cannot match
        self.anchor = next(((k, vals[0]) for k, op, vals in self.selector.requirements
                            if op == "In" and len(vals) == 1), None)

    def add(self, pkey, healthy, ctrl):
        self.members.add(pkey)
        if healthy:
            self.healthy.add(pkey)
        if ctrl:
            self.controllers.setdefault(ctrl, set()).add(pkey)

    def discard(self, pkey, ctrl):
        self.members.discard(pkey)
        self.healthy.discard(pkey)
        if ctrl and ctrl in self.controllers:
            keys = self.controllers[ctrl]
            keys.discard(pkey)
            if not keys:
                del self.controllers[ctrl]


class DisruptionController(Controller):
    watches = ("poddisruptionbudgets", "pods", "deployments", "replicasets", "statefulsets")
    client = "sandbox-disruption-controller"

    def __init__(self, ctl):
        super().__init__(ctl)
        self.budgets = {}          # pdb key -> Budget
        self.by_ns = {}            # namespace -> {pdb keys}
        self.anchored = {}         # (namespace, label key, value) -> {pdb keys}
        self.unanchored = {}       # namespace -> {pdb keys} whose selector has no equality to index by
        self.pods = {}             # pod key -> (labels, healthy, controller uid, {pdb keys})
        self.scales = {}           # deployment/replicaset/statefulset uid -> spec.replicas last seen
        self.dirty = {}            # namespace -> {pdb keys}
        self.last_run = {}         # namespace -> simulated time of its last recomputation
        self.poke_due = {}         # namespace -> simulated time a debounced pass is already asked for
        self.seen_disrupted = {}   # (pdb key, pod name) -> simulated time the entry was first seen

    # ---- membership -------------------------------------------------------------------------------
    def on_event(self, plural, etype, obj):
        if plural == "poddisruptionbudgets":
            self._on_pdb(etype, obj)
        elif plural == "pods":
            self._on_pod(etype, obj)
        else:
            uid = obj["metadata"]["uid"]
            replicas = None if etype == "DELETED" else int_or((obj.get("spec") or {}).get("replicas"), 1)
            if self.scales.get(uid) == replicas:
                return
            if replicas is None:
                self.scales.pop(uid, None)
            else:
                self.scales[uid] = replicas
            for key in self.by_ns.get(obj["metadata"].get("namespace"), ()):
                if not _counts_pods(self.budgets[key].spec):
                    self._mark(key)

    def _candidates(self, ns, labels):
        keys = set(self.unanchored.get(ns, ()))
        for label in labels.items():
            keys.update(self.anchored.get((ns,) + label, ()))
        return keys

    def _on_pdb(self, etype, pdb):
        key = key_of(pdb)
        old = self.budgets.get(key)
        if etype == "DELETED":
            if old is not None:
                self._drop_budget(old)
            return
        if old is not None and old.uid == pdb["metadata"]["uid"] and old.spec == (pdb.get("spec") or {}):
            self._mark(key)
            return
        if old is not None:
            self._drop_budget(old)
        budget = Budget(pdb)
        self.budgets[key] = budget
        self.by_ns.setdefault(key[0], set()).add(key)
        if budget.anchor:
            self.anchored.setdefault((key[0],) + budget.anchor, set()).add(key)
        else:
            self.unanchored.setdefault(key[0], set()).add(key)
        for pod in self.store.list("pods", namespace=key[0], label_selector=budget.selector)[0]:
            self._on_pod("MODIFIED", pod, rematch=True)
        self._mark(key)

    def _drop_budget(self, budget):
        ns = budget.key[0]
        self.budgets.pop(budget.key, None)
        for index, slot in ((self.by_ns, ns),
                            (self.anchored, (ns,) + budget.anchor) if budget.anchor else (self.unanchored, ns)):
            keys = index.get(slot)
            if keys is not None:
                keys.discard(budget.key)
                if not keys:
                    del index[slot]
        for pkey in budget.members:
            state = self.pods.get(pkey)
            if state is not None:
                state[3].discard(budget.key)
        pending = self.dirty.get(ns)
        if pending:
            pending.discard(budget.key)
        for entry in [e for e in self.seen_disrupted if e[0] == budget.key]:
            del self.seen_disrupted[entry]

    def _on_pod(self, etype, pod, rematch=False):
        pkey = key_of(pod)
        old = self.pods.get(pkey)
        if etype == "DELETED":
            if old is not None:
                del self.pods[pkey]
                for key in old[3]:
                    budget = self.budgets.get(key)
                    if budget is not None:
                        budget.discard(pkey, old[2])
                        self._mark(key)
            return
        if pkey[0] not in self.by_ns:
            self.pods.pop(pkey, None)
            return
        labels = pod["metadata"].get("labels") or {}
        healthy = disruption.pod_healthy(pod)
        ref = controller_ref(pod)
        ctrl = ref.get("uid") if ref else None
        if not rematch and old is not None and old[0] == labels and old[1] == healthy and old[2] == ctrl:
            return
        if not rematch and old is not None and old[0] == labels:
            after = old[3]
        else:
            after = {key for key in self._candidates(pkey[0], labels) if self.budgets[key].selector.matches(labels)}
        before = old[3] if old is not None else set()
        for key in before:
            if key in self.budgets:
                self.budgets[key].discard(pkey, old[2])
        for key in after:
            self.budgets[key].add(pkey, healthy, ctrl)
        self.pods[pkey] = (labels, healthy, ctrl, set(after))
        for key in before | after:
            self._mark(key)

    def _mark(self, key):
        self.dirty.setdefault(key[0], set()).add(key)

    def resync(self):
        for key in self.budgets:
            self._mark(key)

    # ---- status ---------------------------------------------------------------------------------------
    def sync(self):
        if not self.dirty:
            return False
        now = self.clock.now()
        debounce = self.cfg.tick * self.clock.speed
        work = False
        for ns in list(self.dirty):
            last = self.last_run.get(ns, float("-inf"))
            if now - last < debounce:
                if self.poke_due.get(ns, float("-inf")) < now:
                    self.poke_due[ns] = last + debounce
                    self.ctl.call_at(last + debounce, self.ctl.poke)
                continue
            keys = self.dirty.pop(ns)
            self.last_run[ns] = now
            for key in keys:
                budget = self.budgets.get(key)
                if budget is not None:
                    work |= self._refresh(budget, now)
        return work

    def _refresh(self, budget, now):
        ns, name = budget.key
        with self.store.lock:   # one consistent view against the eviction handler's writes
            pdb = self.store.try_get("poddisruptionbudgets", ns, name)
            if pdb is None or pdb["metadata"]["uid"] != budget.uid:
                return False
            status = self._status(pdb, budget, now)
            if status == (pdb.get("status") or {}):
                return False
            self.store.replace("poddisruptionbudgets", shallow(pdb, status=status), client=self.client, check_rv=False)
            return True

    def _pods_for_scale(self, budget, spec):
        """The pods expected_and_desired needs: all members when it counts them, else one per controller."""
        keys = budget.members if _counts_pods(spec) else [next(iter(k)) for k in budget.controllers.values()]
        pods = (self.store.try_get("pods", k[0], k[1]) for k in keys)
        return [p for p in pods if p is not None]

    def _status(self, pdb, budget, now):
        old = pdb.get("status") or {}
        ns = budget.key[0]
        disrupted = {}
        for pod_name, stamp in (old.get("disruptedPods") or {}).items():
            entry = (budget.key, pod_name)
            if entry not in self.seen_disrupted:
                self.seen_disrupted[entry] = now
                self.ctl.call_at(now + DELETION_TIMEOUT + 0.001, self._mark, budget.key)
            pod = self.store.try_get("pods", ns, pod_name)
            if pod is None or deleting(pod) or now - self.seen_disrupted[entry] > DELETION_TIMEOUT:
                del self.seen_disrupted[entry]
                continue
            disrupted[pod_name] = stamp
        healthy = len(budget.healthy) - sum(1 for n in disrupted if (ns, n) in budget.healthy)
        error = None
        try:
            expected, desired = disruption.expected_and_desired(self.store, pdb, self._pods_for_scale(budget, pdb.get("spec") or {}))
        except Exception as exc:  # pylint: disable=broad-except
            # a controller without a scale subresource: fail safe, as the real controller does
            error = str(exc)
            expected, desired = old.get("expectedPods", 0), old.get("desiredHealthy", 0)
        allowed = healthy - desired
        if error is not None or expected <= 0 or allowed <= 0:
            allowed = 0
        status = {"currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
                  "disruptionsAllowed": allowed}
        generation = pdb["metadata"].get("generation", 1)
        if generation:
            status["observedGeneration"] = generation
        if disrupted:
            status["disruptedPods"] = disrupted
        ts = self.clock.timestamp(now)
        extra = {"observedGeneration": generation, "message": ""}
        if error is not None:
            conds = set_condition(old.get("conditions"), "DisruptionAllowed", "False", ts, "SyncFailed", error,
                                  extra={"observedGeneration": generation})
        elif allowed > 0:
            conds = set_condition(old.get("conditions"), "DisruptionAllowed", "True", ts, "SufficientPods", extra=extra)
        else:
            conds = set_condition(old.get("conditions"), "DisruptionAllowed", "False", ts, "InsufficientPods", extra=extra)
        status["conditions"] = old["conditions"] if old.get("conditions") and same_conditions(conds, old["conditions"]) \
            else conds
        return status

    def idle(self):
        return not self.dirty
