"""The DaemonSet controller: one pod per eligible node, bound to it directly.

A node is eligible when it matches the pod's nodeSelector/required affinity and every NoSchedule and
NoExecute taint is tolerated by the template's tolerations plus the ones the real controller adds to
every daemon pod (not-ready and unreachable NoExecute; disk-, memory-, pid-pressure and unschedulable
NoSchedule; network-unavailable NoSchedule for host-network pods). A daemon pod already running stays
as long as its NoExecute taints are tolerated (a new NoSchedule taint does not evict it). Deleted daemon
pods are recreated while the node remains. RollingUpdate (default maxUnavailable 1) replaces pods of an
older template; OnDelete waits for them to be deleted. Status: desiredNumberScheduled,
currentNumberScheduled, numberMisscheduled, numberReady, numberAvailable, updatedNumberScheduled,
numberUnavailable, observedGeneration.
"""

from ..errors import ApiError
from ..store import controller_ref, is_ready
from .objects import (deleting, delete_pod, first_untolerated, int_or, key_of, node_selected, owner_reference,
                      pod_from_template, random_suffix, scaled_value, shallow, template_hash, update)
from .replicaset import active, omit_zero
from .runtime import Controller

HASH_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
ROLLING = {"how": "deleted", "reason": "daemonset-update", "client": "sandbox-daemonset-controller"}
MISSCHEDULED = {"how": "deleted", "reason": "daemonset-misscheduled", "client": "sandbox-daemonset-controller"}


