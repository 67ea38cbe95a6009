"""The sandbox's kube-apiserver: the real Kubernetes REST API over HTTP on 127.0.0.1, backed by :class:`Store`.

The official ``kubernetes`` Python client and kubectl work against it unmodified (discovery, list/get/
create/update/patch/delete, watch, the eviction, status, scale and binding subresources). Decisions that a
rollout's safety depends on follow kube-apiserver's own code paths: graceful pod deletion, the eviction
subresource's PodDisruptionBudget check (atomic under the store lock, so concurrent evictions can never
over-draw a budget), optimistic concurrency on resourceVersion, and Status bodies with the real reasons.

Every request is written to the event log as ``k8s.request`` with the client named from its User-Agent,
and faults (429/500/503 at chosen rates per verb, slow evictions) can be injected at runtime.

Usage::

    api = KubeApiServer(store, clock, events).start()
    api.url                      # http://127.0.0.1:<port>
    api.faults.set(verb_rates={"evict": {"429": 0.3}}, eviction_latency=2.0, seed=1)
    api.stop()
"""

import base64
import calendar
import http
import json
import re
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from . import disruption, discovery, eks_token, patch, tables, validation
from .errors import (NO_RBAC, ApiError, already_exists, bad_request, conflict, expired, internal_error, invalid,
                     method_not_allowed, not_found, rbac_not_served, route_not_found, service_unavailable, too_many_requests,
                     unauthorized, unsupported_media_type)
from .faults import Faults
from .selectors import FieldSelector, LabelSelector
from .store import RESOURCES, REVIEWS, api_version, copy_obj, is_ready

try:  # YAML request bodies (kubectl never sends them, other tools may)
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

MUTATING = frozenset(("create", "update", "patch", "delete", "deletecollection", "evict"))
SUBRESOURCES = {plural: set(subs) for plural, subs in discovery.SUBRESOURCES.items()}
HEALTH = ("/healthz", "/readyz", "/livez")
_OBJECT_EVENTS = ("ADDED", "MODIFIED", "DELETED")
MAX_DISRUPTED_PODS = 2000
EVICTION_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_PDBS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
_UA_RE = re.compile(r"nodeops\.rollout/\S+(?: [A-Za-z0-9_.\-]+)?")
_TRUE = ("true", "True", "1")


def client_of(user_agent):
    """The client name recorded for a request: ``nodeops.rollout/<v> <module>`` when present, else the UA's first token."""
    if not user_agent:
        return "unknown"
    match = _UA_RE.search(user_agent)
    if match:
        return match.group(0)
    return user_agent.split()[0]


def _dumps(body):
    return json.dumps(body, separators=(",", ":")).encode()


