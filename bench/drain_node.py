"""Drain one node holding 100 pods through nodeops.rollout.node_drain (real Ansible) on the sandbox.

Times are simulated seconds unless named ``_wall_``; node_drain's own waits (poll interval, retry backoff) are
given in simulated seconds and scaled to the wall clock, so the drain keeps the proportions it has on a cluster.

Prints one JSON line: the drain's time (wall, and simulated at the sandbox's speed) against the longest grace
period of the pods, the Kubernetes API requests node_drain made per pod moved, evictions refused by the
budget and retried, and the sandbox's safety figures. Never asserts timing.

Run from the repository root: ``python -m bench.drain_node [--pods 100] [--speed 10] [--pdb-max-unavailable 10%]``.

The workload: ``--pods`` pods on one node in two Deployments. Most stop within 2 s (terminationGracePeriodSeconds
30); ``--slow`` of them use their whole grace period of ``--longest-grace`` seconds, the lower bound of any drain.
A PodDisruptionBudget (maxUnavailable ``--pdb-max-unavailable``) covers the fast ones, so evictions also wait
for replacements to become Ready on the other nodes.
"""

import argparse
import json
import tempfile
import time

import yaml

from sandbox.drive.handle import SandboxHandle

SHUTDOWN = "sandbox.nodeops.io/shutdown-seconds"
CLIENT = "node_drain"


def _deployment(name, replicas, grace, shutdown=None):
    template = {"metadata": {"labels": {"app": name}},
                "spec": {"terminationGracePeriodSeconds": grace, "containers": [{"name": "c", "image": "registry.example/%s:1" % name}]}}
    if shutdown is not None:
        template["metadata"]["annotations"] = {SHUTDOWN: str(shutdown)}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "bench"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template}}


def _workload(pods, slow, longest_grace, max_unavailable):
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}},
               _deployment("fast", pods - slow, 30)]
    if slow:
        objects.append(_deployment("slow", slow, longest_grace, shutdown=longest_grace))
    if max_unavailable:
        objects.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "fast", "namespace": "bench"},
                        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": "fast"}}}})
    return objects


def _ready_on(core, node):
    pods = core.list_namespaced_pod("bench", field_selector="spec.nodeName=%s" % node).items
    return sum(1 for p in pods if not p.metadata.deletion_timestamp
               and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or []))


def _place(handle, node, objects, expected, timeout=300):
    """Create the workload with every other node cordoned, so that all its pods land on ``node``."""
    core = handle.core()
    others = [n.metadata.name for n in core.list_node().items if n.metadata.name != node]
    for name in others:
        core.patch_node(name, {"spec": {"unschedulable": True}})
    try:
        handle.apply(yaml.safe_dump_all(objects))
        deadline = time.monotonic() + timeout
        while _ready_on(core, node) < expected:
            if time.monotonic() > deadline:
                raise SystemExit("the workload did not become Ready on %s within %ds" % (node, timeout))
            time.sleep(0.5)
    finally:
        for name in others:
            core.patch_node(name, {"spec": {"unschedulable": None}})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pods", type=int, default=100)
    parser.add_argument("--slow", type=int, default=10, help="pods that use their whole grace period")
    parser.add_argument("--longest-grace", type=int, default=60, help="their grace period, simulated seconds")
    parser.add_argument("--pdb-max-unavailable", default="10%", help="budget of the fast pods ('' for none)")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--speed", type=float, default=10.0)
    parser.add_argument("--poll-interval", type=float, default=2.0,
                        help="node_drain's poll_interval in simulated seconds (its default); divided by --speed")
    parser.add_argument("--retry-max-delay", type=float, default=16.0,
                        help="node_drain's retry_max_delay in simulated seconds (its default); divided by --speed")
    parser.add_argument("--keep", action="store_true", help="leave the sandbox running (its state directory is printed)")
    args = parser.parse_args(argv)
    if not 0 <= args.slow <= args.pods:
        parser.error("--slow must be between 0 and --pods")

    state_dir = tempfile.mkdtemp(prefix="bench-drain-")
    handle = SandboxHandle.start(state_dir, nodes=args.nodes, azs=3, speed=args.speed)
    try:
        node = sorted(n.metadata.name for n in handle.core().list_node().items)[0]
        _place(handle, node, _workload(args.pods, args.slow, args.longest_grace, args.pdb_max_unavailable), args.pods)
        started = time.monotonic()
        # the module's waits run on the wall clock: scale them so that they keep their default proportions
        result = handle.run_module(CLIENT, nodes=[node], poll_interval=args.poll_interval / args.speed,
                                   retry_max_delay=args.retry_max_delay / args.speed)
        ansible_wall = time.monotonic() - started
        if result["rc"] != 0:
            raise SystemExit("node_drain failed: %s" % result.get("msg"))
        outcome = result["nodes"][node]
        requests = [e for e in handle.events() if e["kind"] == "k8s.request" and str(e.get("client")).endswith(" " + CLIENT)]
        by_verb = {}
        for event in requests:
            key = "%s %s" % (event.get("verb"), event.get("resource") or event.get("path"))
            by_verb[key] = by_verb.get(key, 0) + 1
        moved = len(outcome["evicted"]) + len(outcome["deleted"]) + len(outcome["restarted"])
        report = handle.report()
        drain_wall = result["seconds"]
        figures = {
            "pods": args.pods,
            "pods_moved": moved,
            "speed": args.speed,
            "longest_grace_s": args.longest_grace,
            "drain_wall_s": round(drain_wall, 3),
            "drain_simulated_s": round(drain_wall * args.speed, 1),
            "drain_over_longest_grace": round(drain_wall * args.speed / args.longest_grace, 2) if args.longest_grace else None,
            "ansible_wall_s": round(ansible_wall, 3),
            "k8s_requests": len(requests),
            "k8s_requests_per_pod": round(len(requests) / moved, 3) if moved else None,
            "k8s_requests_by_kind": dict(sorted(by_verb.items())),
            "eviction_retries": outcome["eviction_retries"],
            "poll_interval_s": args.poll_interval,
            "retry_max_delay_s": args.retry_max_delay,
            "pdb_max_unavailable": args.pdb_max_unavailable or None,
            "pdb_violations": report["pdb_violations"],
            "killed_without_eviction": report["killed_without_eviction"],
            "deleted_without_eviction": report["deleted_without_eviction"],
        }
        if args.keep:
            figures["state_dir"] = state_dir
        print(json.dumps(figures, sort_keys=True))
    finally:
        if not args.keep:
            handle.stop()


if __name__ == "__main__":
    main()
