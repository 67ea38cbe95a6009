"""The sandbox's control plane behaves as a cluster's does, as seen from the objects and the event log.

Each test builds a Store and the Controllers directly (no HTTP server), with a fast clock (100 simulated
seconds per wall second) and a mutable list of EC2 instances standing in for the AWS side. Workloads are
created the way the API server stores what ``kubectl apply`` sends: no status, defaults left unset.
"""

import threading
import time

import pytest

from sandbox.clock import Clock
from sandbox.events import EventLog
from sandbox.kube.controllers import ControllerConfig, Controllers, Faults
from sandbox.kube.controllers.objects import same_conditions
from sandbox.kube.store import Store, copy_obj, is_ready

SPEED = 100.0
WAIT = 60.0   # wall seconds; generous because the machine may be busy
NS = "default"


class Cluster:
    """A store, an event log, fake instances and the controllers, with helpers a test reads like prose."""

    def __init__(self, speed=SPEED, **cfg):
        self.clock = Clock(speed)
        self.events = EventLog(self.clock)
        self.store = Store(self.clock, self.events)
        self.store.create("namespaces", {"metadata": {"name": NS}}, client="test")
        self._lock = threading.Lock()
        self._instances = []
        self.cfg = ControllerConfig(**cfg)
        self.ctl = Controllers(self.store, self.clock, self.events, self.instances, self.cfg)
        self.ctl.start()

    def instances(self):
        with self._lock:
            return [dict(i) for i in self._instances]

    def close(self):
        self.ctl.stop()
        assert self.ctl.errors == [], self.ctl.errors

    # ---- the AWS side ------------------------------------------------------------------------------
    def launch(self, count=1, az="us-east-1a", group="ng-1", image="ami-old", state="running", lt_version="1"):
        names = []
        with self._lock:
            for _instance in range(count):
                n = len(self._instances)
                name = "ip-10-0-%d-%d.ec2.internal" % (n // 200, n % 200 + 10)
                self._instances.append({
                    "instance_id": "i-%017x" % (n + 1), "state": state, "az": az, "private_dns_name": name,
                    "private_ip": "10.0.%d.%d" % (n // 200, n % 200 + 10), "instance_type": "m5.large",
                    "image_id": image, "launch_time": "2024-01-01T00:00:00Z", "group": group,
                    "launch_template": {"id": "lt-0abc", "version": lt_version}})
                names.append(name)
        return names

    def set_state(self, name, state):
        with self._lock:
            for inst in self._instances:
                if inst["private_dns_name"] == name:
                    inst["state"] = state

    def remove_instance(self, name):
        with self._lock:
            self._instances = [i for i in self._instances if i["private_dns_name"] != name]

    def nodes_ready(self, names):
        self.wait(lambda: all(is_ready(self.store.try_get("nodes", None, n) or {}) for n in names), "nodes Ready")

    def ready_nodes(self, count, az_cycle=("us-east-1a", "us-east-1b", "us-east-1c"), **kw):
        names = []
        for i in range(count):
            names += self.launch(az=az_cycle[i % len(az_cycle)], **kw)
        self.nodes_ready(names)
        return names

    # ---- objects -----------------------------------------------------------------------------------
    def wait(self, predicate, what, timeout=WAIT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.02)
        raise AssertionError("timed out waiting for %s (errors: %s)" % (what, self.ctl.errors))

    def idle(self):
        assert self.ctl.wait_idle(WAIT), "controllers not idle: %s" % self.ctl.errors

    def pods(self, label=None):
        return self.store.list("pods", namespace=NS, label_selector=label)[0]

    def pod(self, name):
        return self.store.try_get("pods", NS, name)

    def taint(self, node, key, effect, value=None):
        def add(obj):
            taint = {"key": key, "effect": effect}
            if value is not None:
                taint["value"] = value
            obj["spec"].setdefault("taints", []).append(taint)
        self.store.mutate("nodes", None, node, add, client="test")

    def cordon(self, node, on=True):
        def flip(obj):
            if on:
                obj["spec"]["unschedulable"] = True
            else:
                obj["spec"].pop("unschedulable", None)
        self.store.mutate("nodes", None, node, flip, client="test")

    def evict(self, pod_name, grace=None):
        """What the API's eviction handler does to the pod: graceful deletion, cause evicted."""
        pod = self.pod(pod_name)
        seconds = grace if grace is not None else pod["spec"].get("terminationGracePeriodSeconds", 30)

        def mark(obj):
            obj["metadata"]["deletionTimestamp"] = self.clock.timestamp(self.clock.now() + seconds)
            obj["metadata"]["deletionGracePeriodSeconds"] = seconds
        self.store.mutate("pods", NS, pod_name, mark, client="test-drain",
                          cause={"how": "evicted", "client": "test-drain", "reason": "eviction"})

    def owner_events(self, owner, kinds):
        return [e for e in self.events.events("pod.") if e.get("owner") == owner and e["kind"] in kinds]


def container(cpu=None, memory=None, name="app"):
    c = {"name": name, "image": "nginx:1.25"}
    if cpu or memory:
        c["resources"] = {"requests": {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}}
    return c


def deployment(name, replicas=3, strategy=None, cpu="100m", annotations=None, **pod_spec):
    obj = {"metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": dict({"containers": [container(cpu=cpu)]}, **pod_spec)}}}
    if annotations:
        obj["spec"]["template"]["metadata"]["annotations"] = annotations
    if strategy is not None:
        obj["spec"]["strategy"] = strategy
    return obj


def naked_pod(name, **spec):
    return {"metadata": {"name": name, "namespace": NS, "labels": {"run": name}},
            "spec": dict({"containers": [container(cpu="100m")]}, **spec)}


def condition(obj, ctype):
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond["type"] == ctype:
            return cond
    return None


def ready_pods(cluster, label):
    return [p for p in cluster.pods(label) if is_ready(p) and "deletionTimestamp" not in p["metadata"]]


@pytest.fixture
def cluster():
    c = Cluster()
    yield c
    c.close()


def make_cluster(request, **cfg):
    c = Cluster(**cfg)
    request.addfinalizer(c.close)
    return c


# ------------------------------------------------------------------------------------------------ nodes

def test_conditions_are_the_same_apart_from_their_times_in_any_order():
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": "t1", "lastTransitionTime": "t1"}
    pressure = {"type": "MemoryPressure", "status": "False", "lastTransitionTime": "t0"}
    assert same_conditions([ready, pressure], [dict(pressure, lastTransitionTime="t9"), dict(ready, lastHeartbeatTime="t2")])
    assert not same_conditions([ready, pressure], [dict(ready, status="False"), pressure])
    assert not same_conditions([ready], [ready, pressure]) and same_conditions(None, [])
    assert not same_conditions([ready, pressure], [ready, dict(pressure, type="DiskPressure")])
    twice = [dict(ready, status="False"), ready]
    assert same_conditions(twice, [ready, dict(ready, status="False", lastHeartbeatTime="t3")])
    assert not same_conditions(twice, [ready, ready])


