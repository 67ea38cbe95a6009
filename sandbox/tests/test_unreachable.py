"""A node whose kubelet stopped posting status, as the node lifecycle controller and the API server treat it: Ready
Unknown after the grace period, tainted unreachable, its pods not Ready, nothing deleted on it confirmed gone - until a
deletion with grace 0. Built like test_controllers.py (a Store and the Controllers, 100 simulated seconds a second)."""

from sandbox.kube.controllers.nodes import NODE_MONITOR_GRACE
from sandbox.tests.test_controllers import NS, Cluster, condition, deployment, ready_pods

import pytest


@pytest.fixture
def cluster():
    c = Cluster()
    yield c
    c.close()


def test_an_unreachable_node_goes_unknown_its_pods_unready_and_its_terminating_pods_stay(cluster):
    lost, _other = cluster.ready_nodes(2)
    cluster.store.create("deployments", deployment("web", replicas=4), client="test")
    cluster.wait(lambda: len(ready_pods(cluster, "app=web")) == 4, "web Ready")
    on_lost = [p["metadata"]["name"] for p in ready_pods(cluster, "app=web") if p["spec"]["nodeName"] == lost]
    assert on_lost
    started = cluster.clock.now()
    cluster.ctl.nodes.lose_kubelet(lost)

    def unknown():
        found = cluster.store.get("nodes", None, lost)
        return found if (condition(found, "Ready") or {}).get("status") == "Unknown" else None

    node = cluster.wait(unknown, "the node Unknown")
    assert cluster.clock.now() - started >= NODE_MONITOR_GRACE - 1
    taints = {(t["key"], t["effect"]) for t in node["spec"].get("taints") or []}
    assert {("node.kubernetes.io/unreachable", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute")} <= taints
    cluster.wait(lambda: all((condition(cluster.pod(name), "Ready") or {}).get("status") == "False" for name in on_lost),
                 "its pods not Ready")
    cluster.evict(on_lost[0], grace=2)
    cluster.clock.sleep(30)
    assert "deletionTimestamp" in cluster.pod(on_lost[0])["metadata"]   # no kubelet confirms it gone
    with cluster.store.lock:
        cluster.store.remove("pods", NS, on_lost[0], client="test-drain", cause={"how": "deleted", "client": "test-drain"})
    assert cluster.pod(on_lost[0]) is None
    assert [e["node"] for e in cluster.events.events("fault.node_unreachable")] == [lost]
