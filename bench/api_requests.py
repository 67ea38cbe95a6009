"""API requests per replaced node (Kubernetes and AWS) of a real rollout, at several group sizes: one JSON line each.

For each ``--nodes`` value: a sandbox of that many nodes over ``--azs`` AZs with ``--pods-per-node`` pods per node
(Deployments behind PodDisruptionBudgets), one rollout through ``playbooks/upgrade.yml`` with
``rolling_update_max_unavailable: --max-unavailable`` (10 % by default, so every size runs about ten batches),
and the figures of the sandbox's invariant report: requests per replaced node, and the rollout's requests per
module (``nodeops.rollout/<version> <module>`` clients) so that a module whose cost grows with the group shows.

The speed is high (requests do not depend on it; time does, and is reported for reference only).

Run from the repository root: ``.venv/bin/python -m bench.api_requests [--nodes 10 100 300] [--speed 20]``.
"""

import argparse
import json

from bench import _common


def measure(args, nodes):
    delays = _common.delays_of(args)
    role_vars = {"rolling_update_post_drain_delay": 0, "rolling_update_validate_interval": "1s",
                 "rolling_update_validate_passes": 1}
    workload = _common.spread_workload(nodes * args.pods_per_node, max(1, nodes * args.pods_per_node // 20), "25%")
    with _common.Run(nodes, args.azs, args.speed, delays, args.max_unavailable, role_vars, workload=workload,
                     keep=args.keep, kube=args.kube) as run:
        run.start()
        run.rollout()
        report, group = run.report, run.group_result()
        replaced = report["nodes_replaced"]
        per_module = _common.module_requests(run.events)
        totals = {side: sum(m.get(side, {}).get("total", 0) for m in per_module.values()) for side in ("kubernetes", "aws")}
        mutating = {side: sum(m.get(side, {}).get("mutating", 0) for m in per_module.values()) for side in ("kubernetes", "aws")}
        out = {
            "N": nodes, "U": int(group["plan"]["batch_size"]), "max_unavailable": args.max_unavailable,
            "surge": int(group["plan"]["surge"]), "batches": len(group["batches"]), "azs": args.azs,
            "pods": nodes * args.pods_per_node, "speed": args.speed, "kube": args.kube,
            "nodes_replaced": replaced,
            "rollout_requests_per_replaced_node": report["rollout_requests_per_replaced_node"],
            "mutating_requests_per_replaced_node": {side: round(v / replaced, 2) if replaced else None for side, v in mutating.items()},
            "rollout_requests": totals,
            "requests_per_replaced_node_by_module": {
                module: {side: round(v["total"] / replaced, 2) for side, v in sides.items()} if replaced else None
                for module, sides in sorted(per_module.items())},
            "evictions": report["evictions"]["total"],
            "wall_seconds": run.figures["wall_seconds"],
            "rollout_sim_seconds": run.figures["window_sim_seconds"],
            "sandbox_start_wall_seconds": run.figures["sandbox_start_wall_seconds"],
            "invariants": _common.invariants(report),
            "source": run.figures["source"], "load_average_1m": run.figures["load_average_1m"],
        }
        if args.keep:
            out["state_dir"] = run.state_dir
        return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_sandbox_arguments(parser, speed=20.0)
    parser.add_argument("--nodes", type=int, nargs="+", default=[10, 100, 300])
    parser.add_argument("--max-unavailable", default="10%", help="rolling_update_max_unavailable (a number or a percentage)")
    parser.add_argument("--pods-per-node", type=int, default=2)
    args = parser.parse_args(argv)
    for nodes in args.nodes:
        print(json.dumps(measure(args, nodes), sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
