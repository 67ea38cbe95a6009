"""The whole sandbox at cluster scale: one JSON line of figures.

Starts a sandbox as a user does (``python -m sandbox up --detach``, a process of its own, so the
benchmark's client and the sandbox do not share an interpreter) with ``--nodes`` instances over ``--azs``
Availability Zones and times it until it reports up (every node Ready, the kube-system DaemonSet on every
node). Then creates ``--deployments`` Deployments of ``--replicas`` pods, each with a PodDisruptionBudget
(maxUnavailable 1), through the Kubernetes API as ``kubectl apply`` would, and times until every pod is
Ready. Finally it times, with the official ``kubernetes`` client over one keep-alive connection, the
requests a rollout makes most:

- ``list_pods_by_node``: ``list_pod_for_all_namespaces(field_selector="spec.nodeName=<node>")``;
- ``eviction``: ``create_namespaced_pod_eviction`` of one pod of a different Deployment each time (201);
- ``list_nodes``: ``list_node()``;
- ``get_node``: ``read_node(<node>)``.

Each figure has ``median_ms``/``p95_ms`` for the client call as a module makes it (the client builds its
model objects from the JSON) and ``wire_median_ms``/``wire_p95_ms`` for the same request made with
``_preload_content=False`` (the server's answer and the transfer, without the client's deserialization).

Run from the repository root: ``python -m bench.sandbox_scale [--nodes 1000] [--deployments 200] [--replicas 100]``.
No timing is asserted; the figures are for reading.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT = "bench-sandbox-scale"


def summary(samples, wire):
    def p95(values):
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"median_ms": round(statistics.median(samples), 2), "p95_ms": round(p95(samples), 2),
            "wire_median_ms": round(statistics.median(wire), 2), "wire_p95_ms": round(p95(wire), 2),
            "n": len(samples)}


def timed(call, *args, **kwargs):
    start = time.perf_counter()
    result = call(*args, **kwargs)
    return (time.perf_counter() - start) * 1000.0, result


def timed_wire(call, *args, **kwargs):
    """Milliseconds until the whole response body has been read, without building client models."""
    start = time.perf_counter()
    resp = call(*args, _preload_content=False, **kwargs)
    body = resp.data
    elapsed = (time.perf_counter() - start) * 1000.0
    if resp.status not in (200, 201):
        raise SystemExit("unexpected HTTP %d: %s" % (resp.status, body[:300]))
    return elapsed, body


def create_workload(apps, policy, core, args):
    namespaces = ["bench-%d" % n for n in range(args.namespaces)]
    for ns in namespaces:
        core.create_namespace({"metadata": {"name": ns}})
    deployments = []
    for d in range(args.deployments):
        ns = namespaces[d % len(namespaces)]
        name = "app-%03d" % d
        labels = {"app": name}
        apps.create_namespaced_deployment(ns, {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": args.replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"terminationGracePeriodSeconds": 30, "containers": [{
                                      "name": "main", "image": "registry.example/app:1.%d" % d,
                                      "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}})
        policy.create_namespaced_pod_disruption_budget(ns, {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}}})
        deployments.append((ns, name))
    return deployments


def wait_all_ready(apps, core, want, timeout):
    """Until ``want`` workload pods are Ready: every Deployment reports its readyReplicas."""
    deadline = time.monotonic() + timeout
    ready = 0
    while time.monotonic() < deadline:
        resp = apps.list_deployment_for_all_namespaces(_preload_content=False)
        items = json.loads(resp.data)["items"]
        ready = sum((d.get("status") or {}).get("readyReplicas", 0) for d in items if d["metadata"]["namespace"].startswith("bench-"))
        if ready >= want:
            return
        time.sleep(0.5)
    del core
    raise SystemExit("%d of the %d pods were Ready after %.0f s" % (ready, want, timeout))


def sandbox_cli(*args, timeout=60.0):
    return subprocess.run([sys.executable, "-m", "sandbox"] + [str(a) for a in args], cwd=ROOT, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)


def running(core, name):
    return [p for p in core.list_namespaced_pod(name[0], label_selector="app=%s" % name[1]).items
            if p.metadata.deletion_timestamp is None and p.status.phase == "Running"]


def measure(core, client, deployments, n):
    """The four request kinds, ``n`` samples each, as (client ms, wire ms) lists."""
    nodes = sorted(node["metadata"]["name"] for node in json.loads(core.list_node(_preload_content=False).data)["items"])
    out = {"nodes": nodes}
    by_node, by_node_wire, sizes = [], [], []
    for i in range(n):
        selector = "spec.nodeName=%s" % nodes[(i * 7) % len(nodes)]
        ms, result = timed(core.list_pod_for_all_namespaces, field_selector=selector)
        by_node.append(ms)
        sizes.append(len(result.items))
        by_node_wire.append(timed_wire(core.list_pod_for_all_namespaces, field_selector=selector)[0])
    out["list_pods_by_node"] = dict(summary(by_node, by_node_wire), pods_per_node=round(statistics.mean(sizes), 1))
    evictions, evictions_wire = [], []
    for i in range(n):   # each eviction takes a pod of a Deployment not evicted from yet: each is granted (201)
        ns, _name = deployments[i]
        pod = running(core, deployments[i])[0].metadata.name
        body = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace=ns))
        ms, (_data, status, _headers) = timed(core.create_namespaced_pod_eviction_with_http_info, pod, ns, body)
        if status != 201:
            raise SystemExit("eviction answered %d, not 201" % status)
        evictions.append(ms)
        ns, _name = deployments[-1 - i]
        pod = running(core, deployments[-1 - i])[0].metadata.name
        body = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace=ns))
        evictions_wire.append(timed_wire(core.create_namespaced_pod_eviction, pod, ns, body)[0])
    out["eviction"] = summary(evictions, evictions_wire)
    list_nodes, list_nodes_wire, size = [], [], 0
    for _round in range(n):
        list_nodes.append(timed(core.list_node)[0])
        ms, body = timed_wire(core.list_node)
        list_nodes_wire.append(ms)
        size = len(body)
    out["list_nodes"] = dict(summary(list_nodes, list_nodes_wire), bytes=size)
    get_node = [timed(core.read_node, nodes[(i * 13) % len(nodes)])[0] for i in range(n)]
    get_node_wire = [timed_wire(core.read_node, nodes[(i * 13) % len(nodes)])[0] for i in range(n)]
    out["get_node"] = summary(get_node, get_node_wire)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--azs", type=int, default=3)
    parser.add_argument("--deployments", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--samples", type=int, default=60, help="samples per request kind (at least 50)")
    parser.add_argument("--speed", type=float, default=20.0, help="simulated seconds per wall second")
    parser.add_argument("--timeout", type=float, default=900.0, help="wall seconds allowed for each phase")
    parser.add_argument("--state-dir", help="default: a temporary directory")
    args = parser.parse_args(argv)
    if args.samples < 50:
        parser.error("--samples must be at least 50, got %d" % args.samples)
    if 2 * args.samples > args.deployments:
        parser.error("--deployments (%d) must be at least twice --samples (%d): each eviction takes a different Deployment's pod"
                     % (args.deployments, args.samples))

    from kubernetes import client, config  # pylint: disable=import-outside-toplevel

    with tempfile.TemporaryDirectory(prefix="sandbox-scale-") as tmp:
        state_dir = os.path.abspath(args.state_dir or tmp)
        started = time.monotonic()
        sandbox_cli("up", "--state-dir", state_dir, "--detach", "--nodes", args.nodes, "--azs", args.azs,
                    "--speed", args.speed, "--timeout", args.timeout, timeout=args.timeout + 30)
        up_s = time.monotonic() - started
        try:
            api_client = config.new_client_from_config(config_file=os.path.join(state_dir, "kubeconfig"))
            api_client.user_agent = CLIENT
            core, apps, policy = client.CoreV1Api(api_client), client.AppsV1Api(api_client), client.PolicyV1Api(api_client)
            started = time.monotonic()
            deployments = create_workload(apps, policy, core, args)
            create_s = time.monotonic() - started
            wait_all_ready(apps, core, args.deployments * args.replicas, args.timeout)
            pods_ready_s = time.monotonic() - started
            pods = len(json.loads(core.list_pod_for_all_namespaces(_preload_content=False).data)["items"])
            figures = measure(core, client, deployments, args.samples)
            ready_nodes = len(figures.pop("nodes"))
            api_client.close()
        finally:
            sandbox_cli("down", "--state-dir", state_dir)
    figures.update({"nodes": args.nodes, "ready_nodes": ready_nodes, "azs": args.azs, "pods": pods,
                    "workload_pods": args.deployments * args.replicas, "deployments": args.deployments, "speed": args.speed,
                    "up_s": round(up_s, 2), "create_s": round(create_s, 2), "pods_ready_s": round(pods_ready_s, 2)})
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
