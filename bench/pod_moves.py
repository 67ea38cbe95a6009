"""Pod moves per pre-existing pod and seconds of downtime per Deployment, after a rollout of the demo workload.

For each ``--nodes`` value: a sandbox with the demo workload (sandbox/workloads/demo.yaml: web 3 replicas
behind minAvailable 2, api 4 behind maxUnavailable 1, a single-replica checkout-worker, a DaemonSet), one rollout
through ``playbooks/upgrade.yml``, and from the sandbox's event log and invariant report:

- ``moves_per_pre_existing_pod``: pods stopped during the rollout (evicted, deleted by a restart, killed; DaemonSet
  pods aside, they never move) over the pods that existed when it began. 1.0 is the goal: every pod moves once,
  straight to a new node; ``moved_again`` counts pods born during the rollout that had to move a second time;
- ``moves_by_how``: evicted / deleted (the single-replica restart: the old pod goes once its replacement is Ready)
  / killed (never, for a safe rollout);
- per Deployment: simulated seconds with no Ready pod and the fewest Ready pods during the rollout.

One JSON line per size. Run from the repository root: ``.venv/bin/python -m bench.pod_moves [--nodes 6 30]``.
"""

import argparse
import collections
import json
import os

from bench import _common

DAEMONSET = "DaemonSet/"


def pod_moves(events):
    """Moves of the rollout's window (first to last mutating request of the rollout) from the event log."""
    start, end = _common.rollout_window(events)
    alive, born_during = set(), set()
    moves = collections.Counter()
    how = collections.Counter()
    for e in events:
        owner = str(e.get("owner") or "")
        if owner.startswith(DAEMONSET):
            continue
        if e["kind"] == "pod.created":
            (alive if e["t"] < start else born_during).add(e["uid"])
        elif e["kind"] == "pod.deleted" and e["t"] < start:
            alive.discard(e["uid"])
        elif e["kind"] == "pod.terminating" and start <= e["t"] <= end + 1e-9:
            moves[e["uid"]] += 1
            how[e.get("how") or "?"] += 1
    pre_existing = len(alive)
    moved_pre = sum(1 for uid in moves if uid in alive)
    return {
        "pre_existing_pods": pre_existing,
        "moves": sum(moves.values()),
        "moves_per_pre_existing_pod": round(sum(moves.values()) / pre_existing, 3) if pre_existing else None,
        "pre_existing_pods_moved": moved_pre,
        "pre_existing_pods_not_moved": pre_existing - moved_pre,
        "moved_again": sum(1 for uid in moves if uid in born_during),
        "max_moves_per_pod": max(moves.values()) if moves else 0,
        "moves_by_how": dict(sorted(how.items())),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_sandbox_arguments(parser, speed=10.0)
    parser.add_argument("--nodes", type=int, nargs="+", default=[6, 30])
    parser.add_argument("--max-unavailable", default="10%", help="rolling_update_max_unavailable (10%%: 1 at 6 nodes, 3 at 30)")
    parser.add_argument("--workload", default=_common.DEMO_WORKLOAD)
    args = parser.parse_args(argv)
    role_vars = {"rolling_update_post_drain_delay": 1, "rolling_update_validate_interval": "1s",
                 "rolling_update_validate_passes": 2}
    for nodes in args.nodes:
        with _common.Run(nodes, args.azs, args.speed, _common.delays_of(args), args.max_unavailable, role_vars,
                         workload=os.path.abspath(args.workload), keep=args.keep) as run:
            run.start()
            run.rollout()
            report, group = run.report, run.group_result()
            out = {"N": nodes, "U": int(group["plan"]["batch_size"]), "azs": args.azs, "speed": args.speed,
                   "workload": os.path.relpath(os.path.abspath(args.workload), _common.ROOT)}
            out.update(pod_moves(run.events))
            out.update({
                "report_evictions": report["evictions"],
                "restarted": group["restarted"],
                "deployments": {name: {"zero_ready_sim_seconds": d["zero_ready_seconds"], "min_ready_pods": d["min_ready_pods"],
                                       "ready_pods_at_end": d["ready_pods_at_end"]}
                                for name, d in sorted(report["deployments"].items())},
                "wall_seconds": run.figures["wall_seconds"],
                "rollout_sim_seconds": run.figures["window_sim_seconds"],
                "invariants": _common.invariants(report),
                "source": run.figures["source"], "load_average_1m": run.figures["load_average_1m"],
            })
            if args.keep:
                out["state_dir"] = run.state_dir
            print(json.dumps(out, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
