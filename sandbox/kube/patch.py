"""The three PATCH formats kube-apiserver accepts, applied to plain JSON-shaped dicts.

- ``application/strategic-merge-patch+json``: maps merge, ``null`` deletes a key, and lists merge by the
  patch merge key the Kubernetes types declare (``containers`` by ``name``, ``conditions`` by ``type``,
  ...). Lists without a declared strategy (``spec.taints``, ``spec.tolerations``, ``status.containerStatuses``)
  are replaced whole, as the real server does. Directives: ``$patch: replace|delete|merge`` on maps and list
  items, ``$retainKeys``, ``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>``.
- ``application/merge-patch+json``: RFC 7386.
- ``application/json-patch+json``: RFC 6902 (add, remove, replace, move, copy, test).

Errors are :class:`ApiError` with the codes the real server uses: an undecodable patch is 400 BadRequest,
a JSON patch operation that cannot be applied (including a failed ``test``) is 422 Invalid.
"""

import copy

from .errors import ApiError

STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE, STRATEGIC)

# ---- schema: where Kubernetes declares patchStrategy=merge -------------------------------------------
# A schema is a dict field -> spec, where spec is one of
#   ("map", schema)          a nested struct (unknown struct fields merge recursively with an empty schema)
#   ("list", key, schema)    a list merged by ``key`` whose items follow ``schema``
#   ("set",)                 a list of primitives merged as a set (metadata.finalizers)
#   ("replace",)             a struct the patch replaces whole (patchStrategy=replace: a PDB's spec.selector)
# Lists not declared here are atomic: a patch replaces them.


def _list(key, schema=None):
    return ("list", key, schema or {})


def _map(schema):
    return ("map", schema)


_META = {"ownerReferences": _list("uid"), "finalizers": ("set",)}
_CONTAINER = {"ports": _list("containerPort"), "env": _list("name"), "volumeMounts": _list("mountPath"),
              "volumeDevices": _list("devicePath")}
_POD_SPEC = {"containers": _list("name", _CONTAINER), "initContainers": _list("name", _CONTAINER),
             "ephemeralContainers": _list("name", _CONTAINER), "volumes": _list("name"),
             "imagePullSecrets": _list("name"), "hostAliases": _list("ip"),
             "topologySpreadConstraints": _list("topologyKey"), "resourceClaims": _list("name"),
             "schedulingGates": _list("name")}
_CONDITIONS = {"conditions": _list("type")}
_TEMPLATE = {"metadata": _map(_META), "spec": _map(_POD_SPEC)}
_WORKLOAD = {"metadata": _map(_META), "spec": _map({"template": _map(_TEMPLATE)}), "status": _map(_CONDITIONS)}

SCHEMAS = {
    "pods": {"metadata": _map(_META), "spec": _map(_POD_SPEC),
             "status": _map({"conditions": _list("type"), "podIPs": _list("ip"), "hostIPs": _list("ip")})},
    "nodes": {"metadata": _map(_META), "spec": _map({"podCIDRs": ("set",)}),
              "status": _map({"conditions": _list("type"), "addresses": _list("type")})},
    "namespaces": {"metadata": _map(_META), "status": _map(_CONDITIONS)},
    "events": {"metadata": _map(_META)},
    "deployments": _WORKLOAD,
    "replicasets": _WORKLOAD,
    "daemonsets": _WORKLOAD,
    "poddisruptionbudgets": {"metadata": _map(_META), "spec": _map({"selector": ("replace",)}), "status": _map(_CONDITIONS)},
    "scale": {"metadata": _map(_META)},
}


def _bad(message):
    return ApiError(400, "BadRequest", message)


def _unprocessable():
    # what kube-apiserver answers when a JSON patch cannot be applied (NewGenericServerResponse(422, ...))
    return ApiError(422, "Invalid", "the server rejected our request due to an error in our request", {})


# ---- strategic merge patch ---------------------------------------------------------------------------
_DIRECTIVE = "$patch"
_RETAIN = "$retainKeys"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
_ORDER = "$setElementOrder/"


