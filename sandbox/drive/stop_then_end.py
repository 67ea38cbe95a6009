"""Stop a rollout at a random point, then end it: the property that every path giving capacity back keeps. The rollout
of 3 nodes (sandbox/drive/kill.py's ROLE_VARS: max_surge 1) is stopped once the collection has made its k-th
request - by a pause request (the group tagged nodeops.rollout/pause=true: the run stops cleanly before its next step)
or by SIGKILL of the whole ansible-playbook process tree (its Lease then deleted, as an operator does) - and is then
ended by the cancel or the rollback playbook. Whatever the point, the end must leave nothing of the rollout behind
(sizes, state tags, suspended processes, marks on nodes, locks), every Deployment whole, and the invariant report
clean over both runs: no budget violated, no pod ended without eviction, the capacity floor held. A rollback also
leaves every instance on the version the group launched before.

``bench/stop_then_end.py`` runs many trials; the test command runs two."""

import json
import threading
import time

from sandbox.drive.convergence import GROUP, problems, sizes
from sandbox.drive.handle import promised_floor
from sandbox.drive.kill import ROLE_VARS, free_the_lock, run_until_held
from sandbox.drive.tags import PAUSE_TAG, delete_tag, set_tag

STOPS = ("pause", "kill")
ENDS = ("cancel", "rollback")
NODES, MAX_UNAVAILABLE = 3, 1
REQUESTS = ("aws.request", "k8s.request")


def _requests_made(sandbox, since):
    return sum(1 for event in sandbox.events() if event["t"] >= since and event["kind"] in REQUESTS
               and str(event.get("client") or "").startswith("nodeops.rollout/"))


def _pause_at(sandbox, directory, nth):
    """Run the upgrade and tag the group for a pause once the collection has made ``nth`` requests; whether the tag
    went on before the run ended."""
    since, done, paused = sandbox.now(), threading.Event(), []

    def watch():
        while not done.is_set():
            if _requests_made(sandbox, since) >= nth:
                set_tag(sandbox, PAUSE_TAG, "true")
                paused.append(True)
                return
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        sandbox.run_role_playbook(directory, extra=ROLE_VARS)
    finally:
        done.set()
        watcher.join(timeout=10)
    return bool(paused)


def trial(sandbox, directory, stop, end, nth):
    """One trial on a fresh sandbox: ``{"stop", "end", "nth", "stopped", "rc", "status", "problems", "floor",
    "output"}``; ``problems`` lists what the end left (empty: the property holds)."""
    original = sizes(sandbox)
    if stop == "kill":
        stopped = run_until_held(sandbox, directory, {"match": {}, "nth": nth})
        if stopped:
            free_the_lock(sandbox)
    else:
        stopped = _pause_at(sandbox, directory, nth)
    report = directory / ("end-%s.json" % end)
    rc, output = sandbox.run_role_playbook(directory, playbook=end + ".yml", report=report)
    if stop == "pause":
        delete_tag(sandbox, PAUSE_TAG)
    groups = json.loads(report.read_text())["node_groups"] if report.exists() else []
    status = groups[0]["status"] if groups else None
    found = problems(sandbox, original, 1 if end == "rollback" else None)
    floor = sandbox.report()["min_ready_schedulable_nodes"].get(GROUP)
    if floor is None or floor < promised_floor(NODES, MAX_UNAVAILABLE):
        found.append("the floor: %s Ready schedulable nodes at the lowest, %d promised" % (floor, promised_floor(NODES, MAX_UNAVAILABLE)))
    if rc != 0:
        found.append("the %s ended with rc %d" % (end, rc))
    return {"stop": stop, "end": end, "nth": nth, "stopped": stopped, "rc": rc, "status": status, "problems": found,
            "floor": floor, "output": output}