def test_a_watch_of_one_node_s_pods_sees_that_node_s_pods_and_no_other():
    from sandbox.kube.selectors import FieldSelector  # pylint: disable=import-outside-toplevel
    clock = Clock(100.0)
    store = Store(clock, EventLog(clock))
    store.create("namespaces", {"metadata": {"name": NS}}, client="test")
    on_n1 = store.watch("pods", field_selector=FieldSelector.parse("spec.nodeName=n1", "pods"))
    unbound = store.watch("pods", field_selector=FieldSelector.parse("spec.nodeName=", "pods"))
    every = store.watch("pods")
    store.create("pods", naked_pod("a", nodeName="n1"), client="test")
    store.create("pods", naked_pod("b", nodeName="n2"), client="test")
    store.create("pods", naked_pod("c"), client="test")

    def bind(pod):
        pod["spec"]["nodeName"] = "n1"
    store.mutate("pods", NS, "c", bind, client="test")
    store.remove("pods", NS, "a", client="test")

    def seen(watcher):
        out = []
        while True:
            item = watcher.next(0)
            if item is None:
                return out
            out.append((item[0], item[1]["metadata"]["name"]))
    assert seen(on_n1) == [("ADDED", "a"), ("ADDED", "c"), ("DELETED", "a")]
    assert seen(unbound) == [("ADDED", "c"), ("DELETED", "c")]   # bound: it left the selection
    assert len(seen(every)) == 5
    store.unwatch(on_n1)
    store.create("pods", naked_pod("d", nodeName="n1"), client="test")
    assert seen(on_n1) == []


