"""Persistent volumes in the embedded control plane: claims bind, the scheduler honours a volume's node affinity, a
ReadWriteOnce volume is attached to one node at a time, and the report counts the pods a volume kept from running.

Built like test_controllers.py: a Store and the Controllers, no HTTP server, 100 simulated seconds per wall second.
"""

from sandbox.report import build_report
from sandbox.tests.test_controllers import NS, Cluster, condition, deployment, ready_pods

import pytest


@pytest.fixture
def cluster():
    c = Cluster(volume_attach_seconds=5.0, volume_detach_seconds=10.0)
    yield c
    c.close()


def zonal_volume(name, zone):
    return {"metadata": {"name": name},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "gp3",
                     "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0%s" % name[-4:].replace("-", "0"), "fsType": "ext4"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}}}


def claim(name, volume=None, size="10Gi"):
    spec = {"accessModes": ["ReadWriteOnce"], "storageClassName": "gp3", "resources": {"requests": {"storage": size}}}
    if volume:
        spec["volumeName"] = volume
    return {"metadata": {"name": name, "namespace": NS}, "spec": spec}


def database(name, claim_name):
    return deployment(name, replicas=1, strategy={"type": "Recreate"},
                      volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}])


def attachments(cluster):
    return {(a["spec"]["source"]["persistentVolumeName"], a["spec"]["nodeName"]): a
            for a in cluster.store.list("volumeattachments")[0]}


