# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The loop each node's thread runs in node_drain (node_drain_loop.NodeLoop), against an in-memory API: what it does
when a request does not get through, when a budget is deleted while pods wait for it, when a restarted workload cannot
be read, how many requests it keeps in flight, and that a node whose drain stops on an error leaves the others going."""

from __future__ import annotations

import threading
import time

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import ANNOTATION_DRAINED_AT
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fake_kube import api_error, make_pod
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.runners.test_node_drain import budget, cluster, run, single_replica


def evictions(kube):
    return [target for verb, target in kube.requests if verb == "evict_pod"]


def test_an_eviction_that_does_not_get_through_is_sent_again():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1"))
    kube.eviction_script["shop/web-1"] = [ConnectionResetError("connection reset by peer"), None]
    result = run(kube, ["n1"])
    node = result["nodes"]["n1"]
    assert (node["status"], node["evicted"]) == ("drained", ["shop/web-1"])
    assert evictions(kube) == ["shop/web-1", "shop/web-1"]
    assert "shop/web-1" not in kube.pods


def test_a_budget_deleted_while_its_pod_waits_frees_the_pod():
    kube = cluster("n1")
    kube.add_pod(make_pod("web-1", "n1", labels={"app": "web"}))
    held = budget("web", {"app": "web"}, minAvailable=1)
    held["status"] = {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1}
    kube.pdbs.append(held)
    original = kube.get_pdb

    def get_pdb(namespace, name):
        kube.pdbs.remove(held)        # deleted before the drain reads it again
        kube.get_pdb = original
        return original(namespace, name)

    kube.get_pdb = get_pdb
    result = run(kube, ["n1"], timeout="2m")
    node = result["nodes"]["n1"]
    assert (node["status"], node["evicted"], node["eviction_retries"]) == ("drained", ["shop/web-1"], 0)
    assert [target for verb, target in kube.requests if verb == "get_pdb"] == ["shop/web"]
    assert evictions(kube) == ["shop/web-1"]


def test_a_restarted_pod_whose_deployment_cannot_be_read_is_reported_with_its_readiness_unknown():
    kube = cluster("n1", "n2")
    single_replica(kube, "n1")
    kube.restart_moves["shop/worker"] = ("shop/worker-1", make_pod("worker-2", "n2", owner=("ReplicaSet", "worker-rs2")))

    def get_deployment(namespace, name):
        raise api_error(403, 'deployments.apps "%s" is forbidden' % name, "Forbidden")

    kube.get_deployment = get_deployment
    result = run(kube, ["n1"])
    node = result["nodes"]["n1"]
    assert node["status"] == "drained" and node["evicted"] == []
    assert node["restarted"] == [{"pod": "shop/worker-1", "deployment": "shop/worker", "ready": None}]


def test_no_more_evictions_of_a_node_are_in_flight_than_max_concurrent_evictions():
    """Two nodes drained at once share a pool of 2 x max_concurrent_evictions threads: each node keeps its own bound."""
    kube = cluster("n1", "n2")
    for node in ("n1", "n2"):
        for index in range(5):
            kube.add_pod(make_pod("%s-web-%d" % (node, index), node))
    lock = threading.Lock()
    inflight, most = {"n1": 0, "n2": 0}, {"n1": 0, "n2": 0}
    original = kube.evict_pod

    def evict_pod(namespace, name, *args, **kwargs):
        node = name.split("-", 1)[0]
        with lock:
            inflight[node] += 1
            most[node] = max(most[node], inflight[node])
        try:
            time.sleep(0.05)          # long enough for the evictions sent at once to overlap
            return original(namespace, name, *args, **kwargs)
        finally:
            with lock:
                inflight[node] -= 1

    kube.evict_pod = evict_pod
    result = run(kube, ["n1", "n2"], max_concurrent_evictions=2)
    for node in ("n1", "n2"):
        assert sorted(result["nodes"][node]["evicted"]) == ["shop/%s-web-%d" % (node, index) for index in range(5)]
    assert 1 <= most["n1"] <= 2 and 1 <= most["n2"] <= 2


def test_a_node_whose_drain_stops_on_an_error_is_failed_naming_it_and_the_others_finish():
    kube = cluster("n1", "n2")
    kube.add_pod(make_pod("web-1", "n1"))
    kube.add_pod(make_pod("api-1", "n2"))
    original = kube.patch_node

    def patch_node(name, patch):
        if name == "n1" and ANNOTATION_DRAINED_AT in ((patch.get("metadata") or {}).get("annotations") or {}):
            raise api_error(500, "etcdserver: request timed out", "InternalError")
        return original(name, patch)

    kube.patch_node = patch_node
    result = run(kube, ["n1", "n2"])
    failed, drained = result["nodes"]["n1"], result["nodes"]["n2"]
    assert failed["status"] == "failed"
    assert failed["message"].startswith("node n1: drain stopped: ") and "etcdserver: request timed out" in failed["message"]
    assert (drained["status"], drained["evicted"]) == ("drained", ["shop/api-1"])
    assert ANNOTATION_DRAINED_AT in kube.nodes["n2"]["metadata"].get("annotations", {})
    assert result["failed"] is True and result["failed_nodes"] == ["n1"] and result["drained"] == ["n2"]
