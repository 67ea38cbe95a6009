"""Rollout time over its lower bound: one real rollout (playbooks/upgrade.yml) on the sandbox, one JSON line.

LB = boot + ceil(N/U) x (pod termination + pod start), in simulated seconds, from the sandbox's delays:
boot = instance boot + node registration + node Ready; pod termination = pod shutdown; pod start = pod start
+ pod Ready. It is the time of a rollout that boots every new node at once and then only moves pods.

The rollout time is read from the sandbox's event log (simulated seconds from the rollout's first to its last
mutating request, ``rollout_sim_seconds``); ``wall_seconds`` is the whole ansible-playbook run.

Units: sandbox delays are simulated seconds; the role's own waits (``--post-drain-delay``, ``--validate-interval``,
and the modules' polling: node_drain every 2 s, the Auto Scaling waits with a backoff capped at 10 s) are wall
seconds, i.e. ``speed`` simulated seconds each. At the default speed 1 both clocks agree. The JSON reports:

- ``ratio``: rollout_sim_seconds / LB;
- ``plan_eta_over_measured``: the plan's estimated duration (``node_group_info``'s ``eta_seconds``, told the
  sandbox's boot and an a-priori drain time, ``_common.estimate_inputs``) over the measured rollout;
- ``ratio_without_configured_waits``: the same with the post-drain delays and the validation intervals the
  inventory configures taken out (they are the operator's choice, not the role's cost);
- ``design_bound_sim_seconds`` and ``ratio_to_design_bound``: LB plus one boot for every wait for replacements the
  pipeline cannot avoid (``_common.replacement_waits``: the Ready nodes never go below N - U and the group never
  holds more than N + surge instances, so a wave drains at most surge + U nodes and the next one waits for its
  replacements), i.e. what this design cannot go below; what is left over it is the role's own cost (Ansible's
  per-task start, polling, API round trips).

Run from the repository root: ``.venv/bin/python -m bench.rollout_lower_bound [--nodes 30] [--max-unavailable 3]
[--speed 1] [--max-surge 100%] [--role-defaults]``.
"""

import argparse
import json

from bench import _common


