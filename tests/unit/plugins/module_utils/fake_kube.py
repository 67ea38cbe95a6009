# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A thin in-memory stand-in for ``kube_api.KubeApi``: the same methods, JSON dicts, ApiException errors.

Only what the node modules rely on is modelled: resourceVersion preconditions on node patches, pods leaving
a node some list calls after their eviction, scripted eviction answers, and a request log to check that
check mode sends nothing that changes the cluster.
"""

from __future__ import annotations

import copy
import json
import threading

from kubernetes.client.exceptions import ApiException

MUTATING = ("patch_node", "evict_pod", "delete_pod", "patch_deployment", "create_event")


def api_error(code, message="", reason=None, causes=None, headers=None):
    exc = ApiException(status=code, reason=reason or "Error")
    status = {"kind": "Status", "status": "Failure", "code": code, "message": message, "reason": reason or ""}
    if causes:
        status["details"] = {"causes": causes}
    exc.body = json.dumps(status).encode()
    exc.headers = headers or {}
    return exc


def pdb_429(name="web"):
    return api_error(429, "Cannot evict pod as it would violate the pod's disruption budget.", "TooManyRequests",
                     [{"reason": "DisruptionBudget", "message": "The disruption budget %s needs 2 healthy pods and has 2 currently" % name}])


def make_node(name, taints=None, unschedulable=False, labels=None, instance_id=None, az="us-east-1a", ready=True):
    spec = {"providerID": "aws:///%s/%s" % (az, instance_id or "i-" + name)}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "resourceVersion": "1", "labels": dict({"topology.kubernetes.io/zone": az}, **(labels or {}))},
            "spec": spec, "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def make_pod(name, node, namespace="shop", owner=("ReplicaSet", "web-rs"), labels=None, phase="Running", annotations=None,
             volumes=None, grace=None, priority=None):
    metadata = {"name": name, "namespace": namespace, "uid": "uid-%s-%s" % (namespace, name), "labels": labels or {}}
    if owner:
        metadata["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "controller": True}]
    if annotations:
        metadata["annotations"] = annotations
    spec = {"nodeName": node}
    if volumes:
        spec["volumes"] = volumes
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if priority:
        spec["priorityClassName"] = priority
    return {"metadata": metadata, "spec": spec,
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if phase == "Running" else "False"}]}}


def merge(target, patch):
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class FakeKube:
    """``linger``: how many list calls of its node an evicted or deleted pod survives (its grace period)."""

    def __init__(self, linger=1):
        self.lock = threading.RLock()
        self.nodes = {}
        self.pods = {}
        self.pdbs = []
        self.replicasets = []
        self.deployments = {}
        self.linger = linger
        self.eviction_script = {}     # pod key -> list of exceptions (or None for success), consumed in order
        self.terminating = {}         # pod key -> list calls left
        self.requests = []
        self.evictions = []           # (pod key, body-ish dict)
        self.before_patch = None      # callable(name) run before a node patch is applied (to race it)
        self.restart_moves = {}       # deployment key -> (old pod key, new pod dict): what its restart does
        self.restarting = set()       # deployments restarted (patched), whose move happens at the next list
        self.enforce_pdbs = False     # evictions consult status.disruptionsAllowed; a pod gone gives it back
        self.claims = []              # PersistentVolumeClaims
        self.volumes = []             # PersistentVolumes
        self.events = []              # core/v1 Events created
        self.event_error = None       # an exception every Event creation raises (an RBAC without events)

    # ---- setup ----
    def add_node(self, node):
        self.nodes[node["metadata"]["name"]] = node

    def add_pod(self, pod):
        self.pods["%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"])] = pod

    def _log(self, verb, target):
        with self.lock:
            self.requests.append((verb, target))

    def mutating(self):
        return [entry for entry in self.requests if entry[0] in MUTATING]

    # ---- events ----
    def create_event(self, namespace, body, request_timeout=None):  # pylint: disable=unused-argument
        self._log("create_event", "%s/%s" % (namespace, body["involvedObject"]["name"]))
        if self.event_error is not None:
            raise self.event_error
        with self.lock:
            self.events.append(copy.deepcopy(body))
        return body

    # ---- nodes ----
    def get_node(self, name):
        self._log("get_node", name)
        with self.lock:
            if name not in self.nodes:
                raise api_error(404, 'nodes "%s" not found' % name, "NotFound")
            return copy.deepcopy(self.nodes[name])

    def patch_node(self, name, patch):
        self._log("patch_node", name)
        if self.before_patch:
            self.before_patch(name)
        with self.lock:
            node = self.nodes.get(name)
            if node is None:
                raise api_error(404, 'nodes "%s" not found' % name, "NotFound")
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != node["metadata"]["resourceVersion"]:
                raise api_error(409, "Operation cannot be fulfilled on nodes \"%s\": the object has been modified" % name, "Conflict")
            patch = copy.deepcopy(patch)
            patch.get("metadata", {}).pop("resourceVersion", None)
            merge(node, patch)
            node["metadata"]["resourceVersion"] = str(int(node["metadata"]["resourceVersion"]) + 1)
            return copy.deepcopy(node)

    def foreign_write(self, name, fn):
        """Another client changes the node (bumps its resourceVersion)."""
        with self.lock:
            fn(self.nodes[name])
            self.nodes[name]["metadata"]["resourceVersion"] = str(int(self.nodes[name]["metadata"]["resourceVersion"]) + 1)

    def list_pvcs(self, namespace):
        self._log("list_pvcs", namespace)
        return copy.deepcopy([c for c in self.claims if c["metadata"].get("namespace") == namespace])

    def list_persistent_volumes(self):
        self._log("list_persistent_volumes", None)
        return copy.deepcopy(self.volumes)

    def list_nodes(self, label_selector=None):
        self._log("list_nodes", label_selector)
        with self.lock:
            nodes = list(self.nodes.values())
        if label_selector:
            key, value = label_selector.partition("=")[0::2]
            nodes = [n for n in nodes if (n["metadata"].get("labels") or {}).get(key) == value]
        return copy.deepcopy(nodes)

    # ---- pods ----
    def _tick(self, node):
        """One list call of ``node`` lets its terminating pods progress; restarts move their pod."""
        for key in list(self.terminating):
            pod = self.pods.get(key)
            if pod is None or pod["spec"].get("nodeName") != node:
                continue
            self.terminating[key] -= 1
            if self.terminating[key] <= 0:
                del self.terminating[key]
                budget = self._budget_of(pod) if self.enforce_pdbs else None
                if budget is not None:  # its replacement is Ready elsewhere: the budget allows one more
                    budget["status"]["disruptionsAllowed"] += 1
                del self.pods[key]
        for dep, (old_key, new_pod) in list(self.restart_moves.items()):
            if dep in self.restarting and old_key in self.pods and self.pods[old_key]["spec"].get("nodeName") == node:
                del self.pods[old_key]
                self.add_pod(new_pod)
                self.deployments[dep]["status"] = {"readyReplicas": 1}
                del self.restart_moves[dep]

    def list_pods(self, node=None, namespace=None, label_selector=None, resource_version=None):  # pylint: disable=unused-argument
        self._log("list_pods", node or namespace)
        with self.lock:
            if node:
                self._tick(node)
            pods = [p for p in self.pods.values() if (not node or p["spec"].get("nodeName") == node)
                    and (not namespace or p["metadata"]["namespace"] == namespace)]
            if label_selector:
                key, value = label_selector.partition("=")[0::2]
                pods = [p for p in pods if (p["metadata"].get("labels") or {}).get(key) == value]
            return copy.deepcopy(pods)

    def list_pods_page(self, limit, token=None):  # pylint: disable=unused-argument
        """Every pod in one page, with no resourceVersion (as list_node_pods)."""
        return self.list_pods(), {}

    def list_node_pods(self, node, label_selector=None):
        """No resourceVersion: the drain cannot watch this fake, and lists the node's pods every poll interval."""
        return self.list_pods(node=node, label_selector=label_selector), None

    def _budget_of(self, pod):
        labels = pod["metadata"].get("labels") or {}
        for budget in self.pdbs:
            wanted = budget["spec"]["selector"]["matchLabels"]
            if budget["metadata"]["namespace"] == pod["metadata"]["namespace"] and all(labels.get(k) == v for k, v in wanted.items()):
                return budget
        return None

    def _end(self, key):
        pod = self.pods[key]
        pod["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
        self.terminating[key] = self.linger

    def evict_pod(self, namespace, name, uid=None, grace_period=None):
        key = "%s/%s" % (namespace, name)
        self._log("evict_pod", key)
        with self.lock:
            script = self.eviction_script.get(key)
            if script:
                step = script.pop(0) if len(script) > 1 else script[0]
                if step is not None:
                    raise step
            if key not in self.pods:
                raise api_error(404, 'pods "%s" not found' % name, "NotFound")
            if uid and self.pods[key]["metadata"]["uid"] != uid:
                raise api_error(409, "Precondition failed: UID in precondition: %s" % uid, "Conflict")
            budget = self._budget_of(self.pods[key]) if self.enforce_pdbs else None
            if budget is not None:
                if budget["status"]["disruptionsAllowed"] <= 0:
                    raise pdb_429(budget["metadata"]["name"])
                budget["status"]["disruptionsAllowed"] -= 1
            self.evictions.append((key, {"grace_period": grace_period, "uid": uid}))
            self._end(key)
            return {"kind": "Status", "status": "Success", "code": 201}

    def delete_pod(self, namespace, name, uid=None, grace_period=None):
        key = "%s/%s" % (namespace, name)
        self._log("delete_pod", key)
        with self.lock:
            if key not in self.pods:
                raise api_error(404, 'pods "%s" not found' % name, "NotFound")
            if grace_period == 0:   # the API server removes the pod at once, confirmed or not
                del self.pods[key]
                self.terminating.pop(key, None)
                return {}
            self._end(key)
            return {}

    # ---- budgets and workloads ----
    def list_pdbs(self, namespace=None):
        self._log("list_pdbs", namespace)
        return copy.deepcopy(self.pdbs)

    def list_pdbs_versioned(self):
        """No resourceVersion: the drain cannot watch the budgets of this fake, and reads a budget every poll interval
        while it allows nothing."""
        return self.list_pdbs(), None

    def get_pdb(self, namespace, name):
        self._log("get_pdb", "%s/%s" % (namespace, name))
        for pdb in self.pdbs:
            if pdb["metadata"]["namespace"] == namespace and pdb["metadata"]["name"] == name:
                return copy.deepcopy(pdb)
        raise api_error(404, 'poddisruptionbudgets.policy "%s" not found' % name, "NotFound")

    def list_replicasets(self, namespace):
        self._log("list_replicasets", namespace)
        return copy.deepcopy([rs for rs in self.replicasets if rs["metadata"]["namespace"] == namespace])

    def list_deployments(self, namespace):
        self._log("list_deployments", namespace)
        return copy.deepcopy([d for d in self.deployments.values() if d["metadata"]["namespace"] == namespace])

    def get_deployment(self, namespace, name):
        self._log("get_deployment", "%s/%s" % (namespace, name))
        key = "%s/%s" % (namespace, name)
        if key not in self.deployments:
            raise api_error(404, 'deployments.apps "%s" not found' % name, "NotFound")
        return copy.deepcopy(self.deployments[key])

    def patch_deployment(self, namespace, name, patch):
        key = "%s/%s" % (namespace, name)
        self._log("patch_deployment", key)
        with self.lock:
            if key not in self.deployments:
                raise api_error(404, 'deployments.apps "%s" not found' % name, "NotFound")
            merge(self.deployments[key], patch)
            self.restarting.add(key)
            return copy.deepcopy(self.deployments[key])
