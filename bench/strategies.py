"""The strategies side by side on one group of 18 nodes: how long each takes and the instances it runs beyond the group.

For each strategy - ``surge`` at EKS's default (twice the AZs), ``surge`` at 100 % and ``terminate_first`` - a fresh
sandbox (``--nodes`` 18 over 3 AZs, the demo workload, the delays of ``_common.add_sandbox_arguments``) is rolled
through ``playbooks/upgrade.yml`` with ``rolling_update_max_unavailable: --max-unavailable`` (1). Per run:

- ``planned``: what the plan priced for the strategy it ran (its ``surge_choices`` row): ``eta_seconds``,
  ``extra_instance_minutes`` and ``fewest_ready``;
- ``measured``: ``window_sim_seconds`` (the first to the last mutating request of the collection),
  ``extra_instance_minutes`` (the group's instances above its size before the rollout, each from its launch to its
  termination, integrated over the window), ``max_instances`` and ``fewest_ready`` (the invariant report's
  ``min_ready_schedulable_nodes``), with the rest of ``_common.invariants``.

Simulated seconds throughout. One JSON line per run on stdout and a table of them on stderr. Run from the repository
root: ``.venv/bin/python -m bench.strategies [--nodes 18] [--max-unavailable 1] [--speed 20] [--only terminate_first]``.
"""

import argparse
import json
import sys

from bench import _common

STRATEGIES = (
    ("surge (EKS default)", {}),
    ("surge 100%", {"rolling_update_max_surge": "100%"}),
    ("terminate_first", {"rolling_update_strategy": "terminate_first"}),
)


def extra_instance_minutes(events, group, size, start, end):
    """Instance-minutes of the group's instances above ``size`` from ``start`` to ``end`` (sim seconds), an instance
    counted from its launch to its termination (``instance.launched``, ``instance.terminated``), and the most the
    group had at once in that span."""
    alive, total, most, last = 0, 0.0, 0, start
    for event in events:
        if event.get("group") != group or event["kind"] not in ("instance.launched", "instance.terminated"):
            continue
        t = event["t"]
        if t > end:
            break
        if t > start:
            total += max(0, alive - size) * (t - last)
            last = t
        alive += 1 if event["kind"] == "instance.launched" else -1
        if t >= start:
            most = max(most, alive)
    total += max(0, alive - size) * max(0.0, end - last)
    return round(total / 60.0, 1), max(most, alive)


def one(args, label, role_vars):
    delays = _common.delays_of(args)
    with _common.Run(args.nodes, args.azs, args.speed, delays, args.max_unavailable, role_vars,
                     workload=_common.DEMO_WORKLOAD, kube=args.kube) as run:
        run.start()
        run.rollout()
        result = run.group_result()
        first, last = _common.rollout_window(run.events)
        extra, most = extra_instance_minutes(run.events, result["name"], args.nodes, first, last)
        configured = next(choice for choice in result["plan"]["surge_choices"] if "configured" in choice["choices"])
        figures = _common.invariants(run.report)
        return {"strategy": label, "role_vars": role_vars, "nodes": args.nodes, "max_unavailable": args.max_unavailable,
                "status": result["status"], "surge": configured["surge"],
                "planned": {key: configured.get(key) for key in ("eta_seconds", "extra_instance_minutes", "fewest_ready")},
                "measured": {"window_sim_seconds": run.figures["window_sim_seconds"], "extra_instance_minutes": extra,
                             "max_instances": most, "fewest_ready": min(figures["min_ready_schedulable_nodes"].values())},
                "invariants": figures, "wall_seconds": run.figures["wall_seconds"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _common.add_sandbox_arguments(parser, speed=20.0, nodes=18)
    parser.add_argument("--max-unavailable", type=int, default=1)
    parser.add_argument("--only", choices=[label for label, _vars in STRATEGIES], action="append",
                        help="run only this strategy (repeatable)")
    args = parser.parse_args(argv)
    rows = []
    for label, role_vars in STRATEGIES:
        if args.only and label not in args.only:
            continue
        figures = one(args, label, role_vars)
        print(json.dumps(figures, sort_keys=True), flush=True)
        rows.append(figures)
    headers = ("strategy", "surge", "planned s", "measured s", "planned extra inst-min", "measured extra inst-min",
               "max instances", "fewest Ready planned", "fewest Ready measured")
    table = [[row["strategy"], row["surge"], row["planned"]["eta_seconds"], row["measured"]["window_sim_seconds"],
              row["planned"]["extra_instance_minutes"], row["measured"]["extra_instance_minutes"],
              row["measured"]["max_instances"], row["planned"]["fewest_ready"], row["measured"]["fewest_ready"]]
             for row in rows]
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *table)]
    for line in [headers] + table:
        sys.stderr.write("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
