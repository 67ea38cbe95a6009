"""What the rollout benchmarks share: a sandbox with chosen delays, a generated workload, one real rollout.

A run starts the sandbox in this process (``sandbox.cluster.Sandbox``, so its delays can be set), writes the
inventory a user would write, runs ``ansible-playbook playbooks/upgrade.yml`` (the real role, through the
harness's environment) with Ansible's junit callback on, and gathers:

- ``wall_seconds``: the ansible-playbook process, wall clock;
- ``window_sim_seconds``: simulated seconds from the rollout's first to its last mutating request
  (``nodeops.rollout`` clients) in the sandbox's event log;
- the role's ``rolling_update_result`` (its ``seconds`` are wall seconds: the role reads the real clock);
- the sandbox's invariant report;
- per task kind, the wall seconds Ansible spent (junit callback; batch numbers and counts folded away).

Units: the sandbox's delays are simulated seconds and run ``speed`` times faster than the wall clock; the
role's own waits (post-drain delay, validation interval, the modules' polling) are wall seconds. A wall second
of the role is ``speed`` simulated seconds, so ``wall * speed`` is the rollout in simulated seconds.
"""

import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET  # nosec - reads the junit files Ansible just wrote

from sandbox.cluster import Sandbox
from sandbox.drive.handle import SandboxHandle, install_collection_loader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_WORKLOAD = os.path.join(ROOT, "sandbox", "workloads", "demo.yaml")
CLIENT_PREFIX = "nodeops.rollout"
COLLECTION_PARTS = ("galaxy.yml", "meta", "plugins", "roles", "playbooks")
DELAY_NAMES = ("boot_seconds", "node_register_seconds", "node_ready_seconds",
               "pod_start_seconds", "pod_ready_seconds", "pod_shutdown_seconds")


def add_sandbox_arguments(parser, speed, nodes=None):
    """The sandbox's size, speed and delays (simulated seconds) as command line options."""
    if nodes is not None:
        parser.add_argument("--nodes", type=int, default=nodes)
    parser.add_argument("--azs", type=int, default=3)
    parser.add_argument("--speed", type=float, default=speed, help="simulated seconds per wall second")
    parser.add_argument("--boot-seconds", type=float, default=40.0, help="instance pending -> running")
    parser.add_argument("--node-register-seconds", type=float, default=5.0, help="running -> Node object")
    parser.add_argument("--node-ready-seconds", type=float, default=10.0, help="Node registered -> Ready")
    parser.add_argument("--pod-start-seconds", type=float, default=3.0, help="pod bound -> Running")
    parser.add_argument("--pod-ready-seconds", type=float, default=2.0, help="Running -> Ready")
    parser.add_argument("--pod-shutdown-seconds", type=float, default=2.0, help="deleted -> gone")
    parser.add_argument("--keep", action="store_true", help="keep the state directory (event log, inventory, result)")
    parser.add_argument("--kube", choices=("embedded", "reference"), default="embedded",
                        help="the sandbox's Kubernetes backend: embedded, or reference (the real control plane)")


def delays_of(args):
    return {name: getattr(args, name) for name in DELAY_NAMES}


def lower_bound(delays, nodes, max_unavailable):
    """LB = boot + ceil(N/U) x (pod termination + pod start), simulated seconds, from the sandbox's delays."""
    boot = delays["boot_seconds"] + delays["node_register_seconds"] + delays["node_ready_seconds"]
    termination = delays["pod_shutdown_seconds"]
    start = delays["pod_start_seconds"] + delays["pod_ready_seconds"]
    batches = math.ceil(nodes / max_unavailable)
    return {"boot_sim_seconds": boot, "pod_termination_sim_seconds": termination, "pod_start_sim_seconds": start,
            "batches": batches, "lower_bound_sim_seconds": boot + batches * (termination + start)}


