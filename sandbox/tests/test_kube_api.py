"""The sandbox's Kubernetes API server, driven through the official client, raw HTTP and kubectl.

No controllers run here: tests create every object through the API and move pods along by writing their
status through the ``/status`` subresource, as a kubelet would.
"""

import http.client
import json
import os
import shutil
import subprocess
import threading
import time
from types import SimpleNamespace

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from sandbox.clock import Clock
from sandbox.events import EventLog
from sandbox.kube.server import KubeApiServer
from sandbox.kube.store import Store

KUBECTL = shutil.which("kubectl")
NS = "shop"


# ---- fixtures and helpers ------------------------------------------------------------------------
def make_client(url, user_agent=None):
    cfg = client.Configuration()
    cfg.host = url
    cfg.api_key = {"authorization": "Bearer sandbox-token"}
    api_client = client.ApiClient(cfg)
    if user_agent:
        api_client.user_agent = user_agent
    return SimpleNamespace(core=client.CoreV1Api(api_client), apps=client.AppsV1Api(api_client),
                           policy=client.PolicyV1Api(api_client), coordination=client.CoordinationV1Api(api_client),
                           raw=api_client)


def start_sandbox(history=250000, speed=100.0):
    clock = Clock(speed=speed)
    events = EventLog(clock)
    store = Store(clock, events, history=history)
    api = KubeApiServer(store, clock, events).start()
    kube = make_client(api.url)
    return SimpleNamespace(clock=clock, events=events, store=store, api=api, url=api.url, **vars(kube))


@pytest.fixture
def sb():
    box = start_sandbox()
    box.core.create_namespace({"metadata": {"name": NS}})
    yield box
    box.api.stop()


def raw(sb, method, path, body=None, content_type="application/json", headers=None):
    """(status, headers, decoded JSON body or text) of one plain HTTP request."""
    conn = http.client.HTTPConnection("127.0.0.1", sb.api.port, timeout=10)
    data = None
    hdrs = {"Accept": "application/json", "User-Agent": "raw-test/1.0"}
    hdrs.update(headers or {})
    if body is not None:
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        hdrs["Content-Type"] = content_type
    conn.request(method, path, body=data, headers=hdrs)
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    try:
        decoded = json.loads(payload)
    except ValueError:
        decoded = payload.decode()
    return resp.status, dict(resp.getheaders()), decoded


def api_error(call, *args, **kwargs):
    with pytest.raises(ApiException) as info:
        call(*args, **kwargs)
    body = json.loads(info.value.body) if info.value.body else {}
    return info.value.status, body


def add_node(sb, name, labels=None, ready=True):
    sb.core.create_node({"metadata": {"name": name, "labels": labels or {}},
                         "spec": {"providerID": "aws:///eu-west-1a/i-%s" % name}})
    if ready:
        sb.core.patch_node_status(name, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})


def add_replicaset(sb, name, replicas, labels, owner=None):
    meta = {"name": name, "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner.kind, "name": owner.metadata.name,
                                    "uid": owner.metadata.uid, "controller": True}]
    return sb.apps.create_namespaced_replica_set(NS, {
        "metadata": meta, "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                                   "template": {"metadata": {"labels": labels},
                                                "spec": {"containers": [{"name": "app", "image": "shop/web:1"}]}}}})


def add_pod(sb, name, labels, node="n1", owner=None, phase="Running", ready=True, grace=None):
    meta = {"name": name, "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner.kind, "name": owner.metadata.name,
                                    "uid": owner.metadata.uid, "controller": True}]
    spec = {"containers": [{"name": "app", "image": "shop/web:1"}, {"name": "sidecar", "image": "proxy:2"}]}
    if node:
        spec["nodeName"] = node
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    sb.core.create_namespaced_pod(NS, {"metadata": meta, "spec": spec})
    if phase != "Pending":
        set_pod_state(sb, name, phase, ready)


def set_pod_state(sb, name, phase="Running", ready=True):
    sb.core.patch_namespaced_pod_status(name, NS, {"status": {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}})


def add_pdb(sb, name, labels, min_available=None, max_unavailable=None, policy=None):
    spec = {"selector": {"matchLabels": labels}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    sb.policy.create_namespaced_pod_disruption_budget(NS, {"metadata": {"name": name}, "spec": spec})


def evict(sb, name, grace=None, dry_run=None, api_version="policy/v1"):
    body = {"metadata": {"name": name, "namespace": NS}}
    if api_version:
        body.update(apiVersion=api_version, kind="Eviction")
    if grace is not None:
        body["deleteOptions"] = {"gracePeriodSeconds": grace}
    path = "/api/v1/namespaces/%s/pods/%s/eviction" % (NS, name)
    if dry_run:
        path += "?dryRun=All"
    return raw(sb, "POST", path, body)


def web_fleet(sb, replicas=3, ready=True, name="web"):
    """A ReplicaSet ``name`` with ``replicas`` Running pods on node n1 (node created if needed)."""
    if sb.store.try_get("nodes", None, "n1") is None:
        add_node(sb, "n1")
    labels = {"app": name}
    rs = add_replicaset(sb, name, replicas, labels)
    for i in range(replicas):
        add_pod(sb, "%s-%d" % (name, i), labels, owner=rs, ready=ready)
    return rs


def pod_exists(sb, name):
    return sb.store.try_get("pods", NS, name) is not None


def terminating(sb, name):
    pod = sb.store.try_get("pods", NS, name)
    return pod is not None and "deletionTimestamp" in pod["metadata"]


# ---- discovery -----------------------------------------------------------------------------------
def test_discovery_serves_version_groups_and_eviction_as_policy_v1_kind_eviction(sb):
    status, _headers, version = raw(sb, "GET", "/version?timeout=5s")
    assert status == 200 and version["gitVersion"].startswith("v1.30.")
    status, _headers, api = raw(sb, "GET", "/api")
    assert api["kind"] == "APIVersions" and api["versions"] == ["v1"]
    status, _headers, apis = raw(sb, "GET", "/apis")
    groups = {g["name"]: [v["groupVersion"] for v in g["versions"]] for g in apis["groups"]}
    # the AWS Load Balancer Controller's TargetGroupBindings are served as if its CRD were installed; access reviews are
    # answered (every one allowed, as with no authorizer but AlwaysAllow); RBAC's kinds are discovered so that kubectl
    # maps them, and every request to them says that RBAC is enforced on the reference backend only
    assert groups == {"apps": ["apps/v1"], "coordination.k8s.io": ["coordination.k8s.io/v1"], "policy": ["policy/v1"],
                      "storage.k8s.io": ["storage.k8s.io/v1"], "elbv2.k8s.aws": ["elbv2.k8s.aws/v1beta1"],
                      "authorization.k8s.io": ["authorization.k8s.io/v1"],
                      "rbac.authorization.k8s.io": ["rbac.authorization.k8s.io/v1"]}
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    status, headers, core = raw(sb, "GET", "/api/v1", headers={"Accept": aggregated})
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert core["kind"] == "APIResourceList" and core["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in core["resources"]}
    eviction = by_name["pods/eviction"]
    assert (eviction["group"], eviction["version"], eviction["kind"], eviction["verbs"]) == ("policy", "v1", "Eviction", ["create"])
    assert by_name["pods"]["namespaced"] is True and by_name["nodes"]["namespaced"] is False
    assert "po" in by_name["pods"]["shortNames"] and "watch" in by_name["nodes"]["verbs"]
    assert {"pods/status", "nodes/status", "pods/binding", "services", "services/status"} <= set(by_name)
    apps = raw(sb, "GET", "/apis/apps/v1")[2]
    apps_names = {r["name"]: r for r in apps["resources"]}
    assert apps_names["deployments/scale"]["kind"] == "Scale" and apps_names["deployments/scale"]["group"] == "autoscaling"
    assert {"deployments/status", "replicasets/status", "daemonsets/status"} <= set(apps_names)
    policy = raw(sb, "GET", "/apis/policy/v1")[2]
    assert {r["name"] for r in policy["resources"]} == {"poddisruptionbudgets", "poddisruptionbudgets/status"}
    for path in ("/healthz", "/readyz", "/livez"):
        assert raw(sb, "GET", path)[2] == "ok"
    # an empty v2 document: kubectl validates a List against it alone, finds no schema, and leaves it to the server
    status, _headers, body = raw(sb, "GET", "/openapi/v2")
    assert status == 200 and body == ""


def test_unknown_routes_and_wrong_methods_get_real_status_reasons(sb):
    status, _headers, body = raw(sb, "GET", "/api/v1/widgets")
    assert (status, body["reason"]) == (404, "NotFound")
    status, _headers, body = raw(sb, "GET", "/apis/apps/v1/pods")
    assert status == 404
    status, _headers, body = raw(sb, "POST", "/api/v1/pods", {"metadata": {"name": "x"}})
    assert (status, body["reason"]) == (405, "MethodNotAllowed")
    status, _headers, body = raw(sb, "GET", "/api/v1/namespaces/shop/pods/x/eviction")
    assert status == 405


def test_table_printing_for_kubectl(sb):
    add_node(sb, "n1", {"node-role.kubernetes.io/worker": ""})
    add_pod(sb, "web-0", {"app": "web"})
    sb.core.delete_namespaced_pod("web-0", NS, grace_period_seconds=30)
    table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    nodes = raw(sb, "GET", "/api/v1/nodes?limit=500", headers={"Accept": table_accept})[2]
    assert nodes["kind"] == "Table"
    assert [c["name"] for c in nodes["columnDefinitions"]][:5] == ["Name", "Status", "Roles", "Age", "Version"]
    assert nodes["rows"][0]["cells"][:3] == ["n1", "Ready", "worker"]
    pods = raw(sb, "GET", "/api/v1/namespaces/shop/pods/web-0", headers={"Accept": table_accept})[2]
    assert pods["rows"][0]["cells"][:3] == ["web-0", "2/2", "Terminating"]
    assert pods["rows"][0]["object"]["metadata"]["namespace"] == NS
    assert raw(sb, "GET", "/api/v1/nodes")[2]["kind"] == "NodeList"


# ---- kubectl -------------------------------------------------------------------------------------
def kubeconfig(sb, tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: sandbox, cluster: {server: %s}}]\n"
                    "users: [{name: admin, user: {token: sandbox-token}}]\n"
                    "contexts: [{name: sandbox, context: {cluster: sandbox, user: admin}}]\n"
                    "current-context: sandbox\n" % sb.url)
    return str(path)


