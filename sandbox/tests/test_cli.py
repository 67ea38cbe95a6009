"""The sandbox's command line, driven exactly as a user drives it.

Every sandbox here is started with ``python -m sandbox up --detach`` in a subprocess and observed only
from outside: the files it writes, boto3 against its AWS endpoint, the official Kubernetes client and kubectl
against its API server, the sockets its process listens on, and ``report``. Sandboxes that tests only read
(or restore after use) are shared by the tests of this file; the planted violation gets its own, because
its report must hold nothing but what the test did.
"""

import base64
import collections
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from kubernetes import client, config
from kubernetes.client.rest import ApiException

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "sandbox", "workloads", "demo.yaml")
KUBECTL = shutil.which("kubectl")
SPEED = 40.0
WAIT = 60.0   # wall seconds for anything the sandbox does on its own; generous for a busy machine
ROLLOUT_UA = "nodeops.rollout/0.1.0 test"
REPORT_KEYS = {"pdb_violations", "pdb_violation_details", "killed_without_eviction", "killed_without_eviction_details",
               "deleted_without_eviction", "deleted_without_eviction_details", "min_ready_schedulable_nodes",
               "ready_schedulable_nodes_at_start", "evictions", "deployments", "api_requests", "nodes_replaced",
               "rollout_requests_per_replaced_node", "asg_size_history"}
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


# ---- driving the CLI -----------------------------------------------------------------------------------------------
def cli(*args, check=True, timeout=240, env=None):
    """Run ``python -m sandbox ARGS`` from the repository root, as a user does."""
    proc = subprocess.run([sys.executable, "-m", "sandbox"] + [str(a) for a in args], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError("sandbox %s failed (rc %d):\n%s\n%s" % (" ".join(map(str, args)), proc.returncode,
                                                                     proc.stdout, proc.stderr))
    return proc


class Box:
    """One sandbox started through the CLI, with clients built only from what it wrote to its state directory."""

    def __init__(self, state_dir, **options):
        self.dir = str(state_dir)
        args = ["up", "--state-dir", self.dir, "--detach", "--speed", options.pop("speed", SPEED)]
        for workload in options.pop("workloads", ()):
            args += ["--workload", workload]
        for key, value in options.items():
            args += ["--" + key, value]
        self.up = cli(*args)
        with open(os.path.join(self.dir, "sandbox.json"), encoding="utf-8") as fh:
            self.state = json.load(fh)
        api_client = config.new_client_from_config(config_file=os.path.join(self.dir, "kubeconfig"))
        api_client.user_agent = "test-cli"
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)

    def aws(self, service, attempts=1, user_agent_extra=None):
        return boto3.client(service, region_name=self.state["region"], endpoint_url=self.state["aws_url"],
                            aws_access_key_id="testing", aws_secret_access_key="testing",
                            config=Config(user_agent_extra=user_agent_extra,
                                          retries={"mode": "standard", "total_max_attempts": attempts}))

    def cli(self, *args, **kwargs):
        return cli(args[0], "--state-dir", self.dir, *args[1:], **kwargs)

    def report(self):
        return json.loads(self.cli("report").stdout)

    def group(self, name):
        return self.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]

    def instance_azs(self, name):
        return {i["InstanceId"]: i["AvailabilityZone"] for i in self.group(name)["Instances"]}

    def sim_sleep(self, sim_seconds):
        time.sleep(sim_seconds / self.state["speed"])

    def down(self):
        self.api_client.close()
        return self.cli("down", check=False)


def wait_for(what, predicate, timeout=WAIT, interval=0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def listening_addresses(pid):
    """{(ip, port)} of the TCP sockets process ``pid`` listens on, read from /proc as ss(8) does."""
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    out = set()
    for table, family in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 6)):
        if not os.path.exists(table):
            continue
        with open(table, encoding="ascii") as fh:
            next(fh)
            for line in fh:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state != "0A" or inode not in inodes:   # 0A: LISTEN
                    continue
                addr, port = local.split(":")
                raw = bytes.fromhex(addr)
                if family == 4:
                    ip = socket.inet_ntop(socket.AF_INET, raw[::-1])
                else:
                    ip = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
                out.add((ip, int(port, 16)))
    return out


def port_of(url):
    return int(url.rsplit(":", 1)[1])


def refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def node_ready(node):
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def pod_ready(pod):
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def eviction(pod):
    return client.V1Eviction(metadata=client.V1ObjectMeta(name=pod.metadata.name, namespace=pod.metadata.namespace))


