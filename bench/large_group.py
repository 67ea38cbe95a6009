"""A 1000-node / 20 000-pod group rolled 100 nodes at a time through the real role: total time and per-node cost.

One sandbox of ``--nodes`` nodes holding ``--pods`` pods (Deployments of 20 replicas, each behind a
PodDisruptionBudget of maxUnavailable 25 %), one rollout through ``playbooks/upgrade.yml`` with
``rolling_update_max_unavailable: --max-unavailable``. One JSON line: wall and simulated seconds in all and per
replaced node, API requests per replaced node (Kubernetes and AWS, and per module), and where the time went:

- ``cpu_seconds``: the sandbox (this process: moto, the API server, the controllers) and Ansible with its
  modules (child processes), so a slow run says which side is the bottleneck;
- ``sandbox_threads``: the sandbox's threads sampled 50 times a second: CPU seconds by part (moto, the
  Kubernetes API server, the controllers, the event log) and the lines its threads were seen at most;
- ``task_wall_seconds``: the role's tasks, batch numbers folded.

Run from the repository root: ``.venv/bin/python -m bench.large_group [--nodes 1000] [--pods 20000]
[--max-unavailable 100] [--speed 20]``.
"""

import argparse
import collections
import json
import os
import resource
import sys
import threading

from bench import _common

IDLE_FUNCTIONS = {"wait", "select", "poll", "sleep", "accept", "readinto", "recv_into", "recv", "_wait_for_tstate_lock",
                  "serve_forever", "get_request", "_recv_bytes", "read", "readline", "handle_one_request"}
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _category(stack):
    """Which part of the sandbox a stack (innermost frame first) belongs to, or None."""
    files = [frame.f_code.co_filename for frame in stack]
    for path in files:
        if os.sep + "moto" + os.sep in path or os.sep + "werkzeug" + os.sep in path:
            return "aws (moto)"
    for path in files:
        if path.endswith(os.sep + os.path.join("sandbox", "events.py")):
            return "event log"
    for path in files:
        if os.sep + os.path.join("sandbox", "kube", "controllers") in path:
            return "kube controllers"
        if os.sep + os.path.join("sandbox", "kube") in path:
            return "kube api server"
        if os.sep + os.path.join("sandbox", "aws") in path:
            return "aws (fidelity layer)"
    return None


