"""The reference backend: the real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, built from Go modules by :mod:`.build`) with kwok playing the kubelets, beside the same
moto-based AWS as the embedded backend. :class:`ReferenceKube` is what ``Sandbox(kube="reference")`` runs
in place of the embedded store, API server and controllers."""

import time

from . import rbac as rbac_mod
from .bridge import Bridge
from .control_plane import ControlPlane
from .observer import Observer, is_ready

CLIENT = "sandbox-reference"
# what the reference backend cannot do that the embedded one can, named in the error a caller gets
KUBE_FAULTS = ("k8s_429", "k8s_5xx", "k8s_down", "eviction_latency", "unreachable_nodes", "k8s_forbid")


class ReferenceKube:
    def __init__(self, state_dir, clock, events, instances_fn, cfg, rbac=False, startup_taints=None):
        self.state_dir = state_dir
        self.startup_taints = startup_taints
        self.rbac = rbac
        self.clock = clock
        self.events = events
        self.instances_fn = instances_fn
        self.cfg = cfg
        self.kubelet_version = None   # what the nodes report: the control plane's release, known once built
        self.plane = self.observer = self.bridge = None
        self.rest = None

    @property
    def url(self):
        return self.plane.url

    @property
    def port(self):
        return self.plane.port

    def kubeconfig(self):
        return self.plane.kubeconfig()

    def start(self):
        # imported here, so that ``python -m sandbox.reference.build`` runs a module not yet imported
        from .build import ensure, pins  # pylint: disable=import-outside-toplevel
        bin_dir = ensure()
        self.kubelet_version = pins()["k8s.io/kubernetes"]
        self.plane = ControlPlane(bin_dir, self.state_dir, self.clock.speed, self.cfg.node_ready_seconds,
                                  self.cfg.pod_start_seconds, self.cfg.pod_ready_seconds,
                                  self.cfg.pod_shutdown_seconds, rbac=self.rbac).start()
        self.rest = self.plane.rest(CLIENT)
        self.observer = Observer(self.plane.rest(CLIENT), self.plane.audit_log, self.events).start()
        self.bridge = Bridge(self.plane.rest("sandbox-bridge"), self.clock, self.instances_fn,
                             self.cfg.node_register_seconds, self.cfg.node_allocatable, self.kubelet_version,
                             self.events, startup_taints=self.startup_taints).start()
        self._wait_default_namespace()
        return self

    def _wait_default_namespace(self, timeout=60.0):
        """The API server creates the system namespaces itself; wait until 'default' exists."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.plane.check_alive()
            try:
                self.rest.get("/api/v1/namespaces/default")
                return
            except Exception:  # pylint: disable=broad-except
                time.sleep(0.2)
        raise RuntimeError("the reference API server never created the default namespace")

    # ---- RBAC ------------------------------------------------------------------------------------
    def apply_rbac(self, path_or_text=None):
        """Apply the RBAC objects of a file (docs/rbac.yaml by default) as ``kubectl apply --server-side`` would."""
        return rbac_mod.apply(self.rest, rbac_mod.load(path_or_text or rbac_mod.DOCS_RBAC))

    def service_account_kubeconfig(self, path, namespace=rbac_mod.SERVICE_ACCOUNT[0], name=rbac_mod.SERVICE_ACCOUNT[1]):
        """Write to ``path`` a kubeconfig authenticating as ServiceAccount ``namespace/name`` (a TokenRequest token)."""
        return rbac_mod.service_account_kubeconfig(self.rest, self.url, self.plane.paths["ca.crt"], path, namespace, name)

    def stop(self):
        for part in (self.bridge, self.observer):
            if part is not None:
                part.stop()
        if self.plane is not None:
            self.plane.stop()

    # ---- what the sandbox asks of a backend ------------------------------------------------------
    def ready_nodes(self):
        with self.observer.lock:
            return [n for n in self.observer.cache["nodes"].values() if is_ready(n)]

    def pods_settled(self):
        self.plane.check_alive()
        for dep in self.rest.get("/apis/apps/v1/deployments").get("items") or []:
            if (dep.get("status") or {}).get("readyReplicas", 0) < (dep.get("spec") or {}).get("replicas", 1):
                return False
        for sts in self.rest.get("/apis/apps/v1/statefulsets").get("items") or []:
            if (sts.get("status") or {}).get("readyReplicas", 0) < (sts.get("spec") or {}).get("replicas", 1):
                return False
        for ds in self.rest.get("/apis/apps/v1/daemonsets").get("items") or []:
            st = ds.get("status") or {}
            if st.get("desiredNumberScheduled") is None or st.get("numberReady", 0) < st["desiredNumberScheduled"]:
                return False
        return all(is_ready(p) for p in self.rest.get("/api/v1/pods").get("items") or []
                   if not p["metadata"].get("deletionTimestamp")
                   and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))

    def set_faults(self, spec):
        named = [k for k in KUBE_FAULTS if spec.get(k) not in (None, {}, 0, False)]
        if named:
            raise ValueError("the reference backend runs the real kube-apiserver, which takes no injected faults: %s; "
                             "use the embedded backend for them" % ", ".join(named))
        if spec.get("clear"):
            self.bridge.never_ready = False
        if spec.get("nodes_never_ready") is not None:
            self.bridge.never_ready = spec["nodes_never_ready"]