def running_pods(box, namespace, app):
    return [p for p in box.core.list_namespaced_pod(namespace, label_selector="app=%s" % app).items
            if p.metadata.deletion_timestamp is None and pod_ready(p)]


def budgets(box):
    return {p.metadata.name: p.status.disruptions_allowed
            for p in client.PolicyV1Api(box.api_client).list_namespaced_pod_disruption_budget("shop").items}


def demo_ready(box):
    """Every demo Deployment Ready and both budgets allowing one disruption, as with nothing going on."""
    deps = {d.metadata.name: d for d in box.apps.list_namespaced_deployment("shop").items}
    return set(deps) == {"web", "api", "checkout-worker"} and \
        all((d.status.ready_replicas or 0) == d.spec.replicas for d in deps.values()) and \
        budgets(box) == {"web": 1, "api": 1}


# ---- shared sandboxes -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def box(tmp_path_factory):
    """Two groups of 4 instances over 3 AZs; tests may change it but put it back as they found it."""
    sandbox = Box(tmp_path_factory.mktemp("main"), nodes=4, azs=3, groups=2)
    yield sandbox
    sandbox.down()


@pytest.fixture(scope="module")
def demo(box):
    """The demo workload on ``box``, created with ``apply`` and Ready."""
    applied = box.cli("apply", DEMO)
    wait_for("the demo Deployments to be Ready", lambda: demo_ready(box))
    return applied


@pytest.fixture(scope="module")
def second(tmp_path_factory, box):  # pylint: disable=unused-argument
    """A second sandbox, started while ``box`` runs: side by side."""
    sandbox = Box(tmp_path_factory.mktemp("second"), nodes=2, azs=2)
    yield sandbox
    sandbox.down()


@pytest.fixture
def clear_faults(box):
    yield
    box.cli("fault", "--clear")


# ---- up: the files and what they point at -----------------------------------------------------------------------------
def test_up_detach_writes_kubeconfig_aws_env_and_sandbox_json(box):
    assert "sandbox up" in box.up.stdout
    for name in ("kubeconfig", "aws.env", "sandbox.json"):
        assert os.path.getsize(os.path.join(box.dir, name)) > 0, name
    st = box.state
    assert pid_alive(st["pid"])
    assert st["pid"] != os.getpid()
    assert st["ports"] == {"aws": port_of(st["aws_url"]), "kubernetes": port_of(st["kube_url"]),
                           "control": port_of(st["control_url"])}
    assert len(set(st["ports"].values())) == 3
    assert [g["name"] for g in st["groups"]] == ["sandbox-nodes", "sandbox-nodes-2"]
    ec2 = box.aws("ec2")
    images = {i["ImageId"]: i for i in ec2.describe_images(ImageIds=[st["amis"]["old"], st["amis"]["new"]])["Images"]}
    old, new = images[st["amis"]["old"]], images[st["amis"]["new"]]
    assert old["Name"] != new["Name"]
    assert old["CreationDate"] < new["CreationDate"]
    templates = {t["LaunchTemplateId"]: t["LaunchTemplateName"] for t in ec2.describe_launch_templates()["LaunchTemplates"]}
    for group in st["groups"]:
        assert templates[group["launch_template_id"]] == group["name"]
        assert box.group(group["name"])["LaunchTemplate"]["LaunchTemplateId"] == group["launch_template_id"]


def test_aws_env_is_sourceable_and_reaches_the_aws_endpoint(box):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "KUBECONFIG"}
    env["HOME"] = box.dir   # no ~/.aws of the user's
    script = ("import boto3, json; from kubernetes import client, config; config.load_kube_config(); "
              "groups = boto3.client('autoscaling').describe_auto_scaling_groups()['AutoScalingGroups']; "
              "nodes = client.CoreV1Api().list_node().items; "
              "print(json.dumps({'groups': sorted(g['AutoScalingGroupName'] for g in groups), 'nodes': len(nodes)}))")
    proc = subprocess.run(["bash", "-c", 'source "$1" && exec "$2" -c "$3"', "bash", os.path.join(box.dir, "aws.env"),
                           sys.executable, script], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"groups": ["sandbox-nodes", "sandbox-nodes-2"], "nodes": 8}


