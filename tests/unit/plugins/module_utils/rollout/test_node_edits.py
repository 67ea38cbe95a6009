# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""node_edits: what a node must change, and that nothing the request does not name is ever dropped."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import node_edits
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_edits import NodeEditError

OUTDATED = {"key": "nodeops.rollout/outdated", "value": "true", "effect": "NoSchedule"}


def node(taints=None, unschedulable=None, labels=None, annotations=None):
    spec = {}
    if taints is not None:
        spec["taints"] = taints
    if unschedulable is not None:
        spec["unschedulable"] = unschedulable
    return {"metadata": {"name": "n1", "resourceVersion": "7", "labels": labels or {}, "annotations": annotations or {}},
            "spec": spec}


def present(*taints):
    return node_edits.normalize_taints(list(taints), "present")


def absent(*taints):
    return node_edits.normalize_taints(list(taints), "absent")


def test_adding_a_taint_keeps_every_foreign_taint_in_place():
    foreign = [{"key": "gpu", "value": "true", "effect": "NoSchedule"},
               {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "2024-05-01T00:00:00Z"}]
    edit = node_edits.node_edit(node(foreign), present(OUTDATED))
    assert edit["changed"]
    assert edit["patch"]["spec"]["taints"] == foreign + [OUTDATED]
    assert edit["after"]["taints"] == ["gpu=true:NoSchedule", "node.kubernetes.io/not-ready:NoExecute",
                                       "nodeops.rollout/outdated=true:NoSchedule"]
    assert edit["changes"] == ["taint nodeops.rollout/outdated=true:NoSchedule added"]


def test_a_taint_already_there_changes_nothing():
    edit = node_edits.node_edit(node([dict(OUTDATED)]), present(OUTDATED))
    assert edit == dict(edit, changed=False, patch=None, changes=[])


def test_same_key_and_effect_with_another_value_is_updated_not_duplicated():
    edit = node_edits.node_edit(node([{"key": "nodeops.rollout/outdated", "value": "old", "effect": "NoSchedule"}]),
                                present(OUTDATED))
    assert edit["patch"]["spec"]["taints"] == [OUTDATED]


def test_same_key_other_effect_is_a_different_taint():
    mine = {"key": "nodeops.rollout/outdated", "value": "true", "effect": "PreferNoSchedule"}
    edit = node_edits.node_edit(node([dict(OUTDATED)]), present(mine))
    assert edit["patch"]["spec"]["taints"] == [OUTDATED, mine]


def test_removing_by_key_removes_only_that_key():
    taints = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}, dict(OUTDATED),
              {"key": "nodeops.rollout/outdated", "value": "true", "effect": "PreferNoSchedule"}]
    edit = node_edits.node_edit(node(taints), absent({"key": "nodeops.rollout/outdated"}), state="absent")
    assert edit["patch"]["spec"]["taints"] == [taints[0]]


def test_removing_with_effect_or_value_never_removes_a_taint_that_does_not_match():
    taints = [dict(OUTDATED), {"key": "nodeops.rollout/outdated", "value": "x", "effect": "NoExecute"}]
    edit = node_edits.node_edit(node(taints), absent({"key": "nodeops.rollout/outdated", "effect": "NoExecute", "value": "y"}),
                                state="absent")
    assert not edit["changed"]
    edit = node_edits.node_edit(node(taints), absent({"key": "nodeops.rollout/outdated", "effect": "NoSchedule"}), state="absent")
    assert edit["patch"]["spec"]["taints"] == [taints[1]]


def test_removing_the_last_taint_deletes_the_field():
    edit = node_edits.node_edit(node([dict(OUTDATED)]), absent({"key": "nodeops.rollout/outdated"}), state="absent")
    assert edit["patch"] == {"spec": {"taints": None}}
    assert edit["after"]["taints"] == []


def test_removing_a_taint_that_is_not_there_is_no_change():
    edit = node_edits.node_edit(node([{"key": "gpu", "effect": "NoSchedule"}]), absent({"key": "nodeops.rollout/outdated"}),
                                state="absent")
    assert not edit["changed"] and edit["patch"] is None


