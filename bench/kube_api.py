"""Latency of the sandbox's Kubernetes API server at cluster scale: one JSON line of median/p95 milliseconds.

Builds a store of ``--nodes`` nodes and ``--pods`` pods (Deployments of ``--replicas`` pods, each with a
PodDisruptionBudget, spread over ``--namespaces`` namespaces) directly through the store, starts the HTTP
server and times, over one keep-alive connection, the round trips a rollout makes most:
get node, list the pods of one node (fieldSelector spec.nodeName), list all nodes (the first list, which
serializes every node, is reported apart as ``first_ms``; later ones reuse each unchanged node's JSON),
and an eviction (each of a different Deployment's pods, so each is granted: 201).

Run from the repository root: ``python -m bench.kube_api [--nodes 1000] [--pods 20000]``.
"""

import argparse
import http.client
import json
import statistics
import time

from sandbox.clock import Clock
from sandbox.events import EventLog
from sandbox.kube.server import KubeApiServer
from sandbox.kube.store import Store

READY = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2025-01-01T00:00:00Z",
          "lastTransitionTime": "2025-01-01T00:00:00Z", "reason": "KubeletReady", "message": "kubelet is posting ready status"}]


def node(i):
    name = "ip-10-0-%d-%d.eu-west-1.compute.internal" % (i // 250, i % 250)
    zone = "eu-west-1%s" % "abc"[i % 3]
    return {"metadata": {"name": name, "labels": {
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "m5.large", "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": "eu-west-1", "eks.amazonaws.com/nodegroup": "workers"}},
        "spec": {"providerID": "aws:///%s/i-%017x" % (zone, i)},
        "status": {"conditions": READY + [{"type": t, "status": "False", "reason": "Kubelet" + t}
                                          for t in ("MemoryPressure", "DiskPressure", "PIDPressure")],
                   "addresses": [{"type": "InternalIP", "address": "10.0.%d.%d" % (i // 250, i % 250)},
                                 {"type": "Hostname", "address": name}],
                   "capacity": {"cpu": "2", "memory": "7935472Ki", "pods": "29"},
                   "allocatable": {"cpu": "1930m", "memory": "7246320Ki", "pods": "29"},
                   "nodeInfo": {"kubeletVersion": "v1.30.6-eks", "containerRuntimeVersion": "containerd://1.7.22",
                                "osImage": "Amazon Linux 2023", "architecture": "amd64"}}}


def build(store, args):
    names = []
    for i in range(args.nodes):
        names.append(store.create("nodes", node(i))["metadata"]["name"])
    for n in range(args.namespaces):
        store.create("namespaces", {"metadata": {"name": "ns-%d" % n}})
    deployments = args.pods // args.replicas
    pod_index = 0
    victims = []
    for d in range(deployments):
        ns = "ns-%d" % (d % args.namespaces)
        app = "app-%d" % d
        labels = {"app": app}
        template = {"metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "main", "image": "registry.example/app:1.%d" % d,
                                             "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}]}}
        dep = store.create("deployments", {"metadata": {"name": app, "namespace": ns},
                                           "spec": {"replicas": args.replicas, "selector": {"matchLabels": labels},
                                                    "template": template}})
        rs = store.create("replicasets", {"metadata": {"name": app + "-5d8f", "namespace": ns, "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": app, "uid": dep["metadata"]["uid"], "controller": True}]},
            "spec": {"replicas": args.replicas, "selector": {"matchLabels": labels}, "template": template}})
        store.create("poddisruptionbudgets", {"metadata": {"name": app, "namespace": ns},
                                              "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}}})
        for r in range(args.replicas):
            pod = {"metadata": {"name": "%s-5d8f-%05d" % (app, r), "namespace": ns, "labels": dict(labels),
                                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"],
                                                     "uid": rs["metadata"]["uid"], "controller": True}]},
                   "spec": dict(template["spec"], nodeName=names[pod_index % len(names)], terminationGracePeriodSeconds=30),
                   "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                              "podIP": "100.64.%d.%d" % (pod_index // 250 % 250, pod_index % 250)}}
            store.create("pods", pod)
            if r == 0:
                victims.append((ns, pod["metadata"]["name"]))
            pod_index += 1
    return names, victims


def timed(conn, method, path, body=None, expect=200):
    headers = {"Accept": "application/json", "User-Agent": "bench/kube_api"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    start = time.perf_counter()
    conn.request(method, path, body=data, headers=headers)
    resp = conn.getresponse()
    payload = resp.read()
    elapsed = (time.perf_counter() - start) * 1000.0
    if resp.status != expect:
        raise SystemExit("%s %s -> %d %s" % (method, path, resp.status, payload[:300]))
    return elapsed, len(payload)


def summary(samples):
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"median_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2), "n": len(ordered)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--replicas", type=int, default=20, help="pods per Deployment (one PDB each)")
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args(argv)
    clock = Clock(speed=1.0)
    events = EventLog(clock)
    store = Store(clock, events)
    start = time.perf_counter()
    names, victims = build(store, args)
    build_s = time.perf_counter() - start
    api = KubeApiServer(store, clock, events).start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", api.port)
        result = {"nodes": args.nodes, "pods": args.pods, "namespaces": args.namespaces, "build_s": round(build_s, 2)}
        get_node = [timed(conn, "GET", "/api/v1/nodes/%s" % names[i % len(names)])[0] for i in range(args.repeat)]
        by_node = [timed(conn, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s" % names[i % len(names)])[0]
                   for i in range(args.repeat)]
        cold, size = timed(conn, "GET", "/api/v1/nodes")     # serializes every node once
        list_nodes = [timed(conn, "GET", "/api/v1/nodes")[0] for _round in range(max(10, args.repeat // 10))]
        evictions = []
        for ns, pod in victims[:args.repeat]:
            body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": ns}}
            evictions.append(timed(conn, "POST", "/api/v1/namespaces/%s/pods/%s/eviction" % (ns, pod), body, expect=201)[0])
        result.update({"get_node": summary(get_node), "list_pods_by_node": summary(by_node),
                       "list_all_nodes": dict(summary(list_nodes), bytes=size, first_ms=round(cold, 2)),
                       "eviction": summary(evictions)})
        print(json.dumps(result, sort_keys=True))
    finally:
        api.stop()
        events.close()


if __name__ == "__main__":
    main()