# ---- workload ----------------------------------------------------------------------------------------------
def spread_workload(pods, deployments, pdb_max_unavailable="25%", namespace="bench", cpu="50m", memory="64Mi",
                    names=None):
    """``pods`` pods in ``deployments`` Deployments of (nearly) equal size, each behind a PodDisruptionBudget; they are
    named ``names`` (one per Deployment) or ``app-<index>``.

    The scheduler spreads the replicas of one owner over the nodes, so every node holds about pods/nodes pods."""
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    base, extra = divmod(pods, deployments)
    for index in range(deployments):
        replicas = base + (1 if index < extra else 0)
        if replicas == 0:
            continue
        name = names[index] if names else "app-%d" % index
        labels = {"app": name}
        objects.append({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"terminationGracePeriodSeconds": 30,
                                           "containers": [{"name": "main", "image": "registry.example/%s:1" % name,
                                                           "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}}})
        if pdb_max_unavailable:
            objects.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": namespace},
                            "spec": {"maxUnavailable": pdb_max_unavailable, "selector": {"matchLabels": labels}}})
    return objects


def write_workload(state_dir, objects):
    import yaml  # pylint: disable=import-outside-toplevel
    path = os.path.join(state_dir, "workload.yaml")
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}, fh, sort_keys=False)
    return path


# ---- one rollout ---------------------------------------------------------------------------------------------
def _inventory(handle, max_unavailable, role_vars):
    host = {
        "ansible_python_interpreter": sys.executable,
        "rolling_update_aws": {"region": handle.state["region"], "endpoint_url": handle.state["aws_url"]},
        "rolling_update_k8s": {"kubeconfig": handle.state["kubeconfig"]},
        "rolling_update_node_groups": [{"name": handle.state["groups"][0]["name"],
                                        "ssm_parameter": handle.state["ssm_parameter"]}],
        "rolling_update_max_unavailable": max_unavailable,
        "rolling_update_report_file": os.path.join(handle.state_dir, "result.json"),
    }
    host.update(role_vars)
    path = os.path.join(handle.state_dir, "inventory.yml")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"clusters": {"hosts": {"sandbox": host}}}, fh, indent=2)  # JSON is YAML
    return path


def task_seconds(junit_dir):
    """Wall seconds per task kind from the junit files: batch numbers and counts folded to '#'."""
    totals = {}
    for path in glob.glob(os.path.join(junit_dir, "*.xml")):
        for case in ET.parse(path).getroot().iter("testcase"):  # nosec - our own file
            name = re.sub(r"^\[[^\]]*\]\s*", "", case.get("name") or "")
            name = re.sub(r"^.*rolling_update\s*:\s*", "", name)      # the play and the role
            name = re.sub(r"^(\w[\w ]*) \| [^|]+ \| ", r"\1 | ", name)  # the node group's name
            name = re.sub(r"\d+", "#", name)
            if case.find("skipped") is not None:
                continue
            entry = totals.setdefault(name, {"seconds": 0.0, "count": 0})
            entry["seconds"] += float(case.get("time") or 0.0)
            entry["count"] += 1
    return {k: {"seconds": round(v["seconds"], 2), "count": v["count"]}
            for k, v in sorted(totals.items(), key=lambda item: -item[1]["seconds"])}


def rollout_window(events, clients=(CLIENT_PREFIX,)):
    """Simulated first and last mutating request of the rollout's modules (of the clients whose names start with one
    of ``clients``)."""
    times = [e["t"] for e in events if e["kind"] in ("k8s.request", "aws.request") and e.get("mutating")
             and str(e.get("client") or "").startswith(tuple(clients))]
    return (min(times), max(times)) if times else (None, None)


def module_requests(events, since=None):
    """The rollout's API requests per module: {module: {kubernetes|aws: {total, mutating}}}.

    ``since`` (simulated seconds) drops earlier requests; the invariant report counts from the first mutating one."""
    if since is None:
        since = rollout_window(events)[0] or 0.0
    out = {}
    for e in events:
        if e["kind"] not in ("k8s.request", "aws.request") or e["t"] < since:
            continue
        client = str(e.get("client") or "")
        if not client.startswith(CLIENT_PREFIX):
            continue
        module = client.rsplit(" ", 1)[-1] if " " in client else client
        side = "kubernetes" if e["kind"] == "k8s.request" else "aws"
        entry = out.setdefault(module, {}).setdefault(side, {"total": 0, "mutating": 0})
        entry["total"] += 1
        entry["mutating"] += 1 if e.get("mutating") else 0
    return out


def invariants(report):
    return {
        "pdb_violations": report["pdb_violations"],
        "killed_without_eviction": report["killed_without_eviction"],
        "deleted_without_eviction": report["deleted_without_eviction"],
        "ready_schedulable_nodes_at_start": report["ready_schedulable_nodes_at_start"],
        "min_ready_schedulable_nodes": report["min_ready_schedulable_nodes"],
        "max_zero_ready_seconds": max([d["zero_ready_seconds"] for d in report["deployments"].values()] or [0.0]),
        "nodes_replaced": report["nodes_replaced"],
        "evictions_per_pre_existing_pod": report["evictions"]["per_pre_existing_pod"],
        "max_evictions_per_pod": report["evictions"]["max_evictions_per_pod"],
        "evicted_born_during_rollout": report["evictions"]["evicted_born_during_rollout"],
        "max_pending_seconds": report["max_pending_seconds"],
        "max_unschedulable_seconds": report["max_unschedulable_seconds"],
        "pods_unschedulable": report["pods_unschedulable"],
    }


