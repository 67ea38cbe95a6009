# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The rollout's marks on nodes and the end check."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import marks


def _node(name, taints=(), annotations=None, labels=None, schedulable=True):
    return {"name": name, "taints": [{"key": key, "effect": "NoSchedule"} for key in taints], "annotations": annotations or {},
            "labels": labels or {}, "schedulable": schedulable}


@pytest.mark.parametrize("node, expected", [
    (_node("a"), []),
    (_node("a", taints=["nodeops.rollout/outdated"]), ["taint"]),
    (_node("a", taints=["other/key"]), []),
    # a cordon somebody else made is not ours to lift, nor is their label
    (_node("a", schedulable=False, labels={marks.LABEL_EXCLUDE_LB: "true"}), []),
    (_node("a", schedulable=False, annotations={marks.ANNOTATION_CORDONED: "true"}), ["cordon"]),
    (_node("a", taints=["nodeops.rollout/outdated"], schedulable=False, annotations={marks.ANNOTATION_CORDONED: "true"},
           labels={marks.LABEL_EXCLUDE_LB: "true"}), ["taint", "cordon", "label"]),
    # a node a drain skipped, labelled quarantined: the label goes with our cordon
    (_node("a", schedulable=False, annotations={marks.ANNOTATION_CORDONED: "true"}, labels={marks.LABEL_QUARANTINED: "true"}),
     ["cordon", "label"]),
])
def test_node_marks(node, expected):
    assert marks.node_marks(node) == expected


def test_a_custom_taint_key_is_the_mark():
    assert marks.node_marks(_node("a", taints=["example.com/rolling"]), "example.com/rolling") == ["taint"]


def test_the_queued_taint_of_a_later_group_is_a_mark_whatever_the_taint_key():
    assert marks.node_marks(_node("a", taints=[marks.QUEUED_TAINT_KEY])) == ["taint"]
    assert marks.node_marks(_node("a", taints=[marks.QUEUED_TAINT_KEY]), "example.com/rolling") == ["taint"]


def test_only_up_to_date_nodes_are_marked_up_to_date():
    instances = [{"instance_id": "i-1", "node": _node("a", taints=["nodeops.rollout/outdated"])},
                 {"instance_id": "i-2", "node": _node("b", taints=["nodeops.rollout/outdated"])},
                 {"instance_id": "i-3", "node": None}, {"instance_id": "i-4", "node": _node("d")}]
    assert marks.marked_up_to_date(instances, ["i-2", "i-3", "i-4"]) == [{"instance_id": "i-2", "node": "b", "marks": ["taint"]}]


def test_leftovers_say_what_keeps_a_group_from_being_replaced():
    assert marks.leftovers([], [], 0, []) == []
    reasons = marks.leftovers([{"instance_id": "i-1", "node": "a"}, {"instance_id": "i-2", "node": None}],
                              [{"instance_id": "i-3", "node": "c", "marks": ["taint", "cordon"]}], 2, ["i-9"])
    assert reasons == ["2 outdated instance(s) left: i-1 (a), i-2 (no node)",
                       "1 up-to-date node(s) still carry the rollout's marks: c (taint, cordon)",
                       "2 instance(s) of surge not paid back", "instances detached for surge still run: i-9"]
    assert marks.leftovers([], [], 0, [], ["i-w1"]) == ["1 warm pool instance(s) built from another version: i-w1"]


def test_the_autoscaler_annotation_is_a_mark_only_where_the_rollout_put_it():
    ours = {"name": "a", "annotations": {marks.ANNOTATION_SCALE_DOWN_DISABLED: "true", marks.ANNOTATION_SCALE_DOWN_OURS: "true"}}
    theirs = {"name": "b", "annotations": {marks.ANNOTATION_SCALE_DOWN_DISABLED: "true"}}
    bare = {"name": "c", "annotations": {}}
    assert marks.node_marks(ours) == ["autoscaler"] and marks.node_marks(theirs) == [] and marks.node_marks(bare) == []
    instances = [{"instance_id": "i-%s" % node["name"], "node": node} for node in (ours, theirs, bare)] + [{"instance_id": "i-d", "node": None}]
    # the up-to-date nodes the cluster-autoscaler may still scale in: neither ours nor another's annotation
    assert marks.autoscaler_unprotected(instances, ["i-a", "i-b", "i-c", "i-d"]) == ["c"]
    assert marks.autoscaler_unprotected(instances, ["i-a"]) == []


def test_outdated_nodes_with_marks_say_whether_they_are_drained():
    drained = {marks.ANNOTATION_CORDONED: "true", marks.ANNOTATION_DRAINED_AT: "2026-11-25T07:00:00Z"}
    instances = [
        {"instance_id": "i-1", "node": _node("n1", taints=["nodeops.rollout/outdated"])},
        {"instance_id": "i-2", "node": _node("n2", taints=["nodeops.rollout/outdated"], schedulable=False, annotations=drained)},
        {"instance_id": "i-3", "node": _node("n3", schedulable=False, annotations={marks.ANNOTATION_CORDONED: "true"})},
        {"instance_id": "i-4", "node": _node("n4")},
        {"instance_id": "i-5", "node": _node("n5", taints=["nodeops.rollout/outdated"])},   # up to date
    ]
    found = marks.marked_outdated(instances, ["i-1", "i-2", "i-3", "i-4"])
    assert [(entry["node"], entry["marks"], entry["drained"]) for entry in found] == [
        ("n1", ["taint"], False), ("n2", ["taint", "cordon"], True), ("n3", ["cordon"], False)]


def test_a_release_leaves_the_nodes_it_is_told_to_keep_as_they_are():
    from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import release_kinds
    entries = [{"node": "a", "marks": ["taint", "cordon"]}, {"node": "skipped", "marks": ["taint", "cordon"]}]
    assert release_kinds(entries, keep=["skipped"]) == {"a": ["taint", "cordon"]}
    assert release_kinds(entries) == {"a": ["taint", "cordon"], "skipped": ["taint", "cordon"]}
