# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The few Kubernetes API calls the node modules make, answering plain dicts in the API's JSON form.

Objects are read as raw JSON (no model deserialisation): the pure layer reads camelCase dicts, and listing
hundreds of pods stays cheap. Reads and idempotent writes are retried with capped exponential backoff: a few times on
throttling (429) and server errors (5xx), and for up to ``UNREACHABLE_SECONDS`` while a server that answered before cannot be
reached at all; evictions are not, because what a refused eviction
means is the drain's decision (``drain.rules.eviction_answer``).
"""

from __future__ import annotations

import json
import math
import time
import traceback
from contextlib import contextmanager

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import describe_k8s_error, k8s_error_details
from ansible_collections.nodeops.rollout.plugins.module_utils.core.at_once import map_at_once
from ansible_collections.nodeops.rollout.plugins.module_utils.core.backoff import backoff_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.core.permissions import access_checks, access_report, access_unchecked, kube_refusal, refused

try:
    from kubernetes.client import (
        ApiClient, AppsV1Api, AuthorizationV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi, PolicyV1Api, StorageV1Api, VersionApi)
    from kubernetes.client.exceptions import ApiException
    from kubernetes.watch.watch import iter_resp_lines
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()

    class ApiException(Exception):  # pylint: disable=function-redefined
        """Stand-in so that ``except ApiException`` works where the kubernetes package is missing."""

        status = None
        body = None
        headers = None
else:
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None

try:
    import urllib3.exceptions
    TRANSPORT_ERRORS = (urllib3.exceptions.HTTPError, OSError)
except ImportError:
    TRANSPORT_ERRORS = (OSError,)

# an answer of the API server, or none (unreachable, timed out)
K8S_ERRORS = (ApiException,) + TRANSPORT_ERRORS

# Seconds before one API request is abandoned (connect, read).
REQUEST_TIMEOUT = (10, 60)
# pods per page when the cluster's pods are listed in pages (node_pods); kubectl's chunk size
PODS_PAGE = 500
# Attempts of a read or an idempotent write answered 429 or 5xx before its error is reported.
READ_ATTEMPTS = 5
# Seconds a read or an idempotent write keeps trying while the API server cannot be reached at all (connection refused
# or cut): a control-plane upgrade or failover takes tens of seconds, and a drain should ride it out, not stop.
UNREACHABLE_SECONDS = 90.0
RETRIED_STATUSES = (429, 500, 502, 503, 504)
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


def error_status(exc):
    """``(code, status dict, headers)`` of a client exception; code None when no HTTP answer came back."""
    if isinstance(exc, ApiException):
        body = exc.body
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        try:
            status = json.loads(body) if body else {}
        except ValueError:
            status = {"message": str(body)}
        if not isinstance(status, dict):
            status = {"message": str(status)}
        return (exc.status or None), status, dict(exc.headers or {})
    return None, {"message": str(exc)}, {}


def with_pool_size(api_client, size):
    """A client like ``api_client`` (same configuration and user agent) able to hold ``size`` connections.

    urllib3 keeps 10 connections by default; concurrent drains need one per thread, or it opens and drops
    connections (and logs a warning for each).
    """
    configuration = api_client.configuration
    if (configuration.connection_pool_maxsize or 0) >= size:
        return api_client
    configuration.connection_pool_maxsize = size
    resized = ApiClient(configuration=configuration)
    resized.user_agent = api_client.user_agent
    try:
        api_client.close()
    except Exception:  # pylint: disable=broad-except
        pass  # the old client has no open connection worth reporting
    return resized


# group, version and plural of the AWS Load Balancer Controller's TargetGroupBinding
TARGET_GROUP_BINDINGS = ("elbv2.k8s.aws", "v1beta1", "targetgroupbindings")


class KubeApi:
    """Thin JSON-in, JSON-out wrapper over the kubernetes client for nodes, pods, budgets, workloads, persistent volumes
    and leases."""

    def __init__(self, api_client, sleep=time.sleep, attempts=READ_ATTEMPTS, request_timeout=REQUEST_TIMEOUT,
                 unreachable_seconds=UNREACHABLE_SECONDS, clock=time.monotonic):
        self.client = api_client
        self.core = CoreV1Api(api_client)
        self.apps = AppsV1Api(api_client)
        self.policy = PolicyV1Api(api_client)
        self.coordination = CoordinationV1Api(api_client)
        self.storage = StorageV1Api(api_client)
        self.custom = CustomObjectsApi(api_client)
        self.authorization = AuthorizationV1Api(api_client)
        self.sleep = sleep
        self.attempts = attempts
        self.request_timeout = request_timeout
        self.unreachable_seconds = unreachable_seconds
        self.clock = clock
        self.reached = False   # whether the server ever answered: only then is a lost connection an outage to wait out

    def _raw(self, method, *args, **kwargs):
        response = method(*args, _preload_content=False, _request_timeout=self.request_timeout, **kwargs)
        self.reached = True
        data = response.data
        return json.loads(data) if data else {}

    def _call(self, method, *args, **kwargs):
        attempt = 0
        unreachable_since = None
        while True:
            try:
                return self._raw(method, *args, **kwargs)
            except ApiException as exc:
                self.reached = True
                attempt += 1
                if exc.status not in RETRIED_STATUSES or attempt >= self.attempts:
                    raise
            except TRANSPORT_ERRORS:
                # A server never reached is a wrong address or a dead cluster: a few attempts. One that answered before
                # and now cannot be reached is an outage: waited out for up to unreachable_seconds.
                attempt += 1
                now = self.clock()
                unreachable_since = now if unreachable_since is None else unreachable_since
                if (attempt >= self.attempts if not self.reached
                        else now - unreachable_since >= self.unreachable_seconds):
                    raise
            self.sleep(backoff_delay(attempt, base=0.5, cap=5.0))

    # ---- nodes ---------------------------------------------------------------------------------
    def get_node(self, name):
        return self._call(self.core.read_node, name)

    def patch_node(self, name, patch):
        """JSON merge patch; a ``metadata.resourceVersion`` in it makes a stale write fail with 409."""
        return self._call(self.core.patch_node, name, patch, _content_type=MERGE_PATCH)

    def delete_node(self, name):
        """Delete a Node object; True when deleted, False when it was already gone."""
        try:
            self._call(self.core.delete_node, name)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def list_nodes(self, label_selector=None):
        kwargs = {"label_selector": label_selector} if label_selector else {}
        return self._call(self.core.list_node, **kwargs).get("items") or []

    # ---- pods ----------------------------------------------------------------------------------
    def list_pods(self, node=None, namespace=None, label_selector=None, resource_version=None):
        """Pods of a node, a namespace or the cluster; ``resource_version="0"`` lets the server answer from its cache
        (as informers list) instead of a quorum read of etcd."""
        kwargs = {"resource_version": resource_version} if resource_version is not None else {}
        if node:
            kwargs["field_selector"] = "spec.nodeName=%s" % node
        if label_selector:
            kwargs["label_selector"] = label_selector
        if namespace:
            return self._call(self.core.list_namespaced_pod, namespace, **kwargs).get("items") or []
        return self._call(self.core.list_pod_for_all_namespaces, **kwargs).get("items") or []

    def list_node_pods(self, node, label_selector=None):
        """The node's pods and the list's ``resourceVersion``, from which a watch of them starts."""
        kwargs = {"field_selector": "spec.nodeName=%s" % node}
        if label_selector:
            kwargs["label_selector"] = label_selector
        answer = self._call(self.core.list_pod_for_all_namespaces, **kwargs)
        return answer.get("items") or [], (answer.get("metadata") or {}).get("resourceVersion")

    def list_pods_page(self, limit, token=None):
        """One page of the cluster's pods (``limit`` of them, from the ``continue`` ``token`` of the page before): the
        items and the list's metadata (``resourceVersion``, ``continue``, ``remainingItemCount``)."""
        kwargs = {"limit": limit}
        if token:
            kwargs["_continue"] = token
        answer = self._call(self.core.list_pod_for_all_namespaces, **kwargs)
        return answer.get("items") or [], answer.get("metadata") or {}

    def open_pod_watch(self, node, resource_version, timeout_seconds, label_selector=None):
        """Start a watch of the node's pods from ``resource_version`` (one request, which the server ends after
        ``timeout_seconds``); returns the open response, read with :func:`watch_events` and closed by the caller."""
        kwargs = {"field_selector": "spec.nodeName=%s" % node, "watch": True, "resource_version": resource_version,
                  "timeout_seconds": max(1, int(timeout_seconds)), "allow_watch_bookmarks": True}
        if label_selector:
            kwargs["label_selector"] = label_selector
        response = self.core.list_pod_for_all_namespaces(_preload_content=False,
                                                         _request_timeout=(self.request_timeout[0], timeout_seconds + 30), **kwargs)
        self.reached = True
        return response

    def evict_pod(self, namespace, name, uid=None, grace_period=None):
        """POST a policy/v1 Eviction (once; the caller decides about retries). Raises ApiException."""
        delete_options = {}
        if grace_period is not None:
            delete_options["gracePeriodSeconds"] = grace_period
        if uid:
            delete_options["preconditions"] = {"uid": uid}
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        if delete_options:
            body["deleteOptions"] = delete_options
        return self._raw(self.core.create_namespaced_pod_eviction, name, namespace, body)

    def delete_pod(self, namespace, name, uid=None, grace_period=None):
        """DELETE a pod (no budget consulted), guarded by its UID so a new pod of the same name is left alone."""
        body = {}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        if uid:
            body["preconditions"] = {"uid": uid}
        return self._raw(self.core.delete_namespaced_pod, name, namespace, body=body or None)

    # ---- budgets and workloads -------------------------------------------------------------------
    def list_pdbs(self, namespace=None):
        if namespace:
            return self._call(self.policy.list_namespaced_pod_disruption_budget, namespace).get("items") or []
        return self._call(self.policy.list_pod_disruption_budget_for_all_namespaces).get("items") or []

    def list_pdbs_versioned(self):
        """Every budget of the cluster and the list's ``resourceVersion``, from which a watch of them starts."""
        answer = self._call(self.policy.list_pod_disruption_budget_for_all_namespaces)
        return answer.get("items") or [], (answer.get("metadata") or {}).get("resourceVersion")

    def open_pdb_watch(self, resource_version, timeout_seconds):
        """Start a watch of every budget from ``resource_version``; the open response (see :meth:`open_pod_watch`)."""
        response = self.policy.list_pod_disruption_budget_for_all_namespaces(
            _preload_content=False, _request_timeout=(self.request_timeout[0], timeout_seconds + 30), watch=True,
            resource_version=resource_version, timeout_seconds=max(1, int(timeout_seconds)), allow_watch_bookmarks=True)
        self.reached = True
        return response

    def get_pdb(self, namespace, name):
        return self._call(self.policy.read_namespaced_pod_disruption_budget, name, namespace)

    def list_replicasets(self, namespace):
        return self._call(self.apps.list_namespaced_replica_set, namespace).get("items") or []

    def list_deployments(self, namespace):
        return self._call(self.apps.list_namespaced_deployment, namespace).get("items") or []

    def get_deployment(self, namespace, name):
        return self._call(self.apps.read_namespaced_deployment, name, namespace)

    def patch_deployment(self, namespace, name, patch):
        return self._call(self.apps.patch_namespaced_deployment, name, namespace, patch, _content_type=STRATEGIC_MERGE_PATCH)

    # ---- persistent volumes -------------------------------------------------------------------------
    def list_pvcs(self, namespace):
        return self._call(self.core.list_namespaced_persistent_volume_claim, namespace).get("items") or []

    def list_persistent_volumes(self):
        return self._call(self.core.list_persistent_volume).get("items") or []

    def list_volume_attachments(self):
        return self._call(self.storage.list_volume_attachment).get("items") or []

    # ---- load balancers ------------------------------------------------------------------------------
    def list_services(self):
        return self._call(self.core.list_service_for_all_namespaces).get("items") or []

    def list_target_group_bindings(self):
        """The AWS Load Balancer Controller's TargetGroupBindings, or None where the cluster does not serve them."""
        try:
            return self._call(self.custom.list_cluster_custom_object, TARGET_GROUP_BINDINGS[0], TARGET_GROUP_BINDINGS[1],
                              TARGET_GROUP_BINDINGS[2]).get("items") or []
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    # ---- events and the server's version ---------------------------------------------------------
    def create_event(self, namespace, body, request_timeout=None):
        """POST a core/v1 Event, once (what a refused Event means is the caller's: nodes' Events are best effort)."""
        response = self.core.create_namespaced_event(namespace, body, _preload_content=False,
                                                     _request_timeout=request_timeout or self.request_timeout)
        self.reached = True
        data = response.data
        return json.loads(data) if data else {}

    def server_version(self):
        """The API server's ``/version`` (``{"major", "minor", "gitVersion", ...}``)."""
        return self._call(VersionApi(self.client).get_code)

    # ---- what the identity may do --------------------------------------------------------------------
    def access_review(self, verb, group, resource, subresource=None, namespace=None):
        """Ask whether this client's identity may ``verb`` ``resource`` (``subresource``) of API ``group`` in ``namespace``
        (None: every namespace, or the cluster scope): a SelfSubjectAccessReview, what ``kubectl auth can-i`` sends. A
        create in name only: the server answers and stores nothing, so it is retried as a read. Its ``status``
        (``allowed``, ``denied``, ``reason``, ``evaluationError``)."""
        attributes = {"verb": verb, "group": group, "resource": resource}
        if subresource:
            attributes["subresource"] = subresource
        if namespace:
            attributes["namespace"] = namespace
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attributes}}
        return self._call(self.authorization.create_self_subject_access_review, body).get("status") or {}

    # ---- leases (the rollout lock) ----------------------------------------------------------------
    # Retrying the writes is safe: a create or update that succeeded before its answer was lost comes back as 409
    # (AlreadyExists, or Conflict on the resourceVersion it carried), and the caller reads the lease again.
    def get_lease(self, namespace, name):
        return self._call(self.coordination.read_namespaced_lease, name, namespace)

    def create_lease(self, namespace, body):
        return self._call(self.coordination.create_namespaced_lease, namespace, body)

    def replace_lease(self, namespace, name, body):
        """PUT the whole lease; the ``metadata.resourceVersion`` in ``body`` makes a stale write fail with 409."""
        return self._call(self.coordination.replace_namespaced_lease, name, namespace, body)