def _thread_cpu(native_id):
    """CPU seconds a thread of this process has used (Linux /proc), or None."""
    try:
        with open("/proc/self/task/%d/stat" % native_id, encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / float(TICKS)


class Sampler:
    """Samples every thread of this process 50 times a second.

    ``cpu_seconds``: each thread's CPU time (/proc/self/task) credited to the part of the sandbox its stack was last
    seen in. ``thread_samples``: how often a thread was seen outside an obvious idle wait, by part, with the lines
    seen most; a thread blocked on a lock shows at the line that takes it, so these are not all CPU."""

    def __init__(self, interval=0.02, cpu_every=25):
        self.interval, self.cpu_every = interval, cpu_every
        self.samples = 0
        self.busy = collections.Counter()
        self.lines = collections.defaultdict(collections.Counter)
        self.cpu = collections.Counter()
        self._last_cpu = {}
        self._part = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()
        self._read_cpu()

    def _run(self):
        own = {threading.get_ident(), threading.main_thread().ident}
        while not self._stop.wait(self.interval):
            self.samples += 1
            for ident, frame in sys._current_frames().items():  # pylint: disable=protected-access
                if ident in own:
                    continue
                idle = frame.f_code.co_name in IDLE_FUNCTIONS
                stack = []
                while frame is not None and len(stack) < 80:
                    stack.append(frame)
                    frame = frame.f_back
                part = _category(stack)
                if part is not None:
                    self._part[ident] = part
                if idle:
                    continue
                part = part or "other"
                self.busy[part] += 1
                inner = stack[0]
                self.lines[part]["%s:%s:%d" % (os.path.basename(inner.f_code.co_filename), inner.f_code.co_name, inner.f_lineno or 0)] += 1
            if self.samples % self.cpu_every == 0:
                self._read_cpu()

    def _read_cpu(self):
        for thread in threading.enumerate():
            if thread.ident in (threading.get_ident(), threading.main_thread().ident) or not thread.native_id:
                continue
            used = _thread_cpu(thread.native_id)
            if used is None:
                continue
            before = self._last_cpu.get(thread.native_id, used if self.samples <= self.cpu_every else 0.0)
            self._last_cpu[thread.native_id] = used
            self.cpu[self._part.get(thread.ident, "other")] += max(0.0, used - before)

    def summary(self, top=5):
        return {
            "cpu_seconds": {part: round(seconds, 1) for part, seconds in self.cpu.most_common()},
            "thread_samples": {part: {"per_sample": round(count / self.samples, 3) if self.samples else None,
                                      "top_lines": dict(self.lines[part].most_common(top))}
                               for part, count in self.busy.most_common()},
        }


def _cpu():
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, children.ru_utime + children.ru_stime


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _common.add_sandbox_arguments(parser, speed=20.0, nodes=1000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--replicas", type=int, default=20, help="pods per Deployment")
    parser.add_argument("--max-unavailable", type=int, default=100)
    parser.add_argument("--ready-timeout", type=float, default=1800.0, help="wall seconds for the sandbox to start")
    args = parser.parse_args(argv)

    role_vars = {"rolling_update_post_drain_delay": 0, "rolling_update_validate_interval": "1s",
                 "rolling_update_validate_passes": 1}
    workload = _common.spread_workload(args.pods, max(1, args.pods // args.replicas), "25%")
    with _common.Run(args.nodes, args.azs, args.speed, _common.delays_of(args), args.max_unavailable, role_vars,
                     workload=workload, ready_timeout=args.ready_timeout, keep=args.keep) as run:
        start_cpu = _cpu()
        run.start()
        started_cpu = _cpu()
        sampler = Sampler().start()
        try:
            run.rollout()
        finally:
            sampler.stop()
        end_cpu = _cpu()
        threads = sampler.summary()
        attributed = sum(threads["cpu_seconds"].values())
        threads["cpu_seconds"]["unattributed (threads gone between reads)"] = round(
            max(0.0, end_cpu[0] - started_cpu[0] - attributed), 1)
        report, group = run.report, run.group_result()
        replaced = report["nodes_replaced"]
        per_module = _common.module_requests(run.events)
        wall, sim = run.figures["wall_seconds"], run.figures["window_sim_seconds"]
        out = {
            "N": args.nodes, "pods": run.figures["pods_at_start"], "U": args.max_unavailable, "azs": args.azs,
            "speed": args.speed, "surge": int(group["plan"]["surge"]), "batches": len(group["batches"]),
            "nodes_replaced": replaced,
            "sandbox_start_wall_seconds": run.figures["sandbox_start_wall_seconds"],
            "wall_seconds": wall, "rollout_sim_seconds": sim,
            "per_replaced_node": {
                "wall_seconds": round(wall / replaced, 3) if replaced else None,
                "sim_seconds": round(sim / replaced, 2) if replaced else None,
                "requests": report["rollout_requests_per_replaced_node"],
            },
            "requests_per_replaced_node_by_module": {
                module: {side: round(v["total"] / replaced, 2) for side, v in sides.items()} if replaced else None
                for module, sides in sorted(per_module.items())},
            "phase_wall_seconds": group["phase_seconds"],
            "batch_wall_seconds": [float(b["seconds"]) for b in group["batches"]],
            "drain_wall_seconds": [float(b["drain_seconds"]) for b in group["batches"]],
            "evictions": report["evictions"]["total"],
            "cpu_seconds": {
                "sandbox_start": round(started_cpu[0] - start_cpu[0], 1),
                "sandbox_during_rollout": round(end_cpu[0] - started_cpu[0], 1),
                "ansible_and_modules": round(end_cpu[1] - started_cpu[1], 1),
                "cores": os.cpu_count(),
            },
            "sandbox_threads": threads,
            "task_wall_seconds": _common.main_tasks(run.figures["task_wall_seconds"], floor=0.01 * wall),
            "invariants": _common.invariants(report),
            "source": run.figures["source"], "load_average_1m": run.figures["load_average_1m"],
        }
        if args.keep:
            out["state_dir"] = run.state_dir
        print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
