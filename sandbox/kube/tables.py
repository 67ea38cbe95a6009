"""Server-side printing: the ``meta.k8s.io/v1 Table`` kubectl asks for (``Accept: ...;as=Table;...``).

With it ``kubectl get nodes`` shows STATUS (Ready, NotReady, SchedulingDisabled), ROLES and VERSION, and
``kubectl get pods -o wide`` shows READY, STATUS (Terminating included) and NODE, as against a real cluster.
Ages are simulated time, from the sandbox clock. Columns follow kube-apiserver's printers for the kinds
the sandbox serves; any other kind gets NAME and AGE.
"""


def _col(name, description, kind="string", priority=0, fmt=""):
    return {"name": name, "type": kind, "format": fmt, "description": description, "priority": priority}


NAME = _col("Name", "Name must be unique within a namespace.", fmt="name")
AGE = _col("Age", "CreationTimestamp is a timestamp representing the server time when this object was created.")


def human_duration(seconds):
    """kubectl's short duration form: 45s, 5m12s, 3h, 2d4h, 400d."""
    seconds = max(0, int(seconds))
    if seconds < 120:
        return "%ds" % seconds
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return "%dm%ds" % (minutes, rest) if rest else "%dm" % minutes
    if minutes < 180:
        return "%dm" % minutes
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return "%dh%dm" % (hours, rest) if rest else "%dh" % hours
    if hours < 48:
        return "%dh" % hours
    days = hours // 24
    if days < 8:
        rest = hours % 24
        return "%dd%dh" % (days, rest) if rest else "%dd" % days
    return "%dd" % days


def _condition(obj, kind):
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond.get("status")
    return None


def _node_row(node, _age):
    spec, status, labels = node.get("spec") or {}, node.get("status") or {}, node["metadata"].get("labels") or {}
    ready = _condition(node, "Ready")
    state = {"True": "Ready", "False": "NotReady"}.get(ready, "Unknown")
    if spec.get("unschedulable"):
        state += ",SchedulingDisabled"
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k)
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [state, ",".join(roles) or "<none>", _age, info.get("kubeletVersion", ""),
            addresses.get("InternalIP", "<none>"), addresses.get("ExternalIP", "<none>"), info.get("osImage", "<unknown>"),
            info.get("kernelVersion", "<unknown>"), info.get("containerRuntimeVersion", "<unknown>")]


