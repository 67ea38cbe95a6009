"""What kube-apiserver does to an object between decoding and storing it: defaulting and validation.

``default(plural, obj, create)`` fills the fields the real API server's defaulting functions and default
admission plugins fill (pod restartPolicy, terminationGracePeriodSeconds, the not-ready/unreachable
tolerations, Deployment strategy, ...). ``validate(plural, obj, old)`` returns a list of
``(field, message)`` causes in the real server's wording; the caller turns them into one 422 Invalid.
"""

import re

from .errors import ApiError
from .selectors import LabelSelector

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUANTITY = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_PERCENT = re.compile(r"^[0-9]+%$")

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
                   "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
                   "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
NAME_PART_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                 "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")

# metav1.MicroTime (Lease acquireTime/renewTime) is decoded with Go's time.Parse and exactly this layout: six
# fractional digits, then Z or an offset. "...:05Z" or "...:05.123Z" are refused before validation (400).
MICRO_TIME_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"
_MICRO_TIME = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.[0-9]{6}(Z|[+-][0-9]{2}:[0-9]{2})$")
INT32_MAX = 2 ** 31 - 1

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def q(value):
    """Go's %q-ish rendering used in field error messages."""
    if isinstance(value, str):
        return '"%s"' % value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "map[string]string{%s}" % ", ".join('"%s":"%s"' % kv for kv in sorted(value.items()))
    return str(value)


def invalid_value(value, detail):
    return "Invalid value: %s: %s" % (q(value), detail)


def unsupported(value, allowed):
    return "Unsupported value: %s: supported values: %s" % (q(value), ", ".join('"%s"' % a for a in allowed))


REQUIRED = "Required value"
WORKLOADS = ("deployments", "replicasets", "daemonsets", "statefulsets")


# ---- defaulting --------------------------------------------------------------------------------------
_NOT_READY_TOLERATIONS = (("node.kubernetes.io/not-ready", 300), ("node.kubernetes.io/unreachable", 300))


def _default_container(c):
    if not isinstance(c, dict):
        return
    image = str(c.get("image") or "")
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in c:
        c["imagePullPolicy"] = "Always" if ("@" not in tag and (":" not in tag or tag.endswith(":latest"))) else "IfNotPresent"
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def _default_pod_spec(spec):
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    for field in ("containers", "initContainers"):
        for c in spec.get(field) or []:
            _default_container(c)


def _qos_class(spec):
    requests_any, guaranteed = False, True
    for c in spec.get("containers") or []:
        res = (c or {}).get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            requests_any = True
        for r in ("cpu", "memory"):
            if r not in lim or (r in req and str(req[r]) != str(lim[r])):
                guaranteed = False
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _default_update_strategy(spec, rolling_update):
    """A DaemonSet's or StatefulSet's ``updateStrategy`` as apps/v1 defaults it: type RollingUpdate, whose
    ``rollingUpdate`` gets ``rolling_update``'s fields where unset; and ``revisionHistoryLimit`` 10."""
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            ru = strategy.setdefault("rollingUpdate", {})
            if isinstance(ru, dict):
                for key, value in rolling_update.items():
                    ru.setdefault(key, value)
    spec.setdefault("revisionHistoryLimit", 10)