def kubectl(sb, tmp_path, *args, timeout=60):
    cmd = [KUBECTL, "--kubeconfig", kubeconfig(sb, tmp_path), "--cache-dir", str(tmp_path / "cache")] + list(args)
    env = dict(os.environ, HOME=str(tmp_path))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_get_nodes_and_api_resources(sb, tmp_path):
    add_node(sb, "ip-10-0-1-1.eu-west-1.compute.internal")
    sb.core.patch_node("ip-10-0-1-1.eu-west-1.compute.internal", {"spec": {"unschedulable": True}})
    out = kubectl(sb, tmp_path, "get", "nodes")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[1].split()[:2] == ["ip-10-0-1-1.eu-west-1.compute.internal", "Ready,SchedulingDisabled"]
    out = kubectl(sb, tmp_path, "api-resources")
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line.split() for line in out.stdout.splitlines()[1:]}
    assert lines["poddisruptionbudgets"][1:] == ["pdb", "policy/v1", "true", "PodDisruptionBudget"]
    assert lines["deployments"][1:] == ["deploy", "apps/v1", "true", "Deployment"]


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_cordon_and_drain_use_evictions_within_the_budget(sb, tmp_path):
    add_node(sb, "n1")
    add_node(sb, "n2")
    rs = web_fleet(sb, replicas=3)
    ds = sb.apps.create_namespaced_daemon_set(NS, {"metadata": {"name": "agent"}, "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}}})
    add_pod(sb, "agent-n1", {"app": "agent"}, owner=ds)
    add_pdb(sb, "web", {"app": "web"}, max_unavailable=2)
    out = kubectl(sb, tmp_path, "cordon", "n1")
    assert out.returncode == 0 and "cordoned" in out.stdout, out.stderr
    assert sb.core.read_node("n1").spec.unschedulable is True

    # kubelet of n1 finishes terminating pods after half a second; the ReplicaSet's replacement then comes up
    # Ready on n2
    stop = threading.Event()
    replaced = []
    seen = {}

    def cluster():
        while not stop.is_set():
            for pod in sb.store.list("pods", namespace=NS)[0]:
                if "deletionTimestamp" in pod["metadata"]:
                    name = pod["metadata"]["name"]
                    if time.monotonic() - seen.setdefault(name, time.monotonic()) < 0.5:
                        continue
                    sb.store.remove("pods", NS, name, client="kubelet", cause={"how": "kubelet", "client": "kubelet"})
                    if name.startswith("web-"):
                        add_pod(sb, "web-r%d" % len(replaced), {"app": "web"}, node="n2", owner=rs)
                        replaced.append(name)
            stop.wait(0.05)

    worker = threading.Thread(target=cluster, daemon=True)
    worker.start()
    try:
        out = kubectl(sb, tmp_path, "drain", "n1", "--ignore-daemonsets", "--timeout=30s")
    finally:
        stop.set()
        worker.join(5)
    assert out.returncode == 0, out.stdout + out.stderr
    assert sorted(replaced) == ["web-0", "web-1", "web-2"]
    evictions = [e for e in sb.events.events("k8s.request") if e["verb"] == "evict"]
    assert {e["client"].split("/")[0] for e in evictions} == {"kubectl"}
    assert {e["name"] for e in evictions if e["code"] == 201} == {"web-0", "web-1", "web-2"}
    assert any(e["code"] == 429 for e in evictions)       # the third had to wait for a replacement
    ended = [e for e in sb.events.events("pod.terminating") if e["pod"].startswith("shop/web-")]
    assert all(e["how"] == "evicted" for e in ended)
    # the budget was honoured at every step: never fewer than 1 of the 3 web pods healthy
    assert all(p["healthy"] >= p["desired"] for e in ended for p in e["pdbs"])
    assert pod_exists(sb, "agent-n1")


MANIFEST = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  strategy: {type: %s}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "registry.example/web:%s"}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: web}}
"""


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_apply_creates_then_patches_workloads(sb, tmp_path):
    manifest = tmp_path / "web.yaml"
    manifest.write_text(MANIFEST % ("RollingUpdate", "1.0"))
    out = kubectl(sb, tmp_path, "apply", "-f", str(manifest))
    assert out.returncode == 0, out.stderr
    assert "deployment.apps/web created" in out.stdout and "poddisruptionbudget.policy/web created" in out.stdout
    dep = sb.apps.read_namespaced_deployment("web", NS)
    assert dep.spec.strategy.rolling_update.max_surge == "25%"        # defaulted by the server
    manifest.write_text(MANIFEST % ("Recreate", "2.0"))
    out = kubectl(sb, tmp_path, "apply", "-f", str(manifest))
    assert out.returncode == 0, out.stderr
    dep = sb.apps.read_namespaced_deployment("web", NS)
    assert dep.spec.strategy.type == "Recreate" and dep.spec.strategy.rolling_update is None   # $retainKeys
    assert dep.spec.template.spec.containers[0].image == "registry.example/web:2.0"
    assert dep.metadata.generation == 2


def test_strategic_merge_patch_replaces_a_budget_selector_and_honours_retain_keys(sb):
    add_pdb(sb, "web", {"app": "web", "tier": "front"}, min_available=1)
    sb.policy.patch_namespaced_pod_disruption_budget("web", NS, {"spec": {"selector": {"matchLabels": {"app": "shop"}}}})
    pdb = sb.policy.read_namespaced_pod_disruption_budget("web", NS)
    assert pdb.spec.selector.match_labels == {"app": "shop"}       # patchStrategy=replace: no merge with tier
    sb.apps.create_namespaced_deployment(NS, {"metadata": {"name": "web"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    sb.apps.patch_namespaced_deployment("web", NS, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}})
    strategy = sb.apps.read_namespaced_deployment("web", NS).spec.strategy
    assert strategy.type == "Recreate" and strategy.rolling_update is None


# ---- eviction ------------------------------------------------------------------------------------
def test_eviction_granted_is_201_and_starts_graceful_deletion_and_spends_the_budget(sb):
    web_fleet(sb, replicas=3)
    add_pdb(sb, "web", {"app": "web"}, min_available=2)
    status, _headers, body = evict(sb, "web-0")
    assert status == 201
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    pod = sb.core.read_namespaced_pod("web-0", NS)
    assert pod.metadata.deletion_timestamp is not None and pod.metadata.deletion_grace_period_seconds == 30
    assert any(c.type == "DisruptionTarget" and c.reason == "EvictionByEvictionAPI" for c in pod.status.conditions)
    pdb = sb.policy.read_namespaced_pod_disruption_budget("web", NS)
    assert pdb.status.disruptions_allowed == 0 and "web-0" in pdb.status.disrupted_pods
    assert [c.reason for c in pdb.status.conditions if c.type == "DisruptionAllowed"] == ["InsufficientPods"]
    ended = sb.events.events("pod.terminating")[-1]
    assert (ended["pod"], ended["how"], ended["client"]) == ("shop/web-0", "evicted", "raw-test/1.0")


def test_eviction_over_budget_is_429_with_the_disruption_budget_cause(sb):
    web_fleet(sb, replicas=2)
    add_pdb(sb, "web", {"app": "web"}, min_available=2)
    status, _headers, body = evict(sb, "web-1")
    assert status == 429
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "Cannot evict pod as it would violate the pod's disruption budget.",
                    "reason": "TooManyRequests", "code": 429,
                    "details": {"causes": [{"reason": "DisruptionBudget",
                                            "message": "The disruption budget web needs 2 healthy pods and has 2 currently"}]}}
    assert not terminating(sb, "web-1")
    # the official client surfaces the same answer as ApiException(429)
    code, err = api_error(sb.core.create_namespaced_pod_eviction, "web-1", NS,
                          client.V1Eviction(metadata=client.V1ObjectMeta(name="web-1", namespace=NS)))
    assert code == 429 and err["details"]["causes"][0]["reason"] == "DisruptionBudget"


def test_eviction_of_a_pod_with_two_budgets_is_500(sb):
    web_fleet(sb, replicas=3)
    add_pdb(sb, "web-a", {"app": "web"}, min_available=1)
    add_pdb(sb, "web-b", {"app": "web"}, max_unavailable=1)
    status, _headers, body = evict(sb, "web-0")
    assert status == 500
    assert body["message"] == "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    assert body["status"] == "Failure" and not terminating(sb, "web-0")


def test_eviction_of_a_missing_pod_is_404_not_found(sb):
    status, _headers, body = evict(sb, "ghost")
    assert (status, body["reason"]) == (404, "NotFound")
    assert body["message"] == 'pods "ghost" not found'


def test_eviction_of_a_terminating_pod_skips_the_budget(sb):
    web_fleet(sb, replicas=2)
    sb.core.delete_namespaced_pod("web-0", NS, grace_period_seconds=120)
    add_pdb(sb, "web", {"app": "web"}, min_available=2)
    assert evict(sb, "web-1")[0] == 429
    assert evict(sb, "web-0")[0] == 201
    assert sb.core.read_namespaced_pod("web-0", NS).metadata.deletion_grace_period_seconds == 120
    assert evict(sb, "web-0", grace=10)[0] == 201
    assert sb.core.read_namespaced_pod("web-0", NS).metadata.deletion_grace_period_seconds == 10


def test_eviction_of_pending_and_finished_pods_skips_the_budget(sb):
    web_fleet(sb, replicas=1)
    rs = sb.apps.read_namespaced_replica_set("web", NS)
    add_pod(sb, "web-pending", {"app": "web"}, node=None, owner=rs, phase="Pending")
    add_pod(sb, "web-done", {"app": "web"}, owner=rs, phase="Succeeded", ready=False)
    add_pdb(sb, "web", {"app": "web"}, min_available=5)
    assert evict(sb, "web-0")[0] == 429
    assert evict(sb, "web-pending")[0] == 201
    assert not pod_exists(sb, "web-pending")       # never scheduled: deleted at once
    assert evict(sb, "web-done")[0] == 201
    assert not pod_exists(sb, "web-done")          # finished: deleted at once


def test_unready_running_pod_follows_the_unhealthy_pod_eviction_policy(sb):
    web_fleet(sb, replicas=3)
    set_pod_state(sb, "web-2", ready=False)
    add_pdb(sb, "web", {"app": "web"}, min_available=2)
    # IfHealthyBudget (default): 2 healthy >= 2 desired, so the unready pod may go without spending the budget
    assert evict(sb, "web-2")[0] == 201
    assert sb.policy.read_namespaced_pod_disruption_budget("web", NS).status.disrupted_pods is None
    # now the application is disrupted: an unready pod is protected while healthy < desired
    web_fleet(sb, replicas=3, name="api")
    set_pod_state(sb, "api-1", ready=False)
    set_pod_state(sb, "api-2", ready=False)
    add_pdb(sb, "api", {"app": "api"}, min_available=2)
    status, _headers, body = evict(sb, "api-2")
    assert status == 429
    assert body["details"]["causes"][0]["message"] == "The disruption budget api needs 2 healthy pods and has 1 currently"
    # AlwaysAllow lets it go anyway
    sb.policy.patch_namespaced_pod_disruption_budget("api", NS, {"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}})
    assert evict(sb, "api-2")[0] == 201
    assert evict(sb, "api-0")[0] == 429      # a healthy pod is still guarded


def test_percentage_budgets_count_the_controllers_replicas(sb):
    add_node(sb, "n1")
    dep = sb.apps.create_namespaced_deployment(NS, {"metadata": {"name": "web"}, "spec": {
        "replicas": 4, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "web:1"}]}}}})
    rs = add_replicaset(sb, "web-1a2b", 4, {"app": "web"}, owner=dep)
    for i in range(3):   # only 3 of the Deployment's 4 replicas exist
        add_pod(sb, "web-%d" % i, {"app": "web"}, owner=rs)
    # minAvailable 50% of 4 expected = 2: one of the 3 healthy may go
    add_pdb(sb, "web", {"app": "web"}, min_available="50%")
    assert evict(sb, "web-0")[0] == 201
    assert evict(sb, "web-1")[0] == 429
    # maxUnavailable 25% of 4 -> 1 unavailable allowed -> desired 3; 2 healthy now: nothing may go
    sb.policy.delete_namespaced_pod_disruption_budget("web", NS)
    add_pdb(sb, "web", {"app": "web"}, max_unavailable="25%")
    status, _headers, body = evict(sb, "web-1")
    assert status == 429
    assert body["details"]["causes"][0]["message"] == "The disruption budget web needs 3 healthy pods and has 2 currently"
    # an unmanaged pod does not count towards a percentage
    add_pod(sb, "loner", {"app": "web"})
    assert evict(sb, "web-1")[0] == 429


def test_budget_over_daemonset_pods_fails_safe_to_no_disruptions(sb):
    add_node(sb, "n1")
    ds = sb.apps.create_namespaced_daemon_set(NS, {"metadata": {"name": "agent"}, "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}}})
    add_pod(sb, "agent-a", {"app": "agent"}, owner=ds)
    add_pod(sb, "agent-b", {"app": "agent"}, owner=ds)
    add_pdb(sb, "agent", {"app": "agent"}, max_unavailable=1)
    assert evict(sb, "agent-a")[0] == 429   # DaemonSets have no scale: the disruption controller allows nothing


def test_concurrent_evictions_never_overdraw_a_budget(sb):
    web_fleet(sb, replicas=10)
    add_pdb(sb, "web", {"app": "web"}, min_available=7)
    results = {}

    def worker(i):
        kube = make_client(sb.url)
        try:
            kube.core.create_namespaced_pod_eviction("web-%d" % i, NS, client.V1Eviction(
                api_version="policy/v1", kind="Eviction", metadata=client.V1ObjectMeta(name="web-%d" % i, namespace=NS)))
            results[i] = 201
        except ApiException as exc:
            results[i] = exc.status

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results.values()) == [201] * 3 + [429] * 7
    assert sum(terminating(sb, "web-%d" % i) for i in range(10)) == 3


def test_eviction_body_checks_v1beta1_dry_run_and_grace_period(sb):
    web_fleet(sb, replicas=3)
    add_pdb(sb, "web", {"app": "web"}, min_available=1)
    status, _headers, body = raw(sb, "POST", "/api/v1/namespaces/shop/pods/web-0/eviction",
                                 {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web-1"}})
    assert (status, body["reason"], body["message"]) == (400, "BadRequest", "name in URL does not match name in Eviction object")
    assert evict(sb, "web-0", dry_run=True)[0] == 201
    assert not terminating(sb, "web-0") and "disruptedPods" not in sb.store.get("poddisruptionbudgets", NS, "web")["status"]
    assert evict(sb, "web-0", api_version="policy/v1beta1", grace=5)[0] == 201
    assert sb.core.read_namespaced_pod("web-0", NS).metadata.deletion_grace_period_seconds == 5
    assert evict(sb, "web-1", api_version=None)[0] == 201


def test_eviction_latency_is_injected_in_simulated_seconds(sb, monkeypatch):
    web_fleet(sb, replicas=2)
    waits = []
    real_sleep = sb.clock.sleep
    monkeypatch.setattr(sb.clock, "sleep", lambda seconds: (waits.append(seconds), real_sleep(seconds)))
    sb.api.faults.set(eviction_latency=100.0)     # 100 simulated seconds = 1 s at speed 100
    start = sb.clock.now()
    assert evict(sb, "web-0")[0] == 201
    assert waits.count(100.0) == 1 and sb.clock.now() - start >= 100.0
    sb.api.faults.clear()
    assert evict(sb, "web-1")[0] == 201
    assert waits.count(100.0) == 1     # no latency once cleared


# ---- selectors ------------------------------------------------------------------------------------
def names(items):
    return sorted(i.metadata.name for i in items)


def test_label_selectors(sb):
    add_node(sb, "a", {"role": "worker", "zone": "z1"})
    add_node(sb, "b", {"role": "worker", "zone": "z2", "legacy": "true"})
    add_node(sb, "c", {"role": "infra", "zone": "z3"})
    list_node = sb.core.list_node
    assert names(list_node(label_selector="role=worker").items) == ["a", "b"]
    assert names(list_node(label_selector="role==worker,zone!=z1").items) == ["b"]
    assert names(list_node(label_selector="zone in (z1,z3)").items) == ["a", "c"]
    assert names(list_node(label_selector="zone in(z2)").items) == ["b"]
    assert names(list_node(label_selector="zone notin (z1,z3)").items) == ["b"]
    assert names(list_node(label_selector="legacy").items) == ["b"]
    assert names(list_node(label_selector="!legacy").items) == ["a", "c"]
    assert names(list_node(label_selector="role!=worker").items) == ["c"]
    code, body = api_error(list_node, label_selector="role=(bad")
    assert (code, body["reason"]) == (400, "BadRequest")
    # the store's label index follows relabels and deletions
    sb.core.patch_node("a", {"metadata": {"labels": {"role": "infra"}}})
    sb.core.delete_node("b")
    assert names(list_node(label_selector="role=worker").items) == []
    assert names(list_node(label_selector="role=infra,zone=z1").items) == ["a"]


def test_field_selectors(sb):
    add_node(sb, "n1")
    add_node(sb, "n2")
    web_fleet(sb, replicas=2)
    add_pod(sb, "done", {"app": "batch"}, phase="Succeeded", ready=False)
    add_pod(sb, "other", {"app": "batch"}, node="n2")
    list_all = sb.core.list_pod_for_all_namespaces
    assert names(list_all(field_selector="spec.nodeName=n1").items) == ["done", "web-0", "web-1"]
    assert names(list_all(field_selector="spec.nodeName=n1,status.phase!=Succeeded").items) == ["web-0", "web-1"]
    assert names(list_all(field_selector="spec.nodeName=n1", label_selector="app=batch").items) == ["done"]
    assert names(sb.core.list_namespaced_pod(NS, field_selector="metadata.name=other").items) == ["other"]
    assert names(sb.core.list_node(field_selector="spec.unschedulable=false").items) == ["n1", "n2"]
    code, body = api_error(list_all, field_selector="spec.color=blue")
    assert (code, body["reason"]) == (400, "BadRequest") and "spec.color" in body["message"]


# ---- patches ---------------------------------------------------------------------------------------
def test_strategic_merge_patch_merges_labels_and_null_deletes(sb):
    add_node(sb, "n1", {"keep": "1", "drop": "x"})
    sb.core.patch_node("n1", {"metadata": {"labels": {"drop": None, "new": "y"}}, "spec": {"unschedulable": True}})
    node = sb.core.read_node("n1")
    assert node.metadata.labels == {"keep": "1", "new": "y"} and node.spec.unschedulable is True
    sb.core.patch_node("n1", {"spec": {"unschedulable": None}})       # what kubectl uncordon sends
    assert sb.core.read_node("n1").spec.unschedulable is None
    sb.core.patch_node("n1", {"metadata": {"labels": {"$patch": "replace", "only": "this"}}})
    assert sb.core.read_node("n1").metadata.labels == {"only": "this"}
    sb.core.patch_node("n1", {"metadata": {"labels": {"$patch": "delete"}}})
    assert sb.core.read_node("n1").metadata.labels is None


def test_strategic_merge_patch_merges_containers_by_name(sb):
    add_node(sb, "n1")
    add_pod(sb, "web-0", {"app": "web"})
    sb.core.patch_namespaced_pod("web-0", NS, {"spec": {"containers": [{"name": "sidecar", "image": "proxy:3"}]}})
    containers = {c.name: c.image for c in sb.core.read_namespaced_pod("web-0", NS).spec.containers}
    assert containers == {"app": "shop/web:1", "sidecar": "proxy:3"}
    # conditions merge by type through the status subresource
    sb.core.patch_namespaced_pod_status("web-0", NS, {"status": {"conditions": [{"type": "ContainersReady", "status": "True"}]}})
    conds = {c.type: c.status for c in sb.core.read_namespaced_pod("web-0", NS).status.conditions}
    assert conds == {"Ready": "True", "ContainersReady": "True"}
    # a patch that would change more than images is refused as the real pod update validation does
    code, body = api_error(sb.core.patch_namespaced_pod, "web-0", NS, {"spec": {"nodeName": "n9"}})
    assert code == 422 and body["details"]["causes"][0]["field"] == "spec"


def test_strategic_merge_patch_replaces_taints(sb):
    add_node(sb, "n1")
    sb.core.patch_node("n1", {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedule"}]}})
    sb.core.patch_node("n1", {"spec": {"taints": [{"key": "nodeops/retiring", "value": "true", "effect": "NoSchedule"}]}})
    taints = [(t.key, t.value, t.effect) for t in sb.core.read_node("n1").spec.taints]
    assert taints == [("nodeops/retiring", "true", "NoSchedule")]
    code, body = api_error(sb.core.patch_node, "n1", {"spec": {"taints": [{"key": "x", "effect": "Sometimes"}]}})
    assert code == 422
    # kube-apiserver names the field metadata.taints, and an update validates the taints twice (see the fidelity table)
    cause = {"reason": "FieldValueNotSupported", "field": "metadata.taints[0].effect",
             "message": 'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'}
    assert body["details"]["causes"] == [cause, cause]


def test_merge_patch_replaces_lists_and_deletes_nulls(sb):
    add_node(sb, "n1", {"a": "1", "b": "2"})
    sb.core.patch_node("n1", {"spec": {"taints": [{"key": "k1", "effect": "NoSchedule"}]}})
    sb.core.patch_node("n1", {"metadata": {"labels": {"a": None}}, "spec": {"taints": [{"key": "k2", "effect": "NoExecute"}]}},
                       _content_type="application/merge-patch+json")
    node = sb.core.read_node("n1")
    assert node.metadata.labels == {"b": "2"}
    assert [(t.key, t.effect) for t in node.spec.taints] == [("k2", "NoExecute")]
    status, _headers, body = raw(sb, "PATCH", "/api/v1/nodes/n1", {"metadata": {"labels": {"c": "3"}}},
                                 content_type="application/apply-patch+yaml")
    assert (status, body["reason"]) == (415, "UnsupportedMediaType")


def test_json_patch_operations_and_failed_test_is_422(sb):
    add_node(sb, "n1", {"a": "1"})
    ops = [{"op": "test", "path": "/metadata/labels/a", "value": "1"},
           {"op": "add", "path": "/metadata/labels/b", "value": "2"},
           {"op": "replace", "path": "/metadata/labels/a", "value": "10"},
           {"op": "copy", "from": "/metadata/labels/b", "path": "/metadata/labels/c"},
           {"op": "move", "from": "/metadata/labels/c", "path": "/metadata/labels/d"},
           {"op": "add", "path": "/spec/taints", "value": [{"key": "t1", "effect": "NoSchedule"}]},
           {"op": "add", "path": "/spec/taints/-", "value": {"key": "t2", "effect": "NoSchedule"}},
           {"op": "remove", "path": "/spec/taints/0"}]
    sb.core.patch_node("n1", ops)
    node = sb.core.read_node("n1")
    assert node.metadata.labels == {"a": "10", "b": "2", "d": "2"}
    assert [t.key for t in node.spec.taints] == ["t2"]
    code, body = api_error(sb.core.patch_node, "n1", [{"op": "test", "path": "/metadata/labels/a", "value": "1"},
                                                      {"op": "add", "path": "/metadata/labels/z", "value": "no"}])
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"] == "the server rejected our request due to an error in our request"
    assert "z" not in sb.core.read_node("n1").metadata.labels
    code, body = api_error(sb.core.patch_node, "n1", [{"op": "remove", "path": "/metadata/labels/missing"}])
    assert code == 422


# ---- optimistic concurrency, status rules, validation -----------------------------------------------
def test_stale_update_and_stale_patch_resource_version_are_409_conflict(sb):
    add_node(sb, "n1")
    stale = sb.core.read_node("n1")
    sb.core.patch_node("n1", {"metadata": {"labels": {"touched": "yes"}}})
    stale.metadata.labels = {"mine": "1"}
    code, body = api_error(sb.core.replace_node, "n1", stale)
    assert (code, body["reason"]) == (409, "Conflict")
    assert body["message"].startswith('Operation cannot be fulfilled on nodes "n1": the object has been modified')
    code, body = api_error(sb.core.patch_node, "n1", {"metadata": {"resourceVersion": stale.metadata.resource_version,
                                                                   "labels": {"mine": "1"}}})
    assert code == 409
    fresh = sb.core.read_node("n1")
    sb.core.patch_node("n1", {"metadata": {"resourceVersion": fresh.metadata.resource_version, "labels": {"mine": "1"}}})
    fresh = sb.core.read_node("n1")
    fresh.metadata.labels["again"] = "2"
    assert sb.core.replace_node("n1", fresh).metadata.labels == {"touched": "yes", "mine": "1", "again": "2"}


def test_main_endpoint_ignores_status_and_status_endpoint_changes_only_status(sb):
    add_node(sb, "n1")
    add_pod(sb, "web-0", {"app": "web"})
    sb.core.patch_namespaced_pod("web-0", NS, {"metadata": {"labels": {"x": "1"}}, "status": {"phase": "Failed"}})
    pod = sb.core.read_namespaced_pod("web-0", NS)
    assert pod.metadata.labels["x"] == "1" and pod.status.phase == "Running"
    sb.core.patch_namespaced_pod_status("web-0", NS, {"metadata": {"labels": {"y": "2"}}, "status": {"phase": "Succeeded"}})
    pod = sb.core.read_namespaced_pod("web-0", NS)
    assert pod.status.phase == "Succeeded" and "y" not in pod.metadata.labels
    created = sb.core.create_namespaced_pod(NS, {"metadata": {"name": "p2"}, "spec": {"containers": [{"name": "c", "image": "i"}]},
                                                 "status": {"phase": "Running"}})
    assert created.status.phase == "Pending" and created.spec.restart_policy == "Always"
    assert created.spec.termination_grace_period_seconds == 30


def test_invalid_objects_are_422_naming_the_field(sb):
    cases = [
        (sb.core.create_namespaced_pod, (NS, {"metadata": {"name": "p"}, "spec": {"containers": []}}),
         "spec.containers", "FieldValueRequired", 'Pod "p" is invalid: spec.containers: Required value'),
        (sb.core.create_namespaced_pod, (NS, {"metadata": {}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
         "metadata.name", "FieldValueRequired", None),
        (sb.core.create_node, ({"metadata": {"name": "n", "labels": {"ok": "bad value!"}}},),
         "metadata.labels", "FieldValueInvalid", None),
        (sb.apps.create_namespaced_deployment, (NS, {"metadata": {"name": "d"}, "spec": {
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
         "spec.selector", "FieldValueRequired", 'Deployment.apps "d" is invalid: spec.selector: Required value'),
        (sb.apps.create_namespaced_deployment, (NS, {"metadata": {"name": "d"}, "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "other"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
         "spec.template.metadata.labels", "FieldValueInvalid", None),
        (sb.policy.create_namespaced_pod_disruption_budget, (NS, {"metadata": {"name": "b"}, "spec": {
            "minAvailable": 1, "maxUnavailable": 1, "selector": {"matchLabels": {"app": "d"}}}}),
         "spec", "FieldValueInvalid", None),
        (sb.policy.create_namespaced_pod_disruption_budget, (NS, {"metadata": {"name": "b"}, "spec": {
            "minAvailable": "150%", "selector": {"matchLabels": {"app": "d"}}}}),
         "spec.minAvailable", "FieldValueInvalid", None),
    ]
    for call, args, field, reason, message in cases:
        code, body = api_error(call, *args)
        assert (code, body["reason"]) == (422, "Invalid"), (field, body)
        assert {"field": field, "reason": reason} in [{"field": c["field"], "reason": c["reason"]} for c in body["details"]["causes"]]
        if message:
            assert body["message"] == message
    both = api_error(sb.policy.create_namespaced_pod_disruption_budget, NS, {"metadata": {"name": "b"}, "spec": {
        "minAvailable": 1, "maxUnavailable": 1, "selector": {"matchLabels": {"app": "d"}}}})[1]
    assert "minAvailable and maxUnavailable cannot be both set" in both["message"]
    status, _headers, body = raw(sb, "POST", "/api/v1/namespaces/shop/pods",
                                 {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x"}})
    assert status == 422 and body["details"]["causes"][0]["field"] == "kind"
    status, _headers, body = raw(sb, "POST", "/api/v1/namespaces/shop/pods", {"apiVersion": "apps/v1", "kind": "Deployment"})
    assert (status, body["reason"]) == (400, "BadRequest")
    status, _headers, body = raw(sb, "POST", "/api/v1/namespaces/shop/pods", b"{not json")
    assert (status, body["reason"]) == (400, "BadRequest")


# ---- leases (coordination.k8s.io/v1): what a lock held by one run at a time rests on -------------------
def lease_body(name, holder="run-a", renew="2026-11-23T10:00:00.000000Z", duration=60, **spec):
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
            "spec": dict({"holderIdentity": holder, "leaseDurationSeconds": duration, "acquireTime": renew,
                          "renewTime": renew, "leaseTransitions": 0}, **spec)}
    return body


def test_leases_are_discovered_as_coordination_v1_namespaced_with_every_verb(sb):
    apis = raw(sb, "GET", "/apis")[2]
    coordination = next(g for g in apis["groups"] if g["name"] == "coordination.k8s.io")
    assert coordination["preferredVersion"] == {"groupVersion": "coordination.k8s.io/v1", "version": "v1"}
    group = raw(sb, "GET", "/apis/coordination.k8s.io")[2]
    assert group["kind"] == "APIGroup" and group["name"] == "coordination.k8s.io"
    resources = raw(sb, "GET", "/apis/coordination.k8s.io/v1")[2]
    assert resources["groupVersion"] == "coordination.k8s.io/v1"
    assert resources["resources"] == [{"name": "leases", "singularName": "lease", "namespaced": True, "kind": "Lease",
                                       "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                                                 "watch"]}]
    status, _headers, body = raw(sb, "GET", "/apis/coordination.k8s.io/v1/leases")
    assert status == 200 and body["kind"] == "LeaseList"
    assert raw(sb, "GET", "/api/v1/namespaces/shop/leases")[0] == 404


def test_lease_create_read_list_update_delete_through_the_official_client(sb):
    created = sb.coordination.create_namespaced_lease(NS, lease_body("lock"))
    assert created.spec.holder_identity == "run-a" and created.spec.lease_duration_seconds == 60
    assert created.spec.renew_time.microsecond == 0 and created.spec.renew_time.tzinfo is not None
    assert created.metadata.namespace == NS and created.metadata.resource_version
    status, _headers, stored = raw(sb, "GET", "/apis/coordination.k8s.io/v1/namespaces/shop/leases/lock")
    assert status == 200 and stored["kind"] == "Lease" and stored["apiVersion"] == "coordination.k8s.io/v1"
    assert stored["spec"]["renewTime"] == "2026-11-23T10:00:00.000000Z"   # stored as sent, six digits
    assert [item.metadata.name for item in sb.coordination.list_namespaced_lease(NS).items] == ["lock"]
    assert [item.metadata.name for item in sb.coordination.list_lease_for_all_namespaces().items] == ["lock"]
    body = dict(stored, spec=dict(stored["spec"], holderIdentity="run-b", renewTime="2026-11-23T10:01:00.000000Z"))
    replaced = sb.coordination.replace_namespaced_lease("lock", NS, body)
    assert replaced.spec.holder_identity == "run-b"
    assert int(replaced.metadata.resource_version) > int(stored["metadata"]["resourceVersion"])
    sb.coordination.delete_namespaced_lease("lock", NS)
    code, body = api_error(sb.coordination.read_namespaced_lease, "lock", NS)
    assert (code, body["reason"], body["message"]) == (404, "NotFound", 'leases.coordination.k8s.io "lock" not found')


def test_lease_create_of_an_existing_name_is_409_already_exists(sb):
    sb.coordination.create_namespaced_lease(NS, lease_body("lock"))
    code, body = api_error(sb.coordination.create_namespaced_lease, NS, lease_body("lock", holder="run-b"))
    assert (code, body["reason"]) == (409, "AlreadyExists")
    assert body["message"] == 'leases.coordination.k8s.io "lock" already exists'
    assert body["details"] == {"name": "lock", "group": "coordination.k8s.io", "kind": "leases"}
    assert sb.coordination.read_namespaced_lease("lock", NS).spec.holder_identity == "run-a"


def test_lease_update_from_a_stale_resource_version_is_409_conflict_and_changes_nothing(sb):
    stale = raw(sb, "POST", "/apis/coordination.k8s.io/v1/namespaces/shop/leases", lease_body("lock"))[2]
    winner = dict(stale, spec=dict(stale["spec"], holderIdentity="run-b"))
    assert sb.coordination.replace_namespaced_lease("lock", NS, winner).spec.holder_identity == "run-b"
    loser = dict(stale, spec=dict(stale["spec"], holderIdentity="run-c"))
    code, body = api_error(sb.coordination.replace_namespaced_lease, "lock", NS, loser)
    assert (code, body["reason"]) == (409, "Conflict")
    assert body["message"] == ('Operation cannot be fulfilled on leases.coordination.k8s.io "lock": the object has been '
                               'modified; please apply your changes to the latest version and try again')
    patch = {"metadata": {"resourceVersion": stale["metadata"]["resourceVersion"]}, "spec": {"holderIdentity": "run-c"}}
    assert api_error(sb.coordination.patch_namespaced_lease, "lock", NS, patch)[0] == 409
    assert sb.coordination.read_namespaced_lease("lock", NS).spec.holder_identity == "run-b"


def test_lease_spec_is_validated_as_kube_apiserver_does(sb):
    path = "/apis/coordination.k8s.io/v1/namespaces/shop/leases"
    status, _headers, body = raw(sb, "POST", path, lease_body("lock", duration=0))
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"] == 'Lease.coordination.k8s.io "lock" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0'
    status, _headers, body = raw(sb, "POST", path, lease_body("lock", leaseTransitions=-1))
    assert (status, body["details"]["causes"][0]["field"]) == (422, "spec.leaseTransitions")
    status, _headers, body = raw(sb, "POST", path, lease_body("Bad_Name"))
    assert (status, body["details"]["causes"][0]["field"]) == (422, "metadata.name")
    # MicroTime is decoded with Go's layout 2006-01-02T15:04:05.000000Z07:00: exactly six fractional digits
    for renew in ("2026-11-23T10:00:00Z", "2026-11-23T10:00:00.123Z", "yesterday", 1700000000):
        status, _headers, body = raw(sb, "POST", path, lease_body("lock", renew=renew))
        assert (status, body["reason"]) == (400, "BadRequest"), renew
        assert body["message"].startswith('Lease in version "v1" cannot be handled as a Lease: '), body
    status, _headers, body = raw(sb, "POST", path, lease_body("lock", duration="60"))
    assert (status, body["reason"]) == (400, "BadRequest")
    assert "LeaseSpec.spec.leaseDurationSeconds of type int32" in body["message"]
    for renew in ("2026-11-23T10:00:00.123456+02:00", None):
        status, _headers, body = raw(sb, "POST", path, lease_body("lock-%s" % ("offset" if renew else "null"), renew=renew))
        assert status == 201, body
    # an empty holder is a released lease, not an error (client-go's ReleaseOnCancel writes exactly that)
    status, _headers, body = raw(sb, "POST", path, lease_body("free", holder="", duration=1))
    assert status == 201 and body["spec"]["holderIdentity"] == ""
    assert sb.store.try_get("leases", NS, "lock") is None


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_get_leases_shows_the_holder(sb, tmp_path):
    sb.coordination.create_namespaced_lease(NS, lease_body("lock", holder="awx-job-42@ee/1a2b"))
    out = kubectl(sb, tmp_path, "-n", NS, "get", "leases")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0].split() == ["NAME", "HOLDER", "AGE"]
    assert out.stdout.split("\n")[1].split()[:2] == ["lock", "awx-job-42@ee/1a2b"]


def test_duplicate_create_is_409_already_exists_and_missing_namespace_404(sb):
    add_node(sb, "n1")
    code, body = api_error(sb.core.create_node, {"metadata": {"name": "n1"}})
    assert (code, body["reason"], body["message"]) == (409, "AlreadyExists", 'nodes "n1" already exists')
    code, body = api_error(sb.core.create_namespaced_pod, "nowhere",
                           {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    assert (code, body["reason"]) == (404, "NotFound")


def test_list_pagination_with_limit_and_continue(sb):
    add_node(sb, "n1")
    for i in range(25):
        sb.core.create_namespaced_pod(NS, {"metadata": {"name": "p-%02d" % i}, "spec": {
            "nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}})
    seen, token, pages = [], None, 0
    while True:
        page = sb.core.list_namespaced_pod(NS, limit=10, _continue=token)
        pages += 1
        seen.extend(p.metadata.name for p in page.items)
        token = page.metadata._continue
        if pages == 1:
            assert page.metadata.remaining_item_count == 15
        if not token:
            break
    assert pages == 3 and seen == ["p-%02d" % i for i in range(25)]
    code, body = api_error(sb.core.list_namespaced_pod, NS, limit=10, _continue="garbage")
    assert (code, body["reason"]) == (400, "BadRequest")


# ---- deletion ------------------------------------------------------------------------------------
def test_pod_delete_is_graceful_and_a_shorter_grace_shortens_it():
    sb = start_sandbox(speed=1.0)     # real-time clock: deletion timestamps a whole minute apart
    try:
        check_graceful_pod_deletion(sb)
    finally:
        sb.api.stop()


def check_graceful_pod_deletion(sb):
    sb.core.create_namespace({"metadata": {"name": NS}})
    add_node(sb, "n1")
    add_pod(sb, "web-0", {"app": "web"})
    pod = sb.core.delete_namespaced_pod("web-0", NS, grace_period_seconds=60)
    assert pod.metadata.deletion_grace_period_seconds == 60
    first = sb.core.read_namespaced_pod("web-0", NS)
    assert first.metadata.deletion_timestamp is not None and first.metadata.deletion_grace_period_seconds == 60
    sb.core.delete_namespaced_pod("web-0", NS, grace_period_seconds=90)     # longer: no change
    assert sb.core.read_namespaced_pod("web-0", NS).metadata.deletion_grace_period_seconds == 60
    sb.core.delete_namespaced_pod("web-0", NS, grace_period_seconds=5)
    second = sb.core.read_namespaced_pod("web-0", NS)
    assert second.metadata.deletion_grace_period_seconds == 5
    assert second.metadata.deletion_timestamp < first.metadata.deletion_timestamp
    sb.core.delete_namespaced_pod("web-0", NS, grace_period_seconds=0)
    assert not pod_exists(sb, "web-0")
    kinds = [e["kind"] for e in sb.events.events("pod.") if e.get("pod") == "shop/web-0"]
    assert kinds.count("pod.terminating") == 1 and kinds[-1] == "pod.deleted"


def test_pod_default_grace_comes_from_the_spec_and_unscheduled_pods_go_at_once(sb):
    add_node(sb, "n1")
    add_pod(sb, "web-0", {"app": "web"}, grace=45)
    sb.core.delete_namespaced_pod("web-0", NS, body=client.V1DeleteOptions())
    assert sb.core.read_namespaced_pod("web-0", NS).metadata.deletion_grace_period_seconds == 45
    add_pod(sb, "floating", {"app": "web"}, node=None, phase="Pending")
    sb.core.delete_namespaced_pod("floating", NS)
    assert not pod_exists(sb, "floating")


def test_delete_preconditions_and_dry_run(sb):
    add_node(sb, "n1")
    add_pod(sb, "web-0", {"app": "web"})
    pod = sb.core.read_namespaced_pod("web-0", NS)
    code, body = api_error(sb.core.delete_namespaced_pod, "web-0", NS,
                           body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-the-uid")))
    assert (code, body["reason"]) == (409, "Conflict") and "UID in the precondition" in body["message"]
    code, body = api_error(sb.core.delete_namespaced_pod, "web-0", NS,
                           body=client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version="1")))
    assert code == 409 and "ResourceVersion in the precondition" in body["message"]
    sb.core.delete_namespaced_pod("web-0", NS, dry_run="All")
    assert not terminating(sb, "web-0")
    sb.core.delete_namespaced_pod("web-0", NS, body=client.V1DeleteOptions(
        preconditions=client.V1Preconditions(uid=pod.metadata.uid, resource_version=pod.metadata.resource_version)))
    assert terminating(sb, "web-0")
    code, body = api_error(sb.core.create_namespaced_pod, NS, {"metadata": {"name": "dry"}, "spec": {
        "containers": [{"name": "c", "image": "i"}]}}, dry_run="Nope")
    assert code == 422
    sb.core.create_namespaced_pod(NS, {"metadata": {"name": "dry"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
                                  dry_run="All")
    assert not pod_exists(sb, "dry")


def test_other_kinds_are_removed_at_once_and_orphan_keeps_dependents(sb):
    rs = web_fleet(sb, replicas=2)
    status, _headers, body = raw(sb, "DELETE", "/apis/apps/v1/namespaces/shop/replicasets/web",
                                 {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"})
    assert status == 200 and body["status"] == "Success" and body["details"]["uid"] == rs.metadata.uid
    assert sb.store.try_get("replicasets", NS, "web") is None
    assert sb.core.read_namespaced_pod("web-0", NS).metadata.owner_references is None
    code = api_error(sb.apps.delete_namespaced_replica_set, "web", NS)[0]
    assert code == 404
    status, _headers, body = raw(sb, "DELETE", "/api/v1/namespaces/shop/pods?labelSelector=app%3Dweb&gracePeriodSeconds=0")
    assert status == 200 and body["kind"] == "PodList" and len(body["items"]) == 2
    assert not pod_exists(sb, "web-0") and not pod_exists(sb, "web-1")


# ---- watch -----------------------------------------------------------------------------------------
def test_client_watch_streams_added_modified_deleted(sb):
    add_node(sb, "n1")

    def changes():
        time.sleep(0.3)
        sb.core.patch_node("n1", {"spec": {"unschedulable": True}})
        sb.core.create_node({"metadata": {"name": "n2"}})
        sb.core.delete_node("n2")

    threading.Thread(target=changes, daemon=True).start()
    seen = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(sb.core.list_node, timeout_seconds=2)]
    assert seen == [("ADDED", "n1"), ("MODIFIED", "n1"), ("ADDED", "n2"), ("DELETED", "n2")]


def watch_lines(sb, path):
    conn = http.client.HTTPConnection("127.0.0.1", sb.api.port, timeout=10)
    conn.request("GET", path, headers={"Accept": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Transfer-Encoding") == "chunked"
    lines = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    conn.close()
    return lines


@pytest.mark.parametrize("flag", ["true", "True", "1"])
def test_watch_flag_spellings_all_stream(sb, flag):
    add_node(sb, "n1")
    events = watch_lines(sb, "/api/v1/nodes?watch=%s&timeoutSeconds=1" % flag)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "n1")]


def test_watch_resumes_from_resource_version_and_honours_selectors(sb):
    add_node(sb, "n1", {"role": "worker"})
    rv = sb.core.list_node().metadata.resource_version
    sb.core.patch_node("n1", {"metadata": {"labels": {"role": "infra"}}})
    add_node(sb, "n2", {"role": "worker"}, ready=False)
    events = watch_lines(sb, "/api/v1/nodes?watch=1&timeoutSeconds=1&resourceVersion=%s&labelSelector=role%%3Dworker" % rv)
    # n1 left the selection (DELETED as the watcher sees it), n2 arrived
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("DELETED", "n1"), ("ADDED", "n2")]
    assert int(events[-1]["object"]["metadata"]["resourceVersion"]) > int(rv)
    status, _headers, body = raw(sb, "GET", "/api/v1/nodes?watch=1&resourceVersion=abc")
    assert (status, body["reason"]) == (400, "BadRequest")


def test_watch_from_a_compacted_resource_version_streams_410_expired():
    box = start_sandbox(history=5)
    try:
        for i in range(10):
            box.core.create_node({"metadata": {"name": "n%d" % i}})
        events = watch_lines(box, "/api/v1/nodes?watch=true&resourceVersion=2")
        assert len(events) == 1 and events[0]["type"] == "ERROR"
        status = events[0]["object"]
        assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
        with pytest.raises(ApiException) as info:
            list(watch.Watch().stream(box.core.list_node, resource_version="2", timeout_seconds=1))
        assert info.value.status == 410
    finally:
        box.api.stop()


def test_watch_sends_bookmarks_when_allowed(sb):
    add_node(sb, "n1")
    sb.api.bookmark_interval = 0.3
    events = watch_lines(sb, "/api/v1/nodes?watch=true&timeoutSeconds=1&allowWatchBookmarks=true")
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert events[0]["type"] == "ADDED" and bookmarks
    assert bookmarks[0]["object"]["kind"] == "Node"
    assert bookmarks[-1]["object"]["metadata"]["resourceVersion"] == sb.store.resource_version


# ---- scale and binding ---------------------------------------------------------------------------
def test_deployment_scale_subresource(sb):
    sb.apps.create_namespaced_deployment(NS, {"metadata": {"name": "web"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    scale = sb.apps.read_namespaced_deployment_scale("web", NS)
    assert (scale.spec.replicas, scale.status.selector) == (2, "app=web")
    sb.apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 5}})
    dep = sb.apps.read_namespaced_deployment("web", NS)
    assert dep.spec.replicas == 5 and dep.metadata.generation == 2
    code = api_error(sb.apps.patch_namespaced_deployment_scale, "web", NS, {"spec": {"replicas": -1}})[0]
    assert code == 422


def test_binding_assigns_a_node_once(sb):
    add_node(sb, "n1")
    add_pod(sb, "web-0", {"app": "web"}, node=None, phase="Pending")
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web-0"}, "target": {"kind": "Node", "name": "n1"}}
    assert raw(sb, "POST", "/api/v1/namespaces/shop/pods/web-0/binding", body)[0] == 201
    assert sb.core.read_namespaced_pod("web-0", NS).spec.node_name == "n1"
    status, _headers, err = raw(sb, "POST", "/api/v1/namespaces/shop/pods/web-0/binding", body)
    assert (status, err["reason"]) == (409, "Conflict")


# ---- faults and request events ---------------------------------------------------------------------
def test_fault_injection_per_verb(sb):
    add_node(sb, "n1")
    sb.api.faults.set(verb_rates={"get": {"429": 1.0}}, seed=7)
    status, headers, body = raw(sb, "GET", "/api/v1/nodes/n1")
    assert (status, body["reason"], headers.get("Retry-After")) == (429, "TooManyRequests", "1")
    code = api_error(sb.core.read_node, "n1")[0]
    assert code == 429
    assert len(sb.core.list_node().items) == 1            # other verbs unaffected
    sb.api.faults.set(verb_rates={"*": {"500": 1.0}})
    assert raw(sb, "GET", "/api/v1/nodes")[2]["reason"] == "InternalError"
    sb.api.faults.set(verb_rates={"patch": {"503": 1.0}})
    assert raw(sb, "PATCH", "/api/v1/nodes/n1", {}, content_type="application/merge-patch+json")[0] == 503
    sb.api.faults.set(verb_rates={"get": {"500": 0.5}}, seed=3)
    codes = [raw(sb, "GET", "/api/v1/nodes/n1")[0] for _attempt in range(40)]
    assert 5 < codes.count(500) < 35 and codes.count(200) == 40 - codes.count(500)
    sb.api.faults.clear()
    assert raw(sb, "GET", "/api/v1/nodes/n1")[0] == 200
    injected = [e for e in sb.events.events("k8s.request") if e.get("injected")]
    assert injected and all(e["code"] in (429, 500, 503) for e in injected)
    with pytest.raises(ValueError, match="unknown verb 'fetch'"):
        sb.api.faults.set(verb_rates={"fetch": {"429": 1.0}})
    with pytest.raises(ValueError, match="allowed: 429, 500, 503"):
        sb.api.faults.set(verb_rates={"get": {"404": 1.0}})
    with pytest.raises(ValueError, match=r"rate must be a number in \[0, 1\]"):
        sb.api.faults.set(verb_rates={"get": {"429": 2}})


def test_request_events_attribute_the_client(sb):
    add_node(sb, "n1")
    rollout = make_client(sb.url, user_agent="nodeops.rollout/0.1.0 node_drain (ansible-core 2.19.14; python 3.11)")
    rollout.core.patch_node("n1", {"spec": {"unschedulable": True}})
    rollout.core.read_node("n1")
    api_error(rollout.core.read_node, "missing")
    sb.core.list_node()
    requests = sb.events.events("k8s.request")
    mine = [e for e in requests if e["client"] == "nodeops.rollout/0.1.0 node_drain"]
    assert [(e["verb"], e["resource"], e["name"], e["code"], e["mutating"]) for e in mine] == [
        ("patch", "nodes", "n1", 200, True), ("get", "nodes", "n1", 200, False), ("get", "nodes", "missing", 404, False)]
    assert requests[-1]["client"] == "OpenAPI-Generator/36.0.3/python" and requests[-1]["verb"] == "list"
    setup = [e for e in requests if e["verb"] == "create" and e["resource"] == "nodes"]
    assert setup[0]["name"] == "n1" and setup[0]["mutating"] is True
    patched = sb.events.events("node.cordoned")
    assert patched[-1]["client"] == "nodeops.rollout/0.1.0 node_drain"


def node_event(name, uid, namespace="default", reason="RolloutCordoned"):
    return {"metadata": {"generateName": name + ".", "namespace": namespace},
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid},
            "reason": reason, "message": "Cordoned", "type": "Normal", "source": {"component": "nodeops.rollout"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z", "count": 1}


def test_node_events_are_created_and_found_as_kubectl_describe_node_searches(sb):
    node = sb.core.create_node({"metadata": {"name": "n1"}})
    sb.core.create_namespaced_event("default", node_event("n1", node.metadata.uid))
    sb.core.create_namespaced_event("default", node_event("n2", "other"))
    # kubectl describe node: every namespace, by involvedObject name, namespace (empty), kind and uid
    selector = "involvedObject.name=n1,involvedObject.namespace=,involvedObject.kind=Node,involvedObject.uid=%s" % node.metadata.uid
    found = sb.core.list_event_for_all_namespaces(field_selector=selector).items
    assert [(event.reason, event.source.component, event.metadata.namespace) for event in found] == [
        ("RolloutCordoned", "nodeops.rollout", "default")]
    # an Event about a cluster-scoped object lives in default, as kube-apiserver's validation wants
    with pytest.raises(ApiException) as refused:
        sb.core.create_namespaced_event(NS, node_event("n1", node.metadata.uid, namespace=NS))
    assert refused.value.status == 422 and "does not match event.namespace" in refused.value.body


def test_a_forbidden_resource_is_answered_403_as_an_rbac_without_it(sb):
    sb.api.faults.forbid({"events": ["create"]})
    with pytest.raises(ApiException) as refused:
        sb.core.create_namespaced_event("default", node_event("n1", "u1"))
    assert refused.value.status == 403
    status = json.loads(refused.value.body)
    assert status["reason"] == "Forbidden" and status["message"].startswith('events is forbidden: User "sandbox-admin" cannot create')
    assert sb.core.list_event_for_all_namespaces().items == []      # list is still granted
    sb.api.faults.forbid({"events": []})
    sb.core.create_namespaced_event("default", node_event("n1", "u1"))
    with pytest.raises(ValueError, match="k8s_forbid"):
        sb.api.faults.forbid({"events": ["fly"]})


def test_the_control_plane_version_can_be_set(sb):
    assert client.VersionApi(sb.raw).get_code().git_version == "v1.30.6"
    sb.api.set_version("v1.29.4-eks-036c24b")
    code = client.VersionApi(sb.raw).get_code()
    assert (code.major, code.minor, code.git_version) == ("1", "29+", "v1.29.4-eks-036c24b")
    with pytest.raises(ValueError, match="v1.29.4"):
        sb.api.set_version("1.29")


# ---- RBAC: enforced on the reference backend only, and said so -----------------------------------------------------

def test_the_embedded_backend_says_plainly_that_it_has_no_rbac_where_rbac_would_answer(sb):
    status, _headers, body = raw(sb, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                                 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "x"}})
    assert status == 405 and body["kind"] == "Status" and "RBAC is enforced on the reference backend only" in body["message"], body
    status, _headers, body = raw(sb, "GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles")
    assert status == 404 and "has no RBAC" in body["message"], body
    # an access review (kubectl auth can-i) is allowed, with the reason why: there is no authorizer
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}}}
    status, _headers, body = raw(sb, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    assert status == 201 and body["status"]["allowed"] is True, body
    assert "RBAC is enforced on the reference backend only" in body["status"]["reason"], body


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_apply_of_docs_rbac_yaml_says_rbac_is_enforced_on_the_reference_backend_only(sb, tmp_path):
    rbac = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "rbac.yaml")
    out = kubectl(sb, tmp_path, "apply", "-f", rbac)
    assert out.returncode != 0, out.stdout
    # the namespace and the ServiceAccount are created as kube-apiserver creates them; every role is refused, saying why
    assert "namespace/nodeops-rollout created" in out.stdout and "serviceaccount/nodeops-rollout created" in out.stdout, out
    refusals = [line for line in out.stderr.splitlines() if line.strip()]
    assert refusals and all("RBAC is enforced on the reference backend only" in line for line in refusals), out.stderr
    out = kubectl(sb, tmp_path, "auth", "can-i", "delete", "nodes", "-v", "0")
    assert out.returncode == 0 and out.stdout.strip() == "yes", out
