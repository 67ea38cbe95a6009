"""PodDisruptionBudget arithmetic as the Kubernetes disruption controller and the eviction REST handler do it.

Kept inside the sandbox (not shared with the collection's own plan layer) so that the sandbox checks the
collection's arithmetic instead of repeating its mistakes.
"""

import math
import weakref

from .errors import ApiError
from .selectors import NOTHING, LabelSelector


def _ready(pod):
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def pod_healthy(pod):
    """Counted healthy by the disruption controller: Ready and not being deleted."""
    return "deletionTimestamp" not in pod["metadata"] and _ready(pod)


_SELECTORS = {}   # id(pdb) -> (pdb, parsed selector); store objects are immutable snapshots


def _selector_of(pdb):
    hit = _SELECTORS.get(id(pdb))
    if hit is not None and hit[0] is pdb:
        return hit[1]
    try:
        selector = LabelSelector.from_object((pdb.get("spec") or {}).get("selector"))
    except ApiError:   # an invalid selector matches no pod (as in the eviction handler)
        selector = NOTHING
    if len(_SELECTORS) > 8192:
        _SELECTORS.clear()
    _SELECTORS[id(pdb)] = (pdb, selector)
    return selector


def pdb_selects(pdb, pod):
    if pdb["metadata"].get("namespace") != pod["metadata"].get("namespace"):
        return False
    return _selector_of(pdb).matches(pod["metadata"].get("labels"))


_BUDGET_INDEX = weakref.WeakKeyDictionary()   # store -> namespace -> (shape version, {(key, value): [names]}, [others])


def _budget_index(store, ns):
    """The namespace's budgets by one ``key=value`` their selector requires (an eviction looks at the few whose key
    the pod carries instead of every budget of the namespace: 1000 in the large-group bench), rebuilt when a budget
    comes, goes or changes its selector."""
    version = store.shape_versions["poddisruptionbudgets"]
    indexes = _BUDGET_INDEX.setdefault(store, {})
    hit = indexes.get(ns)
    if hit is not None and hit[0] == version:
        return hit[1], hit[2]
    anchored, scanned = {}, []
    for pdb in store.list("poddisruptionbudgets", namespace=ns, sort=False)[0]:
        selector = _selector_of(pdb)
        anchor = next(((key, values[0]) for key, op, values in selector.requirements if op == "In" and len(values) == 1), None)
        if anchor is None:
            scanned.append(pdb["metadata"]["name"])
        else:
            anchored.setdefault(anchor, []).append(pdb["metadata"]["name"])
    indexes[ns] = (version, anchored, scanned)
    return anchored, scanned


def pdbs_for_pod(store, pod):
    ns = pod["metadata"].get("namespace")
    labels = pod["metadata"].get("labels") or {}
    anchored, scanned = _budget_index(store, ns)
    names = set(scanned)
    for item in labels.items():
        names.update(anchored.get(item, ()))
    matched = []
    for name in names:
        pdb = store.try_get("poddisruptionbudgets", ns, name)
        if pdb is not None and _selector_of(pdb).matches(labels):
            matched.append(pdb)
    matched.sort(key=lambda p: p["metadata"]["name"])
    return matched


def matching_pods(store, pdb):
    return store.list("pods", namespace=pdb["metadata"]["namespace"], label_selector=_selector_of(pdb), sort=False)[0]


def _percent(value):
    if isinstance(value, str) and value.endswith("%"):
        return int(value[:-1])
    return None


class NoScale(Exception):
    """A pod's controller is missing or has no scale subresource: the disruption controller fails safe."""


def _owned(obj, ref):
    return obj is not None and (not ref.get("uid") or obj["metadata"].get("uid") == ref.get("uid"))


