"""The sandbox's control plane: the loops kube-controller-manager, kube-scheduler and the kubelets run,
acting on the object store directly, with every delay on the shared simulated clock.

Node lifecycle and pod GC (:mod:`.nodes`), scheduler (:mod:`.scheduler`), kubelets (:mod:`.kubelet`),
ReplicaSets (:mod:`.replicaset`), Deployments (:mod:`.deployment`), DaemonSets (:mod:`.daemonset`), StatefulSets (:mod:`.statefulset`),
PodDisruptionBudget status (:mod:`.budgets`), garbage collector (:mod:`.gc`), NoExecute taint eviction
(:mod:`.taints`), persistent volume binding and attachment (:mod:`.volumes`) and core/v1 Events (:mod:`.recorder`),
all on one loop (:mod:`.runtime`).

    from sandbox.kube.controllers import Controllers, ControllerConfig
    ctl = Controllers(store, clock, events, instances_fn, ControllerConfig(node_ready_seconds=10.0))
    ctl.start(); ...; ctl.stop()
    ctl.faults.set(nodes_never_ready=True); ctl.faults.clear()
    ctl.wait_idle(timeout)   # wall seconds; True once nothing is pending

``instances_fn()`` returns every EC2 instance as a dict (instance_id, state, az, private_dns_name,
private_ip, instance_type, image_id, launch_time, group, launch_template {id, version}); it is polled
every ``tick``. Every write names its controller as the client (``sandbox-scheduler``, ...), so the
request and event logs attribute it; ``ctl.errors`` lists any exception a controller hit.
"""

from .budgets import DisruptionController
from .daemonset import DaemonSetController
from .deployment import DeploymentController
from .gc import GarbageCollector
from .kubelet import Kubelet
from .nodes import NodeLifecycle
from .recorder import EventRecorder
from .replicaset import ReplicaSetController
from .runtime import ControllerConfig, Faults, Runtime
from .scheduler import Scheduler
from .statefulset import StatefulSetController
from .taints import TaintEviction
from .volumes import Volumes

__all__ = ["Controllers", "ControllerConfig", "Faults"]


class Controllers(Runtime):
    """Every controller on one loop thread (see :mod:`.runtime`)."""

    def __init__(self, store, clock, events, instances_fn, cfg=None, startup_taints=None):
        super().__init__(store, clock, events, cfg or ControllerConfig())
        self.instances_fn = instances_fn
        self.startup_taints = startup_taints   # sandbox.startup_taints.StartupTaints: what nodes register with
        self.faults = Faults()
        self.recorder = EventRecorder(self)
        # order matters within a pass: ReplicaSets refresh their status before Deployments read it
        self.nodes = NodeLifecycle(self)
        self.register(self.nodes, poll=self.nodes.poll)
        self.gc = self.register(GarbageCollector(self))
        self.taint_eviction = self.register(TaintEviction(self))
        self.replicasets = self.register(ReplicaSetController(self))
        self.deployments = self.register(DeploymentController(self))
        self.daemonsets = self.register(DaemonSetController(self))
        self.statefulsets = self.register(StatefulSetController(self))
        self.scheduler = self.register(Scheduler(self))
        self.volumes = self.register(Volumes(self))
        self.kubelet = self.register(Kubelet(self))
        self.disruption = self.register(DisruptionController(self))
