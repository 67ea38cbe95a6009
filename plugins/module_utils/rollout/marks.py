# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a rollout leaves on nodes, and the end check that refuses to call a group replaced while any is left.

Pure: nodes in ``node_health.node_summary``'s shape (``INSTANCE_NODE_FIELDS``), instances in ``clients.aws.instance_record``'s shape with their node joined.

A rollout marks nodes in four ways: its taint (``nodeops.rollout/outdated`` by default) on outdated nodes, and
``nodeops.rollout/queued`` (``PreferNoSchedule``) on the outdated nodes of the groups a run rolls later; a cordon,
which ``node_drain`` records with the annotation ``nodeops.rollout/cordoned`` when it is the one that cordoned the
node (a cordon somebody else made is not ours to lift); the label
``node.kubernetes.io/exclude-from-external-load-balancers`` on the nodes it drained; and, on its new nodes while it
runs, ``cluster-autoscaler.kubernetes.io/scale-down-disabled`` with ``nodeops.rollout/scale-down-disabled`` (which
says the first is ours). On an outdated node the marks are the rollout at work. On an up-to-date node the first three
are left over (a target changed after a failed batch, an interrupted run): the node would take no pod, or serve no
load balancer, so they are removed; the last is removed when the rollout ends or stops, so that the cluster-autoscaler
may scale the group in again.
"""

from __future__ import annotations

DEFAULT_TAINT_KEY = "nodeops.rollout/outdated"
# Put by the role, at the start of a run over several groups, on the outdated nodes of every group but the first, so
# that the pods the first groups evict do not land on nodes that a later group of the same run drains again.
QUEUED_TAINT_KEY = "nodeops.rollout/queued"
ANNOTATION_CORDONED = "nodeops.rollout/cordoned"
# Written by node_drain when it has drained a node: the time (UTC, ISO 8601) the post-drain delay counts from.
ANNOTATION_DRAINED_AT = "nodeops.rollout/drained-at"
LABEL_EXCLUDE_LB = "node.kubernetes.io/exclude-from-external-load-balancers"
# Put by node_drain on a node whose drain it skipped (timeout_action skip), as AKS labels the nodes it cannot drain: the
# node stays cordoned for the operator, and is found with ``kubectl get nodes -l nodeops.rollout/quarantined``.
LABEL_QUARANTINED = "nodeops.rollout/quarantined"
# The cluster-autoscaler never scales in a node annotated so: the rollout puts it on the group's new nodes while it
# runs, so that its surge is not scaled in under it, and records that it did so with the second annotation (one that
# somebody else set is not ours to lift).
ANNOTATION_SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
ANNOTATION_SCALE_DOWN_OURS = "nodeops.rollout/scale-down-disabled"


def node_marks(node, taint_key=DEFAULT_TAINT_KEY):
    """The rollout's marks on one node: a list of ``taint``, ``cordon``, ``label``, ``autoscaler`` (in that order)."""
    marks = []
    if any(taint.get("key") in (taint_key, QUEUED_TAINT_KEY) for taint in node.get("taints") or []):
        marks.append("taint")
    ours = ANNOTATION_CORDONED in (node.get("annotations") or {})
    if ours:
        marks.append("cordon")
        if LABEL_EXCLUDE_LB in (node.get("labels") or {}) or LABEL_QUARANTINED in (node.get("labels") or {}):
            marks.append("label")
    if ANNOTATION_SCALE_DOWN_OURS in (node.get("annotations") or {}):
        marks.append("autoscaler")
    return marks


def autoscaler_unprotected(instances, up_to_date_ids):
    """The nodes of the up-to-date instances that the cluster-autoscaler may still scale in (no
    ``cluster-autoscaler.kubernetes.io/scale-down-disabled`` annotation): the rollout annotates them while it runs."""
    wanted = set(up_to_date_ids)
    return [instance["node"]["name"] for instance in instances
            if instance["instance_id"] in wanted and isinstance(instance.get("node"), dict)
            and ANNOTATION_SCALE_DOWN_DISABLED not in (instance["node"].get("annotations") or {})]


def marked_up_to_date(instances, up_to_date_ids, taint_key=DEFAULT_TAINT_KEY):
    """The up-to-date instances whose node carries a mark of the rollout: ``[{"instance_id", "node", "marks"}]``."""
    wanted = set(up_to_date_ids)
    found = []
    for instance in instances:
        node = instance.get("node")
        if instance["instance_id"] not in wanted or not isinstance(node, dict):
            continue
        marks = node_marks(node, taint_key)
        if marks:
            found.append({"instance_id": instance["instance_id"], "node": node["name"], "marks": marks})
    return found


