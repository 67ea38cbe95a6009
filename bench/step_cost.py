"""The role's own cost per step: the wall time of the step loop minus the time its modules wait, one JSON line.

One real rollout (playbooks/upgrade.yml) on the sandbox, with no post-drain delay and one validation pass so that
the operator's configured waits add nothing. The figures come from the role's run record in its result
(``rolling_update_result``'s group ``steps``: each step's ``started_at``, ``waited_seconds`` - what
``rollout_step`` waited for - ``drain_seconds`` - what ``node_drain`` took - and ``ended_at``), all wall seconds:

- ``steps``: the steps recorded;
- ``loop_wall_seconds``: from the first step's start to the last step's end;
- ``module_wait_seconds``: the sum of every step's ``waited_seconds`` and ``drain_seconds``;
- ``role_seconds_per_step``: (loop_wall_seconds - module_wait_seconds) / steps, i.e. what Ansible and the role's
  tasks cost around the waits (task start, module start, API round trips that do not wait).

The collection measured is the one ``ANSIBLE_COLLECTIONS_PATH`` names (``nodeops/rollout`` under it), so that one
copy of this script measures any checkout: point the variable at that checkout's ``.build/collections``.
Without the variable, this working tree.

Run from the repository root: ``.venv/bin/python -m bench.step_cost [--nodes 30] [--max-unavailable 3] [--speed 1]``.
"""

import argparse
import json
import os
from datetime import datetime

from bench import _common


def collection_root():
    """The checkout the run measures: ``nodeops/rollout`` in ANSIBLE_COLLECTIONS_PATH's first entry, else this tree."""
    paths = [p for p in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if p]
    for path in paths:
        candidate = os.path.join(path, "ansible_collections", "nodeops", "rollout")
        if os.path.isdir(candidate):
            return os.path.realpath(candidate)
    return _common.ROOT


def _time(text):
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None


def step_cost(group):
    """The step loop's wall seconds, the modules' waits in it and the rest per step, from a group's result."""
    steps = [s for s in group.get("steps") or [] if _time(s.get("started_at")) and _time(s.get("ended_at"))]
    if not steps:
        return {"steps": 0, "loop_wall_seconds": None, "module_wait_seconds": None, "role_seconds_per_step": None}
    wall = (max(_time(s["ended_at"]) for s in steps) - min(_time(s["started_at"]) for s in steps)).total_seconds()
    waited = sum(float(s.get("waited_seconds") or 0) for s in steps)
    drained = sum(float(s.get("drain_seconds") or 0) for s in steps)
    return {"steps": len(steps), "loop_wall_seconds": round(wall, 1),
            "module_wait_seconds": round(waited + drained, 1),
            "module_wait_parts_seconds": {"rollout_step_waited": round(waited, 1), "node_drain": round(drained, 1)},
            "role_seconds_per_step": round((wall - waited - drained) / len(steps), 2)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_sandbox_arguments(parser, speed=1.0, nodes=30)
    parser.add_argument("--max-unavailable", type=int, default=3, help="U: nodes per batch")
    parser.add_argument("--pods-per-node", type=int, default=2)
    parser.add_argument("--deployments", type=int, default=4)
    args = parser.parse_args(argv)

    # the snapshot and the source version are taken of the measured checkout (_common reads its ROOT)
    _common.ROOT = collection_root()
    role_vars = {"rolling_update_post_drain_delay": 0, "rolling_update_validate_interval": "1s",
                 "rolling_update_validate_passes": 1}
    workload = _common.spread_workload(args.nodes * args.pods_per_node, args.deployments)
    with _common.Run(args.nodes, args.azs, args.speed, _common.delays_of(args), args.max_unavailable, role_vars,
                     workload=workload, keep=args.keep, kube=args.kube) as run:
        run.start()
        run.rollout()
        out = {"N": args.nodes, "U": args.max_unavailable, "speed": args.speed, "kube": args.kube,
               "wall_seconds": run.figures["wall_seconds"], "source": run.figures["source"],
               "load_average_1m": run.figures["load_average_1m"], "invariants": _common.invariants(run.report)}
        out.update(step_cost(run.group_result()))
        if args.keep:
            out["state_dir"] = run.state_dir
        print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