def default(plural, obj, create):
    """Fill defaults in place (idempotent). ``create`` adds what only admission on create adds."""
    spec = obj.get("spec")
    if plural == "pods":
        if not isinstance(spec, dict):
            return
        _default_pod_spec(spec)
        if create:
            spec.setdefault("serviceAccountName", "default")
            spec.setdefault("serviceAccount", spec["serviceAccountName"])
            spec.setdefault("enableServiceLinks", True)
            if "priorityClassName" not in spec:
                spec.setdefault("priority", 0)
            tolerations = spec.setdefault("tolerations", [])
            if isinstance(tolerations, list):
                for key, seconds in _NOT_READY_TOLERATIONS:
                    if not any(isinstance(t, dict) and t.get("key") == key and t.get("effect") in ("NoExecute", None, "")
                               for t in tolerations):
                        tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                            "tolerationSeconds": seconds})
            obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}
    elif plural in WORKLOADS:
        if not isinstance(spec, dict):
            return
        template = spec.get("template")
        if isinstance(template, dict):
            _default_pod_spec(template.get("spec"))
        if plural in ("deployments", "replicasets", "statefulsets"):
            spec.setdefault("replicas", 1)
        if plural == "deployments":
            strategy = spec.setdefault("strategy", {})
            if isinstance(strategy, dict):
                strategy.setdefault("type", "RollingUpdate")
                if strategy["type"] == "RollingUpdate":
                    ru = strategy.setdefault("rollingUpdate", {})
                    if isinstance(ru, dict):
                        ru.setdefault("maxUnavailable", "25%")
                        ru.setdefault("maxSurge", "25%")
            spec.setdefault("revisionHistoryLimit", 10)
            spec.setdefault("progressDeadlineSeconds", 600)
        if plural == "daemonsets":
            _default_update_strategy(spec, {"maxUnavailable": 1, "maxSurge": 0})
        if plural == "statefulsets":
            # apps/v1 SetDefaults_StatefulSet
            spec.setdefault("podManagementPolicy", "OrderedReady")
            _default_update_strategy(spec, {"partition": 0})
            spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
        if create:
            obj["status"] = {"replicas": 0} if plural == "replicasets" else (
                {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}
                if plural == "daemonsets" else {"replicas": 0, "availableReplicas": 0} if plural == "statefulsets" else {})
    elif plural == "poddisruptionbudgets" and create:
        obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    elif plural in ("persistentvolumes", "persistentvolumeclaims") and isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
        if plural == "persistentvolumes":
            spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        if create:
            obj["status"] = {"phase": "Pending"} if plural == "persistentvolumeclaims" else {"phase": "Available"}
    elif plural == "namespaces":
        meta = obj.setdefault("metadata", {})
        if meta.get("name"):
            meta.setdefault("labels", {})
            if isinstance(meta["labels"], dict):
                meta["labels"]["kubernetes.io/metadata.name"] = meta["name"]
        if create:
            obj["spec"] = {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}


# ---- decoding ----------------------------------------------------------------------------------------
def _go_json_type(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _micro_time_error(value):
    """Why Go's MicroTime.UnmarshalJSON refuses ``value``, or None (null is the zero time)."""
    if value is None:
        return None
    if not isinstance(value, str):
        return "json: cannot unmarshal %s into Go value of type string" % _go_json_type(value)
    match = _MICRO_TIME.match(value)
    if match:
        year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
        in_range = 1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 60
        if in_range:
            return None
    return 'parsing time "%s" as "%s": cannot parse "%s" as "%s"' % (value, MICRO_TIME_LAYOUT, value, MICRO_TIME_LAYOUT)


def _lease_decode_error(spec):
    if spec is None:
        return None
    if not isinstance(spec, dict):
        return "json: cannot unmarshal %s into Go struct field Lease.spec of type v1.LeaseSpec" % _go_json_type(spec)
    holder = spec.get("holderIdentity")
    if holder is not None and not isinstance(holder, str):
        return ("json: cannot unmarshal %s into Go struct field LeaseSpec.spec.holderIdentity of type string"
                % _go_json_type(holder))
    for field in ("leaseDurationSeconds", "leaseTransitions"):
        value = spec.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) \
                or not -INT32_MAX - 1 <= value <= INT32_MAX:
            what = _go_json_type(value) if not isinstance(value, (int, float)) or isinstance(value, bool) else "number %s" % value
            return "json: cannot unmarshal %s into Go struct field LeaseSpec.spec.%s of type int32" % (what, field)
    for field in ("acquireTime", "renewTime"):
        error = _micro_time_error(spec.get(field))
        if error:
            return error
    return None


def decode_error(plural, obj):
    """What kube-apiserver's decoder refuses before defaulting and validation, in its words (the caller answers
    400 BadRequest ``<Kind> in version "v1" cannot be handled as a <Kind>: <this>``); None when ``obj`` decodes.

    Only typed fields whose JSON form a client can get wrong are modelled: a Lease's times and integers."""
    if plural == "leases":
        return _lease_decode_error(obj.get("spec"))
    return None


# ---- validation --------------------------------------------------------------------------------------
def _qualified_name_errors(key, field, causes):
    """Label / annotation / taint keys: [prefix/]name."""
    if not isinstance(key, str) or not key:
        causes.append((field, invalid_value(key, "name part must be non-empty")))
        return
    prefix, _sep, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        causes.append((field, invalid_value(key, "prefix part " + SUBDOMAIN_MSG)))
    if len(name) > 63:
        causes.append((field, invalid_value(key, "name part must be no more than 63 characters")))
    elif not _LABEL_NAME.match(name):
        causes.append((field, invalid_value(key, NAME_PART_MSG)))