def snapshot_collection(state_dir):
    """A copy of the collection as it is now, in a collections path of this run's own.

    Neither the harness's shared path (one per user, re-pointed by any other checkout that runs its tests) nor a
    link to the working tree (edited while a long rollout runs) would keep the role and modules one version for
    the whole run."""
    base = os.path.join(state_dir, "collections")
    target = os.path.join(base, "ansible_collections", "nodeops", "rollout")
    os.makedirs(target)
    for name in COLLECTION_PARTS:
        source = os.path.join(ROOT, name)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(target, name), ignore=shutil.ignore_patterns("__pycache__"))
        elif os.path.exists(source):
            shutil.copy2(source, os.path.join(target, name))
    return base


def source_version():
    """The commit of the working tree and whether it has uncommitted changes in the collection's parts."""
    def git(*args):
        proc = subprocess.run(["git"] + list(args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, check=False)
        return proc.stdout.strip() if proc.returncode == 0 else None
    commit = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--", *COLLECTION_PARTS)
    return {"commit": commit, "uncommitted_changes": bool(dirty)} if commit else None


class Run:
    """One sandbox and one rollout through the real role; ``figures`` holds what was measured."""

    def __init__(self, nodes, azs, speed, delays, max_unavailable, role_vars, workload=(), ready_timeout=None,
                 keep=False, playbook_timeout=7200, kube="embedded"):
        self.nodes, self.azs, self.speed, self.delays = nodes, azs, speed, dict(delays)
        self.max_unavailable, self.role_vars = max_unavailable, dict(role_vars)
        self.workload = workload
        self.ready_timeout = ready_timeout or max(180.0, nodes * 0.6)
        self.keep = keep
        self.kube = kube
        self.playbook_timeout = playbook_timeout
        self.state_dir = tempfile.mkdtemp(prefix="bench-rollout-")
        self.sandbox = None
        self.figures = {}
        self.result = self.report = None
        self.events = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.sandbox is not None:
            self.sandbox.stop()
        if not self.keep:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def start(self):
        paths = []
        if self.workload:
            if isinstance(self.workload, str):
                paths = [self.workload]
            else:
                paths = [write_workload(self.state_dir, list(self.workload))]
        started = time.monotonic()
        self.sandbox = Sandbox(self.state_dir, nodes=self.nodes, azs=self.azs, speed=self.speed, kube=self.kube, **self.delays)
        self.sandbox.start(workloads=paths, ready_timeout=self.ready_timeout)
        self.figures["sandbox_start_wall_seconds"] = round(time.monotonic() - started, 1)
        self.figures["pods_at_start"] = len(self.sandbox.pods())
        self.figures["kube"] = self.kube
        return self

    def rollout(self):
        handle = SandboxHandle(self.state_dir)
        inventory = _inventory(handle, self.max_unavailable, self.role_vars)
        junit_dir = os.path.join(self.state_dir, "junit")
        collections = snapshot_collection(self.state_dir)
        source = source_version()
        playbook = os.path.join(collections, "ansible_collections", "nodeops", "rollout", "playbooks", "upgrade.yml")
        env = {"ANSIBLE_COLLECTIONS_PATH": collections, "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.junit",
               "JUNIT_OUTPUT_DIR": junit_dir, "JUNIT_HIDE_TASK_ARGUMENTS": "true"}
        load_before = round(os.getloadavg()[0], 2)
        started = time.monotonic()
        rc, output = handle.run_playbook(playbook, inventory=inventory, env=env, timeout=self.playbook_timeout)
        wall = time.monotonic() - started
        with open(os.path.join(self.state_dir, "playbook.log"), "w", encoding="utf-8") as fh:
            fh.write(output)
        if rc != 0:
            tail = "\n".join(output.splitlines()[-40:])
            raise SystemExit("ansible-playbook failed (rc %d, state in %s):\n%s" % (rc, self.state_dir, tail))
        with open(os.path.join(self.state_dir, "result.json"), encoding="utf-8") as fh:
            result = json.load(fh)
        events = self.sandbox.events.events()
        first, last = rollout_window(events)
        self.result = result
        self.report = self.sandbox.report(CLIENT_PREFIX)
        self.events = events
        self.figures.update({
            "source": source,
            "load_average_1m": {"before": load_before, "after": round(os.getloadavg()[0], 2)},
            "wall_seconds": round(wall, 1),
            "wall_sim_seconds": round(wall * self.speed, 1),
            "window_sim_seconds": round(last - first, 1) if first is not None else None,
            "task_wall_seconds": task_seconds(junit_dir),
        })
        return self

    def group_result(self):
        return self.result["node_groups"][0]


def rollout_rules():
    """The product's own rules of a rollout's sizes and waves (plugins/module_utils/rollout/sizes.py, steps.py and
    goals.py), imported as Ansible imports them: the benches model a rollout with the functions that plan it, never a
    copy. ``(sizes, steps, waves)``, ``waves(nodes, max_unavailable, surge)`` the plan's waves of an upgrade without a
    canary."""
    install_collection_loader()
    # pylint: disable=import-outside-toplevel
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import goals, sizes, steps

    def waves(nodes, max_unavailable, surge):
        return goals.planned_waves(goals.goal_for(goals.REPLACE, {"canary": False}), nodes, max_unavailable, surge)
    return sizes, steps, waves


def replacement_waits(nodes, max_unavailable, surge):
    """How many times the rollout must wait for replacements to boot before it can drain again: what the pipeline
    (plugins/module_utils/rollout/steps.py) cannot go below.

    The Ready nodes never drop below nodes - max_unavailable and the group never holds more than nodes + surge
    instances, so a wave drains at most surge + max_unavailable nodes (what the surge still serving allows: the
    plan's ``planned_waves``, no canary), and the next wave waits for the replacements of the terminations that did not
    pay the surge back (``decrement_for``: only the last ones do)."""
    _sizes, steps, waves = rollout_rules()
    left, owed, waits = nodes, surge, 0
    for take in waves(nodes, max_unavailable, surge):
        paid = steps.decrement_for(take, left, owed)
        owed -= paid
        left -= take
        if left or take > paid:
            waits += 1
    return waits


def estimate_inputs(delays, nodes, max_unavailable, max_surge, azs, pods_per_node, deployments, pdb_max_unavailable, speed):
    """The boot and drain times a plan would be told for this bench, from the sandbox's delays alone (simulated s).

    A wave drains surge + U nodes (the first one, the largest); each Deployment has pods_per_node x wave / deployments
    pods on them, and its budget lets ``pdb_max_unavailable`` of its replicas go at a time: that many rounds of pod
    termination + pod start, each followed by the drain's next look at the budget (every 2 wall seconds)."""
    sizes, _steps, waves = rollout_rules()
    surge = sizes.surge_count(str(max_surge).strip() or None, azs, max_unavailable, nodes)
    wave = max(waves(nodes, max_unavailable, surge) or [0])
    replicas = nodes * pods_per_node / deployments
    percent = str(pdb_max_unavailable)
    allowed = max(1, math.floor(replicas * int(percent[:-1]) / 100) if percent.endswith("%") else int(percent))
    rounds = math.ceil(wave * pods_per_node / deployments / allowed)
    boot = delays["boot_seconds"] + delays["node_register_seconds"] + delays["node_ready_seconds"]
    step = delays["pod_shutdown_seconds"] + delays["pod_start_seconds"] + delays["pod_ready_seconds"] + 2 * speed
    return {"boot_sim_seconds": boot, "drain_sim_seconds": rounds * step, "pdb_rounds_per_wave": rounds}


def main_tasks(task_wall, floor=0.5):
    """The task kinds that took at least ``floor`` wall seconds in all."""
    return {name: entry for name, entry in task_wall.items() if entry["seconds"] >= floor}


def duration_seconds(text):
    """'2s' / '1m' / 2 -> seconds (the role's duration syntax, for reporting only)."""
    text = str(text).strip()
    units = {"s": 1, "m": 60, "h": 3600}
    if text and text[-1] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text)


def role_defaults():
    """The role's defaults (roles/rolling_update/defaults/main.yml), as a bench run at them reports them."""
    import yaml  # pylint: disable=import-outside-toplevel
    with open(os.path.join(ROOT, "roles", "rolling_update", "defaults", "main.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)
