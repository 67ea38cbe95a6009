"""A Deployment of two replicas with no PodDisruptionBudget, its pods Ready 20 s after they start and on two nodes the
rollout drains together, keeps a Ready pod throughout: its implicit budget holds the second eviction until the first
pod's replacement is Ready, at the defaults and with no surge and two nodes out at once. The plan names it. Turned off,
the two pods go at once, as Kubernetes allows, and the Deployment has no Ready pod for as long as a replacement takes
to be Ready.

A ReplicaSet that no Deployment owns keeps a Ready pod the same way. Embedded backend (its scheduler spreads a
workload's replicas over the nodes, which the tests check).

A StatefulSet of three without a budget, one pod on each of three nodes, never goes without a Ready pod at the
defaults, on either backend (the real kube-controller-manager's StatefulSet controller recreates each evicted pod under
its name); turned off, its three pods go in one wave and it has none until a replacement is Ready.
"""

import json

import pytest

from sandbox.drive.handle import promised_floor, wait_until
from tests.integration.modules.conftest import assert_safe

NODES = 3
READY_SECONDS = 20   # simulated seconds from a pod's start to its Ready

WORKER = """
apiVersion: v1
kind: Namespace
metadata: {name: jobs}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker, namespace: jobs}
spec:
  replicas: 2
  selector: {matchLabels: {app: worker}}
  template:
    metadata:
      labels: {app: worker}
      annotations: {sandbox.nodeops.io/ready-seconds: "%d"}
    spec:
      containers:
        - {name: worker, image: registry.example/worker:1, resources: {requests: {cpu: 100m, memory: 128Mi}}}
""" % READY_SECONDS

EXTRA = ["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s",
         "rolling_update_drain_timeout=10m"]


def worker_nodes(sandbox):
    pods = sandbox.core().list_namespaced_pod("jobs", label_selector="app=worker").items
    return sorted(p.spec.node_name for p in pods if not p.metadata.deletion_timestamp)


def start(start_sandbox):
    """A sandbox of three old nodes running only the worker, both of its pods Ready, on two different nodes."""
    sandbox = start_sandbox(nodes=NODES, azs=3, speed=20, kube="embedded")
    sandbox.apply(WORKER)
    wait_until("both worker pods Ready", lambda: (sandbox.apps().read_namespaced_deployment("worker", "jobs").status.ready_replicas
                                                  or 0) == 2, timeout=120)
    nodes = worker_nodes(sandbox)
    assert len(nodes) == 2 and len(set(nodes)) == 2, nodes   # one pod per node: a wave of both nodes can take both
    return sandbox


def roll(sandbox, tmp_path, extra):
    report_file = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(tmp_path, report=report_file, extra=EXTRA + list(extra))
    assert rc == 0, out[-4000:]
    result = json.loads(report_file.read_text())["node_groups"][0]
    assert result["status"] == "replaced" and result["nodes_replaced"] == NODES, result
    return result, sandbox.report()


@pytest.mark.parametrize("extra, max_unavailable", [
    ((), 1),
    (("rolling_update_max_surge=0", "rolling_update_max_unavailable=2"), 2),
], ids=["defaults", "no-surge-two-at-once"])
def test_a_two_replica_deployment_without_budget_keeps_a_ready_pod(start_sandbox, tmp_path, extra, max_unavailable):
    sandbox = start(start_sandbox)

    plan_file = tmp_path / "plan.json"
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="plan.yml", report=plan_file, extra=EXTRA + list(extra))
    assert rc == 0, out[-3000:]
    preflight = json.loads(plan_file.read_text())["node_groups"][0]["plan"]["preflight"]
    found = [blocker for node in preflight.values() for blocker in node["blocking"] if blocker["kind"] == "implicit_budget"]
    assert len(found) == 2 and all(blocker["severity"] == "warning" for blocker in found), found
    assert found[0]["message"] == ("Deployment jobs/worker: 2 replicas, no PodDisruptionBudget: drained one pod at a time, "
                                   "each waiting for another pod Ready (implicit budget; rolling_update_implicit_budget=false "
                                   "turns it off)")
    assert "implicit_budget (2)" in out and "Deployment jobs/worker: 2 replicas, no PodDisruptionBudget" in out

    _result, report = roll(sandbox, tmp_path, extra)
    assert_safe(report)
    worker = report["deployments"]["jobs/worker"]
    assert worker["zero_ready_seconds"] == 0 and worker["min_ready_pods"] >= 1, worker
    assert worker["ready_pods_at_end"] == 2
    assert report["evictions"]["max_evictions_per_pod"] <= 1
    assert min(report["min_ready_schedulable_nodes"].values()) >= promised_floor(NODES, max_unavailable)


def test_turned_off_both_pods_go_at_once_and_the_deployment_has_no_ready_pod(start_sandbox, tmp_path):
    """Kubernetes' plain behaviour, as kubectl drain: the scenario above is one where the implicit budget matters."""
    sandbox = start(start_sandbox)
    _result, report = roll(sandbox, tmp_path, ["rolling_update_implicit_budget=false"])
    assert_safe(report)   # no budget is broken: there is none
    worker = report["deployments"]["jobs/worker"]
    assert worker["min_ready_pods"] == 0 and worker["zero_ready_seconds"] > 0, worker


