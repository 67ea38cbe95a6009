"""The load balancer controller of the sandbox's cluster, on either Kubernetes backend.

It does to the target groups what the AWS Load Balancer Controller (a TargetGroupBinding of instance targets) and the
cloud provider's service controller do with the label ``node.kubernetes.io/exclude-from-external-load-balancers``:
a node carrying it (any value) is deregistered from every instance target group that lists its instance, so the
target drains for the group's deregistration delay and leaves; a node whose label is taken off again is registered
again where the controller had taken it out. Registering new instances is left to their Auto Scaling group, which
registers each one once it is InService (``aws/targets.py``).

It looks at the nodes every ``sync_seconds`` of simulated time (the controllers react to a node's change within about
a second), and only while some instance target group exists, so a sandbox without load balancers pays nothing.
"""

import threading

LABEL_EXCLUDE_LB = "node.kubernetes.io/exclude-from-external-load-balancers"


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


class LoadBalancerController:
    """``nodes()`` returns the cluster's Node objects; ``aws`` is the sandbox's AwsSandbox."""

    def __init__(self, clock, aws, nodes, sync_seconds=1.0):
        self.clock = clock
        self.aws = aws
        self.nodes = nodes
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
            self.sync()

    def sync(self):
        if not self.aws.has_instance_target_groups():
            return
        excluded, included = split_nodes(self.nodes())
        self.aws.exclude_targets(excluded, included)
