"""The AWS half of the sandbox: moto served over HTTP in-process, patched for fidelity, with fault
injection and an event for every request.

moto keeps its state in process-wide backends, so one AwsSandbox runs per process at a time; ``start()``
resets moto's state. moto is imported inside ``start()`` because ``MOTO_AMIS_PATH`` (the sandbox's own
two-image AMI catalog) must be set before moto's EC2 models load.
"""

import base64
import functools
import io
import json
import os
import re
import threading
from urllib.parse import parse_qs

from . import faults as faults_mod

ACCOUNT_ID = "123456789012"
OLD_AMI = {"id": "ami-0129000000000a001", "name": "sandbox-node-1.29-v20240101", "date": "2024-01-01T00:00:00.000Z"}
NEW_AMI = {"id": "ami-0130000000000a002", "name": "sandbox-node-1.30-v20240201", "date": "2024-02-01T00:00:00.000Z"}
AMI_OWNER = "602401143452"
SSM_PARAMETER = "/sandbox/ami/new"
EKS_CLUSTER = "sandbox"   # the EKS cluster whose DescribeCluster names the sandbox's API server (eks_cluster)
GROUP_PREFIX = "sandbox-nodes"
USER_DATA = "#!/bin/bash\nset -e\n/etc/eks/bootstrap.sh sandbox\n"
SIZE_ACTIONS_SERVICE = "autoscaling"

# An AMI tag that says which kubelet its instances really run, whatever the AMI's name says: an image pipeline that
# baked another kubelet into an image named for one version (set through the EC2 API, CreateTags, as any tag)
KUBELET_TAG = "sandbox.nodeops.io/kubelet-version"

_CREDENTIAL_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request")
_ROLLOUT_UA = re.compile(r"nodeops\.rollout/\S+(?:\s+[^\s/]+)?")
_READ_ONLY = ("Describe", "List", "Get")


def _ami_catalog():
    entries = []
    for ami, k8s in ((OLD_AMI, "1.29"), (NEW_AMI, "1.30")):
        entries.append({
            "ami_id": ami["id"],
            "name": ami["name"],
            "description": "Sandbox worker node image, Kubernetes %s" % k8s,
            "owner_id": AMI_OWNER,
            "public": True,
            "virtualization_type": "hvm",
            "architecture": "x86_64",
            "state": "available",
            "creation_date": ami["date"],
            "image_type": "machine",
            "image_location": "amazon/%s" % ami["name"],
            "hypervisor": "xen",
            "root_device_type": "ebs",
            "root_device_name": "/dev/xvda",
        })
    return entries


def client_name(user_agent):
    """Who sent a request: the ``nodeops.rollout/<version> <module>`` part of the User-Agent, else the
    sandbox's own clients ("sandbox"), else the whole User-Agent."""
    match = _ROLLOUT_UA.search(user_agent or "")
    if match:
        return match.group(0)
    if not user_agent or user_agent.split(" ", 1)[0] == "sandbox":
        return "sandbox"
    return user_agent


@functools.lru_cache(maxsize=None)
def service_of(signing_name):
    """botocore's name of the service whose requests are signed for ``signing_name`` (``monitoring``: ``cloudwatch``)."""
    import botocore.session  # pylint: disable=import-outside-toplevel
    session = botocore.session.get_session()
    for name in session.get_available_services():
        metadata = session.get_service_data(name)["metadata"]
        if (metadata.get("signingName") or metadata.get("endpointPrefix") or name) == signing_name:
            return name
    return signing_name


@functools.lru_cache(maxsize=None)
def _rest_operations(service):
    """``[(method, path regex, operation)]`` of a REST service (signing name ``service``, such as ``eks``) from botocore's
    model: a REST request names its operation by its method and path only; ``[]`` for other protocols."""
    import botocore.session  # pylint: disable=import-outside-toplevel
    data = botocore.session.get_session().get_service_data(service_of(service))
    if not data["metadata"].get("protocol", "").startswith("rest"):
        return []
    out = []
    for operation, spec in data["operations"].items():
        uri = spec["http"]["requestUri"].split("?", 1)[0]
        pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(uri.rstrip("/") or "/"))
        out.append((spec["http"]["method"], re.compile(pattern + "/?$"), operation))
    return out