def _label_map_errors(labels, field, causes):
    if labels is None:
        return
    if not isinstance(labels, dict):
        causes.append((field, invalid_value(str(labels), "must be a map of strings")))
        return
    for key, value in labels.items():
        _qualified_name_errors(key, field, causes)
        if not isinstance(value, str):
            causes.append((field, invalid_value(str(value), "label values must be strings")))
        elif len(value) > 63:
            causes.append((field, invalid_value(value, "must be no more than 63 characters")))
        elif not _LABEL_VALUE.match(value):
            causes.append((field, invalid_value(value, LABEL_VALUE_MSG)))


def _metadata_errors(plural, obj, causes):
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        causes.append(("metadata", REQUIRED))
        return
    name = meta.get("name")
    if not name and not meta.get("generateName"):
        causes.append(("metadata.name", "Required value: name or generateName is required"))
    elif name:
        if not isinstance(name, str):
            causes.append(("metadata.name", invalid_value(str(name), "must be a string")))
        elif plural == "namespaces":
            if len(name) > 63 or not _DNS_LABEL.match(name):
                causes.append(("metadata.name", invalid_value(name, LABEL_MSG)))
        elif plural != "events" and (len(name) > 253 or not _DNS_SUBDOMAIN.match(name)):
            causes.append(("metadata.name", invalid_value(name, SUBDOMAIN_MSG)))
    _label_map_errors(meta.get("labels"), "metadata.labels", causes)
    annotations = meta.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, dict):
            causes.append(("metadata.annotations", invalid_value(str(annotations), "must be a map of strings")))
        else:
            for key, value in annotations.items():
                _qualified_name_errors(key, "metadata.annotations", causes)
                if not isinstance(value, str):
                    causes.append(("metadata.annotations", invalid_value(str(value), "annotation values must be strings")))
    for i, ref in enumerate(meta.get("ownerReferences") or []):
        base = "metadata.ownerReferences[%d]" % i
        if not isinstance(ref, dict):
            causes.append((base, invalid_value(str(ref), "must be an object")))
            continue
        for f in ("apiVersion", "kind", "name"):
            if not ref.get(f):
                causes.append(("%s.%s" % (base, f), invalid_value("", "%s must not be empty" % f)))
        if not ref.get("uid"):
            causes.append(("%s.uid" % base, invalid_value("", "uid must not be empty")))
    finalizers = meta.get("finalizers")
    if finalizers is not None and (not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers)):
        causes.append(("metadata.finalizers", invalid_value(str(finalizers), "must be a list of strings")))


def _int_value(value, field, causes, minimum=0):
    if isinstance(value, bool) or not isinstance(value, int):
        causes.append((field, invalid_value(value, "must be an integer")))
        return False
    if value < minimum:
        causes.append((field, invalid_value(value, "must be greater than or equal to %d" % minimum)))
        return False
    return True


def _quantity_errors(resources, field, causes):
    if resources is None:
        return
    if not isinstance(resources, dict):
        causes.append((field, invalid_value(str(resources), "must be an object")))
        return
    for kind in ("requests", "limits"):
        values = resources.get(kind)
        if values is None:
            continue
        if not isinstance(values, dict):
            causes.append(("%s.%s" % (field, kind), invalid_value(str(values), "must be a map of quantities")))
            continue
        for name, value in values.items():
            text = str(value) if isinstance(value, (int, float, str)) and not isinstance(value, bool) else None
            if text is None or not _QUANTITY.match(text):
                causes.append(("%s.%s[%s]" % (field, kind, name),
                               invalid_value(value, "must match the regex ^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")))
            elif text.startswith("-"):
                causes.append(("%s.%s[%s]" % (field, kind, name), invalid_value(value, "must be greater than or equal to 0")))


