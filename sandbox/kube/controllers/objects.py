"""Pure helpers the controllers share: quantities, taints and tolerations, node affinity, pod requests,
pod defaults, conditions, names and hashes, and the two store writes every controller needs.

Everything here follows the Kubernetes source's semantics (apimachinery resource.Quantity, core/v1
helpers ToleratesTaint and NodeSelectorRequirementsAsSelector, the API server's pod defaulting), so that a
behaviour seen in the sandbox is the behaviour a real cluster shows.
"""

import json
import random
import re
from decimal import Decimal, InvalidOperation

from ..store import copy_obj

# ---- quantities -----------------------------------------------------------------------------------

_DECIMAL_SUFFIX = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
                   "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
                   "P": Decimal("1e15"), "E": Decimal("1e18")}
_BINARY_SUFFIX = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
_QUANTITY_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")


def parse_quantity(value, field="quantity"):
    """A resource.Quantity ("100m", "0.5", "1", "128Mi", "1G", "1e3" or a JSON number) as a Decimal."""
    if isinstance(value, bool):
        raise ValueError("%s: %r is not a quantity (examples: 100m, 0.5, 128Mi, 1G)" % (field, value))
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    m = _QUANTITY_RE.match(str(value).strip())
    if not m:
        raise ValueError("%s: %r is not a quantity (examples: 100m, 0.5, 128Mi, 1G)" % (field, value))
    try:
        number = Decimal(m.group(1))
    except InvalidOperation as exc:
        raise ValueError("%s: %r is not a quantity" % (field, value)) from exc
    if m.group(2):
        return number * (Decimal(10) ** int(m.group(2)[1:]))
    suffix = m.group(3) or ""
    if suffix in _BINARY_SUFFIX:
        return number * _BINARY_SUFFIX[suffix]
    return number * _DECIMAL_SUFFIX[suffix]


def _ceil(dec):
    return int(dec.to_integral_value(rounding="ROUND_CEILING"))


def cpu_millis(value, field="cpu"):
    return _ceil(parse_quantity(value, field) * 1000)


def amount(value, field="quantity"):
    """Memory, pods and other integer resources, rounded up as the scheduler does."""
    return _ceil(parse_quantity(value, field))


def allocatable(resources):
    """(cpu millis, memory bytes, pods) from a node's status.allocatable (missing resources count as 0)."""
    resources = resources or {}
    return (cpu_millis(resources.get("cpu", 0), "allocatable.cpu"),
            amount(resources.get("memory", 0), "allocatable.memory"),
            amount(resources.get("pods", 0), "allocatable.pods"))


# The scheduler scores a container without requests as if it asked for 100m CPU and 200Mi memory
# (pkg/scheduler/util GetNonzeroRequests), so such pods still spread across nodes.
DEFAULT_CPU_SCORE = 100
DEFAULT_MEMORY_SCORE = 200 * 2 ** 20


def _container_requests(container, path):
    res = container.get("resources") or {}
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    cpu = req.get("cpu", lim.get("cpu"))
    mem = req.get("memory", lim.get("memory"))
    cpu_m = cpu_millis(cpu, path + ".resources.requests.cpu") if cpu is not None else 0
    mem_b = amount(mem, path + ".resources.requests.memory") if mem is not None else 0
    nz_cpu = cpu_m if cpu is not None else DEFAULT_CPU_SCORE
    nz_mem = mem_b if mem is not None else DEFAULT_MEMORY_SCORE
    return cpu_m, mem_b, nz_cpu, nz_mem


def pod_requests(pod):
    """(cpu millis, memory bytes, score cpu, score memory) a pod needs, as the scheduler computes it.

    Requests default to limits (API defaulting); init containers run one at a time before the app
    containers, so the pod needs the larger of their maximum and the app containers' sum; spec.overhead
    is added. Raises ValueError naming the field when a quantity cannot be parsed."""
    spec = pod.get("spec") or {}
    total = [0, 0, 0, 0]
    for i, c in enumerate(spec.get("containers") or []):
        for j, v in enumerate(_container_requests(c, "spec.containers[%d]" % i)):
            total[j] += v
    for i, c in enumerate(spec.get("initContainers") or []):
        for j, v in enumerate(_container_requests(c, "spec.initContainers[%d]" % i)):
            total[j] = max(total[j], v)
    overhead = spec.get("overhead") or {}
    if overhead.get("cpu") is not None:
        extra = cpu_millis(overhead["cpu"], "spec.overhead.cpu")
        total[0] += extra
        total[2] += extra
    if overhead.get("memory") is not None:
        extra = amount(overhead["memory"], "spec.overhead.memory")
        total[1] += extra
        total[3] += extra
    return tuple(total)


