# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Change nodes safely: read, decide (``node_edits``), write back with the resourceVersion read, retry on 409.

A merge patch replaces the whole taint list, so writing it without a precondition could drop a taint another
controller added between our read and our write. The resourceVersion in the patch turns that race into a
409 Conflict; the node is then read again and the decision made again on what is really there.
"""

from __future__ import annotations

import time

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.event_writer import NodeEvents
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import ApiException, KubeApi, kube_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.core.at_once import map_at_once
from ansible_collections.nodeops.rollout.plugins.module_utils.core.backoff import backoff_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import node_edits
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import marks, node_events
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import ANNOTATION_CORDONED, LABEL_QUARANTINED

# Attempts of one node's read-modify-write before a run of conflicts is reported.
CONFLICT_ATTEMPTS = 8
# Nodes changed at once.
NODE_WORKERS = 8


class NodeNotFound(RolloutError):
    """A node named in the request does not exist (``while_writing``: it disappeared between our read and our write)."""

    def __init__(self, name, while_writing=False):
        super().__init__("node %s %s" % (name, "disappeared while being changed" if while_writing else "not found"))
        self.name = name
        self.while_writing = while_writing


class NodeConflict(RolloutError):
    """Every attempt of a read-modify-write met a concurrent writer."""


def update_node(api, name, decide, check_mode=False, attempts=CONFLICT_ATTEMPTS, sleep=time.sleep, node=None):
    """Read node ``name`` (or take ``node``, read just before), ``decide(node)`` (a :func:`node_edits.node_edit`
    result), write the patch with the resourceVersion read; on 409 Conflict start over from a fresh read.

    Returns ``{"name", "changed", "changes", "before", "after", "conflicts", "node"}`` (``node`` is the object as
    written, or as read when nothing changed or in check mode). Raises NodeNotFound, NodeConflict or ApiException.
    """
    conflicts = 0
    for attempt in range(attempts):
        if node is None or attempt:
            try:
                node = api.get_node(name)
            except ApiException as exc:
                if exc.status == 404:
                    raise NodeNotFound(name) from None
                raise
        decision = decide(node)
        result = {"name": name, "changed": decision["changed"], "changes": decision["changes"],
                  "before": decision["before"], "after": decision["after"], "conflicts": conflicts, "node": node}
        if not decision["changed"] or check_mode:
            return result
        patch = decision["patch"]
        patch.setdefault("metadata", {})["resourceVersion"] = (node.get("metadata") or {}).get("resourceVersion")
        try:
            result["node"] = api.patch_node(name, patch)
            return result
        except ApiException as exc:
            if exc.status == 404:
                raise NodeNotFound(name, while_writing=True) from None
            if exc.status != 409:
                raise
            conflicts += 1
            sleep(backoff_delay(attempt + 1, base=0.05, cap=1.0))
    raise NodeConflict("node %s: %d writes in a row met a concurrent change (409 Conflict); giving up" % (name, conflicts))


def read_nodes(api, names, skip_missing=False):
    """The nodes ``names``, in that order: one GET for one node, one LIST for more (a request per node costs more than
    one list of the cluster's nodes). Raises NodeNotFound for the first name that is not a node, or, with
    ``skip_missing``, gives None in its place."""
    if len(names) == 1:
        try:
            return [api.get_node(names[0])]
        except ApiException as exc:
            if exc.status == 404:
                if skip_missing:
                    return [None]
                raise NodeNotFound(names[0]) from None
            raise
    listed = {(node.get("metadata") or {}).get("name"): node for node in api.list_nodes()}
    for name in names:
        if name not in listed and not skip_missing:
            raise NodeNotFound(name)
    return [listed.get(name) for name in names]


def update_nodes(api, names, decide, check_mode=False, workers=NODE_WORKERS, skip_missing=False):
    """:func:`update_node` for each name, several at once; returns the results in the order of ``names``.

    Every node is read (:func:`read_nodes`) before any is written, so a missing node fails the whole request with
    nothing changed; with ``skip_missing`` the nodes that are not there are left out of the results instead.
    """
    pairs = [(name, node) for name, node in zip(names, read_nodes(api, names, skip_missing)) if node is not None]
    return map_at_once(lambda pair: update_node(api, pair[0], decide, check_mode, node=pair[1]), pairs, workers)


def _cordon(node, labels=None):
    """Cordon (with ``labels``); a node this call cordons is annotated as cordoned by the rollout, so that only our
    cordon is ever lifted."""
    if (node.get("spec") or {}).get("unschedulable"):
        return node_edits.node_edit(node, cordon=True, labels=labels)
    return node_edits.node_edit(node, cordon=True, labels=labels, annotations={ANNOTATION_CORDONED: "true"})


def cordon_nodes(api, names, check_mode=False, labels=None):
    """Mark nodes unschedulable, each with ``labels`` in the same write; returns ``{name: {"cordoned": True when this
    call cordoned it, "node": the node as written (or read)}}``."""
    results = update_nodes(api, names, lambda node: _cordon(node, labels), check_mode)
    return {result["name"]: {"cordoned": "cordoned" in result["changes"], "node": result["node"]} for result in results}


def quarantine_nodes(api, names):
    """Label nodes ``nodeops.rollout/quarantined`` (a drain skipped them: they stay cordoned, for the operator)."""
    return update_nodes(api, names, lambda node: node_edits.node_edit(node, labels={LABEL_QUARANTINED: "true"}), False)


def _node_result(result):
    after = result["after"]
    return {"changed": result["changed"], "changes": result["changes"], "unschedulable": after["unschedulable"],
            "taints": after["taints"], "labels": after["labels"], "annotations": after["annotations"],
            "conflicts": result["conflicts"]}


@reports_errors
def run_node_taint(module, make_client):
    """node_taint: validate, build the client (``make_client(module)``), change every node; exits the module."""
    params = module.params
    if params["release"] is not None:
        kinds = marks.release_kinds(params["release"], params["release_only"], params.get("release_except") or ())
        names = list(kinds)
        skip_missing = True

        def decide(node):
            return node_edits.node_edit(node, **marks.release_edit(node, kinds[node["metadata"]["name"]], params["taint_key"]))
    else:
        names = node_names(module)
        skip_missing = params["missing"] == "skip"
        taints = node_edits.normalize_taints(params["taints"], params["state"])
        labels = node_edits.normalize_map(params["labels"], "labels")
        annotations = node_edits.normalize_map(params["annotations"], "annotations", check_values=False)

        def decide(node):
            return node_edits.node_edit(node, taints=taints, state=params["state"], cordon=params["cordon"],
                                        labels=labels, annotations=annotations)

    if not names:
        module.exit_json(changed=False, nodes={}, missing=[], events={"written": 0, "not_written": 0, "error": None})
    api = KubeApi(make_client(module))
    try:
        with kube_errors("change", "nodes %s" % ", ".join(names), detailed=True):
            results = update_nodes(api, names, decide, module.check_mode, skip_missing=skip_missing)
    except NodeNotFound as exc:
        raise RolloutError("%s; %s" % (exc, "other nodes may have been changed" if exc.while_writing else "no node was changed")) from None

    changed = any(result["changed"] for result in results)
    events = node_event_writer(module, api)
    for result in results:
        if result["changed"]:
            for event in node_events.edit_events(result["name"], result["changes"], events.context):
                events.record(result["node"], event)
    found = set(result["name"] for result in results)
    output = {"changed": changed, "nodes": {result["name"]: _node_result(result) for result in results},
              "missing": [name for name in names if name not in found], "events": events.summary()}
    if module._diff:
        output["diff"] = [{"before_header": "node %s" % result["name"], "after_header": "node %s" % result["name"],
                           "before": result["before"], "after": result["after"]} for result in results]
    module.exit_json(**output)


def node_event_writer(module, api, target=None):
    """The best-effort writer of the module's Events on nodes, from its ``events`` and ``lock`` options (``target``:
    what the rollout rolls to, when the module knows it and the ``events`` option does not say)."""
    context = node_events.event_context(module.params.get("events"), module.params.get("lock"))
    if target and not context["target"]:
        context["target"] = target
    return NodeEvents(api, context, node_events.event_body, node_events.NAMESPACE, check_mode=module.check_mode)


def node_names(module):
    """The module's ``nodes`` option, stripped and without repeats; fails the module on an empty or blank name."""
    names = module.params["nodes"]
    cleaned = []
    for index, name in enumerate(names or []):
        if not isinstance(name, str) or not name.strip():
            module.fail_json(msg="nodes[%d]: %r is not allowed; use a node name" % (index, name))
        if name.strip() not in cleaned:
            cleaned.append(name.strip())
    if not cleaned and module.params.get("missing") != "skip":
        module.fail_json(msg="nodes: an empty list is not allowed; name at least one node (or set missing: skip)")
    return cleaned
