"""What ``kubectl describe node`` shows of a rollout: the Events the rollout writes on each node it taints, cordons, drains
and terminates (reasons, types, who and why), read back with the kubernetes client exactly as kubectl describe searches
them; and a rollout whose Events the API server refuses (an RBAC without ``events``) still succeeds."""

import os
import re

import pytest

from sandbox.drive.handle import KUBE_ENV
from tests.integration.controls import GROUP, QUICK, assert_invariants, group_view, node_marks, result_of
from tests.integration.modules.conftest import assert_safe

pytestmark = pytest.mark.reference   # node Events as the real kube-apiserver stores and selects them

NODES = 3
RUN_ID = re.compile(r"^\S+@\S+/[0-9a-f]{8}$")


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=3, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


def group_nodes(sandbox):
    """``{name: uid}`` of the group's nodes now."""
    return {node.metadata.name: node.metadata.uid for node in sandbox.core().list_node().items}


def described(sandbox, name, uid):
    """The Events ``kubectl describe node NAME`` lists: core/v1 Events of every namespace whose involvedObject is the
    Node (name, no namespace, kind, uid), oldest first, as (type, reason, from, message)."""
    selector = "involvedObject.name=%s,involvedObject.namespace=,involvedObject.kind=Node,involvedObject.uid=%s" % (name, uid)
    items = sandbox.core().list_event_for_all_namespaces(field_selector=selector).items
    # timestamps are whole seconds: events of the same second are in the order the API server stored them (the
    # resourceVersion of each new object, a revision that only grows on both backends)
    items.sort(key=lambda event: (event.last_timestamp or event.first_timestamp, event.metadata.creation_timestamp,
                                  int(event.metadata.resource_version) if str(event.metadata.resource_version).isdigit() else 0))
    return [(event.type, event.reason, event.source.component if event.source else None, event.message, event)
            for event in items if event.source and event.source.component == "nodeops.rollout"]


def test_the_nodes_tell_what_the_rollout_did_to_them_and_why(sandbox, tmp_path):
    old = group_nodes(sandbox)
    assert len(old) == NODES
    report = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK)
    assert rc == 0, out[-3000:]
    result = result_of(report)
    assert result["status"] == "replaced", result
    assert_invariants(sandbox.report(), NODES, 1)
    view = group_view(sandbox)

    runs = set()
    for name, uid in sorted(old.items()):
        seen = described(sandbox, name, uid)
        reasons = [reason for _kind, reason, _source, _message, _event in seen]
        # tainted when the surge was Ready, cordoned at its drain, drained, terminated: in that order
        assert reasons == ["RolloutTainted", "RolloutCordoned", "DrainSucceeded", "RolloutTerminating"], (name, seen)
        assert all(kind == "Normal" and source == "nodeops.rollout" for kind, _reason, source, _message, _event in seen)
        tainted, cordoned, drained, terminating = (message for _kind, _reason, _source, message, _event in seen)
        # the surge covers every outdated node here: the taint is the hard one
        # each names the run and the target it rolls to
        target = r"rolling to launch template lt-[0-9a-f]+ version %s \(ami-[0-9a-f]+\)" % view["version"]
        assert re.match(r"^Tainted nodeops.rollout/outdated=true:NoSchedule by rollout run \S+, %s: no new pod is scheduled here$"
                        % target, tainted), tainted
        assert re.match(r"^Cordoned by rollout run \S+, %s.*, to be drained$" % target, cordoned), cordoned
        assert re.match(r"^Drained in \d+s by rollout run \S+, %s: \d+ pod\(s\) evicted" % target, drained), drained
        # the termination names the instance and the target recorded on the group
        instance_id = re.search(r"i-[0-9a-f]+", terminating).group(0)
        assert terminating.startswith("Terminating instance %s through Auto Scaling group %s (" % (instance_id, GROUP))
        assert ", rolling to launch template lt-" in terminating and (" version %s" % view["version"]) in terminating, terminating
        for message in (tainted, cordoned, drained, terminating):
            runs.add(re.search(r"by rollout run (\S+?)(?:,|:|$)", message).group(1))
        assert all(event.reporting_component == "nodeops.rollout" and event.metadata.namespace == "default"
                   for *_rest, event in seen)
    # one run, named as the lock's holder, in every message
    assert len(runs) == 1 and RUN_ID.match(runs.pop()), runs
    # the new nodes were not touched, so they tell nothing of the rollout
    new = group_nodes(sandbox)
    assert len(new) == NODES, new
    for name, uid in new.items():
        assert described(sandbox, name, uid) == [], name


