"""One sandbox: moto (with the fidelity layer) + the Kubernetes API server + the controllers, wired together.

Used in-process by benchmarks and by ``python -m sandbox serve`` (what ``up`` starts in the
background). Everything a client needs to reach it is written to the state directory:
``kubeconfig``, ``aws.env`` (source-able), ``sandbox.json`` (ports, pid, groups, AMIs, launch templates)
and ``events.jsonl`` (the event log the invariant report reads).
"""

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import report as report_mod
from . import startup_taints as startup_taints_mod
from .aws import AwsSandbox
from .clock import Clock
from .events import EventLog
from .hold import Hold
from .kube.controllers import ControllerConfig, Controllers
from .kube.server import KubeApiServer
from .kube.store import Store
from .loadbalancer import LoadBalancerController

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
SETUP_CLIENT = "sandbox-setup"
HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM_WORKLOAD = os.path.join(HERE, "workloads", "kube-system.yaml")
KUBE_BACKENDS = ("embedded", "reference")


class SandboxError(RuntimeError):
    pass


class Sandbox:
    """A running sandbox. ``start()`` returns once every node of every group is Ready."""

    def __init__(self, state_dir, nodes=6, azs=3, groups=1, speed=10.0, region="us-east-1",
                 boot_seconds=40.0, node_register_seconds=5.0, node_ready_seconds=10.0,
                 pod_start_seconds=3.0, pod_ready_seconds=2.0, pod_shutdown_seconds=2.0,
                 instance_type="m5.large", allocatable=None, kube="embedded", rbac=False, rbac_file=None,
                 iam=False, startup_taints=(), alertmanager=False, pushgateway=False):
        if nodes < 1:
            raise SandboxError("nodes must be at least 1, got %r" % (nodes,))
        if not 1 <= azs <= 6:
            raise SandboxError("azs must be between 1 and 6, got %r" % (azs,))
        if groups < 1:
            raise SandboxError("groups must be at least 1, got %r" % (groups,))
        if kube not in KUBE_BACKENDS:
            raise SandboxError("kube must be one of %s, got %r" % (", ".join(KUBE_BACKENDS), kube))
        if (rbac or rbac_file) and kube != "reference":
            raise SandboxError("rbac needs the reference backend (kube='reference'): the embedded API server has no "
                               "authorizer")
        self.kube = kube
        # the real Alertmanager of the alert gates (alertmanager.py), started with the sandbox when asked
        self.want_alertmanager = bool(alertmanager)
        self.alertmanager = None
        # the real Pushgateway the run's metrics may be pushed to (pushgateway.py)
        self.want_pushgateway = bool(pushgateway)
        self.pushgateway = None
        # startup taints every group's nodes register with once the sandbox is up (the nodes of its start have none)
        self.initial_startup_taints = startup_taints_mod.check_taints(list(startup_taints or ()), "startup_taints")
        self.startup_taints = None
        # RBAC enforced for the collection: the API server authorizes with Node,RBAC, the RBAC objects of rbac_file
        # (docs/rbac.yaml by default) are applied, and the collection's kubeconfig (collection_kubeconfig_path)
        # authenticates as their ServiceAccount; the sandbox's own clients keep system:masters
        self.rbac = bool(rbac or rbac_file)
        self.rbac_file = os.path.abspath(rbac_file) if rbac_file else None
        # AWS IAM enforced for the collection (aws/iam.py): its keys are an IAM user's with docs/iam-policy.json
        self.iam = bool(iam)
        self.collection_keys = ("testing", "testing")
        self.state_dir = os.path.abspath(state_dir)
        self.nodes, self.azs, self.groups = nodes, azs, groups
        self.region = region
        self.instance_type = instance_type
        self.clock = Clock(speed)
        self.boot_seconds = boot_seconds
        self.cfg = ControllerConfig(node_register_seconds=node_register_seconds, node_ready_seconds=node_ready_seconds,
                                    pod_start_seconds=pod_start_seconds, pod_ready_seconds=pod_ready_seconds,
                                    pod_shutdown_seconds=pod_shutdown_seconds,
                                    node_allocatable=allocatable or {"cpu": "2", "memory": "8Gi", "pods": "110"})
        self.events = None
        self.aws = self.store = self.api = self.controllers = self.hold = self.reference = self.load_balancers = None
        self.info = {}
        # the EKS cluster (DescribeCluster) that names the embedded API server, for eks_cluster; the reference
        # kube-apiserver has none, since it would need a token webhook to accept an EKS token
        self.eks_cluster = None
        self._control = None
        self.stopped = threading.Event()

    # ---- life cycle ----------------------------------------------------------------------------
    def start(self, workloads=(), ready_timeout=120.0):
        os.makedirs(self.state_dir, exist_ok=True)
        log_path = os.path.join(self.state_dir, "events.jsonl")
        if os.path.exists(log_path):
            os.remove(log_path)
        self.events = EventLog(self.clock, log_path)
        self.aws = AwsSandbox(self.clock, self.events, self.state_dir, region=self.region,
                              boot_seconds=self.boot_seconds)
        self.aws.start()
        if self.want_alertmanager:
            from .alertmanager import Alertmanager  # pylint: disable=import-outside-toplevel
            self.alertmanager = Alertmanager(self.state_dir).start()
        if self.want_pushgateway:
            from .pushgateway import Pushgateway  # pylint: disable=import-outside-toplevel
            self.pushgateway = Pushgateway(self.state_dir).start()
        if self.iam:
            from .aws import iam as iam_mod  # pylint: disable=import-outside-toplevel
            iam_mod.install()
            self.collection_keys = iam_mod.create_user(self.aws_client("iam"), iam_mod.docs_policy())
        self.hold = self.aws.hold = Hold(self.events)
        self.startup_taints = startup_taints_mod.StartupTaints(self.clock, self.events, lambda: list(self.aws.groups()))
        if self.kube == "reference":
            from .reference import ReferenceKube  # pylint: disable=import-outside-toplevel
            self.reference = ReferenceKube(self.state_dir, self.clock, self.events, self.aws.instances, self.cfg,
                                           rbac=self.rbac, startup_taints=self.startup_taints).start()
            if self.rbac:
                self.reference.apply_rbac(self.rbac_file)
                self.reference.service_account_kubeconfig(self.collection_kubeconfig_path)
        else:
            self.store = Store(self.clock, self.events)
            for ns in SYSTEM_NAMESPACES:
                self.store.create("namespaces", {"metadata": {"name": ns}}, client=SETUP_CLIENT)
            self.controllers = Controllers(self.store, self.clock, self.events, self.aws.instances, self.cfg,
                                           startup_taints=self.startup_taints)
            self.controllers.start()
            self.api = KubeApiServer(self.store, self.clock, self.events)
            self.api.start()
            self.api.hold = self.hold
        self.info = self.aws.provision(nodes=self.nodes, azs=self.azs, groups=self.groups,
                                       instance_type=self.instance_type)
        if self.reference is None:
            self.eks_cluster = self.aws.register_eks_cluster(self.api.url)
        self.load_balancers = LoadBalancerController(self.clock, self.aws, self.node_objects, services=self.service_objects,
                                                     set_status=self.set_service_status, network=self.info).start()
        self._write_client_files()
        self._start_startup_agent()
        self.apply_file(SYSTEM_WORKLOAD)
        self.wait_ready(ready_timeout)
        for path in workloads:
            self.apply_file(path)
        if workloads:
            self.wait_pods_ready(ready_timeout)
        if self.initial_startup_taints:   # for the nodes that join from now on
            self.startup_taints.configure({"group": startup_taints_mod.EVERY_GROUP, "taints": self.initial_startup_taints})
        # the report's window starts here when no rollout client made a request: start-up is not a rollout
        self.events.emit("sandbox.ready", nodes=self.expected_nodes(), groups=[g["name"] for g in self.info.get("groups") or []])
        self._start_control()
        self._write_state()
        return self

    def stop(self):
        for part in (self._control, self.startup_taints, self.load_balancers, self.api, self.controllers, self.reference,
                     self.alertmanager, self.pushgateway, self.aws):
            if part is None:
                continue
            try:
                if part is self._control:
                    part.shutdown()
                    part.server_close()
                else:
                    part.stop()
            except Exception:  # pylint: disable=broad-except
                pass  # stopping is best effort: one part failing must not leave the others running
        if self.events:
            self.events.close()
        self.stopped.set()

    # ---- clients ---------------------------------------------------------------------------------
    @property
    def kubeconfig_path(self):
        return os.path.join(self.state_dir, "kubeconfig")

    @property
    def collection_kubeconfig_path(self):
        """The kubeconfig the collection's modules use: with ``rbac``, the ServiceAccount's of the RBAC file; else the
        sandbox's own."""
        return os.path.join(self.state_dir, "rollout.kubeconfig") if self.rbac else self.kubeconfig_path

    def kube_client(self, user_agent=SETUP_CLIENT):
        from kubernetes import client, config  # pylint: disable=import-outside-toplevel
        api_client = config.new_client_from_config(config_file=self.kubeconfig_path)
        api_client.user_agent = user_agent
        return api_client

    def aws_client(self, service, user_agent=SETUP_CLIENT):
        import boto3  # pylint: disable=import-outside-toplevel
        from botocore.config import Config  # pylint: disable=import-outside-toplevel
        return boto3.client(service, region_name=self.region, endpoint_url=self.aws.url,
                            aws_access_key_id="testing", aws_secret_access_key="testing",
                            config=Config(user_agent=user_agent, retries={"mode": "standard", "total_max_attempts": 3}))

    def apply_file(self, path, user_agent=SETUP_CLIENT):
        """Create every object of a YAML file through the Kubernetes API, as ``kubectl create -f`` would."""
        from kubernetes import utils  # pylint: disable=import-outside-toplevel
        api_client = self.kube_client(user_agent)
        try:
            utils.create_from_yaml(api_client, path)
        finally:
            api_client.close()

    def _start_startup_agent(self):
        """The node agents that lift startup taints (``startup_taints.py``), through the backend's API server."""
        from .reference.rest import Rest  # pylint: disable=import-outside-toplevel
        if self.reference:
            with open(self.kubeconfig_path, encoding="utf-8") as fh:
                config = json.load(fh)
            cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
            rest = Rest(cluster["server"], user["token"], cluster.get("certificate-authority"), startup_taints_mod.AGENT_CLIENT)

            def get_node(name):
                with self.reference.observer.lock:
                    return self.reference.observer.cache["nodes"].get(name)
        else:
            rest = Rest(self.api.url, "sandbox-token", None, startup_taints_mod.AGENT_CLIENT)

            def get_node(name):
                return self.store.try_get("nodes", None, name)
        self.startup_taints.start(get_node, rest)

    def set_startup_taints(self, body):
        """``POST /startup-taints`` (``startup_taints.StartupTaints.configure``)."""
        return self.startup_taints.configure(body)

    # ---- waiting -----------------------------------------------------------------------------
    def expected_nodes(self):
        return self.nodes * self.groups

    def pods(self):
        """Every pod, as the backend's store (embedded) or its watch cache (reference) holds it."""
        if self.reference:
            with self.reference.observer.lock:
                return list(self.reference.observer.cache["pods"].values())
        return self.store.list("pods")[0]

    def node_objects(self):
        """Every Node, as the backend's store (embedded) or its watch cache (reference) holds it."""
        if self.reference:
            with self.reference.observer.lock:
                return list(self.reference.observer.cache["nodes"].values())
        return self.store.list("nodes")[0]

    def service_objects(self):
        """Every Service, as the backend's store (embedded) or its watch cache (reference) holds it."""
        if self.reference:
            with self.reference.observer.lock:
                return list(self.reference.observer.cache["services"].values())
        return self.store.list("services")[0]

    def set_service_status(self, namespace, name, status):
        """Write a Service's status, as the cloud provider's service controller does."""
        if self.reference:
            path = "/api/v1/namespaces/%s/services/%s/status" % (namespace, name)
            self.reference.observer.rest.request("PATCH", path, {"status": status}, content_type="application/merge-patch+json")
            return

        def edit(service):
            service["status"] = status
        self.store.mutate("services", namespace, name, edit, client="service-controller")

    def ready_nodes(self):
        if self.reference:
            return self.reference.ready_nodes()
        from .kube.store import is_ready  # pylint: disable=import-outside-toplevel
        return [n for n in self.store.list("nodes")[0] if is_ready(n)]

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.ready_nodes()) >= self.expected_nodes() and self._pods_settled():
                return
            time.sleep(0.05)
        raise SandboxError("sandbox not ready after %.0fs: %d/%d nodes Ready" % (
            timeout, len(self.ready_nodes()), self.expected_nodes()))

    def wait_pods_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._pods_settled():
                return
            time.sleep(0.05)
        raise SandboxError("workload pods not Ready after %.0fs" % timeout)

    def _pods_settled(self):
        if self.reference:
            return self.reference.pods_settled()
        from .kube.store import is_ready  # pylint: disable=import-outside-toplevel
        pods = self.store.list("pods")[0]
        for dep in self.store.list("deployments")[0]:
            want = dep.get("spec", {}).get("replicas", 1)
            if (dep.get("status") or {}).get("readyReplicas", 0) < want:
                return False
        for sts in self.store.list("statefulsets")[0]:
            if (sts.get("status") or {}).get("readyReplicas", 0) < sts.get("spec", {}).get("replicas", 1):
                return False
        for ds in self.store.list("daemonsets")[0]:
            st = ds.get("status") or {}
            if st.get("desiredNumberScheduled") is None or st.get("numberReady", 0) < st.get("desiredNumberScheduled", 0):
                return False
        return all(is_ready(p) for p in pods if "deletionTimestamp" not in p["metadata"]
                   and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))

    # ---- faults and report -----------------------------------------------------------------------
    def set_faults(self, spec):
        """Apply a fault spec (see ``__main__`` for the CLI form).

        Rates add up across calls: each call sets the actions (AWS) or verbs (Kubernetes) it names, a rate of
        0 removes one, and the others stay as they were; ``clear`` resets everything first."""
        if self.reference:
            self.reference.set_faults(spec)   # refuses what the real API server cannot be made to do
        if spec.get("clear"):
            self.aws.faults.clear()
            if not self.reference:
                self.api.faults.clear()
                self.controllers.faults.clear()
        seed = spec.get("seed")
        aws = {}
        current = self.aws.faults.snapshot()
        for key, kind in (("aws_throttle", "throttling"), ("aws_5xx", "internal_error")):
            given = spec.get(key)
            if isinstance(given, (int, float)) and not isinstance(given, bool):
                given = {"*": given}     # one rate for every action, as AwsSandbox.faults takes it
            if given:
                merged = dict(current[kind], **given)
                aws[kind] = {action: rate for action, rate in merged.items() if rate}
        if spec.get("insufficient_capacity_azs") is not None:
            aws["insufficient_capacity_azs"] = spec["insufficient_capacity_azs"]
        if aws:
            self.aws.faults.set(seed=seed, **aws)
        kube = {}
        if spec.get("k8s_429") or spec.get("k8s_5xx"):
            rates = self.api.faults.rates()
            for key, code in (("k8s_429", "429"), ("k8s_5xx", "500")):
                for verb, rate in (spec.get(key) or {}).items():
                    rates.setdefault(verb, {})[code] = rate
            kube["verb_rates"] = {verb: {code: rate for code, rate in codes.items() if rate}
                                  for verb, codes in rates.items() if any(codes.values())}
        if spec.get("eviction_latency") is not None:
            kube["eviction_latency"] = spec["eviction_latency"]
        if kube:
            self.api.faults.set(seed=seed, **kube)
        if spec.get("k8s_down") is not None:
            self.api.go_down(spec["k8s_down"])
        if spec.get("nodes_never_ready") is not None and not self.reference:
            self.controllers.faults.set(nodes_never_ready=bool(spec["nodes_never_ready"]))
        for name in spec.get("unreachable_nodes") or []:
            self.controllers.nodes.lose_kubelet(name)
        if spec.get("k8s_forbid") is not None and not self.reference:
            self.api.faults.forbid(spec["k8s_forbid"])

    def set_control_plane_version(self, git_version):
        """What the Kubernetes API server's ``/version`` says (``v1.29.4``, ``v1.29.4-eks-036c24b``): the embedded
        backend serves any; the reference backend is the kube-apiserver it built, whose version it cannot change."""
        if self.reference:
            raise ValueError("the reference backend serves its own kube-apiserver's version; set the control plane version "
                             "on the embedded backend")
        self.api.set_version(git_version)

    def report(self, client_prefix="nodeops.rollout"):
        """The invariant report, with the speed of the clock its delays ran on (``clock_speed``: a reader of a run's
        durations, such as the HTML report, says they ran that many times faster than real time)."""
        return dict(report_mod.build_report(self.events.events(), client_prefix=client_prefix), clock_speed=self.clock.speed)

    # ---- files ---------------------------------------------------------------------------------
    @property
    def kube_url(self):
        return self.reference.url if self.reference else self.api.url

    def _write_client_files(self):
        kubeconfig = self.reference.kubeconfig() if self.reference else {
            "apiVersion": "v1", "kind": "Config", "current-context": "sandbox", "preferences": {},
            "clusters": [{"name": "sandbox", "cluster": {"server": self.api.url}}],
            "users": [{"name": "sandbox-admin", "user": {"token": "sandbox-token"}}],
            "contexts": [{"name": "sandbox", "context": {"cluster": "sandbox", "user": "sandbox-admin"}}],
        }
        _write(self.kubeconfig_path, json.dumps(kubeconfig, indent=2) + "\n")
        env = ("export AWS_ENDPOINT_URL=%s\nexport AWS_REGION=%s\nexport AWS_DEFAULT_REGION=%s\n"
               "export AWS_ACCESS_KEY_ID=%s\nexport AWS_SECRET_ACCESS_KEY=%s\n"
               "export KUBECONFIG=%s\n" % (self.aws.url, self.region, self.region, self.collection_keys[0],
                                           self.collection_keys[1], self.collection_kubeconfig_path))
        _write(os.path.join(self.state_dir, "aws.env"), env)

    def _write_state(self):
        state = {
            "pid": os.getpid(), "speed": self.clock.speed, "region": self.region,
            "aws_url": self.aws.url, "kube_url": self.kube_url, "kube": self.kube,
            "control_url": "http://127.0.0.1:%d" % self._control.server_address[1],
            "ports": {"aws": int(self.aws.url.rsplit(":", 1)[1]), "kubernetes": int(self.kube_url.rsplit(":", 1)[1]),
                      "control": self._control.server_address[1]},
            "kubeconfig": self.kubeconfig_path, "events": os.path.join(self.state_dir, "events.jsonl"),
            "rbac": self.rbac, "collection_kubeconfig": self.collection_kubeconfig_path, "iam": self.iam, "eks_cluster": self.eks_cluster,
            "nodes": self.nodes, "azs": self.azs, "groups": self.info.get("groups"),
            "amis": self.info.get("amis"), "ssm_parameter": self.info.get("ssm_parameter"),
            "subnets": self.info.get("subnets"), "vpc_id": self.info.get("vpc_id"),
            "alertmanager_url": self.alertmanager.url if self.alertmanager else None,
            "pushgateway_url": self.pushgateway.url if self.pushgateway else None,
        }
        _write(os.path.join(self.state_dir, "sandbox.json"), json.dumps(state, indent=2, sort_keys=True) + "\n")

    def _start_control(self):
        sandbox = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet: the event log is the record
                pass

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 (http.server naming)
                if self.path.startswith("/report"):
                    prefix = "nodeops.rollout"
                    if "client_prefix=" in self.path:
                        prefix = self.path.split("client_prefix=", 1)[1]
                    self._send(200, sandbox.report(prefix))
                elif self.path == "/hold":
                    self._send(200, sandbox.hold.status())
                elif self.path == "/startup-taints":
                    self._send(200, sandbox.startup_taints.status())
                elif self.path == "/health":
                    self._send(200, {"ok": True})
                else:
                    self._send(404, {"error": "unknown path %s" % self.path})

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path == "/fault":
                    try:
                        sandbox.set_faults(body)
                    except (TypeError, ValueError) as exc:
                        self._send(400, {"error": str(exc)})
                        return
                    self._send(200, {"ok": True})
                elif self.path == "/ssm/publish":
                    try:
                        sandbox.aws.publish_parameter(body.get("name"), body.get("value"))
                    except (TypeError, ValueError) as exc:
                        self._send(400, {"error": str(exc)})
                        return
                    self._send(200, {"ok": True})
                elif self.path == "/instances/age":
                    try:
                        answer = sandbox.aws.age_instances(body.get("instance_ids"), body.get("seconds"))
                    except (TypeError, ValueError) as exc:
                        self._send(400, {"error": str(exc)})
                        return
                    self._send(200, {"ok": True, "launch_times": answer})
                elif self.path == "/version":
                    try:
                        sandbox.set_control_plane_version(body.get("gitVersion"))
                    except (TypeError, ValueError) as exc:
                        self._send(400, {"error": str(exc)})
                        return
                    self._send(200, {"ok": True})
                elif self.path == "/startup-taints":
                    try:
                        answer = sandbox.set_startup_taints(body)
                    except (TypeError, ValueError) as exc:
                        self._send(400, {"error": str(exc)})
                        return
                    self._send(200, dict(answer, ok=True))
                elif self.path in ("/hold", "/hold/release"):
                    try:
                        if sandbox.reference and self.path == "/hold" and (body.get("match") or {}).get("api") != "aws":
                            raise ValueError("the reference backend holds AWS requests only (match.api: aws): "
                                             "the real kube-apiserver cannot be paused mid-request")
                        answer = sandbox.hold.release() if self.path == "/hold/release" else sandbox.hold.arm(body)
                    except (TypeError, ValueError) as exc:
                        self._send(400, {"error": str(exc)})
                        return
                    self._send(200, {"ok": True, "hold": answer})
                elif self.path == "/stop":
                    self._send(200, {"ok": True})
                    threading.Thread(target=sandbox.stop, daemon=True).start()
                else:
                    self._send(404, {"error": "unknown path %s" % self.path})

        self._control = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._control.daemon_threads = True
        # a short poll interval: stop() waits up to one interval for the serving thread to notice
        threading.Thread(target=self._control.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
