"""node_taint end to end: taints, cordon, labels and annotations on sandbox nodes, other owners' taints untouched."""

import sys

import pytest

from sandbox.drive.handle import install_collection_loader
from tests.integration.modules.conftest import DEMO, assert_holds_workload, assert_safe, workload_pods

OUTDATED = {"key": "nodeops.rollout/outdated", "value": "true", "effect": "NoSchedule"}
FOREIGN = {"key": "example.com/gpu", "value": "a100", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    # the demo shop spread over the three nodes: tainting and cordoning must leave its pods where they run
    return start_sandbox(nodes=3, azs=3, speed=20, workloads=[DEMO])


@pytest.fixture(scope="module")
def names(sandbox):
    return sorted(node.metadata.name for node in sandbox.core().list_node().items)


def taints_of(sandbox, name):
    node = sandbox.core().read_node(name)
    return ["%s=%s:%s" % (t.key, t.value or "", t.effect) for t in node.spec.taints or []]


def test_taints_added_to_every_node_keep_foreign_taints_and_are_idempotent(sandbox, names):
    before = {name: assert_holds_workload(sandbox, name) for name in names}
    sandbox.core().patch_node(names[0], {"spec": {"taints": [FOREIGN]}})
    result = sandbox.run_module("node_taint", nodes=names, taints=[OUTDATED])
    assert result["rc"] == 0 and result["changed"], result["output"]
    assert taints_of(sandbox, names[0]) == ["example.com/gpu=a100:NoSchedule", "nodeops.rollout/outdated=true:NoSchedule"]
    for name in names[1:]:
        assert taints_of(sandbox, name) == ["nodeops.rollout/outdated=true:NoSchedule"]
    again = sandbox.run_module("node_taint", nodes=names, taints=[OUTDATED])
    assert again["rc"] == 0 and not again["changed"]
    assert all(not node["changed"] for node in again["nodes"].values())
    # NoSchedule keeps new pods off; the running ones stay where they are
    assert {name: workload_pods(sandbox, name) for name in names} == before
    assert_safe(sandbox.report())


def test_removing_our_taint_leaves_the_foreign_one(sandbox, names):
    result = sandbox.run_module("node_taint", nodes=names, state="absent", taints=[{"key": OUTDATED["key"]}])
    assert result["rc"] == 0 and result["changed"]
    assert taints_of(sandbox, names[0]) == ["example.com/gpu=a100:NoSchedule"]
    assert taints_of(sandbox, names[1]) == []


def test_check_mode_and_diff_predict_without_a_single_mutating_request(sandbox, names):
    since = sandbox.now() + 0.01  # after the newest event so far (which may be a request of the previous test)
    result = sandbox.run_module("node_taint", check=True, diff=True, nodes=names[:2], taints=[OUTDATED], cordon=True,
                                labels={"node.kubernetes.io/exclude-from-external-load-balancers": "true"})
    assert result["rc"] == 0 and result["changed"]
    assert sandbox.mutating_requests(since=since) == []
    assert taints_of(sandbox, names[1]) == []
    node = result["nodes"][names[1]]
    assert node["unschedulable"] is True and node["taints"] == ["nodeops.rollout/outdated=true:NoSchedule"]
    # Ansible prints the diff (the result file leaves it out): one section per node, whole-node before/after
    assert "--- before: node %s" % names[1] in result["output"]
    assert '-    "unschedulable": false' in result["output"] and '+    "unschedulable": true' in result["output"]
    assert '+        "node.kubernetes.io/exclude-from-external-load-balancers": "true",' in result["output"]
    assert '+        "nodeops.rollout/outdated=true:NoSchedule"' in result["output"]


def test_cordon_label_annotate_then_undo(sandbox, names):
    label = "node.kubernetes.io/exclude-from-external-load-balancers"
    before = assert_holds_workload(sandbox, names[2])
    result = sandbox.run_module("node_taint", nodes=[names[2]], cordon=True, labels={label: "true"},
                                annotations={"nodeops.rollout/drained-at": "2024-05-01T12:00:00Z"})
    assert result["rc"] == 0 and result["changed"]
    node = sandbox.core().read_node(names[2])
    assert node.spec.unschedulable is True
    assert node.metadata.labels[label] == "true"
    assert node.metadata.labels["topology.kubernetes.io/zone"]  # the node's own labels are still there
    assert node.metadata.annotations["nodeops.rollout/drained-at"] == "2024-05-01T12:00:00Z"
    assert workload_pods(sandbox, names[2]) == before  # a cordon moves no pod
    undo = sandbox.run_module("node_taint", nodes=[names[2]], cordon=False, state="absent", labels={label: None},
                              annotations={"nodeops.rollout/drained-at": None})
    assert undo["rc"] == 0 and undo["changed"]
    node = sandbox.core().read_node(names[2])
    assert not node.spec.unschedulable
    assert label not in node.metadata.labels and "nodeops.rollout/drained-at" not in (node.metadata.annotations or {})
    assert node.metadata.labels["topology.kubernetes.io/zone"]


def test_a_missing_node_fails_and_changes_nothing(sandbox, names):
    since = sandbox.now() + 0.01  # after the newest event so far (which may be a request of the previous test)
    result = sandbox.run_module("node_taint", nodes=[names[1], "ip-10-9-9-9.ec2.internal"], taints=[OUTDATED])
    assert result["rc"] != 0
    assert result["msg"] == "node ip-10-9-9-9.ec2.internal not found; no node was changed"
    assert sandbox.mutating_requests(since=since) == []


def test_a_release_takes_off_only_the_rollout_s_marks_and_skips_a_node_that_has_gone(sandbox, names):
    node = names[2]
    # what a rollout leaves on a drained node, next to a cordon-free foreign taint and annotation
    marked = sandbox.run_module("node_taint", nodes=[node], taints=[OUTDATED, FOREIGN], cordon=True,
                                labels={"node.kubernetes.io/exclude-from-external-load-balancers": "true"},
                                annotations={"nodeops.rollout/cordoned": "true", "nodeops.rollout/drained-at": "2026-11-28T10:00:00Z",
                                             "nodeops.rollout/scale-down-disabled": "true",
                                             "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true", "team": "shop"})
    assert marked["rc"] == 0, marked["output"]
    gone = "ip-10-9-9-9.ec2.internal"
    only_autoscaler = sandbox.run_module("node_taint", release=[{"node": node, "marks": ["taint", "cordon", "label", "autoscaler"]}],
                                         release_only=["autoscaler"])
    assert only_autoscaler["rc"] == 0 and only_autoscaler["changed"], only_autoscaler["output"]
    kept = sandbox.core().read_node(node)
    assert kept.spec.unschedulable and "nodeops.rollout/outdated=true:NoSchedule" in taints_of(sandbox, node)
    assert "cluster-autoscaler.kubernetes.io/scale-down-disabled" not in kept.metadata.annotations
    result = sandbox.run_module("node_taint", release=[{"node": node, "marks": ["taint", "cordon", "label"]},
                                                       {"node": gone, "marks": ["taint"]}])
    assert result["rc"] == 0 and result["changed"] and result["missing"] == [gone], result["output"]
    released = sandbox.core().read_node(node)
    assert not released.spec.unschedulable and taints_of(sandbox, node) == ["example.com/gpu=a100:NoSchedule"]
    assert released.metadata.annotations.get("team") == "shop" and not any(
        key.startswith("nodeops.rollout/") for key in released.metadata.annotations)
    assert "node.kubernetes.io/exclude-from-external-load-balancers" not in released.metadata.labels
    # a node gone is skipped by a removal that says so, and an empty list with it is nothing to do
    queued = sandbox.run_module("node_taint", nodes=[gone], taints=[{"key": "nodeops.rollout/queued"}], state="absent", missing="skip")
    assert queued["rc"] == 0 and not queued["changed"] and queued["missing"] == [gone]
    assert sandbox.run_module("node_taint", nodes=[], state="absent", missing="skip")["rc"] == 0
    sandbox.run_module("node_taint", nodes=[node], taints=[FOREIGN], state="absent")


def test_bad_input_gets_one_clear_error(sandbox, names):
    result = sandbox.run_module("node_taint", nodes=names, taints=[{"key": "nodeops.rollout/outdated", "effect": "NoSchedule "}])
    assert result["rc"] != 0 and "effect" in result["msg"] and "NoSchedule, PreferNoSchedule, NoExecute" in result["msg"]
    result = sandbox.run_module("node_taint", nodes=names, labels={"tier": "front end"})
    assert result["rc"] != 0 and result["msg"].startswith("labels.tier: 'front end' is not allowed")


def test_a_new_interpreter_answers_as_the_worker_does(sandbox, names, tmp_path):
    """On a local host with the controller's Python the module runs inside Ansible's worker; with any other Python it
    starts that interpreter the usual way (AnsiballZ). Both predict the same change and fail with the same message."""
    python = tmp_path / "python"
    python.write_text('#!/bin/sh\nexec "%s" "$@"\n' % sys.executable)
    python.chmod(0o755)
    verbose = {"ANSIBLE_VERBOSITY": "3"}   # -vvv: the usual way prints "Using module file"
    usual = dict(verbose, ANSIBLE_PYTHON_INTERPRETER=str(python))
    for args in ({"nodes": names, "taints": [OUTDATED], "cordon": True},
                 {"nodes": [names[1], "ip-10-9-9-9.ec2.internal"], "taints": [OUTDATED]}):
        in_worker = sandbox.run_module("node_taint", check=True, env=verbose, **args)
        started = sandbox.run_module("node_taint", check=True, env=usual, **args)
        assert "Using module file" not in in_worker["output"], in_worker["output"]
        assert "Using module file" in started["output"] and str(python) in started["output"], started["output"]
        for key in ("rc", "changed", "failed", "msg", "nodes"):
            assert in_worker.get(key) == started.get(key), key


def test_a_concurrent_writer_between_read_and_write_is_not_overwritten(sandbox, names):
    """The write carries the resourceVersion read: the API answers 409, the node is read again, both taints survive."""
    install_collection_loader()
    # pylint: disable=import-outside-toplevel
    from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import KubeApi
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import node_edits
    from ansible_collections.nodeops.rollout.plugins.module_utils.runners import nodes

    name = names[1]
    api = KubeApi(sandbox.kube("nodeops.rollout/0.1.0 node_taint"))
    observer = sandbox.core()
    reads = []
    real_get = api.get_node

    def get_then_race(node_name):
        node = real_get(node_name)
        reads.append(node["metadata"]["resourceVersion"])
        if len(reads) == 1:  # another controller adds its taint right after our read
            observer.patch_node(node_name, {"spec": {"taints": [FOREIGN]}})
        return node

    api.get_node = get_then_race
    wanted = node_edits.normalize_taints([OUTDATED], "present")
    result = nodes.update_node(api, name, lambda node: node_edits.node_edit(node, taints=wanted))
    assert result["conflicts"] == 1 and len(reads) == 2 and reads[0] != reads[1]
    assert taints_of(sandbox, name) == ["example.com/gpu=a100:NoSchedule", "nodeops.rollout/outdated=true:NoSchedule"]
    conflicts = [e for e in sandbox.events() if e["kind"] == "k8s.request" and e.get("code") == 409]
    assert conflicts, "the sandbox should have answered the stale write with 409"


def test_invariants_hold(sandbox):
    report = sandbox.report()
    assert_safe(report)
    # the demo's pods were there all along, and none was moved or went down while nodes were tainted and cordoned
    assert report["evictions"]["pre_existing_pods"] > 0 and report["evictions"]["total"] == 0, report["evictions"]
    assert report["deployments"] and all(d["zero_ready_seconds"] == 0 and d["min_ready_pods"] == d["ready_pods_at_end"]
                                         for d in report["deployments"].values()), report["deployments"]
