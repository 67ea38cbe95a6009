"""docs/rbac.yaml, proven by kube-apiserver's RBAC authorizer (the reference backend; no authorizer refuses anything on
the embedded one).

One sandbox started with ``rbac``: the collection connects with nothing but a token of the ServiceAccount
nodeops-rollout/nodeops-rollout from the TokenRequest API, bound by the roles of docs/rbac.yaml as the file applies them.

- Every path runs to its end with only that token (tests/integration/every_path.py): the plan, a second run refused
  by the lock, an upgrade stopped by a PodDisruptionBudget, the rollback of that held rollout, a rollout paused from
  outside, the cancel of it, upgrade_serial over the inventory plugin taking every node back to the first image, an
  upgrade of every node to its end, and a rollout stopped by the budget again that the same run resumes to its end
  once the budget allows (not in the tables). What each path asked of the API server (the audit log: each request by the collection, its verb,
  resource and namespace) is matched to the rule of docs/rbac.yaml that grants it.
- Each rule taken out of its role, one at a time: the shortest path that uses it (an upgrade) stops before any change -
  zero mutating requests, no lock left held - with a refused permission naming the verb, resource, namespace and the
  rule; the rule for Events is done without (the plan says so). With the access check off, the pods/eviction rule taken
  out stops the drain itself: the cordoned node is the only mark, the lock is released, and the next run with the
  full roles finishes the group.
- Every rule is used by some path: none is there for nothing.

The tables of docs/rbac.md (which path used which permission; each rule and the run without it) are what these runs
printed, compared (or written, with NODEOPS_REFRESH_DOCS=1) by tests/integration/doc_outputs.py.
"""

import json
import os
import re

import pytest
import yaml

from sandbox.drive.handle import KUBE_ENV, ROOT, install_collection_loader, wait_until
from tests.integration.controls import QUICK, assert_invariants, lock_holder, node_marks, result_of
from tests.integration.doc_outputs import check_or_refresh
from tests.integration.every_path import PATHS, Paths
from tests.integration.serial_runs import DEMO

install_collection_loader()
from ansible_collections.nodeops.rollout.plugins.module_utils.core import permissions  # noqa: E402 pylint: disable=wrong-import-position

REFERENCE = os.environ.get(KUBE_ENV) == "reference"
pytestmark = [pytest.mark.reference,
              pytest.mark.skipif(not REFERENCE, reason="RBAC is enforced on the reference backend only")]

NODES, AZS, MAX_UNAVAILABLE = 4, 2, 1
GENERATOR = "tests/integration/role/test_least_privilege.py"
# what each path asked of the API server: {path: {rule index: set of verbs}} (the first test fills it, the last reads it)
USED = {}
WITHOUT = {}   # rule index -> what the run without it did
# resources of the rules, to their API group (each resource is in one rule's group)
GROUPS = {name.split("/")[0]: rule.api_groups[0] for rule in permissions.KUBE_RULES for name in rule.resources}
# what a refusal names: "refused list nodes (core API group) at the cluster scope", "may not create pods/eviction ..."
REFUSED = re.compile(r'(?:refused|may not|nor) (\S+ \S+ \([^)]*\) (?:in every namespace|at the cluster scope|in namespace "[^"]*"))')
# verbs of docs/rbac.yaml only an option uses: deleting a pod (a finished one, or at the drain timeout with
# rolling_update_drain_timeout_action: force)
BY_OPTION = {(("pods",), "delete"): "finished pods, and rolling_update_drain_timeout_action: force"}
EVENTS_RULE = next(index for index, rule in enumerate(permissions.KUBE_RULES) if rule.resources == ("events",))


# Pods that mount a claim, so that a drain reads claims and volumes (the rule on persistentvolumeclaims and
# persistentvolumes): a volume the nodes share (hostPath, nothing to attach: the reference backend attaches no volume
# without a CSI driver), two replicas under a budget
SHARED_FILES = """
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-files}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  storageClassName: manual
  hostPath: {path: /srv/files}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: files, namespace: shop}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: manual
  volumeName: pv-files
  resources: {requests: {storage: 1Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: files, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: files}}
  template:
    metadata: {labels: {app: files}}
    spec:
      containers:
        - {name: files, image: registry.example/files:1, resources: {requests: {cpu: 100m, memory: 64Mi}}}
      volumes:
        - {name: data, persistentVolumeClaim: {claimName: files}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: files, namespace: shop}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: files}}
"""


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    handle = start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[DEMO], rbac=True)
    handle.apply(SHARED_FILES)
    wait_until("the files pods Ready", lambda: (handle.apps().read_namespaced_deployment("files", "shop").status.ready_replicas
                                                or 0) == 2, timeout=120)
    return handle


