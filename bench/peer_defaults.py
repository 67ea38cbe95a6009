"""This collection's rollout and eks-rolling-update 1.1.8, each at its defaults, on the same sandbox set-up.

Each scenario is run by each tool on a fresh sandbox (speed 1, 3 AZs, the delays of ``_common.add_sandbox_arguments``)
whose one group moves to the same launch template change: a new version of its template, copied from the group's
version with only the AMI changed to the one the sandbox's SSM parameter names.

- A: 6 nodes, the demo workload (sandbox/workloads/demo.yaml: 8 pods), both tools at their defaults;
- B: 18 nodes, the demo workload, both at their defaults;
- C: 18 nodes, 44 pods: the demo workload and a ``web`` Deployment of 36 replicas (namespace ``bench``) under a
  PodDisruptionBudget of maxUnavailable 25 %; ours with ``rolling_update_max_surge: 100%`` and
  ``rolling_update_post_drain_delay: 0``, eks-rolling-update at its defaults.

``--ours-vars K=V ...`` (repeatable) adds a run of ours per occurrence with those role variables over the scenario's
(``--ours-vars rolling_update_post_drain_delay=0``); ``--peer-env K=V ...`` does the same for eks-rolling-update's
environment settings.

Ours is ``playbooks/upgrade.yml`` through ``_common.Run`` (the group given by its ``ssm_parameter``: the role makes
the new template version and points the group at it). Ours at its defaults means the role's defaults: only
``rolling_update_max_unavailable`` is written in the inventory, at the value the role's defaults file has.

eks-rolling-update (the PyPI package ``eks-rolling-update==1.1.8``) is installed by this bench into a virtualenv of
its own, ``.build/peer-venv`` (``--peer-venv``), created on first use with the standard library's ``venv`` and pip,
which resolves its unpinned ``boto3``, ``kubernetes`` and ``python-dotenv`` there; ``boto3>=1.28`` is asked for with
it so that boto3 reads ``AWS_ENDPOINT_URL`` (the sandbox's ``aws.env``), with no other change to the peer's code or
libraries. It reads ``eksrollup/config.py`` at import: ``distutils`` must exist, so on Python 3.12 and later
``setuptools`` is installed with it. For each run the bench, as an operator would:

- creates the launch template version above and points the group at it (UpdateAutoScalingGroup), which is how
  eks-rolling-update finds outdated instances (an instance's template version differs from its group's);
- runs ``eks_rolling_update.py --cluster_name sandbox`` from the run's state directory (so no ``.env`` of the
  repository is read) with the sandbox's ``aws.env`` (``AWS_ENDPOINT_URL``, region, keys, ``KUBECONFIG``) and none of
  its settings in the environment unless ``--peer-env`` gives them: RUN_MODE 1 (scale the group up by the number of
  outdated instances, wait CLUSTER_HEALTH_WAIT 90 s, check that instances and nodes are there and Ready, cordon every
  outdated node, suspend Launch and ReplaceUnhealthy, then one node after the other: ``kubectl drain``, delete the
  Node, terminate the instance decrementing the group, poll until it is terminated every GLOBAL_HEALTH_WAIT 20 s;
  scale back and resume). The sandbox's group carries ``kubernetes.io/cluster/sandbox=owned`` already, the tag
  eks-rolling-update selects groups by, so nothing is tagged;
- puts ``kubectl`` on its PATH: it drains with ``kubectl drain --ignore-daemonsets --delete-local-data``, a flag
  kubectl has since removed (today's kubectl answers "unknown flag" and every drain fails), so the ``kubectl`` it
  finds is a two-line wrapper in the venv (``kubectl-shim/``) that passes ``--delete-emptydir-data``, the same flag
  under its current name, to the first ``kubectl`` on the bench's PATH. The bench needs that kubectl.

For every run, from the sandbox's invariant report and event log (simulated seconds; at speed 1 they are wall seconds):

- ``wall_seconds``: the tool's process (ansible-playbook, or eks_rolling_update.py), wall clock;
- ``window_sim_seconds``: the tool's first to last mutating request (ours: ``nodeops.rollout`` clients; the peer:
  its boto3, kubectl and kubernetes-client user agents);
- ``downtime_sim_seconds``: seconds during which at least one Deployment had no Ready pod (after it first had one),
  from the tool's first mutating request to the end of the settle wait below; ``zero_ready_sim_seconds`` has each
  Deployment's own (the report's ``zero_ready_seconds``);
- ``deployments_ready_at_end``: every Deployment had its replicas Ready when the tool's process ended (``short_at_end``
  names those that had not); the bench then waits up to ``--settle-timeout`` wall seconds for them
  (``ready_after_end_wall_seconds``) before it reads the report, so downtime the tool left behind is counted;
- ``floor``: the fewest Ready schedulable nodes of the group (``min_ready_schedulable_nodes``) and how many it had at
  the start; ``pdb_violations``; ``killed_without_eviction``; the rest of ``_common.invariants``;
- ours only: ``rollout_lower_bound.design_bound`` for the group at the surge the plan chose (LB and the design bound).

One JSON line per scenario on stdout (``runs``: one entry per tool run), and a table of all runs on stderr. Run from
the repository root: ``.venv/bin/python -m bench.peer_defaults [--scenario A|B|C|all] [--tool ours|peer|both]
[--ours-vars rolling_update_post_drain_delay=0]``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time
import venv

import yaml

from bench import _common, rollout_lower_bound
from sandbox.drive.handle import SandboxHandle

PEER_PACKAGE = "eks-rolling-update"
PEER_VERSION = "1.1.8"
PEER_SCRIPT = "eks_rolling_update.py"
PEER_VENV = os.path.join(_common.ROOT, ".build", "peer-venv")
# the user agents of eks-rolling-update's clients: boto3, kubectl and the kubernetes Python client
PEER_CLIENTS = ("Boto3/", "kubectl/", "OpenAPI-Generator/")
# the sandbox tags its groups kubernetes.io/cluster/sandbox=owned, the tag eks-rolling-update selects groups by
CLUSTER_NAME = "sandbox"
# eks-rolling-update 1.1.8's settings (eksrollup/config.py): left out of its environment, so it runs at its defaults
PEER_SETTINGS = ("K8S_AUTOSCALER_ENABLED", "K8S_AUTOSCALER_NAMESPACE", "K8S_AUTOSCALER_DEPLOYMENT",
                 "K8S_AUTOSCALER_REPLICAS", "K8S_CONTEXT", "K8S_PROXY_BYPASS", "ASG_DESIRED_STATE_TAG",
                 "ASG_ORIG_CAPACITY_TAG", "ASG_ORIG_MAX_CAPACITY_TAG", "ASG_USE_TERMINATION_POLICY",
                 "INSTANCE_WAIT_FOR_STOPPING", "CLUSTER_HEALTH_WAIT", "CLUSTER_HEALTH_RETRY", "GLOBAL_MAX_RETRY",
                 "GLOBAL_HEALTH_WAIT", "BETWEEN_NODES_WAIT", "RUN_MODE", "DRY_RUN", "EXCLUDE_NODE_LABEL_KEYS",
                 "EXTRA_DRAIN_ARGS", "MAX_ALLOWABLE_NODE_AGE", "TAINT_NODES", "BATCH_SIZE", "ENFORCED_DRAINING",
                 "ASG_NAMES")
ROLE_DEFAULTS = os.path.join(_common.ROOT, "roles", "rolling_update", "defaults", "main.yml")
SETUP_CLIENT = "bench-setup"
KUBECTL_SHIM = """#!/bin/sh
# kubectl for eks-rolling-update 1.1.8: its drain passes --delete-local-data, which kubectl now calls
# --delete-emptydir-data; every other argument goes through unchanged.
for arg; do
    shift
    case "$arg" in
        --delete-local-data) set -- "$@" --delete-emptydir-data ;;
        *) set -- "$@" "$arg" ;;
    esac