def test_cordon_and_uncordon_are_idempotent_and_independent_of_state():
    assert node_edits.node_edit(node(), cordon=True)["patch"] == {"spec": {"unschedulable": True}}
    assert not node_edits.node_edit(node(unschedulable=True), cordon=True)["changed"]
    assert node_edits.node_edit(node(unschedulable=True), cordon=False, state="absent")["patch"] == {"spec": {"unschedulable": None}}
    assert not node_edits.node_edit(node(), cordon=False)["changed"]
    assert not node_edits.node_edit(node(unschedulable=True), cordon=None)["changed"]


def test_labels_set_and_null_removes_and_others_are_kept():
    labels = node_edits.normalize_map({"drained": "yes", "old": None}, "labels")
    edit = node_edits.node_edit(node(labels={"keep": "1", "old": "x"}), labels=labels)
    assert edit["patch"] == {"metadata": {"labels": {"drained": "yes", "old": None}}}
    assert edit["after"]["labels"] == {"keep": "1", "drained": "yes"}


def test_labels_absent_removes_keys_whatever_the_value():
    labels = node_edits.normalize_map({"old": "ignored"}, "labels")
    edit = node_edits.node_edit(node(labels={"keep": "1", "old": "x"}), labels=labels, state="absent")
    assert edit["patch"] == {"metadata": {"labels": {"old": None}}}


def test_annotations_accept_any_text_value():
    annotations = node_edits.normalize_map({"example.com/note": "drained by the rollout at 12:00"}, "annotations", check_values=False)
    edit = node_edits.node_edit(node(), annotations=annotations)
    assert edit["after"]["annotations"] == {"example.com/note": "drained by the rollout at 12:00"}
    assert not node_edits.node_edit(node(annotations={"example.com/note": "drained by the rollout at 12:00"}),
                                    annotations=annotations)["changed"]


def test_yaml_scalars_become_strings():
    assert node_edits.normalize_map({"a": True, "b": 3}, "labels") == {"a": "true", "b": "3"}
    assert present({"key": "k", "value": False, "effect": "NoSchedule"})[0]["value"] == "false"


@pytest.mark.parametrize("taints, state, message", [
    ([{"key": "k", "effect": "NoWhere"}], "present", "taints[0].effect: 'NoWhere' is not allowed; use one of NoSchedule, PreferNoSchedule, NoExecute"),
    ([{"key": "k"}], "present", "taints[0].effect: required with state=present"),
    ([{"key": "bad key", "effect": "NoSchedule"}], "present", "taints[0].key: 'bad key' is not allowed"),
    ([{"key": "k", "value": "has space", "effect": "NoSchedule"}], "present", "taints[0].value: 'has space' is not allowed"),
    ([{"key": "k", "effect": "NoSchedule"}, {"key": "k", "value": "v", "effect": "NoSchedule"}], "present", "listed twice"),
    ([{"key": "k", "colour": "red"}], "absent", "unknown field colour"),
    ("k=v:NoSchedule", "present", "use a list of {key, value, effect}"),
    ([], "maybe", "state: 'maybe' is not allowed; use one of present, absent"),
])
def test_bad_taints_get_one_message_naming_the_field(taints, state, message):
    with pytest.raises(NodeEditError) as info:
        node_edits.normalize_taints(taints, state)
    assert message in str(info.value)


def test_absent_taints_need_no_effect():
    assert absent({"key": "k"}) == [{"key": "k", "value": None, "effect": None}]


@pytest.mark.parametrize("key, ok", [
    ("app", True), ("example.com/app", True), ("kubernetes.io/hostname", True), ("a" * 63, True),
    ("a" * 64, False), ("/app", False), ("Example.com/app", False), ("-app", False), ("", False), ("a/b/c", False),
])
def test_qualified_names(key, ok):
    assert node_edits.valid_qualified_name(key) is ok


def test_bad_label_value_names_the_key():
    with pytest.raises(NodeEditError) as info:
        node_edits.normalize_map({"tier": "front end"}, "labels")
    assert str(info.value).startswith("labels.tier: 'front end' is not allowed")


def test_before_and_after_show_the_whole_node_for_diff():
    edit = node_edits.node_edit(node([{"key": "gpu", "effect": "NoSchedule"}], labels={"a": "1"}), present(OUTDATED), cordon=True)
    assert edit["before"] == {"unschedulable": False, "taints": ["gpu:NoSchedule"], "labels": {"a": "1"}, "annotations": {}}
    assert edit["after"] == {"unschedulable": True, "taints": ["gpu:NoSchedule", "nodeops.rollout/outdated=true:NoSchedule"],
                             "labels": {"a": "1"}, "annotations": {}}
