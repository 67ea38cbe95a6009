"""Label and field selectors, parsed and matched as kube-apiserver does.

Two forms exist in the API:
- the string form of query parameters (``labelSelector=app=web,tier in (a,b),!legacy`` and
  ``fieldSelector=spec.nodeName=n1,status.phase!=Succeeded``);
- the structured ``LabelSelector`` of PDBs, Deployments, ReplicaSets and DaemonSets
  (``matchLabels`` + ``matchExpressions``).
"""

import re

from .errors import ApiError

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_KEY_RE = re.compile("^" + _KEY + "$")
_VALUE_RE = re.compile("^" + _VALUE + "$")

# Field labels kube-apiserver supports per resource (besides metadata.name / metadata.namespace).
FIELD_LABELS = {
    "pods": {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
             "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"},
    "nodes": {"spec.unschedulable"},
    "events": {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
               "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
               "reason", "reportingComponent", "source", "type"},
    "namespaces": {"status.phase"},
    "replicasets": {"status.replicas"},
}


def _bad(message):
    return ApiError(400, "BadRequest", message)


def _split_top(text):
    """Split on commas that are not inside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


_SET_RE = re.compile(r"^([^\s(]+)\s+(in|notin)\s*\((.*)\)$")
_EQ_RE = re.compile(r"^([^!=<>\s]+)\s*(==|=|!=)\s*(\S*)$")


class LabelSelector:
    """A parsed selector; ``matches(labels)`` decides one object. An empty selector matches everything."""

    def __init__(self, requirements):
        self.requirements = requirements  # list of (key, op, values)

    @classmethod
    def parse(cls, text):
        reqs = []
        for part in _split_top(text or ""):
            m = _SET_RE.match(part)
            if m:
                key, op, vals = m.group(1), m.group(2), [v.strip() for v in m.group(3).split(",") if v.strip()]
                cls._check_key(key, part)
                for v in vals:
                    cls._check_value(v, part)
                reqs.append((key, "In" if op == "in" else "NotIn", vals))
                continue
            m = _EQ_RE.match(part)
            if m:
                key, op, val = m.group(1), m.group(2), m.group(3)
                cls._check_key(key, part)
                cls._check_value(val, part)
                reqs.append((key, "In" if op in ("=", "==") else "NotIn", [val]))
                continue
            if part.startswith("!"):
                cls._check_key(part[1:], part)
                reqs.append((part[1:], "DoesNotExist", []))
                continue
            cls._check_key(part, part)
            reqs.append((part, "Exists", []))
        return cls(reqs)

    @classmethod
    def from_object(cls, selector):
        """From a structured LabelSelector dict. ``None`` selects nothing; ``{}`` selects everything."""
        if selector is None:
            return NOTHING
        reqs = [(k, "In", [v]) for k, v in sorted((selector.get("matchLabels") or {}).items())]
        for expr in selector.get("matchExpressions") or []:
            op = expr.get("operator")
            if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
                raise ApiError(422, "Invalid", "%r is not a valid selector operator" % (op,))
            reqs.append((expr.get("key"), op, list(expr.get("values") or [])))
        return cls(reqs)

    @staticmethod
    def _check_key(key, part):
        if not key or not _KEY_RE.match(key) or len(key) > 316:
            raise _bad("unable to parse requirement: invalid label key %r in %r" % (key, part))

    @staticmethod
    def _check_value(value, part):
        if len(value) > 63 or not _VALUE_RE.match(value):
            raise _bad("unable to parse requirement: invalid label value %r in %r" % (value, part))

    def matches(self, labels):
        labels = labels or {}
        for key, op, values in self.requirements:
            present = key in labels
            if op == "In" and (not present or labels[key] not in values):
                return False
            if op == "NotIn" and present and labels[key] in values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
        return True

    def equality_value(self, key):
        """The value a selector pins ``key`` to with ``=``, or None (used for index look-ups)."""
        for k, op, values in self.requirements:
            if k == key and op == "In" and len(values) == 1:
                return values[0]
        return None

    def __bool__(self):
        return True


class _Nothing(LabelSelector):
    def __init__(self):
        super().__init__([])

    def matches(self, labels):
        return False


NOTHING = _Nothing()


def field_value(obj, path):
    """The string form kube-apiserver compares for a field label."""
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            cur = None
            break
        cur = cur.get(part)
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if cur is None:
        # unset booleans and strings compare as their zero values
        return "false" if path in ("spec.unschedulable", "spec.hostNetwork") else ""
    return str(cur)


class FieldSelector:
    def __init__(self, requirements):
        self.requirements = requirements  # list of (path, op, value) with op in ("=", "!=")

    @classmethod
    def parse(cls, text, plural):
        reqs = []
        allowed = FIELD_LABELS.get(plural, set()) | {"metadata.name", "metadata.namespace"}
        for part in _split_top(text or ""):
            m = re.match(r"^([^!=]+?)\s*(==|=|!=)\s*(.*)$", part)
            if not m:
                raise _bad("invalid selector: '%s'; can't understand '%s'" % (text, part))
            path, op, val = m.group(1).strip(), m.group(2), m.group(3).strip()
            if path not in allowed:
                raise _bad('field label not supported: %s' % path)
            reqs.append((path, "!=" if op == "!=" else "=", val))
        return cls(reqs)

    def matches(self, obj):
        for path, op, val in self.requirements:
            got = field_value(obj, path)
            if (got == val) != (op == "="):
                return False
        return True

    def equality_value(self, path):
        for p, op, val in self.requirements:
            if p == path and op == "=":
                return val
        return None
