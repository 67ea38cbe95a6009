"""One rollout per node group at a time: a run that finds the group's Lease held by another run stops before any
change, naming the holder and until when; once that Lease has expired (its run died), the next run takes it over,
finishes the rollout and releases the Lease."""

import datetime
import json
import os

import pytest
from kubernetes import client

from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"
NAMESPACE = "kube-system"
LEASE = "nodeops-rollout-sandbox-nodes"   # the group's name is a DNS-1123 name already: no hash suffix
OTHER_RUN = "awx-job-41@awx-ee-7f9c4/0a1b2c3d"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=3, azs=3, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


def micro_time(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def run_upgrade(sandbox, tmp_path, report):
    extra = ["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"]
    return sandbox.run_role_playbook(tmp_path, extra=extra, report=report)


def test_a_held_lease_stops_a_second_run_before_any_change_and_an_expired_one_is_taken_over(sandbox, tmp_path):
    leases = client.CoordinationV1Api(sandbox.kube("test-setup"))
    now = datetime.datetime.now(datetime.timezone.utc)
    acquired = now - datetime.timedelta(minutes=5)
    # what another run (an AWX schedule) holding the group looks like: renewed a minute ago, for 30 minutes
    renewed = now - datetime.timedelta(minutes=1)
    spec = {"holderIdentity": OTHER_RUN, "leaseDurationSeconds": 1800, "acquireTime": micro_time(acquired),
            "renewTime": micro_time(renewed), "leaseTransitions": 0}
    leases.create_namespaced_lease(NAMESPACE, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                               "metadata": {"name": LEASE}, "spec": spec})
    expires = (renewed + datetime.timedelta(seconds=1800)).strftime("%Y-%m-%dT%H:%M:%SZ")

    since = sandbox.now() + 0.01
    rc, out = run_upgrade(sandbox, tmp_path, tmp_path / "refused.json")
    assert rc != 0, out[-3000:]
    assert OTHER_RUN in out and expires in out, out[-3000:]
    assert "%s/%s" % (NAMESPACE, LEASE) in out
    assert [e for e in sandbox.mutating_requests(since=since) if e["t"] > since] == []
    held = leases.read_namespaced_lease(LEASE, NAMESPACE)
    assert held.spec.holder_identity == OTHER_RUN and held.spec.renew_time == renewed
    refused = json.loads((tmp_path / "refused.json").read_text())["node_groups"][0]
    assert refused["status"] == "failed" and OTHER_RUN in refused["message"]

    # that run died: its lease ran out an hour ago
    gone = now - datetime.timedelta(hours=1)
    leases.replace_namespaced_lease(LEASE, NAMESPACE, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": LEASE, "resourceVersion": held.metadata.resource_version},
        "spec": dict(spec, renewTime=micro_time(gone))})

    report = tmp_path / "result.json"
    rc, out = run_upgrade(sandbox, tmp_path, report)
    assert rc == 0, out[-3000:]
    group = json.loads(report.read_text())["node_groups"][0]
    assert group["status"] == "replaced" and int(group["nodes_replaced"]) == 3
    assert_safe(sandbox.report())
    released = leases.read_namespaced_lease(LEASE, NAMESPACE)
    assert not released.spec.holder_identity, released.spec
    assert released.spec.lease_transitions == 1   # taken over from the dead run once
