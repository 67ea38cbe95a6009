"""Kill a rollout anywhere, rerun it, and count how often everything converges: ``converged K/N``.

Each trial starts a fresh sandbox (3 nodes in 3 AZs, the demo workload: Deployments under PodDisruptionBudgets),
runs ``playbooks/upgrade.yml`` with max_surge 1 (so the rollout pays the surge back, waits for replacements and
restores), and SIGKILLs the whole ansible-playbook process tree just before the k-th request of the collection,
k drawn at random (seeded) from a clean run's request count; every third trial arms a second random point for the
rerun, which kills it again when the rerun gets that far (``killed`` lists each kill made).
The sandbox holds that request until the kill (sandbox/hold.py), so the point is exact, not a race. Nobody deletes
the dead run's lock: the rerun starts once it has freed itself, one lock duration (``--lock``, 15 s) after the dead
run's last renewal, as an operator who just runs the job again would see it; the playbook then runs to its end, and the trial
converges when sandbox/drive/convergence.py's problems finds nothing: every instance on the target version, the
original sizes, no state tag, suspended process, taint, cordon, label, annotation or lock left, every Deployment at
full Ready replicas, and the invariant report clean over all the runs.

One JSON line per trial, then a summary line and ``converged K/N``. ``--fixed`` runs the named points of
sandbox/drive/kill.py instead (the test command runs those).

Run from the repository root: ``.venv/bin/python -m bench.kill_rerun [--trials 20] [--seed 7] [--lock 15] [--fixed]``.
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time

from sandbox.drive.convergence import problems, sizes
from sandbox.drive.handle import SandboxHandle
from sandbox.drive.kill import POINTS, ROLE_VARS, kill_and_rerun, random_point

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_WORKLOAD = os.path.join(ROOT, "sandbox", "workloads", "demo.yaml")


def sandbox_in(directory):
    return SandboxHandle.start(os.path.join(directory, "sandbox"), nodes=3, azs=3, speed=20, workloads=[DEMO_WORKLOAD])


def clean_run_requests():
    """The collection's request count in one uninterrupted rollout (which must converge too)."""
    with tempfile.TemporaryDirectory(prefix="kill-rerun-") as directory:
        sandbox = sandbox_in(directory)
        try:
            original = sizes(sandbox)
            rc, output = sandbox.run_role_playbook(directory, extra=ROLE_VARS)
            if rc != 0 or problems(sandbox, original, 2):
                raise SystemExit("the clean run did not converge:\n%s\n%s" % (problems(sandbox, original, 2), output[-3000:]))
            return sum(1 for e in sandbox.events() if e["kind"] in ("aws.request", "k8s.request")
                       and str(e.get("client") or "").startswith("nodeops.rollout/"))
        finally:
            sandbox.stop()


def trial(name, point, lock):
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kill-rerun-") as directory:
        sandbox = sandbox_in(directory)
        try:
            outcome = kill_and_rerun(sandbox, directory, point, extra=["rolling_update_lock_duration=%ds" % lock],
                                     wait_for_lock=True)
            held = [e for e in sandbox.events() if e["kind"] == "hold.held"]
        finally:
            sandbox.stop()
    converged = outcome["rc"] == 0 and not outcome["problems"]
    return {"trial": name, "kills": [{k: v for k, v in h.items() if k not in ("t", "wall", "kind")} for h in held],
            "killed": outcome["killed"], "rerun_rc": outcome["rc"], "problems": outcome["problems"],
            "converged": converged, "wall_seconds": round(time.monotonic() - started, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--lock", type=int, default=15, help="rolling_update_lock_duration in seconds (at least 15)")
    parser.add_argument("--fixed", action="store_true", help="the named points of sandbox/drive/kill.py")
    args = parser.parse_args(argv)
    if args.fixed:
        plans = list(POINTS.items())
        requests = None
    else:
        requests = clean_run_requests()
        rng = random.Random(args.seed)
        plans = []
        for number in range(1, args.trials + 1):
            point = random_point(rng, requests)
            if number % 3 == 0:
                point = point + random_point(rng, requests)   # killed again in the rerun
            plans.append(("random-%d" % number, point))
    results = []
    for name, point in plans:
        result = trial(name, point, args.lock)
        results.append(result)
        print(json.dumps(result, sort_keys=True), flush=True)
    converged = sum(1 for r in results if r["converged"])
    print(json.dumps({"trials": len(results), "converged": converged, "seed": None if args.fixed else args.seed,
                      "clean_run_requests": requests, "lock_seconds": args.lock, "kills": sum(sum(r["killed"]) for r in results),
                      "wall_seconds_mean": round(sum(r["wall_seconds"] for r in results) / max(1, len(results)), 1)},
                     sort_keys=True))
    print("converged %d/%d" % (converged, len(results)))
    return 0 if converged == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