def test_the_budgets_of_a_pod_follow_budgets_that_come_go_and_change_their_selector():
    from sandbox.kube.disruption import pdbs_for_pod  # pylint: disable=import-outside-toplevel
    clock = Clock(100.0)
    store = Store(clock, EventLog(clock))
    store.create("namespaces", {"metadata": {"name": NS}}, client="test")

    def budget(name, selector):
        store.create("poddisruptionbudgets", {"metadata": {"name": name, "namespace": NS},
                                              "spec": {"maxUnavailable": 1, "selector": selector}}, client="test")
    metadata = {"name": "web-1", "namespace": NS, "labels": {"app": "web", "tier": "front"}}
    pod = store.create("pods", dict(naked_pod("web-1", nodeName="n1"), metadata=metadata), client="test")

    def names():
        return [p["metadata"]["name"] for p in pdbs_for_pod(store, pod)]
    budget("web", {"matchLabels": {"app": "web"}})
    budget("api", {"matchLabels": {"app": "api"}})
    budget("fronts", {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "edge"]}]})
    budget("all", {})
    assert names() == ["all", "fronts", "web"]

    def retarget(pdb):
        pdb["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    store.mutate("poddisruptionbudgets", NS, "api", retarget, client="test")
    store.remove("poddisruptionbudgets", NS, "all", client="test")
    assert names() == ["api", "fronts", "web"]

    def status(pdb):
        pdb["status"] = {"disruptionsAllowed": 0}
    store.mutate("poddisruptionbudgets", NS, "web", status, client="test")
    assert names() == ["api", "fronts", "web"]


def test_running_instance_registers_a_node_with_eks_labels_and_becomes_ready_after_the_boot_delay(cluster):
    name = cluster.launch(az="us-east-1b", group="workers", image="ami-123", lt_version="7")[0]
    node = cluster.wait(lambda: cluster.store.try_get("nodes", None, name), "node registered")
    labels = node["metadata"]["labels"]
    assert node["spec"]["providerID"] == "aws:///us-east-1b/i-00000000000000001"
    assert labels["kubernetes.io/hostname"] == name
    assert labels["topology.kubernetes.io/zone"] == "us-east-1b"
    assert labels["topology.kubernetes.io/region"] == "us-east-1"
    assert labels["node.kubernetes.io/instance-type"] == "m5.large"
    assert labels["eks.amazonaws.com/nodegroup"] == "workers"
    assert labels["eks.amazonaws.com/nodegroup-image"] == "ami-123"
    assert labels["eks.amazonaws.com/sourceLaunchTemplateVersion"] == "7"
    assert (labels["kubernetes.io/os"], labels["kubernetes.io/arch"]) == ("linux", "amd64")
    assert node["status"]["allocatable"] == {"cpu": "2", "memory": "8Gi", "pods": "110"}
    assert {"type": "InternalIP", "address": "10.0.0.10"} in node["status"]["addresses"]
    assert node["status"]["nodeInfo"]["kubeletVersion"].startswith("v1.30.")
    if not is_ready(node):
        assert condition(node, "Ready")["reason"] == "KubeletNotReady"
    cluster.nodes_ready([name])
    node = cluster.store.get("nodes", None, name)
    assert condition(node, "Ready")["reason"] == "KubeletReady"
    # the node lifecycle controller lifts the not-ready taint on its next pass after the Ready condition, as the real one
    # does: waited for, never read at the instant the condition turned (a busy machine runs that pass later)
    cluster.wait(lambda: not cluster.store.get("nodes", None, name)["spec"].get("taints"), "the not-ready taint lifted once the node is Ready")
    added = cluster.events.events("node.added")[0]
    ready = cluster.events.events("node.ready")[0]
    assert added["t"] >= 5.0 - 0.5, "registered only after node_register_seconds of running"
    assert ready["t"] - added["t"] >= 10.0 - 0.5, "Ready only node_ready_seconds after registration"
    assert added["client"] == "sandbox-kubelet"


def test_pending_instances_get_no_node(cluster):
    name = cluster.launch(state="pending")[0]
    time.sleep(20.0 / SPEED)
    assert cluster.store.try_get("nodes", None, name) is None
    cluster.set_state(name, "running")
    cluster.nodes_ready([name])


def test_nodes_never_ready_fault_keeps_new_nodes_not_ready_and_tainted(cluster):
    cluster.ctl.faults.set(nodes_never_ready={"image_id": "ami-bad"})
    good = cluster.launch(image="ami-good")[0]
    bad = cluster.launch(image="ami-bad")[0]
    cluster.nodes_ready([good])
    node = cluster.wait(lambda: cluster.store.try_get("nodes", None, bad), "bad node registered")
    time.sleep(30.0 / SPEED)
    node = cluster.store.get("nodes", None, bad)
    assert not is_ready(node)
    assert {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"} in node["spec"]["taints"]
    cluster.ctl.faults.clear()
    time.sleep(20.0 / SPEED)
    assert not is_ready(cluster.store.get("nodes", None, bad)), "a node registered under the fault stays broken"
    # a pod bound straight to the broken node never starts
    cluster.store.create("pods", naked_pod("pinned", nodeName=bad), client="test")
    time.sleep(20.0 / SPEED)
    status = cluster.pod("pinned").get("status") or {}
    assert status.get("phase", "Pending") == "Pending" and not status.get("containerStatuses")


def test_fault_and_config_errors_name_the_field_and_the_allowed_values():
    with pytest.raises(ValueError, match="unknown fault 'nodes_slow'; allowed: nodes_never_ready"):
        Faults().set(nodes_slow=True)
    with pytest.raises(ValueError, match="pod_start_seconds must be a number of seconds >= 0"):
        ControllerConfig(pod_start_seconds=-1)
    with pytest.raises(ValueError, match="allocatable.memory"):
        ControllerConfig(node_allocatable={"cpu": "2", "memory": "lots", "pods": "110"})


def test_terminated_instance_kills_its_pods_and_replacements_land_on_other_nodes(cluster):
    nodes = cluster.ready_nodes(3)
    cluster.store.create("deployments", deployment("web", replicas=6), client="test")
    cluster.idle()
    victim = nodes[0]
    doomed = {p["metadata"]["uid"] for p in cluster.pods("app=web") if p["spec"]["nodeName"] == victim}
    assert doomed, "the scheduler spreads replicas over every node"
    cluster.set_state(victim, "shutting-down")
    cluster.wait(lambda: cluster.store.try_get("nodes", None, victim) is None, "node deleted")
    deleted = {e["uid"]: e for e in cluster.events.events("pod.deleted") if e["uid"] in doomed}
    assert set(deleted) == doomed
    assert all(e["how"] == "killed" and e["reason"] == "node-gone" and e["client"] == "sandbox-node-lifecycle"
               for e in deleted.values())
    gone = [e for e in cluster.events.events("node.deleted") if e["node"] == victim]
    assert gone and gone[0]["client"] == "sandbox-node-lifecycle"
    cluster.idle()
    pods = ready_pods(cluster, "app=web")
    assert len(pods) == 6
    assert all(p["spec"]["nodeName"] in nodes[1:] for p in pods)


def test_a_pod_whose_node_dies_during_its_graceful_shutdown_is_logged_as_cut_short(cluster):
    nodes = cluster.ready_nodes(2)
    cluster.store.create("deployments", deployment("slow", replicas=2, terminationGracePeriodSeconds=600,
                                                   annotations={"sandbox.nodeops.io/shutdown-seconds": "500"}),
                         client="test")
    cluster.idle()
    pod = next(p for p in cluster.pods("app=slow") if p["spec"]["nodeName"] == nodes[0])
    cluster.evict(pod["metadata"]["name"])
    time.sleep(5.0 / SPEED)
    assert cluster.pod(pod["metadata"]["name"]) is not None, "still shutting down"
    cluster.remove_instance(nodes[0])
    cluster.wait(lambda: cluster.pod(pod["metadata"]["name"]) is None, "pod removed with its node")
    deleted = [e for e in cluster.events.events("pod.deleted") if e["uid"] == pod["metadata"]["uid"]][0]
    assert deleted["how"] == "evicted"
    assert deleted["ended_by"]["how"] == "killed" and deleted["ended_by"]["reason"] == "node-gone"


def test_stopped_instance_leaves_its_node_unknown_and_it_comes_back_when_running(cluster):
    name = cluster.ready_nodes(1)[0]
    cluster.set_state(name, "stopped")
    cluster.wait(lambda: (condition(cluster.store.get("nodes", None, name), "Ready") or {}).get("status") == "Unknown",
                 "node Unknown")
    node = cluster.wait(lambda: (cluster.store.get("nodes", None, name)["spec"].get("taints") or [None])[0], "taint")
    assert node["key"] == "node.kubernetes.io/unreachable"
    cluster.set_state(name, "running")
    cluster.nodes_ready([name])


def test_a_node_deleted_under_a_running_kubelet_stays_gone_and_its_pods_are_collected(cluster):
    nodes = cluster.ready_nodes(2)
    cluster.store.create("pods", naked_pod("orphan", nodeName=nodes[0]), client="test")
    cluster.wait(lambda: is_ready(cluster.pod("orphan")), "pod ready")
    uid = cluster.pod("orphan")["metadata"]["uid"]
    deleted_at = cluster.clock.now()
    cluster.store.remove("nodes", None, nodes[0], client="kubectl")
    cluster.wait(lambda: cluster.pod("orphan") is None, "orphaned pod collected")
    gone = [e for e in cluster.events.events("pod.deleted") if e["uid"] == uid][0]
    assert (gone["how"], gone["reason"], gone["client"]) == ("killed", "node-gone", "sandbox-pod-gc")
    assert gone["t"] - deleted_at >= 40.0 - 0.5, "after the pod GC's quarantine"
    assert cluster.store.try_get("nodes", None, nodes[0]) is None, "the kubelet does not register again"
    cluster.set_state(nodes[0], "stopped")
    time.sleep(10.0 / SPEED)
    cluster.set_state(nodes[0], "running")
    cluster.nodes_ready([nodes[0]])   # a restarted kubelet registers


def test_rollback_to_an_older_template_reuses_its_replicaset_as_the_newest_revision(cluster):
    cluster.ready_nodes(2)
    cluster.store.create("deployments", deployment("back", replicas=2), client="test")
    cluster.idle()
    first = cluster.store.list("replicasets", namespace=NS)[0][0]["metadata"]["name"]
    cluster.store.mutate("deployments", NS, "back", lambda d: d["spec"]["template"]["spec"]["containers"][0].update(
        image="nginx:1.26"), client="kubectl")
    cluster.wait(lambda: _rollout_done(cluster, "back", 2), "rolled forward")
    cluster.store.mutate("deployments", NS, "back", lambda d: d["spec"]["template"]["spec"]["containers"][0].update(
        image="nginx:1.25"), client="kubectl")
    cluster.wait(lambda: _rollout_done(cluster, "back", 2), "rolled back")
    cluster.idle()
    rss = {r["metadata"]["name"]: r for r in cluster.store.list("replicasets", namespace=NS)[0]}
    assert len(rss) == 2 and rss[first]["spec"]["replicas"] == 2
    assert rss[first]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    dep = cluster.store.get("deployments", NS, "back")
    assert dep["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"


# -------------------------------------------------------------------------------------------- scheduler

def test_scheduler_avoids_untolerated_noschedule_taints_and_exists_tolerates_everything(cluster):
    nodes = cluster.ready_nodes(2)
    cluster.taint(nodes[0], "dedicated", "NoSchedule", "infra")
    time.sleep(2.0 / SPEED)
    for i in range(4):
        cluster.store.create("pods", naked_pod("plain-%d" % i), client="test")
    cluster.store.create("pods", naked_pod("tolerant", tolerations=[{"operator": "Exists"}],
                                           nodeSelector={"kubernetes.io/hostname": nodes[0]}), client="test")
    cluster.store.create("pods", naked_pod("keyed", tolerations=[{"key": "dedicated", "operator": "Equal",
                                                                  "value": "infra", "effect": "NoSchedule"}],
                                           nodeSelector={"kubernetes.io/hostname": nodes[0]}), client="test")
    cluster.idle()
    assert all(cluster.pod("plain-%d" % i)["spec"]["nodeName"] == nodes[1] for i in range(4))
    assert cluster.pod("tolerant")["spec"]["nodeName"] == nodes[0]
    assert cluster.pod("keyed")["spec"]["nodeName"] == nodes[0]
    scheduled = condition(cluster.pod("keyed"), "PodScheduled")
    assert scheduled["status"] == "True"


def test_wrong_toleration_value_or_effect_does_not_tolerate(cluster):
    nodes = cluster.ready_nodes(1)
    cluster.taint(nodes[0], "dedicated", "NoSchedule", "infra")
    time.sleep(2.0 / SPEED)
    cluster.store.create("pods", naked_pod("value", tolerations=[{"key": "dedicated", "value": "db",
                                                                  "effect": "NoSchedule"}]), client="test")
    cluster.store.create("pods", naked_pod("effect", tolerations=[{"key": "dedicated", "operator": "Exists",
                                                                   "effect": "NoExecute"}]), client="test")
    cluster.store.create("pods", naked_pod("any-effect", tolerations=[{"key": "dedicated", "value": "infra"}]),
                         client="test")
    for name in ("value", "effect"):
        pod = cluster.wait(lambda n=name: condition(cluster.pod(n), "PodScheduled"), "condition")
        assert pod["status"] == "False"
        assert pod["message"].startswith("0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: infra}.")
    cluster.wait(lambda: cluster.pod("any-effect")["spec"].get("nodeName") == nodes[0], "an empty effect matches every effect")


def test_prefer_no_schedule_nodes_are_used_only_when_nothing_else_fits(cluster):
    nodes = cluster.ready_nodes(2)
    cluster.taint(nodes[0], "upgrade", "PreferNoSchedule")
    time.sleep(2.0 / SPEED)
    for i in range(3):
        cluster.store.create("pods", naked_pod("soft-%d" % i), client="test")
    cluster.idle()
    assert {cluster.pod("soft-%d" % i)["spec"]["nodeName"] for i in range(3)} == {nodes[1]}
    cluster.cordon(nodes[1])
    time.sleep(2.0 / SPEED)
    cluster.store.create("pods", naked_pod("overflow"), client="test")
    cluster.idle()
    assert cluster.pod("overflow")["spec"]["nodeName"] == nodes[0]


def test_node_selector_and_required_affinity_pick_the_zone(cluster):
    nodes = cluster.ready_nodes(3)
    cluster.store.create("pods", naked_pod("zoned", nodeSelector={"topology.kubernetes.io/zone": "us-east-1b"}),
                         client="test")
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "NotIn",
                               "values": ["us-east-1a", "us-east-1b"]},
                              {"key": "eks.amazonaws.com/nodegroup", "operator": "Exists"}]}]}}}
    cluster.store.create("pods", naked_pod("affine", affinity=affinity), client="test")
    cluster.store.create("pods", naked_pod("nowhere", nodeSelector={"topology.kubernetes.io/zone": "eu-west-1a"}),
                         client="test")
    cluster.wait(lambda: cluster.pod("zoned")["spec"].get("nodeName") and cluster.pod("affine")["spec"].get("nodeName"),
                 "bound")
    assert cluster.pod("zoned")["spec"]["nodeName"] == nodes[1]
    assert cluster.pod("affine")["spec"]["nodeName"] == nodes[2]
    cond = cluster.wait(lambda: condition(cluster.pod("nowhere"), "PodScheduled"), "unschedulable")
    assert cond["message"].startswith("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.")


