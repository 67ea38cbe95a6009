"""The sandbox's StatefulSet controller and its API: ordinal pods, in order, each recreated under its own name.

Controllers run on a store directly (as in test_controllers); the API checks go through the embedded server.
"""

import json

import pytest

from sandbox.kube.store import is_ready
from sandbox.tests.test_controllers import NS, Cluster, _counts, _pdb_status, container, pdb

READY_SECONDS = 20


def statefulset(name, replicas=3, policy=None, annotations=None, **spec):
    obj = {"metadata": {"name": name, "namespace": NS},
           "spec": dict({"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name}, "annotations": annotations or {}},
                                      "spec": {"containers": [container(cpu="100m")]}}}, **spec)}
    if policy:
        obj["spec"]["podManagementPolicy"] = policy
    return obj


@pytest.fixture
def cluster():
    c = Cluster()
    yield c
    c.close()


def _created_order(cluster, owner):
    return [(e["pod"].split("/")[-1], e["t"]) for e in cluster.owner_events(owner, ("pod.created",))]


def _ready_at(cluster, owner):
    out = {}
    for e in cluster.owner_events(owner, ("pod.ready",)):
        out.setdefault(e["pod"].split("/")[-1], e["t"])
    return out


def test_ordered_ready_creates_each_ordinal_once_the_one_before_is_ready(cluster):
    cluster.ready_nodes(3)
    cluster.store.create("statefulsets", statefulset("db", annotations={"sandbox.nodeops.io/ready-seconds": str(READY_SECONDS)}),
                         client="kubectl")
    cluster.wait(lambda: (cluster.store.get("statefulsets", NS, "db").get("status") or {}).get("readyReplicas") == 3,
                 "three Ready pods")
    created = _created_order(cluster, "StatefulSet/default/db")
    ready = _ready_at(cluster, "StatefulSet/default/db")
    assert [name for name, _t in created] == ["db-0", "db-1", "db-2"]
    for (before, _t), (after, t_after) in zip(created, created[1:]):
        assert ready[before] <= t_after, (before, after, ready, created)   # never created before the previous is Ready
    pods = {p["metadata"]["name"]: p for p in cluster.pods("app=db")}
    assert sorted(pods) == ["db-0", "db-1", "db-2"]
    for name, pod in pods.items():
        ref = pod["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("StatefulSet", "db", True)
        labels = pod["metadata"]["labels"]
        assert labels["statefulset.kubernetes.io/pod-name"] == name and labels["apps.kubernetes.io/pod-index"] == name[-1]
        assert pod["spec"]["hostname"] == name and pod["spec"]["subdomain"] == "db"
    assert len({p["spec"]["nodeName"] for p in pods.values()}) == 3, "replicas spread over the nodes"
    status = cluster.store.get("statefulsets", NS, "db")["status"]
    assert {k: status.get(k) for k in ("replicas", "readyReplicas", "availableReplicas", "currentReplicas",
                                       "updatedReplicas")} == dict.fromkeys(
        ("replicas", "readyReplicas", "availableReplicas", "currentReplicas", "updatedReplicas"), 3)
    assert status["currentRevision"] == status["updateRevision"] and status["updateRevision"].startswith("db-")


def test_min_ready_seconds_holds_the_next_ordinal_and_availability_back(cluster):
    cluster.ready_nodes(3)
    cluster.store.create("statefulsets", statefulset("db", replicas=2, minReadySeconds=30), client="kubectl")
    cluster.wait(lambda: (cluster.store.get("statefulsets", NS, "db").get("status") or {}).get("availableReplicas") == 2,
                 "two available pods")
    ready = _ready_at(cluster, "StatefulSet/default/db")
    created = dict(_created_order(cluster, "StatefulSet/default/db"))
    assert created["db-1"] - ready["db-0"] >= 30, (created, ready)   # db-0 available first
    cluster.idle()


def test_parallel_creates_every_pod_at_once(cluster):
    cluster.ready_nodes(3)
    cache = statefulset("cache", policy="Parallel", annotations={"sandbox.nodeops.io/ready-seconds": "30"})
    cluster.store.create("statefulsets", cache, client="kubectl")
    cluster.wait(lambda: len(cluster.pods("app=cache")) == 3, "three pods")
    ready = [p for p in cluster.pods("app=cache") if is_ready(p)]
    assert not ready, "all three exist before any is Ready"
    cluster.idle()


def test_an_evicted_pod_comes_back_with_the_same_name_once_the_old_one_is_gone(cluster):
    cluster.ready_nodes(3)
    cluster.store.create("statefulsets", statefulset("db"), client="kubectl")
    cluster.wait(lambda: len([p for p in cluster.pods("app=db") if is_ready(p)]) == 3, "three Ready pods")
    old = cluster.pod("db-1")
    cluster.evict("db-1", grace=10)
    cluster.wait(lambda: (cluster.pod("db-1") or old)["metadata"]["uid"] != old["metadata"]["uid"], "db-1 recreated")
    cluster.wait(lambda: is_ready(cluster.pod("db-1")), "db-1 Ready again")
    events = [e for e in cluster.events.events("pod.") if e.get("pod") == "default/db-1"]
    gone = [e["t"] for e in events if e["kind"] == "pod.deleted" and e["uid"] == old["metadata"]["uid"]]
    again = [e["t"] for e in events if e["kind"] == "pod.created" and e["uid"] != old["metadata"]["uid"]]
    assert len(gone) == 1 and len(again) == 1 and again[0] >= gone[0], events
    assert sorted(p["metadata"]["name"] for p in cluster.pods("app=db")) == ["db-0", "db-1", "db-2"]
    cluster.idle()


def test_scaling_down_removes_the_highest_ordinal_first_and_scaling_up_adds_the_next(cluster):
    cluster.ready_nodes(3)
    cluster.store.create("statefulsets", statefulset("db"), client="kubectl")
    cluster.wait(lambda: len([p for p in cluster.pods("app=db") if is_ready(p)]) == 3, "three Ready pods")

    def scale(n):
        def set_replicas(obj):
            obj["spec"]["replicas"] = n
        cluster.store.mutate("statefulsets", NS, "db", set_replicas, client="kubectl")
    scale(1)
    cluster.wait(lambda: [p["metadata"]["name"] for p in cluster.pods("app=db")] == ["db-0"], "scaled to one")
    ending = [e["pod"] for e in cluster.owner_events("StatefulSet/default/db", ("pod.terminating",))]
    assert ending == ["default/db-2", "default/db-1"]
    scale(2)
    cluster.wait(lambda: sorted(p["metadata"]["name"] for p in cluster.pods("app=db") if is_ready(p)) == ["db-0", "db-1"],
                 "scaled to two")
    cluster.idle()


def test_a_changed_template_replaces_pods_from_the_highest_ordinal_down(cluster):
    cluster.ready_nodes(3)
    cluster.store.create("statefulsets", statefulset("db"), client="kubectl")
    cluster.wait(lambda: len([p for p in cluster.pods("app=db") if is_ready(p)]) == 3, "three Ready pods")
    before = cluster.store.get("statefulsets", NS, "db")["status"]["updateRevision"]

    def restart(obj):
        obj["spec"]["template"]["metadata"]["annotations"] = {"kubectl.kubernetes.io/restartedAt": "2024-05-01T00:00:00Z"}
    cluster.store.mutate("statefulsets", NS, "db", restart, client="kubectl")

    def done():
        status = cluster.store.get("statefulsets", NS, "db").get("status") or {}
        return status.get("currentRevision") == status.get("updateRevision") != before and status.get("readyReplicas") == 3
    cluster.wait(done, "the update rolled out")
    ending = [e["pod"] for e in cluster.owner_events("StatefulSet/default/db", ("pod.terminating",))]
    assert ending == ["default/db-2", "default/db-1", "default/db-0"]
    cluster.idle()


def test_a_percentage_budget_over_a_statefulset_counts_its_replicas(cluster):
    cluster.ready_nodes(3)
    cluster.store.create("statefulsets", statefulset("db", policy="Parallel"), client="kubectl")
    cluster.store.create("poddisruptionbudgets", pdb("db-pct", "db", maxUnavailable="34%"), client="test")
    cluster.idle()
    assert _counts(_pdb_status(cluster, "db-pct")) == (3, 3, 1, 2), "34% of 3 rounds up: two may be unavailable"
    cluster.store.mutate("statefulsets", NS, "db", lambda s: s["spec"].update(replicas=4), client="kubectl")
    cluster.idle()
    assert _counts(_pdb_status(cluster, "db-pct"))[0] == 4


def test_deleting_a_statefulset_collects_its_pods(cluster):
    cluster.ready_nodes(2)
    cluster.store.create("statefulsets", statefulset("db", replicas=2, policy="Parallel"), client="kubectl")
    cluster.wait(lambda: len(cluster.pods("app=db")) == 2, "two pods")
    cluster.store.remove("statefulsets", NS, "db", client="kubectl")
    cluster.wait(lambda: not cluster.pods("app=db"), "pods collected")
    ending = cluster.owner_events("StatefulSet/default/db", ("pod.terminating", "pod.deleted"))
    assert ending and all(e["reason"] == "garbage-collected" for e in ending if e.get("reason")), ending
    cluster.idle()


# ---- the API ------------------------------------------------------------------------------------------

@pytest.fixture
def sb():
    from sandbox.tests.test_kube_api import start_sandbox   # pylint: disable=import-outside-toplevel
    box = start_sandbox()
    box.core.create_namespace({"metadata": {"name": NS}})
    yield box
    box.api.stop()


def test_statefulsets_are_served_in_apps_v1_with_status_and_scale_and_defaulted(sb):
    resources = {r.name: r for r in sb.apps.get_api_resources().resources}
    assert resources["statefulsets"].kind == "StatefulSet" and resources["statefulsets"].short_names == ["sts"]
    assert "statefulsets/status" in resources and "statefulsets/scale" in resources
    created = sb.apps.create_namespaced_stateful_set(NS, statefulset("db"))
    assert created.spec.pod_management_policy == "OrderedReady"
    assert created.spec.update_strategy.type == "RollingUpdate" and created.spec.update_strategy.rolling_update.partition == 0
    assert created.spec.revision_history_limit == 10 and created.status.replicas == 0
    sb.apps.patch_namespaced_stateful_set_scale("db", NS, {"spec": {"replicas": 5}})
    assert sb.apps.read_namespaced_stateful_set("db", NS).spec.replicas == 5
    assert [s.metadata.name for s in sb.apps.list_namespaced_stateful_set(NS).items] == ["db"]
    sb.apps.delete_namespaced_stateful_set("db", NS)
    assert not sb.apps.list_namespaced_stateful_set(NS).items


@pytest.mark.parametrize("change, field, text", [
    ({"podManagementPolicy": "Random"}, "spec.podManagementPolicy", 'Unsupported value: "Random"'),
    ({"updateStrategy": {"type": "Sometimes"}}, "spec.updateStrategy.type", 'Unsupported value: "Sometimes"'),
    ({"selector": None}, "spec.selector", "Required value"),
    ({"volumeClaimTemplates": [{"metadata": {"name": "data"},
                                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]},
     "spec.volumeClaimTemplates", "does not provision volumeClaimTemplates"),
], ids=["policy", "strategy", "selector", "claim-templates"])
def test_an_invalid_statefulset_is_422_naming_the_field(sb, change, field, text):
    from kubernetes.client.rest import ApiException   # pylint: disable=import-outside-toplevel
    body = statefulset("db")
    body["spec"].update(change)
    body["spec"] = {k: v for k, v in body["spec"].items() if v is not None}
    with pytest.raises(ApiException) as info:
        sb.apps.create_namespaced_stateful_set(NS, body)
    assert info.value.status == 422
    causes = json.loads(info.value.body)["details"]["causes"]
    assert any(c["field"] == field and text in c["message"] for c in causes), causes
    assert not sb.apps.list_namespaced_stateful_set(NS).items


def test_only_the_mutable_fields_of_a_statefulset_may_change(sb):
    from kubernetes.client.rest import ApiException   # pylint: disable=import-outside-toplevel
    sb.apps.create_namespaced_stateful_set(NS, statefulset("db"))
    sb.apps.patch_namespaced_stateful_set("db", NS, {"spec": {"replicas": 2, "minReadySeconds": 5}})
    with pytest.raises(ApiException) as info:
        sb.apps.patch_namespaced_stateful_set("db", NS, {"spec": {"serviceName": "other"}})
    assert info.value.status == 422 and "spec: Forbidden: updates to statefulset spec" in info.value.body
