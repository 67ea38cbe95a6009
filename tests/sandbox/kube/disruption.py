"""PodDisruptionBudget arithmetic as the Kubernetes disruption controller and the eviction REST handler do it.

Kept inside the sandbox (not shared with the collection's own plan layer) so that the sandbox checks the
collection's arithmetic instead of repeating its mistakes.
"""

import math

from .selectors import LabelSelector


def _ready(pod):
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def pod_healthy(pod):
    """Counted healthy by the disruption controller: Ready and not being deleted."""
    return "deletionTimestamp" not in pod["metadata"] and _ready(pod)


def pdb_selects(pdb, pod):
    if pdb["metadata"].get("namespace") != pod["metadata"].get("namespace"):
        return False
    selector = (pdb.get("spec") or {}).get("selector")
    return LabelSelector.from_object(selector).matches(pod["metadata"].get("labels"))


def pdbs_for_pod(store, pod):
    ns = pod["metadata"].get("namespace")
    pdbs, _ = store.list("poddisruptionbudgets", namespace=ns)
    return [p for p in pdbs if pdb_selects(p, pod)]


def matching_pods(store, pdb):
    pods, _ = store.list("pods", namespace=pdb["metadata"]["namespace"])
    selector = LabelSelector.from_object((pdb.get("spec") or {}).get("selector"))
    return [p for p in pods if selector.matches(p["metadata"].get("labels"))]


def _percent(value):
    if isinstance(value, str) and value.endswith("%"):
        return int(value[:-1])
    return None


def _controller_scale(store, pod):
    """The replica count of the pod's scalable controller (Deployment via its ReplicaSet, or ReplicaSet)."""
    ns = pod["metadata"].get("namespace")
    for ref in pod["metadata"].get("ownerReferences") or []:
        if not ref.get("controller"):
            continue
        if ref.get("kind") == "ReplicaSet":
            rs = store.try_get("replicasets", ns, ref.get("name"))
            if rs is None:
                return None, None
            for up in rs["metadata"].get("ownerReferences") or []:
                if up.get("controller") and up.get("kind") == "Deployment":
                    dep = store.try_get("deployments", ns, up.get("name"))
                    if dep is None:
                        return None, None
                    return ("Deployment", up.get("name")), int(dep.get("spec", {}).get("replicas", 1))
            return ("ReplicaSet", ref.get("name")), int(rs.get("spec", {}).get("replicas", 1))
    return None, None


def expected_and_desired(store, pdb, pods):
    """(expectedPods, desiredHealthy) for a budget over ``pods`` (the pods its selector matches)."""
    spec = pdb.get("spec") or {}
    min_av, max_un = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_av is not None and _percent(min_av) is None:
        return len(pods), int(min_av)
    # percentages and maxUnavailable are relative to the controllers' desired scale
    scales, expected = {}, 0
    for pod in pods:
        key, scale = _controller_scale(store, pod)
        if key is None:
            expected = None
            break
        scales[key] = scale
    expected = sum(scales.values()) if expected is not None else len(pods)
    if max_un is not None:
        pct = _percent(max_un)
        unavailable = int(math.ceil(expected * pct / 100.0)) if pct is not None else int(max_un)
        return expected, max(0, expected - unavailable)
    if min_av is not None:
        return expected, int(math.ceil(expected * _percent(min_av) / 100.0))
    return expected, 0


def compute_status(store, pdb):
    pods = matching_pods(store, pdb)
    expected, desired = expected_and_desired(store, pdb, pods)
    healthy = sum(1 for p in pods if pod_healthy(p))
    return {"currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
            "disruptionsAllowed": max(0, healthy - desired)}


def pdb_snapshot(store, pod):
    """For the event log: each budget selecting ``pod`` with its healthy/desired counts right now."""
    out = []
    for pdb in pdbs_for_pod(store, pod):
        st = compute_status(store, pdb)
        out.append({"pdb": "%s/%s" % (pdb["metadata"]["namespace"], pdb["metadata"]["name"]),
                    "healthy": st["currentHealthy"], "desired": st["desiredHealthy"]})
    return out