def _pod_row(pod, _age):
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    total = len(spec.get("containers") or [])
    ready = sum(1 for c in statuses if c.get("ready"))
    if not statuses and _condition(pod, "Ready") == "True":
        ready = total
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = status.get("reason") or status.get("phase") or "Pending"
    if "deletionTimestamp" in pod["metadata"]:
        reason = "Terminating"
    return ["%d/%d" % (ready, total), reason, restarts, _age, status.get("podIP") or "<none>",
            spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>", "<none>"]


def _images(obj):
    containers = ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []
    return ",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)


def _selector(obj):
    sel = (obj.get("spec") or {}).get("selector") or {}
    return ",".join("%s=%s" % kv for kv in sorted((sel.get("matchLabels") or {}).items())) or "<none>"


def _deployment_row(dep, _age):
    spec, status = dep.get("spec") or {}, dep.get("status") or {}
    names, images = _images(dep)
    return ["%d/%d" % (status.get("readyReplicas", 0), spec.get("replicas", 1)), status.get("updatedReplicas", 0),
            status.get("availableReplicas", 0), _age, names, images, _selector(dep)]


def _replicaset_row(rs, _age):
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    names, images = _images(rs)
    return [spec.get("replicas", 1), status.get("replicas", 0), status.get("readyReplicas", 0), _age, names, images,
            _selector(rs)]


def _statefulset_row(sts, _age):
    names, images = _images(sts)
    return ["%d/%d" % ((sts.get("status") or {}).get("readyReplicas", 0), (sts.get("spec") or {}).get("replicas", 1)), _age,
            names, images]


def _daemonset_row(ds, _age):
    status = ds.get("status") or {}
    selector = ((ds.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeSelector") or {}
    names, images = _images(ds)
    return [status.get("desiredNumberScheduled", 0), status.get("currentNumberScheduled", 0), status.get("numberReady", 0),
            status.get("updatedNumberScheduled", 0), status.get("numberAvailable", 0),
            ",".join("%s=%s" % kv for kv in sorted(selector.items())) or "<none>", _age, names, images, _selector(ds)]


def _pdb_row(pdb, _age):
    spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
    return [str(spec["minAvailable"]) if "minAvailable" in spec else "N/A",
            str(spec["maxUnavailable"]) if "maxUnavailable" in spec else "N/A", status.get("disruptionsAllowed", 0), _age]


def _lease_row(lease, _age):
    return [(lease.get("spec") or {}).get("holderIdentity") or "", _age]


def _namespace_row(ns, _age):
    return [(ns.get("status") or {}).get("phase", "Active"), _age]


PRINTERS = {
    "nodes": ([_col("Status", "The status of the node"), _col("Roles", "The roles of the node"), AGE,
               _col("Version", "Kubelet Version reported by the node."),
               _col("Internal-IP", "List of internal IPs associated with the node.", priority=1),
               _col("External-IP", "List of external IPs associated with the node.", priority=1),
               _col("OS-Image", "OS Image reported by the node from /etc/os-release.", priority=1),
               _col("Kernel-Version", "Kernel Version reported by the node.", priority=1),
               _col("Container-Runtime", "Container Runtime Version reported by the node.", priority=1)], _node_row),
    "pods": ([_col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
              _col("Status", "The aggregate status of the containers in this pod."),
              _col("Restarts", "The number of times the containers in this pod have been restarted.", "integer"), AGE,
              _col("IP", "IP address allocated to the pod.", priority=1),
              _col("Node", "Name of the Node this pod is running on.", priority=1),
              _col("Nominated Node", "Name of the node the pod is nominated to run on.", priority=1),
              _col("Readiness Gates", "Pod readiness gates.", priority=1)], _pod_row),
    "deployments": ([_col("Ready", "Number of the pod with ready state"),
                     _col("Up-to-date", "Total number of non-terminated pods with the desired template spec.", "integer"),
                     _col("Available", "Total number of available pods.", "integer"), AGE,
                     _col("Containers", "Names of each container in the template.", priority=1),
                     _col("Images", "Images referenced by each container in the template.", priority=1),
                     _col("Selector", "Label selector for pods.", priority=1)], _deployment_row),
    "replicasets": ([_col("Desired", "Number of desired pods.", "integer"), _col("Current", "Number of actual replicas.", "integer"),
                     _col("Ready", "Number of ready replicas.", "integer"), AGE,
                     _col("Containers", "Names of each container in the template.", priority=1),
                     _col("Images", "Images referenced by each container in the template.", priority=1),
                     _col("Selector", "Label selector for pods.", priority=1)], _replicaset_row),
    "daemonsets": ([_col("Desired", "The total number of nodes that should be running the daemon pod.", "integer"),
                    _col("Current", "The number of nodes running at least one daemon pod.", "integer"),
                    _col("Ready", "The number of nodes running the daemon pod that are ready.", "integer"),
                    _col("Up-to-date", "The number of nodes running the updated daemon pod.", "integer"),
                    _col("Available", "The number of nodes running an available daemon pod.", "integer"),
                    _col("Node Selector", "Node selector of the daemon pod template."), AGE,
                    _col("Containers", "Names of each container in the template.", priority=1),
                    _col("Images", "Images referenced by each container in the template.", priority=1),
                    _col("Selector", "Label selector for pods.", priority=1)], _daemonset_row),
    "statefulsets": ([_col("Ready", "Number of the pod with ready state"), AGE,
                      _col("Containers", "Names of each container in the template.", priority=1),
                      _col("Images", "Images referenced by each container in the template.", priority=1)], _statefulset_row),
    "poddisruptionbudgets": ([_col("Min Available", "The minimum number of pods that must be available."),
                              _col("Max Unavailable", "The maximum number of pods that may be unavailable."),
                              _col("Allowed Disruptions", "Calculated number of pods that may be disrupted at this time.",
                                   "integer"), AGE], _pdb_row),
    "namespaces": ([_col("Status", "The status of the namespace"), AGE], _namespace_row),
    "leases": ([_col("Holder", "The holder of the lease."), AGE], _lease_row),
}


def wants_table(accept):
    return "as=Table" in (accept or "")


def table(plural, items, resource_version, age_of, continue_token=None):
    """A Table for ``items``; ``age_of(obj)`` gives an object's age in seconds."""
    columns, row_of = PRINTERS.get(plural, ([AGE], lambda obj, age: [age]))
    rows = []
    for obj in items:
        age = human_duration(age_of(obj))
        meta = obj["metadata"]
        rows.append({"cells": [meta["name"]] + row_of(obj, age),
                     "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}})
    meta = {"resourceVersion": resource_version}
    if continue_token:
        meta["continue"] = continue_token
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": [NAME] + columns,
            "rows": rows}