def design_bound(delays, nodes, max_unavailable, surge):
    """LB and the design bound of a group of ``nodes`` rolled ``max_unavailable`` at a time with ``surge`` new instances
    (simulated seconds, from the sandbox's ``delays``): ``_common.lower_bound``'s figures, plus
    ``waits_for_replacements`` and ``design_bound_sim_seconds`` (LB + one boot per wait)."""
    bound = _common.lower_bound(delays, nodes, max_unavailable)
    waits = _common.replacement_waits(nodes, max_unavailable, surge)
    return dict(bound, waits_for_replacements=waits,
                design_bound_sim_seconds=bound["lower_bound_sim_seconds"] + waits * bound["boot_sim_seconds"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_sandbox_arguments(parser, speed=1.0, nodes=30)
    parser.add_argument("--max-unavailable", type=int, default=3, help="U: nodes per batch")
    parser.add_argument("--max-surge", default="", help="rolling_update_max_surge ('' = the role's default, EKS's rule)")
    parser.add_argument("--pods-per-node", type=int, default=2)
    parser.add_argument("--deployments", type=int, default=4)
    parser.add_argument("--pdb-max-unavailable", default="25%")
    parser.add_argument("--post-drain-delay", type=int, default=2, help="wall seconds (whole: the role's wait_for)")
    parser.add_argument("--validate-interval", default="2s", help="wall duration between validation passes")
    parser.add_argument("--validate-passes", type=int, default=2)
    parser.add_argument("--role-defaults", action="store_true",
                        help="leave the post-drain delay and the validation at the role's defaults (the options above are then "
                             "read from roles/rolling_update/defaults/main.yml, the delay from the plan)")
    args = parser.parse_args(argv)

    delays = _common.delays_of(args)
    if args.role_defaults:
        defaults = _common.role_defaults()
        args.validate_interval = defaults["rolling_update_validate_interval"]
        args.validate_passes = int(defaults["rolling_update_validate_passes"])
        role_vars = {}
    else:
        role_vars = {"rolling_update_post_drain_delay": args.post_drain_delay,
                     "rolling_update_validate_interval": args.validate_interval,
                     "rolling_update_validate_passes": args.validate_passes}
    if args.max_surge:
        role_vars["rolling_update_max_surge"] = args.max_surge
    # What the plan's estimate is told, known before the run: the sandbox's boot, and a drain of the first wave
    # (surge + U nodes) taking as many rounds of pod termination + start as its budgets need.
    estimate = _common.estimate_inputs(delays, args.nodes, args.max_unavailable, args.max_surge, args.azs,
                                       args.pods_per_node, args.deployments, args.pdb_max_unavailable, args.speed)
    role_vars["rolling_update_estimate_boot"] = max(1, round(estimate["boot_sim_seconds"] / args.speed))
    role_vars["rolling_update_estimate_drain"] = max(1, round(estimate["drain_sim_seconds"] / args.speed))
    workload = _common.spread_workload(args.nodes * args.pods_per_node, args.deployments, args.pdb_max_unavailable)
    with _common.Run(args.nodes, args.azs, args.speed, delays, args.max_unavailable, role_vars, workload=workload,
                     keep=args.keep, kube=args.kube) as run:
        run.start()
        run.rollout()
        group = run.group_result()
        figures = run.figures
        rollout = figures["window_sim_seconds"]
        surge = int(group["plan"]["surge"])
        bound = design_bound(delays, args.nodes, args.max_unavailable, surge)
        lb, waits = bound["lower_bound_sim_seconds"], bound["waits_for_replacements"]
        design = bound["design_bound_sim_seconds"]
        batches = group["batches"]   # one per step that drained
        if args.role_defaults:
            # the delay the role settled from the load balancers it read (none here: the sandbox routes no traffic)
            args.post_drain_delay = float(group["plan"]["timings"]["post_drain_delay"])
        interval = _common.duration_seconds(args.validate_interval)
        configured = (len(batches) * args.post_drain_delay + len(batches) * max(0, args.validate_passes - 1) * interval) * args.speed
        out = {
            "N": args.nodes, "U": args.max_unavailable, "azs": args.azs, "speed": args.speed, "kube": args.kube,
            "role_defaults": args.role_defaults,
            "surge": surge, "drain_steps": len(batches), "waits_for_replacements": waits,
            "pods": args.nodes * args.pods_per_node, "deployments": args.deployments,
            "pdb_max_unavailable": args.pdb_max_unavailable,
            "delays_sim_seconds": delays,
            "post_drain_delay_wall_seconds": args.post_drain_delay,
            "validate_interval": args.validate_interval, "validate_passes": args.validate_passes,
            "rollout_sim_seconds": rollout,
            "lower_bound_sim_seconds": lb,
            "lower_bound_parts_sim_seconds": {
                k: bound[k] for k in ("boot_sim_seconds", "pod_termination_sim_seconds", "pod_start_sim_seconds")},
            "ratio": round(rollout / lb, 2),
            "configured_waits_sim_seconds": round(configured, 1),
            "ratio_without_configured_waits": round((rollout - configured) / lb, 2),
            "plan_eta_sim_seconds": round(float(group["plan"]["eta_seconds"]) * args.speed, 1),
            "plan_eta_over_measured": round(float(group["plan"]["eta_seconds"]) * args.speed / rollout, 2),
            "plan_estimate_inputs_sim_seconds": estimate,
            "design_bound_sim_seconds": design,
            "ratio_to_design_bound": round(rollout / design, 2),
            "wall_seconds": figures["wall_seconds"],
            "wall_sim_seconds": figures["wall_sim_seconds"],
            "sandbox_start_wall_seconds": figures["sandbox_start_wall_seconds"],
            "phase_wall_seconds": group["phase_seconds"],
            "phase_sim_seconds": {k: round(float(v) * args.speed, 1) for k, v in group["phase_seconds"].items()},
            "batch_wall_seconds": {"mean": round(sum(float(b["seconds"]) for b in batches) / len(batches), 1),
                                   "max": max(float(b["seconds"]) for b in batches)},
            "drain_wall_seconds_mean": round(sum(float(b["drain_seconds"]) for b in batches) / len(batches), 2),
            "task_wall_seconds": _common.main_tasks(figures["task_wall_seconds"], floor=0.02 * figures["wall_seconds"]),
            "invariants": _common.invariants(run.report),
            "source": figures["source"], "load_average_1m": figures["load_average_1m"],
        }
        if args.keep:
            out["state_dir"] = run.state_dir
        print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
