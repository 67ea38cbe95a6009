"""Kubernetes RBAC on the reference backend: objects applied as ``kubectl apply --server-side`` applies them, a
ServiceAccount's token from the TokenRequest API, and a kubeconfig that authenticates with it.

The sandbox's own parts and the tests' observer authenticate in the group ``system:masters``, which RBAC always
allows; a kubeconfig written here gives a client only what the roles bound to its ServiceAccount grant.
"""

import json
import os

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# what the collection documents an identity needs: applied by ``up --rbac``
DOCS_RBAC = os.path.join(ROOT, "docs", "rbac.yaml")
SERVICE_ACCOUNT = ("nodeops-rollout", "nodeops-rollout")   # namespace, name: docs/rbac.yaml's
FIELD_MANAGER = "sandbox-rbac"
TOKEN_SECONDS = 24 * 3600
# kinds the sandbox applies, with their plural and whether they live in a namespace
KINDS = {
    "Namespace": ("namespaces", False), "ServiceAccount": ("serviceaccounts", True),
    "ClusterRole": ("clusterroles", False), "ClusterRoleBinding": ("clusterrolebindings", False),
    "Role": ("roles", True), "RoleBinding": ("rolebindings", True),
    "CustomResourceDefinition": ("customresourcedefinitions", False),
}


class RbacError(RuntimeError):
    pass


def load(path_or_text):
    """The objects of a YAML file (or YAML text), every ``List`` flattened into its items, in order."""
    if os.path.exists(path_or_text):
        with open(path_or_text, encoding="utf-8") as fh:
            text = fh.read()
    else:
        text = path_or_text
    out = []

    def add(obj):
        if not obj:
            return
        if obj.get("kind") == "List" or (str(obj.get("kind", "")).endswith("List") and "items" in obj):
            for item in obj.get("items") or []:
                add(item)
        else:
            out.append(obj)
    for doc in yaml.safe_load_all(text):
        add(doc)
    return out


def object_path(obj):
    """The API path of an object: ``/apis/rbac.authorization.k8s.io/v1/clusterroles/nodeops-rollout``."""
    kind = obj.get("kind")
    if kind not in KINDS:
        raise RbacError("cannot apply a %s: the sandbox applies %s" % (kind, ", ".join(sorted(KINDS))))
    plural, namespaced = KINDS[kind]
    api_version = obj.get("apiVersion") or ""
    base = "/api/%s" % api_version if "/" not in api_version else "/apis/%s" % api_version
    meta = obj.get("metadata") or {}
    if namespaced:
        if not meta.get("namespace"):
            raise RbacError("%s %s has no metadata.namespace" % (kind, meta.get("name")))
        base += "/namespaces/%s" % meta["namespace"]
    return "%s/%s/%s" % (base, plural, meta["name"])


def apply(rest, objects):
    """Create or update each object with server-side apply (one PATCH each, the sandbox's field manager owning every
    field it sets: an item left out of a list the next time is removed); returns ``["Kind namespace/name", ...]``."""
    applied = []
    for obj in objects:
        rest.request("PATCH", object_path(obj), obj, params={"fieldManager": FIELD_MANAGER, "force": "true"},
                     content_type="application/apply-patch+yaml")
        meta = obj["metadata"]
        applied.append("%s %s" % (obj["kind"], "%s/%s" % (meta["namespace"], meta["name"]) if meta.get("namespace")
                                  else meta["name"]))
    return applied


def service_account_token(rest, namespace, name, seconds=TOKEN_SECONDS):
    """A bearer token of ServiceAccount ``namespace/name`` from the TokenRequest API (what ``kubectl create token`` asks)."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": int(seconds)}}
    answer = rest.request("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (namespace, name), body)
    token = (answer.get("status") or {}).get("token")
    if not token:
        raise RbacError("the TokenRequest of ServiceAccount %s/%s returned no token" % (namespace, name))
    return token


def kubeconfig(url, ca_file, token, user):
    """A kubeconfig (as a dict) of the API server at ``url`` for ``user`` authenticating with ``token``."""
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "sandbox", "preferences": {},
        "clusters": [{"name": "sandbox", "cluster": {"server": url, "certificate-authority": ca_file}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "sandbox", "context": {"cluster": "sandbox", "user": user}}],
    }


def write_kubeconfig(path, config):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(config, indent=2) + "\n")   # JSON is YAML: what every kubeconfig reader accepts
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


def service_account_kubeconfig(rest, url, ca_file, path, namespace=SERVICE_ACCOUNT[0], name=SERVICE_ACCOUNT[1],
                               seconds=TOKEN_SECONDS):
    """Mint a token of ServiceAccount ``namespace/name`` and write a kubeconfig using it to ``path``; returns ``path``."""
    token = service_account_token(rest, namespace, name, seconds)
    return write_kubeconfig(path, kubeconfig(url, ca_file, token, "system:serviceaccount:%s:%s" % (namespace, name)))