def strategic_merge(original, patch, schema):
    """Return ``original`` (not modified) with the strategic merge ``patch`` applied."""
    if not isinstance(patch, dict):
        raise _bad("strategic merge patch must be a JSON object, got %s" % type(patch).__name__)
    out = _merge_map(original if isinstance(original, dict) else {}, patch, schema or {})
    if out is None:
        raise _bad("a strategic merge patch may not delete the whole object")
    return out


def _strip(value, schema):
    """A patch value for a key absent from the original: apply it against an empty value."""
    if isinstance(value, dict):
        return _merge_map({}, value, schema if isinstance(schema, dict) else {})
    return copy.deepcopy(value)


def _merge_map(original, patch, schema):
    directive = patch.get(_DIRECTIVE)
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: _strip(v, _sub_schema(schema, k)) for k, v in patch.items() if not k.startswith("$")}
    if directive not in (None, "merge"):
        raise _bad("Unknown patch type: %s in map: %r" % (directive, patch))
    out = dict(original)
    orders = {}
    for key, value in patch.items():
        if key == _DIRECTIVE:
            continue
        if key == _RETAIN:
            continue
        if key.startswith(_DELETE_PRIMITIVE):
            field = key[len(_DELETE_PRIMITIVE):]
            if not isinstance(value, list):
                raise _bad("%s must be a list" % key)
            if isinstance(out.get(field), list):
                out[field] = [v for v in out[field] if v not in value]
            continue
        if key.startswith(_ORDER):
            orders[key[len(_ORDER):]] = value
            continue
        if key.startswith("$"):
            raise _bad("unknown strategic merge patch directive %s" % key)
        spec = schema.get(key)
        if value is None:
            out.pop(key, None)
            continue
        current = out.get(key)
        if isinstance(value, dict) and spec and spec[0] == "replace" and value.get(_DIRECTIVE) != "delete":
            out[key] = _strip(value, {})
        elif isinstance(value, dict):
            sub = spec[1] if spec and spec[0] == "map" else {}
            merged = _merge_map(current if isinstance(current, dict) else {}, value, sub)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        elif isinstance(value, list) and spec and spec[0] == "list":
            out[key] = _merge_keyed_list(current if isinstance(current, list) else [], value, spec[1], spec[2], key)
        elif isinstance(value, list) and spec and spec[0] == "set":
            out[key] = _merge_set(current if isinstance(current, list) else [], value)
        else:
            out[key] = _strip(value, {})
    for field, order in orders.items():
        if isinstance(out.get(field), list) and isinstance(order, list):
            out[field] = _apply_order(out[field], order, _merge_key_of(schema.get(field)))
    if _RETAIN in patch:
        keep = patch[_RETAIN]
        if not isinstance(keep, list):
            raise _bad("$retainKeys must be a list")
        out = {k: v for k, v in out.items() if k in keep}
    return out


def _sub_schema(schema, key):
    spec = (schema or {}).get(key)
    if spec and spec[0] == "map":
        return spec[1]
    return {}


def _merge_key_of(spec):
    return spec[1] if spec and spec[0] == "list" else None


def _merge_set(current, patch_items):
    out = list(current)
    for item in patch_items:
        if isinstance(item, dict) and item.get(_DIRECTIVE) == "replace":
            return [i for i in patch_items if not (isinstance(i, dict) and _DIRECTIVE in i)]
        if item not in out:
            out.append(item)
    return out


def _merge_keyed_list(current, patch_items, key, item_schema, field):
    if any(isinstance(i, dict) and i.get(_DIRECTIVE) == "replace" for i in patch_items):
        return [_strip(i, item_schema) for i in patch_items if not (isinstance(i, dict) and _DIRECTIVE in i)]
    out = [copy.deepcopy(i) for i in current]
    for item in patch_items:
        if not isinstance(item, dict):
            raise _bad("strategic merge patch: %s items must be objects with the merge key %r" % (field, key))
        if key not in item:
            raise _bad("map: %r does not contain declared merge key: %s" % (item, key))
        idx = next((n for n, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == item[key]), None)
        directive = item.get(_DIRECTIVE)
        if directive == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            merged = _merge_map({}, item, item_schema)
            if merged is not None:
                out.append(merged)
        else:
            merged = _merge_map(out[idx], item, item_schema)
            if merged is None:
                del out[idx]
            else:
                out[idx] = merged
    return out


