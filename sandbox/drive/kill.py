"""Kill a rollout at an exact point and rerun it: the shared half of ``bench/kill_rerun.py`` and
the kill tests (``tests/integration/reliability/test_kill_early.py``, ``test_kill_late.py``, ``test_kill_random.py``).

A point is a list of holds (``sandbox/hold.py``), one per run: the sandbox stops the matching request of the
collection before it is applied, the harness SIGKILLs the whole ``ansible-playbook`` process tree (as AWX cancelling a
job or a controller dying does), then lets the request go unapplied. After the last kill the same playbook runs to
its end, and :func:`sandbox.drive.convergence.problems` says whether anything was lost over all the runs.

A dead run leaves its lock, a Lease nothing renews any more, which frees itself within its duration: with
``wait_for_lock`` the rerun waits for that, as an operator who just runs the job again; without, the Lease is deleted at
once (a shortcut of the fixed points' tests, whose subject is the rest of the group's state)."""

import os
import signal
import time

from sandbox.drive.convergence import GROUP, problems, sizes
from sandbox.drive.handle import wait_until

ROLE_VARS = ["rolling_update_post_drain_delay=1", "rolling_update_validate_interval=1s", "rolling_update_max_surge=1"]
LEASE = "nodeops-rollout-" + GROUP


def _aws(action, module=None):
    spec = {"api": "aws", "action": action}
    if module:
        spec["module"] = module
    return spec


def _k8s(verb, resource, module):
    return {"api": "k8s", "verb": verb, "resource": resource, "module": module}


# Every phase of a rollout of 3 nodes with max_surge 1 (4 Ready over a floor of 2: a first drain of two, replaced; a
# second of one, paying the surge back).
POINTS = {
    "mid-surge": [{"match": _aws("DescribeAutoScalingGroups", "asg_surge"), "after": _aws("UpdateAutoScalingGroup", "asg_surge")}],
    "surge-then-taint": [{"match": _k8s("patch", "nodes", "node_taint")}],
    "mid-drain": [{"match": _k8s("evict", "pods/eviction", "node_drain"), "nth": 2}],
    # the decrementing termination is announced in the state (the first tag write) before it is made: the second write,
    # which records it, is the one a kill must miss
    "terminated-before-tag-write": [{"match": _aws("CreateOrUpdateTags", "instance_terminate"),
                                     "after": _aws("TerminateInstanceInAutoScalingGroup"), "nth": 2}],
    "waiting-for-replacements": [{"match": _aws("DescribeAutoScalingGroups", "rollout_step"),
                                  "after": _aws("TerminateInstanceInAutoScalingGroup"), "after_nth": 2}],
    # the first validation after a termination: a step validates before each drain, so one always follows the first
    # termination (how many follow depends on the machine's pace: the steps of the drains that end together merge)
    "mid-validation": [{"match": _k8s("list", "nodes", "cluster_validate"), "after": _aws("TerminateInstanceInAutoScalingGroup")}],
    "mid-restore": [{"match": _aws("DeleteTags", "asg_surge")}],
}


def random_point(rng, requests):
    """A kill before the k-th request of the collection, k drawn from 1..``requests`` (a clean run's count)."""
    return [{"match": {}, "nth": rng.randint(1, requests)}]


def _tree(root):
    """``root`` and every process descended from it or in its session (a module may start a session of its own)."""
    parents, sessions = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, encoding="utf-8") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        sessions[int(entry)] = int(fields[3])
    found = {root} | {pid for pid, sid in sessions.items() if sid == root}
    grew = True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in found} - found
        grew = bool(more)
        found |= more
    return found


def kill_tree(proc):
    for pid in _tree(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=30)


def run_until_held(sandbox, directory, hold, extra=(), timeout=600):
    """Start the playbook with ``hold`` armed; kill it when the request is held. True when it was killed there, False
    when the run ended first (the point was never reached)."""
    sandbox.hold(**hold)
    log = os.path.join(str(directory), "run-%d.log" % len([n for n in os.listdir(str(directory)) if n.startswith("run-")]))
    proc = sandbox.start_role_playbook(directory, log, extra=list(ROLE_VARS) + list(extra))
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if sandbox.held():
                kill_tree(proc)
                return True
            if proc.poll() is not None:
                return False
            time.sleep(0.05)
        raise AssertionError("the run neither reached the hold %r nor ended in %ss" % (hold, timeout))
    finally:
        if proc.poll() is None:
            kill_tree(proc)
        sandbox.release()


def free_the_lock(sandbox, wait_for_lock=False):
    from kubernetes import client  # pylint: disable=import-outside-toplevel
    leases = client.CoordinationV1Api(sandbox.kube())
    try:
        lease = leases.read_namespaced_lease(LEASE, "kube-system")
    except client.ApiException as exc:
        if exc.status == 404:
            return
        raise
    if not lease.spec.holder_identity:
        return
    if wait_for_lock:
        renewed = lease.spec.renew_time.timestamp()
        wait_until("the dead run's lock to expire", lambda: time.time() > renewed + lease.spec.lease_duration_seconds + 1,
                   timeout=lease.spec.lease_duration_seconds + 30, interval=0.5)
    else:
        leases.delete_namespaced_lease(LEASE, "kube-system")


def kill_and_rerun(sandbox, directory, point, extra=(), wait_for_lock=False):
    """Run with each hold of ``point`` in turn, killing at each, then run to the end. ``{"killed": [bool per hold],
    "ended": the end of the output of a run that ended before its hold ("" when each was killed), "rc": the last run's
    rc, "output": its output, "problems": convergence.problems(...)}``."""
    original = sizes(sandbox)
    killed, ended = [], ""
    for hold in point:
        if killed and not killed[-1]:
            break      # the previous run finished: there is nothing left to kill
        killed.append(run_until_held(sandbox, directory, hold, extra))
        if killed[-1]:
            free_the_lock(sandbox, wait_for_lock)
        else:
            logs = sorted(name for name in os.listdir(str(directory)) if name.startswith("run-"))
            with open(os.path.join(str(directory), logs[-1]), encoding="utf-8") as fh:
                ended = fh.read()[-3000:]
    rc, output = sandbox.run_role_playbook(directory, extra=list(ROLE_VARS) + list(extra))
    return {"killed": killed, "ended": ended, "rc": rc, "output": output, "problems": problems(sandbox, original, 2)}