def _controller_scale(store, pod):
    """(controller uid, replicas) of the scalable controller of ``pod``; (None, None) for an unmanaged pod.

    Follows the disruption controller's finders: a ReplicaSet owned by a Deployment counts with the
    Deployment's replicas (the ReplicaSet's own when that Deployment is gone), a StatefulSet's pod with the
    StatefulSet's; any other controller kind
    (a DaemonSet has no scale subresource) or a missing controller raises :class:`NoScale`."""
    ns = pod["metadata"].get("namespace")
    ref = None
    for candidate in pod["metadata"].get("ownerReferences") or []:
        if candidate.get("controller"):
            ref = candidate
            break
    if ref is None:
        return None, None
    if ref.get("kind") == "StatefulSet":
        sts = store.try_get("statefulsets", ns, ref.get("name"))
        if not _owned(sts, ref):
            raise NoScale('found no controllers for pod "%s"' % pod["metadata"]["name"])
        return sts["metadata"]["uid"], int((sts.get("spec") or {}).get("replicas", 1))
    if ref.get("kind") != "ReplicaSet":
        raise NoScale("%s does not implement the scale subresource" % ref.get("kind"))
    rs = store.try_get("replicasets", ns, ref.get("name"))
    if not _owned(rs, ref):
        raise NoScale('found no controllers for pod "%s"' % pod["metadata"]["name"])
    for up in rs["metadata"].get("ownerReferences") or []:
        if up.get("controller") and up.get("kind") == "Deployment":
            dep = store.try_get("deployments", ns, up.get("name"))
            if _owned(dep, up):
                return dep["metadata"]["uid"], int((dep.get("spec") or {}).get("replicas", 1))
    return rs["metadata"]["uid"], int((rs.get("spec") or {}).get("replicas", 1))


def _expected_scale(store, pods):
    scales = {}
    seen = set()
    for pod in pods:
        # pods of one controller share its answer: look it up once, not once per pod (100 pods, 1 ReplicaSet)
        ref = next((r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
        key = (ref.get("kind"), ref.get("name"), ref.get("uid")) if ref else None
        if key is not None and key in seen:
            continue
        seen.add(key)
        uid, scale = _controller_scale(store, pod)
        if uid is not None:
            scales[uid] = scale
    return sum(scales.values())


def expected_and_desired(store, pdb, pods):
    """(expectedPods, desiredHealthy) for a budget over ``pods`` (the pods its selector matches).

    An integer minAvailable counts the matching pods; a percentage and any maxUnavailable count the
    replicas of the pods' controllers (unmanaged pods are not counted). Raises :class:`NoScale` when a
    pod's controller cannot be scaled, where the real controller fails safe to zero disruptions."""
    spec = pdb.get("spec") or {}
    min_av, max_un = spec.get("minAvailable"), spec.get("maxUnavailable")
    if max_un is not None:
        expected = _expected_scale(store, pods)
        pct = _percent(max_un)
        unavailable = int(math.ceil(expected * pct / 100.0)) if pct is not None else int(max_un)
        return expected, max(0, expected - unavailable)
    if min_av is not None:
        pct = _percent(min_av)
        if pct is None:
            return len(pods), int(min_av)
        expected = _expected_scale(store, pods)
        return expected, int(math.ceil(expected * pct / 100.0))
    return 0, 0


def compute_status(store, pdb):
    """The PDB status the disruption controller would write now (without observedGeneration/conditions)."""
    pods = matching_pods(store, pdb)
    healthy = sum(1 for p in pods if pod_healthy(p))
    try:
        expected, desired = expected_and_desired(store, pdb, pods)
    except NoScale:
        # fail safe as the controller does: no disruptions, the last computed counts stay
        stored = pdb.get("status") or {}
        return {"currentHealthy": healthy, "desiredHealthy": stored.get("desiredHealthy", 0),
                "expectedPods": stored.get("expectedPods", 0), "disruptionsAllowed": 0}
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    return {"currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
            "disruptionsAllowed": allowed}


def pdb_snapshot(store, pod):
    """For the event log: each budget selecting ``pod`` with its healthy/desired counts right now."""
    out = []
    for pdb in pdbs_for_pod(store, pod):
        st = compute_status(store, pdb)
        out.append({"pdb": "%s/%s" % (pdb["metadata"]["namespace"], pdb["metadata"]["name"]),
                    "healthy": st["currentHealthy"], "desired": st["desiredHealthy"]})
    return out
