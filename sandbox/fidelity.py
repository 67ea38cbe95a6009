"""The fidelity table: one scripted scenario on both Kubernetes backends, every answer a module can observe
compared side by side.

    python -m sandbox.fidelity [--out FILE.md] [--json FILE.json]

Each probe makes the same requests against a fresh 3-node sandbox of each backend and reduces what came back
to what a client can act on (status code, Status reason, causes, the fields the collection reads); the
scenario's invariant report figures close the table. A probe listed in ``KNOWN_DIFFERENCES`` may differ, for
the reason given there (the sandbox's README carries the same list); any other difference is a defect of the
embedded backend. Exit status 1 when one is found.
"""

import argparse
import json
import os
import sys
import tempfile
import time

from sandbox.reference.rest import Rest
from sandbox.drive.handle import SandboxHandle, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NS = "fidelity"
PODS = "/api/v1/namespaces/%s/pods" % NS
NEVER_READY = {"sandbox.nodeops.io/ready-seconds": "never"}
# probe -> why a difference there cannot mislead a module (kept in step with sandbox/README.md)
KNOWN_DIFFERENCES = {
    "label selector that does not parse": (
        "the wording of the message: kube-apiserver's lexer names the token it expected, the embedded parser the "
        "requirement it could not read; the code (400) and reason (BadRequest) are the same, and the collection "
        "sends only selectors it built itself"),
}
REPORT_FIGURES = ("pdb_violations", "killed_without_eviction", "deleted_without_eviction")


def _rest(handle):
    with open(handle.state["kubeconfig"], encoding="utf-8") as fh:
        config = json.load(fh)
    cluster = config["clusters"][0]["cluster"]
    return Rest(cluster["server"], config["users"][0]["user"].get("token", ""), cluster.get("certificate-authority"),
                "fidelity-probe")


def status_of(code, body):
    """What a client reads from an error: code, reason, the causes' reasons and fields, the message."""
    details = body.get("details") or {}
    return {"code": code, "reason": body.get("reason"), "message": body.get("message"),
            "causes": sorted("%s %s" % (c.get("reason"), c.get("field") or "") for c in details.get("causes") or [])}


