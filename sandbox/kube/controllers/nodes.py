"""Node lifecycle: what the kubelet's registration, the AWS cloud-node controllers, the node lifecycle
controller and the pod garbage collector do for nodes backed by EC2 instances.

- An instance ``running`` for ``node_register_seconds`` gets its Node (name = private DNS name,
  providerID ``aws:///<az>/<instance-id>``, the labels EKS puts on managed nodes), NotReady with the
  ``node.kubernetes.io/not-ready:NoSchedule`` taint, then Ready after ``node_ready_seconds`` (unless the
  ``nodes_never_ready`` fault selects it). Whenever Ready is not True the taint is there, as the node
  lifecycle controller keeps it (``unreachable`` instead when the kubelet stopped posting status).
- An instance that is ``stopped`` leaves its node with Ready Unknown; running again, it boots and becomes
  Ready again.
- A node made unreachable (:meth:`NodeLifecycle.lose_kubelet`: its instance runs, its kubelet stopped posting
  status) turns Ready Unknown ``NODE_MONITOR_GRACE`` seconds later, as the node lifecycle controller's
  node-monitor-grace-period has it, and stays so.
- Whenever a node's Ready turns Unknown its pods are marked not Ready (the node lifecycle controller's
  MarkPodsNotReady) and it is tainted ``node.kubernetes.io/unreachable`` NoSchedule and NoExecute (taint-based
  eviction then deletes its pods after their toleration; with no kubelet they stay terminating).
- An instance shutting down, terminated or gone takes its pods with it (removed at once, logged as
  killed/node-gone, terminating ones too) and then its Node.
- A Node deleted by someone else while its instance runs stays gone: a running kubelet does not register
  again (kubernetes/kubernetes#71398) until it restarts (the instance stopped and started). Pods left
  bound to a node that no longer exists are removed after 40 s as the pod GC does.
"""

import re
import threading