def test_a_pod_too_big_for_any_node_stays_pending_with_the_scheduler_message(cluster):
    cluster.ready_nodes(3)
    cluster.store.create("pods", naked_pod("huge", containers=[container(cpu="3", memory="1Gi")]), client="test")
    cond = cluster.wait(lambda: condition(cluster.pod("huge"), "PodScheduled"), "condition")
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"] == ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
                               "3 Preemption is not helpful for scheduling.")
    assert cluster.pod("huge")["status"]["phase"] == "Pending"
    assert not cluster.ctl.wait_idle(20.0 / SPEED), "a pending pod is work left"
    failed = cluster.store.list("events", namespace=NS)[0]
    assert any(e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == "huge" for e in failed)
    # the log says when the wait for room began, once (the invariant report's max_unschedulable_seconds)
    assert [e["pod"] for e in cluster.events.events("pod.unschedulable")] == ["%s/huge" % NS]


def test_requests_fill_nodes_and_the_rest_wait_until_capacity_appears(cluster):
    nodes = cluster.ready_nodes(2)
    for i in range(5):
        cluster.store.create("pods", naked_pod("big-%d" % i, containers=[container(cpu="900m", memory="1G")]),
                             client="test")
    cluster.wait(lambda: sum(1 for i in range(5) if cluster.pod("big-%d" % i)["spec"].get("nodeName")) == 4, "4 bound")
    time.sleep(5.0 / SPEED)
    waiting = [i for i in range(5) if not cluster.pod("big-%d" % i)["spec"].get("nodeName")]
    assert len(waiting) == 1
    cond = condition(cluster.pod("big-%d" % waiting[0]), "PodScheduled")
    assert cond["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    placed = [cluster.pod("big-%d" % i)["spec"]["nodeName"] for i in range(5) if i not in waiting]
    assert sorted(placed) == sorted(nodes * 2), "least-requested scoring spreads the pods"
    extra = cluster.ready_nodes(1)
    cluster.wait(lambda: cluster.pod("big-%d" % waiting[0])["spec"].get("nodeName") == extra[0], "retried on new node")
    # the new node has 1100m and 7.07Gi left: two halves of a CPU fit, a third does not; nor does 8Gi of memory
    for i in range(3):
        cluster.store.create("pods", naked_pod("half-%d" % i, containers=[container(cpu="0.5")],
                                               nodeSelector={"kubernetes.io/hostname": extra[0]}), client="test")
    cluster.store.create("pods", naked_pod("mem", containers=[container(cpu="10m", memory="8Gi")]), client="test")
    cluster.wait(lambda: condition(cluster.pod("half-2"), "PodScheduled") and condition(cluster.pod("mem"), "PodScheduled"),
                 "decided")
    assert [bool(cluster.pod("half-%d" % i)["spec"].get("nodeName")) for i in range(3)] == [True, True, False]
    assert condition(cluster.pod("mem"), "PodScheduled")["message"].startswith("0/3 nodes are available: 3 Insufficient memory.")


def test_cordoned_nodes_get_no_new_pods_and_the_message_names_every_reason(cluster):
    nodes = cluster.ready_nodes(2)
    cluster.cordon(nodes[0])
    cluster.taint(nodes[1], "dedicated", "NoSchedule", "infra")
    time.sleep(2.0 / SPEED)
    cluster.store.create("pods", naked_pod("stuck"), client="test")
    cond = cluster.wait(lambda: condition(cluster.pod("stuck"), "PodScheduled"), "condition")
    assert cond["message"].startswith("0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: infra}, "
                                      "1 node(s) were unschedulable.")
    cluster.cordon(nodes[0], on=False)
    cluster.wait(lambda: cluster.pod("stuck")["spec"].get("nodeName") == nodes[0], "scheduled after uncordon")
    cluster.idle()


# ------------------------------------------------------------------------------------------------ kubelet

def test_kubelet_starts_then_readies_pods_after_the_configured_delays(cluster):
    cluster.ready_nodes(1)
    cluster.store.create("pods", naked_pod("timed"), client="test")
    cluster.idle()
    pod = cluster.pod("timed")
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["podIP"] and pod["status"]["hostIP"] == "10.0.0.10"
    assert [c["ready"] for c in pod["status"]["containerStatuses"]] == [True]
    assert {c["type"] for c in pod["status"]["conditions"]} >= {"PodScheduled", "Initialized", "ContainersReady", "Ready"}
    uid = pod["metadata"]["uid"]
    scheduled = [e for e in cluster.events.events("pod.scheduled") if e["uid"] == uid][0]
    ready = [e for e in cluster.events.events("pod.ready") if e["uid"] == uid][0]
    assert ready["t"] - scheduled["t"] >= 3.0 + 2.0 - 0.5


def test_ready_seconds_annotation_delays_or_prevents_readiness(cluster):
    cluster.ready_nodes(1)
    for name, seconds in (("never", "never"), ("slow", "40")):
        pod = naked_pod(name)
        pod["metadata"]["annotations"] = {"sandbox.nodeops.io/ready-seconds": seconds}
        cluster.store.create("pods", pod, client="test")
    cluster.wait(lambda: is_ready(cluster.pod("slow")), "slow pod ready")
    assert (cluster.pod("never").get("status") or {}).get("phase") == "Running"
    assert not is_ready(cluster.pod("never"))
    uid = cluster.pod("slow")["metadata"]["uid"]
    scheduled = [e for e in cluster.events.events("pod.scheduled") if e["uid"] == uid][0]
    ready = [e for e in cluster.events.events("pod.ready") if e["uid"] == uid][0]
    assert ready["t"] - scheduled["t"] >= 3.0 + 40.0 - 0.5


def test_deleted_pod_turns_unready_at_once_and_goes_after_its_shutdown_capped_by_the_grace_period(cluster):
    cluster.ready_nodes(1)
    slow = naked_pod("slow", terminationGracePeriodSeconds=60)
    slow["metadata"]["annotations"] = {"sandbox.nodeops.io/shutdown-seconds": "8"}
    capped = naked_pod("capped", terminationGracePeriodSeconds=1)
    capped["metadata"]["annotations"] = {"sandbox.nodeops.io/shutdown-seconds": "50"}
    for pod in (slow, capped):
        cluster.store.create("pods", pod, client="test")
    cluster.idle()
    uids = {n: cluster.pod(n)["metadata"]["uid"] for n in ("slow", "capped")}
    cluster.evict("slow", grace=60)
    cluster.evict("capped", grace=1)
    cluster.wait(lambda: cluster.pod("slow") is None and cluster.pod("capped") is None, "both gone")
    for name, low, high in (("slow", 8.0, 40.0), ("capped", 1.0, 30.0)):
        terminating = [e for e in cluster.events.events("pod.terminating") if e["uid"] == uids[name]][0]
        unready = [e for e in cluster.events.events("pod.unready") if e["uid"] == uids[name]][0]
        deleted = [e for e in cluster.events.events("pod.deleted") if e["uid"] == uids[name]][0]
        assert unready["t"] - terminating["t"] < 2.0
        assert low - 0.5 <= deleted["t"] - terminating["t"] < high
        assert deleted["how"] == "evicted" and deleted["client"] == "test-drain"


# -------------------------------------------------------------------------------------- ReplicaSet/Deployment

def test_deployment_as_applied_gets_a_replicaset_ready_pods_and_status(cluster):
    cluster.ready_nodes(3)
    cluster.store.create("deployments", deployment("web", replicas=3), client="kubectl")
    cluster.idle()
    rs = cluster.store.list("replicasets", namespace=NS)[0]
    assert len(rs) == 1
    rs = rs[0]
    pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == "web-" + pod_hash
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    assert rs["status"] == {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                            "observedGeneration": 1}
    pods = cluster.pods("app=web")
    assert len(pods) == 3
    for pod in pods:
        ref = pod["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["controller"], ref["blockOwnerDeletion"]) == \
            ("ReplicaSet", rs["metadata"]["name"], True, True)
        assert pod["metadata"]["name"].startswith(rs["metadata"]["name"] + "-")
        assert len(pod["metadata"]["name"]) == len(rs["metadata"]["name"]) + 6
        assert pod["metadata"]["labels"]["pod-template-hash"] == pod_hash
        assert pod["spec"]["terminationGracePeriodSeconds"] == 30, "defaulted as the API server would"
    assert len({p["spec"]["nodeName"] for p in pods}) == 3, "replicas spread over the nodes"
    dep = cluster.store.get("deployments", NS, "web")
    status = dep["status"]
    assert {k: status[k] for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                                   "observedGeneration")} == {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
                                                              "availableReplicas": 3, "observedGeneration": 1}
    assert "unavailableReplicas" not in status, "zero counts are omitted as the API does"
    assert condition(dep, "Available")["status"] == "True"
    assert condition(dep, "Progressing")["reason"] == "NewReplicaSetAvailable"
    assert dep["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"


def test_evicted_pod_is_replaced_and_the_replacement_becomes_ready(cluster):
    cluster.ready_nodes(3)
    cluster.store.create("deployments", deployment("api", replicas=3), client="test")
    cluster.idle()
    victim = cluster.pods("app=api")[0]
    cluster.evict(victim["metadata"]["name"])
    cluster.wait(lambda: cluster.pod(victim["metadata"]["name"]) is None, "evicted pod gone")
    cluster.idle()
    pods = ready_pods(cluster, "app=api")
    assert len(pods) == 3 and victim["metadata"]["uid"] not in {p["metadata"]["uid"] for p in pods}
    created = [e for e in cluster.events.events("pod.created") if e["owner"] == "Deployment/default/api"]
    assert len(created) == 4 and created[-1]["client"] == "sandbox-replicaset-controller"
    terminating = [e for e in cluster.events.events("pod.terminating") if e["uid"] == victim["metadata"]["uid"]][0]
    assert created[-1]["t"] - terminating["t"] < 10.0, "the replacement is created as soon as the eviction starts"


def _restart(cluster, name, stamp="2024-05-01T00:00:00Z"):
    def annotate(obj):
        meta = obj["spec"]["template"].setdefault("metadata", {})
        meta.setdefault("annotations", {})["kubectl.kubernetes.io/restartedAt"] = stamp
    cluster.store.mutate("deployments", NS, name, annotate, client="kubectl")


def _rollout_done(cluster, name, replicas):
    dep = cluster.store.get("deployments", NS, name)
    status = dep.get("status") or {}
    return (status.get("observedGeneration") == dep["metadata"]["generation"] and status.get("updatedReplicas") == replicas
            and status.get("replicas") == replicas and status.get("availableReplicas") == replicas
            and len(cluster.pods("app=" + name)) == replicas)


def test_rolling_restart_replaces_every_pod_within_max_unavailable_and_max_surge(cluster):
    cluster.ready_nodes(3)
    cluster.store.create("deployments", deployment("web", replicas=4), client="kubectl")   # 25%/25% -> 1/1
    cluster.idle()
    original = {p["metadata"]["uid"] for p in cluster.pods("app=web")}
    started = cluster.clock.now()
    _restart(cluster, "web")
    cluster.wait(lambda: _rollout_done(cluster, "web", 4), "rollout done", timeout=WAIT)
    cluster.idle()
    now = {p["metadata"]["uid"] for p in ready_pods(cluster, "app=web")}
    assert len(now) == 4 and not now & original, "every pod replaced"
    ready, alive, lowest, highest = set(), set(), 4, 0
    kinds = ("pod.created", "pod.ready", "pod.unready", "pod.terminating", "pod.deleted")
    for e in cluster.owner_events("Deployment/default/web", kinds):
        if e["kind"] == "pod.ready":
            ready.add(e["uid"])
        elif e["kind"] == "pod.created":
            alive.add(e["uid"])
        else:
            ready.discard(e["uid"])
            alive.discard(e["uid"])
        if e["t"] >= started:
            lowest, highest = min(lowest, len(ready)), max(highest, len(alive))
    assert lowest >= 3, "ready pods never fell below replicas - maxUnavailable"
    assert highest <= 5, "never more than replicas + maxSurge pods at once"
    rss = cluster.store.list("replicasets", namespace=NS)[0]
    assert sorted(r["spec"]["replicas"] for r in rss) == [0, 4]
    dep = cluster.store.get("deployments", NS, "web")
    assert dep["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert condition(dep, "Progressing")["reason"] == "NewReplicaSetAvailable"


def test_rolling_update_with_max_unavailable_zero_surges_first(cluster):
    cluster.ready_nodes(3)
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    cluster.store.create("deployments", deployment("single", replicas=1, strategy=strategy), client="test")
    cluster.idle()
    old = cluster.pods("app=single")[0]["metadata"]["uid"]
    started = cluster.clock.now()
    _restart(cluster, "single")
    cluster.wait(lambda: _rollout_done(cluster, "single", 1), "rollout done")
    events = [e for e in cluster.owner_events("Deployment/default/single", ("pod.ready", "pod.terminating"))
              if e["t"] >= started]
    first_new_ready = min(e["t"] for e in events if e["kind"] == "pod.ready")
    old_end = [e for e in events if e["kind"] == "pod.terminating" and e["uid"] == old][0]
    assert old_end["t"] >= first_new_ready, "the single replica is replaced only once its successor is Ready"


def test_min_ready_seconds_holds_availability_back(request):
    cluster = make_cluster(request)
    cluster.ready_nodes(1)
    dep = deployment("patient", replicas=1)
    dep["spec"]["minReadySeconds"] = 300
    cluster.store.create("deployments", dep, client="test")
    cluster.wait(lambda: ready_pods(cluster, "app=patient"), "pod ready")
    status = cluster.store.get("deployments", NS, "patient").get("status") or {}
    assert not status.get("availableReplicas"), "ready but not yet available"
    cluster.wait(lambda: (cluster.store.get("deployments", NS, "patient").get("status") or {}).get("availableReplicas") == 1,
                 "available after minReadySeconds")
    ready = cluster.owner_events("Deployment/default/patient", ("pod.ready",))[0]
    assert cluster.clock.now() - ready["t"] >= 300 - 0.5


def test_recreate_deletes_every_old_pod_before_creating_new_ones(cluster):
    cluster.ready_nodes(2)
    cluster.store.create("deployments", deployment("batch", replicas=3, strategy={"type": "Recreate"}), client="test")
    cluster.idle()
    old = {p["metadata"]["uid"] for p in cluster.pods("app=batch")}
    _restart(cluster, "batch")
    cluster.wait(lambda: _rollout_done(cluster, "batch", 3), "rollout done")
    events = cluster.owner_events("Deployment/default/batch", ("pod.created", "pod.deleted"))
    last_old_gone = max(e["t"] for e in events if e["kind"] == "pod.deleted" and e["uid"] in old)
    first_new = min(e["t"] for e in events if e["kind"] == "pod.created" and e["uid"] not in old)
    assert first_new >= last_old_gone


def test_revision_history_limit_deletes_the_oldest_replicasets(cluster):
    cluster.ready_nodes(2)
    dep = deployment("hist", replicas=1)
    dep["spec"]["revisionHistoryLimit"] = 1
    cluster.store.create("deployments", dep, client="test")
    cluster.idle()
    for i in range(3):
        _restart(cluster, "hist", stamp="2024-05-0%dT00:00:00Z" % (i + 1))
        cluster.wait(lambda: _rollout_done(cluster, "hist", 1), "rollout %d" % i)
        cluster.idle()
    rss = cluster.store.list("replicasets", namespace=NS)[0]
    assert len(rss) == 2, "the current ReplicaSet and one old one"
    assert sorted(int(r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]) for r in rss) == [3, 4]


def test_scaling_down_removes_unscheduled_pods_first_and_status_omits_zero_counts(cluster):
    nodes = cluster.ready_nodes(1)
    cluster.store.create("deployments", deployment("wide", replicas=4, cpu="600m"), client="test")
    cluster.wait(lambda: len([p for p in cluster.pods("app=wide") if is_ready(p)]) == 3, "3 of 4 fit")
    pending = [p for p in cluster.pods("app=wide") if not p["spec"].get("nodeName")]
    assert len(pending) == 1
    cluster.store.mutate("deployments", NS, "wide", lambda d: d["spec"].update(replicas=3), client="kubectl")
    cluster.wait(lambda: cluster.pod(pending[0]["metadata"]["name"]) is None, "unscheduled pod removed")
    cluster.idle()
    assert all(p["spec"]["nodeName"] == nodes[0] for p in cluster.pods("app=wide"))
    cluster.store.mutate("deployments", NS, "wide", lambda d: d["spec"].update(replicas=0), client="kubectl")
    cluster.wait(lambda: not cluster.pods("app=wide"), "scaled to zero")
    cluster.idle()
    status = cluster.store.get("deployments", NS, "wide")["status"]
    assert "readyReplicas" not in status and "replicas" not in status
    rs = cluster.store.list("replicasets", namespace=NS)[0][0]
    assert rs["status"]["replicas"] == 0 and "readyReplicas" not in rs["status"]


# -------------------------------------------------------------------------------------------- DaemonSets

def daemonset(name, tolerations=None, **pod_spec):
    spec = dict({"containers": [container(cpu="50m")]}, **pod_spec)
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"matchLabels": {"ds": name}},
                     "template": {"metadata": {"labels": {"ds": name}}, "spec": spec}}}