def daemon_tolerations(spec):
    """The template's tolerations plus util.AddOrUpdateDaemonPodTolerations'."""
    tolerations = list(spec.get("tolerations") or [])
    added = [("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
             ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
             ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule")]
    if spec.get("hostNetwork"):
        added.append(("node.kubernetes.io/network-unavailable", "NoSchedule"))
    for key, effect in added:
        if not any(t.get("key") == key and t.get("effect") == effect and t.get("operator") == "Exists" for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    return tolerations


class DaemonSetController(Controller):
    watches = ("daemonsets", "nodes", "pods")
    client = "sandbox-daemonset-controller"

    def __init__(self, ctl):
        super().__init__(ctl)
        self.dirty = set()        # daemonset keys
        self.nodes = {}           # name -> node (latest seen)
        self.sets = {}            # daemonset key -> uid

    def on_event(self, plural, etype, obj):
        if plural == "daemonsets":
            key = key_of(obj)
            if etype == "DELETED":
                self.sets.pop(key, None)
            else:
                self.sets[key] = obj["metadata"]["uid"]
                self.dirty.add(key)
            return
        if plural == "nodes":
            name = obj["metadata"]["name"]
            if etype == "DELETED":
                self.nodes.pop(name, None)
            else:
                old = self.nodes.get(name)
                self.nodes[name] = obj
                if old is not None and not self._node_changed(old, obj):
                    return
            self.dirty.update(self.sets)
            return
        ref = controller_ref(obj)
        if ref and ref.get("kind") == "DaemonSet":
            self.dirty.add((obj["metadata"].get("namespace"), ref.get("name")))

    @staticmethod
    def _node_changed(old, new):
        return (old["metadata"].get("labels") != new["metadata"].get("labels")
                or (old.get("spec") or {}).get("taints") != (new.get("spec") or {}).get("taints")
                or is_ready(old) != is_ready(new))

    def resync(self):
        self.dirty.update(self.sets)

    def sync(self):
        return self.sync_dirty()

    def _sync_one(self, key):
        ds = self.store.try_get("daemonsets", key[0], key[1])
        if ds is None:
            return
        spec = ds.get("spec") or {}
        template = spec.get("template") or {}
        pod_spec = template.get("spec") or {}
        tolerations = daemon_tolerations(pod_spec)
        revision = template_hash(template)
        generation = ds["metadata"].get("generation", 1)
        by_node = {}
        for pod in self.ctl.index.owned_objects(self.store, "pods", ds["metadata"]["uid"]):
            by_node.setdefault((pod.get("spec") or {}).get("nodeName"), []).append(pod)
        counts = dict.fromkeys(("desired", "current", "miss", "ready", "available", "updated"), 0)
        outdated, unavailable = [], 0
        min_ready = int_or(spec.get("minReadySeconds"), 0)
        now = self.clock.now()
        for name, node in self.nodes.items():
            labels = node["metadata"].get("labels") or {}
            taints = (node.get("spec") or {}).get("taints") or []
            selected = node_selected(pod_spec, labels, name)
            should_run = selected and first_untolerated(tolerations, taints) is None
            may_continue = selected and first_untolerated(tolerations, taints, ("NoExecute",)) is None
            pods = [p for p in by_node.pop(name, []) if active(p)]
            if pods and not may_continue:
                for pod in pods:
                    self._delete(pod, MISSCHEDULED, ds)
                counts["miss"] += 1
                continue
            if not should_run and not pods:
                continue
            if not should_run:
                counts["miss"] += 1
                continue
            counts["desired"] += 1
            if not pods:
                if not deleting(ds):
                    self._create(ds, template, tolerations, name, revision, generation)
                unavailable += 1
                continue
            pods.sort(key=lambda p: p["metadata"].get("creationTimestamp") or "")
            for extra in pods[1:]:
                self._delete(extra, MISSCHEDULED, ds)
            pod = pods[0]
            counts["current"] += 1
            current = (pod["metadata"].get("labels") or {}).get(HASH_LABEL) == revision
            if current:
                counts["updated"] += 1
            ready = is_ready(pod)
            if ready:
                counts["ready"] += 1
                since = self.ctl.index.ready_since_of(pod)
                if now - since >= min_ready:
                    counts["available"] += 1
                else:
                    self.ctl.call_at(since + min_ready, self.dirty.add, key)
                    unavailable += 1
            else:
                unavailable += 1
            if not current:
                outdated.append((ready, pod))
        if outdated and not deleting(ds):
            self._roll(ds, outdated, unavailable, counts["desired"])
        self._write_status(ds, counts, unavailable)

    def _roll(self, ds, outdated, unavailable, desired):
        strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
        if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
            return
        try:
            budget = scaled_value((strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1), desired, True,
                                  "spec.updateStrategy.rollingUpdate.maxUnavailable")
        except ValueError as exc:
            self.ctl.events.emit("controller.error", where="DaemonSetController", error=str(exc))
            return
        budget = max(budget, 1) - unavailable
        for ready, pod in sorted(outdated, key=lambda item: item[0]):
            if not ready:
                self._delete(pod, ROLLING, ds)      # an unavailable old pod costs nothing to replace
            elif budget > 0:
                self._delete(pod, ROLLING, ds)
                budget -= 1

    def _create(self, ds, template, tolerations, node, revision, generation):
        ns, name = key_of(ds)
        ref = owner_reference(ds, "apps/v1", "DaemonSet")
        labels = {HASH_LABEL: revision, GENERATION_LABEL: str(generation)}
        for _attempt in range(5):
            pod = pod_from_template(template, "%s-%s" % (name, random_suffix()), ns, ref, labels)
            pod["spec"]["nodeName"] = node
            pod["spec"]["tolerations"] = tolerations + [t for t in pod["spec"].get("tolerations") or []
                                                        if t not in tolerations]
            try:
                created = self.store.create("pods", pod, client=self.client)
            except ApiError as exc:
                if exc.code == 409:
                    continue
                self.ctl.error("DaemonSetController create %s/%s" % (ns, name), exc)
                return None
            self.ctl.index.add("pods", created)
            return created
        return None

    def _delete(self, pod, cause, ds):
        if delete_pod(self.ctl, pod, self.client, dict(cause)):
            self.dirty.add(key_of(ds))

    def _write_status(self, ds, counts, unavailable):
        status = {"desiredNumberScheduled": counts["desired"], "currentNumberScheduled": counts["current"],
                  "numberMisscheduled": counts["miss"], "numberReady": counts["ready"]}
        status.update(omit_zero({"numberAvailable": counts["available"], "updatedNumberScheduled": counts["updated"],
                                 "numberUnavailable": unavailable,
                                 "observedGeneration": ds["metadata"].get("generation", 1)}))
        old = ds.get("status") or {}
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        if status == old:
            return
        uid = ds["metadata"]["uid"]

        def write(current):
            if current["metadata"]["uid"] != uid or current.get("status") == status:
                return None
            return shallow(current, status=status)
        update(self.store, "daemonsets", ds["metadata"]["namespace"], ds["metadata"]["name"], write, self.client)

    def idle(self):
        return not self.dirty