done
exec %s "$@"
"""

SCENARIOS = {
    "A": {"nodes": 6, "web_replicas": 0, "ours_vars": {}},
    "B": {"nodes": 18, "web_replicas": 0, "ours_vars": {}},
    "C": {"nodes": 18, "web_replicas": 36,
          "ours_vars": {"rolling_update_max_surge": "100%", "rolling_update_post_drain_delay": 0}},
}


# ---- pure helpers -------------------------------------------------------------------------------------------
def parse_assignments(items):
    """``["k=v", ...]`` -> ``{k: v}``, each value read as a YAML scalar (``0`` an int, ``100%`` a string)."""
    out = {}
    for item in items or ():
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise ValueError("expected KEY=VALUE, got %r" % (item,))
        out[key.strip()] = yaml.safe_load(value) if value.strip() else ""
    return out


def short_deployments(deployments):
    """``ns/name ready/wanted`` of each Deployment with fewer Ready replicas than it wants, from
    ``(namespace, name, ready, wanted)`` tuples."""
    return ["%s/%s %d/%d" % (ns, name, ready or 0, wanted or 0)
            for ns, name, ready, wanted in deployments if (ready or 0) < (wanted or 0)]


def downtime_any(events, start):
    """Simulated seconds from ``start`` to the log's last event during which at least one Deployment had no Ready pod,
    once it had had one: the union of what the invariant report counts per Deployment (``zero_ready_seconds``)."""
    events = sorted(events, key=lambda e: e["t"])
    ready = collections.defaultdict(set)
    seen, down = set(), set()
    since, total = None, 0.0
    for e in events:
        owner = str(e.get("owner") or "")
        if not owner.startswith("Deployment/") or not e["kind"].startswith("pod."):
            continue
        if e["kind"] == "pod.ready":
            ready[owner].add(e["uid"])
            seen.add(owner)
        elif e["kind"] in ("pod.unready", "pod.terminating", "pod.deleted"):
            ready[owner].discard(e["uid"])
        if owner not in seen:
            continue
        was_down = bool(down)
        if ready[owner]:
            down.discard(owner)
        else:
            down.add(owner)
        t = max(e["t"], start)
        if down and not was_down:
            since = t
        elif was_down and not down:
            total += max(0.0, t - since)
            since = None
    if since is not None:
        total += max(0.0, max(events[-1]["t"], start) - since)
    return round(total, 3)


def summary(report, events, start):
    """The figures of one run read from its invariant report (built with the tool's client prefix) and event log."""
    invariants = _common.invariants(report)
    floor = invariants["min_ready_schedulable_nodes"]
    at_start = invariants["ready_schedulable_nodes_at_start"]
    return {
        "downtime_sim_seconds": downtime_any(events, start) if start is not None else None,
        "zero_ready_sim_seconds": {name: d["zero_ready_seconds"] for name, d in report["deployments"].items()
                                   if d["zero_ready_seconds"]},
        "floor": {"min_ready_schedulable_nodes": min(floor.values()) if floor else None,
                  "ready_schedulable_nodes_at_start": min(at_start.values()) if at_start else None},
        "pdb_violations": report["pdb_violations"],
        "killed_without_eviction": report["killed_without_eviction"],
        "deleted_without_eviction": report["deleted_without_eviction"],
        "invariants": invariants,
    }


def table(rows):
    """A text table of the runs (dicts of ``main``'s runs with their scenario)."""
    head = ("scenario", "tool", "wall s", "window s", "downtime s", "ready at end", "floor", "PDB viol.", "killed",
            "LB / design s", "rc")
    lines = [head]
    for row in rows:
        floor = row.get("floor") or {}
        bound = row.get("bound")
        ready = row.get("deployments_ready_at_end")
        if ready is not None and not ready and row.get("ready_after_end_wall_seconds") is not None:
            ready = "no (+%ss)" % row["ready_after_end_wall_seconds"]
        lines.append((row["scenario"], row["label"], _cell(row.get("wall_seconds")),
                      _cell(row.get("window_sim_seconds")),
                      _cell(row.get("downtime_sim_seconds")), _cell(ready),
                      "%s/%s" % (_cell(floor.get("min_ready_schedulable_nodes")),
                                 _cell(floor.get("ready_schedulable_nodes_at_start"))),
                      _cell(row.get("pdb_violations")), _cell(row.get("killed_without_eviction")),
                      _bound_cell(bound),
                      _cell(row.get("rc"))))
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    out = ["  ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines]
    out.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(out)


def _bound_cell(bound):
    return "%s / %s" % (bound["lower_bound_sim_seconds"], bound["design_bound_sim_seconds"]) if bound else "-"


def _cell(value):
    if value is None:
        return "-"
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return str(value)


# ---- set-up -------------------------------------------------------------------------------------------------
def role_default(name):
    with open(ROLE_DEFAULTS, encoding="utf-8") as fh:
        return yaml.safe_load(fh)[name]


def workload(web_replicas):
    """The demo workload's objects, and with ``web_replicas`` a ``web`` Deployment of that many under 25 %."""
    with open(_common.DEMO_WORKLOAD, encoding="utf-8") as fh:
        objects = list(yaml.safe_load(fh)["items"])
    if web_replicas:
        objects += _common.spread_workload(web_replicas, 1, "25%", namespace="bench", names=["web"])
    return objects


def workload_pods(objects):
    return sum(o["spec"].get("replicas", 1) for o in objects if o["kind"] == "Deployment")


def peer_versions(python):
    code = ("import importlib.metadata as m, json; print(json.dumps({n: m.version(n) for n in "
            "('eks-rolling-update', 'boto3', 'botocore', 'kubernetes')}))")
    proc = subprocess.run([python, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def peer_venv(path):
    """The venv with eks-rolling-update 1.1.8 (made on first use) and its kubectl wrapper: (python, script, the
    wrapper's directory)."""
    python = os.path.join(path, "bin", "python")
    versions = peer_versions(python) if os.path.exists(python) else None
    if not versions or versions["eks-rolling-update"] != PEER_VERSION:
        print("installing %s==%s into %s" % (PEER_PACKAGE, PEER_VERSION, path), file=sys.stderr)
        venv.EnvBuilder(with_pip=True, clear=True).create(path)
        extra = ["setuptools"] if sys.version_info >= (3, 12) else []   # distutils, which eksrollup/config.py imports
        subprocess.run([python, "-m", "pip", "install", "--quiet", "%s==%s" % (PEER_PACKAGE, PEER_VERSION),
                        "boto3>=1.28"] + extra, check=True)
    kubectl = shutil.which("kubectl")
    if not kubectl:
        raise SystemExit("eks-rolling-update drains with kubectl: put kubectl on PATH")
    shim_dir = os.path.join(path, "kubectl-shim")
    os.makedirs(shim_dir, exist_ok=True)
    shim = os.path.join(shim_dir, "kubectl")
    with open(shim, "w", encoding="utf-8") as fh:
        fh.write(KUBECTL_SHIM % _sh_quote(os.path.realpath(kubectl)))
    os.chmod(shim, 0o755)  # nosec - a script of our own, in our build directory
    return python, os.path.join(path, "bin", PEER_SCRIPT), shim_dir


def _sh_quote(text):
    return "'%s'" % text.replace("'", "'\\''")


def point_group_at_new_image(handle):
    """The launch template change an operator makes before running eks-rolling-update: a new version of the group's
    template from its current version with only the AMI changed (the SSM parameter's), and the group pointed at it."""
    group_name = handle.state["groups"][0]["name"]
    ec2, autoscaling = handle.aws("ec2", SETUP_CLIENT), handle.aws("autoscaling", SETUP_CLIENT)
    image = handle.aws("ssm", SETUP_CLIENT).get_parameter(Name=handle.state["ssm_parameter"])["Parameter"]["Value"]
    group = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group_name])["AutoScalingGroups"][0]
    spec = group["LaunchTemplate"]
    version = ec2.create_launch_template_version(
        LaunchTemplateId=spec["LaunchTemplateId"], SourceVersion=str(spec["Version"]),
        VersionDescription="new image", LaunchTemplateData={"ImageId": image})["LaunchTemplateVersion"]["VersionNumber"]
    autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=group_name,
        LaunchTemplate={"LaunchTemplateId": spec["LaunchTemplateId"], "Version": str(version)})
    return {"launch_template_id": spec["LaunchTemplateId"], "from_version": spec["Version"], "version": version,
            "image_id": image}


def peer_env(handle, shim_dir, settings):
    env = {k: v for k, v in os.environ.items()
           if k not in PEER_SETTINGS and not k.startswith("AWS_") and k.lower() not in ("http_proxy", "https_proxy")}
    env.pop("KUBECONFIG", None)
    env.update(handle.env)      # AWS_ENDPOINT_URL, region, keys, KUBECONFIG: the sandbox's aws.env
    env.update({k: str(v) for k, v in settings.items()})
    env["PATH"] = shim_dir + os.pathsep + env.get("PATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


# ---- runs -----------------------------------------------------------------------------------------------------
def deployment_states(handle):
    apps = handle.apps()
    try:
        items = apps.list_deployment_for_all_namespaces().items
    finally:
        apps.api_client.close()
    return [(d.metadata.namespace, d.metadata.name, (d.status and d.status.ready_replicas) or 0, d.spec.replicas)
            for d in items]


def settle(handle, timeout):
    """Deployments short of Ready replicas now, and the wall seconds until none is (None: not within ``timeout``)."""
    started = time.monotonic()
    short_at_end = short_deployments(deployment_states(handle))
    if not short_at_end:
        return short_at_end, 0.0
    while time.monotonic() - started < timeout:
        time.sleep(1.0)
        if not short_deployments(deployment_states(handle)):
            return short_at_end, round(time.monotonic() - started, 1)
    return short_at_end, None


def run_ours(scenario, args, delays, role_vars, label):
    max_unavailable = role_default("rolling_update_max_unavailable")
    with _common.Run(scenario["nodes"], args.azs, args.speed, delays, max_unavailable, role_vars,
                     workload=workload(scenario["web_replicas"]), keep=args.keep, kube=args.kube) as run:
        run.start()
        run.rollout()
        handle = SandboxHandle(run.state_dir)
        short_at_end, after = settle(handle, args.settle_timeout)
        report = run.sandbox.report(_common.CLIENT_PREFIX)
        events = run.sandbox.events.events()
        group = run.group_result()
        surge = int(group["plan"]["surge"])
        bound = rollout_lower_bound.design_bound(delays, scenario["nodes"], max_unavailable, surge)
        window = run.figures["window_sim_seconds"]
        design = bound["design_bound_sim_seconds"]
        out = {"tool": "ours", "label": label, "settings": role_vars, "rc": 0,
               "wall_seconds": run.figures["wall_seconds"], "window_sim_seconds": window,
               "deployments_ready_at_end": not short_at_end, "short_at_end": short_at_end,
               "ready_after_end_wall_seconds": after,
               "bound": {"max_unavailable": max_unavailable, "surge": surge,
                         "lower_bound_sim_seconds": bound["lower_bound_sim_seconds"],
                         "design_bound_sim_seconds": bound["design_bound_sim_seconds"],
                         "waits_for_replacements": bound["waits_for_replacements"],
                         "ratio_to_design_bound": round(window / design, 2) if window else None},
               "sandbox_start_wall_seconds": run.figures["sandbox_start_wall_seconds"],
               "pods_at_start": run.figures["pods_at_start"],
               "load_average_1m": run.figures["load_average_1m"], "source": run.figures["source"]}
        out.update(summary(report, events, report["window"]["start"] if report["window"]["opened_by_client"] else None))
        if args.keep:
            out["state_dir"] = run.state_dir
        return out


def run_peer(scenario, args, delays, settings, label, tools):
    python, script, shim_dir = tools
    with _common.Run(scenario["nodes"], args.azs, args.speed, delays, 1, {},
                     workload=workload(scenario["web_replicas"]), keep=args.keep, kube=args.kube) as run:
        run.start()
        handle = SandboxHandle(run.state_dir)
        change = point_group_at_new_image(handle)
        env = peer_env(handle, shim_dir, settings)
        load_before = round(os.getloadavg()[0], 2)
        started = time.monotonic()
        proc = subprocess.run([python, script, "--cluster_name", CLUSTER_NAME], cwd=run.state_dir, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=args.peer_timeout,
                              check=False)
        wall = round(time.monotonic() - started, 1)
        load_after = round(os.getloadavg()[0], 2)
        with open(os.path.join(run.state_dir, "peer.log"), "w", encoding="utf-8") as fh:
            fh.write(proc.stdout)
        short_at_end, after = settle(handle, args.settle_timeout)
        events = run.sandbox.events.events()
        report = run.sandbox.report(PEER_CLIENTS[0])   # its first mutating request is an Auto Scaling one
        first, last = _common.rollout_window(events, PEER_CLIENTS)
        out = {"tool": "peer", "label": label, "settings": settings, "rc": proc.returncode,
               "wall_seconds": wall, "window_sim_seconds": round(last - first, 1) if first is not None else None,
               "deployments_ready_at_end": not short_at_end, "short_at_end": short_at_end,
               "ready_after_end_wall_seconds": after, "bound": None, "launch_template_change": change,
               "sandbox_start_wall_seconds": run.figures["sandbox_start_wall_seconds"],
               "pods_at_start": run.figures["pods_at_start"],
               "load_average_1m": {"before": load_before, "after": load_after},
               "versions": dict(peer_versions(python) or {}, kubectl=_kubectl_version()),
               "group_at_end": _group_at_end(handle)}
        out.update(summary(report, events, report["window"]["start"] if report["window"]["opened_by_client"] else None))
        if proc.returncode != 0:
            out["log_tail"] = proc.stdout.splitlines()[-15:]
        if args.keep:
            out["state_dir"] = run.state_dir
        return out


def _group_at_end(handle):
    """What eks-rolling-update left on the group: sizes, suspended processes, its tags, instances per template
    version."""
    name = handle.state["groups"][0]["name"]
    group = handle.aws("autoscaling", SETUP_CLIENT).describe_auto_scaling_groups(
        AutoScalingGroupNames=[name])["AutoScalingGroups"][0]
    versions = collections.Counter(str((i.get("LaunchTemplate") or {}).get("Version")) for i in group["Instances"])
    return {"min": group["MinSize"], "max": group["MaxSize"], "desired": group["DesiredCapacity"],
            "suspended": sorted(p["ProcessName"] for p in group.get("SuspendedProcesses") or []),
            "eks_rolling_update_tags": sorted(t["Key"] for t in group.get("Tags") or []
                                              if t["Key"].startswith("eks-rolling-update:")),
            "instances_by_template_version": dict(sorted(versions.items()))}


def _kubectl_version():
    kubectl = shutil.which("kubectl")
    if not kubectl:
        return None
    proc = subprocess.run([kubectl, "version", "--client", "-o", "json"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, check=False)
    try:
        return json.loads(proc.stdout)["clientVersion"]["gitVersion"]
    except (ValueError, KeyError):
        return None


def _label(base, extra):
    return " ".join([base] + ["%s=%s" % (k, v) for k, v in extra.items()])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_sandbox_arguments(parser, speed=1.0)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS) + ["all"], default="all")
    parser.add_argument("--tool", choices=("ours", "peer", "both"), default="both")
    parser.add_argument("--ours-vars", nargs="+", action="append", default=[], metavar="K=V",
                        help="one more run of ours with these role variables over the scenario's (repeatable)")
    parser.add_argument("--peer-env", nargs="+", action="append", default=[], metavar="K=V",
                        help="one more run of eks-rolling-update with these settings in its environment (repeatable)")
    parser.add_argument("--peer-venv", default=PEER_VENV, help="eks-rolling-update's virtualenv (made on first use)")
    parser.add_argument("--peer-timeout", type=float, default=3600.0, help="wall seconds eks-rolling-update may take")
    parser.add_argument("--settle-timeout", type=float, default=180.0,
                        help="wall seconds to wait after a tool ended for every Deployment to be Ready again")
    args = parser.parse_args(argv)
    ours_variants = [parse_assignments(items) for items in args.ours_vars]
    peer_variants = [parse_assignments(items) for items in args.peer_env]

    delays = _common.delays_of(args)
    tools = peer_venv(args.peer_venv) if args.tool in ("peer", "both") else None
    names = sorted(SCENARIOS) if args.scenario == "all" else [args.scenario]
    rows = []
    for name in names:
        scenario = SCENARIOS[name]
        runs = []
        if args.tool in ("ours", "both"):
            for extra in [{}] + ours_variants:
                role_vars = dict(scenario["ours_vars"], **extra)
                label = _label("nodeops.rollout", extra)
                print("scenario %s: %s" % (name, label), file=sys.stderr)
                runs.append(run_ours(scenario, args, delays, role_vars, label))
        if args.tool in ("peer", "both"):
            for extra in [{}] + peer_variants:
                label = _label("eks-rolling-update %s" % PEER_VERSION, extra)
                print("scenario %s: %s" % (name, label), file=sys.stderr)
                runs.append(run_peer(scenario, args, delays, extra, label, tools))
        objects = workload(scenario["web_replicas"])
        line = {"scenario": name, "nodes": scenario["nodes"], "azs": args.azs, "speed": args.speed, "kube": args.kube,
                "workload_pods": workload_pods(objects), "ours_vars": scenario["ours_vars"],
                "delays_sim_seconds": delays, "runs": runs}
        print(json.dumps(line, sort_keys=True), flush=True)
        rows += [dict(r, scenario=name) for r in runs]
    print(table(rows), file=sys.stderr)


if __name__ == "__main__":
    main()