def _apply_order(items, order, key):
    def ident(item):
        return item.get(key) if (key and isinstance(item, dict)) else item

    wanted = [o.get(key) if (key and isinstance(o, dict)) else o for o in order]
    ranked = [i for w in wanted for i in items if ident(i) == w]
    rest = [i for i in items if ident(i) not in wanted]
    return ranked + rest


# ---- JSON merge patch (RFC 7386) ---------------------------------------------------------------------
def merge_patch(original, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


# ---- JSON patch (RFC 6902) ---------------------------------------------------------------------------
def _pointer(path):
    if path == "":
        return []
    if not isinstance(path, str) or not path.startswith("/"):
        raise _unprocessable()
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container, token, allow_end=False):
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise _unprocessable()
    idx = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if idx > limit:
        raise _unprocessable()
    return idx


def _parent(doc, tokens):
    cur = doc
    for token in tokens[:-1]:
        if isinstance(cur, dict):
            if token not in cur:
                raise _unprocessable()
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_index(cur, token)]
        else:
            raise _unprocessable()
    return cur


def _get(doc, tokens):
    if not tokens:
        return doc
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _unprocessable()
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last)]
    raise _unprocessable()


def _add(doc, tokens, value):
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise _unprocessable()
    return doc


def _remove(doc, tokens):
    if not tokens:
        raise _unprocessable()
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _unprocessable()
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last))
    raise _unprocessable()


def json_patch(original, operations):
    """Apply RFC 6902 ``operations`` to a copy of ``original``."""
    if not isinstance(operations, list):
        raise _bad("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(original)
    for op in operations:
        if not isinstance(op, dict):
            raise _bad("json: cannot unmarshal %s into Go value of type jsonpatch.Operation" % type(op).__name__)
        kind = op.get("op")
        tokens = _pointer(op.get("path"))
        if kind == "add":
            if "value" not in op:
                raise _unprocessable()
            doc = _add(doc, tokens, copy.deepcopy(op["value"]))
        elif kind == "remove":
            _remove(doc, tokens)
        elif kind == "replace":
            if "value" not in op:
                raise _unprocessable()
            _get(doc, tokens)  # must exist
            if not tokens:
                doc = copy.deepcopy(op["value"])
            else:
                _remove(doc, tokens)
                doc = _add(doc, tokens, copy.deepcopy(op["value"]))
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from"))
            value = _get(doc, source)
            if kind == "move":
                if tokens[:len(source)] == source and len(tokens) > len(source):
                    raise _unprocessable()
                _remove(doc, source)
            doc = _add(doc, tokens, copy.deepcopy(value))
        elif kind == "test":
            try:
                current = _get(doc, tokens)
            except ApiError:
                current = None
                if op.get("value") is not None:
                    raise
            if current != op.get("value"):
                raise _unprocessable()
        else:
            raise _unprocessable()
    return doc


def apply(content_type, original, patch, plural):
    """Dispatch on the request's Content-Type; returns the patched object (``original`` is not modified)."""
    if content_type == STRATEGIC:
        return strategic_merge(original, patch, SCHEMAS.get(plural, {}))
    if content_type == MERGE:
        if not isinstance(patch, dict):
            raise _bad("merge patch must be a JSON object")
        return merge_patch(original, patch)
    if content_type == JSON_PATCH:
        return json_patch(original, patch)
    raise ApiError(415, "UnsupportedMediaType",
                   "the body of the request was in an unknown format - accepted media types include: "
                   + ", ".join(PATCH_TYPES))
