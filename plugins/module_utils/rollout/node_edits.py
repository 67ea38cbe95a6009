# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a node needs to change so that it carries the taints, labels, annotations and cordon asked for.

Pure: plain dicts in the API's JSON form in, plain dicts out; no kubernetes import. The I/O half
(``nodes.py``) reads the node, calls :func:`node_edit`, and writes the returned merge patch with the
resourceVersion it read, so a concurrent writer makes the write fail with 409 instead of being overwritten.

Ownership: only the taints, labels and annotations named in the request are touched. Every other taint
(another controller's, the cloud provider's, the node lifecycle controller's) is kept as it is, in its place.
"""

from __future__ import annotations

import re

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import TAINT_EFFECTS

STATES = ("present", "absent")

_NAME_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME_HELP = "a name of at most 63 characters (letters, digits, '-', '_', '.'; starting and ending alphanumeric), " \
                       "optionally prefixed by a DNS subdomain and '/' (example.com/name)"
_LABEL_VALUE_HELP = "at most 63 characters (letters, digits, '-', '_', '.'; starting and ending alphanumeric), or empty"


class NodeEditError(RolloutError, ValueError):
    """Bad input; the message names the field and what is allowed."""


def valid_qualified_name(key):
    """Whether ``key`` is a valid label, taint or annotation key (``[prefix/]name``)."""
    if not isinstance(key, str) or not key:
        return False
    prefix, name = key.rpartition("/")[0::2]
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN_RE.match(prefix)):
        return False
    return len(name) <= 63 and bool(_NAME_RE.match(name))


def valid_label_value(value):
    """Whether ``value`` is a valid label or taint value (empty is allowed)."""
    if not isinstance(value, str):
        return False
    return value == "" or (len(value) <= 63 and bool(_NAME_RE.match(value)))


def _scalar_text(value):
    """Label and taint values arrive from YAML as strings, numbers or booleans; the API wants strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return value


def normalize_taints(taints, state, field="taints"):
    """Validate the requested taints and return them as ``[{"key", "value", "effect"}]``.

    ``key`` is required. With ``state=present`` ``effect`` is required (one of NoSchedule, PreferNoSchedule,
    NoExecute) and ``value`` is optional (empty). With ``state=absent`` ``effect`` and ``value`` are optional and
    narrow what is removed: a taint is removed only when its key, and the effect and value given, match.
    """
    if state not in STATES:
        raise NodeEditError("state: %r is not allowed; use one of %s" % (state, ", ".join(STATES)))
    if taints is None:
        return []
    if not isinstance(taints, (list, tuple)):
        raise NodeEditError("%s: %r is not allowed; use a list of {key, value, effect}" % (field, taints))
    result = []
    seen = set()
    for index, taint in enumerate(taints):
        where = "%s[%d]" % (field, index)
        if not isinstance(taint, dict):
            raise NodeEditError("%s: %r is not allowed; use a dict with key, value and effect" % (where, taint))
        unknown = sorted(set(taint) - {"key", "value", "effect"})
        if unknown:
            raise NodeEditError("%s: unknown field %s; allowed fields are key, value, effect" % (where, ", ".join(unknown)))
        key = taint.get("key")
        if not valid_qualified_name(key):
            raise NodeEditError("%s.key: %r is not allowed; use %s" % (where, key, _QUALIFIED_NAME_HELP))
        value = _scalar_text(taint.get("value"))
        if value is not None and not valid_label_value(value):
            raise NodeEditError("%s.value: %r is not allowed; use %s" % (where, value, _LABEL_VALUE_HELP))
        effect = taint.get("effect")
        if effect is None and state == "present":
            raise NodeEditError("%s.effect: required with state=present; use one of %s" % (where, ", ".join(TAINT_EFFECTS)))
        if effect is not None and effect not in TAINT_EFFECTS:
            raise NodeEditError("%s.effect: %r is not allowed; use one of %s" % (where, effect, ", ".join(TAINT_EFFECTS)))
        if state == "present":
            identity = (key, effect)
            if identity in seen:
                raise NodeEditError("%s: taint %s:%s is listed twice; a node holds one taint per key and effect" % (where, key, effect))
            seen.add(identity)
            value = value or ""
        result.append({"key": key, "value": value, "effect": effect})
    return result


def normalize_map(values, field, check_values=True):
    """Validate requested labels or annotations: ``{key: value}``, a null value meaning "remove the key"."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise NodeEditError("%s: %r is not allowed; use a dict of key: value" % (field, values))
    result = {}
    for key, value in values.items():
        if not valid_qualified_name(key):
            raise NodeEditError("%s: key %r is not allowed; use %s" % (field, key, _QUALIFIED_NAME_HELP))
        value = _scalar_text(value)
        if value is not None and not isinstance(value, str):
            raise NodeEditError("%s.%s: %r is not allowed; use a string (or null to remove the key)" % (field, key, value))
        if check_values and value is not None and not valid_label_value(value):
            raise NodeEditError("%s.%s: %r is not allowed; use %s" % (field, key, value, _LABEL_VALUE_HELP))
        result[key] = value
    return result


def taint_text(taint):
    """``key=value:Effect`` (``key:Effect`` when the value is empty), as kubectl prints taints."""
    value = taint.get("value") or ""
    head = "%s=%s" % (taint.get("key"), value) if value else str(taint.get("key"))
    return "%s:%s" % (head, taint.get("effect")) if taint.get("effect") else head


def _matches_removal(existing, wanted):
    if existing.get("key") != wanted["key"]:
        return False
    if wanted.get("effect") is not None and existing.get("effect") != wanted["effect"]:
        return False
    if wanted.get("value") is not None and (existing.get("value") or "") != wanted["value"]:
        return False
    return True


def edit_taints(current, taints, state):
    """The node's new taint list: ``taints`` added (or their value updated) or removed; every other taint kept in place."""
    result = [dict(taint) for taint in (current or [])]
    if state == "present":
        for wanted in taints:
            for taint in result:
                if taint.get("key") == wanted["key"] and taint.get("effect") == wanted["effect"]:
                    if (taint.get("value") or "") != wanted["value"]:
                        taint.pop("timeAdded", None)
                        if wanted["value"]:
                            taint["value"] = wanted["value"]
                        else:
                            taint.pop("value", None)
                    break
            else:
                added = {"key": wanted["key"], "effect": wanted["effect"]}
                if wanted["value"]:
                    added["value"] = wanted["value"]
                result.append(added)
        return result
    return [taint for taint in result if not any(_matches_removal(taint, wanted) for wanted in taints)]


def edit_map(current, wanted, state):
    """New labels/annotations: ``wanted`` set (null removes) with state=present; its keys removed with state=absent."""
    result = dict(current or {})
    for key, value in wanted.items():
        if state == "absent" or value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def node_view(node):
    """What node_taint shows of a node: ``{"unschedulable", "taints": [text], "labels", "annotations"}``."""
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    return {
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": [taint_text(taint) for taint in spec.get("taints") or []],
        "labels": dict(metadata.get("labels") or {}),
        "annotations": dict(metadata.get("annotations") or {}),
    }


def node_edit(node, taints=None, state="present", cordon=None, labels=None, annotations=None):
    """Decide what to change on one node.

    ``taints``, ``labels`` and ``annotations`` must already be normalized (:func:`normalize_taints`,
    :func:`normalize_map`). ``cordon`` is True (mark unschedulable), False (mark schedulable) or None
    (leave alone); it does not depend on ``state``.

    Returns ``{"changed", "patch", "before", "after", "changes"}``: ``patch`` is a JSON merge patch body
    (without the resourceVersion precondition, which the caller adds) or None when nothing changes; the taint
    list is sent whole, as a merge patch replaces lists, which is why the caller must send the resourceVersion
    it read; ``changes`` lists each change as text.
    """
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    patch = {}
    changes = []

    current_taints = spec.get("taints") or []
    new_taints = edit_taints(current_taints, taints or [], state)
    if new_taints != current_taints:
        patch.setdefault("spec", {})["taints"] = new_taints or None
        before = set(taint_text(taint) for taint in current_taints)
        after = set(taint_text(taint) for taint in new_taints)
        changes.extend("taint %s added" % text for text in sorted(after - before))
        changes.extend("taint %s removed" % text for text in sorted(before - after))

    if cordon is not None and bool(spec.get("unschedulable")) != bool(cordon):
        patch.setdefault("spec", {})["unschedulable"] = True if cordon else None
        changes.append("cordoned" if cordon else "uncordoned")

    for field, wanted in (("labels", labels), ("annotations", annotations)):
        current = metadata.get(field) or {}
        new = edit_map(current, wanted or {}, state)
        if new != current:
            delta = {}
            for key in sorted(set(current) | set(new)):
                if current.get(key) != new.get(key) or (key in current) != (key in new):
                    delta[key] = new.get(key)
                    singular = field[:-1]
                    if key in new:
                        changes.append("%s %s=%s set" % (singular, key, new[key]))
                    else:
                        changes.append("%s %s removed" % (singular, key))
            patch.setdefault("metadata", {})[field] = delta

    after_node = {"metadata": dict(metadata), "spec": dict(spec)}
    if "spec" in patch:
        if "taints" in patch["spec"]:
            after_node["spec"]["taints"] = new_taints
        if "unschedulable" in patch["spec"]:
            after_node["spec"]["unschedulable"] = bool(cordon)
    for field in ("labels", "annotations"):
        if field in patch.get("metadata", {}):
            after_node["metadata"][field] = edit_map(metadata.get(field) or {}, (labels if field == "labels" else annotations) or {}, state)
    return {"changed": bool(patch), "patch": patch or None, "before": node_view(node), "after": node_view(after_node),
            "changes": changes}