def test_kubeconfig_works_with_the_client_and_kubectl(box):
    nodes = box.core.list_node().items
    assert len(nodes) == 8 and all(node_ready(n) for n in nodes)
    if KUBECTL:   # kubectl is optional on a developer's machine; the client check above always runs
        out = subprocess.run([KUBECTL, "--kubeconfig", os.path.join(box.dir, "kubeconfig"), "get", "nodes", "-o", "json"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        names = {n["metadata"]["name"] for n in json.loads(out)["items"]}
        assert names == {n.metadata.name for n in nodes}


def test_each_group_holds_its_instances_spread_over_the_azs_on_version_1_of_the_old_ami(box):
    ec2 = box.aws("ec2")
    for group in box.state["groups"]:
        asg = box.group(group["name"])
        assert (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"]) == (4, 4, 4)
        assert len(asg["Instances"]) == 4
        assert all(i["LifecycleState"] == "InService" for i in asg["Instances"])
        per_az = collections.Counter(i["AvailabilityZone"] for i in asg["Instances"])
        assert set(per_az) == set(box.state["subnets"]) and len(per_az) == 3
        assert max(per_az.values()) - min(per_az.values()) <= 1
        assert {i["LaunchTemplate"]["Version"] for i in asg["Instances"]} == {"1"}
        version = ec2.describe_launch_template_versions(LaunchTemplateId=group["launch_template_id"])["LaunchTemplateVersions"]
        assert [v["VersionNumber"] for v in version] == [1]
        data = version[0]["LaunchTemplateData"]
        assert data["ImageId"] == box.state["amis"]["old"]
        assert data["InstanceType"] == "m5.large"
        assert base64.b64decode(data["UserData"]).decode().startswith("#!/bin/bash")
        ids = [i["InstanceId"] for i in asg["Instances"]]
        described = [i for r in ec2.describe_instances(InstanceIds=ids)["Reservations"] for i in r["Instances"]]
        assert {i["ImageId"] for i in described} == {box.state["amis"]["old"]}
        assert {i["State"]["Name"] for i in described} == {"running"}


def test_the_kube_system_daemonset_is_ready_on_every_node(box):
    nodes = {n.metadata.name for n in box.core.list_node().items}
    ds = box.apps.read_namespaced_daemon_set("node-agent", "kube-system")
    assert ds.status.desired_number_scheduled == ds.status.number_ready == len(nodes) == 8
    pods = box.core.list_namespaced_pod("kube-system").items
    assert sorted(p.spec.node_name for p in pods if pod_ready(p)) == sorted(nodes)


def test_every_port_is_bound_to_loopback_only(box):
    listening = listening_addresses(box.state["pid"])
    assert {port for _ip, port in listening} == set(box.state["ports"].values())
    assert {ip for ip, _port in listening} == {"127.0.0.1"}


def test_apply_creates_the_workload_through_the_kubernetes_api(box, demo):
    assert demo.stdout.strip() == "applied %s" % DEMO
    creates = [e for e in map(json.loads, open(box.state["events"], encoding="utf-8"))
               if e["kind"] == "k8s.request" and e.get("verb") == "create" and e.get("namespace") == "shop"
               or e["kind"] == "k8s.request" and e.get("resource") == "namespaces" and e.get("name") == "shop"]
    assert {(e["resource"], e["name"]) for e in creates} >= {
        ("namespaces", "shop"), ("deployments", "web"), ("deployments", "api"), ("deployments", "checkout-worker"),
        ("poddisruptionbudgets", "web"), ("poddisruptionbudgets", "api")}
    assert {e["client"] for e in creates} == {"sandbox-apply"}
    assert all(e["code"] == 201 for e in creates)
    assert demo_ready(box)


def test_apply_of_objects_that_exist_says_so_as_kubectl_create_does(box, demo):  # pylint: disable=unused-argument
    proc = box.cli("apply", DEMO, check=False)
    assert proc.returncode != 0
    assert DEMO in proc.stderr and 'deployments.apps "web" already exists' in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert demo_ready(box)


def test_apply_of_a_missing_file_is_refused_naming_it(box):
    proc = box.cli("apply", "/nonexistent/workload.yaml", check=False)
    assert proc.returncode != 0
    assert "/nonexistent/workload.yaml" in proc.stderr


# ---- faults, each through the CLI ----------------------------------------------------------------------------------------
def test_aws_throttle_on_one_action(box, clear_faults):  # pylint: disable=unused-argument
    asg = box.aws("autoscaling")
    out = box.cli("fault", "--aws-throttle", "SetDesiredCapacity=1").stdout
    assert "SetDesiredCapacity" in out
    with pytest.raises(ClientError) as info:
        asg.set_desired_capacity(AutoScalingGroupName="sandbox-nodes", DesiredCapacity=4)
    assert info.value.response["Error"]["Code"] == "Throttling"
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    with pytest.raises(ClientError) as info:   # rate 1: botocore's retries meet the same answer
        box.aws("autoscaling", attempts=3).set_desired_capacity(AutoScalingGroupName="sandbox-nodes", DesiredCapacity=4)
    assert info.value.response["Error"]["Code"] == "Throttling"
    assert info.value.response["ResponseMetadata"]["RetryAttempts"] == 2
    assert box.group("sandbox-nodes")["DesiredCapacity"] == 4     # other actions are not throttled
    box.cli("fault", "--clear")
    asg.set_desired_capacity(AutoScalingGroupName="sandbox-nodes", DesiredCapacity=4)


def test_aws_5xx_on_one_action(box, clear_faults):  # pylint: disable=unused-argument
    box.cli("fault", "--aws-5xx", "DescribeAutoScalingGroups=1")
    asg = box.aws("autoscaling")
    with pytest.raises(ClientError) as info:
        asg.describe_auto_scaling_groups()
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert info.value.response["Error"]["Code"] == "InternalFailure"
    assert box.aws("ec2").describe_instances()["Reservations"]
    box.cli("fault", "--aws-5xx", "DescribeAutoScalingGroups=0")
    assert len(asg.describe_auto_scaling_groups()["AutoScalingGroups"]) == 2


def test_k8s_429_on_evictions(box, demo, clear_faults):  # pylint: disable=unused-argument
    pod = running_pods(box, "shop", "checkout-worker")[0]    # no budget covers it: only the fault can refuse
    box.cli("fault", "--k8s-429", "evict=1")
    with pytest.raises(ApiException) as info:
        box.core.create_namespaced_pod_eviction(pod.metadata.name, "shop", eviction(pod))
    assert info.value.status == 429
    assert info.value.headers["Retry-After"] == "1"
    assert "disruption budget" not in info.value.body
    assert box.core.read_namespaced_pod(pod.metadata.name, "shop").metadata.deletion_timestamp is None
    assert box.core.list_namespaced_pod("shop").items      # other verbs are answered


def test_k8s_5xx_on_one_verb(box, demo, clear_faults):  # pylint: disable=unused-argument
    pod = running_pods(box, "shop", "web")[0]
    box.cli("fault", "--k8s-5xx", "list=1")
    with pytest.raises(ApiException) as info:
        box.core.list_namespaced_pod("shop")
    assert info.value.status == 500
    assert box.core.read_namespaced_pod(pod.metadata.name, "shop").metadata.uid == pod.metadata.uid


def test_faults_set_by_separate_commands_add_up(box, demo, clear_faults):  # pylint: disable=unused-argument
    name = box.core.list_node().items[0].metadata.name
    box.cli("fault", "--k8s-429", "evict=1")
    box.cli("fault", "--k8s-5xx", "list=1")
    box.cli("fault", "--aws-throttle", "SetDesiredCapacity=1")
    box.cli("fault", "--aws-5xx", "DescribeInstances=1")
    with pytest.raises(ApiException) as info:
        box.core.list_namespaced_pod("shop")
    assert info.value.status == 500
    assert box.core.read_node(name).metadata.name == name    # get still answers
    worker = box.apps.read_namespaced_deployment("checkout-worker", "shop")
    assert worker.status.ready_replicas == 1
    with pytest.raises(ApiException) as info:
        box.core.create_namespaced_pod_eviction("any", "shop", client.V1Eviction(metadata=client.V1ObjectMeta(name="any")))
    assert info.value.status == 429
    with pytest.raises(ClientError) as info:
        box.aws("autoscaling").set_desired_capacity(AutoScalingGroupName="sandbox-nodes", DesiredCapacity=4)
    assert info.value.response["Error"]["Code"] == "Throttling"
    with pytest.raises(ClientError) as info:
        box.aws("ec2").describe_instances()
    assert info.value.response["Error"]["Code"] == "InternalError"


def test_insufficient_capacity_keeps_new_instances_out_of_the_az(box, clear_faults):  # pylint: disable=unused-argument
    name = "sandbox-nodes-2"
    asg = box.aws("autoscaling")
    before = box.instance_azs(name)
    assert collections.Counter(before.values())["us-east-1b"] >= 1
    box.cli("fault", "--insufficient-capacity", "us-east-1b")
    try:
        asg.update_auto_scaling_group(AutoScalingGroupName=name, MaxSize=8, DesiredCapacity=7)
        launched = {i: az for i, az in box.instance_azs(name).items() if i not in before}
        assert len(launched) == 3
        assert "us-east-1b" not in launched.values()
        # the fault was the reason: cleared, the next launch goes to 1b, the AZ with the fewest instances
        box.cli("fault", "--insufficient-capacity", "")
        asg.set_desired_capacity(AutoScalingGroupName=name, DesiredCapacity=8)
        latest = {i: az for i, az in box.instance_azs(name).items() if i not in before and i not in launched}
        assert list(latest.values()) == ["us-east-1b"]
    finally:
        asg.update_auto_scaling_group(AutoScalingGroupName=name, MinSize=4, MaxSize=4, DesiredCapacity=4)
        wait_for("sandbox-nodes-2 back to 4 Ready nodes", lambda: len([
            n for n in box.core.list_node(label_selector="eks.amazonaws.com/nodegroup=%s" % name).items if node_ready(n)]) == 4)


def test_nodes_never_ready_registers_new_nodes_that_stay_not_ready(box, clear_faults):  # pylint: disable=unused-argument
    name = "sandbox-nodes"
    asg = box.aws("autoscaling")
    before = set(box.instance_azs(name))
    box.cli("fault", "--nodes-never-ready")
    try:
        asg.update_auto_scaling_group(AutoScalingGroupName=name, MaxSize=5, DesiredCapacity=5)
        new = [i for i in box.instance_azs(name) if i not in before]
        assert len(new) == 1

        def registered():
            return [n for n in box.core.list_node().items if (n.spec.provider_id or "").endswith("/" + new[0])]
        node = wait_for("the new instance's node to register", registered)[0]
        box.sim_sleep(60)   # six times the time a node takes to turn Ready
        node = box.core.read_node(node.metadata.name)
        assert not node_ready(node)
        ready = next(c for c in node.status.conditions if c.type == "Ready")
        assert (ready.status, ready.reason) == ("False", "KubeletNotReady")
        assert [(t.key, t.effect) for t in node.spec.taints] == [(NOT_READY_TAINT, "NoSchedule")]
        agent = box.core.list_namespaced_pod("kube-system", field_selector="spec.nodeName=" + node.metadata.name).items
        assert not any(pod_ready(p) for p in agent)
    finally:
        box.cli("fault", "--clear")
        for iid in set(box.instance_azs(name)) - before:
            asg.terminate_instance_in_auto_scaling_group(InstanceId=iid, ShouldDecrementDesiredCapacity=True)
        asg.update_auto_scaling_group(AutoScalingGroupName=name, MaxSize=4)
        wait_for("the extra node to go", lambda: len(box.core.list_node(
            label_selector="eks.amazonaws.com/nodegroup=%s" % name).items) == 4)


def test_eviction_latency_in_simulated_seconds(box, demo, clear_faults):  # pylint: disable=unused-argument
    pod = running_pods(box, "shop", "api")[0]
    box.cli("fault", "--eviction-latency", "20")
    started = time.monotonic()
    _body, status, _headers = box.core.create_namespaced_pod_eviction_with_http_info(pod.metadata.name, "shop", eviction(pod))
    took = (time.monotonic() - started) * box.state["speed"]
    assert status == 201
    assert took >= 20.0
    assert box.core.read_namespaced_pod(pod.metadata.name, "shop").metadata.deletion_timestamp is not None
    wait_for("the demo to be whole again", lambda: demo_ready(box))


def test_clear_removes_every_fault(box, demo):
    box.cli("fault", "--aws-throttle", "*=1", "--aws-5xx", "DescribeInstances=1", "--k8s-429", "*=1",
            "--k8s-5xx", "list=1", "--eviction-latency", "400", "--insufficient-capacity", "us-east-1a")
    with pytest.raises(ApiException):
        box.core.list_node()
    out = box.cli("fault", "--clear").stdout
    assert "clear" in out
    assert box.core.list_namespaced_pod("shop").items
    box.aws("autoscaling").set_desired_capacity(AutoScalingGroupName="sandbox-nodes", DesiredCapacity=4)
    assert box.aws("ec2").describe_instances()["Reservations"]
    pod = running_pods(box, "shop", "web")[0]
    started = time.monotonic()
    _body, status, _headers = box.core.create_namespaced_pod_eviction_with_http_info(
        pod.metadata.name, "shop", eviction(pod), dry_run="All")
    assert status == 201
    assert (time.monotonic() - started) * box.state["speed"] < 400


@pytest.mark.parametrize("args, option, hint", [
    (["--aws-throttle", "X=2"], "--aws-throttle", "between 0 and 1"),
    (["--aws-5xx", "DescribeInstances"], "--aws-5xx", "NAME=RATE"),
    (["--k8s-429", "evicts=1"], "--k8s-429", "evict"),
    (["--k8s-5xx", "list=-1"], "--k8s-5xx", "between 0 and 1"),
    (["--eviction-latency", "-5"], "--eviction-latency", ">= 0"),
    (["--insufficient-capacity", "us-east-1z"], "--insufficient-capacity", "us-east-1a, us-east-1b, us-east-1c"),
])
def test_bad_fault_input_is_refused_naming_the_option_and_changes_nothing(box, args, option, hint):
    proc = box.cli("fault", *args, check=False)
    assert proc.returncode != 0
    assert option in proc.stderr and hint in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert box.core.list_node().items
    assert box.aws("ec2").describe_instances()["Reservations"]


def test_bad_up_input_is_refused_naming_the_option(tmp_path):
    for args, option in ((["--nodes", "0"], "--nodes"), (["--azs", "7"], "--azs"), (["--speed", "0"], "--speed"),
                         (["--groups", "0"], "--groups"), (["--rbac"], "--rbac"),
                         (["--kube", "reference", "--rbac-file", str(tmp_path / "missing.yaml")], "--rbac-file")):
        proc = cli("up", "--state-dir", tmp_path / "bad", "--detach", *args, check=False, timeout=60)
        assert proc.returncode != 0
        assert option in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert not os.path.exists(tmp_path / "bad" / "sandbox.json")


# ---- two sandboxes, and the life cycle -------------------------------------------------------------------------------------
def test_two_sandboxes_side_by_side_have_independent_state(box, second):
    assert pid_alive(box.state["pid"]) and pid_alive(second.state["pid"])
    assert box.state["pid"] != second.state["pid"]
    assert not set(box.state["ports"].values()) & set(second.state["ports"].values())
    assert box.state["vpc_id"] != second.state["vpc_id"]
    assert len(box.group("sandbox-nodes")["Instances"]) == 4
    assert len(second.group("sandbox-nodes")["Instances"]) == 2
    assert set(second.state["subnets"]) == {"us-east-1a", "us-east-1b"}
    second.aws("ec2").create_launch_template(LaunchTemplateName="only-in-second",
                                             LaunchTemplateData={"ImageId": second.state["amis"]["new"]})
    names = {t["LaunchTemplateName"] for t in box.aws("ec2").describe_launch_templates()["LaunchTemplates"]}
    assert names == {"sandbox-nodes", "sandbox-nodes-2"}
    second.core.create_namespace({"metadata": {"name": "only-in-second"}})
    assert "only-in-second" not in {n.metadata.name for n in box.core.list_namespace().items}
    assert len(second.core.list_node().items) == 2 and len(box.core.list_node().items) == 8


def test_up_twice_on_one_state_dir_is_refused(second):
    with open(os.path.join(second.dir, "sandbox.json"), encoding="utf-8") as fh:
        before = fh.read()
    for extra in ([], ["--detach"]):
        proc = cli("up", "--state-dir", second.dir, *extra, check=False, timeout=60)
        assert proc.returncode != 0
        assert "already running" in proc.stderr and "down" in proc.stderr, proc.stderr
        assert str(second.state["pid"]) in proc.stderr
    with open(os.path.join(second.dir, "sandbox.json"), encoding="utf-8") as fh:
        assert fh.read() == before
    assert len(second.core.list_node().items) == 2


def test_down_stops_the_process_and_closes_its_ports_and_report_still_works(second):
    pid, ports = second.state["pid"], set(second.state["ports"].values())
    proc = second.down()
    assert proc.returncode == 0 and "sandbox down (pid %d)" % pid in proc.stdout
    assert not pid_alive(pid)
    assert all(refused(port) for port in ports)
    assert not os.path.exists(os.path.join(second.dir, "sandbox.json"))
    again = second.cli("down")
    assert "no sandbox running" in again.stdout
    report = second.report()
    assert REPORT_KEYS <= set(report)
    assert report["min_ready_schedulable_nodes"] == {"sandbox-nodes": 2}
    assert report["api_requests"]["aws"] and report["api_requests"]["kubernetes"]
    assert second.cli("fault", "--clear", check=False).returncode != 0


def test_report_of_a_directory_without_a_sandbox_is_refused(tmp_path):
    proc = cli("report", "--state-dir", tmp_path, check=False)
    assert proc.returncode != 0
    assert "no event log" in proc.stderr and str(tmp_path) in proc.stderr


# ---- the invariant checker catches a planted violation --------------------------------------------------------------------
def test_terminating_instances_with_pods_is_reported_as_killed_without_eviction(tmp_path):
    planted = Box(tmp_path / "planted", nodes=4, azs=2, speed=20.0, workloads=[DEMO])
    try:
        wait_for("the demo's budgets to settle", lambda: demo_ready(planted))
        nodes = planted.core.list_node().items
        # every node cordoned and no replacement launched: nothing the killed pods' controllers do in between
        # can make a budget healthier again, so the expected report is exact
        for node in nodes:
            planted.core.patch_node(node.metadata.name, {"spec": {"unschedulable": True}})
        planted.aws("autoscaling").suspend_processes(AutoScalingGroupName="sandbox-nodes", ScalingProcesses=["Launch"])
        rollout = planted.aws("autoscaling", user_agent_extra=ROLLOUT_UA)
        rollout.create_or_update_tags(Tags=[{"ResourceId": "sandbox-nodes", "ResourceType": "auto-scaling-group",
                                             "Key": "nodeops.rollout/test", "Value": "window", "PropagateAtLaunch": False}])

        pods = planted.core.list_pod_for_all_namespaces().items
        web_nodes = sorted({p.spec.node_name for p in pods if p.metadata.labels.get("app") == "web"})
        assert len(web_nodes) >= 2
        victims = web_nodes[:2]
        on_victims = [p for p in pods if p.spec.node_name in victims]
        expected = {"%s/%s" % (p.metadata.namespace, p.metadata.name) for p in on_victims if p.metadata.namespace != "kube-system"}
        daemon = {"%s/%s" % (p.metadata.namespace, p.metadata.name) for p in on_victims if p.metadata.namespace == "kube-system"}
        assert expected and len(daemon) == 2
        instance_of = {n.metadata.name: n.spec.provider_id.rsplit("/", 1)[1] for n in nodes}
        for name in victims:
            rollout.terminate_instance_in_auto_scaling_group(InstanceId=instance_of[name], ShouldDecrementDesiredCapacity=False)
        wait_for("the terminated instances' nodes to go", lambda: not {
            n.metadata.name for n in planted.core.list_node().items} & set(victims))

        report = planted.report()
        assert report["window"]["opened_by_client"] is True
        details = report["killed_without_eviction_details"]
        assert report["killed_without_eviction"] == len(expected) == len(details)
        assert {d["pod"] for d in details} == expected
        assert {d["node"] for d in details} == set(victims)
        assert all(d["reason"] == "node-gone" for d in details)
        assert report["deleted_without_eviction"] == 0
        assert report["evictions"]["total"] == 0

        # budgets: each kill of a covered pod leaves one healthy pod fewer; a violation is a kill leaving fewer than desired
        desired = {"shop/web": 2, "shop/api": 3}
        healthy = {"shop/web": 3, "shop/api": 4}
        want = []
        for pod in sorted(expected):
            app = pod.split("/")[1].rsplit("-", 2)[0]
            pdb = "shop/" + app
            if pdb in desired:
                healthy[pdb] -= 1
                if healthy[pdb] < desired[pdb]:
                    want.append(pdb)
        violations = report["pdb_violation_details"]
        assert report["pdb_violations"] == len(want) >= 1
        assert sorted(v["pdb"] for v in violations) == sorted(want)
        assert all(v["how"] == "killed" and v["healthy_after"] < v["desired"] and v["pod"] in expected for v in violations)
        assert {"pdb": "shop/web", "healthy_after": 1, "desired": 2} in [
            {k: v[k] for k in ("pdb", "healthy_after", "desired")} for v in violations]
    finally:
        planted.down()