def _pod(name, labels, annotations=None, node=None, grace=30):
    spec = {"terminationGracePeriodSeconds": grace, "containers": [{"name": "main", "image": "registry.example/probe:1"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": labels, "annotations": annotations or {}}, "spec": spec}


def _pdb(name, labels, min_available, policy=None):
    spec = {"minAvailable": min_available, "selector": {"matchLabels": labels}}
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def _eviction(name, dry_run=False):
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": NS}}
    if dry_run:
        body["deleteOptions"] = {"dryRun": ["All"]}
    return body


def _ready(rest, name):
    code, pod = rest.call("GET", "%s/%s" % (PODS, name))
    return code == 200 and any(c.get("type") == "Ready" and c.get("status") == "True"
                               for c in (pod.get("status") or {}).get("conditions") or [])


def _pdb_settled(rest, name, healthy):
    code, pdb = rest.call("GET", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets/%s" % (NS, name))
    st = pdb.get("status") or {}
    return code == 200 and st.get("currentHealthy") == healthy and st.get("observedGeneration") == pdb["metadata"].get("generation")


def _nodes(rest):
    return sorted(n["metadata"]["name"] for n in rest.get("/api/v1/nodes")["items"])


# ---- the scenario ----------------------------------------------------------------------------------------------
def scenario(handle):
    """Run every probe in order on one sandbox; return {probe: observation}."""
    rest = _rest(handle)
    out = {}
    nodes = _nodes(rest)
    rest.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})

    out["GET a missing pod"] = status_of(*rest.call("GET", PODS + "/missing"))
    first = rest.call("POST", PODS, _pod("one", {"app": "one"}, node=nodes[0]))
    out["create, then create again"] = {"first": first[0], "again": status_of(*rest.call("POST", PODS, _pod("one", {"app": "one"})))}
    out["create with an invalid name"] = status_of(*rest.call("POST", PODS, _pod("Bad_Name", {"app": "x"})))
    code, stale = rest.call("GET", PODS + "/one")
    rest.call("PATCH", PODS + "/one", {"metadata": {"labels": {"touched": "yes"}}}, content_type="application/merge-patch+json")
    out["update with a stale resourceVersion"] = status_of(*rest.call("PUT", PODS + "/one", stale))

    # three healthy pods under minAvailable 2: one eviction allowed, the next refused with the budget's cause
    for name in ("web-a", "web-b", "web-c"):
        rest.call("POST", PODS, _pod(name, {"app": "web"}, node=nodes[["web-a", "web-b", "web-c"].index(name) % len(nodes)]))
    rest.call("POST", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets" % NS, _pdb("web", {"app": "web"}, 2))
    wait_until("the web pods to be Ready", lambda: all(_ready(rest, n) for n in ("web-a", "web-b", "web-c")))
    wait_until("the web budget to count 3 healthy pods", lambda: _pdb_settled(rest, "web", 3))
    dry = rest.call("POST", PODS + "/web-a/eviction", _eviction("web-a", dry_run=True))
    after_dry = rest.call("GET", PODS + "/web-a")[1]
    out["eviction, dry run"] = {"code": dry[0], "pod deleted": bool(after_dry["metadata"].get("deletionTimestamp"))}
    code, body = rest.call("POST", PODS + "/web-a/eviction", _eviction("web-a"))
    evicted = rest.call("GET", PODS + "/web-a")[1]
    out["eviction within the budget"] = {
        "code": code, "kind": body.get("kind"), "status": body.get("status"),
        "graceful": bool(evicted.get("metadata", {}).get("deletionTimestamp")),
        "deletionGracePeriodSeconds": evicted.get("metadata", {}).get("deletionGracePeriodSeconds")}
    out["eviction beyond the budget"] = status_of(*rest.call("POST", PODS + "/web-b/eviction", _eviction("web-b")))
    out["eviction of a missing pod"] = status_of(*rest.call("POST", PODS + "/missing/eviction", _eviction("missing")))

    # one pod under two budgets
    # (the budgets come once the pod is Ready: kube-controller-manager refreshes only one budget of such a pod when it
    # changes, so a budget created before would keep counting it unhealthy)
    rest.call("POST", PODS, _pod("shared", {"app": "shared", "tier": "x"}, node=nodes[0]))
    wait_until("the shared pod to be Ready", lambda: _ready(rest, "shared"))
    rest.call("POST", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets" % NS, _pdb("shared-a", {"app": "shared"}, 0))
    rest.call("POST", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets" % NS, _pdb("shared-b", {"tier": "x"}, 0))
    wait_until("both budgets to see it", lambda: _pdb_settled(rest, "shared-a", 1) and _pdb_settled(rest, "shared-b", 1))
    out["eviction of a pod under two budgets"] = status_of(*rest.call("POST", PODS + "/shared/eviction", _eviction("shared")))

    # a Running pod that never turns Ready, under a budget it keeps unhealthy
    rest.call("POST", PODS, _pod("stuck", {"app": "stuck"}, annotations=NEVER_READY, node=nodes[1 % len(nodes)]))
    rest.call("POST", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets" % NS, _pdb("stuck", {"app": "stuck"}, 1))
    wait_until("the stuck pod to run", lambda: rest.call("GET", PODS + "/stuck")[1].get("status", {}).get("phase") == "Running")
    wait_until("the stuck budget to count it", lambda: _pdb_settled(rest, "stuck", 0))
    out["eviction of a not-Ready pod, IfHealthyBudget"] = status_of(*rest.call("POST", PODS + "/stuck/eviction", _eviction("stuck")))
    rest.call("PATCH", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets/stuck" % NS,
              {"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}}, content_type="application/merge-patch+json")
    wait_until("the stuck budget to see its new policy", lambda: _pdb_settled(rest, "stuck", 0))
    out["eviction of a not-Ready pod, AlwaysAllow"] = {"code": rest.call("POST", PODS + "/stuck/eviction", _eviction("stuck"))[0]}

    # the policy is about unhealthy pods only: a Ready pod under an AlwaysAllow budget at 0 stays
    rest.call("POST", PODS, _pod("guarded", {"app": "guarded"}, node=nodes[1 % len(nodes)]))
    wait_until("the guarded pod to be Ready", lambda: _ready(rest, "guarded"))
    rest.call("POST", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets" % NS, _pdb("guarded", {"app": "guarded"}, 1, "AlwaysAllow"))
    wait_until("the guarded budget to count it", lambda: _pdb_settled(rest, "guarded", 1))
    out["eviction of a Ready pod, AlwaysAllow, no disruption allowed"] = status_of(
        *rest.call("POST", PODS + "/guarded/eviction", _eviction("guarded")))
    # IfHealthyBudget (the default) lets a not-Ready pod go while the budget is satisfied, without using a disruption
    for name, annotations in (("calm-a", None), ("calm-b", None), ("calm-c", NEVER_READY)):
        rest.call("POST", PODS, _pod(name, {"app": "calm"}, annotations=annotations, node=nodes[1 % len(nodes)]))
    wait_until("the calm pods to run", lambda: _ready(rest, "calm-a") and _ready(rest, "calm-b")
               and rest.call("GET", PODS + "/calm-c")[1].get("status", {}).get("phase") == "Running")
    rest.call("POST", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets" % NS, _pdb("calm", {"app": "calm"}, 2))
    wait_until("the calm budget to count two healthy pods", lambda: _pdb_settled(rest, "calm", 2))
    out["eviction of a not-Ready pod, IfHealthyBudget, budget satisfied"] = {
        "code": rest.call("POST", PODS + "/calm-c/eviction", _eviction("calm-c"))[0]}

    # selectors
    on_first = rest.get(PODS, fieldSelector="spec.nodeName=" + nodes[0])["items"]
    out["field selector spec.nodeName"] = {"pods": sorted(p["metadata"]["name"] for p in on_first)}
    out["field selector on an unsupported field"] = status_of(*rest.call("GET", PODS, params={"fieldSelector": "spec.color=blue"}))
    out["label selector that does not parse"] = status_of(*rest.call("GET", PODS, params={"labelSelector": "app in (a"}))

    # taints: the three patch types on spec.taints
    node = nodes[2 % len(nodes)]
    path = "/api/v1/nodes/" + node
    base = list(rest.get(path)["spec"].get("taints") or [])
    rest.call("PATCH", path, {"spec": {"taints": base + [{"key": "probe/a", "effect": "NoSchedule"}]}},
              content_type="application/strategic-merge-patch+json")
    code, patched = rest.call("PATCH", path, {"spec": {"taints": [{"key": "probe/b", "value": "1", "effect": "PreferNoSchedule"}]}},
                              content_type="application/strategic-merge-patch+json")
    out["strategic merge patch of spec.taints"] = {"code": code, "taints": sorted(t["key"] for t in patched["spec"].get("taints") or [])}
    # (NoSchedule, not NoExecute: the taint eviction controllers would race the next patch, each at its own pace)
    code, patched = rest.call("PATCH", path, [{"op": "add", "path": "/spec/taints/-", "value": {"key": "probe/c", "effect": "NoSchedule"}}],
                              content_type="application/json-patch+json")
    out["JSON patch add to spec.taints"] = {"code": code, "taints": sorted(t["key"] for t in patched["spec"].get("taints") or [])}
    code, patched = rest.call("PATCH", path, {"spec": {"taints": None}}, content_type="application/merge-patch+json")
    out["merge patch removing spec.taints"] = {"code": code, "taints": sorted(t["key"] for t in patched["spec"].get("taints") or [])}
    code, patched = rest.call("PATCH", path, {"spec": {"taints": [{"key": "probe/d", "effect": "Sideways"}]}},
                              content_type="application/merge-patch+json")
    out["a taint with an unknown effect"] = status_of(code, patched)

    # a pod whose readiness takes sandbox.nodeops.io/ready-seconds: 20 simulated seconds after it started
    out["a pod with ready-seconds 20"] = _ready_seconds(handle, rest, nodes[1 % len(nodes)])

    # a StatefulSet of three: its pods come up one by one, each once the one before is Ready, and a deleted pod comes
    # back under its own name
    out.update(_statefulset(handle, rest, nodes[0]))

    # watch: a change is seen at a newer resourceVersion; a version long gone is answered 410
    listing = rest.get(PODS)
    since = listing["metadata"]["resourceVersion"]
    rest.call("PATCH", PODS + "/one", {"metadata": {"labels": {"watched": "yes"}}}, content_type="application/merge-patch+json")
    seen = []
    # the first event for the patched pod: on the real control plane another pod's status may change meanwhile
    for etype, obj in rest.watch(PODS, since, timeout_seconds=3):
        if etype != "BOOKMARK" and obj["metadata"]["name"] == "one":
            seen.append((etype, obj["metadata"]["name"], int(obj["metadata"]["resourceVersion"]) > int(since)))
            break
    out["watch from a resourceVersion"] = {"first event": list(seen[0]) if seen else None}
    out["watch from resourceVersion 1"] = _watch_expired(rest)

    # graceful deletion by a client, then a Node deleted under a running pod
    code, body = rest.call("DELETE", PODS + "/one", {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 30})
    out["DELETE with a grace period"] = {"code": code, "deletionGracePeriodSeconds": body.get("metadata", {}).get("deletionGracePeriodSeconds"),
                                         "still there": rest.call("GET", PODS + "/one")[0] == 200}
    wait_until("the deleted pod to go", lambda: rest.call("GET", PODS + "/one")[0] == 404, timeout=120)
    victim = nodes[-1]
    rest.call("POST", PODS, _pod("orphan", {"app": "orphan"}, node=victim))
    wait_until("the orphan-to-be to be Ready", lambda: _ready(rest, "orphan"))
    rest.call("DELETE", "/api/v1/nodes/" + victim)
    started = time.monotonic()
    wait_until("the pods of the deleted node to be removed", lambda: rest.call("GET", PODS + "/orphan")[0] == 404, timeout=150)
    out["pods of a deleted Node"] = {"removed": True, "within 150 s": time.monotonic() - started < 150}

    report = handle.report(client_prefix="fidelity-probe")
    out["invariant report"] = {k: report[k] for k in REPORT_FIGURES}
    out["invariant report"]["evictions"] = report["evictions"]["total"]
    out["invariant report: the pods"] = {
        k: sorted(d["pod"] for d in report[k + "_details"]) for k in ("pdb_violation", "killed_without_eviction", "deleted_without_eviction")}
    return out


def _ready_seconds(handle, rest, node, seconds=20):
    """A pod annotated ``sandbox.nodeops.io/ready-seconds`` beside one that is not, both started at once on ``node``:
    the annotated one is not Ready before ``seconds`` simulated seconds from its creation (a bound the machine's pace
    cannot break: a slower machine only makes it later), and after the other one."""
    rest.call("POST", PODS, _pod("slow", {"app": "slow"}, annotations={"sandbox.nodeops.io/ready-seconds": str(seconds)},
                                 node=node, grace=0))
    rest.call("POST", PODS, _pod("quick", {"app": "quick"}, node=node, grace=0))
    wait_until("the slow pod to be Ready", lambda: _ready(rest, "slow") and _ready(rest, "quick"))
    events = handle.events()

    def at(kind, name):
        return min(e["t"] for e in events if e["kind"] == kind and e.get("pod") == "%s/%s" % (NS, name))
    return {"not Ready before %d simulated s" % seconds: at("pod.ready", "slow") - at("pod.created", "slow") >= seconds,
            "Ready after the pod without the annotation": at("pod.ready", "slow") > at("pod.ready", "quick")}


def _statefulset(handle, rest, node, replicas=3, seconds=5):
    """On ``node``: not the one deleted later, so that which of its pods that kills is not left to either scheduler."""
    path = "/apis/apps/v1/namespaces/%s/statefulsets" % NS
    labels = {"app": "ordered"}
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "ordered", "namespace": NS},
            "spec": {"replicas": replicas, "serviceName": "ordered", "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels, "annotations": {"sandbox.nodeops.io/ready-seconds": str(seconds)}},
                                  "spec": {"terminationGracePeriodSeconds": 0, "nodeSelector": {"kubernetes.io/hostname": node},
                                           "containers": [{"name": "main", "image": "registry.example/probe:1"}]}}}}
    code, created = rest.call("POST", path, body)
    out = {"a StatefulSet of 3: created": {
        "code": code, "podManagementPolicy": (created.get("spec") or {}).get("podManagementPolicy"),
        "updateStrategy": (created.get("spec") or {}).get("updateStrategy")}}
    names = ["ordered-%d" % i for i in range(replicas)]

    def ready_replicas():
        return (rest.get(path + "/ordered").get("status") or {}).get("readyReplicas") == replicas
    wait_until("the StatefulSet's pods to be Ready", lambda: ready_replicas() and all(_ready(rest, n) for n in names),
               timeout=180)
    events = [e for e in handle.events() if e.get("owner") == "StatefulSet/%s/ordered" % NS]

    def first(kind, name):
        return min((e["t"] for e in events if e["kind"] == kind and e.get("pod") == "%s/%s" % (NS, name)), default=None)
    order = sorted(names, key=lambda n: first("pod.created", n))
    pod = rest.get(PODS + "/" + names[1])
    status = rest.get(path + "/ordered").get("status") or {}
    out["a StatefulSet of 3 comes up in order"] = {
        "created in ordinal order": order == names,
        "each created once the one before is Ready": all(first("pod.created", b) >= first("pod.ready", a)
                                                         for a, b in zip(names, names[1:])),
        "owner": [(r.get("kind"), r.get("name"), r.get("controller")) for r in pod["metadata"].get("ownerReferences") or []],
        "pod labels": sorted(pod["metadata"].get("labels") or {}),
        "hostname, subdomain": [pod["spec"].get("hostname"), pod["spec"].get("subdomain")],
        "status": {k: status.get(k) for k in ("replicas", "readyReplicas", "availableReplicas", "currentReplicas",
                                              "updatedReplicas")}}
    old_uid = pod["metadata"]["uid"]
    rest.call("DELETE", PODS + "/" + names[1])

    def back():
        code, again = rest.call("GET", PODS + "/" + names[1])
        return code == 200 and again["metadata"]["uid"] != old_uid and _ready(rest, names[1])
    wait_until("the deleted StatefulSet pod to come back Ready", back, timeout=120)
    pods = sorted(p["metadata"]["name"] for p in rest.get(PODS, labelSelector="app=ordered")["items"])
    out["a deleted StatefulSet pod comes back with its name"] = {"pods": pods, "new uid": True}
    return out


def _watch_expired(rest):
    """A watch from resourceVersion 1: on a young cluster nothing is compacted yet, so both replay history from it."""
    from sandbox.reference.rest import RestError  # pylint: disable=import-outside-toplevel
    replayed = 0
    try:
        for _event in rest.watch(PODS, "1", timeout_seconds=2):
            replayed += 1
    except RestError as exc:
        return {"error": exc.code}
    return {"error": None, "replayed": replayed > 0}


# ---- running and reporting --------------------------------------------------------------------------------------
def run(backends=("embedded", "reference")):
    results = {}
    for kube in backends:
        with tempfile.TemporaryDirectory(prefix="fidelity-%s-" % kube) as state:
            handle = SandboxHandle.start(state, nodes=3, azs=3, kube=kube, timeout=300)
            try:
                results[kube] = scenario(handle)
            finally:
                handle.stop()
    return results


def compare(results):
    rows = []
    embedded, reference = results["embedded"], results["reference"]
    for probe in embedded:
        same = embedded[probe] == reference.get(probe)
        rows.append({"probe": probe, "embedded": embedded[probe], "reference": reference.get(probe), "same": same,
                     "known": KNOWN_DIFFERENCES.get(probe)})
    return rows


def markdown(rows):
    lines = ["| probe | embedded | reference | same |", "|---|---|---|---|"]
    for row in rows:
        mark = "yes" if row["same"] else ("known: %s" % row["known"] if row["known"] else "**NO**")
        cells = (row["probe"], json.dumps(row["embedded"], sort_keys=True), json.dumps(row["reference"], sort_keys=True), mark)
        lines.append("| %s | `%s` | `%s` | %s |" % cells)
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", help="write the table as Markdown here")
    parser.add_argument("--json", help="write every observation as JSON here")
    args = parser.parse_args(argv)
    rows = compare(run())
    table = markdown(rows)
    print(table)
    for path, text in ((args.out, table), (args.json, json.dumps(rows, indent=2, sort_keys=True) + "\n")):
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
    unexplained = [r["probe"] for r in rows if not r["same"] and not r["known"]]
    if unexplained:
        print("differences with no reason given: %s" % ", ".join(unexplained), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