def _container_errors(containers, field, causes, required):
    if containers is None or containers == []:
        if required:
            causes.append((field, REQUIRED))
        return
    if not isinstance(containers, list):
        causes.append((field, invalid_value(str(containers), "must be a list")))
        return
    seen = set()
    for i, c in enumerate(containers):
        base = "%s[%d]" % (field, i)
        if not isinstance(c, dict):
            causes.append((base, invalid_value(str(c), "must be an object")))
            continue
        name = c.get("name")
        if not name:
            causes.append(("%s.name" % base, REQUIRED))
        elif not isinstance(name, str) or len(name) > 63 or not _DNS_LABEL.match(name):
            causes.append(("%s.name" % base, invalid_value(name, LABEL_MSG)))
        elif name in seen:
            causes.append(("%s.name" % base, "Duplicate value: %s" % q(name)))
        else:
            seen.add(name)
        if not c.get("image"):
            causes.append(("%s.image" % base, REQUIRED))
        for j, port in enumerate(c.get("ports") or []):
            cp = (port or {}).get("containerPort") if isinstance(port, dict) else None
            pfield = "%s.ports[%d].containerPort" % (base, j)
            if cp is None:
                causes.append((pfield, REQUIRED))
            elif isinstance(cp, bool) or not isinstance(cp, int) or not 1 <= cp <= 65535:
                causes.append((pfield, invalid_value(cp, "must be between 1 and 65535, inclusive")))
        _quantity_errors(c.get("resources"), "%s.resources" % base, causes)


def _toleration_errors(tolerations, field, causes):
    if tolerations is None:
        return
    if not isinstance(tolerations, list):
        causes.append((field, invalid_value(str(tolerations), "must be a list")))
        return
    for i, t in enumerate(tolerations):
        base = "%s[%d]" % (field, i)
        if not isinstance(t, dict):
            causes.append((base, invalid_value(str(t), "must be an object")))
            continue
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            causes.append(("%s.operator" % base, unsupported(op, ("Equal", "Exists"))))
        if op == "Exists" and t.get("value"):
            causes.append(("%s.operator" % base, invalid_value(t.get("value"), "value must be empty when `operator` is 'Exists'")))
        if t.get("key"):
            _qualified_name_errors(t["key"], "%s.key" % base, causes)
        elif op != "Exists":
            causes.append(("%s.operator" % base, invalid_value(
                op, "operator must be Exists when `key` is empty, which means \"match all values and all keys\"")))
        effect = t.get("effect")
        if effect not in (None, "") and effect not in TAINT_EFFECTS:
            causes.append(("%s.effect" % base, unsupported(effect, TAINT_EFFECTS)))
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.append(("%s.effect" % base, invalid_value(effect or "", "effect must be 'NoExecute' when `tolerationSeconds` is set")))


def _pod_spec_errors(spec, field, causes, template=False):
    if not isinstance(spec, dict):
        causes.append((field + ".containers", REQUIRED))
        return
    _container_errors(spec.get("containers"), field + ".containers", causes, True)
    _container_errors(spec.get("initContainers"), field + ".initContainers", causes, False)
    policy = spec.get("restartPolicy")
    if policy not in RESTART_POLICIES:
        causes.append((field + ".restartPolicy", unsupported(policy, RESTART_POLICIES)))
    elif template and policy != "Always":
        causes.append((field + ".restartPolicy", unsupported(policy, ("Always",))))
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)):
        causes.append((field + ".terminationGracePeriodSeconds", invalid_value(grace, "must be an integer")))
    node_selector = spec.get("nodeSelector")
    _label_map_errors(node_selector, field + ".nodeSelector", causes)
    _toleration_errors(spec.get("tolerations"), field + ".tolerations", causes)
    node_name = spec.get("nodeName")
    if node_name and (not isinstance(node_name, str) or not _DNS_SUBDOMAIN.match(node_name)):
        causes.append((field + ".nodeName", invalid_value(node_name, SUBDOMAIN_MSG)))