def test_daemonset_runs_one_pod_per_eligible_node_including_tainted_and_cordoned_ones(cluster):
    nodes = cluster.ready_nodes(3)
    cluster.taint(nodes[0], "dedicated", "NoSchedule", "infra")
    cluster.cordon(nodes[1])
    time.sleep(2.0 / SPEED)
    cluster.store.create("daemonsets", daemonset("agent", tolerations=[{"key": "dedicated", "operator": "Exists"}]),
                         client="test")
    cluster.store.create("daemonsets", daemonset("picky"), client="test")
    cluster.idle()
    agent = cluster.pods("ds=agent")
    assert sorted(p["spec"]["nodeName"] for p in agent) == sorted(nodes)
    assert all(is_ready(p) for p in agent)
    assert any(t["key"] == "node.kubernetes.io/unschedulable" for t in agent[0]["spec"]["tolerations"])
    picky = cluster.pods("ds=picky")
    assert sorted(p["spec"]["nodeName"] for p in picky) == sorted(nodes[1:]), "no pod where the taint is not tolerated"
    status = cluster.store.get("daemonsets", NS, "agent")["status"]
    assert {k: status[k] for k in ("desiredNumberScheduled", "currentNumberScheduled", "numberReady", "numberAvailable",
                                   "numberMisscheduled")} == {"desiredNumberScheduled": 3, "currentNumberScheduled": 3,
                                                              "numberReady": 3, "numberAvailable": 3,
                                                              "numberMisscheduled": 0}
    # deleted while the node remains: recreated there
    gone = agent[0]
    cluster.store.remove("pods", NS, gone["metadata"]["name"], client="test")
    cluster.wait(lambda: any(p["spec"]["nodeName"] == gone["spec"]["nodeName"] and p["metadata"]["uid"] != gone["metadata"]["uid"]
                             for p in cluster.pods("ds=agent")), "recreated")
    # a new node gets its daemon pod once Ready
    extra = cluster.ready_nodes(1)
    cluster.wait(lambda: any(p["spec"]["nodeName"] == extra[0] for p in cluster.pods("ds=agent")), "new node covered")
    cluster.idle()