def rest_action(service, method, path):
    """The operation a REST request (EKS's ``GET /clusters/sandbox``: ``DescribeCluster``) calls, or None."""
    for each_method, pattern, operation in _rest_operations(service or ""):
        if each_method == method and pattern.match(path):
            return operation
    return None


def image_kubelet(image):
    """The value of ``image``'s :data:`KUBELET_TAG` (a moto AMI, or None), or None."""
    if image is None:
        return None
    for tag in image.get_tags():
        if tag.get("key") == KUBELET_TAG:
            return tag.get("value") or None
    return None


class _InstanceEvents:
    """The event log as the fidelity layer writes to it, telling the sandbox of each ``instance.*`` event (a launch, a
    boot that completed, a termination, a detach): with the mutating API requests, every change of an instance."""

    def __init__(self, events, changed):
        self._events, self._changed = events, changed

    def emit(self, kind, **fields):
        if kind.startswith("instance."):
            self._changed()
        return self._events.emit(kind, **fields)

    def __getattr__(self, name):
        return getattr(self._events, name)


class _Gate:
    """WSGI middleware in front of moto: faults, serialisation of moto access, events."""

    def __init__(self, app, sandbox):
        self.app = app
        self.sandbox = sandbox

    def __call__(self, environ, start_response):
        body = b""
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length:
            body = environ["wsgi.input"].read(length)
            environ["wsgi.input"] = io.BytesIO(body)
        path = environ.get("PATH_INFO", "")
        if path.startswith("/moto-api"):
            with self.sandbox.lock:
                return [self._call_app(environ, start_response)[2]]
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        action = target.rsplit(".", 1)[-1] if target else None
        if not action:
            form = parse_qs(body.decode("utf-8", "replace")) if body else {}
            form = form or parse_qs(environ.get("QUERY_STRING", ""))
            action = (form.get("Action") or [None])[0]
        scope = _CREDENTIAL_SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
        service = scope.group(2) if scope else None
        action = action or rest_action(service, environ.get("REQUEST_METHOD"), path)
        client = client_name(environ.get("HTTP_USER_AGENT", ""))
        hold = self.sandbox.hold
        fault = "held" if hold is not None and hold.check("aws", action=action, client=client) else None
        fault = fault or self.sandbox.faults.draw(action)
        if fault == "held":
            # released after the harness killed the run: answered as unavailable, never applied
            status, headers, payload = faults_mod.render("unavailable", service, bool(target))
        elif fault:
            status, headers, payload = faults_mod.render(fault, service, bool(target))
        else:
            with self.sandbox.lock:
                status, headers, payload = self._call_app(environ, start_response=None)
                mutating = bool(action) and not action.startswith(_READ_ONLY)
                if mutating:
                    self.sandbox.changed()
                if mutating and service == SIZE_ACTIONS_SERVICE:
                    self.sandbox.report_sizes()
        start_response(status, headers)
        self.sandbox.events.emit(
            "aws.request", action=action, service=service, client=client,
            status=int(status.split(" ", 1)[0]), fault=fault, mutating=bool(action) and not action.startswith(_READ_ONLY))
        return [payload]

    def _call_app(self, environ, start_response):
        captured = {}
        chunks = []

        def capture(status, headers, exc_info=None):  # pylint: disable=unused-argument
            captured["status"], captured["headers"] = status, headers
            return chunks.append

        result = self.app(environ, capture)
        try:
            chunks.extend(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        payload = b"".join(chunks)
        if start_response is not None:
            start_response(captured["status"], captured["headers"])
        return captured["status"], captured["headers"], payload


class AwsSandbox:  # pylint: disable=too-many-instance-attributes
    """moto on ``http://host:port`` with the fidelity patches, fault injection and event logging.

    ``boot_seconds``: simulated seconds an instance stays ``pending`` / ``Pending``. ``seed``: seed of the
    fault draws. ``reconcile_seconds``: how often (simulated) a group retries launches it still owes.

    Events: ``aws.request`` {action, service, client, status, fault, mutating} for every request;
    ``instance.launched`` {instance_id, group, az, lt_id, lt_version, image_id, private_dns_name};
    ``instance.running`` {instance_id, group, az, ready_at}; ``instance.terminated`` {instance_id, group, az,
    reason: asg-terminate | scale-in | ec2-terminate}; ``instance.detached`` {instance_id, group};
    ``asg.size`` {group, min, max, desired, in_service} when min/max/desired change; ``asg.processes``
    {group, suspended}; ``asg.launch_failed`` {group, azs, reason, requested, launched};
    ``asg.launch_skipped`` {group, count, reason} while ``Launch`` is suspended.
    """

    def __init__(self, clock, events, state_dir, region="us-east-1", boot_seconds=40.0, host="127.0.0.1", port=0, seed=0,
                 reconcile_seconds=10.0):
        if boot_seconds is None or float(boot_seconds) < 0:
            raise ValueError("boot_seconds must be a number of simulated seconds >= 0, got %r" % (boot_seconds,))
        if reconcile_seconds is None or float(reconcile_seconds) <= 0:
            raise ValueError("reconcile_seconds must be a number of simulated seconds > 0, got %r" % (reconcile_seconds,))
        self.reconcile_seconds = float(reconcile_seconds)
        self._stop = threading.Event()
        self.clock = clock
        self.events = events
        self.state_dir = state_dir
        self.region = region
        self._boot_seconds = float(boot_seconds)
        self.host = host
        self.port = port
        self.faults = faults_mod.Faults(seed=seed)
        self.hold = None     # a hold.Hold, set by the cluster: one request stopped for a kill
        self.lock = threading.RLock()
        self.url = None
        self._server = None
        self._threads = []
        self._ctx = None
        self._saved_env = None
        self._saved_amis = None
        self._sizes = {}
        self._moto = None
        self._records = {}   # instance id -> (info, state, group, record): what instances() made last
        self._generation = 0  # changes of instances so far (mutating requests, instance.* events)
        self._listed = (-1, 0.0, [])   # (generation, valid until (simulated s), list) of the last instances()

    @property
    def boot_seconds(self):
        """Simulated seconds from launch until an instance is running / InService (applies to later launches)."""
        return self._boot_seconds

    @boot_seconds.setter
    def boot_seconds(self, value):
        if value is None or isinstance(value, bool) or float(value) < 0:
            raise ValueError("boot_seconds must be a number of simulated seconds >= 0, got %r" % (value,))
        self._boot_seconds = float(value)
        if self._ctx is not None:
            self._ctx.boot_seconds = self._boot_seconds

    # ------------------------------------------------------------------ lifecycle

    def start(self):
        if self._server is not None:
            raise RuntimeError("AwsSandbox already started at %s" % self.url)
        os.makedirs(self.state_dir, exist_ok=True)
        catalog = _ami_catalog()
        amis_path = os.path.join(self.state_dir, "amis.json")
        with open(amis_path, "w", encoding="utf-8") as fh:
            json.dump(catalog, fh, indent=1)
        self._saved_env = os.environ.get("MOTO_AMIS_PATH")
        os.environ["MOTO_AMIS_PATH"] = amis_path

        # pylint: disable=import-outside-toplevel
        from werkzeug.serving import make_server
        from moto.autoscaling.models import autoscaling_backends
        from moto.ec2.models import amis as moto_amis
        from moto.ec2.models import ec2_backends
        from moto.elbv2.models import elbv2_backends
        from moto.moto_api import _internal as moto_api
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from . import fidelity, speed, targets

        # moto may have been imported earlier in this process with another catalog: use ours either way.
        self._saved_amis = moto_amis.AMIS
        moto_amis.AMIS = catalog
        moto_api.moto_api_backend.reset()
        fidelity.install()
        speed.install()
        self._moto = {"asg": autoscaling_backends, "ec2": ec2_backends, "elbv2": elbv2_backends, "fidelity": fidelity,
                      "targets": targets}
        self._ctx = fidelity.Context(self.clock, _InstanceEvents(self.events, self.changed), self._boot_seconds, self.faults,
                                     lock=self.lock)
        fidelity.activate(self._ctx)

        class Handler(MotoRequestHandler):
            disable_nagle_algorithm = True

            def log(self, type, message, *args):  # pylint: disable=redefined-builtin,unused-argument
                return None

        app = _Gate(DomainDispatcherApplication(create_backend_app), self)
        self._sizes = {}
        self._server = make_server(self.host, self.port, app, threaded=True, request_handler=Handler)
        host, port = self._server.server_address[:2]
        self.url = "http://%s:%d" % (host, port)
        self._stop.clear()
        serve = functools.partial(self._server.serve_forever, poll_interval=0.1)   # stop() waits up to one interval
        for name, target in (("aws-sandbox-http", serve), ("aws-sandbox-boot", self._ctx.run_boot_loop),
                             ("aws-sandbox-reconcile", self._reconcile_loop)):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self):
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._stop.set()
        self._ctx.stop()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads = []
        self._server = None
        self._moto["fidelity"].deactivate()
        from moto.ec2.models import amis as moto_amis  # pylint: disable=import-outside-toplevel
        moto_amis.AMIS = self._saved_amis
        if self._saved_env is None:
            os.environ.pop("MOTO_AMIS_PATH", None)
        else:
            os.environ["MOTO_AMIS_PATH"] = self._saved_env

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _reconcile_loop(self):
        """AWS keeps retrying launches a group still owes (for example after an AZ had no capacity)."""
        while not self._stop.wait(self.clock.wall_for(self.reconcile_seconds)):
            self.reconcile()

    def reconcile(self):
        """Launch what each group owes (desired above its instance count), unless ``Launch`` is suspended; end what has
        timed out (lifecycle hooks)."""
        with self.lock:
            for tick in self._moto["fidelity"].RECONCILE_HOOKS:
                tick(self._backend("asg"), self.clock.now())
            for group in list(self._backend("asg").autoscaling_groups.values()):
                owed = (group.desired_capacity or 0) - len(group.active_instances())
                if owed > 0 and "Launch" not in group._suspended_processes:  # pylint: disable=protected-access
                    short = self.faults.insufficient_capacity_azs()
                    if any(az not in short for az in group.availability_zones):
                        group.replace_autoscaling_group_instances(owed, group.get_propagated_tags())

    # ------------------------------------------------------------------ clients

    def client(self, service, user_agent="sandbox", user_agent_extra=None, max_attempts=1):
        """A boto3 client for this endpoint (dummy credentials; ``max_attempts`` total attempts)."""
        import boto3  # pylint: disable=import-outside-toplevel
        from botocore.config import Config  # pylint: disable=import-outside-toplevel
        config = Config(user_agent=user_agent, user_agent_extra=user_agent_extra,
                        retries={"mode": "standard", "total_max_attempts": max_attempts})
        return boto3.client(service, region_name=self.region, endpoint_url=self.url, aws_access_key_id="sandbox",
                            aws_secret_access_key="sandbox", config=config)

    def env(self):
        """Environment for a process that should talk to this endpoint (boto3 honours AWS_ENDPOINT_URL)."""
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": "sandbox", "AWS_SECRET_ACCESS_KEY": "sandbox",
                "AWS_DEFAULT_REGION": self.region, "AWS_REGION": self.region}

    # ------------------------------------------------------------------ provisioning

    def provision(self, nodes=6, azs=3, groups=1, instance_type="m5.large"):
        """Create the VPC, subnets, SSM parameter, launch templates and Auto Scaling groups (``nodes`` each)."""
        if self._server is None:
            raise RuntimeError("call start() before provision()")
        for field, value, low in (("nodes", nodes, 0), ("azs", azs, 1), ("groups", groups, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError("%s must be an integer >= %d, got %r" % (field, low, value))
        if not isinstance(instance_type, str) or "." not in instance_type:
            raise ValueError("instance_type must be an EC2 instance type such as 'm5.large', got %r" % (instance_type,))
        ec2 = self.client("ec2")
        zones = sorted(z["ZoneName"] for z in ec2.describe_availability_zones()["AvailabilityZones"])
        if azs > len(zones):
            raise ValueError("azs must be between 1 and %d (the Availability Zones of %s: %s), got %d"
                             % (len(zones), self.region, ", ".join(zones), azs))
        vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnets = {}
        for index, zone in enumerate(zones[:azs]):
            cidr = "10.0.%d.0/19" % (index * 32)
            subnets[zone] = ec2.create_subnet(VpcId=vpc_id, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
        self.client("ssm").put_parameter(Name=SSM_PARAMETER, Value=NEW_AMI["id"], Type="String",
                                         Description="Latest sandbox worker node image")
        asg = self.client("autoscaling")
        user_data = base64.b64encode(USER_DATA.encode("utf-8")).decode("ascii")
        created = []
        for index in range(groups):
            name = GROUP_PREFIX if index == 0 else "%s-%d" % (GROUP_PREFIX, index + 1)
            template = ec2.create_launch_template(
                LaunchTemplateName=name, VersionDescription="initial",
                LaunchTemplateData={"ImageId": OLD_AMI["id"], "InstanceType": instance_type, "UserData": user_data},
            )["LaunchTemplate"]
            asg.create_auto_scaling_group(
                AutoScalingGroupName=name, MinSize=nodes, MaxSize=nodes, DesiredCapacity=nodes,
                LaunchTemplate={"LaunchTemplateId": template["LaunchTemplateId"], "Version": "1"},
                VPCZoneIdentifier=",".join(subnets.values()),
                Tags=[{"Key": "eks:nodegroup-name", "Value": name, "PropagateAtLaunch": True},
                      {"Key": "kubernetes.io/cluster/sandbox", "Value": "owned", "PropagateAtLaunch": True}],
            )
            created.append({"name": name, "launch_template_id": template["LaunchTemplateId"], "launch_template_name": name})
        return {"region": self.region, "vpc_id": vpc_id, "subnets": subnets, "amis": {"old": OLD_AMI["id"], "new": NEW_AMI["id"]},
                "ssm_parameter": SSM_PARAMETER, "groups": created}

    # ------------------------------------------------------------------ in-process views

    def _backend(self, kind):
        return self._moto[kind][ACCOUNT_ID][self.region]

    def age_instances(self, instance_ids, seconds):
        """Make instances ``seconds`` older: their EC2 ``LaunchTime`` moves that far back, as if they had been launched
        then (nodes that have run for weeks, which a test cannot wait for). Returns the launch times, by instance id."""
        # pylint: disable=import-outside-toplevel
        import datetime
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
            raise ValueError("seconds: %r is not allowed; use how many seconds older the instances get, above 0" % (seconds,))
        if not isinstance(instance_ids, list) or not instance_ids:
            raise ValueError("instance_ids: %r is not allowed; use a list of instance ids" % (instance_ids,))
        found = {}
        with self.lock:
            for reservation in list(self._backend("ec2").reservations.values()):
                for instance in reservation.instances:
                    if instance.id in instance_ids:
                        instance.launch_time = instance.launch_time - datetime.timedelta(seconds=seconds)
                        found[instance.id] = instance.launch_time.strftime("%Y-%m-%dT%H:%M:%SZ")
        missing = sorted(set(instance_ids) - set(found))
        if missing:
            raise ValueError("instance_ids: %s not found" % ", ".join(missing))
        self.changed()
        return found

    def register_eks_cluster(self, endpoint, ca_data="", name=EKS_CLUSTER):
        """An EKS cluster ``name`` whose DescribeCluster answers ``endpoint`` (the sandbox's API server) and ``ca_data``
        (base64 of its CA, empty for plain HTTP), as EKS does for a cluster: what ``eks_cluster`` connects through. moto
        gives a created cluster an endpoint and CA of its own invention; the sandbox sets them to its API server's."""
        # pylint: disable=import-outside-toplevel
        from moto.eks.models import eks_backends
        subnets = [subnet["SubnetId"] for subnet in self.client("ec2").describe_subnets()["Subnets"]]
        self.client("eks").create_cluster(name=name, roleArn="arn:aws:iam::%s:role/sandbox-eks-cluster" % ACCOUNT_ID,
                                          resourcesVpcConfig={"subnetIds": subnets}, version="1.30")
        with self.lock:
            cluster = eks_backends[ACCOUNT_ID][self.region].clusters[name]
            cluster.endpoint = endpoint
            cluster.certificate_authority = {"data": ca_data}
        return name

    def publish_parameter(self, name, value):
        """Publish an SSM parameter as AWS does under ``/aws/service/...`` (EKS's ``/aws/service/eks/optimized-ami/1.30/
        .../image_id``), a name no account may write with PutParameter: a new version of it holding ``value``."""
        # pylint: disable=import-outside-toplevel
        import datetime
        from moto.ssm.models import Parameter, ssm_backends
        if not isinstance(name, str) or not name.startswith("/aws/service/") or not isinstance(value, str) or not value:
            raise ValueError("publish a parameter under /aws/service/ with a value, got %r = %r" % (name, value))
        with self.lock:
            versions = ssm_backends[ACCOUNT_ID][self.region]._parameters[name]   # pylint: disable=protected-access
            versions.append(Parameter(account_id=ACCOUNT_ID, name=name, value=value, parameter_type="String", description=None,
                                      allowed_pattern=None, keyid=None, version=len(versions) + 1, data_type="text",
                                      last_modified_date=datetime.datetime.now(datetime.timezone.utc)))
        self.events.emit("ssm.published", name=name, value=value)

    def changed(self):
        """Note that an instance may have changed (a mutating request, a launch, a boot, a termination)."""
        self._generation += 1

    def instances(self):
        """Every EC2 instance in the region as plain dicts (read in-process, no HTTP). Callers must not change them.

        Instances in a warm pool are left out: their user data does not join them to the cluster until they leave it.
        Lock-free, so a long request (a full DescribeInstances of 1000 instances takes seconds in moto)
        does not stall the caller: list() copies of moto's containers are atomic, and each instance's
        record is complete once its launch has finished (instances still being launched are left out).
        The node lifecycle controller reads this 20 times a second: while nothing changed (``changed``) the same list
        is returned, and an instance's dict is made again only when its state or group changed.
        """
        generation = self._generation
        now = self.clock.now()
        if self._listed[0] == generation and now < self._listed[1]:
            return self._listed[2]
        fidelity = self._moto["fidelity"]
        cache, fresh = self._records, {}
        out, turns = [], float("inf")
        for reservation in list(self._backend("ec2").reservations.values()):
            for instance in list(reservation.instances):
                info = instance.__dict__.get("_sb_info")
                if info is None or info.get("warm"):
                    continue   # a warm pool instance does not join the cluster until it leaves the pool
                state = fidelity.state_name(instance, now)
                if state == "pending":
                    # it turns running with the clock: the list holds until the first such turn
                    turns = min(turns, getattr(instance.__dict__.get("_state"), "ready_at", turns))
                hit = cache.get(instance.id)
                if hit is not None and hit[0] is info and hit[1] == state and hit[2] == info["group"]:
                    record = hit[3]
                else:
                    record = dict(info)
                    record["launch_template"] = dict(info["launch_template"])
                    record["state"] = state
                    # the image's name says which kubelet an EKS-optimized AMI runs, unless its KUBELET_TAG says
                    # otherwise (kube/controllers/nodes.py)
                    image = self._backend("ec2").amis.get(info.get("image_id"))
                    record["image_name"] = getattr(image, "name", None)
                    record["image_kubelet"] = image_kubelet(image)
                fresh[instance.id] = (info, state, info["group"], record)
                out.append(record)
        self._records = fresh
        self._listed = (generation, turns, out)
        return out

    def groups(self):
        """Every Auto Scaling group as {name: {min, max, desired, in_service, instances, suspended}}."""
        fidelity = self._moto["fidelity"]
        with self.lock:
            return {g.name: {"min": g.min_size, "max": g.max_size, "desired": g.desired_capacity,
                             "in_service": fidelity.in_service_count(g), "instances": len(g.instance_states),
                             "suspended": sorted(g._suspended_processes)}  # pylint: disable=protected-access
                    for g in self._backend("asg").autoscaling_groups.values()}

    def has_instance_target_groups(self):
        """Whether any target group of instances exists (lock-free: a copy of moto's dict is atomic)."""
        elbv2 = self._moto["elbv2"][ACCOUNT_ID][self.region]
        return any(tg.target_type == "instance" for tg in list(elbv2.target_groups.values()))

    def create_balancer(self, name, vpc_id, subnets, port, delay):
        """A Network Load Balancer forwarding to one instance target group on ``port`` (a node port), as the cloud
        provider's service controller makes one for a Service of type LoadBalancer: ``(DNS name, target group arn)``."""
        elbv2 = self.client("elbv2", max_attempts=3)
        balancer = elbv2.create_load_balancer(Name=name, Subnets=list(subnets), Type="network")["LoadBalancers"][0]
        group = elbv2.create_target_group(Name=name, Protocol="TCP", Port=int(port), VpcId=vpc_id,
                                          TargetType="instance")["TargetGroups"][0]
        elbv2.modify_target_group_attributes(TargetGroupArn=group["TargetGroupArn"], Attributes=[
            {"Key": "deregistration_delay.timeout_seconds", "Value": str(int(delay))}])
        elbv2.create_listener(LoadBalancerArn=balancer["LoadBalancerArn"], Protocol="TCP", Port=int(port),
                              DefaultActions=[{"Type": "forward", "TargetGroupArn": group["TargetGroupArn"]}])
        return balancer["DNSName"], group["TargetGroupArn"]

    def serve_nodes(self, arns, included):
        """The service controller keeps every ``included`` running instance a target of the target groups ``arns``
        (``targets.serve``)."""
        with self.lock:
            self._moto["targets"].serve(self._moto["elbv2"][ACCOUNT_ID][self.region], arns, included)

    def exclude_targets(self, excluded, included):
        """The load balancer controller's changes (``targets.exclude``): ``excluded`` instances leave every instance
        target group, ``included`` ones it had taken out come back."""
        with self.lock:
            self._moto["targets"].exclude(self._moto["elbv2"][ACCOUNT_ID][self.region], excluded, included)

    def report_sizes(self):
        """Emit ``asg.size`` for each group whose min/max/desired changed since the last report."""
        fidelity = self._moto["fidelity"]
        with self.lock:
            for group in self._backend("asg").autoscaling_groups.values():
                size = (group.min_size, group.max_size, group.desired_capacity)
                if self._sizes.get(group.name) != size:
                    self._sizes[group.name] = size
                    self.events.emit("asg.size", group=group.name, min=size[0], max=size[1], desired=size[2],
                                     in_service=fidelity.in_service_count(group))