def used_rules(sandbox, since):
    """What the collection asked of the API server since ``since``: ``{rule index: {verb}}``. Access reviews, which any
    identity may send, and paths outside the API's resources (/version, the discovery documents) are left out, as is
    the fresh read of an object after a write of it met a concurrent change (409 Conflict: a node's heartbeat landed
    between the read and the write), which depends on the machine's pace; a request no rule grants fails the test."""
    out, conflicted = {}, set()
    for event in sandbox.events():
        if event["kind"] != "k8s.request" or event["t"] < since or not str(event.get("client")).startswith("nodeops.rollout"):
            continue
        resource = event.get("resource")
        if resource is None or resource in ("selfsubjectaccessreviews",):
            continue
        verb, subresource = event["verb"], event.get("subresource")
        if verb == "evict":
            verb, subresource = "create", "eviction"
        rule = permissions.kube_rule(verb, GROUPS.get(resource, "?"), resource, subresource)
        assert rule is not None, "no rule of docs/rbac.yaml grants %s %s/%s: %s" % (verb, resource, subresource, event)
        written = (event["client"], resource, event.get("namespace"), event.get("name"))
        if event.get("code") == 409:
            conflicted.add(written)
        elif verb == "get" and written in conflicted:
            conflicted.discard(written)
            continue
        out.setdefault(permissions.KUBE_RULES.index(rule), set()).add(verb)
    return out


def test_every_path_runs_to_its_end_with_only_the_service_account_token(sandbox, tmp_path):
    with open(sandbox.collection_kubeconfig, encoding="utf-8") as fh:
        assert "system:serviceaccount:nodeops-rollout:nodeops-rollout" in fh.read()
    paths = Paths(sandbox, tmp_path, lambda since: used_rules(sandbox, since))
    paths.every_path(NODES)
    USED.update(paths.used)
    print("invariants", assert_invariants(sandbox.report(), NODES, MAX_UNAVAILABLE))


def role_without(index):
    """docs/rbac.yaml's objects with rule ``index`` of permissions.KUBE_RULES taken out of its role."""
    rule = permissions.KUBE_RULES[index]
    with open(os.path.join(ROOT, permissions.RBAC_FILE), encoding="utf-8") as fh:
        items = yaml.safe_load(fh)["items"]
    [role] = [item for item in items if item["kind"] == rule.kind and item["metadata"]["name"] == rule.name]
    kept = [each for each in role["rules"] if tuple(each["resources"]) != rule.resources or
            tuple(each["apiGroups"]) != rule.api_groups]
    assert len(kept) == len(role["rules"]) - 1
    return yaml.safe_dump(dict(role, rules=kept))


def authorizer_follows(sandbox, rule, granted):
    """Wait until kube-apiserver's RBAC authorizer, whose cache follows a role's change a moment later, answers the
    ServiceAccount as the roles now say: every verb of ``rule`` allowed (``granted``), or one of them refused. Under
    load a run started at once could still be answered by the roles before the change."""
    from kubernetes import client, config  # pylint: disable=import-outside-toplevel
    api = client.AuthorizationV1Api(config.new_client_from_config(sandbox.collection_kubeconfig))
    resource, _slash, subresource = rule.resources[0].partition("/")

    def allowed(verb):
        attributes = client.V1ResourceAttributes(verb=verb, group=rule.api_groups[0], resource=resource,
                                                 subresource=subresource or None, namespace=rule.namespace)
        body = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes))
        return api.create_self_subject_access_review(body).status.allowed

    wait_until("the authorizer to %s %s" % ("grant" if granted else "refuse", permissions.rule_text(rule)),
               lambda: all(allowed(verb) for verb in rule.verbs) == granted, timeout=60)


