"""What the end-to-end tests of the operator's controls (rollback, windows, pause and cancel, bake time and checkpoints,
abort alarms, hooks) read and do on a sandbox: the group as AWS sees it, the rollout's marks on nodes, a watcher that
acts once the event log shows something, and the invariant report's assertions."""

import json
import threading
import time

from kubernetes import client
from kubernetes.client.rest import ApiException

from sandbox.drive.handle import promised_floor
from sandbox.drive.tags import PAUSE_TAG
from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"
STATE_PREFIX = "nodeops.rollout/"
# the role's own marks on a node: its taints, and the annotation that says a cordon is its own
MARK_TAINTS = ("nodeops.rollout/outdated", "nodeops.rollout/queued")
CORDONED = "nodeops.rollout/cordoned"
# short waits, one validation pass: what keeps these rollouts a minute or two long
QUICK = ["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"]


def recorded(state_tags):
    """The fields of the rollout recorded in its two state tags (``v2 key=value ...``) as ``{key: text}``."""
    fields = {}
    for value in state_tags.values():
        fields.update(word.split("=", 1) for word in value.split(" ")[1:])
    return fields


def group_view(sandbox, name=GROUP):
    """The group as AWS describes it: sizes, state tags and the fields they record, suspended processes, the launch
    template version it points at, and each member's version (``{instance id: version}``)."""
    group = sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]
    # the rollout's own tags; a pause request is the operator's
    state_tags = {tag["Key"]: tag["Value"] for tag in group.get("Tags") or []
                  if tag["Key"].startswith(STATE_PREFIX) and tag["Key"] != PAUSE_TAG}
    return {
        "sizes": (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]),
        "state_tags": state_tags,
        "state": recorded(state_tags),
        "suspended": sorted(process["ProcessName"] for process in group.get("SuspendedProcesses") or []),
        "version": (group.get("LaunchTemplate") or {}).get("Version"),
        "members": {instance["InstanceId"]: (instance.get("LaunchTemplate") or {}).get("Version")
                    for instance in group["Instances"] if instance["LifecycleState"] == "InService"},
    }


def node_marks(sandbox):
    """``{node: [marks]}`` for the nodes carrying one of the rollout's marks: a taint of it, or its cordon."""
    marks = {}
    for node in sandbox.core().list_node().items:
        found = [taint.key for taint in node.spec.taints or [] if taint.key in MARK_TAINTS]
        if node.spec.unschedulable:
            found.append("cordon" + (" (ours)" if CORDONED in (node.metadata.annotations or {}) else ""))
        if found:
            marks[node.metadata.name] = found
    return marks


def lock_holder(sandbox, group=GROUP, namespace="kube-system"):
    """Who holds the group's Lease (None: nobody, or no Lease)."""
    try:
        lease = client.CoordinationV1Api(sandbox.kube("test-setup")).read_namespaced_lease("nodeops-rollout-" + group, namespace)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return lease.spec.holder_identity or None


class Watcher(threading.Thread):
    """Once an event after ``since`` matches ``predicate``, run ``act(event)`` once (an operator or an alarm reacting to
    the rollout mid-way). ``fired`` is the event, or None."""

    def __init__(self, sandbox, since, predicate, act, timeout=900):
        super().__init__(daemon=True)
        self.sandbox, self.since, self.predicate, self.act, self.timeout = sandbox, since, predicate, act, timeout
        self.fired = None
        self._done = threading.Event()

    def run(self):
        deadline = time.monotonic() + self.timeout
        while not self._done.is_set() and time.monotonic() < deadline:
            for event in self.sandbox.events():
                if event["t"] > self.since and self.predicate(event):
                    self.fired = event
                    self.act(event)
                    return
            time.sleep(0.3)

    def stop(self):
        self._done.set()
        self.join(timeout=5)


def ours(event):
    return str(event.get("client") or "").startswith("nodeops.rollout")


def terminated_by_rollout(event):
    """An instance the rollout terminated (its first terminations come after its first drain and post-drain delay)."""
    return event["kind"] == "instance.terminated" and event.get("reason") == "asg-terminate" and event.get("group") == GROUP


def result_of(report_file, name=GROUP):
    return next(group for group in json.loads(report_file.read_text())["node_groups"] if group["name"] == name)


def wait_for(predicate, timeout, what, run=None):
    """Until ``predicate()``; fails after ``timeout`` seconds, or at once when the playbook ``run`` has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if run is not None and run.poll() is not None:
            raise AssertionError("the run ended (rc %s) before its %s" % (run.returncode, what))
        time.sleep(0.3)
    raise AssertionError("no %s within %ds" % (what, timeout))


def assert_refused_before_any_change(sandbox, directory, message, extra=(), host_vars=None):
    """A run of the upgrade playbook with ``extra`` (and ``host_vars``) stops with ``message`` and makes no mutating
    request: bad input is refused before anything changes."""
    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(directory, extra=list(extra), host_vars=host_vars)
    assert rc != 0 and message in out, out[-3000:]
    assert sandbox.mutating_requests(since=since) == []


def assert_invariants(report, nodes, max_unavailable, name=GROUP):
    """The invariant report of a rollout: no budget violated, no pod ended without eviction, the capacity floor held and
    no Deployment without a Ready pod; returns the figures a test records."""
    assert_safe(report)
    assert report["window"]["opened_by_client"], "the rollout made no change at all"
    floor = report["min_ready_schedulable_nodes"][name]
    assert floor >= promised_floor(nodes, max_unavailable), (floor, nodes, max_unavailable)
    downtime = {deployment: figures["zero_ready_seconds"] for deployment, figures in report["deployments"].items()}
    assert not any(downtime.values()), downtime
    return {"pdb_violations": report["pdb_violations"], "killed_without_eviction": report["killed_without_eviction"],
            "min_ready_schedulable_nodes": floor, "max_evictions_per_pod": report["evictions"]["max_evictions_per_pod"],
            "evictions": report["evictions"]["total"], "zero_ready_seconds": sum(downtime.values())}
