"""Stop a rollout anywhere, end it, and count how often nothing of it is left: ``clean K/N``.

Each trial starts a fresh sandbox (3 nodes in 3 AZs, the demo workload: Deployments under PodDisruptionBudgets), runs
``playbooks/upgrade.yml`` with max_surge 1 and stops it once the collection has made its k-th request, k drawn at
random (seeded) from a clean run's request count: by a pause request (the group tagged ``nodeops.rollout/pause=true``)
or by SIGKILL of the whole process tree (its Lease deleted). Then ``playbooks/cancel.yml`` or
``playbooks/rollback.yml`` ends it. The trials cycle through the four pairs (pause or kill, cancel or rollback). A
trial is clean when sandbox/drive/stop_then_end.py's trial finds nothing left: the original sizes, no state tag,
suspended process, mark on a node or lock, every Deployment whole, the invariant report clean over both runs (no
budget violated, no pod ended without eviction, the floor held), and after a rollback every instance on the version
the group launched before.

One JSON line per trial, then ``clean K/N``. Run from the repository root:
``.venv/bin/python -m bench.stop_then_end [--trials 8] [--seed 11]``.
"""

import argparse
import json
import os
import pathlib
import random
import sys
import tempfile
import time

from sandbox.drive.handle import SandboxHandle
from sandbox.drive.stop_then_end import ENDS, STOPS, trial

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_WORKLOAD = os.path.join(ROOT, "sandbox", "workloads", "demo.yaml")
# the collection's request count in a clean 3-node rollout with max_surge 1 (bench.kill_rerun measures it)
CLEAN_RUN_REQUESTS = 164


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    pairs = [(stop, end) for stop in STOPS for end in ENDS]
    clean = 0
    for number in range(args.trials):
        stop, end = pairs[number % len(pairs)]
        nth = rng.randint(1, CLEAN_RUN_REQUESTS)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="stop-then-end-") as directory:
            sandbox = SandboxHandle.start(os.path.join(directory, "sandbox"), nodes=3, azs=3, speed=20, workloads=[DEMO_WORKLOAD])
            try:
                outcome = trial(sandbox, pathlib.Path(directory), stop, end, nth)
            finally:
                sandbox.stop()
        clean += not outcome["problems"]
        print(json.dumps({"trial": number, "stop": stop, "end": end, "nth": nth, "stopped": outcome["stopped"],
                          "status": outcome["status"], "floor": outcome["floor"], "problems": outcome["problems"],
                          "seconds": round(time.monotonic() - started, 1)}), flush=True)
    print("clean %d/%d" % (clean, args.trials))
    return 0 if clean == args.trials else 1


if __name__ == "__main__":
    sys.exit(main())