def test_a_rollout_whose_events_are_refused_still_succeeds(sandbox, tmp_path):
    if os.environ.get(KUBE_ENV) == "reference":
        pytest.skip("the real kube-apiserver of the reference backend grants this test's user everything: "
                    "an RBAC without events is the embedded backend's k8s_forbid")
    old = group_nodes(sandbox)
    since = sandbox.now()
    sandbox.fault(k8s_forbid={"events": ["create"]})
    report = tmp_path / "result.json"
    try:
        # back to the old AMI: a rollout like any other
        rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK,
                                            node_groups=[{"name": GROUP, "image_id": sandbox.state["amis"]["old"]}])
    finally:
        sandbox.fault(k8s_forbid={"events": []})
    assert rc == 0, out[-3000:]
    assert result_of(report)["status"] == "replaced"
    assert_invariants(sandbox.report(), NODES, 1)
    assert node_marks(sandbox) == {}
    # every Event was refused (403) and none retried: after a 403 a module sends no other, so at most one try for the
    # taint of the outdated nodes and one per drain and per termination (a drain alone has two Events per node)
    tries = [event for event in sandbox.events() if event["t"] >= since and event["kind"] == "k8s.request"
             and event.get("resource") == "events" and event.get("verb") == "create"]
    assert tries and all(event["code"] == 403 for event in tries), tries
    assert len(tries) <= 1 + 2 * NODES, tries
    for name, uid in old.items():
        assert described(sandbox, name, uid) == []


def test_a_blocked_drain_names_the_pod_and_its_budget_on_the_node(sandbox):
    """node_drain as a task of any playbook uses it: a budget that allows no disruption holds the drain, which gives up
    (timeout_action skip), and the node says so, naming the pod and the budget; the release says so too."""
    from tests.integration.modules.test_node_drain import budget, deployment, namespace, pin, ready_on  # pylint: disable=import-outside-toplevel
    node = sorted(group_nodes(sandbox))[0]
    # two replicas and a budget that wants both (a single replica would be restarted on another node instead)
    pin(sandbox, node, [namespace("held"), deployment("held", "web", 2), budget("held", "web", "web", minAvailable=2)], "held", expect=2)
    pods = sorted(p.metadata.name for p in ready_on(sandbox, "held", node))
    assert len(pods) == 2, pods
    events = {"run": "change-4711", "target": "launch template lt-0123 version 9"}
    result = sandbox.run_module("node_drain", nodes=[node], timeout_action="skip", poll_interval=0.2, events=events,
                                module_args={"timeout": "5s"})
    assert result["rc"] == 0 and result["skipped_nodes"] == [node], result.get("msg")
    assert result["events"] == {"written": 2, "not_written": 0, "error": None}
    released = sandbox.run_module("node_taint", nodes=[node], cordon=False, events=events)
    assert released["rc"] == 0 and released["events"]["written"] == 1

    seen = described(sandbox, node, sandbox.core().read_node(node).metadata.uid)[-3:]
    assert [entry[:2] for entry in seen] == [
        ("Normal", "RolloutCordoned"), ("Warning", "DrainBlocked"), ("Normal", "RolloutUncordoned")]
    cordoned, blocked, uncordoned = [entry[3] for entry in seen]
    assert cordoned == "Cordoned by rollout run change-4711, rolling to launch template lt-0123 version 9, to be drained"
    assert blocked.startswith("Drain skipped after "), blocked
    assert ", node quarantined (label nodeops.rollout/quarantined) and left cordoned; blocked by held/web-" in blocked, blocked
    assert all("held/%s (PodDisruptionBudget held/web)" % pod in blocked for pod in pods), blocked
    assert uncordoned == "Marked schedulable again by rollout run change-4711, rolling to launch template lt-0123 version 9"
    assert_safe(sandbox.report())
