"""The load balancer controller of the sandbox's cluster, on either Kubernetes backend.

It does to the target groups what the AWS Load Balancer Controller (a TargetGroupBinding of instance targets) and the
cloud provider's service controller do with the label ``node.kubernetes.io/exclude-from-external-load-balancers``:
a node carrying it (any value) is deregistered from every instance target group that lists its instance, so the
target drains for the group's deregistration delay and leaves; a node whose label is taken off again is registered
again where the controller had taken it out. Registering new instances is left to their Auto Scaling group, which
registers each one once it is InService (``aws/targets.py``).

It is also the cloud provider's service controller for Services of type LoadBalancer without a
``spec.loadBalancerClass`` (a class names another controller, which the sandbox does not run): it makes each one a
Network Load Balancer with one instance target group on the Service's first node port (deregistration delay from the
annotation ``service.beta.kubernetes.io/aws-load-balancer-target-group-attributes``, e.g.
``deregistration_delay.timeout_seconds=600``, else AWS's 300 s), writes the load balancer's DNS name into the Service's
``status.loadBalancer.ingress``, and keeps every running node that is not excluded a target of it.

It looks at the nodes every ``sync_seconds`` of simulated time (the controllers react to a node's change within about
a second), and only while some instance target group or Service of type LoadBalancer exists, so a sandbox without load
balancers pays nothing.
"""

import threading

LABEL_EXCLUDE_LB = "node.kubernetes.io/exclude-from-external-load-balancers"
ATTRIBUTES_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes"
DEFAULT_DELAY = 300


def instance_of(node):
    """The EC2 instance id in the node's ``spec.providerID`` (``aws:///<az>/<id>``), or None."""
    provider = (node.get("spec") or {}).get("providerID") or ""
    tail = provider.rsplit("/", 1)[-1]
    return tail if tail.startswith("i-") else None


def split_nodes(nodes):
    """``(excluded, included)``: the instance ids of the labelled nodes and of the others."""
    excluded, included = set(), set()
    for node in nodes:
        instance_id = instance_of(node)
        if instance_id is None:
            continue
        labels = (node.get("metadata") or {}).get("labels") or {}
        (excluded if LABEL_EXCLUDE_LB in labels else included).add(instance_id)
    return excluded, included


def served_services(services):
    """The Services of type LoadBalancer this controller serves (no ``spec.loadBalancerClass``), by namespace/name."""
    return {"%s/%s" % (service["metadata"].get("namespace"), service["metadata"]["name"]): service for service in services
            if (service.get("spec") or {}).get("type") == "LoadBalancer" and not service["spec"].get("loadBalancerClass")}


def deregistration_delay(service):
    """The delay the Service's annotation asks of its target group, else AWS's default."""
    annotation = ((service.get("metadata") or {}).get("annotations") or {}).get(ATTRIBUTES_ANNOTATION) or ""
    for item in annotation.split(","):
        key, _sep, value = item.strip().partition("=")
        if key == "deregistration_delay.timeout_seconds" and value.strip().isdigit():
            return int(value)
    return DEFAULT_DELAY


class LoadBalancerController:
    """``nodes()`` returns the cluster's Node objects, ``services()`` its Services and ``set_status(namespace, name,
    status)`` writes a Service's status; ``aws`` is the sandbox's AwsSandbox; ``network`` its ``vpc_id`` and ``subnets``."""

    def __init__(self, clock, aws, nodes, sync_seconds=1.0, services=None, set_status=None, network=None):
        self.clock = clock
        self.aws = aws
        self.nodes = nodes
        self.services = services or (lambda: [])
        self.set_status = set_status
        self.network = network or {}
        self.balancers = {}   # namespace/name of a Service -> (DNS name, target group arn)
        self.error = None     # the last sync's failure, if any
        self.sync_seconds = float(sync_seconds)
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._run, name="sandbox-load-balancer-controller", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self):
        while not self._stop.wait(self.clock.wall_for(self.sync_seconds)):
            try:
                self.sync()
            except Exception as exc:  # pylint: disable=broad-except
                self.error = repr(exc)   # a failed sync is tried again on the next turn

    def sync(self):
        services = served_services(self.services())
        if not services and not self.aws.has_instance_target_groups():
            return
        excluded, included = split_nodes(self.nodes())
        self.aws.exclude_targets(excluded, included)
        for key, service in sorted(services.items()):
            if key not in self.balancers:
                self.balancers[key] = self._create(key, service)
            hostname = self.balancers[key][0]
            ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
            if [entry.get("hostname") for entry in ingress] != [hostname]:
                namespace, name = key.split("/", 1)
                self.set_status(namespace, name, {"loadBalancer": {"ingress": [{"hostname": hostname}]}})
        if services:
            self.aws.serve_nodes([self.balancers[key][1] for key in services], included)

    def _create(self, key, service):
        ports = [port.get("nodePort") or port.get("port") for port in (service.get("spec") or {}).get("ports") or []]
        name = ("svc-" + key.replace("/", "-"))[:32].rstrip("-")
        return self.aws.create_balancer(name, self.network.get("vpc_id"), list((self.network.get("subnets") or {}).values()),
                                        ports[0] if ports else 80, deregistration_delay(service))
