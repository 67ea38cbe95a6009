"""The loop that runs every controller of the sandbox, the configuration and the fault switches.

One thread does all the work, as one process hosts kube-controller-manager, kube-scheduler and the
kubelets: it drains the store's watches (shared informers), dispatches each event to the controllers that
care (which only mark keys dirty or update small indexes), fires due timers (kubelet start/ready/kill
delays, node boot), then lets each controller sync what is dirty. Work per pass is proportional to what
changed. Controllers read the store's current objects (immutable snapshots, cheap dict look-ups) instead
of keeping their own copies, so they never act on a stale cache.
"""

import dataclasses
import heapq
import itertools
import threading
import time
import traceback

from ..store import controller_ref, is_ready
from .objects import deleting, key_of

PLURALS = ("nodes", "deployments", "replicasets", "daemonsets", "statefulsets", "poddisruptionbudgets", "pods",
           "persistentvolumes", "persistentvolumeclaims", "volumeattachments")


@dataclasses.dataclass
class ControllerConfig:
    """Delays are simulated seconds (the shared clock's); ``tick`` is wall seconds between polls.

    - node_register_seconds: an instance running this long gets its Node (the kubelet registering);
    - node_ready_seconds: a registered Node turns Ready this much later;
    - pod_start_seconds / pod_ready_seconds: a bound pod runs, then turns Ready (per-pod annotation
      ``sandbox.nodeops.io/ready-seconds``, a number or ``never``);
    - pod_shutdown_seconds: how long a pod takes to exit once deleted, capped by its grace period
      (annotation ``sandbox.nodeops.io/shutdown-seconds``);
    - volume_attach_seconds / volume_detach_seconds: a persistent volume is attached this long after a pod using it is
      bound to a node, and detached this long after the last such pod there is gone;
    - node_allocatable: capacity and allocatable of every new Node;
    - tick: wall seconds between instance polls (and the PDB status debounce);
    - resync_seconds: period of the full resync every controller does;
    - scheduler_backoff_seconds: the least time between two retries of unschedulable pods;
    - kubelet_version: what nodes report in status.nodeInfo;
    - record_events / event_ttl_seconds: write core/v1 Events (Scheduled, FailedScheduling, Killing,
      ScalingReplicaSet, ...) and expire them after this long.
    """

    node_register_seconds: float = 5.0
    node_ready_seconds: float = 10.0
    pod_start_seconds: float = 3.0
    pod_ready_seconds: float = 2.0
    pod_shutdown_seconds: float = 2.0
    volume_attach_seconds: float = 5.0
    volume_detach_seconds: float = 10.0
    node_allocatable: dict = dataclasses.field(default_factory=lambda: {"cpu": "2", "memory": "8Gi", "pods": "110"})
    tick: float = 0.05
    resync_seconds: float = 30.0
    scheduler_backoff_seconds: float = 1.0
    kubelet_version: str = "v1.30.4-eks-a737599"
    record_events: bool = True
    event_ttl_seconds: float = 3600.0

    def __post_init__(self):
        for name in ("node_register_seconds", "node_ready_seconds", "pod_start_seconds", "pod_ready_seconds",
                     "pod_shutdown_seconds", "volume_attach_seconds", "volume_detach_seconds", "resync_seconds",
                     "scheduler_backoff_seconds", "event_ttl_seconds"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError("ControllerConfig.%s must be a number of seconds >= 0, got %r" % (name, value))
        if self.resync_seconds <= 0:
            raise ValueError("ControllerConfig.resync_seconds must be > 0, got %r" % (self.resync_seconds,))
        if not isinstance(self.tick, (int, float)) or self.tick <= 0:
            raise ValueError("ControllerConfig.tick must be a number of wall seconds > 0, got %r" % (self.tick,))
        if not isinstance(self.node_allocatable, dict):
            raise ValueError("ControllerConfig.node_allocatable must be a dict like {'cpu': '2', 'memory': '8Gi', "
                             "'pods': '110'}, got %r" % (self.node_allocatable,))
        from .objects import allocatable  # pylint: disable=import-outside-toplevel
        allocatable(self.node_allocatable)  # raises ValueError naming the bad quantity


class Faults:
    """Fault switches the tests flip: ``set(nodes_never_ready=True)``, ``clear()``.

    ``nodes_never_ready``: True for every new node, or a dict of instance fields that selects the
    instances whose nodes never become Ready (e.g. ``{"image_id": "ami-bad"}``, a bad AMI). The switch
    is read when a node registers: a node registered while it was on stays NotReady after ``clear()``.
    """

    ALLOWED = ("nodes_never_ready",)

    def __init__(self):
        self._lock = threading.Lock()
        self._values = {}

    def set(self, **faults):
        for name, value in faults.items():
            if name not in self.ALLOWED:
                raise ValueError("unknown fault %r; allowed: %s" % (name, ", ".join(self.ALLOWED)))
            if not isinstance(value, (bool, dict)):
                raise ValueError("fault %s must be True/False or a dict of instance fields, got %r" % (name, value))
        with self._lock:
            self._values.update(faults)

    def clear(self, *names):
        with self._lock:
            if not names:
                self._values.clear()
            for name in names:
                self._values.pop(name, None)

    def get(self, name):
        with self._lock:
            return self._values.get(name)

    def node_never_ready(self, instance):
        value = self.get("nodes_never_ready")
        if isinstance(value, dict):
            return all(instance.get(k) == v for k, v in value.items())
        return bool(value)


class Controller:
    """A control loop: ``on_event`` marks work (cheap), ``sync`` does it; both run on the loop thread."""

    watches = ()
    client = "sandbox-controller"

    def __init__(self, ctl):
        self.ctl = ctl
        self.store = ctl.store
        self.clock = ctl.clock
        self.cfg = ctl.cfg

    def on_event(self, plural, etype, obj):
        pass

    def sync(self):
        """Do the pending work; True when anything was done."""
        return False

    def resync(self):
        """Periodic full pass (marks everything dirty)."""

    def idle(self):
        """True when this controller is waiting for nothing."""
        return True

    def sync_dirty(self):
        """Sync every (namespace, name) key in ``self.dirty`` once with ``self._sync_one``; one object's failure is
        logged and does not stop the others."""
        if not self.dirty:
            return False
        keys, self.dirty = self.dirty, set()
        for key in keys:
            try:
                self._sync_one(key)  # pylint: disable=no-member
            except Exception as exc:  # pylint: disable=broad-except
                self.ctl.error("%s %s/%s" % ((type(self).__name__,) + tuple(key)), exc)
        return True


class Index:
    """Indexes every controller shares, kept from the watch events (and from the controllers' own creates).

    - ``owned[plural][controller uid]`` -> keys of the pods / ReplicaSets whose controller is that uid;
    - ``dependents[owner uid]`` -> (plural, key) of every object naming that owner (garbage collector);
    - ``ready_since[pod uid]`` -> simulated time the pod was last seen turning Ready (minReadySeconds).
    """

    OWNED = ("pods", "replicasets")

    def __init__(self, clock):
        self.clock = clock
        self.owned = {p: {} for p in self.OWNED}
        self.dependents = {}
        self._refs = {}          # (plural, key) -> (controller uid, tuple of owner uids)
        self.ready_since = {}
        self.created_at = {}     # pod uid -> simulated time first seen
        self.initial = False

    def on_event(self, plural, etype, obj):
        if plural not in self.OWNED:
            return
        key = key_of(obj)
        if etype == "DELETED":
            self.forget(plural, key)
            if plural == "pods":
                uid = obj["metadata"]["uid"]
                self.ready_since.pop(uid, None)
                self.created_at.pop(uid, None)
            return
        self.add(plural, obj)
        if plural == "pods":
            uid = obj["metadata"]["uid"]
            self.created_at.setdefault(uid, float("-inf") if self.initial else self.clock.now())
            if is_ready(obj) and not deleting(obj):
                self.ready_since.setdefault(uid, float("-inf") if self.initial else self.clock.now())
            else:
                self.ready_since.pop(uid, None)

    def ready_since_of(self, pod):
        """Since when the Ready pod ``pod`` is Ready, as far as this index knows: the time it was seen turning Ready, or,
        when the store already shows it Ready but its watch event is not indexed yet (the index lags the store on a
        busy machine), now - so that minReadySeconds is counted from a time it was surely Ready, never from before."""
        return self.ready_since.setdefault(pod["metadata"]["uid"], self.clock.now())

    def add(self, plural, obj):
        key = key_of(obj)
        ref = controller_ref(obj)
        ctrl = ref.get("uid") if ref else None
        owners = tuple(r.get("uid") for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid"))
        old = self._refs.get((plural, key))
        if old == (ctrl, owners):
            return
        if old:
            self._unlink(plural, key, old)
        self._refs[(plural, key)] = (ctrl, owners)
        if ctrl:
            self.owned[plural].setdefault(ctrl, set()).add(key)
        for uid in owners:
            self.dependents.setdefault(uid, set()).add((plural, key))

    def forget(self, plural, key):
        old = self._refs.pop((plural, key), None)
        if old:
            self._unlink(plural, key, old)

    def _unlink(self, plural, key, refs):
        ctrl, owners = refs
        if ctrl and ctrl in self.owned[plural]:
            keys = self.owned[plural][ctrl]
            keys.discard(key)
            if not keys:
                del self.owned[plural][ctrl]
        for uid in owners:
            deps = self.dependents.get(uid)
            if deps is not None:
                deps.discard((plural, key))
                if not deps:
                    del self.dependents[uid]

    def owned_objects(self, store, plural, uid):
        """The current objects whose controller is ``uid`` (stale index entries are dropped)."""
        out = []
        for key in list(self.owned[plural].get(uid, ())):
            obj = store.try_get(plural, key[0], key[1])
            ref = controller_ref(obj) if obj is not None else None
            if ref is None or ref.get("uid") != uid:
                if obj is None:
                    self.forget(plural, key)
                continue
            out.append(obj)
        return out


class Runtime:
    """The loop, timers and dispatch; :class:`Controllers` builds it with the controllers.

    ``stats`` counts passes, events and timers, the loop thread's CPU seconds (``cpu_seconds``) and the
    wall seconds spent per controller (``seconds``), for benchmarks; ``errors`` lists any exception a
    controller raised (the loop goes on; tests assert it stays empty).
    """

    def __init__(self, store, clock, events, cfg):
        self.store = store
        self.clock = clock
        self.events = events
        self.cfg = cfg
        self.index = Index(clock)
        self.errors = []
        self.stats = {"passes": 0, "events": 0, "timers": 0, "busy_seconds": 0.0, "cpu_seconds": 0.0, "seconds": {}}
        self._controllers = []
        self._routes = {p: [] for p in PLURALS}
        self._timers = []
        self._seq = itertools.count()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._idle = threading.Event()
        self._idle_mark = (None, -1)   # (resourceVersion, poll count) of the last idle pass
        self._polls = 0
        self._thread = None
        self._watchers = {}
        self._poll_fns = []
        self._next_poll = 0.0

    # ---- wiring --------------------------------------------------------------------------------
    def register(self, controller, poll=None):
        self._controllers.append(controller)
        for plural in controller.watches:
            self._routes[plural].append(controller)
        if poll is not None:
            self._poll_fns.append(poll)
        return controller

    def call_at(self, sim_time, fn, *args):
        """Run ``fn(*args)`` on the loop thread once the simulated clock reaches ``sim_time``."""
        heapq.heappush(self._timers, (sim_time, next(self._seq), fn, args))

    def call_after(self, sim_seconds, fn, *args):
        self.call_at(self.clock.now() + max(0.0, sim_seconds), fn, *args)

    def _notify(self):
        if not self._wake.is_set():
            self._wake.set()

    def poke(self):
        """Ask for another pass right away (work left over on purpose)."""
        self._wake.set()

    def request_poll(self):
        self._next_poll = 0.0
        self._wake.set()

    def error(self, where, exc):
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        if len(self.errors) < 200:
            self.errors.append({"where": where, "error": repr(exc), "traceback": text})
        self.events.emit("controller.error", where=where, error=repr(exc))

    # ---- lifecycle ----------------------------------------------------------------------------
    def start(self):
        if self._thread is not None:
            raise RuntimeError("controllers already started")
        self._stopping.clear()
        for plural in PLURALS:
            self._watchers[plural] = self.store.watch(plural, since="0", notify=self._notify)
        self._thread = threading.Thread(target=self._run, name="sandbox-controllers", daemon=True)
        self._thread.start()

    def stop(self, timeout=10.0):
        if self._thread is None:
            return
        self._stopping.set()
        self._wake.set()
        self._thread.join(timeout)
        for watcher in self._watchers.values():
            watcher.close()
        self._watchers = {}
        self._thread = None

    def wait_idle(self, timeout):
        """Wait up to ``timeout`` wall seconds for a pass that found nothing to do and nothing pending.

        True when every pod is scheduled and Ready, none is terminating, every running instance has its
        node, and no controller has work left; False on timeout. The idle pass must have polled the
        instances after this call, so instances launched just before it are waited for."""
        deadline = time.monotonic() + timeout
        polls = self._polls
        while True:
            rv, polled = self._idle_mark
            if self._idle.is_set() and not self._wake.is_set() and polled > polls and rv == self.store.resource_version:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, self.cfg.tick / 2))

    # ---- the loop --------------------------------------------------------------------------------
    def _run(self):
        self.index.initial = True
        self._guard("initial list", self._drain)
        self.index.initial = False
        self.call_after(self.cfg.resync_seconds, self._resync)
        while not self._stopping.is_set():
            try:
                self._pass()
            except Exception as exc:  # pylint: disable=broad-except
                self.error("loop", exc)      # logged; the control plane keeps running
                self._idle.clear()
                time.sleep(self.cfg.tick)

    def _pass(self):
        self._wake.clear()
        rv = self.store.resource_version
        spent = self.stats["seconds"]
        started = time.monotonic()
        work = self._drain() > 0
        began = time.monotonic()
        spent["drain"] = spent.get("drain", 0.0) + began - started
        if started >= self._next_poll:
            self._next_poll = started + self.cfg.tick
            self._polls += 1
            for fn in self._poll_fns:
                work |= bool(self._guard(fn.__qualname__, fn))
        polled = time.monotonic()
        spent["poll"] = spent.get("poll", 0.0) + polled - began
        work |= self._fire_timers()
        spent["timers"] = spent.get("timers", 0.0) + time.monotonic() - polled
        for c in self._controllers:
            began = time.monotonic()
            work |= bool(self._guard(type(c).__name__ + ".sync", c.sync))
            spent[type(c).__name__] = spent.get(type(c).__name__, 0.0) + time.monotonic() - began
        self.stats["passes"] += 1
        if work:
            self.stats["busy_seconds"] += time.monotonic() - started
        self.stats["cpu_seconds"] = time.thread_time()
        if not work and all(c.idle() for c in self._controllers):
            self._idle_mark = (rv, self._polls)
            self._idle.set()
        else:
            self._idle.clear()
        self._wake.wait(self._wait_seconds())

    def _guard(self, where, fn, *args):
        try:
            return fn(*args)
        except Exception as exc:  # pylint: disable=broad-except
            self.error(where, exc)
            return False

    def _drain(self):
        count = 0
        for plural in PLURALS:
            watcher = self._watchers.get(plural)
            if watcher is None:
                continue
            routes = self._routes[plural]
            while True:
                item = watcher.next(0)
                if item is None:
                    break
                etype, obj = item
                count += 1
                try:
                    self.index.on_event(plural, etype, obj)
                except Exception as exc:  # pylint: disable=broad-except
                    self.error("Index.on_event", exc)
                for c in routes:
                    try:
                        c.on_event(plural, etype, obj)
                    except Exception as exc:  # pylint: disable=broad-except
                        self.error(type(c).__name__ + ".on_event", exc)
        self.stats["events"] += count
        return count

    def _fire_timers(self):
        now = self.clock.now()
        fired = False
        while self._timers and self._timers[0][0] <= now:
            fn, args = heapq.heappop(self._timers)[2:]
            fired = True
            self.stats["timers"] += 1
            self._guard(getattr(fn, "__qualname__", "timer"), fn, *args)
        return fired

    def _wait_seconds(self):
        wait = max(0.0, self._next_poll - time.monotonic()) if self._poll_fns else self.cfg.tick
        if self._timers:
            wait = min(wait, self.clock.wall_for(self._timers[0][0] - self.clock.now()))
        return max(0.0, min(wait, self.cfg.tick))

    def _resync(self):
        for c in self._controllers:
            self._guard(type(c).__name__ + ".resync", c.resync)
        self.call_after(self.cfg.resync_seconds, self._resync)