# ---- request plumbing ----------------------------------------------------------------------------
class _Request:
    """One parsed API request."""

    def __init__(self, handler):
        self.handler = handler
        self.method = handler.command
        parts = urlsplit(handler.path)
        self.path = parts.path.rstrip("/") or "/"
        self.raw_query = parse_qs(parts.query, keep_blank_values=True)
        self.query = {k: v[0] for k, v in self.raw_query.items()}
        self.headers = handler.headers
        self.client = client_of(handler.headers.get("User-Agent"))
        self.identity = None      # the access key that signed an EKS token (eks_token.access_key)
        self.content_type = (handler.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        self.body = b""
        self.verb = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(self.method, "get")
        self.resource = None      # plural or plural/sub
        self.res = None           # store.Resource
        self.namespace = None
        self.name = None
        self.sub = None
        self.watch_path = False
        self.dry_run = False
        self.injected = False

    def read_body(self):
        headers = self.headers
        if "chunked" in (headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            rfile = self.handler.rfile
            while True:
                size = int(rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    while rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(rfile.read(size))
                rfile.readline()
            self.body = b"".join(chunks)
        else:
            length = int(headers.get("Content-Length") or 0)
            self.body = self.handler.rfile.read(length) if length > 0 else b""

    def decode(self, expect_kind=None, allow_empty=False):
        """The request body as a JSON (or YAML) object."""
        if not self.body.strip():
            if allow_empty:
                return {}
            raise bad_request("the body of the request is empty")
        if self.content_type in ("application/yaml", "application/x-yaml", "text/yaml") and yaml is not None:
            try:
                data = yaml.safe_load(self.body)
            except yaml.YAMLError as exc:
                raise bad_request("error decoding YAML: %s" % exc) from exc
        else:
            try:
                data = json.loads(self.body)
            except ValueError as exc:
                what = expect_kind or "object"
                raise bad_request("the object provided is unrecognized (must be of type %s): couldn't get version/kind; "
                                  "json parse error: %s" % (what, exc)) from exc
        if not isinstance(data, dict):
            raise bad_request("the object provided is unrecognized (must be of type %s): cannot unmarshal %s into Go value"
                              % (expect_kind or "object", type(data).__name__))
        return data

    def flag(self, name):
        return self.query.get(name) in _TRUE

    def int_param(self, name):
        value = self.query.get(name)
        if value in (None, ""):
            return None
        try:
            return int(value)
        except ValueError as exc:
            raise bad_request('invalid value %r for query parameter "%s": must be an integer' % (value, name)) from exc


_OPTIONS_KIND = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions", "DELETE": "DeleteOptions"}


def _parse_dry_run(values, kind="DeleteOptions"):
    """``dryRun`` accepts only ``All`` (422 on the request's options object otherwise, as the real server)."""
    if values is not None and not isinstance(values, list):
        values = [values]
    for value in values or []:
        if value != "All":
            raise invalid(kind, "", [("dryRun", validation.unsupported(value, ("All",)))], "meta.k8s.io")
    return bool(values)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "kube-apiserver-sandbox"
    sys_version = ""

    def setup(self):
        super().setup()
        self.server.api._track(self.connection, True)  # pylint: disable=protected-access

    def handle(self):
        if self.server.api.faults.is_down():
            # unreachable: the connection is cut before a byte is read, as a dead endpoint or a dropped route does
            self.server.api._refuse(self.connection)  # pylint: disable=protected-access
            return
        super().handle()

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.api._track(self.connection, False)  # pylint: disable=protected-access

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass

    def _dispatch(self):
        self.server.api._handle(self)  # pylint: disable=protected-access

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _dispatch


class _HTTPServer(ThreadingHTTPServer):
    api = None
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True


_WATCH_STREAMING = object()


class KubeApiServer:
    """kube-apiserver stand-in over :class:`Store`. ``start()`` serves in a background thread."""

    def __init__(self, store, clock, events, host="127.0.0.1", port=0):
        self.store = store
        self.clock = clock
        self.events = events
        self.host = host
        self.port = port
        self.faults = Faults()
        self.hold = None                # a hold.Hold, set by the cluster: one request stopped for a kill
        self.bookmark_interval = 60.0   # wall seconds between BOOKMARK events on watches that allow them
        self.watch_timeout = 1800.0     # wall seconds a watch without timeoutSeconds stays open
        self._docs = discovery.documents()
        self._json_cache = {}           # (plural, namespace, name) -> (resourceVersion, serialized bytes)
        self._cache_limit = 65536
        self._httpd = None
        self._thread = None
        self._stopping = threading.Event()
        self._conns = set()
        self._conns_lock = threading.Lock()

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self):
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer((self.host, self.port), _Handler)
        self._httpd.api = self
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="kube-apiserver", daemon=True)
        self._thread.start()
        return self

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    def stop(self):
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(timeout=5)
        self._httpd = None

    def set_version(self, git_version):
        """Serve ``/version`` as a control plane at ``git_version`` does (``discovery.version_document``); an
        ``api.version`` event records it."""
        self._docs["/version"] = _dumps(discovery.version_document(git_version))
        self.events.emit("api.version", git_version=git_version)

    def go_down(self, seconds):
        """Unreachable for ``seconds`` wall seconds: open connections (watches, keep-alives) are cut at once and new
        ones are cut before their first request; an ``api.down`` event marks the start."""
        self.faults.go_down(seconds)
        self.events.emit("api.down", seconds=seconds)
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            self._refuse(conn)

    @staticmethod
    def _refuse(conn):
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _track(self, conn, add):
        with self._conns_lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    # ---- HTTP entry point ------------------------------------------------------------------------
    def _handle(self, handler):
        req = _Request(handler)
        code, payload, headers = 500, b"", ()
        try:
            req.read_body()
            self._authenticate(req)
            if req.path in HEALTH or any(req.path.startswith(h + "/") for h in HEALTH):
                self._record(req, 200)
                self._send(handler, 200, b"ok", content_type="text/plain; charset=utf-8")
                return
            result = self._serve(req)
            if result is _WATCH_STREAMING:
                return
            code, payload, headers = result
        except ApiError as err:
            code, payload = err.code, _dumps(err.status())
            headers = (("Retry-After", "1"),) if err.code == 429 and req.injected else ()
        except Exception as exc:  # pylint: disable=broad-except
            err = internal_error("%s: %s" % (type(exc).__name__, exc))
            code, payload = 500, _dumps(err.status())
        self._record(req, code)
        self._send(handler, code, payload, headers)

    def _authenticate(self, req):
        """No authenticator but for EKS tokens, whose shape is checked (a malformed one is refused as EKS refuses it)."""
        try:
            req.identity = eks_token.access_key(req.headers.get("Authorization"))
        except ValueError:
            raise unauthorized() from None

    def _record(self, req, code):
        fields = {"verb": req.verb, "resource": req.resource, "namespace": req.namespace, "name": req.name,
                  "client": req.client, "code": code,
                  "mutating": req.verb in MUTATING and not req.dry_run and req.resource is not None
                  and req.resource not in REVIEWS}
        if req.resource is None:
            fields["path"] = req.path
        if req.identity:
            fields["identity"] = req.identity
        if req.dry_run:
            fields["dry_run"] = True
        if req.injected:
            fields["injected"] = True
        self.events.emit("k8s.request", **fields)

    @staticmethod
    def _send(handler, code, payload, headers=(), content_type="application/json"):
        try:
            phrase = http.HTTPStatus(code).phrase
        except ValueError:
            phrase = ""
        head = ["HTTP/1.1 %d %s" % (code, phrase), "Content-Type: %s" % content_type,
                "Cache-Control: no-cache, private", "Content-Length: %d" % len(payload)]
        head.extend("%s: %s" % h for h in headers)
        if handler.close_connection:
            head.append("Connection: close")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        if handler.command != "HEAD":
            data += payload
        try:
            handler.wfile.write(data)
        except OSError:
            handler.close_connection = True

    # ---- routing -----------------------------------------------------------------------------
    def _serve(self, req):
        path = req.path
        if path in self._docs:
            if req.method not in ("GET", "HEAD"):
                raise method_not_allowed()
            return 200, self._docs[path], ()
        if path == "/openapi/v2" and req.method in ("GET", "HEAD"):
            # an empty OpenAPI v2 document (an empty protobuf message): kubectl validates a List (docs/rbac.yaml is one)
            # against /openapi/v2 alone, and finds no schema there, so the server's own validation (fieldValidation, in
            # /openapi/v3) is all, as for every other kind
            return 200, b"", ()
        if path == "/" or not (path.startswith("/api/") or path.startswith("/apis/")):
            raise route_not_found()
        self._route(req)
        if self.hold is not None and self.hold.check("k8s", verb=req.verb, resource=req.resource, client=req.client):
            raise service_unavailable()   # held for a kill, then released: never applied
        self._check_fault(req)
        return self._dispatch(req)

    def _route(self, req):
        segs = [s for s in req.path.split("/") if s]
        if segs[0] == "api":
            if len(segs) < 2 or segs[1] != "v1":
                raise route_not_found()
            group, version, rest = "", "v1", segs[2:]
        else:
            if len(segs) < 3:
                raise route_not_found()
            group, version, rest = segs[1], segs[2], segs[3:]
            if group == "rbac.authorization.k8s.io":
                raise rbac_not_served(req.method)
        if rest and rest[0] == "watch":
            req.watch_path = True
            rest = rest[1:]
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces" and not (group == "" and len(rest) == 3 and rest[2] in ("status", "finalize")):
            ns, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise route_not_found()
        plural = rest[0]
        res = RESOURCES.get(plural)
        if res is None or (res.group, res.version) != (group, version):
            raise route_not_found()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if (ns is not None and not res.namespaced) or (res.namespaced and name is not None and ns is None):
            raise route_not_found()
        if sub is not None and sub not in SUBRESOURCES.get(plural, ()):
            raise route_not_found()
        req.res, req.namespace, req.name, req.sub = res, ns, name, sub
        req.resource = plural if sub is None else "%s/%s" % (plural, sub)
        method = req.method
        if method in ("GET", "HEAD"):
            if sub in ("eviction", "binding"):
                raise method_not_allowed()
            req.verb = "get" if name else ("watch" if (req.watch_path or req.flag("watch")) else "list")
        elif method == "POST":
            if name is None and sub is None:
                if res.namespaced and ns is None:
                    raise method_not_allowed()
                req.verb = "create"
            elif sub == "eviction":
                req.verb = "evict"
            elif sub == "binding":
                req.verb = "create"
            else:
                raise method_not_allowed()
        elif method in ("PUT", "PATCH"):
            if name is None or sub in ("eviction", "binding"):
                raise method_not_allowed()
            req.verb = "update" if method == "PUT" else "patch"
        elif method == "DELETE":
            if name is not None and sub is None:
                req.verb = "delete"
            elif name is None and (ns is not None or not res.namespaced) and plural != "namespaces":
                req.verb = "deletecollection"
            else:
                raise method_not_allowed()
        else:
            raise method_not_allowed()
        if req.watch_path and req.verb not in ("list", "get", "watch"):
            raise method_not_allowed()
        if req.watch_path:
            req.verb = "watch"
        req.dry_run = _parse_dry_run(req.raw_query.get("dryRun"), _OPTIONS_KIND.get(method, "GetOptions"))

    def _check_fault(self, req):
        if req.resource is not None and self.faults.forbidden(req.resource, req.verb):
            req.injected = True
            where = " in the namespace \"%s\"" % req.namespace if req.namespace else " at the cluster scope"
            raise ApiError(403, "Forbidden", '%s is forbidden: User "sandbox-admin" cannot %s resource "%s" in API group "%s"%s'
                           % (req.resource, req.verb, req.resource, req.res.group if req.res else "", where),
                           {"kind": req.resource})
        code = self.faults.roll(req.verb)
        if code is None:
            return
        req.injected = True
        if code == 429:
            raise too_many_requests()
        if code == 500:
            raise internal_error("injected fault")
        raise service_unavailable()

    def _dispatch(self, req):
        verb, sub = req.verb, req.sub
        if verb == "watch":
            return self._watch(req)
        if verb == "list":
            return self._list(req)
        if verb == "get":
            obj = self.store.get(req.res.plural, req.namespace, req.name)
            if sub == "scale":
                return 200, _dumps(self._scale_of(obj)), ()
            if tables.wants_table(req.headers.get("Accept")):
                return 200, _dumps(tables.table(req.res.plural, [obj], obj["metadata"]["resourceVersion"], self._age)), ()
            return 200, self._ser(req.res.plural, obj), ()
        if verb == "evict":
            return self._evict(req)
        if verb == "create" and req.res.plural in REVIEWS:
            return self._review(req)
        if verb == "create":
            return self._bind(req) if sub == "binding" else self._create(req)
        if verb == "update":
            return self._update(req)
        if verb == "patch":
            return self._patch(req)
        if verb == "delete":
            return self._delete(req)
        return self._delete_collection(req)

    # ---- serialization -------------------------------------------------------------------------
    def _ser(self, plural, obj):
        """The JSON bytes of a stored object, serialized once per version (objects are immutable snapshots)."""
        meta = obj["metadata"]
        key = (plural, meta.get("namespace"), meta["name"])
        rv = meta.get("resourceVersion")
        hit = self._json_cache.get(key)
        if hit is not None and hit[0] == rv:
            return hit[1]
        data = _dumps(obj)
        if len(self._json_cache) > self._cache_limit:
            self._sweep_cache()
        self._json_cache[key] = (rv, data)
        return data

    def _sweep_cache(self):
        """Drop the serialized forms of versions that are no longer stored."""
        live = {}
        for key, (rv, data) in list(self._json_cache.items()):
            obj = self.store.try_get(key[0], key[1], key[2])
            if obj is not None and obj["metadata"].get("resourceVersion") == rv:
                live[key] = (rv, data)
        self._cache_limit = max(65536, 2 * len(live))
        self._json_cache = live

    # ---- reads ---------------------------------------------------------------------------------
    @staticmethod
    def _selectors(req):
        label = req.query.get("labelSelector") or None
        field = req.query.get("fieldSelector") or None
        parsed_label = LabelSelector.parse(label) if label else None
        parsed_field = FieldSelector.parse(field, req.res.plural) if field else None
        return parsed_label, parsed_field

    @staticmethod
    def _key(obj):
        return (obj["metadata"].get("namespace") or "", obj["metadata"]["name"])

    def _list(self, req):
        res = req.res
        label, field = self._selectors(req)
        limit = req.int_param("limit")
        token = req.query.get("continue")
        items, rv = self.store.list(res.plural, namespace=req.namespace, label_selector=label, field_selector=field)
        meta = {"resourceVersion": rv}
        if token:
            try:
                decoded = json.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
                start = (decoded["start"][0], decoded["start"][1])
                meta["resourceVersion"] = str(decoded["rv"])
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                raise bad_request("continue key is not valid: %s" % exc) from exc
            lo, hi = 0, len(items)
            while lo < hi:   # items are sorted by (namespace, name)
                mid = (lo + hi) // 2
                if self._key(items[mid]) <= start:
                    lo = mid + 1
                else:
                    hi = mid
            items = items[lo:]
        if limit is not None and 0 < limit < len(items):
            last = self._key(items[limit - 1])
            raw = json.dumps({"v": "meta.k8s.io/v1", "rv": int(meta["resourceVersion"]), "start": list(last)})
            meta["continue"] = base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")
            if label is None and field is None:
                meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        if tables.wants_table(req.headers.get("Accept")):
            return 200, _dumps(tables.table(res.plural, items, meta["resourceVersion"], self._age, meta.get("continue"))), ()
        head = _dumps({"kind": res.kind + "List", "apiVersion": api_version(res), "metadata": meta})
        plural = res.plural
        body = b"".join((head[:-1], b',"items":[', b",".join([self._ser(plural, o) for o in items]), b"]}"))
        return 200, body, ()

    def _watch(self, req):
        res, store = req.res, self.store
        label, field = self._selectors(req)
        if req.name:   # /watch/namespaces/ns/pods/name: one object
            name_sel = FieldSelector([("metadata.name", "=", req.name)])
            field = FieldSelector((field.requirements if field else []) + name_sel.requirements)
        rv = req.query.get("resourceVersion") or ""
        if rv and not rv.isdigit():
            raise bad_request("invalid resource version: %s" % rv)
        timeout = req.int_param("timeoutSeconds")
        timeout = float(timeout) if timeout and timeout > 0 else self.watch_timeout
        bookmarks = req.flag("allowWatchBookmarks")
        initial_end = bookmarks and req.flag("sendInitialEvents")
        handler = req.handler
        first = []
        error = None
        try:
            with store.lock:
                watcher = store.watch(res.plural, req.namespace, label, field, since=rv or "0")
                while True:
                    event = watcher.next(0)
                    if event is None:
                        break
                    first.append(event)
                start_rv = store.resource_version
        except ApiError as err:
            if err.code != 410:
                raise
            watcher, error = None, expired(err.message)
        self._record(req, 200)
        head = ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-cache, private\r\n"
                "Transfer-Encoding: chunked\r\n\r\n").encode()
        kind, gv, plural = res.kind, api_version(res), res.plural

        as_table = tables.wants_table(req.headers.get("Accept"))

        def encode(etype, obj):
            if etype not in _OBJECT_EVENTS:
                return _dumps(obj)
            if as_table:   # kubectl get -w: each event carries a one-row Table
                return _dumps(tables.table(plural, [obj], obj["metadata"]["resourceVersion"], self._age))
            return self._ser(plural, obj)

        def chunk(events):
            data = b"".join(b'{"type":"%s","object":%s}\n' % (t.encode(), encode(t, o)) for t, o in events)
            return b"%x\r\n%s\r\n" % (len(data), data)

        def bookmark(resource_version, annotations=None):
            meta = {"resourceVersion": resource_version}
            if annotations:
                meta["annotations"] = annotations
            return ("BOOKMARK", {"kind": kind, "apiVersion": gv, "metadata": meta})

        try:
            if watcher is None:
                handler.wfile.write(head + chunk([("ERROR", error.status())]) + b"0\r\n\r\n")
                return _WATCH_STREAMING
            out = list(first)
            if initial_end:
                out.append(bookmark(start_rv, {"k8s.io/initial-events-end": "true"}))
            handler.wfile.write(head + (chunk(out) if out else b""))
            deadline = time.monotonic() + timeout
            next_bookmark = time.monotonic() + self.bookmark_interval
            while not self._stopping.is_set():
                now = time.monotonic()
                if now >= deadline:
                    break
                event = watcher.next(min(0.25, deadline - now))
                if event is not None:
                    batch = [event]
                    while True:
                        more = watcher.next(0)
                        if more is None:
                            break
                        batch.append(more)
                    handler.wfile.write(chunk(batch))
                    continue
                if bookmarks and time.monotonic() >= next_bookmark:
                    with store.lock:
                        pending = watcher.next(0)
                        mark_rv = store.resource_version
                    batch = [pending] if pending is not None else [bookmark(mark_rv)]
                    handler.wfile.write(chunk(batch))
                    next_bookmark = time.monotonic() + self.bookmark_interval
                elif self._client_gone(handler.connection):
                    break
            handler.wfile.write(b"0\r\n\r\n")
        except OSError:
            handler.close_connection = True
        finally:
            if watcher is not None:
                watcher.close()
        return _WATCH_STREAMING

    @staticmethod
    def _client_gone(conn):
        try:
            readable = select.select([conn], [], [], 0)[0]
            if not readable:
                return False
            return conn.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    # ---- writes --------------------------------------------------------------------------------
    def _check_type(self, req, obj):
        res = req.res
        gv = api_version(res)
        given = obj.get("apiVersion")
        if given and given != gv:
            raise bad_request("the API version in the data (%s) does not match the expected API version (%s)" % (given, gv))
        kind = obj.get("kind")
        if kind and kind != res.kind:
            name = (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
            raise invalid(res.kind, name, [("kind", validation.invalid_value(kind, 'must be "%s" for %s' % (res.kind, req.path)))],
                          res.group)
        if not isinstance(obj.get("metadata", {}), dict):
            raise invalid(res.kind, None, [("metadata", validation.invalid_value(str(obj.get("metadata")), "must be an object"))],
                          res.group)

    @staticmethod
    def _check_decodes(req, obj):
        """400 for what the real server's decoder refuses (a Lease's renewTime without six fractional digits, ...)."""
        error = validation.decode_error(req.res.plural, obj)
        if error:
            kind = req.res.kind
            raise bad_request('%s in version "%s" cannot be handled as a %s: %s' % (kind, req.res.version, kind, error))

    def _match_namespace(self, req, meta):
        if not req.res.namespaced:
            meta.pop("namespace", None)
            return
        given = meta.get("namespace")
        if given and given != req.namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = req.namespace

    def _validate(self, req, obj, old=None):
        causes = validation.validate(req.res.plural, obj, old)
        if causes:
            raise invalid(req.res.kind, obj["metadata"].get("name") or obj["metadata"].get("generateName"), causes, req.res.group)

    def _review(self, req):
        """A SelfSubjectAccessReview answered as kube-apiserver with no authorizer but AlwaysAllow answers it - allowed -
        unless the sandbox's k8s_forbid fault refuses that verb on that resource (then as RBAC would: not allowed)."""
        obj = req.decode(req.res.kind)
        attrs = (obj.get("spec") or {}).get("resourceAttributes") or {}
        resource, verb = attrs.get("resource") or "", attrs.get("verb") or ""
        if attrs.get("subresource"):
            resource = "%s/%s" % (resource, attrs["subresource"])
            if attrs["subresource"] == "eviction" and verb == "create":
                verb = "evict"   # how this server names an eviction, in its request log and its faults
        refused = self.faults.forbidden(resource, verb)
        # allowed with the reason why: no authorizer, as kube-apiserver with AlwaysAllow would, but said plainly
        obj["status"] = {"allowed": not refused, "reason": NO_RBAC}
        if refused:
            obj["status"]["reason"] = "forbidden by the sandbox's k8s_forbid fault"
        obj.setdefault("metadata", {})["creationTimestamp"] = None
        return 201, _dumps(obj), ()

    def _create(self, req):
        res = req.res
        if req.content_type not in ("", "application/json", "application/yaml", "application/x-yaml", "text/yaml"):
            raise unsupported_media_type(("application/json", "application/yaml"))
        obj = req.decode(res.kind)
        self._check_type(req, obj)
        self._check_decodes(req, obj)
        meta = obj.setdefault("metadata", {})
        self._match_namespace(req, meta)
        if meta.get("resourceVersion"):
            raise internal_error("resourceVersion should not be set on objects to be created")
        for system in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
                       "managedFields", "selfLink"):
            meta.pop(system, None)
        validation.default(res.plural, obj, create=True)
        self._validate(req, obj)
        req.name = meta.get("name") or req.name
        if req.dry_run:
            with self.store.lock:
                ns = meta.get("namespace")
                if res.namespaced and res.plural != "events" and self.store.try_get("namespaces", None, ns) is None:
                    raise not_found("namespaces", ns)
                if meta.get("name") and self.store.try_get(res.plural, ns, meta["name"]) is not None:
                    raise already_exists(res.plural, meta["name"], res.group)
            obj["apiVersion"], obj["kind"] = api_version(res), res.kind
            if not meta.get("name"):
                meta["name"] = meta["generateName"] + "dryrn"
            meta["uid"] = "00000000-0000-0000-0000-000000000000"
            meta["creationTimestamp"] = self.clock.timestamp()
            return 201, _dumps(obj), ()
        created = self.store.create(res.plural, obj, client=req.client)
        req.name = created["metadata"]["name"]
        return 201, self._ser(res.plural, created), ()

    def _update(self, req):
        if req.content_type not in ("", "application/json", "application/yaml", "application/x-yaml", "text/yaml"):
            raise unsupported_media_type(("application/json", "application/yaml"))
        obj = req.decode(req.res.kind)
        if req.sub == "scale":
            return self._write_scale(req, lambda current: obj)
        self._check_type(req, obj)
        self._check_decodes(req, obj)
        meta = obj.setdefault("metadata", {})
        if meta.get("name") and meta["name"] != req.name:
            raise bad_request("the name of the object (%s) does not match the name on the URL (%s)" % (meta["name"], req.name))
        meta["name"] = req.name
        self._match_namespace(req, meta)
        with self.store.lock:
            old = self.store.get(req.res.plural, req.namespace, req.name)
            return self._write(req, old, obj)

    def _patch(self, req):
        ctype = req.content_type
        if ctype not in patch.PATCH_TYPES:
            raise unsupported_media_type(patch.PATCH_TYPES)
        try:
            body = json.loads(req.body or b"null")
        except ValueError as exc:
            raise bad_request("error decoding patch: %s" % exc) from exc
        if req.sub == "scale":
            return self._write_scale(req, lambda current: patch.apply(ctype, current, body, "scale"))
        with self.store.lock:
            old = self.store.get(req.res.plural, req.namespace, req.name)
            patched = patch.apply(ctype, copy_obj(old), body, req.res.plural)
            if not isinstance(patched, dict):
                raise invalid(req.res.kind, req.name, [("patch", validation.invalid_value(str(patched), "must be an object"))],
                              req.res.group)
            self._check_type(req, patched)
            self._check_decodes(req, patched)
            meta = patched.setdefault("metadata", {})
            if meta.get("name") != req.name:
                raise bad_request("the name of the object (%s) does not match the name on the URL (%s)" % (meta.get("name"), req.name))
            self._match_namespace(req, meta)
            return self._write(req, old, patched)

    def _write(self, req, old, obj):
        """Store ``obj`` as the new version of ``old`` (caller holds the store lock): status rules, defaults,
        validation, optimistic concurrency, then finalizer completion."""
        res = req.res
        meta = obj["metadata"]
        if meta.get("uid") and meta["uid"] != old["metadata"]["uid"]:
            raise conflict(res.plural, req.name, res.group, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                           % (meta["uid"], old["metadata"]["uid"]))
        if req.sub == "status":
            new = copy_obj(old)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            new["metadata"]["resourceVersion"] = meta.get("resourceVersion")
        else:
            new = obj
            if res.plural != "events":
                if "status" in old:
                    new["status"] = copy_obj(old["status"])
                else:
                    new.pop("status", None)
            if res.plural == "namespaces":
                new["spec"] = copy_obj(old.get("spec") or {})
        rv = new["metadata"].get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(res.plural, req.name, res.group)
        for system in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if system in old["metadata"]:
                new["metadata"][system] = old["metadata"][system]
            else:
                new["metadata"].pop(system, None)
        validation.default(res.plural, new, create=False)
        self._validate(req, new, old)
        if req.dry_run:
            return 200, _dumps(new), ()
        stored = self.store.replace(res.plural, new, client=req.client)
        meta = stored["metadata"]
        if "deletionTimestamp" in meta and not meta.get("finalizers") and not meta.get("deletionGracePeriodSeconds"):
            self.store.remove(res.plural, req.namespace, req.name, client=req.client,
                              cause={"how": "deleted", "client": req.client})
        return 200, self._ser(res.plural, stored), ()

    # ---- scale and binding ---------------------------------------------------------------------
    @staticmethod
    def _scale_of(obj):
        meta = obj["metadata"]
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": meta["name"], "namespace": meta.get("namespace"), "uid": meta["uid"],
                             "resourceVersion": meta["resourceVersion"], "creationTimestamp": meta.get("creationTimestamp")},
                "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
                "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                           "selector": validation.selector_string((obj.get("spec") or {}).get("selector"))}}

    def _write_scale(self, req, produce):
        res = req.res
        with self.store.lock:
            old = self.store.get(res.plural, req.namespace, req.name)
            current = self._scale_of(old)
            scale = produce(copy_obj(current))
            if not isinstance(scale, dict):
                raise bad_request("the object provided is unrecognized (must be of type Scale)")
            replicas = (scale.get("spec") or {}).get("replicas")
            if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
                raise invalid("Scale", req.name, [("spec.replicas", validation.invalid_value(
                    replicas, "must be greater than or equal to 0"))], "autoscaling")
            rv = (scale.get("metadata") or {}).get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise conflict(res.plural, req.name, res.group)
            if req.dry_run:
                current["spec"]["replicas"] = replicas
                return 200, _dumps(current), ()
            new = copy_obj(old)
            new["spec"]["replicas"] = replicas
            stored = self.store.replace(res.plural, new, client=req.client, check_rv=False)
            return 200, _dumps(self._scale_of(stored)), ()

    def _bind(self, req):
        body = req.decode("Binding")
        target = body.get("target") or {}
        node = target.get("name")
        if not node:
            raise invalid("Binding", req.name, [("target.name", validation.REQUIRED)])
        if (body.get("metadata") or {}).get("name") not in (None, req.name):
            raise bad_request("name in URL does not match name in Binding object")
        with self.store.lock:
            pod = self.store.get("pods", req.namespace, req.name)
            if "deletionTimestamp" in pod["metadata"]:
                raise conflict("pods/binding", req.name, "", "pod %s is being deleted, cannot be assigned to a host" % req.name)
            if pod.get("spec", {}).get("nodeName"):
                raise conflict("pods/binding", req.name, "", 'pod %s is already assigned to node "%s"'
                               % (req.name, pod["spec"]["nodeName"]))
            if not req.dry_run:
                def bind(new):
                    new["spec"]["nodeName"] = node
                    status = new.setdefault("status", {})
                    conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
                    conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                  "lastTransitionTime": self.clock.timestamp()})
                    status["conditions"] = conds
                self.store.mutate("pods", req.namespace, req.name, bind, client=req.client)
        return 201, _dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}), ()

    # ---- deletion ------------------------------------------------------------------------------
    def _delete_options(self, req, body=None):
        opts = dict(body if body is not None else req.decode("DeleteOptions", allow_empty=True))
        grace = req.int_param("gracePeriodSeconds")
        if grace is not None:
            opts["gracePeriodSeconds"] = grace
        if req.query.get("propagationPolicy"):
            opts["propagationPolicy"] = req.query["propagationPolicy"]
        if req.query.get("orphanDependents"):
            opts["orphanDependents"] = req.query["orphanDependents"] in _TRUE
        policy = opts.get("propagationPolicy")
        if policy is not None and policy not in ("Orphan", "Background", "Foreground"):
            raise invalid("DeleteOptions", "", [("propagationPolicy", validation.unsupported(policy, ("Foreground", "Background", "Orphan")))])
        grace = opts.get("gracePeriodSeconds")
        if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)):
            raise bad_request("gracePeriodSeconds must be an integer, got %r" % (grace,))
        if _parse_dry_run(opts.get("dryRun"), "DeleteOptions"):
            req.dry_run = True
        return opts

    @staticmethod
    def _check_preconditions(kind, obj, opts):
        pre = opts.get("preconditions") or {}
        meta = obj["metadata"]
        uid, rv = pre.get("uid"), pre.get("resourceVersion")
        if uid and uid != meta["uid"]:
            raise conflict(kind, meta["name"], "", "the UID in the precondition (%s) does not match the UID in record (%s). "
                           "The object might have been deleted and then recreated" % (uid, meta["uid"]))
        if rv and rv != meta["resourceVersion"]:
            raise conflict(kind, meta["name"], "", "the ResourceVersion in the precondition (%s) does not match the "
                           "ResourceVersion in record (%s). The object might have been modified" % (rv, meta["resourceVersion"]))

    def _delete(self, req):
        opts = self._delete_options(req)
        with self.store.lock:
            obj = self.store.get(req.res.plural, req.namespace, req.name)
            self._check_preconditions(req.res.kind, obj, opts)
            if req.res.plural == "pods":
                result = self._delete_pod(obj, opts, req.client, "deleted", req.dry_run)
            else:
                result = self._delete_other(req.res, obj, opts, req.client, req.dry_run)
        return 200, _dumps(result), ()

    def _delete_collection(self, req):
        opts = self._delete_options(req)
        label, field = self._selectors(req)
        items, rv = self.store.list(req.res.plural, namespace=req.namespace, label_selector=label, field_selector=field)
        out = []
        with self.store.lock:
            for obj in items:
                current = self.store.try_get(req.res.plural, obj["metadata"].get("namespace"), obj["metadata"]["name"])
                if current is None:
                    continue
                if req.res.plural == "pods":
                    out.append(self._delete_pod(current, opts, req.client, "deleted", req.dry_run))
                else:
                    self._delete_other(req.res, current, opts, req.client, req.dry_run)
                    out.append(current)
        body = {"kind": req.res.kind + "List", "apiVersion": api_version(req.res), "metadata": {"resourceVersion": rv},
                "items": out}
        return 200, _dumps(body), ()

    def _age(self, obj):
        created = obj["metadata"].get("creationTimestamp")
        return self.clock.now() - self._sim_of(created) if created else 0

    def _sim_of(self, timestamp):
        """Simulated seconds of an RFC 3339 timestamp written by the clock."""
        wall = calendar.timegm(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ"))
        return self.clock.now() - (time.time() - wall) * self.clock.speed

    def _delete_pod(self, pod, opts, client, how, dry_run, condition=None):
        """Graceful pod deletion as the pod registry does it (caller holds the store lock).

        Returns the pod as the API answers a DELETE: terminating (deletionTimestamp set) or the deleted one."""
        meta, spec = pod["metadata"], pod.get("spec") or {}
        ns, name = meta.get("namespace"), meta["name"]
        cause = {"how": how, "client": client}
        grace = opts.get("gracePeriodSeconds")
        if grace is not None and grace < 0:
            grace = 1
        if "deletionTimestamp" in meta:
            current = meta.get("deletionGracePeriodSeconds")
            if current:
                if grace is None or grace >= current:
                    return pod       # graceful deletion already pending; only a shorter period changes it
                if grace > 0:
                    start = self._sim_of(meta["deletionTimestamp"]) - current
                    if dry_run:
                        return pod

                    def shorten(new):
                        if condition is not None:
                            condition(new)
                        new["metadata"]["deletionTimestamp"] = self.clock.timestamp(start + grace)
                        new["metadata"]["deletionGracePeriodSeconds"] = grace
                    return self.store.mutate("pods", ns, name, shorten, client=client, cause=cause)
            grace = 0
        else:
            if grace is None:
                grace = spec.get("terminationGracePeriodSeconds")
                grace = 30 if grace is None else max(int(grace), 0)
            if not spec.get("nodeName") or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                grace = 0
        if dry_run:
            return pod
        if grace == 0:
            if condition is not None:   # the eviction's DisruptionTarget condition is written before the delete
                pod = self.store.mutate("pods", ns, name, condition, client=client, cause=cause) or pod
            if pod["metadata"].get("finalizers"):
                def mark(new):
                    new["metadata"].setdefault("deletionTimestamp", self.clock.timestamp())
                    new["metadata"]["deletionGracePeriodSeconds"] = 0
                return self.store.mutate("pods", ns, name, mark, client=client, cause=cause)
            return self.store.remove("pods", ns, name, client=client, cause=cause)

        def terminate(new):
            if condition is not None:
                condition(new)
            new["metadata"]["deletionTimestamp"] = self.clock.timestamp(self.clock.now() + grace)
            new["metadata"]["deletionGracePeriodSeconds"] = grace
        return self.store.mutate("pods", ns, name, terminate, client=client, cause=cause)

    def _delete_other(self, res, obj, opts, client, dry_run):
        meta = obj["metadata"]
        ns, name = meta.get("namespace"), meta["name"]
        status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                  "details": {"name": name, "group": res.group, "kind": res.plural, "uid": meta["uid"]}}
        if meta.get("finalizers"):
            if dry_run or "deletionTimestamp" in meta:
                return obj

            def mark(new):
                new["metadata"]["deletionTimestamp"] = self.clock.timestamp()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
            return self.store.mutate(res.plural, ns, name, mark, client=client)
        if dry_run:
            return status
        orphan = opts.get("propagationPolicy") == "Orphan" or (opts.get("propagationPolicy") is None and opts.get("orphanDependents"))
        if orphan:
            self._orphan_dependents(meta["uid"], ns, client)
        self.store.remove(res.plural, ns, name, client=client, cause={"how": "deleted", "client": client})
        return status

    def _orphan_dependents(self, uid, namespace, client):
        """propagationPolicy=Orphan: dependents lose their ownerReference to the deleted owner (what the
        garbage collector's orphan finalizer does) so that no cascading deletion follows."""
        for plural, res in RESOURCES.items():
            if not res.namespaced and namespace:
                continue
            items = self.store.list(plural, namespace=namespace)[0]
            for obj in items:
                refs = obj["metadata"].get("ownerReferences") or []
                if any(r.get("uid") == uid for r in refs):
                    def drop(new, refs=refs):
                        new["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]
                        if not new["metadata"]["ownerReferences"]:
                            del new["metadata"]["ownerReferences"]
                    self.store.mutate(plural, obj["metadata"].get("namespace"), obj["metadata"]["name"], drop, client=client)

    # ---- eviction ------------------------------------------------------------------------------
    def _evict(self, req):
        body = req.decode("Eviction")
        given = body.get("apiVersion")
        if given and given not in ("policy/v1", "policy/v1beta1"):
            raise bad_request("the API version in the data (%s) does not match the expected API version (policy/v1)" % given)
        if body.get("kind") not in (None, "", "Eviction"):
            raise bad_request("not a Eviction object: %s" % body.get("kind"))
        name = (body.get("metadata") or {}).get("name")
        if name != req.name:
            raise bad_request("name in URL does not match name in Eviction object")
        options = body.get("deleteOptions") or {}
        if not isinstance(options, dict):
            raise bad_request("deleteOptions must be an object")
        query_dry = req.raw_query.get("dryRun") or []
        body_dry = options.get("dryRun") or []
        if query_dry and body_dry and list(query_dry) != list(body_dry):
            raise internal_error("Non-matching dry-run options in request and content: %s and %s" % (query_dry, body_dry))
        opts = self._delete_options(req, options)
        latency = self.faults.eviction_latency
        if latency:
            self.clock.sleep(latency)
        with self.store.lock:
            return self._evict_locked(req, opts)

    def _evict_locked(self, req, opts):
        store, client, dry = self.store, req.client, req.dry_run
        pod = store.get("pods", req.namespace, req.name)
        self._check_preconditions("Pod", pod, opts)
        success = (201, _dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}), ())
        condition = None if dry else self._disruption_condition
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Pending", "Succeeded", "Failed") or "deletionTimestamp" in pod["metadata"]:
            self._delete_pod(pod, opts, client, "evicted", dry, condition)
            return success
        pdbs = disruption.pdbs_for_pod(store, pod)
        if len(pdbs) > 1:
            body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": MULTIPLE_PDBS, "code": 500}
            return 500, _dumps(body), ()
        if pdbs:
            pdb = pdbs[0]
            fresh = disruption.compute_status(store, pdb)
            spec = pdb.get("spec") or {}
            skip_budget = False
            if not is_ready(pod):
                if spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
                    skip_budget = True
                elif fresh["currentHealthy"] >= fresh["desiredHealthy"] and fresh["desiredHealthy"] > 0:
                    skip_budget = True
            if not skip_budget:
                self._check_and_decrement(pdb, fresh, pod, client, dry)
        self._delete_pod(pod, opts, client, "evicted", dry, condition)
        return success

    def _check_and_decrement(self, pdb, fresh, pod, client, dry):
        name = pdb["metadata"]["name"]
        allowed = fresh["disruptionsAllowed"]
        stored = pdb.get("status") or {}
        if len(stored.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
            raise ApiError(403, "Forbidden", 'poddisruptionbudgets.policy "%s" is forbidden: DisruptedPods map too big - too many '
                           "evictions not confirmed by PDB controller" % name,
                           {"name": name, "group": "policy", "kind": "poddisruptionbudget"})
        if allowed <= 0:
            message = "The disruption budget %s needs %d healthy pods and has %d currently" % (
                name, fresh["desiredHealthy"], fresh["currentHealthy"])
            raise ApiError(429, "TooManyRequests", EVICTION_MESSAGE,
                           {"causes": [{"reason": "DisruptionBudget", "message": message}]})
        if dry:
            return
        now = self.clock.timestamp()

        def decrement(new):
            status = new.setdefault("status", {})
            for key in ("currentHealthy", "desiredHealthy", "expectedPods"):
                status.setdefault(key, fresh[key])
            status["disruptionsAllowed"] = allowed - 1
            status.setdefault("disruptedPods", {})[pod["metadata"]["name"]] = now
            if allowed - 1 == 0:
                conds = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionAllowed"]
                previous = next((c for c in status.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None)
                changed = previous is None or previous.get("status") != "False"
                conds.append({"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods", "message": "",
                              "observedGeneration": status.get("observedGeneration", 0),
                              "lastTransitionTime": now if changed else previous.get("lastTransitionTime", now)})
                status["conditions"] = conds
        self.store.mutate("poddisruptionbudgets", pdb["metadata"]["namespace"], name, decrement, client=client)

    def _disruption_condition(self, new):
        status = new.setdefault("status", {})
        conds = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
        conds.append({"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                      "message": "Eviction API: evicting", "lastProbeTime": None,
                      "lastTransitionTime": self.clock.timestamp()})
        status["conditions"] = conds