def test_each_rule_taken_out_stops_the_run_before_any_change_naming_it(sandbox, tmp_path):
    assert permissions.KUBE_RULES, "no rule to take out"
    for index, rule in enumerate(permissions.KUBE_RULES):
        sandbox.apply_rbac(role_without(index))
        try:
            authorizer_follows(sandbox, rule, granted=False)
            since = sandbox.now()
            if index == EVENTS_RULE:
                # best effort: the plan says the run does without it
                rc, out = sandbox.run_role_playbook(tmp_path, check=True, extra=QUICK)
                assert rc == 0 and "not granted, done without: create events" in out, out[-3000:]
                WITHOUT[index] = "the run does without it: the plan says so, and no Event is written"
                continue
            report = tmp_path / "without.json"
            if report.exists():
                report.unlink()
            rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK)
            assert rc != 0 and permissions.rule_text(rule) in out, out[-3000:]
            refused = REFUSED.findall(out)
            assert refused, out[-3000:]
            # the group's result says which permission: refused a read while every group is checked, before the run
            # starts, or by the access check before the lock
            result = result_of(report)
            assert result["status"] == "failed" and result["permission"]["granted_by"] == permissions.rule_text(rule), result
            assert "changed nothing" in result["message"] or "nothing was changed" in result["message"], result["message"]
            when = "while the run checks its groups" if result["failed_task"].startswith("Check |") else \
                "before the lock (the access check)"
            assert sandbox.mutating_requests(since=since) == [] and lock_holder(sandbox) is None
            WITHOUT[index] = "stops %s, zero mutating requests: may not %s" % (when, "; ".join(sorted(set(refused))))
        finally:
            sandbox.apply_rbac()
            authorizer_follows(sandbox, rule, granted=True)


def test_without_the_access_check_a_refused_eviction_stops_the_drain_and_the_full_roles_finish_the_group(sandbox, tmp_path):
    eviction = next(index for index, rule in enumerate(permissions.KUBE_RULES) if rule.resources == ("pods/eviction",))
    for node in sandbox.core().list_node().items:
        sandbox.core().patch_node(node.metadata.name, {"metadata": {"annotations": {"nodeops.rollout/needs-update": "true"}}})
    sandbox.apply_rbac(role_without(eviction))
    try:
        report = tmp_path / "refused.json"
        rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK + [
            "rolling_update_check_access=false", "rolling_update_restart_single_replica=false"])
    finally:
        sandbox.apply_rbac()
    result = result_of(report)
    assert rc != 0 and result["status"] == "failed", out[-3000:]
    assert result["permission"]["resource"] == "pods/eviction" and result["reason"].startswith("permission refused: create pods/eviction"), result
    assert lock_holder(sandbox) is None and result["nodes_replaced"] == 0
    # the drain stopped at its first refusal: only the node it was draining is cordoned, no pod was moved by force
    cordoned = [name for name, marks in node_marks(sandbox).items() if "cordoned" in json.dumps(marks)]
    assert len(cordoned) <= MAX_UNAVAILABLE, node_marks(sandbox)

    rc, out = sandbox.run_role_playbook(tmp_path, report=report, extra=QUICK)
    assert rc == 0 and result_of(report)["status"] == "replaced", out[-3000:]
    assert node_marks(sandbox) == {} and lock_holder(sandbox) is None
    print("invariants", assert_invariants(sandbox.report(), NODES, MAX_UNAVAILABLE))


def test_every_rule_is_used_and_the_tables_of_docs_rbac_md_are_what_the_runs_did():
    assert set(USED) == set(PATHS) and len(WITHOUT) == len(permissions.KUBE_RULES), (sorted(USED), sorted(WITHOUT))
    unused = [permissions.rule_text(rule) for index, rule in enumerate(permissions.KUBE_RULES)
              if not any(index in used for used in USED.values())]
    assert unused == [], "rules no path used: take them out of docs/rbac.yaml: %s" % unused
    # and every verb of them, but for the one an option needs
    verbs = {(index, verb) for index, rule in enumerate(permissions.KUBE_RULES) for verb in rule.verbs}
    used = {(index, verb) for each in USED.values() for index, verbs_used in each.items() for verb in verbs_used}
    assert {(permissions.KUBE_RULES[index].resources, verb) for index, verb in verbs - used} == set(BY_OPTION), \
        sorted(verbs - used)
    rows = ["| Rule of docs/rbac.yaml | %s |" % " | ".join(PATHS), "|---|" + "---|" * len(PATHS)]
    for index, rule in enumerate(permissions.KUBE_RULES):
        where = "%s %s" % (rule.kind, rule.name)
        name = "%s: %s %s" % (where, "/".join(rule.api_groups) or "core", ", ".join(rule.resources))
        cells = [", ".join(sorted(USED[path].get(index, ()))) or "-" for path in PATHS]
        rows.append("| %s | %s |" % (name, " | ".join(cells)))
    check_or_refresh("docs/rbac.md", "used by path", "\n".join(rows), generator=GENERATOR)
    rows = ["| Rule of docs/rbac.yaml | The upgrade without it |", "|---|---|"]
    for index, rule in enumerate(permissions.KUBE_RULES):
        name = "%s %s: %s %s" % (rule.kind, rule.name, "/".join(rule.api_groups) or "core", ", ".join(rule.resources))
        rows.append("| %s | %s |" % (name, WITHOUT[index]))
    check_or_refresh("docs/rbac.md", "without each rule", "\n".join(rows), generator=GENERATOR)