def test_daemonset_rolling_update_replaces_pods_one_node_at_a_time(cluster):
    cluster.ready_nodes(3)
    cluster.store.create("daemonsets", daemonset("logs"), client="test")
    cluster.idle()
    started = cluster.clock.now()
    cluster.store.mutate("daemonsets", NS, "logs", lambda d: d["spec"]["template"]["spec"]["containers"][0].update(
        image="nginx:1.26"), client="kubectl")

    def rolled():
        pods = cluster.pods("ds=logs")
        return len(pods) == 3 and all(p["spec"]["containers"][0]["image"] == "nginx:1.26" and is_ready(p) for p in pods)
    cluster.wait(rolled, "rolled")
    ready, lowest = set(), 3
    for e in cluster.owner_events("DaemonSet/default/logs", ("pod.ready", "pod.unready", "pod.terminating", "pod.deleted")):
        if e["kind"] == "pod.ready":
            ready.add(e["uid"])
        else:
            ready.discard(e["uid"])
        if e["t"] >= started:
            lowest = min(lowest, len(ready))
    assert lowest >= 2, "maxUnavailable 1"
    assert cluster.store.get("daemonsets", NS, "logs")["status"]["updatedNumberScheduled"] == 3


# ------------------------------------------------------------------------------------------------- PDBs