# ---------------------------------------------------------------------------------------------------------
# Watches and the pods of nodes
# ---------------------------------------------------------------------------------------------------------

def watch_events(response):
    """The events of an open watch (``{"type", "object"}``, objects as API JSON), until the server ends it."""
    for line in iter_resp_lines(response):
        if line.strip():
            yield json.loads(line)


def node_pods(api, names, label_selector=None, workers=1):
    """The pods of each node of ``names``, in as few requests as it takes: ``({name: [pods]}, {name: resourceVersion})``.

    One list per node (field selector ``spec.nodeName``, ``workers`` at a time), or, for several nodes, the cluster's
    pods in pages of ``PODS_PAGE`` when that takes fewer requests: the first page says how many pods there are, and
    the pages are one snapshot, so every node has the first page's resourceVersion, from which a watch of it starts.
    A list filtered by node is, on an API server that does not serve it from its cache, a read of every pod of the
    cluster: a group of many nodes costs one such read instead of one per node. With a label selector (the server
    then does not count the pods left) or an expired snapshot (410), one list per node."""
    names = list(dict.fromkeys(names))
    if len(names) > 1 and not label_selector:
        found = _paged_node_pods(api, names)
        if found is not None:
            return found
    answers = map_at_once(lambda name: api.list_node_pods(name, label_selector=label_selector), names, workers)
    return ({name: answer[0] for name, answer in zip(names, answers)},
            {name: answer[1] for name, answer in zip(names, answers)})


