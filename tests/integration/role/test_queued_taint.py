"""A run over two node groups soft-taints the second group's outdated nodes at its start, so that the pods it evicts
from the first group go to new nodes rather than to nodes it would drain again; when the run ends before the second
group is rolled (here: another run holds that group's lock), the soft taint is taken off again."""

import datetime
import json
import os

import pytest
from kubernetes import client

from tests.integration.modules.conftest import assert_safe

pytestmark = pytest.mark.reference   # the real kube-scheduler is where the soft taint matters

GROUPS = ("sandbox-nodes", "sandbox-nodes-2")
QUEUED = "nodeops.rollout/queued=true:PreferNoSchedule"
OTHER_RUN = "awx-job-77@awx-ee-5d1e2/7c6b5a4d"


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=3, azs=3, groups=len(GROUPS), speed=20,
                         workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


def group_nodes(sandbox, group):
    autoscaling, ec2 = sandbox.aws("autoscaling"), sandbox.aws("ec2")
    described = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"][0]
    ids = [instance["InstanceId"] for instance in described["Instances"]]
    reservations = ec2.describe_instances(InstanceIds=ids)["Reservations"]
    return sorted(instance["PrivateDnsName"] for r in reservations for instance in r["Instances"])


def hold_lock(sandbox, group):
    """What another run holding ``group`` looks like: its Lease renewed a minute ago, for 30 minutes."""
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = (now - datetime.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    client.CoordinationV1Api(sandbox.kube("test-setup")).create_namespaced_lease("kube-system", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "nodeops-rollout-" + group},
        "spec": {"holderIdentity": OTHER_RUN, "leaseDurationSeconds": 1800, "acquireTime": stamp, "renewTime": stamp,
                 "leaseTransitions": 0}})


def test_the_second_group_is_soft_tainted_while_the_first_rolls_and_released_when_the_run_stops(sandbox, tmp_path):
    second = group_nodes(sandbox, GROUPS[1])
    assert len(second) == 3 and len(group_nodes(sandbox, GROUPS[0])) == 3
    hold_lock(sandbox, GROUPS[1])
    since = sandbox.now()

    report = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(
        tmp_path, report=report,
        extra=["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"],
        node_groups=[{"name": group, "image_id": sandbox.state["amis"]["new"]} for group in GROUPS])
    assert rc != 0, out[-3000:]
    assert OTHER_RUN in out, out[-3000:]
    result = {group["name"]: group for group in json.loads(report.read_text())["node_groups"]}
    assert result[GROUPS[0]]["status"] == "replaced", result
    assert result[GROUPS[1]]["status"] == "failed" and OTHER_RUN in result[GROUPS[1]]["message"], result
    assert_safe(sandbox.report())

    events = [event for event in sandbox.events() if event["t"] >= since]
    # the soft taint went on every node of the second group before the first group's first eviction ...
    tainted = {event["node"]: event["t"] for event in events if event["kind"] == "node.taints" and QUEUED in event["taints"]}
    assert sorted(tainted) == second, (tainted, second)
    first_eviction = min(event["t"] for event in events if event["kind"] == "pod.terminating" and event.get("how") == "evicted")
    assert max(tainted.values()) < first_eviction
    # ... so no evicted pod landed on the second group, whose nodes a later run drains
    landed = [event for event in events if event["kind"] == "pod.scheduled" and event["node"] in second
              and not str(event.get("owner") or "").startswith("DaemonSet/")]
    assert landed == [], landed
    # and the run that stopped took it off again; the second group is untouched otherwise
    for node in sandbox.core().list_node().items:
        taints = ["%s=%s:%s" % (t.key, t.value or "", t.effect) for t in node.spec.taints or []]
        assert not [t for t in taints if t.startswith("nodeops.rollout/")], (node.metadata.name, taints)
    assert group_nodes(sandbox, GROUPS[1]) == second
