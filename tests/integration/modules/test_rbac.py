"""docs/rbac.yaml enforced: on the reference backend started with ``rbac`` (kube-apiserver authorizing with Node,RBAC),
the modules run with nothing but a token of the ServiceAccount nodeops-rollout/nodeops-rollout from the TokenRequest API.
The access check of node_group_info finds nothing missing; with the pods/eviction rule taken out of the ClusterRole it
names that rule; a request outside what the roles grant fails as a refusal of permission. None of it changes anything.

The embedded backend has no authorizer: it answers every access review allowed, as kube-apiserver with AlwaysAllow does,
but for what its k8s_forbid fault refuses, which it answers and refuses as a role without the verb would: the role then
stops before any change, naming what is missing."""

import json
import os

import pytest
import yaml

from sandbox.drive.handle import KUBE_ENV, ROOT

pytestmark = pytest.mark.reference   # the real authorizer on the reference backend (scripts/test.sh reference)

REFERENCE = os.environ.get(KUBE_ENV) == "reference"
EVICTION_RULE = 'ClusterRole nodeops-rollout rule {apiGroups: [""], resources: [pods/eviction], verbs: [create]} of docs/rbac.yaml'
LOCK = {"name": "sandbox-nodes", "holder": "rbac-test@here/0", "duration": "5m"}


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=2, azs=2, speed=20, rbac=REFERENCE)


def info(sandbox, **args):
    return sandbox.run_module("node_group_info", name="sandbox-nodes", check_access=True, **args)


def cluster_role_without(rule_resources):
    """docs/rbac.yaml's ClusterRole nodeops-rollout without the rule on ``rule_resources``, as YAML text."""
    with open(os.path.join(ROOT, "docs", "rbac.yaml"), encoding="utf-8") as fh:
        items = yaml.safe_load(fh)["items"]
    [role] = [item for item in items if item["kind"] == "ClusterRole"]
    kept = [rule for rule in role["rules"] if rule["resources"] != rule_resources]
    assert len(kept) == len(role["rules"]) - 1
    return yaml.safe_dump(dict(role, rules=kept))


@pytest.mark.skipif(not REFERENCE, reason="RBAC is enforced on the reference backend only")
def test_with_only_the_service_account_token_the_check_finds_nothing_missing_until_a_rule_is_taken_out(sandbox, tmp_path):
    since = sandbox.now()
    # the sandbox applied docs/rbac.yaml and minted a token at start; apply it again and mint another, as a user would
    assert "ClusterRole nodeops-rollout" in sandbox.apply_rbac()
    sandbox.collection_kubeconfig = sandbox.service_account_kubeconfig(str(tmp_path / "sa.kubeconfig"))
    with open(sandbox.collection_kubeconfig, encoding="utf-8") as fh:
        assert "system:serviceaccount:nodeops-rollout:nodeops-rollout" in fh.read()

    # every rule granted: nothing missing, and the group is read with the token alone (nodes, volumes, load balancers)
    granted = info(sandbox, load_balancers=True)
    assert granted["rc"] == 0, granted["output"]
    assert granted["access"]["checked"] and granted["access"]["missing"] == [] and granted["access"]["refusal"] is None
    assert granted["access"]["reviews"] == 23
    assert [instance["node"] is not None for instance in granted["node_groups"][0]["instances"]] == [True, True]

    # the ClusterRole without its pods/eviction rule: the check names that permission and the rule that grants it
    assert sandbox.apply_rbac(cluster_role_without(["pods/eviction"])) == ["ClusterRole nodeops-rollout"]
    try:
        refused = info(sandbox, include_nodes=False)
        assert refused["rc"] == 0, refused["output"]
        assert [(entry["verb"], entry["resource"], entry["api_group"], entry["namespace"], entry["granted_by"], entry["required"])
                for entry in refused["access"]["missing"]] == [("create", "pods/eviction", "", None, EVICTION_RULE, True)]
        assert refused["access"]["refusal"].startswith("the Kubernetes identity of the run may not create pods/eviction "
                                                       "(core API group) in every namespace (granted by %s)" % EVICTION_RULE)
    finally:
        sandbox.apply_rbac()

    # a Lease outside the lock's namespace is refused, as its own kind of failure (check mode: nothing would be written)
    outside = sandbox.run_module("rollout_lock", namespace="default", check=True, **LOCK)
    assert outside["rc"] != 0 and outside["permission"]["verb"] == "get", outside["output"]
    assert outside["msg"].startswith(
        'take Lease default/nodeops-rollout-sandbox-nodes of node group sandbox-nodes: permission denied: Kubernetes refused '
        'get leases (API group coordination.k8s.io) in namespace "default" to User '
        '"system:serviceaccount:nodeops-rollout:nodeops-rollout"; granted by Role nodeops-rollout-lock in kube-system rule')
    assert outside["msg"].endswith("it changed nothing")

    # the access reviews are creates that store nothing: the collection made no mutating request
    assert sandbox.mutating_requests(since=since) == []
    reviews = [e for e in sandbox.events() if e["kind"] == "k8s.request" and e["t"] >= since
               and e.get("resource") == "selfsubjectaccessreviews" and str(e.get("client")).startswith("nodeops.rollout")]
    assert len(reviews) == 46 and {e["code"] for e in reviews} == {201}


@pytest.mark.skipif(REFERENCE, reason="the embedded backend's answers, without an authorizer")
def test_without_an_authorizer_every_review_is_allowed_but_what_a_fault_forbids_and_a_403_is_a_refusal(sandbox, tmp_path):
    since = sandbox.now()
    allowed = info(sandbox, include_nodes=False)
    assert allowed["rc"] == 0, allowed["output"]
    assert allowed["access"]["checked"] and allowed["access"]["missing"] == [] and allowed["access"]["reviews"] == 23

    sandbox.fault(k8s_forbid={"leases": ["get"], "pods/eviction": ["evict"]})
    try:
        # answered as RBAC would: the forbidden verbs are missing, named with their rules
        missing = info(sandbox, include_nodes=False)
        assert [(entry["verb"], entry["resource"], entry["namespace"]) for entry in missing["access"]["missing"]] == [
            ("create", "pods/eviction", None), ("get", "leases", "kube-system")], missing["access"]
        # the role stops before any change: its access check before the lock names both
        report = tmp_path / "result.json"
        rc, out = sandbox.run_role_playbook(tmp_path, report=report)
        refused = sandbox.run_module("rollout_lock", check=True, **LOCK)
    finally:
        sandbox.fault(k8s_forbid={"leases": [], "pods/eviction": []})
    assert rc != 0, out[-3000:]
    result = json.loads(report.read_text())["node_groups"][0]
    assert result["status"] == "failed" and result["permission"]["resource"] == "pods/eviction", result
    assert result["reason"].startswith("permission refused: create pods/eviction (core API group) in every namespace")
    assert "nor get leases (API group coordination.k8s.io) in namespace \"kube-system\"" in result["message"]

    # a refused request is reported the same way
    assert refused["rc"] != 0 and refused["permission"]["resource"] == "leases", refused["output"]
    assert 'refused get leases (API group coordination.k8s.io) in namespace "kube-system"' in refused["msg"]
    assert refused["permission"]["granted_by"].startswith("Role nodeops-rollout-lock in kube-system rule")
    assert sandbox.mutating_requests(since=since) == []
