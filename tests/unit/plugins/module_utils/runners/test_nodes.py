# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""nodes: read-modify-write with the resourceVersion read, retried on 409, never dropping another writer's taint."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import node_edits
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import marks
from ansible_collections.nodeops.rollout.plugins.module_utils.runners import nodes
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fake_kube import FakeKube, make_node

OUTDATED = node_edits.normalize_taints([{"key": "nodeops.rollout/outdated", "value": "true", "effect": "NoSchedule"}], "present")


def taint_outdated(node):
    return node_edits.node_edit(node, taints=OUTDATED)


def test_a_write_racing_another_writer_is_redone_and_the_foreign_taint_survives():
    kube = FakeKube()
    kube.add_node(make_node("n1", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]))
    raced = []

    def race(name):
        if not raced:  # between our read and our write, someone adds a taint
            raced.append(name)
            kube.foreign_write(name, lambda n: n["spec"]["taints"].append({"key": "spot", "effect": "NoExecute"}))

    kube.before_patch = race
    result = nodes.update_node(kube, "n1", taint_outdated, sleep=lambda _s: None)
    assert result["changed"] and result["conflicts"] == 1
    assert [t["key"] for t in kube.nodes["n1"]["spec"]["taints"]] == ["gpu", "spot", "nodeops.rollout/outdated"]
    assert [entry[0] for entry in kube.requests] == ["get_node", "patch_node", "get_node", "patch_node"]


def test_endless_conflicts_give_up_with_a_clear_error():
    kube = FakeKube()
    kube.add_node(make_node("n1"))
    kube.before_patch = lambda name: kube.foreign_write(name, lambda n: None)
    with pytest.raises(nodes.NodeConflict) as info:
        nodes.update_node(kube, "n1", taint_outdated, attempts=3, sleep=lambda _s: None)
    assert str(info.value) == "node n1: 3 writes in a row met a concurrent change (409 Conflict); giving up"


def test_check_mode_reads_and_predicts_without_writing():
    kube = FakeKube()
    kube.add_node(make_node("n1"))
    result = nodes.update_node(kube, "n1", taint_outdated, check_mode=True)
    assert result["changed"] and result["after"]["taints"] == ["nodeops.rollout/outdated=true:NoSchedule"]
    assert kube.mutating() == [] and "taints" not in kube.nodes["n1"]["spec"]


def test_nothing_to_change_sends_no_write():
    kube = FakeKube()
    kube.add_node(make_node("n1", taints=[{"key": "nodeops.rollout/outdated", "value": "true", "effect": "NoSchedule"}]))
    assert not nodes.update_node(kube, "n1", taint_outdated)["changed"]
    assert kube.mutating() == []


def test_a_missing_node_stops_everything_before_any_write():
    kube = FakeKube()
    kube.add_node(make_node("n1"))
    with pytest.raises(nodes.NodeNotFound) as info:
        nodes.update_nodes(kube, ["n1", "ghost"], taint_outdated)
    assert str(info.value) == "node ghost not found" and not info.value.while_writing
    assert kube.mutating() == []


def test_many_nodes_are_changed_and_returned_in_order():
    kube = FakeKube()
    names = ["n%02d" % i for i in range(20)]
    for name in names:
        kube.add_node(make_node(name))
    results = nodes.update_nodes(kube, names, taint_outdated)
    assert [r["name"] for r in results] == names and all(r["changed"] for r in results)
    # one list of the nodes, not a read per node; a write per node
    assert sorted(set(entry[0] for entry in kube.requests)) == ["list_nodes", "patch_node"]
    assert [entry[0] for entry in kube.requests].count("list_nodes") == 1
    assert all(kube.nodes[name]["spec"]["taints"][0]["key"] == "nodeops.rollout/outdated" for name in names)


def test_cordon_nodes_reports_which_ones_it_cordoned():
    kube = FakeKube()
    kube.add_node(make_node("n1"))
    kube.add_node(make_node("n2", unschedulable=True))
    cordoned = nodes.cordon_nodes(kube, ["n1", "n2"])
    assert {name: entry["cordoned"] for name, entry in cordoned.items()} == {"n1": True, "n2": False}
    assert cordoned["n1"]["node"]["spec"]["unschedulable"] is True
    assert kube.nodes["n1"]["spec"]["unschedulable"] is True
    # only the cordon this call made is recorded as the rollout's, so only that one is ever lifted by the rollout
    assert kube.nodes["n1"]["metadata"]["annotations"] == {"nodeops.rollout/cordoned": "true"}
    assert "nodeops.rollout/cordoned" not in (kube.nodes["n2"]["metadata"].get("annotations") or {})


