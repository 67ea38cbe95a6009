"""API discovery documents, built from the store's resource table, in the legacy JSON form kubectl reads.

kubectl (1.27+) first asks for aggregated discovery (``application/json;g=apidiscovery.k8s.io;v=v2...``) and
falls back to these documents when the answer is plain ``application/json``; the official Python client
makes no discovery calls. ``pods/eviction`` is advertised as ``policy/v1 Eviction``: kubectl drain only
uses the Eviction API (and so honours PodDisruptionBudgets) when it finds exactly that.
"""

import json
import re

from .store import RESOURCES, api_version

GIT_VERSION = "v1.30.6"

VERSION = {"major": "1", "minor": "30", "gitVersion": GIT_VERSION, "gitCommit": "0000000000000000000000000000000000000000",
           "gitTreeState": "clean", "buildDate": "2024-10-22T20:00:00Z", "goVersion": "go1.22.8", "compiler": "gc",
           "platform": "linux/amd64"}

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
STATUS_VERBS = ["get", "patch", "update"]
CATEGORIES = {"pods": ["all"], "deployments": ["all"], "replicasets": ["all"], "daemonsets": ["all"],
              "statefulsets": ["all"]}
SINGULAR = {"poddisruptionbudgets": "poddisruptionbudget", "replicasets": "replicaset", "daemonsets": "daemonset",
            "statefulsets": "statefulset",
            "deployments": "deployment", "namespaces": "namespace", "nodes": "node", "pods": "pod", "events": "event",
            "leases": "lease", "persistentvolumes": "persistentvolume",
            "persistentvolumeclaims": "persistentvolumeclaim", "volumeattachments": "volumeattachment",
            "services": "service", "targetgroupbindings": "targetgroupbinding",
            "selfsubjectaccessreviews": "selfsubjectaccessreview", "serviceaccounts": "serviceaccount", "roles": "role",
            "rolebindings": "rolebinding", "clusterroles": "clusterrole", "clusterrolebindings": "clusterrolebinding"}
# resources with fewer verbs than ALL_VERBS
VERBS = {"namespaces": ["create", "delete", "get", "list", "patch", "update", "watch"], "selfsubjectaccessreviews": ["create"]}

# plural -> {subresource: (group, version, kind, verbs)}; group None means the parent's group/version
SUBRESOURCES = {
    "pods": {"status": (None, None, "Pod", STATUS_VERBS),
             "eviction": ("policy", "v1", "Eviction", ["create"]),
             "binding": (None, None, "Binding", ["create"])},
    "nodes": {"status": (None, None, "Node", STATUS_VERBS)},
    "services": {"status": (None, None, "Service", STATUS_VERBS)},
    "namespaces": {"status": (None, None, "Namespace", STATUS_VERBS)},
    "deployments": {"status": (None, None, "Deployment", STATUS_VERBS),
                    "scale": ("autoscaling", "v1", "Scale", STATUS_VERBS)},
    "replicasets": {"status": (None, None, "ReplicaSet", STATUS_VERBS),
                    "scale": ("autoscaling", "v1", "Scale", STATUS_VERBS)},
    "daemonsets": {"status": (None, None, "DaemonSet", STATUS_VERBS)},
    "statefulsets": {"status": (None, None, "StatefulSet", STATUS_VERBS),
                     "scale": ("autoscaling", "v1", "Scale", STATUS_VERBS)},
    "poddisruptionbudgets": {"status": (None, None, "PodDisruptionBudget", STATUS_VERBS)},
    "persistentvolumes": {"status": (None, None, "PersistentVolume", STATUS_VERBS)},
    "persistentvolumeclaims": {"status": (None, None, "PersistentVolumeClaim", STATUS_VERBS)},
    "volumeattachments": {"status": (None, None, "VolumeAttachment", STATUS_VERBS)},
}


def group_versions():
    """{(group, version)} served, in a stable order (core first)."""
    seen = []
    for res in RESOURCES.values():
        gv = (res.group, res.version)
        if gv not in seen:
            seen.append(gv)
    return sorted(seen, key=lambda gv: (gv[0] != "", gv[0], gv[1]))


