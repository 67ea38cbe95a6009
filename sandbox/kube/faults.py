"""Runtime fault injection for the sandbox's Kubernetes API server (``KubeApiServer.faults``)."""

import random
import threading
import time

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "evict")
FAULT_CODES = ("429", "500", "503")


class Faults:
    """Runtime fault injection; thread-safe and seeded so a scenario is reproducible.

    ``verb_rates`` maps a verb (one of :data:`VERBS`, or ``"*"`` for every verb) to ``{code: rate}`` with
    code in 429/500/503 and rate in [0, 1]. ``eviction_latency`` is extra simulated seconds every eviction
    waits before it is decided."""

    def __init__(self):
        self._lock = threading.Lock()
        self._rates = {}
        self._rng = random.Random()
        self.eviction_latency = 0.0
        self._down_until = 0.0
        self._forbidden = {}   # resource (plural) -> verbs answered 403 Forbidden, as an RBAC without them would

    def forbid(self, rules):
        """Answer 403 Forbidden to the verbs of resources an RBAC role would not grant: ``rules`` maps a resource's
        plural to a list of verbs (``["*"]``: all); an empty list grants it again."""
        if not isinstance(rules, dict):
            raise ValueError("k8s_forbid must be a dict of resource -> [verbs], got %r" % (rules,))
        checked = {}
        for resource, verbs in rules.items():
            if not isinstance(resource, str) or not resource:
                raise ValueError("k8s_forbid: resource %r is not allowed; use a resource's plural such as events" % (resource,))
            if not isinstance(verbs, list) or any(verb != "*" and verb not in VERBS for verb in verbs):
                raise ValueError("k8s_forbid[%r]: %r is not allowed; use a list of verbs among %s, or [\"*\"]"
                                 % (resource, verbs, ", ".join(VERBS)))
            checked[resource] = set(verbs)
        with self._lock:
            for resource, verbs in checked.items():
                if verbs:
                    self._forbidden[resource] = verbs
                else:
                    self._forbidden.pop(resource, None)

    def forbidden(self, resource, verb):
        """Whether ``verb`` on ``resource`` is refused (see :meth:`forbid`)."""
        with self._lock:
            verbs = self._forbidden.get(resource) or ()
            return "*" in verbs or verb in verbs

    def go_down(self, seconds):
        """The API server is unreachable for ``seconds`` wall seconds: every connection is cut, none accepted."""
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ValueError("down must be a number of wall seconds >= 0, got %r" % (seconds,))
        with self._lock:
            self._down_until = time.monotonic() + float(seconds)

    def is_down(self):
        with self._lock:
            return time.monotonic() < self._down_until

    def set(self, verb_rates=None, eviction_latency=None, seed=None):
        rates = None
        if verb_rates is not None:
            rates = {}
            if not isinstance(verb_rates, dict):
                raise ValueError("verb_rates must be a dict of verb -> {code: rate}, got %r" % (verb_rates,))
            for verb, codes in verb_rates.items():
                if verb != "*" and verb not in VERBS:
                    raise ValueError("verb_rates: unknown verb %r; allowed: %s, *" % (verb, ", ".join(VERBS)))
                if not isinstance(codes, dict):
                    raise ValueError("verb_rates[%r] must be a dict of code -> rate, got %r" % (verb, codes))
                rates[verb] = {}
                for code, rate in codes.items():
                    if str(code) not in FAULT_CODES:
                        raise ValueError("verb_rates[%r]: unknown code %r; allowed: %s" % (verb, code, ", ".join(FAULT_CODES)))
                    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
                        raise ValueError("verb_rates[%r][%r]: rate must be a number in [0, 1], got %r" % (verb, code, rate))
                    rates[verb][str(code)] = float(rate)
        if eviction_latency is not None and (isinstance(eviction_latency, bool) or not isinstance(eviction_latency, (int, float))
                                             or eviction_latency < 0):
            raise ValueError("eviction_latency must be a number of simulated seconds >= 0, got %r" % (eviction_latency,))
        with self._lock:
            if rates is not None:
                self._rates = rates
            if eviction_latency is not None:
                self.eviction_latency = float(eviction_latency)
            if seed is not None:
                self._rng.seed(seed)

    def rates(self):
        """A copy of the current ``verb_rates`` ({verb: {code: rate}})."""
        with self._lock:
            return {verb: dict(codes) for verb, codes in self._rates.items()}

    def clear(self):
        with self._lock:
            self._rates = {}
            self.eviction_latency = 0.0
            self._down_until = 0.0
            self._forbidden = {}

    def roll(self, verb):
        """The HTTP code (int) to fail this request with, or None."""
        with self._lock:
            if not self._rates:
                return None
            for key in (verb, "*"):
                for code, rate in sorted(self._rates.get(key, {}).items()):
                    if rate and self._rng.random() < rate:
                        return int(code)
        return None
