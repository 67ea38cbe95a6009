"""What end-to-end tests and benchmarks use: a sandbox started as a user starts it, and modules run through real Ansible.

- ``SandboxHandle.start(tmp_dir, ...)`` runs ``python -m sandbox up --detach`` (a separate process, so
  every sandbox has its own AWS state) and gives clients, faults and the invariant report.
- ``handle.run_module("node_drain", nodes=[...], check=False)`` runs ``ansible localhost -m
  nodeops.rollout.node_drain`` against the sandbox with the auth environment a user would set, and
  returns the module's JSON result (with ``rc``).
- ``handle.run_playbook(path, extra_vars)`` runs ``ansible-playbook`` the same way.
- On the reference backend, ``SandboxHandle.start(..., rbac=True)`` enforces docs/rbac.yaml on the collection: its modules
  and playbooks run with a ServiceAccount token (``handle.collection_kubeconfig``) while ``handle.kube()`` keeps every
  right. ``handle.apply_rbac(path)`` applies RBAC objects (``kubectl apply``) and
  ``handle.service_account_kubeconfig()`` mints a token (TokenRequest) and writes a kubeconfig using it.
"""

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
MUTATING_K8S = ("create", "update", "patch", "delete", "evict", "deletecollection")


def collections_path():
    """A directory holding ``ansible_collections/nodeops/rollout`` -> this working tree."""
    # per checkout: two checkouts testing at once must not repoint each other's collection
    base = os.path.join(ROOT, ".build", "harness-collections")
    link = os.path.join(base, "ansible_collections", "nodeops", "rollout")
    if os.path.realpath(link) != ROOT:
        os.makedirs(os.path.dirname(link), exist_ok=True)
        # atomic, so parallel test workers never see the link missing or trip over each other
        tmp = "%s.%d" % (link, os.getpid())
        os.symlink(ROOT, tmp)
        os.replace(tmp, link)
    return base


def install_collection_loader():
    """Make ``ansible_collections.nodeops.rollout`` importable in this process as Ansible makes it importable in its
    own: through its collection loader, over the path the harness gives Ansible as ANSIBLE_COLLECTIONS_PATH
    (``collections_path()``), then the environment's ANSIBLE_COLLECTIONS_PATH. Once per process."""
    # pylint: disable=import-outside-toplevel
    from ansible.plugins.loader import init_plugin_loader
    from ansible.utils.collection_loader import AnsibleCollectionConfig
    if AnsibleCollectionConfig.collection_finder is None:
        init_plugin_loader([collections_path()])


