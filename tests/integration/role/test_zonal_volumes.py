"""A single-replica database whose ReadWriteOnce volume is pinned to one zone: the plan names it and lists its downtime,
the rollout evicts it (a restart's new pod could never attach the volume the old one holds), moves it to the new node
of its zone and terminates the old instance only once the volume is detached; a rerun that would strand it (the group no
longer launches in its zone) is refused before any change.

Embedded backend only: the reference backend's kube-controller-manager attaches no volume without a CSI driver on the
nodes, which kwok has not (sandbox/README.md, Fidelity).
"""

import json
import os

import pytest

from sandbox.drive.handle import promised_floor, wait_until
from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"
ZONE = "us-east-1a"
DETACH = 600   # simulated seconds the volume takes to detach: 30 s of wall time at speed 20, longer than a step here

DATABASE = """
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-db
  annotations: {sandbox.nodeops.io/detach-seconds: "%(detach)d"}
spec:
  capacity: {storage: 20Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: gp3
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0db0000000000001, fsType: ext4}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [%(zone)s]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: db-data, namespace: shop}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: gp3
  volumeName: pv-db
  resources: {requests: {storage: 20Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: shop}
spec:
  replicas: 1
  strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 0, maxSurge: 1}}
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - {name: db, image: registry.example/postgres:16, resources: {requests: {cpu: 250m, memory: 512Mi}}}
      volumes:
        - {name: data, persistentVolumeClaim: {claimName: db-data}}
""" % {"detach": DETACH, "zone": ZONE}


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    handle = start_sandbox(nodes=3, azs=3, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")],
                           kube="embedded")
    handle.apply(DATABASE)
    wait_until("the database Ready", lambda: (handle.apps().read_namespaced_deployment("db", "shop").status.ready_replicas or 0) == 1,
               timeout=120)
    return handle


def db_pod(sandbox):
    pods = sandbox.core().list_namespaced_pod("shop", label_selector="app=db").items
    return [p for p in pods if not p.metadata.deletion_timestamp][0]


def test_the_pinned_database_is_evicted_moves_within_its_zone_and_its_node_goes_once_the_volume_is_detached(sandbox, tmp_path):
    old_pod = db_pod(sandbox)
    old_node = old_pod.spec.node_name
    extra = ["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s",
             "rolling_update_drain_timeout=3m"]

    plan_file = tmp_path / "plan.json"
    rc, out = sandbox.run_role_playbook(tmp_path, playbook="plan.yml", report=plan_file, extra=extra)
    assert rc == 0, out[-3000:]
    preflight = json.loads(plan_file.read_text())["node_groups"][0]["plan"]["preflight"][old_node]
    kinds = {(blocker["pod"], blocker["kind"]) for blocker in preflight["blocking"]}
    assert ("shop/%s" % old_pod.metadata.name, "zonal_volume") in kinds, preflight["blocking"]
    assert [entry["pod"] for entry in preflight["downtime"]] == ["shop/%s" % old_pod.metadata.name]
    assert "ReadWriteOnce claim(s) db-data" in preflight["downtime"][0]["reason"]

    since = sandbox.now()
    report_file = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(tmp_path, report=report_file, extra=extra)
    assert rc == 0, out[-4000:]
    result = json.loads(report_file.read_text())["node_groups"][0]
    assert result["status"] == "replaced" and result["nodes_replaced"] == 3, result
    assert "shop/%s" % old_pod.metadata.name not in result["restarted"]
    moved = db_pod(sandbox)
    assert moved.metadata.uid != old_pod.metadata.uid and moved.status.phase == "Running"
    node = sandbox.core().read_node(moved.spec.node_name)
    assert node.metadata.labels["topology.kubernetes.io/zone"] == ZONE and moved.spec.node_name != old_node
    # the old node's instance waited for its volume to be detached before it was terminated
    waits = [wait for wait in result["termination_waits"] if wait["node"] == old_node]
    assert len(waits) == 1 and waits[0]["volumes"] == ["pv-db"] and not waits[0]["timed_out"], result["termination_waits"]
    assert 0 < waits[0]["waited_seconds"] < 300

    report = sandbox.report()
    assert_safe(report)
    assert min(report["min_ready_schedulable_nodes"].values()) >= promised_floor(3, 1)
    assert report["evictions"]["max_evictions_per_pod"] <= 1
    # the new pod waited for the volume while the old node let it go, and no longer: the evicted database was down for
    # the detach and the attach (the plan's downtime), not until the drain timed out
    volumes = report["volumes"]
    assert volumes["stuck_pods"] == 1 and volumes["stuck_details"][0]["reason"] == "Multi-Attach", volumes
    assert DETACH - 20 <= volumes["stuck_seconds"] <= DETACH + 120, volumes
    assert 0 < report["deployments"]["shop/db"]["zero_ready_seconds"] <= DETACH + 200
    events = [event for event in sandbox.events() if event["t"] >= since]
    terminated = next(e["t"] for e in events if e["kind"] == "instance.terminated" and e.get("instance_id") == waits[0]["instance_id"])
    attached = next(e["t"] for e in events if e["kind"] == "pod.volume_waiting" and e["reason"] == "attaching"
                    and e["uid"] == moved.metadata.uid)
    assert terminated >= attached   # the volume had left the old node before its instance was terminated


def test_a_rollout_that_would_strand_the_volume_is_refused_before_any_change(sandbox, tmp_path):
    autoscaling, ec2 = sandbox.aws("autoscaling"), sandbox.aws("ec2")
    subnets = {s["AvailabilityZone"]: s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]}
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=GROUP, VPCZoneIdentifier=",".join(
        subnet for zone, subnet in sorted(subnets.items()) if zone != ZONE))
    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, node_groups=[{"name": GROUP, "image_id": sandbox.state["amis"]["old"]}])
    assert rc != 0
    assert "volume pv-db (claim shop/db-data) on outdated node %s is pinned to %s, where the group launches no instance" \
        % (db_pod(sandbox).spec.node_name, ZONE) in out, out[-3000:]
    assert sandbox.mutating_requests(since=since) == []