def pdb(name, app, **spec):
    return {"metadata": {"name": name, "namespace": NS},
            "spec": dict({"selector": {"matchLabels": {"app": app}}}, **spec)}


def _pdb_status(cluster, name):
    return cluster.store.get("poddisruptionbudgets", NS, name).get("status") or {}


def _counts(status):
    return tuple(status.get(k) for k in ("expectedPods", "currentHealthy", "desiredHealthy", "disruptionsAllowed"))


def test_pdb_status_follows_the_pods(cluster):
    cluster.ready_nodes(3)
    cluster.store.create("deployments", deployment("db", replicas=4), client="test")
    cluster.store.create("poddisruptionbudgets", pdb("db-min", "db", minAvailable=3), client="test")
    cluster.store.create("poddisruptionbudgets", pdb("db-pct", "db", maxUnavailable="50%"), client="test")
    cluster.store.create("poddisruptionbudgets", pdb("db-minpct", "db", minAvailable="60%"), client="test")
    cluster.idle()
    assert _counts(_pdb_status(cluster, "db-min")) == (4, 4, 3, 1)
    assert _counts(_pdb_status(cluster, "db-pct")) == (4, 4, 2, 2)
    assert _counts(_pdb_status(cluster, "db-minpct")) == (4, 4, 3, 1), "60% of 4 rounds up to 3"
    status = _pdb_status(cluster, "db-min")
    assert status["observedGeneration"] == 1
    assert condition({"status": status}, "DisruptionAllowed")["reason"] == "SufficientPods"
    victim = cluster.pods("app=db")[0]["metadata"]["name"]
    cluster.evict(victim, grace=30)
    cluster.wait(lambda: _pdb_status(cluster, "db-min").get("currentHealthy") == 3, "terminating pod not healthy")
    assert _pdb_status(cluster, "db-min")["disruptionsAllowed"] == 0
    assert condition({"status": _pdb_status(cluster, "db-min")}, "DisruptionAllowed")["reason"] == "InsufficientPods"
    cluster.idle()
    assert _counts(_pdb_status(cluster, "db-min")) == (4, 4, 3, 1)
    cluster.store.mutate("deployments", NS, "db", lambda d: d["spec"].update(replicas=6), client="kubectl")
    cluster.idle()
    assert _counts(_pdb_status(cluster, "db-pct")) == (6, 6, 3, 3)
    pdb_events = [e for e in cluster.events.events("pdb.status") if e["pdb"] == "default/db-min"]
    assert pdb_events and pdb_events[-1]["currentHealthy"] == 6


def test_disrupted_pods_count_as_unhealthy_until_deleted_or_two_minutes_pass(cluster):
    cluster.ready_nodes(2)
    cluster.store.create("deployments", deployment("cache", replicas=3), client="test")
    cluster.store.create("poddisruptionbudgets", pdb("cache", "cache", maxUnavailable=1), client="test")
    cluster.idle()
    assert _counts(_pdb_status(cluster, "cache")) == (3, 3, 2, 1)
    names = [p["metadata"]["name"] for p in cluster.pods("app=cache")]

    def record_eviction(obj):   # what the eviction handler writes before the pod is deleted
        obj["status"]["disruptedPods"] = {names[0]: cluster.clock.timestamp()}
        obj["status"]["disruptionsAllowed"] = 0
    cluster.store.mutate("poddisruptionbudgets", NS, "cache", record_eviction, client="test-eviction")
    cluster.wait(lambda: _pdb_status(cluster, "cache").get("currentHealthy") == 2, "disrupted pod not healthy")
    assert list(_pdb_status(cluster, "cache")["disruptedPods"]) == [names[0]], "the entry is kept while it counts"
    assert _pdb_status(cluster, "cache")["disruptionsAllowed"] == 0
    marked = cluster.clock.now()
    cluster.wait(lambda: "disruptedPods" not in _pdb_status(cluster, "cache"), "entry expires")
    assert cluster.clock.now() - marked >= 120 - 5
    assert _counts(_pdb_status(cluster, "cache")) == (3, 3, 2, 1)


def test_pdb_created_after_its_pods_and_relabelled_pods_are_counted(cluster):
    cluster.ready_nodes(2)
    cluster.store.create("deployments", deployment("late", replicas=2), client="test")
    cluster.idle()
    cluster.store.create("poddisruptionbudgets", pdb("late", "late", minAvailable=1), client="test")
    cluster.wait(lambda: _counts(_pdb_status(cluster, "late")) == (2, 2, 1, 1), "counted")
    name = cluster.pods("app=late")[0]["metadata"]["name"]
    cluster.store.mutate("pods", NS, name, lambda p: p["metadata"]["labels"].update(app="quarantine"), client="kubectl")
    cluster.wait(lambda: _pdb_status(cluster, "late").get("currentHealthy") == 2 and
                 len(cluster.pods("app=late")) == 2, "relabelled pod left the budget, a new one joined")


# ---------------------------------------------------------------------------------------- garbage collection

def test_deleting_a_deployment_cascades_to_replicasets_and_pods(cluster):
    cluster.ready_nodes(2)
    cluster.store.create("deployments", deployment("temp", replicas=3), client="test")
    cluster.idle()
    uids = {p["metadata"]["uid"] for p in cluster.pods("app=temp")}
    cluster.store.remove("deployments", NS, "temp", client="kubectl")
    cluster.wait(lambda: not cluster.store.list("replicasets", namespace=NS)[0] and not cluster.pods("app=temp"),
                 "everything collected")
    ending = [e for e in cluster.events.events("pod.terminating") if e["uid"] in uids]
    assert len(ending) == 3
    assert all(e["how"] == "deleted" and e["reason"] == "garbage-collected" and e["client"] == "sandbox-garbage-collector"
               for e in ending)
    cluster.idle()