def marked_outdated(instances, outdated_ids, taint_key=DEFAULT_TAINT_KEY):
    """The outdated instances whose node carries a mark of the rollout: ``[{"instance_id", "node", "marks", "drained"}]``
    (``drained``: node_drain finished it, annotation ``nodeops.rollout/drained-at``). A rollout that stops cleanly
    releases those not drained, so that nothing stays cordoned or tainted that does not wait for its termination."""
    found = []
    for entry in marked_up_to_date(instances, outdated_ids, taint_key):
        node = next(instance["node"] for instance in instances if instance["instance_id"] == entry["instance_id"])
        entry["drained"] = "cordon" in entry["marks"] and bool((node.get("annotations") or {}).get(ANNOTATION_DRAINED_AT))
        found.append(entry)
    return found


def leftovers(outdated, marked, surge_owed, detached, warm=()):
    """Why a group is not replaced yet, as sentences; empty when the rollout may end.

    ``outdated``: plan entries still outdated; ``marked``: :func:`marked_up_to_date`; ``surge_owed``: instances of
    surge not paid back; ``detached``: instances detached for surge that still run; ``warm``: instances of the group's
    warm pool built from another version (the group would launch them as they are).
    """
    reasons = []
    if outdated:
        reasons.append("%d outdated instance(s) left: %s" % (len(outdated), ", ".join(
            "%s (%s)" % (entry["instance_id"], entry.get("node") or "no node") for entry in outdated)))
    if marked:
        reasons.append("%d up-to-date node(s) still carry the rollout's marks: %s" % (len(marked), ", ".join(
            "%s (%s)" % (entry["node"], ", ".join(entry["marks"])) for entry in marked)))
    if surge_owed:
        reasons.append("%d instance(s) of surge not paid back" % surge_owed)
    if detached:
        reasons.append("instances detached for surge still run: %s" % ", ".join(detached))
    if warm:
        reasons.append("%d warm pool instance(s) built from another version: %s" % (len(warm), ", ".join(warm)))
    return reasons


# What a release may take off a node (node_taint's release_only): the rollout's taints (``taint``: its own key and the
# queued one), its cordon with what goes with it (``cordon``: the cordon, the annotations ``nodeops.rollout/cordoned``
# and ``nodeops.rollout/drained-at``, the load-balancer exclusion and quarantine labels), and the cluster-autoscaler annotations it put
# on (``autoscaler``).
RELEASE_KINDS = ("taint", "cordon", "autoscaler")


def release_kinds(entries, only=RELEASE_KINDS, keep=()):
    """``{node: [kinds]}`` to take off, from node_group_info's ``marked``/``marked_outdated`` entries (``{"node",
    "marks"}``), keeping only the kinds in ``only``; a ``label`` mark goes with the cordon; nodes left with nothing to
    take off are not listed, nor those named in ``keep`` (left as they are: a drain the run skipped stays cordoned for
    the operator to look at). The order of ``entries`` is kept."""
    found = {}
    keep = set(keep or ())
    for entry in entries:
        if entry["node"] in keep:
            continue
        marks = set(entry.get("marks") or ())
        if "label" in marks:
            marks.add("cordon")
        kinds = [kind for kind in RELEASE_KINDS if kind in marks and kind in only]
        if kinds and entry["node"] not in found:
            found[entry["node"]] = kinds
    return found


def release_edit(node, kinds, taint_key=DEFAULT_TAINT_KEY):
    """The arguments of ``node_edits.node_edit`` (state absent) that take ``kinds`` of the rollout's marks off ``node``
    (the API object, as read just before the write), deciding on what it carries now: a cordon is lifted only while
    ``nodeops.rollout/cordoned`` says it is ours, the autoscaler annotation only while ``nodeops.rollout/scale-down-disabled``
    says so."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    edit = {"state": "absent", "taints": [], "cordon": None, "labels": {}, "annotations": {}}
    if "taint" in kinds:
        edit["taints"] = [{"key": key, "value": None, "effect": None} for key in (taint_key, QUEUED_TAINT_KEY)]
    if "cordon" in kinds and ANNOTATION_CORDONED in annotations:
        edit["cordon"] = False
        edit["annotations"].update({ANNOTATION_CORDONED: None, ANNOTATION_DRAINED_AT: None})
        edit["labels"][LABEL_EXCLUDE_LB] = None
        edit["labels"][LABEL_QUARANTINED] = None
    if "autoscaler" in kinds and ANNOTATION_SCALE_DOWN_OURS in annotations:
        edit["annotations"].update({ANNOTATION_SCALE_DOWN_DISABLED: None, ANNOTATION_SCALE_DOWN_OURS: None})
    return edit