def test_a_claim_binds_to_the_volume_it_names_or_to_one_that_fits(cluster):
    cluster.store.create("persistentvolumes", zonal_volume("pv-a", "us-east-1a"), client="test")
    cluster.store.create("persistentvolumes", zonal_volume("pv-b", "us-east-1b"), client="test")
    cluster.store.create("persistentvolumeclaims", claim("named", "pv-b"), client="test")
    cluster.store.create("persistentvolumeclaims", claim("any"), client="test")
    cluster.store.create("persistentvolumeclaims", claim("too-big", size="20Gi"), client="test")
    cluster.wait(lambda: (cluster.store.get("persistentvolumeclaims", NS, "any").get("status") or {}).get("phase") == "Bound",
                 "the claims bound")
    named = cluster.store.get("persistentvolumeclaims", NS, "named")
    assert named["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}}
    assert cluster.store.get("persistentvolumeclaims", NS, "any")["spec"]["volumeName"] == "pv-a"
    volume = cluster.store.get("persistentvolumes", None, "pv-a")
    assert volume["status"]["phase"] == "Bound" and volume["spec"]["claimRef"]["name"] == "any"
    cluster.idle()
    assert (cluster.store.get("persistentvolumeclaims", NS, "too-big").get("status") or {}).get("phase") != "Bound"


def test_a_pod_goes_only_where_its_volume_is_and_starts_once_it_is_attached(cluster):
    cluster.ready_nodes(1, az_cycle=("us-east-1b",))
    cluster.store.create("persistentvolumes", zonal_volume("pv-a", "us-east-1a"), client="test")
    cluster.store.create("persistentvolumeclaims", claim("data", "pv-a"), client="test")
    cluster.store.create("deployments", database("db", "data"), client="test")
    pod = cluster.wait(lambda: next((p for p in cluster.pods("app=db")
                                     if (condition(p, "PodScheduled") or {}).get("status") == "False"), None), "db Pending")
    assert "1 node(s) had volume node affinity conflict" in condition(pod, "PodScheduled")["message"]
    home = cluster.ready_nodes(1, az_cycle=("us-east-1a",))[0]
    cluster.wait(lambda: ready_pods(cluster, "app=db"), "db Ready in us-east-1a")
    running = ready_pods(cluster, "app=db")[0]
    assert running["spec"]["nodeName"] == home
    attachment = attachments(cluster)[("pv-a", home)]
    assert attachment["spec"]["attacher"] == "ebs.csi.aws.com" and attachment["status"]["attached"] is True
    assert attachment["metadata"]["name"].startswith("csi-") and len(attachment["metadata"]["name"]) == 68
    kinds = [e["kind"] for e in cluster.events.events("pod.volume_")]
    assert kinds[:2] == ["pod.volume_unschedulable", "pod.volume_scheduled"] and "pod.volume_attached" in kinds


def test_a_read_write_once_volume_moves_only_once_the_old_node_let_it_go(cluster):
    first, second = cluster.ready_nodes(2, az_cycle=("us-east-1a",))
    cluster.store.create("persistentvolumes", zonal_volume("pv-a", "us-east-1a"), client="test")
    cluster.store.create("persistentvolumeclaims", claim("data", "pv-a"), client="test")
    cluster.store.create("deployments", database("db", "data"), client="test")
    cluster.wait(lambda: ready_pods(cluster, "app=db"), "db Ready")
    old = ready_pods(cluster, "app=db")[0]
    held = old["spec"]["nodeName"]
    other = second if held == first else first
    cluster.cordon(held)
    start = cluster.clock.now()
    cluster.evict(old["metadata"]["name"], grace=2)
    cluster.wait(lambda: [p for p in ready_pods(cluster, "app=db") if p["spec"]["nodeName"] == other], "db Ready elsewhere")
    assert list(attachments(cluster)) == [("pv-a", other)]
    waits = [e for e in cluster.events.events("pod.volume_waiting") if e["node"] == other]
    assert [e["reason"] for e in waits] == ["Multi-Attach", "attaching"]
    attached = next(e for e in cluster.events.events("pod.volume_attached") if e["node"] == other)
    # the old pod needed 2 s to stop, its volume 10 s more to detach, then 5 s to attach on the other node
    assert attached["t"] - start >= 2 + 10 + 5 - 0.5
    volumes = build_report(cluster.events.events())["volumes"]
    assert volumes["stuck_pods"] == 1 and volumes["stuck_details"][0]["reason"] == "Multi-Attach"
    assert 10 <= volumes["stuck_seconds"] <= 25   # from the new pod's binding until its volume could be attached


def test_volumes_claims_and_attachments_are_served_through_the_api_with_their_real_shapes():
    from kubernetes import client  # pylint: disable=import-outside-toplevel
    from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel
    from sandbox.tests.test_kube_api import start_sandbox  # pylint: disable=import-outside-toplevel
    box = start_sandbox()
    try:
        box.core.create_namespace({"metadata": {"name": NS}})
        storage = client.StorageV1Api(box.raw)
        volume = box.core.create_persistent_volume(zonal_volume("pv-api1", "us-east-1a"))
        assert volume.status.phase == "Available" and volume.spec.persistent_volume_reclaim_policy == "Retain"
        assert volume.spec.node_affinity.required.node_selector_terms[0].match_expressions[0].values == ["us-east-1a"]
        created = box.core.create_namespaced_persistent_volume_claim(NS, claim("data", "pv-api1"))
        assert created.status.phase == "Pending" and created.spec.volume_mode == "Filesystem"
        assert [c.metadata.name for c in box.core.list_namespaced_persistent_volume_claim(NS).items] == ["data"]
        with pytest.raises(ApiException) as refused:
            box.core.create_namespaced_persistent_volume_claim(NS, {"metadata": {"name": "bad"}, "spec": {}})
        assert refused.value.status == 422 and "spec.accessModes" in refused.value.body
        attachment = storage.create_volume_attachment({
            "metadata": {"name": "csi-0123"},
            "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "ip-10-0-0-10.ec2.internal", "source": {"persistentVolumeName": "pv-api1"}}})
        assert attachment.spec.source.persistent_volume_name == "pv-api1"
        listed = storage.list_volume_attachment(field_selector="metadata.name=csi-0123").items
        assert [a.spec.node_name for a in listed] == ["ip-10-0-0-10.ec2.internal"]
        resources = {r.name for r in client.StorageV1Api(box.raw).get_api_resources().resources}
        assert {"volumeattachments", "volumeattachments/status"} <= resources
    finally:
        box.api.stop()