BATCH = """
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: batch, namespace: jobs}
spec:
  replicas: 2
  selector: {matchLabels: {app: batch}}
  template:
    metadata:
      labels: {app: batch}
      annotations: {sandbox.nodeops.io/ready-seconds: "%d"}
    spec:
      containers:
        - {name: batch, image: registry.example/batch:1, resources: {requests: {cpu: 100m, memory: 128Mi}}}
""" % READY_SECONDS


def fewest_ready(events, owner, since):
    """The fewest Ready pods ``owner`` (``Kind/namespace/name``) had from ``since`` on, from the sandbox's event log (its
    invariant report counts Deployments only)."""
    ready, fewest = set(), None
    for event in events:
        if event.get("owner") != owner or not event["kind"].startswith("pod."):
            continue
        if event["kind"] == "pod.ready":
            ready.add(event["uid"])
        elif event["kind"] in ("pod.unready", "pod.terminating", "pod.deleted"):
            ready.discard(event["uid"])
        if event["t"] >= since:
            fewest = len(ready) if fewest is None else min(fewest, len(ready))
    return fewest


def test_a_replicaset_no_deployment_owns_keeps_a_ready_pod_too(start_sandbox, tmp_path):
    sandbox = start(start_sandbox)
    sandbox.apply(BATCH)
    wait_until("both batch pods Ready", lambda: (sandbox.apps().read_namespaced_replica_set("batch", "jobs").status.ready_replicas
                                                 or 0) == 2, timeout=120)
    pods = sandbox.core().list_namespaced_pod("jobs", label_selector="app=batch").items
    assert len(set(p.spec.node_name for p in pods)) == 2   # on two of the nodes drained together
    since = sandbox.now()
    _result, report = roll(sandbox, tmp_path, [])
    assert_safe(report)
    assert fewest_ready(sandbox.events(), "ReplicaSet/jobs/batch", since) == 1
    assert report["deployments"]["jobs/worker"]["zero_ready_seconds"] == 0


STATEFUL = """
apiVersion: v1
kind: Namespace
metadata: {name: data}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: store, namespace: data}
spec:
  replicas: 3
  serviceName: store
  selector: {matchLabels: {app: store}}
  template:
    metadata:
      labels: {app: store}
      annotations: {sandbox.nodeops.io/ready-seconds: "%d"}
    spec:
      # one pod a node, as a store is spread (kube-scheduler honours the preference; the embedded scheduler spreads anyway)
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: store}}}
      containers:
        - {name: store, image: registry.example/store:1, resources: {requests: {cpu: 100m, memory: 128Mi}}}
""" % READY_SECONDS


def start_stateful(start_sandbox, **kwargs):
    """Three old nodes running only a StatefulSet of 3 without a budget, one Ready pod on each node, on the backend the
    run names (NODEOPS_SANDBOX_KUBE) unless ``kube`` is given."""
    sandbox = start_sandbox(nodes=NODES, azs=3, speed=20, **kwargs)
    sandbox.apply(STATEFUL)
    wait_until("the three store pods Ready", lambda: (sandbox.apps().read_namespaced_stateful_set("store", "data").status.ready_replicas
                                                      or 0) == 3, timeout=300)
    pods = sandbox.core().list_namespaced_pod("data", label_selector="app=store").items
    assert sorted(p.metadata.name for p in pods) == ["store-0", "store-1", "store-2"]
    assert len({p.spec.node_name for p in pods}) == NODES, [p.spec.node_name for p in pods]   # one per node
    return sandbox


@pytest.mark.reference
def test_a_statefulset_of_three_without_budget_never_goes_without_a_ready_pod(start_sandbox, tmp_path):
    sandbox = start_stateful(start_sandbox)
    _result, report = roll(sandbox, tmp_path, [])
    assert_safe(report)
    store = report["statefulsets"]["data/store"]
    assert store["zero_ready_seconds"] == 0 and store["min_ready_pods"] >= 1, store
    assert store["ready_pods_at_end"] == 3, store
    assert report["evictions"]["max_evictions_per_pod"] <= 1
    assert min(report["min_ready_schedulable_nodes"].values()) >= promised_floor(NODES, 1)


def test_turned_off_the_statefulset_s_pods_go_together_and_it_has_no_ready_pod(start_sandbox, tmp_path):
    """The same rollout without the implicit budget: the three nodes go in one wave, as Kubernetes allows, and the
    StatefulSet has no Ready pod until a replacement is Ready."""
    sandbox = start_stateful(start_sandbox, kube="embedded")
    _result, report = roll(sandbox, tmp_path, ["rolling_update_implicit_budget=false"])
    assert_safe(report)   # no budget is broken: there is none
    store = report["statefulsets"]["data/store"]
    assert store["min_ready_pods"] == 0 and store["zero_ready_seconds"] > 0, store