def test_cordon_nodes_puts_labels_on_in_the_same_write_and_reports_only_the_cordon():
    kube = FakeKube()
    kube.add_node(make_node("n1"))
    kube.add_node(make_node("n2", unschedulable=True))
    label = {"node.kubernetes.io/exclude-from-external-load-balancers": "true"}
    assert {name: entry["cordoned"] for name, entry in nodes.cordon_nodes(kube, ["n1", "n2"], labels=label).items()} == {
        "n1": True, "n2": False}
    for name in ("n1", "n2"):
        assert kube.nodes[name]["metadata"]["labels"]["node.kubernetes.io/exclude-from-external-load-balancers"] == "true"
    assert [verb for verb, _target in kube.mutating()] == ["patch_node", "patch_node"]


def _release(kinds):
    return lambda node: node_edits.node_edit(node, **marks.release_edit(node, kinds))


def test_a_release_takes_off_only_the_marks_the_rollout_made_and_skips_nodes_gone():
    kube = FakeKube()
    ours = make_node("n1", unschedulable=True, taints=[
        {"key": "nodeops.rollout/outdated", "value": "true", "effect": "NoSchedule"},
        {"key": "nodeops.rollout/queued", "value": "true", "effect": "PreferNoSchedule"},
        {"key": "gpu", "value": "true", "effect": "NoSchedule"}],
        labels={"node.kubernetes.io/exclude-from-external-load-balancers": "true"})
    ours["metadata"]["annotations"] = {"nodeops.rollout/cordoned": "true", "nodeops.rollout/drained-at": "2026-11-28T10:00:00Z",
                                       "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true",
                                       "nodeops.rollout/scale-down-disabled": "true", "team": "shop"}
    # cordoned by somebody else, the autoscaler annotation theirs too: nothing of it is ours to lift
    theirs = make_node("n2", unschedulable=True)
    theirs["metadata"]["annotations"] = {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}
    kube.add_node(ours)
    kube.add_node(theirs)
    kinds = marks.release_kinds([{"node": "n1", "marks": ["taint", "cordon", "label", "autoscaler"]},
                                 {"node": "n2", "marks": ["cordon", "autoscaler"]}, {"node": "gone", "marks": ["taint"]}])
    results = nodes.update_nodes(kube, list(kinds), lambda node: _release(kinds[node["metadata"]["name"]])(node), skip_missing=True)
    assert [result["name"] for result in results] == ["n1", "n2"]
    released = kube.nodes["n1"]
    assert [t["key"] for t in released["spec"]["taints"]] == ["gpu"] and not released["spec"].get("unschedulable")
    assert released["metadata"]["annotations"] == {"team": "shop"}
    assert "node.kubernetes.io/exclude-from-external-load-balancers" not in released["metadata"]["labels"]
    assert kube.nodes["n2"]["spec"]["unschedulable"] and kube.nodes["n2"]["metadata"]["annotations"] == {
        "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}
    assert [entry[1] for entry in kube.mutating()] == ["n1"]


def test_a_release_limited_to_the_autoscaler_leaves_the_taint_and_the_cordon():
    kinds = marks.release_kinds([{"node": "n1", "marks": ["taint", "cordon", "autoscaler"]}, {"node": "n2", "marks": ["taint"]}],
                                only=["autoscaler"])
    assert kinds == {"n1": ["autoscaler"]}
    node = make_node("n1", unschedulable=True)
    node["metadata"]["annotations"] = {"nodeops.rollout/cordoned": "true", "nodeops.rollout/scale-down-disabled": "true",
                                       "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}
    edit = marks.release_edit(node, kinds["n1"])
    assert edit["cordon"] is None and edit["taints"] == [] and set(edit["annotations"]) == {
        "nodeops.rollout/scale-down-disabled", "cluster-autoscaler.kubernetes.io/scale-down-disabled"}


def test_a_release_of_our_cordon_takes_the_quarantine_label_off_with_it():
    node = make_node("n1", unschedulable=True)
    node["metadata"]["annotations"] = {"nodeops.rollout/cordoned": "true"}
    node["metadata"]["labels"] = {marks.LABEL_QUARANTINED: "true"}
    edit = node_edits.node_edit(node, **marks.release_edit(node, ["cordon"]))
    assert edit["changed"] and edit["after"]["labels"].get(marks.LABEL_QUARANTINED) is None and not edit["after"]["unschedulable"], edit
