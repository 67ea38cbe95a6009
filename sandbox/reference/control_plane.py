"""The real control plane, as processes: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
kwok, started in that order on loopback ports and stopped in reverse.

Everything lives under ``<state>/reference``: certificates, the token file, the audit policy and log
(``audit.log``, one JSON line per request stage, read by :mod:`.observer`), etcd's data, one log per process.
Clients authenticate with a bearer token; the components with the same token (their requests are told apart
by User-Agent, as the audit log records it). That token's user is in the group ``system:masters``, which the RBAC
authorizer always allows: the sandbox's own parts and the tests' observer keep every right whatever roles exist. With
``rbac`` the API server authorizes as EKS and kubeadm clusters do (``Node,RBAC``), and a client with a ServiceAccount's
token (:mod:`.rbac`) gets only what its roles grant.
"""

import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time

from . import certs
from .rest import Rest
from .stages import kwok_config

# kube-controller-manager's controllers the sandbox runs (the persistentvolume-binder binds a claim to the volume it
# names, so pods that mount one are scheduled; volumes that need attaching are another matter, see README's Fidelity)
CONTROLLERS = ("deployment", "replicaset", "daemonset", "statefulset", "disruption", "garbagecollector", "podgc", "nodelifecycle",
               "namespace", "persistentvolume-binder")
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: []
rules:
- level: Metadata
"""


class ControlPlaneError(RuntimeError):
    pass


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ControlPlane:
    def __init__(self, bin_dir, state_dir, speed, node_ready_seconds, pod_start_seconds, pod_ready_seconds,
                 pod_shutdown_seconds, rbac=False):
        self.bin_dir = bin_dir
        self.rbac = rbac
        self.dir = os.path.join(state_dir, "reference")
        self.speed = speed
        self.delays = dict(node_ready_seconds=node_ready_seconds, pod_start_seconds=pod_start_seconds,
                           pod_ready_seconds=pod_ready_seconds, pod_shutdown_seconds=pod_shutdown_seconds)
        self.token = secrets.token_hex(16)
        self.port = None
        self.url = None
        self.paths = {}
        self.procs = []   # (name, Popen, log file)

    @property
    def audit_log(self):
        return os.path.join(self.dir, "audit.log")

    def rest(self, user_agent):
        return Rest(self.url, self.token, self.paths["ca.crt"], user_agent)

    def kubeconfig(self, user="sandbox-admin"):
        return {
            "apiVersion": "v1", "kind": "Config", "current-context": "sandbox", "preferences": {},
            "clusters": [{"name": "sandbox", "cluster": {"server": self.url, "certificate-authority": self.paths["ca.crt"]}}],
            "users": [{"name": user, "user": {"token": self.token}}],
            "contexts": [{"name": "sandbox", "context": {"cluster": "sandbox", "user": user}}],
        }

    # ---- life cycle ---------------------------------------------------------------------------
    def start(self, timeout=120.0):
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        self.paths = certs.generate(os.path.join(self.dir, "pki"))
        tokens = os.path.join(self.dir, "tokens.csv")
        with open(tokens, "w", encoding="utf-8") as fh:
            fh.write('%s,sandbox-admin,sandbox-admin,"system:masters"\n' % self.token)
        os.chmod(tokens, 0o600)
        policy = self._write("audit-policy.yaml", AUDIT_POLICY)
        kwok_cfg = self._write("kwok.yaml", kwok_config(self.speed, **self.delays))

        etcd_port, etcd_peer = _free_port(), _free_port()
        self._spawn("etcd", [
            "--name", "sandbox", "--data-dir", os.path.join(self.dir, "etcd"),
            "--listen-client-urls", "http://127.0.0.1:%d" % etcd_port,
            "--advertise-client-urls", "http://127.0.0.1:%d" % etcd_port,
            "--listen-peer-urls", "http://127.0.0.1:%d" % etcd_peer,
            "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % etcd_peer,
            "--initial-cluster", "sandbox=http://127.0.0.1:%d" % etcd_peer,
            "--unsafe-no-fsync", "--log-level", "warn"])
        self.port = _free_port()
        self.url = "https://127.0.0.1:%d" % self.port
        component_kubeconfig = self._write("components.kubeconfig", _yaml(self.kubeconfig("sandbox-components")))
        self._spawn("kube-apiserver", [
            "--etcd-servers", "http://127.0.0.1:%d" % etcd_port,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(self.port),
            "--tls-cert-file", self.paths["apiserver.crt"], "--tls-private-key-file", self.paths["apiserver.key"],
            "--client-ca-file", self.paths["ca.crt"], "--token-auth-file", tokens,
            "--authorization-mode", "Node,RBAC" if self.rbac else "RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", self.paths["sa.pub"],
            "--service-account-signing-key-file", self.paths["sa.key"],
            "--service-cluster-ip-range", "10.96.0.0/16",
            # no service-account tokens are mounted into the pods kwok plays: nothing in them reads one
            "--disable-admission-plugins", "ServiceAccount",
            "--audit-policy-file", policy, "--audit-log-path", self.audit_log, "--audit-log-format", "json",
            "--audit-log-mode", "blocking", "--audit-log-maxsize", "0",
            "--profiling=false", "--v", "1"])
        self._wait("kube-apiserver", timeout)
        self._spawn("kube-controller-manager", [
            "--kubeconfig", component_kubeconfig, "--controllers", ",".join(CONTROLLERS), "--leader-elect=false",
            "--bind-address", "127.0.0.1", "--secure-port", "0", "--profiling=false", "--v", "1"])
        self._spawn("kube-scheduler", [
            "--kubeconfig", component_kubeconfig, "--leader-elect=false", "--bind-address", "127.0.0.1",
            "--secure-port", "0", "--profiling=false", "--v", "1"])
        self._spawn("kwok", [
            "--kubeconfig", component_kubeconfig, "--config", kwok_cfg, "--manage-all-nodes=true",
            "--cidr", "10.244.0.0/16", "--node-lease-duration-seconds", "40",
            "--server-address", "127.0.0.1:%d" % _free_port()])
        return self

    def stop(self):
        for _name, proc, log in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for _name, proc, log in reversed(self.procs):
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
        self.procs = []

    def check_alive(self):
        """Raise when a component has exited: a control plane missing a part is not one."""
        for name, proc, _log in self.procs:
            if proc.poll() is not None:
                raise ControlPlaneError("%s exited with %s; its log: %s" % (name, proc.returncode, self._log_path(name)))

    # ---- helpers -------------------------------------------------------------------------------
    def _write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path

    def _log_path(self, name):
        return os.path.join(self.dir, name + ".log")

    def _spawn(self, name, args):
        log = open(self._log_path(name), "w", encoding="utf-8")  # pylint: disable=consider-using-with
        proc = subprocess.Popen([os.path.join(self.bin_dir, name)] + args, stdout=log, stderr=subprocess.STDOUT,  # pylint: disable=consider-using-with
                                stdin=subprocess.DEVNULL, cwd=self.dir, preexec_fn=_die_with_parent)
        self.procs.append((name, proc, log))

    def _wait(self, name, timeout):
        rest = self.rest("sandbox-setup")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            if rest.healthy():
                return
            time.sleep(0.2)
        raise ControlPlaneError("%s did not become ready within %.0fs; its log: %s" % (name, timeout, self._log_path(name)))


def _yaml(obj):
    return json.dumps(obj, indent=2) + "\n"   # JSON is YAML: what every kubeconfig reader accepts


def _die_with_parent():
    """In the child before exec: SIGKILL it when the sandbox process dies, so a killed sandbox leaves no control plane."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)   # 1 = PR_SET_PDEATHSIG