from ..errors import ApiError
from ..store import is_ready
from .objects import condition, set_condition, shallow, update
from .runtime import Controller

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
ORPHAN_QUARANTINE = 40.0
NODE_MONITOR_GRACE = 40.0
NOT_READY_MESSAGE = ("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                     "message:Network plugin returns error: cni plugin not initialized")
KILLED = {"how": "killed", "reason": "node-gone", "client": "sandbox-node-lifecycle"}
ORPHANED = {"how": "killed", "reason": "node-gone", "client": "sandbox-pod-gc"}


def provider_instance(provider_id):
    """The instance id in ``aws:///<az>/<instance-id>``, or None."""
    if not provider_id or not provider_id.startswith("aws://"):
        return None
    return provider_id.rstrip("/").rsplit("/", 1)[-1] or None


def region_of(az):
    return az[:-1] if az and az[-1].isalpha() else az


# the Kubernetes version in an EKS-optimized AMI's name (amazon-eks-node-1.29-v..., amazon-eks-node-al2023-x86_64-standard-
# 1.30-v..., bottlerocket-aws-k8s-1.29-...): the kubelet such an instance runs
_EKS_IMAGE = re.compile(r"^(?:amazon-eks-(?:[a-z0-9_]+-)*node-(?:[a-z0-9_]+-)*?|bottlerocket-aws-k8s-)(\d+)\.(\d+)-")


def kubelet_version(inst, default):
    """What the kubelet of ``inst`` reports: the version its AMI's ``sandbox.nodeops.io/kubelet-version`` tag says
    (``image_kubelet``: an image whose name says another version), else the one its EKS-optimized AMI's name says (the
    sandbox's own images, and any other, run ``default``)."""
    if inst.get("image_kubelet"):
        return inst["image_kubelet"]
    match = _EKS_IMAGE.match(inst.get("image_name") or "")
    if not match:
        return default
    wanted = (match.group(1), match.group(2))
    if re.match(r"^v%s\.%s\." % wanted, default or ""):
        return default
    return "v%s.%s.0-eks-sandbox" % wanted


def node_object(inst, name, ts, allocatable, version, startup_taints=()):
    """The Node a kubelet registers for EC2 instance ``inst`` (NotReady, with the not-ready taint and the
    ``startup_taints`` of ``--register-with-taints``: ``[{key, value?, effect}]``), as EKS labels it; its kubelet is at
    ``version`` unless its AMI's name says another (:func:`kubelet_version`)."""
    version = kubelet_version(inst, version)
    az = inst.get("az") or ""
    region = region_of(az)
    iid = inst["instance_id"]
    itype = inst.get("instance_type") or ""
    labels = {
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": az, "topology.kubernetes.io/region": region,
        "failure-domain.beta.kubernetes.io/zone": az, "failure-domain.beta.kubernetes.io/region": region,
        "node.kubernetes.io/instance-type": itype, "beta.kubernetes.io/instance-type": itype,
        "eks.amazonaws.com/capacityType": "ON_DEMAND",
        "eks.amazonaws.com/nodegroup-image": inst.get("image_id") or "",
    }
    if inst.get("group"):
        labels["eks.amazonaws.com/nodegroup"] = inst["group"]
    template = inst.get("launch_template") or {}
    if template.get("id"):
        labels["eks.amazonaws.com/sourceLaunchTemplateId"] = template["id"]
    if template.get("version") is not None:
        labels["eks.amazonaws.com/sourceLaunchTemplateVersion"] = str(template["version"])
    ip = inst.get("private_ip") or ""
    conditions = [
        {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": ts, "lastTransitionTime": ts,
         "reason": "KubeletHasSufficientMemory", "message": "kubelet has sufficient memory available"},
        {"type": "DiskPressure", "status": "False", "lastHeartbeatTime": ts, "lastTransitionTime": ts,
         "reason": "KubeletHasNoDiskPressure", "message": "kubelet has no disk pressure"},
        {"type": "PIDPressure", "status": "False", "lastHeartbeatTime": ts, "lastTransitionTime": ts,
         "reason": "KubeletHasSufficientPID", "message": "kubelet has sufficient PID available"},
        {"type": "Ready", "status": "False", "lastHeartbeatTime": ts, "lastTransitionTime": ts,
         "reason": "KubeletNotReady", "message": NOT_READY_MESSAGE},
    ]
    resources = dict(allocatable)
    return {
        "metadata": {"name": name, "labels": labels,
                     "annotations": {"alpha.kubernetes.io/provided-node-ip": ip,
                                     "node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"providerID": "aws:///%s/%s" % (az, iid),
                 "taints": [{"key": NOT_READY, "effect": "NoSchedule"}]
                 + [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in startup_taints]},
        "status": {
            "capacity": resources, "allocatable": dict(resources), "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "InternalDNS", "address": name},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": iid.replace("i-", "ec2"), "systemUUID": iid.replace("i-", "ec2"),
                         "bootID": iid, "kernelVersion": "6.1.102-111.182.amzn2023.x86_64",
                         "osImage": "Amazon Linux 2023.5.20240805", "containerRuntimeVersion": "containerd://1.7.20",
                         "kubeletVersion": version, "kubeProxyVersion": version,
                         "operatingSystem": "linux", "architecture": "amd64"},
        },
    }


class NodeLifecycle(Controller):
    watches = ("nodes",)
    client = "sandbox-node-lifecycle"

    def __init__(self, ctl):
        super().__init__(ctl)
        self.instances_fn = ctl.instances_fn
        self.first_running = {}   # instance id -> simulated time first seen running
        self.node_of = {}         # instance id -> node name
        self.instance_of = {}     # node name -> instance id
        self.booting = {}         # node name -> node uid, waiting for its Ready timer
        self.never_ready = set()  # node names the fault holds NotReady
        self.stopped = set()      # node names whose instance is stopped (kubelet down)
        self.lost = set()         # node names whose kubelet stopped posting status while the instance runs
        self._losses, self._losses_lock = [], threading.Lock()   # lose_kubelet's requests, for the loop
        self.deregistered = set()  # instance ids whose Node was deleted under a running kubelet
        self.orphan_checks = set()  # node names the pod GC will look at
        self.taint_dirty = set()
        self.waiting = 0          # instances pending or running but not registered yet
        self._last_listed = None  # the instances_fn() answer last looked at
        self._registering = False
        self._ip_counter = 0

    # ---- events -------------------------------------------------------------------------------------
    def on_event(self, plural, etype, obj):
        name = obj["metadata"]["name"]
        iid = provider_instance((obj.get("spec") or {}).get("providerID"))
        if etype == "DELETED":
            if iid and self.node_of.get(iid) == name:
                del self.node_of[iid]           # deleted by someone else: the kubelet will not come back
                self.deregistered.add(iid)
            self.instance_of.pop(name, None)
            self.booting.pop(name, None)
            self.taint_dirty.discard(name)
            if self.store.pods_on_node(name):
                self.watch_orphans(name)
            return
        if iid and iid not in self.node_of:
            self.node_of[iid] = name
            self.instance_of[name] = iid
        self.taint_dirty.add(name)

    def kubelet_alive(self, node_name):
        return (node_name not in self.stopped and node_name not in self.lost
                and self.store.try_get("nodes", None, node_name) is not None)

    def lose_kubelet(self, name):
        """The node's kubelet stops posting status (the instance runs on): after the grace period the node is Ready
        Unknown, its pods are not Ready, and nothing on it is started or confirmed gone any more. Called from any
        thread; the loop carries it out at its next poll."""
        if self.store.try_get("nodes", None, name) is None:
            raise ValueError("unreachable_nodes: %r is not a node of this sandbox" % (name,))
        with self._losses_lock:
            self._losses.append(name)
        self.ctl.request_poll()

    def _lose(self, name):
        self.lost.add(name)
        self.booting.pop(name, None)
        self.ctl.events.emit("fault.node_unreachable", node=name)
        self.ctl.call_after(NODE_MONITOR_GRACE, self._status_unknown, name)

    # ---- the AWS side ----------------------------------------------------------------------------------
    def poll(self):
        with self._losses_lock:
            losses, self._losses = self._losses, []
        for name in losses:
            self._lose(name)
        try:
            listed = self.instances_fn()
        except Exception as exc:  # pylint: disable=broad-except
            self.ctl.error("instances_fn", exc)
            return False
        if listed is self._last_listed and not self._registering:
            return False  # the same list as last time (nothing changed), and no registration falls due with time
        self._last_listed = listed
        instances = list(listed)
        now = self.clock.now()
        work, seen, waiting = False, set(), 0
        for inst in instances:
            iid, state = inst.get("instance_id"), inst.get("state")
            if not iid:
                continue
            seen.add(iid)
            name = self.node_of.get(iid)
            if state == "running":
                if iid not in self.first_running:
                    self.first_running[iid] = now
                    self.ctl.call_at(now + self.cfg.node_register_seconds, self.ctl.request_poll)
                if name is None and iid in self.deregistered:
                    pass
                elif name is None:
                    if now - self.first_running[iid] >= self.cfg.node_register_seconds:
                        work |= self._register(inst)
                    else:
                        waiting += 1
                elif name in self.stopped:
                    work |= self._boot_again(name)
            elif state == "pending":
                waiting += 1
            elif state in ("stopping", "stopped"):
                self.first_running.pop(iid, None)
                self.deregistered.discard(iid)   # the kubelet restarts with the instance
                if name is not None and name not in self.stopped:
                    work |= self._kubelet_down(name)
            else:  # shutting-down, terminated
                self.first_running.pop(iid, None)
                if name is not None:
                    work |= self._remove(name, iid)
        for iid in [i for i in self.node_of if i not in seen]:
            work |= self._remove(self.node_of[iid], iid)
        for iid in [i for i in self.first_running if i not in seen]:
            del self.first_running[iid]
        self.deregistered &= seen
        self.waiting = waiting
        # running instances without a Node yet: their registration falls due with the clock, not with a change
        self._registering = any(iid not in self.node_of and iid not in self.deregistered for iid in self.first_running)
        return work

    # ---- registration and readiness --------------------------------------------------------------------
    def _register(self, inst):
        name = inst.get("private_dns_name")
        iid = inst["instance_id"]
        if not name:
            return False
        existing = self.store.try_get("nodes", None, name)
        if existing is not None:
            self.node_of[iid] = name
            self.instance_of[name] = iid
            return False
        startup = self.ctl.startup_taints
        taints = startup.for_instance(inst) if startup is not None else []
        if taints is None:
            return False   # its kubelet does not start (a --register-with-taints it cannot read): no Node, ever
        node = node_object(inst, name, self.clock.timestamp(), self.cfg.node_allocatable, self.cfg.kubelet_version,
                           taints)
        created = self.store.create("nodes", node, client="sandbox-kubelet")
        self.node_of[iid] = name
        self.instance_of[name] = iid
        if startup is not None:
            startup.registered(name, inst, taints)
        if self.ctl.faults.node_never_ready(inst):
            self.never_ready.add(name)
        else:
            self.booting[name] = created["metadata"]["uid"]
            self.ctl.call_after(self.cfg.node_ready_seconds, self._ready, name, created["metadata"]["uid"])
        self.ctl.recorder.record(created, "RegisteredNode", "Node %s event: Registered Node %s in Controller" % (name, name),
                                 "node-controller")
        return True

    def _ready(self, name, uid):
        if self.booting.get(name) != uid:
            return
        del self.booting[name]
        if name in self.stopped:
            return
        ts = self.clock.timestamp()

        def post_ready(node):
            if node["metadata"]["uid"] != uid or is_ready(node):
                return None
            status = dict(node.get("status") or {})
            status["conditions"] = set_condition(status.get("conditions"), "Ready", "True", ts, "KubeletReady",
                                                 "kubelet is posting ready status", extra={"lastHeartbeatTime": ts})
            return shallow(node, status=status)
        node = update(self.store, "nodes", None, name, post_ready, "sandbox-kubelet")
        if node is not None:
            self.ctl.recorder.record(node, "NodeReady", "Node %s status is now: NodeReady" % name, "kubelet", host=name)

    def _kubelet_down(self, name):
        self.stopped.add(name)
        self.booting.pop(name, None)
        return self._status_unknown(name)

    def _status_unknown(self, name):
        """The node lifecycle controller's view of a node whose kubelet went silent: Ready Unknown, its pods not Ready."""
        ts = self.clock.timestamp()

        def unknown(node):
            status = dict(node.get("status") or {})
            status["conditions"] = set_condition(status.get("conditions"), "Ready", "Unknown", ts, "NodeStatusUnknown",
                                                 "Kubelet stopped posting node status.")
            return shallow(node, status=status)
        if update(self.store, "nodes", None, name, unknown, self.client) is None:
            return False

        def not_ready(pod):
            cond = condition(pod, "Ready")
            if pod["spec"].get("nodeName") != name or cond is None or cond.get("status") == "False":
                return None
            status = dict(pod.get("status") or {})
            status["conditions"] = set_condition(status.get("conditions"), "Ready", "False", ts)
            return shallow(pod, status=status)
        for pod in self.store.pods_on_node(name):
            update(self.store, "pods", pod["metadata"].get("namespace"), pod["metadata"]["name"], not_ready, self.client)
        return True

    def _boot_again(self, name):
        self.stopped.discard(name)
        node = self.store.try_get("nodes", None, name)
        if node is None or name in self.never_ready:
            return False
        uid = node["metadata"]["uid"]
        ts = self.clock.timestamp()

        def not_ready(current):
            status = dict(current.get("status") or {})
            status["conditions"] = set_condition(status.get("conditions"), "Ready", "False", ts, "KubeletNotReady",
                                                 NOT_READY_MESSAGE, extra={"lastHeartbeatTime": ts})
            return shallow(current, status=status)
        update(self.store, "nodes", None, name, not_ready, "sandbox-kubelet")
        self.booting[name] = uid
        self.ctl.call_after(self.cfg.node_ready_seconds, self._ready, name, uid)
        return True

    # ---- the not-ready / unreachable taints --------------------------------------------------------------
    def sync(self):
        if not self.taint_dirty:
            return False
        names, self.taint_dirty = self.taint_dirty, set()
        work = False
        for name in names:
            work |= update(self.store, "nodes", None, name, self._reconcile_taints, self.client) is not None
        return work

    @staticmethod
    def _reconcile_taints(node):
        cond = condition(node, "Ready")
        state = cond.get("status") if cond else "Unknown"
        want = None if state == "True" else (UNREACHABLE if state == "Unknown" and cond else NOT_READY)
        # NoSchedule for both; an unreachable node also NoExecute (taint-based eviction after the pods' toleration)
        effects = ("NoSchedule", "NoExecute") if want == UNREACHABLE else ("NoSchedule",)
        taints = list((node.get("spec") or {}).get("taints") or [])
        kept = [t for t in taints if not (t.get("key") in (NOT_READY, UNREACHABLE) and t.get("effect") in ("NoSchedule", "NoExecute"))
                or (t.get("key") == want and t.get("effect") in effects)]
        for effect in effects:
            if want and not any(t.get("key") == want and t.get("effect") == effect for t in kept):
                kept.append({"key": want, "effect": effect})
        if kept == taints:
            return None
        spec = dict(node.get("spec") or {})
        if kept:
            spec["taints"] = kept
        else:
            spec.pop("taints", None)
        return shallow(node, spec=spec)

    # ---- removal ----------------------------------------------------------------------------------------
    def _remove(self, name, iid):
        self.node_of.pop(iid, None)
        self.instance_of.pop(name, None)
        self.booting.pop(name, None)
        self.stopped.discard(name)
        self.never_ready.discard(name)
        node = self.store.try_get("nodes", None, name)
        if node is None or node.get("spec", {}).get("providerID", "").rsplit("/", 1)[-1] != iid:
            return False
        for pod in self.store.pods_on_node(name):
            self._kill(pod, KILLED)
        try:
            self.store.remove("nodes", None, name, client=self.client)
        except ApiError:
            pass
        return True

    def _kill(self, pod, cause):
        meta = pod["metadata"]
        with self.store.lock:
            current = self.store.try_get("pods", meta.get("namespace"), meta["name"])
            if current is None or current["metadata"]["uid"] != meta["uid"]:
                return
            self.store.remove("pods", meta.get("namespace"), meta["name"], client=cause["client"], cause=dict(cause))

    def watch_orphans(self, name):
        """Pods are bound to ``name`` but no such Node exists: the pod GC removes them after a quarantine."""
        if name not in self.orphan_checks:
            self.orphan_checks.add(name)
            self.ctl.call_after(ORPHAN_QUARANTINE, self._collect_orphans, name)

    def _collect_orphans(self, name):
        self.orphan_checks.discard(name)
        if self.store.try_get("nodes", None, name) is not None:
            return
        for pod in self.store.pods_on_node(name):
            self._kill(pod, ORPHANED)

    def idle(self):
        return self.waiting == 0 and not self.booting and not self.taint_dirty