def qos_class(spec):
    """Guaranteed / Burstable / BestEffort (pkg/apis/core/helper/qos), requests defaulted from limits."""
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set, guaranteed = False, True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = dict(res.get("requests") or {}), res.get("limits") or {}
        for k, v in lim.items():
            req.setdefault(k, v)
        if req or lim:
            any_set = True
        for r in ("cpu", "memory"):
            if r not in lim or r not in req or str(req[r]) != str(lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


# ---- taints, tolerations, node affinity ---------------------------------------------------------

def tolerates(toleration, taint):
    """core/v1 Toleration.ToleratesTaint: empty effect matches every effect, empty key (with Exists)
    every key; operator Equal (the default) compares values, Exists ignores them."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def first_untolerated(tolerations, taints, effects=("NoSchedule", "NoExecute")):
    """The first taint with one of ``effects`` that no toleration tolerates, or None."""
    for taint in taints or ():
        if taint.get("effect") in effects and not any(tolerates(t, taint) for t in tolerations or ()):
            return taint
    return None


def count_untolerated(tolerations, taints, effect):
    return sum(1 for taint in taints or () if taint.get("effect") == effect
               and not any(tolerates(t, taint) for t in tolerations or ()))


def taint_text(taint):
    """How the scheduler names a taint in its messages: ``{key: value}``."""
    return "{%s: %s}" % (taint.get("key"), taint.get("value") or "")


def _requirement_matches(req, labels):
    key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def term_matches(term, labels, node_name):
    """One NodeSelectorTerm: its expressions and fields are ANDed; an empty term matches nothing."""
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False
    if not all(_requirement_matches(e, labels) for e in exprs):
        return False
    for f in fields:
        if f.get("key") != "metadata.name" or not _requirement_matches(f, {"metadata.name": node_name}):
            return False
    return True


def required_node_terms(spec):
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    return required.get("nodeSelectorTerms") or []


def node_selected(spec, labels, node_name):
    """spec.nodeSelector and required node affinity (terms ORed), as the NodeAffinity filter decides."""
    labels = labels or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    terms = required_node_terms(spec)
    if terms is None:
        return True
    return any(term_matches(t, labels, node_name) for t in terms)


# ---- conditions and small readers -----------------------------------------------------------------

def condition(obj, ctype):
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def set_condition(conditions, ctype, status, timestamp, reason=None, message=None, probe=False, extra=None):
    """A new conditions list with ``ctype`` set; lastTransitionTime moves only when the status changes."""
    out, found = [], False
    for cond in conditions or []:
        if cond.get("type") != ctype:
            out.append(cond)
            continue
        found = True
        new = {"type": ctype, "status": status}
        if probe:
            new["lastProbeTime"] = None
        new["lastTransitionTime"] = cond.get("lastTransitionTime") if cond.get("status") == status else timestamp
        if reason:
            new["reason"] = reason
        if message:
            new["message"] = message
        if extra:
            new.update(extra)
        out.append(new)
    if not found:
        new = {"type": ctype, "status": status}
        if probe:
            new["lastProbeTime"] = None
        new["lastTransitionTime"] = timestamp
        if reason:
            new["reason"] = reason
        if message:
            new["message"] = message
        if extra:
            new.update(extra)
        out.append(new)
    return out


_TIMES = ("lastTransitionTime", "lastUpdateTime", "lastHeartbeatTime", "lastProbeTime")


def same_conditions(a, b):
    """Equal apart from their timestamps (so a rewrite of the same facts is not a change), in any order.

    Conditions are told apart by their type: compared type by type; only lists holding one type twice are compared
    as whole multisets (the controllers call this on every status write, so the common case stays cheap)."""
    a, b = a or [], b or []
    if len(a) != len(b):
        return False

    def strip(condition):
        return {k: v for k, v in condition.items() if k not in _TIMES}

    def by_type(conds):
        return sorted(conds, key=lambda c: str(c.get("type")))

    if [strip(c) for c in by_type(a)] == [strip(c) for c in by_type(b)]:
        return True
    if len({str(c.get("type")) for c in a}) == len(a):
        return False

    def canonical(conds):
        return sorted((sorted(strip(c).items(), key=lambda item: item[0]) for c in conds), key=repr)
    return canonical(a) == canonical(b)


def key_of(obj):
    return (obj["metadata"].get("namespace"), obj["metadata"]["name"])


def deleting(obj):
    return "deletionTimestamp" in obj["metadata"]


def int_or(value, default):
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def scaled_value(value, total, round_up, field):
    """intstr.GetScaledValueFromIntOrPercent: an int as is, "N%" of ``total`` rounded up or down."""
    if value is None:
        raise ValueError("%s: value required" % field)
    if isinstance(value, bool):
        raise ValueError("%s: %r is neither an integer nor a percentage like 25%%" % (field, value))
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        try:
            pct = int(text[:-1])
        except ValueError as exc:
            raise ValueError("%s: %r is neither an integer nor a percentage like 25%%" % (field, value)) from exc
        num = total * pct
        return -(-num // 100) if round_up else num // 100
    try:
        return int(text)
    except ValueError as exc:
        raise ValueError("%s: %r is neither an integer nor a percentage like 25%%" % (field, value)) from exc


# ---- names and hashes --------------------------------------------------------------------------

_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def random_suffix(n=5, rng=random):
    """apimachinery's rand.String: consonants and digits that cannot spell words."""
    return "".join(rng.choice(_ALPHANUMS) for _char in range(n))


def safe_encode(text):
    return "".join(_ALPHANUMS[ord(ch) % len(_ALPHANUMS)] for ch in text)


def fnv32a(data):
    h = 0x811C9DC5
    for byte in data:
        h ^= byte
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def template_hash(template, collision_count=None):
    """The pod-template-hash label value: FNV-32a of the template, safe-encoded (as controller.ComputeHash)."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    return safe_encode(str(fnv32a(data)))


# ---- pods the controllers create ------------------------------------------------------------------

# The DefaultTolerationSeconds admission plugin gives every pod these two.
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def _image_pull_policy(image):
    image = image or ""
    name = image.split("@")[0]
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else ""
    if "@" in image:
        return "IfNotPresent"
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def default_pod(pod):
    """Fill what the API server's defaulting and admission would add to a pod created through it."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.setdefault("tolerations", [])
    for default in DEFAULT_TOLERATIONS:
        if not any(t.get("key") == default["key"] and t.get("effect") in (None, "", "NoExecute") for t in tolerations):
            tolerations.append(dict(default))
    for group in ("initContainers", "containers"):
        for c in spec.get(group) or []:
            c.setdefault("imagePullPolicy", _image_pull_policy(c.get("image")))
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            c.setdefault("resources", {})
    status = pod.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", qos_class(spec))
    return pod


def pod_from_template(template, name, namespace, owner_ref, extra_labels=None):
    """A new pod (a fresh dict the caller may hand to store.create) from a pod template."""
    template = copy_obj(template or {})
    meta = template.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    labels.update(extra_labels or {})
    pod_meta = {"name": name, "namespace": namespace, "labels": labels, "ownerReferences": [owner_ref]}
    if meta.get("annotations"):
        pod_meta["annotations"] = dict(meta["annotations"])
    if meta.get("finalizers"):
        pod_meta["finalizers"] = list(meta["finalizers"])
    return default_pod({"metadata": pod_meta, "spec": template.get("spec") or {}})


def owner_reference(owner, api_version, kind):
    return {"apiVersion": api_version, "kind": kind, "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


# ---- writes ------------------------------------------------------------------------------------

def shallow(obj, **parts):
    """A new top-level dict sharing the unchanged parts of an immutable snapshot, with a fresh metadata
    dict (the store writes into it) and the given top-level parts replaced."""
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"])
    new.update(parts)
    return new


def update(store, plural, namespace, name, fn, client, cause=None):
    """Read-modify-write under the store lock without a deep copy.

    ``fn(current)`` returns a new object built with :func:`shallow` (never editing ``current``), or None
    to leave it alone. Returns the stored new object, or None when nothing was written."""
    with store.lock:
        current = store.try_get(plural, namespace, name)
        if current is None:
            return None
        new = fn(current)
        if new is None:
            return None
        return store.replace(plural, new, client=client, cause=cause, check_rv=False)


def delete_pod(ctl, pod, client, cause):
    """Graceful deletion as the API server performs a DELETE with default options.

    An unscheduled pod or one that already finished goes at once; otherwise deletionTimestamp becomes
    now + the pod's grace period and the kubelet ends it. Returns True when something was written."""
    store, clock = ctl.store, ctl.clock
    ns, name = key_of(pod)
    uid = pod["metadata"]["uid"]
    spec = pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase")
    grace = int_or(spec.get("terminationGracePeriodSeconds"), 30)
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        grace = 0
    if grace <= 0:
        with store.lock:
            current = store.try_get("pods", ns, name)
            if current is None or current["metadata"]["uid"] != uid:
                return False
            store.remove("pods", ns, name, client=client, cause=cause)
            return True

    def mark(current):
        if current["metadata"]["uid"] != uid or deleting(current):
            return None
        new = shallow(current)
        new["metadata"]["deletionTimestamp"] = clock.timestamp(clock.now() + grace)
        new["metadata"]["deletionGracePeriodSeconds"] = grace
        return new
    return update(store, "pods", ns, name, mark, client, cause) is not None