def _selector_errors(selector, field, causes):
    """A structured LabelSelector; returns the parsed selector or None."""
    if not isinstance(selector, dict):
        causes.append((field, invalid_value(str(selector), "must be an object")))
        return None
    _label_map_errors(selector.get("matchLabels"), field + ".matchLabels", causes)
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        base = "%s.matchExpressions[%d]" % (field, i)
        if not isinstance(expr, dict):
            causes.append((base, invalid_value(str(expr), "must be an object")))
            continue
        op = expr.get("operator")
        ops = ("In", "NotIn", "Exists", "DoesNotExist")
        if op not in ops:
            causes.append(("%s.operator" % base, invalid_value(op, "not a valid selector operator")))
        elif op in ("In", "NotIn") and not expr.get("values"):
            causes.append(("%s.values" % base, "Required value: must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist") and expr.get("values"):
            causes.append(("%s.values" % base, "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        _qualified_name_errors(expr.get("key"), "%s.key" % base, causes)
    try:
        return LabelSelector.from_object(selector)
    except ApiError:
        return None


def selector_string(selector):
    """A structured LabelSelector rendered as kube-apiserver prints it (Scale.status.selector)."""
    parts = []
    for key, value in sorted(((selector or {}).get("matchLabels") or {}).items()):
        parts.append("%s=%s" % (key, value))
    for expr in (selector or {}).get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), sorted(expr.get("values") or [])
        if op == "In":
            parts.append("%s in (%s)" % (key, ",".join(values)))
        elif op == "NotIn":
            parts.append("%s notin (%s)" % (key, ",".join(values)))
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append("!" + key)
    return ",".join(sorted(parts))


def _int_or_percent(value, field, causes):
    if isinstance(value, bool):
        causes.append((field, invalid_value(value, "must be an integer or percentage (e.g '5%')")))
    elif isinstance(value, int):
        if value < 0:
            causes.append((field, invalid_value(value, "must be greater than or equal to 0")))
    elif isinstance(value, str) and _PERCENT.match(value):
        if int(value[:-1]) > 100:
            causes.append((field, invalid_value(value, "must not be greater than 100%")))
    else:
        causes.append((field, invalid_value(value, "a valid percent string must be a numeric string followed by an ending '%' "
                                                   "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")))


def _workload_errors(plural, obj, old, causes):
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        causes.append(("spec", REQUIRED))
        return
    if "replicas" in spec:
        _int_value(spec["replicas"], "spec.replicas", causes)
    selector = spec.get("selector")
    parsed = None
    if selector is None:
        causes.append(("spec.selector", REQUIRED))
    else:
        parsed = _selector_errors(selector, "spec.selector", causes)
        if isinstance(selector, dict) and not selector.get("matchLabels") and not selector.get("matchExpressions"):
            causes.append(("spec.selector", invalid_value("{}", "empty selector is invalid for %s" % plural[:-1])))
            parsed = None
    template = spec.get("template")
    if not isinstance(template, dict):
        causes.append(("spec.template", REQUIRED))
    else:
        labels = (template.get("metadata") or {}).get("labels") or {}
        _label_map_errors(labels, "spec.template.metadata.labels", causes)
        if parsed is not None and not parsed.matches(labels):
            causes.append(("spec.template.metadata.labels",
                           invalid_value(labels, "`selector` does not match template `labels`")))
        _pod_spec_errors(template.get("spec"), "spec.template.spec", causes, template=True)
    if old is not None and (old.get("spec") or {}).get("selector") != selector:
        causes.append(("spec.selector", invalid_value(selector, "field is immutable")))
    if plural == "deployments":
        strategy = spec.get("strategy") or {}
        stype = strategy.get("type")
        if stype not in ("RollingUpdate", "Recreate"):
            causes.append(("spec.strategy.type", unsupported(stype, ("Recreate", "RollingUpdate"))))
        elif stype == "Recreate" and strategy.get("rollingUpdate"):
            causes.append(("spec.strategy.rollingUpdate", "Forbidden: may not be specified when strategy `type` is 'Recreate'"))
        elif stype == "RollingUpdate":
            ru = strategy.get("rollingUpdate") or {}
            for f in ("maxUnavailable", "maxSurge"):
                _int_or_percent(ru.get(f), "spec.strategy.rollingUpdate.%s" % f, causes)
            if ru.get("maxSurge") in (0, "0%") and ru.get("maxUnavailable") in (0, "0%"):
                causes.append(("spec.strategy.rollingUpdate.maxUnavailable",
                               invalid_value(ru.get("maxUnavailable"), "may not be 0 when `maxSurge` is 0")))
    if plural == "daemonsets":
        strategy = spec.get("updateStrategy") or {}
        stype = strategy.get("type")
        if stype not in ("RollingUpdate", "OnDelete"):
            causes.append(("spec.updateStrategy.type", unsupported(stype, ("OnDelete", "RollingUpdate"))))
    if plural == "statefulsets":
        _statefulset_errors(spec, old, causes)


# the StatefulSet spec fields an update may change (ValidateStatefulSetUpdate); the rest are immutable
STATEFULSET_MUTABLE = ("replicas", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy", "minReadySeconds",
                       "ordinals", "revisionHistoryLimit")


def _statefulset_errors(spec, old, causes):
    policy = spec.get("podManagementPolicy")
    if policy not in ("OrderedReady", "Parallel"):
        causes.append(("spec.podManagementPolicy", unsupported(policy, ("OrderedReady", "Parallel"))))
    strategy = spec.get("updateStrategy") or {}
    stype = strategy.get("type")
    if stype not in ("RollingUpdate", "OnDelete"):
        causes.append(("spec.updateStrategy.type", unsupported(stype, ("OnDelete", "RollingUpdate"))))
    partition = (strategy.get("rollingUpdate") or {}).get("partition") if isinstance(strategy, dict) else None
    if partition is not None:
        _int_value(partition, "spec.updateStrategy.rollingUpdate.partition", causes)
    if spec.get("volumeClaimTemplates"):
        # the sandbox provisions no volumes per ordinal: refusing beats running pods without their claims
        causes.append(("spec.volumeClaimTemplates",
                       "Forbidden: the sandbox's StatefulSet controller does not provision volumeClaimTemplates"))
    if old is not None:
        before, after = dict(old.get("spec") or {}), dict(spec)
        for field in STATEFULSET_MUTABLE:
            before.pop(field, None)
            after.pop(field, None)
        if before != after:
            causes.append(("spec", "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                                   "'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' "
                                   "and 'minReadySeconds' are forbidden"))


def _pdb_errors(obj, causes):
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    min_av, max_un = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_av is not None and max_un is not None:
        causes.append(("spec", invalid_value("minAvailable=%s, maxUnavailable=%s" % (min_av, max_un),
                                             "minAvailable and maxUnavailable cannot be both set")))
    if min_av is not None:
        _int_or_percent(min_av, "spec.minAvailable", causes)
    if max_un is not None:
        _int_or_percent(max_un, "spec.maxUnavailable", causes)
    if spec.get("selector") is not None:
        _selector_errors(spec["selector"], "spec.selector", causes)
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in EVICTION_POLICIES:
        causes.append(("spec.unhealthyPodEvictionPolicy", unsupported(policy, EVICTION_POLICIES)))


def _lease_errors(obj, causes):
    """coordination/validation.ValidateLeaseSpec (v1.30): the duration must be positive, the transitions not
    negative; holderIdentity is free-form."""
    spec = obj.get("spec") or {}
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        causes.append(("spec.leaseDurationSeconds", invalid_value(duration, "must be greater than 0")))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and transitions < 0:
        causes.append(("spec.leaseTransitions", invalid_value(transitions, "must be greater than or equal to 0")))


def _node_errors(obj, old, causes):
    """validation.ValidateNode (and ValidateNodeUpdate): as kube-apiserver v1.34 reports them, the taints are
    validated under the path ``metadata.taints`` (not ``spec.taints``), and an update validates them twice, so each
    cause appears twice (both are what a client sees; the fidelity table checks it)."""
    spec = obj.get("spec") or {}
    seen = set()
    taints = spec.get("taints")
    if taints is not None and not isinstance(taints, list):
        causes.append(("spec.taints", invalid_value(str(taints), "must be a list")))
        taints = []
    found = []
    for i, t in enumerate(taints or []):
        base = "metadata.taints[%d]" % i
        if not isinstance(t, dict):
            found.append((base, invalid_value(str(t), "must be an object")))
            continue
        if not t.get("key"):
            found.append(("%s.key" % base, invalid_value("", "name part must be non-empty")))
        else:
            _qualified_name_errors(t["key"], "%s.key" % base, found)
        value = t.get("value")
        if value and (not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value)):
            found.append(("%s.value" % base, invalid_value(value, LABEL_VALUE_MSG)))
        effect = t.get("effect")
        if not effect:
            found.append(("%s.effect" % base, REQUIRED))
        elif effect not in TAINT_EFFECTS:
            found.append(("%s.effect" % base, unsupported(effect, TAINT_EFFECTS)))
        ident = (t.get("key"), effect)
        if ident in seen:
            found.append((base, "Duplicate value: %s: taints must be unique by key and effect pair" % q("%s:%s" % ident)))
        seen.add(ident)
    causes.extend(found * (2 if old is not None else 1))
    if old is not None:
        old_pid = (old.get("spec") or {}).get("providerID")
        if old_pid and spec.get("providerID") != old_pid:
            causes.append(("spec.providerID", 'Forbidden: node updates may not change providerID except from "" to valid'))


_POD_MUTABLE = ("activeDeadlineSeconds", "terminationGracePeriodSeconds", "tolerations", "schedulingGates")


def _pod_update_errors(obj, old, causes):
    new_spec, old_spec = dict(obj.get("spec") or {}), dict(old.get("spec") or {})
    stripped_new, stripped_old = _strip_pod_mutable(new_spec), _strip_pod_mutable(old_spec)
    if stripped_new != stripped_old:
        causes.append(("spec", "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
                               "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                               "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                               "(allow it to be set to 1 if it was previously negative)"))
    old_tol = old_spec.get("tolerations") or []
    new_tol = new_spec.get("tolerations") or []
    if isinstance(new_tol, list) and any(t not in new_tol for t in old_tol):
        causes.append(("spec.tolerations", "Forbidden: existing toleration can not be modified except its tolerationSeconds"))


def _strip_pod_mutable(spec):
    out = {k: v for k, v in spec.items() if k not in _POD_MUTABLE}
    for field in ("containers", "initContainers"):
        if isinstance(out.get(field), list):
            out[field] = [{k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c for c in out[field]]
    return out


# the volume sources a PersistentVolume may name; it needs exactly one
_VOLUME_SOURCES = ("csi", "awsElasticBlockStore", "hostPath", "local", "nfs")


def _storage_errors(plural, obj, causes):
    """The checks kube-apiserver makes of PersistentVolumes, PersistentVolumeClaims and VolumeAttachments that a
    scenario can get wrong."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        causes.append(("spec", REQUIRED))
        return
    if plural == "volumeattachments":
        for field in ("attacher", "nodeName"):
            if not spec.get(field):
                causes.append(("spec.%s" % field, REQUIRED))
        if not (spec.get("source") or {}).get("persistentVolumeName"):
            causes.append(("spec.source", "Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
        return
    if not spec.get("accessModes"):
        causes.append(("spec.accessModes", "Required value: at least 1 access mode is required" if plural == "persistentvolumeclaims"
                       else REQUIRED))
    if plural == "persistentvolumeclaims":
        if not ((spec.get("resources") or {}).get("requests") or {}).get("storage"):
            causes.append(("spec.resources[storage]", REQUIRED))
        return
    if not (spec.get("capacity") or {}).get("storage"):
        causes.append(("spec.capacity", REQUIRED))
    if sum(1 for source in _VOLUME_SOURCES if spec.get(source)) != 1:
        causes.append(("spec", "Required value: must specify a volume type"))


def validate(plural, obj, old=None):
    """The validation causes for ``obj`` (``old`` is the stored object on update, else None)."""
    causes = []
    _metadata_errors(plural, obj, causes)
    if plural == "pods":
        _pod_spec_errors(obj.get("spec"), "spec", causes)
        if old is not None and not causes:
            _pod_update_errors(obj, old, causes)
    elif plural in WORKLOADS:
        _workload_errors(plural, obj, old, causes)
    elif plural == "poddisruptionbudgets":
        _pdb_errors(obj, causes)
    elif plural == "nodes":
        _node_errors(obj, old, causes)
    elif plural == "leases":
        _lease_errors(obj, causes)
    elif plural in ("persistentvolumes", "persistentvolumeclaims", "volumeattachments"):
        _storage_errors(plural, obj, causes)
    elif plural == "events":
        involved = obj.get("involvedObject")
        if not isinstance(involved, dict):
            causes.append(("involvedObject", REQUIRED))
        elif not obj.get("eventTime"):
            # kube-apiserver's legacy rule: an Event about a cluster-scoped object (a Node) lives in default (or
            # nowhere); one about a namespaced object lives in its namespace
            namespace = (obj.get("metadata") or {}).get("namespace") or ""
            if (involved.get("namespace") or "") != namespace and not (not involved.get("namespace") and namespace == "default"):
                causes.append(("involvedObject.namespace", 'Invalid value: "%s": does not match event.namespace'
                               % (involved.get("namespace") or "")))
    return causes