def test_daemonset_deletion_collects_its_pods_and_orphan_finalizer_keeps_them(cluster):
    cluster.ready_nodes(2)
    cluster.store.create("daemonsets", daemonset("gone"), client="test")
    cluster.store.create("deployments", deployment("kept", replicas=2), client="test")
    cluster.idle()
    cluster.store.remove("daemonsets", NS, "gone", client="kubectl")
    cluster.wait(lambda: not cluster.pods("ds=gone"), "daemon pods collected")
    rs = cluster.store.list("replicasets", namespace=NS)[0][0]

    def orphan(obj):   # kubectl delete --cascade=orphan: the API sets the finalizer and deletionTimestamp
        obj["metadata"]["finalizers"] = ["orphan"]
        obj["metadata"]["deletionTimestamp"] = cluster.clock.timestamp()
    cluster.store.mutate("replicasets", NS, rs["metadata"]["name"], orphan, client="kubectl")
    kept = {p["metadata"]["uid"] for p in cluster.pods("app=kept")}
    cluster.wait(lambda: (cluster.store.try_get("replicasets", NS, rs["metadata"]["name"]) or rs)["metadata"]["uid"]
                 != rs["metadata"]["uid"], "orphaning owner removed (and the Deployment made its ReplicaSet again)")
    cluster.idle()
    pods = cluster.pods("app=kept")
    new_rs = cluster.store.get("replicasets", NS, rs["metadata"]["name"])
    assert {p["metadata"]["uid"] for p in pods} == kept, "the orphans survived and were adopted, not replaced"
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == new_rs["metadata"]["uid"] for p in pods)
    assert not [e for e in cluster.events.events("pod.deleted") if e["uid"] in kept]


# ---------------------------------------------------------------------------------------------------- scale

def test_two_hundred_nodes_and_two_thousand_pods_converge(request):
    cluster = make_cluster(request, speed=50.0)
    azs = ("us-east-1a", "us-east-1b", "us-east-1c")
    names = []
    for i in range(200):
        names += cluster.launch(az=azs[i % 3])
    assert cluster.ctl.wait_idle(300), cluster.ctl.errors
    assert all(is_ready(n) for n in cluster.store.list("nodes")[0])
    for i in range(20):
        cluster.store.create("deployments", deployment("app-%d" % i, replicas=100, cpu="50m"), client="test")
        cluster.store.create("poddisruptionbudgets", pdb("app-%d" % i, "app-%d" % i, maxUnavailable=1), client="test")
    cluster.store.create("daemonsets", daemonset("node-agent"), client="test")
    assert cluster.ctl.wait_idle(300), cluster.ctl.errors
    pods = cluster.pods()
    assert len(pods) == 2000 + 200
    assert all(is_ready(p) for p in pods)
    per_node = {}
    for p in pods:
        per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
    assert len(per_node) == 200 and max(per_node.values()) <= 2 * min(per_node.values()), "spread over the nodes"
    assert all(_counts(_pdb_status(cluster, "app-%d" % i)) == (100, 100, 99, 1) for i in range(20))
    ds = cluster.store.get("daemonsets", NS, "node-agent")["status"]
    assert ds["numberReady"] == ds["desiredNumberScheduled"] == 200


def test_objects_handed_to_watchers_are_never_modified(cluster):
    """Controllers write new objects; a snapshot a client received stays as it was."""
    cluster.ready_nodes(1)
    watcher = cluster.store.watch("pods", since="0")
    cluster.store.create("deployments", deployment("snap", replicas=2), client="test")
    cluster.idle()
    seen = []
    while True:
        item = watcher.next(0)
        if item is None:
            break
        seen.append((item[1], copy_obj(item[1])))
    watcher.close()
    assert len(seen) >= 6
    assert all(obj == frozen for obj, frozen in seen)


def test_no_execute_taint_deletes_intolerant_pods_now_and_tolerant_ones_after_their_toleration_seconds(cluster):
    nodes = cluster.ready_nodes(2)
    for name, tolerations in (("plain", None),
                              ("brief", [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute",
                                          "tolerationSeconds": 30}]),
                              ("forever", [{"key": "maintenance", "operator": "Exists"}])):
        spec = {"nodeSelector": {"kubernetes.io/hostname": nodes[0]}}
        if tolerations:
            spec["tolerations"] = tolerations
        cluster.store.create("pods", naked_pod(name, **spec), client="test")
    cluster.idle()
    uids = {n: cluster.pod(n)["metadata"]["uid"] for n in ("plain", "brief", "forever")}
    tainted = cluster.clock.now()
    cluster.taint(nodes[0], "maintenance", "NoExecute", "true")
    cluster.wait(lambda: cluster.pod("plain") is None and cluster.pod("brief") is None, "evicted by the taint")
    ends = {e["uid"]: e for e in cluster.events.events("pod.terminating")}
    assert ends[uids["plain"]]["t"] - tainted < 10.0
    assert ends[uids["brief"]]["t"] - tainted >= 30.0 - 0.5
    assert all((ends[uids[n]]["how"], ends[uids[n]]["reason"]) == ("deleted", "taint-eviction") for n in ("plain", "brief"))
    assert is_ready(cluster.pod("forever")), "a toleration without seconds tolerates forever"


def test_a_pod_bound_to_a_node_that_does_not_exist_is_collected(cluster):
    cluster.ready_nodes(1)
    cluster.store.create("pods", naked_pod("lost", nodeName="ip-10-9-9-9.ec2.internal"), client="test")
    created = cluster.clock.now()
    cluster.wait(lambda: cluster.pod("lost") is None, "pod GC")
    deleted = cluster.events.events("pod.deleted")[-1]
    assert (deleted["pod"], deleted["how"], deleted["client"]) == ("default/lost", "killed", "sandbox-pod-gc")
    assert deleted["t"] - created >= 40.0 - 0.5
    cluster.idle()


def test_an_eks_optimized_ami_runs_the_kubelet_its_name_says():
    from sandbox.kube.controllers.nodes import kubelet_version  # pylint: disable=import-outside-toplevel
    default = "v1.30.4-eks-a737599"
    assert kubelet_version({"image_name": "amazon-eks-node-1.28-v20240917"}, default) == "v1.28.0-eks-sandbox"
    assert kubelet_version({"image_name": "amazon-eks-node-al2023-x86_64-standard-1.31-v20241024"}, default) == "v1.31.0-eks-sandbox"
    assert kubelet_version({"image_name": "bottlerocket-aws-k8s-1.29-x86_64-v1.19.0-c5fb0e4b"}, default) == "v1.29.0-eks-sandbox"
    assert kubelet_version({"image_name": "amazon-eks-node-1.30-v20240917"}, default) == default
    assert kubelet_version({"image_name": "sandbox-node-1.29-v20240101"}, default) == default   # the sandbox's own images
    assert kubelet_version({}, default) == default


def test_an_ami_tagged_with_a_kubelet_version_runs_that_kubelet_whatever_its_name_says():
    from sandbox.kube.controllers.nodes import kubelet_version  # pylint: disable=import-outside-toplevel
    default = "v1.30.4-eks-a737599"
    named = {"image_name": "amazon-eks-node-1.30-v20240917"}
    assert kubelet_version(dict(named, image_kubelet="v1.29.8-eks-sandbox"), default) == "v1.29.8-eks-sandbox"
    assert kubelet_version(dict(named, image_kubelet=None), default) == default
    assert kubelet_version({"image_name": "sandbox-node-1.29-v20240101", "image_kubelet": "v1.31.0"}, default) == "v1.31.0"