def _paged_node_pods(api, names):
    """node_pods from pages of the cluster's pods, or None when that would take more requests than one per node."""
    items, meta = api.list_pods_page(PODS_PAGE)
    if meta.get("continue"):
        remaining = meta.get("remainingItemCount")
        pages = None if remaining is None else 1 + math.ceil(int(remaining) / PODS_PAGE)
        if pages is None or pages > len(names):
            return None
    version = meta.get("resourceVersion")
    found = {name: [] for name in names}
    while True:
        for pod in items:
            node = (pod.get("spec") or {}).get("nodeName")
            if node in found:
                found[node].append(pod)
        token = meta.get("continue")
        if not token:
            return found, {name: version for name in names}
        try:
            items, meta = api.list_pods_page(PODS_PAGE, token)
        except ApiException as exc:
            if exc.status == 410:   # the snapshot was compacted away while paging
                return None
            raise


# access reviews sent at once by check_access
ACCESS_WORKERS = 4


def check_access(api, lock_namespace="kube-system", event_namespace="default", workers=ACCESS_WORKERS):
    """What the identity of ``api`` may not do of what docs/rbac.yaml grants (``permissions.access_checks``): one
    SelfSubjectAccessReview per verb and resource, ``workers`` at once; ``permissions.access_report``'s result. An API
    server that does not answer access reviews (404, or 403 where even they are not allowed) gives ``checked`` false
    and ``why``, after that one request. Changes nothing."""
    checks = access_checks(lock_namespace, event_namespace)
    first = checks[0]
    try:
        answers = [api.access_review(first["verb"], first["group"], first["resource"], first["subresource"], first["namespace"])]
    except ApiException as exc:
        if exc.status not in (403, 404):
            raise
        return access_unchecked("the API server does not answer access reviews: %s" % describe_k8s_error(
            exc, "create", "selfsubjectaccessreviews.authorization.k8s.io"))
    answers += map_at_once(lambda check: api.access_review(check["verb"], check["group"], check["resource"],
                                                           check["subresource"], check["namespace"]), checks[1:], workers)
    return access_report(checks, answers)


@contextmanager
def kube_errors(verb, obj=None, params=None, detailed=False):
    """Turn a Kubernetes API error raised inside into a RolloutError whose message is describe_k8s_error's line.

    ``with kube_errors("evict", "pod default/web-1"): ...``: the text is written where the call is made. ``detailed``
    adds the error's details (``error``) and the traceback (``exception``) to the failed result.

    A request the API server's authorizer refused (403 Forbidden, "User ... cannot ...") is a
    ``permissions.PermissionRefused``: its message names the verb, resource, API group and namespace refused, the rule
    of docs/rbac.yaml that grants it and that nothing was changed, and the failed result carries them as ``permission``.
    """
    try:
        yield
    except K8S_ERRORS as exc:
        details = dict(error=k8s_error_details(exc), exception=traceback.format_exc()) if detailed else {}
        code, status, _headers = error_status(exc)
        permission = kube_refusal(code, status)
        if permission is not None:
            raise refused("%s %s" % (verb, obj) if obj else str(verb), permission, **details) from exc
        raise RolloutError(describe_k8s_error(exc, verb, obj, params), **details) from exc
