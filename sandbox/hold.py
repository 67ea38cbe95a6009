"""Stop one request of a rollout in its tracks, so that a harness can kill the run at an exact point.

``Hold.arm(spec)`` waits for a request that matches, holds it (the request's thread blocks: nothing of it is applied
and no answer goes out), and reports it through ``status()``; the harness then kills the run and calls ``release()``,
after which the held request is answered 503 without being applied, as if the process had died just before sending it.
Each held request is written to the event log as ``hold.held``.

A spec, all keys optional except ``match``::

    {"match": {"api": "aws", "action": "CreateOrUpdateTags", "module": "instance_terminate"},
     "after": {"api": "aws", "action": "TerminateInstanceInAutoScalingGroup"}, "after_nth": 1, "nth": 1}

``match`` / ``after`` keys: ``api`` (aws | k8s), ``action`` (AWS), ``verb`` and ``resource`` (Kubernetes; verbs as
in the ``k8s.request`` events, ``evict`` for an eviction), ``module`` (the collection module in the User-Agent). Only
the collection's own requests count (User-Agent ``nodeops.rollout/<version> <module>``). The ``nth`` match counted
from the ``after_nth`` request that matches ``after`` (or from arming, without ``after``) is held; an empty
``match`` ({}) matches every request of the collection."""

import threading

KEYS = ("api", "action", "verb", "resource", "module")
PREFIX = "nodeops.rollout/"


def _check(spec, field):
    if not isinstance(spec, dict):
        raise ValueError("%s must be a dict with keys among %s, got %r" % (field, ", ".join(KEYS), spec))
    unknown = sorted(set(spec) - set(KEYS))
    if unknown:
        raise ValueError("%s: unknown key(s) %s; allowed: %s" % (field, ", ".join(unknown), ", ".join(KEYS)))
    if spec.get("api") not in (None, "aws", "k8s"):
        raise ValueError("%s.api must be aws or k8s, got %r" % (field, spec["api"]))
    return dict(spec)


def _count(spec, field):
    value = spec.get(field, 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("%s must be a whole number >= 1, got %r" % (field, value))
    return value


def _matches(pattern, request):
    return all(request.get(key) == value for key, value in pattern.items())


class Hold:
    """One armed hold at a time; thread-safe."""

    def __init__(self, events, wait_seconds=900.0):
        self._events = events
        self._wait_seconds = wait_seconds
        self._lock = threading.Lock()
        self._spec = None
        self._seen_after = 0
        self._seen = 0
        self._held = None
        self._released = threading.Event()

    def arm(self, spec):
        match = _check(spec.get("match", {}), "match")
        after = _check(spec["after"], "after") if spec.get("after") is not None else None
        armed = {"match": match, "after": after, "after_nth": _count(spec, "after_nth"), "nth": _count(spec, "nth")}
        with self._lock:
            if self._held is not None:
                raise ValueError("a request is held; release it before arming another hold")
            self._spec, self._seen_after, self._seen, self._held = armed, 0, 0, None
            self._released = threading.Event()
        return armed

    def status(self):
        with self._lock:
            return {"armed": self._spec is not None, "held": self._held, "seen": self._seen}

    def release(self):
        with self._lock:
            released, self._spec = self._held, None
            self._held = None
            self._released.set()
        return released

    def check(self, api, action=None, verb=None, resource=None, client=None):
        """Called by a server for each request before it is applied: False to serve it; True (after the hold is
        released) when the request was held and must be answered 503 without being applied."""
        client = client or ""
        if not client.startswith(PREFIX):
            return False
        request = {"api": api, "action": action, "verb": verb, "resource": resource,
                   "module": client.split(" ", 1)[1] if " " in client else None}
        with self._lock:
            spec = self._spec
            if spec is None or self._held is not None:
                return False
            if spec["after"] is not None and self._seen_after < spec["after_nth"]:
                if _matches(spec["after"], request):
                    self._seen_after += 1
                return False
            if not _matches(spec["match"], request):
                return False
            self._seen += 1
            if self._seen < spec["nth"]:
                return False
            self._held = {key: value for key, value in request.items() if value is not None}
            released = self._released
        self._events.emit("hold.held", **self._held)
        released.wait(self._wait_seconds)
        return True
