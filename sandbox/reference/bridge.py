"""EC2 to Kubernetes for the reference backend: what a node's kubelet registration and the AWS cloud
controller's node lifecycle do, through the real API server.

An instance ``running`` for ``node_register_seconds`` (simulated) gets its Node, the same object the
embedded backend registers (name = private DNS name, ``spec.providerID``, zone, instance type and EKS
labels, NotReady); kwok then plays its kubelet (Ready after ``node_ready_seconds``, leases, pods). An
instance shutting down, terminated or gone has its Node deleted; the pods still bound to it are removed
by kube-controller-manager's pod garbage collector, as on a real cluster. A Node deleted by someone else
while its instance runs stays gone (a running kubelet does not register again).
"""

import threading

from ..kube.controllers.nodes import node_object
from .rest import RestError
from .stages import NEVER_READY_NODE

CLIENT = "sandbox-bridge"


class Bridge:
    def __init__(self, rest, clock, instances_fn, register_seconds, allocatable, kubelet_version, events,
                 startup_taints=None):
        self.rest = rest
        self.startup_taints = startup_taints   # sandbox.startup_taints.StartupTaints: what nodes register with
        self.clock = clock
        self.instances_fn = instances_fn
        self.register_seconds = register_seconds
        self.allocatable = allocatable
        self.kubelet_version = kubelet_version
        self.events = events
        self.never_ready = False       # the nodes_never_ready fault: bool, or a dict an instance must match
        self.first_running = {}        # instance id -> simulated time first seen running
        self.registered = {}           # instance id -> node name
        self.stopping = threading.Event()
        self.waiting = 0

    def start(self):
        threading.Thread(target=self._loop, name="bridge", daemon=True).start()
        return self

    def stop(self):
        self.stopping.set()

    def _never_ready(self, inst):
        value = self.never_ready
        if isinstance(value, dict):
            return all(inst.get(k) == v for k, v in value.items())
        return bool(value)

    def _loop(self):
        while not self.stopping.wait(0.1):
            try:
                self.sync()
            except Exception as exc:  # pylint: disable=broad-except
                self.events.emit("controller.error", where="Bridge", error=repr(exc))

    def sync(self):
        now = self.clock.now()
        seen, waiting = set(), 0
        for inst in self.instances_fn():
            iid, state = inst.get("instance_id"), inst.get("state")
            if not iid:
                continue
            seen.add(iid)
            if state == "running":
                self.first_running.setdefault(iid, now)
                if iid in self.registered:
                    continue
                if now - self.first_running[iid] >= self.register_seconds and inst.get("private_dns_name"):
                    self._register(inst)
                else:
                    waiting += 1
            elif state == "pending":
                waiting += 1
            elif state in ("shutting-down", "terminated"):
                self._remove(iid)
        for iid in [i for i in self.registered if i not in seen]:
            self._remove(iid)
        for iid in [i for i in self.first_running if i not in seen]:
            del self.first_running[iid]
        self.waiting = waiting

    def _register(self, inst):
        name = inst["private_dns_name"]
        startup = self.startup_taints
        taints = startup.for_instance(inst) if startup is not None else []
        if taints is None:
            return False   # its kubelet does not start (a --register-with-taints it cannot read): no Node, ever
        node = node_object(inst, name, self.clock.timestamp(), self.allocatable, self.kubelet_version, taints)
        if self._never_ready(inst):
            node["metadata"]["annotations"][NEVER_READY_NODE] = "true"
        try:
            self.rest.request("POST", "/api/v1/nodes", node)
        except RestError as exc:
            if exc.code != 409:   # already there: registered before this bridge looked
                raise
            taints = []
        self.registered[inst["instance_id"]] = name
        if startup is not None:
            startup.registered(name, inst, taints)
        return True

    def _remove(self, iid):
        name = self.registered.pop(iid, None)
        self.first_running.pop(iid, None)
        if name is None:
            return
        try:
            self.rest.request("DELETE", "/api/v1/nodes/" + name)
        except RestError as exc:
            if exc.code != 404:
                raise