def resource_list(group, version):
    """The APIResourceList for one group/version, or None when it is not served."""
    resources = []
    for res in sorted(RESOURCES.values(), key=lambda r: r.plural):
        if (res.group, res.version) != (group, version):
            continue
        entry = {"name": res.plural, "singularName": SINGULAR.get(res.plural, res.kind.lower()),
                 "namespaced": res.namespaced, "kind": res.kind, "verbs": list(VERBS.get(res.plural, ALL_VERBS))}
        if res.short_names:   # omitempty in APIResource: leases have none
            entry["shortNames"] = list(res.short_names)
        if res.plural in CATEGORIES:
            entry["categories"] = CATEGORIES[res.plural]
        resources.append(entry)
        for sub, (sgroup, sversion, skind, verbs) in sorted(SUBRESOURCES.get(res.plural, {}).items()):
            item = {"name": "%s/%s" % (res.plural, sub), "singularName": "", "namespaced": res.namespaced,
                    "kind": skind, "verbs": list(verbs)}
            if sgroup is not None:
                item["group"] = sgroup
                item["version"] = sversion
            resources.append(item)
    if not resources:
        return None
    gv = api_version(RESOURCES[resources[0]["name"]])
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def api_versions():
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]}


def api_group(group):
    versions = [v for g, v in group_versions() if g == group]
    if not versions:
        return None
    entries = [{"groupVersion": "%s/%s" % (group, v), "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list():
    groups = []
    for group, _version in group_versions():
        if group and all(g["name"] != group for g in groups):
            groups.append(api_group(group))
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _gv_path(group, version):
    return "api/%s" % version if not group else "apis/%s/%s" % (group, version)


def openapi_v3_paths():
    """``/openapi/v3``: where each group/version's document is."""
    return {"paths": {_gv_path(g, v): {"serverRelativeURL": "/openapi/v3/%s" % _gv_path(g, v)} for g, v in group_versions()}}


def openapi_v3(group, version):
    """A minimal OpenAPI v3 document for one group/version: the PATCH operation of every resource, marked with
    its group/version/kind and the ``fieldValidation`` parameter.

    kubectl (create/apply) downloads it to learn that the server validates fields itself; without it kubectl
    insists on client-side validation from ``/openapi/v2`` schemas. The request bodies list JSON and merge
    patches only, so ``kubectl apply`` computes its strategic merge patches from its built-in types."""
    paths = {}
    params = [{"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
              for name in ("dryRun", "fieldManager", "fieldValidation")]
    patch_types = ("application/json-patch+json", "application/merge-patch+json")
    body = {"content": {ctype: {"schema": {"type": "object"}} for ctype in patch_types}}
    for res in sorted(RESOURCES.values(), key=lambda r: r.plural):
        if (res.group, res.version) != (group, version):
            continue
        base = "/%s/%s%s" % (_gv_path(group, version), "namespaces/{namespace}/" if res.namespaced else "", res.plural)
        gvk = {"group": group, "version": version, "kind": res.kind}
        paths[base + "/{name}"] = {"patch": {"operationId": "patch%s" % res.kind, "x-kubernetes-action": "patch",
                                             "x-kubernetes-group-version-kind": gvk, "parameters": params,
                                             "requestBody": body, "responses": {"200": {"description": "OK"}}}}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": GIT_VERSION}, "paths": paths,
            "components": {"schemas": {}}}


_GIT_VERSION_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)([-+][0-9A-Za-z.+-]*)?$")


def version_document(git_version):
    """``/version`` of a control plane at ``git_version`` (``v1.29.4`` or ``v1.29.4-eks-036c24b``, as EKS reports
    it: ``minor`` then carries a ``+``). Raises ValueError on anything else."""
    match = _GIT_VERSION_RE.match(git_version or "") if isinstance(git_version, str) else None
    if not match:
        raise ValueError("control plane version %r is not allowed; use a gitVersion such as v1.29.4 or v1.29.4-eks-036c24b"
                         % (git_version,))
    minor = match.group(2) + ("+" if match.group(4) else "")
    return dict(VERSION, major=match.group(1), minor=minor, gitVersion=git_version)


def documents():
    """Every discovery path -> its JSON body (bytes), built once per server."""
    docs = {"/version": VERSION, "/api": api_versions(), "/apis": api_group_list(),
            "/api/v1": resource_list("", "v1"), "/openapi/v3": openapi_v3_paths()}
    for group, version in group_versions():
        docs["/openapi/v3/%s" % _gv_path(group, version)] = openapi_v3(group, version)
        if group:
            docs["/apis/%s" % group] = api_group(group)
            docs["/apis/%s/%s" % (group, version)] = resource_list(group, version)
    return {path: json.dumps(body, separators=(",", ":")).encode() for path, body in docs.items()}