def wait_until(what, check, timeout=60.0, interval=0.5):
    """Poll ``check()`` until it is true; fail naming ``what`` after ``timeout`` wall seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise AssertionError("timed out after %.0fs waiting for %s" % (timeout, what))


def promised_floor(size, max_unavailable):
    """The fewest Ready schedulable nodes docs/how-a-rollout-works.md ("Capacity during the upgrade") lets a group of
    ``size`` nodes have during its rollout: ``size - max_unavailable``, whatever the surge (the surge lets more nodes
    drain at once, never the group go lower)."""
    return max(0, size - max_unavailable)


def floor_until(events, end, client_prefix="nodeops.rollout"):
    """``min_ready_schedulable_nodes`` of the invariant report over the rollout window up to simulated time ``end``."""
    from sandbox.report import build_report  # pylint: disable=import-outside-toplevel
    return build_report([e for e in events if e["t"] <= end], client_prefix)["min_ready_schedulable_nodes"]


def _read_env_file(path):
    env = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line.startswith("export ") and "=" in line:
                key, value = line[len("export "):].split("=", 1)
                env[key] = value
    return env


KUBE_ENV = "NODEOPS_SANDBOX_KUBE"


def startup_taint_flag(taint):
    """``{"key", "value"?, "effect", "lift_after"}`` as ``up --startup-taint`` takes it: ``KEY[=VALUE]:EFFECT@SECONDS``
    or ``@never``."""
    lift = taint.get("lift_after", 10.0)
    return "%s%s:%s@%s" % (taint["key"], "=" + taint["value"] if taint.get("value") else "", taint["effect"],
                           "never" if lift is None else "%g" % lift)


def _rfc3339(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class SandboxHandle:
    def __init__(self, state_dir):
        self.state_dir = state_dir
        with open(os.path.join(state_dir, "sandbox.json"), encoding="utf-8") as fh:
            self.state = json.load(fh)
        self.env = _read_env_file(os.path.join(state_dir, "aws.env"))
        # the kubeconfig the collection's modules and playbooks run with (run_module, run_role_playbook ...): the
        # ServiceAccount's of a sandbox started with rbac, else the sandbox's own; set it to run them as another identity
        self.collection_kubeconfig = self.state.get("collection_kubeconfig") or self.state["kubeconfig"]

    # ---- life cycle ----------------------------------------------------------------------------
    @classmethod
    def start(cls, state_dir, nodes=6, azs=3, groups=1, speed=20.0, workloads=(), timeout=180, kube=None, rbac=False,
              rbac_file=None, iam=False, startup_taints=None, alertmanager=False, pushgateway=False):
        """Start a sandbox; ``kube`` defaults to $NODEOPS_SANDBOX_KUBE (the test command's reference stage sets it to
        ``reference``), else ``embedded``. ``rbac`` (reference backend only) enforces docs/rbac.yaml, or ``rbac_file``,
        on the collection (``up --rbac``). ``startup_taints`` (``[{"key", "value"?, "effect", "lift_after": simulated
        seconds or None for never}]``): every node that joins any group after the start registers with them (the nodes
        of the start do not), ``up --startup-taint``. ``alertmanager`` also starts the real Alertmanager (``up
        --alertmanager``), built here first when it is not yet: the build is not bounded by ``timeout``; ``pushgateway``
        the real Pushgateway (``up --pushgateway``), fetched here first."""
        kube = kube or os.environ.get(KUBE_ENV) or "embedded"
        cmd = [sys.executable, "-m", "sandbox", "up", "--state-dir", state_dir, "--detach",
               "--nodes", str(nodes), "--azs", str(azs), "--groups", str(groups), "--speed", str(speed),
               "--timeout", str(timeout), "--kube", kube]
        if rbac or rbac_file:
            cmd.append("--rbac")
        if rbac_file:
            cmd += ["--rbac-file", os.path.abspath(rbac_file)]
        if iam:
            cmd.append("--iam")
        if alertmanager:
            from sandbox.reference.build import ensure  # pylint: disable=import-outside-toplevel
            ensure(which="alertmanager")
            cmd.append("--alertmanager")
        if pushgateway:
            from sandbox.pushgateway import ensure as ensure_pushgateway  # pylint: disable=import-outside-toplevel
            ensure_pushgateway()
            cmd.append("--pushgateway")
        for w in workloads:
            cmd += ["--workload", w]
        for taint in startup_taints or ():
            cmd += ["--startup-taint", startup_taint_flag(taint)]
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout + 30)
        return cls(state_dir)

    def stop(self):
        subprocess.run([sys.executable, "-m", "sandbox", "down", "--state-dir", self.state_dir],
                       cwd=ROOT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)

    # ---- clients ---------------------------------------------------------------------------------
    def kube(self, user_agent="test-observer"):
        from kubernetes import config  # pylint: disable=import-outside-toplevel
        api_client = config.new_client_from_config(config_file=self.state["kubeconfig"])
        api_client.user_agent = user_agent
        return api_client

    def core(self):
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        return client.CoreV1Api(self.kube())

    def apps(self):
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        return client.AppsV1Api(self.kube())

    def policy(self):
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        return client.PolicyV1Api(self.kube())

    def aws(self, service, user_agent="test-observer"):
        import boto3  # pylint: disable=import-outside-toplevel
        from botocore.config import Config  # pylint: disable=import-outside-toplevel
        return boto3.client(service, region_name=self.state["region"], endpoint_url=self.state["aws_url"],
                            aws_access_key_id="testing", aws_secret_access_key="testing",
                            config=Config(user_agent=user_agent, retries={"mode": "standard", "total_max_attempts": 2}))

    def apply(self, path_or_text):
        """Create objects from a YAML file (or YAML text) through the Kubernetes API."""
        from kubernetes import utils  # pylint: disable=import-outside-toplevel
        import yaml  # pylint: disable=import-outside-toplevel
        if os.path.exists(path_or_text):
            with open(path_or_text, encoding="utf-8") as fh:
                docs = [d for d in yaml.safe_load_all(fh) if d]
        else:
            docs = [d for d in yaml.safe_load_all(path_or_text) if d]
        api_client = self.kube("test-setup")
        try:
            for doc in docs:
                utils.create_from_dict(api_client, doc)
        finally:
            api_client.close()

    # ---- RBAC (reference backend) ----------------------------------------------------------------
    def _rest(self, user_agent="test-setup"):
        """The sandbox's own identity (group system:masters) as the reference backend's plain REST client."""
        from sandbox.reference.rest import Rest  # pylint: disable=import-outside-toplevel
        if self.state.get("kube") != "reference":
            raise ValueError("RBAC needs the reference backend: the embedded API server has no authorizer")
        with open(self.state["kubeconfig"], encoding="utf-8") as fh:
            config = json.load(fh)
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        return Rest(cluster["server"], user["token"], cluster["certificate-authority"], user_agent)

    def apply_rbac(self, path_or_text=None):
        """Create or update the objects of an RBAC file (YAML text, or a path; docs/rbac.yaml by default) as ``kubectl
        apply --server-side`` would: a rule left out of a role the next time is removed. ``["Kind ns/name", ...]``."""
        from sandbox.reference import rbac  # pylint: disable=import-outside-toplevel
        return rbac.apply(self._rest(), rbac.load(path_or_text or rbac.DOCS_RBAC))

    def service_account_kubeconfig(self, path=None, namespace="nodeops-rollout", name="nodeops-rollout", seconds=3600):
        """Mint a token of ServiceAccount ``namespace/name`` through the TokenRequest API and write a kubeconfig that
        authenticates with it (to ``path``, by default ``<state>/<namespace>.<name>.kubeconfig``); returns the path.
        Point the collection at it with ``handle.collection_kubeconfig = path``, or pass it as a module's
        ``kubeconfig``."""
        from sandbox.reference import rbac  # pylint: disable=import-outside-toplevel
        rest = self._rest()
        path = path or os.path.join(self.state_dir, "%s.%s.kubeconfig" % (namespace, name))
        with open(self.state["kubeconfig"], encoding="utf-8") as fh:
            ca_file = json.load(fh)["clusters"][0]["cluster"]["certificate-authority"]
        return rbac.service_account_kubeconfig(rest, self.state["kube_url"], ca_file, path, namespace, name, seconds)

    # ---- control -------------------------------------------------------------------------------
    def _control(self, path, body=None):
        url = self.state["control_url"] + path
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:  # nosec - loopback
            return json.loads(resp.read())

    # ---- Alertmanager (started with alertmanager=True) --------------------------------------------
    @property
    def alertmanager_url(self):
        return self.state.get("alertmanager_url")

    def _alertmanager(self, path, body=None, method=None):
        req = urllib.request.Request(self.alertmanager_url + path, data=None if body is None else json.dumps(body).encode(),
                                     method=method or ("GET" if body is None else "POST"), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:  # nosec - loopback
            data = resp.read()
            return json.loads(data) if data else None

    def post_alert(self, labels, ends_in=None, annotations=None):
        """Post one alert to the Alertmanager's API v2, as Prometheus does, firing from now; with ``ends_in`` (wall
        seconds) it resolves by itself then, and ``ends_in=0`` resolves it now."""
        now = time.time()
        alert = {"labels": dict(labels), "annotations": dict(annotations or {}), "startsAt": _rfc3339(now - 1)}
        if ends_in is not None:
            alert["endsAt"] = _rfc3339(now + ends_in)
        self._alertmanager("/api/v2/alerts", [alert])

    def silence(self, matchers, seconds=3600, comment="a test's silence"):
        """Silence the alerts every ``{name: value}`` of ``matchers`` matches (equality matchers), for ``seconds``;
        returns the silence's id."""
        now = time.time()
        body = {"matchers": [{"name": name, "value": value, "isRegex": False, "isEqual": True} for name, value in matchers.items()],
                "startsAt": _rfc3339(now - 1), "endsAt": _rfc3339(now + seconds), "createdBy": "test", "comment": comment}
        return self._alertmanager("/api/v2/silences", body)["silenceID"]

    def alerts(self):
        """Every alert the Alertmanager holds, with its ``status`` (``active``, ``suppressed``; ``silencedBy``)."""
        return self._alertmanager("/api/v2/alerts")

    @property
    def pushgateway_url(self):
        return self.state.get("pushgateway_url")

    def pushed_metrics(self):
        """What the Pushgateway holds, in the Prometheus text format, as Prometheus scrapes its ``/metrics``."""
        with urllib.request.urlopen(self.pushgateway_url + "/metrics", timeout=30) as resp:  # nosec - loopback
            return resp.read().decode("utf-8")

    def fault(self, **spec):
        return self._control("/fault", spec)

    def set_control_plane_version(self, git_version):
        """``/version`` of the Kubernetes API then says ``git_version`` (embedded backend only)."""
        return self._control("/version", {"gitVersion": git_version})

    def register_image(self, name, kubelet_version=None):
        """Register an AMI named ``name`` through the EC2 API (as an image pipeline would) and return its id; with
        ``kubelet_version``, tag it so that its instances' nodes report that kubelet, whatever the name says (the
        sandbox's ``sandbox.nodeops.io/kubelet-version`` AMI tag)."""
        from sandbox.aws.sandbox import KUBELET_TAG  # pylint: disable=import-outside-toplevel
        ec2 = self.aws("ec2", user_agent="test-setup")
        image_id = ec2.register_image(Name=name, Architecture="x86_64", RootDeviceName="/dev/xvda",
                                      VirtualizationType="hvm")["ImageId"]
        if kubelet_version:
            ec2.create_tags(Resources=[image_id], Tags=[{"Key": KUBELET_TAG, "Value": kubelet_version}])
        return image_id

    def age_instances(self, instance_ids, seconds):
        """Move the EC2 launch time of ``instance_ids`` ``seconds`` back, as if launched that long ago (``POST
        /instances/age``); returns their launch times, by id."""
        return self._control("/instances/age", {"instance_ids": list(instance_ids), "seconds": seconds})["launch_times"]

    def publish_parameter(self, name, value):
        """Publish an SSM parameter under ``/aws/service/`` as AWS does (EKS's recommended AMI of a Kubernetes version)."""
        return self._control("/ssm/publish", {"name": name, "value": value})

    def startup_taints(self, group, taints, version=None):
        """Nodes of ``group`` (``"*"``: every group) that register from now on, of its launch template version
        ``version`` only when given, join with ``taints``: ``[{"key", "value" (optional), "effect", "lift_after":
        simulated seconds after the node turned Ready, or None for never}]``; their agent lifts each when due. An empty
        list removes the rule. ``POST /startup-taints``; returns the sandbox's rules and pending lifts."""
        body = {"group": group, "taints": list(taints)}
        if version is not None:
            body["version"] = version
        return self._control("/startup-taints", body)

    def user_data_taint_lifts(self, lifts):
        """When the agents lift the taints nodes register with from their user data (``--register-with-taints``), by
        key: ``{key: simulated seconds after Ready, or None for never}`` (the default: 10 s)."""
        return self._control("/startup-taints", {"user_data_lift_after": dict(lifts)})

    def startup_taint_status(self):
        """The rules, the user-data lift delays and the lifts still pending per node (``GET /startup-taints``)."""
        return self._control("/startup-taints")

    def hold(self, **spec):
        """Arm the sandbox's hold (``sandbox/hold.py``): the matching request of the collection is stopped before
        it is applied; :meth:`held` says when, :meth:`release` lets it go (answered 503, never applied)."""
        return self._control("/hold", spec)["hold"]

    def held(self):
        return self._control("/hold")["held"]

    def release(self):
        return self._control("/hold/release", {})["hold"]

    def report(self, client_prefix="nodeops.rollout"):
        return self._control("/report?client_prefix=" + client_prefix)

    def events(self):
        from sandbox.events import read_events  # pylint: disable=import-outside-toplevel
        return read_events(self.state["events"])

    def mutating_requests(self, client_prefix="nodeops.rollout", since=0.0):
        """Mutating API requests (Kubernetes and AWS) made by the collection's modules after ``since``."""
        out = []
        for e in self.events():
            if e["kind"] in ("k8s.request", "aws.request") and e.get("mutating") and e["t"] >= since \
                    and str(e.get("client") or "").startswith(client_prefix):
                out.append(e)
        return out

    def now(self):
        """The sandbox's simulated time, read from its newest event."""
        events = self.events()
        return events[-1]["t"] if events else 0.0

    # ---- running Ansible -------------------------------------------------------------------------
    def ansible_env(self, extra=None):
        env = dict(os.environ)
        env.update(self.env)
        env.update({
            "K8S_AUTH_KUBECONFIG": self.collection_kubeconfig,
            "ANSIBLE_COLLECTIONS_PATH": collections_path(),
            "ANSIBLE_HOST_KEY_CHECKING": "False",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
            "PATH": BIN + os.pathsep + env.get("PATH", ""),
        })
        env.pop("KUBECONFIG", None)
        if extra:
            env.update(extra)
        return env

    def run_module(self, name, /, check=False, diff=False, env=None, timeout=900, module_args=None, **args):
        """Run ``nodeops.rollout.<name>`` with ``args``; the module's result dict plus ``rc``.

        Module options named like this method's own keywords (``timeout``, ``check``, ...) go in ``module_args``."""
        args = dict(module_args or {}, **args)
        with tempfile.TemporaryDirectory() as tree:
            cmd = [os.path.join(BIN, "ansible"), "localhost", "-i", "localhost,", "-c", "local",
                   "-m", "nodeops.rollout." + name, "-a", json.dumps(args), "-t", tree]
            if check:
                cmd.append("--check")
            if diff:
                cmd.append("--diff")
            started = time.monotonic()
            proc = subprocess.run(cmd, cwd=ROOT, env=self.ansible_env(env), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
            path = os.path.join(tree, "localhost")
            if not os.path.exists(path):
                raise AssertionError("ansible produced no result (rc %d):\n%s" % (proc.returncode, proc.stdout))
            with open(path, encoding="utf-8") as fh:
                result = json.load(fh)
        result["rc"] = proc.returncode
        result["wall_seconds"] = time.monotonic() - started
        result["output"] = proc.stdout
        return result

    def role_playbook_command(self, directory, playbook="upgrade.yml", extra=(), report=None, check=False, node_groups=None,
                              host_vars=None, diff=False):
        """``(argv, env)`` of a playbook of the collection (``playbooks/<playbook>``) run as a user does: over an inventory
        of one cluster whose host vars point at this sandbox (written into ``directory``), with ``-e`` items ``extra``
        (strings, as a survey sends them). ``node_groups`` defaults to the sandbox's group rolled to the new AMI;
        ``host_vars`` are added to (or replace) the host's variables; ``diff``: ``--diff``, as AWX's "Show Changes" sets it."""
        host = {
            "ansible_python_interpreter": sys.executable,
            "rolling_update_aws": {"region": self.state["region"], "endpoint_url": self.state["aws_url"]},
            "rolling_update_k8s": {"kubeconfig": self.collection_kubeconfig},
            "rolling_update_node_groups": node_groups or [{"name": "sandbox-nodes", "image_id": self.state["amis"]["new"]}],
            "rolling_update_report_file": str(report) if report else "",
        }
        host.update(host_vars or {})
        inventory = os.path.join(str(directory), "inventory.yml")
        with open(inventory, "w", encoding="utf-8") as fh:
            json.dump({"clusters": {"hosts": {"cluster": host}}}, fh)   # JSON is YAML
        cmd = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, os.path.join("playbooks", playbook)]
        for item in extra:
            cmd += ["-e", item]
        if check:
            cmd.append("--check")
        if diff:
            cmd.append("--diff")
        env = self.ansible_env()
        env.pop("K8S_AUTH_KUBECONFIG", None)   # the inventory's rolling_update_k8s is the connection
        return cmd, env

    def run_role_playbook(self, directory, playbook="upgrade.yml", extra=(), report=None, check=False, node_groups=None,
                          host_vars=None, timeout=900, diff=False):
        """Run :meth:`role_playbook_command` to its end; ``(rc, output)``."""
        cmd, env = self.role_playbook_command(directory, playbook, extra, report, check, node_groups, host_vars, diff)
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, check=False)
        return proc.returncode, proc.stdout

    def start_role_playbook(self, directory, output, playbook="upgrade.yml", extra=(), report=None, node_groups=None,
                            host_vars=None):
        """Start :meth:`role_playbook_command` in its own session (so that the whole process tree can be signalled as AWX
        cancels a job), its output written to the file ``output``; the ``subprocess.Popen``."""
        cmd, env = self.role_playbook_command(directory, playbook, extra, report, False, node_groups, host_vars)
        with open(output, "w", encoding="utf-8") as sink:
            return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,  # pylint: disable=consider-using-with
                                    start_new_session=True)

    def run_playbook(self, playbook, extra_vars=None, check=False, inventory="localhost,", env=None, timeout=1800):
        cmd = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, playbook]
        if extra_vars:
            cmd += ["-e", json.dumps(extra_vars)]
        if check:
            cmd.append("--check")
        proc = subprocess.run(cmd, cwd=ROOT, env=self.ansible_env(env), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
        return proc.returncode, proc.stdout
