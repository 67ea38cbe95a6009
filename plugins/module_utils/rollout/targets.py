# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Load balancer target groups: when a drained instance has left them, and how long that may take. Pure.

What holds a drained instance back is a *hold* (``{"kind", "name", "state", "timeout"}``); this module makes the holds
of target groups, ``drain.volumes`` those of volumes still attached to the node.

A drained node's instance is not terminated while a target group of its Auto Scaling group still lists it as an
instance target in a state that takes or finishes connections (``healthy``, ``initial``, ``draining``): terminating it
then drops the connections still on it (the 502s of a node that left its load balancer after its pods were gone). The
node carries ``node.kubernetes.io/exclude-from-external-load-balancers`` from the start of its drain, so the AWS Load
Balancer Controller or the cloud provider deregisters it while its pods are evicted, and its deregistration delay runs
alongside the drain. The wait is bounded: by default each target group's deregistration delay plus
:data:`MARGIN_SECONDS`, counted from the end of the drain; then the instance is terminated anyway (the Auto Scaling
group deregisters it from its own target groups as it terminates it), and the step says so.

Target groups are in ``clients.aws.target_group_record``'s shape; the targets of one target group are ``{target id: state}``
as DescribeTargetHealth lists them.

The target groups watched are the group's own and those the cluster's load balancers register its nodes in: the
TargetGroupBindings of the AWS Load Balancer Controller, and the target groups of the Application or Network Load
Balancer a Service of type LoadBalancer names in its status. A drained node waits for those it can read and for
nothing blind: the post-drain delay defaults to none, and to a fixed :data:`BLIND_DELAY_SECONDS` only where a Service
routes through a load balancer the rollout cannot read (:func:`cluster_load_balancers`' ``unseen``).
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, parse_duration

# A target in one of these states still takes connections, or finishes the ones it has.
HOLDING_STATES = ("healthy", "initial", "draining")
# A target in one of these states is sent new connections: a node whose pods are evicted while its instance is one
# serves requests it has no pod for (the drain waits for its deregistration first, node_drain's target_groups).
SERVING_STATES = ("healthy", "initial")
# Seconds allowed beyond a target group's deregistration delay before the instance is terminated anyway.
MARGIN_SECONDS = 30
# The post-drain delay where a load balancer routes to the nodes and the rollout cannot read when a node has left it:
# EKS's fixed wait for load balancers to stop sending to a drained node.
BLIND_DELAY_SECONDS = 60


def instance_target_groups(target_groups):
    """The target groups whose targets are instances (an ``ip`` target group lists pods, which the drain moved)."""
    return [group for group in target_groups if group.get("target_type") == "instance"]


def still_serving(target_groups, targets, instance_ids):
    """``{instance id: [target group names]}`` of the ``instance_ids`` that an instance target group of
    ``target_groups`` still sends new connections to (``targets``: ``{arn: {target id: state}}``); empty once each has
    left them (its target draining, unused or gone)."""
    serving = {}
    for group in instance_target_groups(target_groups):
        states = targets.get(group["arn"]) or {}
        for instance_id in instance_ids:
            if states.get(instance_id) in SERVING_STATES:
                serving.setdefault(instance_id, []).append(group.get("name") or group["arn"])
    return serving


def checked_target_groups(value, field="target_groups"):
    """Target groups as node_group_info lists them (``name``, ``arn``, ``target_type``, ``deregistration_delay``), checked."""
    if not isinstance(value, list) or not all(isinstance(item, dict) and item.get("arn") and item.get("target_type")
                                              for item in value):
        raise PlanError("%s: %r is not allowed; use the target groups node_group_info returns (load_balancers.target_groups), "
                        "each with its name, arn, target_type and deregistration_delay" % (field, value))
    try:
        return [dict(item, deregistration_delay=max(0, int(item.get("deregistration_delay") or 0))) for item in value]
    except (TypeError, ValueError):
        raise PlanError("%s: %r is not allowed; each deregistration_delay is whole seconds" % (field, value)) from None


def holding(instance_id, target_groups, targets, timeout=None):
    """The target groups still holding the instance, as holds ``rollout.steps.next_step`` reads:
    ``[{"kind": "target_group", "name", "state", "timeout"}]``, ``timeout`` being how long after its drain ended the
    instance may wait for it (the ``timeout`` given, else the target group's deregistration delay plus
    :data:`MARGIN_SECONDS`).

    ``targets``: ``{target group arn: {target id: state}}``; a target group missing from it was not read and holds
    nothing."""
    held = []
    for group in instance_target_groups(target_groups):
        state = (targets.get(group["arn"]) or {}).get(instance_id)
        if state in HOLDING_STATES:
            held.append({"kind": "target_group", "name": group["name"], "state": state,
                         "timeout": group["deregistration_delay"] + MARGIN_SECONDS if timeout is None else timeout})
    return held


def parse_deregistration_timeout(value, field="deregistration_timeout"):
    """``None``/empty: each target group's delay plus the margin; else seconds or a duration (``0``: do not wait)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return parse_duration(value, field)
    except PlanError:
        raise PlanError("%s: %r is not allowed; use seconds or a duration such as 5m, 0 not to wait, or leave it empty "
                        "for each target group's deregistration delay plus %ds" % (field, value, MARGIN_SECONDS)) from None


def plan_target_groups(target_groups):
    """What the plan shows of the target groups watched: each one's name, target type and deregistration delay,
    whether the rollout waits for an instance to leave it (instance targets only), and what registers the nodes in it
    (``sources``: ``group``, ``service <namespace>/<name>``, ``targetgroupbinding <namespace>/<name>``)."""
    return [{"name": group["name"], "arn": group["arn"], "target_type": group["target_type"],
             "deregistration_delay": group["deregistration_delay"], "waited_for": group["target_type"] == "instance",
             "sources": list(group.get("sources") or ["group"])}
            for group in target_groups]


def load_balancer_services(services):
    """The Services of type LoadBalancer among ``services`` (Service objects as the API lists them)."""
    return [service for service in services if ((service.get("spec") or {}).get("type")) == "LoadBalancer"]


def _object_name(obj):
    metadata = obj.get("metadata") or {}
    return "%s/%s" % (metadata.get("namespace") or "default", metadata.get("name"))


def service_addresses(service):
    """``(hostnames, ips)`` of the load balancer a Service's status names (``status.loadBalancer.ingress``)."""
    ingress = (((service.get("status") or {}).get("loadBalancer") or {}).get("ingress")) or []
    hostnames = [entry["hostname"].lower() for entry in ingress if entry.get("hostname")]
    ips = [entry["ip"] for entry in ingress if entry.get("ip") and not entry.get("hostname")]
    return hostnames, ips


def binding_target_groups(bindings):
    """``{target group arn: [binding name]}`` of the TargetGroupBindings (``elbv2.k8s.aws``) that register nodes as
    instance targets (``spec.targetType`` instance, or unset: the target group's own type then decides). A binding of
    ``ip`` targets registers pods, which the drain moves."""
    arns = {}
    for binding in bindings or ():
        spec = binding.get("spec") or {}
        if spec.get("targetGroupARN") and spec.get("targetType") in (None, "", "instance"):
            arns.setdefault(spec["targetGroupARN"], []).append("targetgroupbinding " + _object_name(binding))
    return arns


def cluster_load_balancers(services, balancers, bindings):
    """What the cluster's load balancers register the nodes in, and which of them cannot be read.

    ``services``: the Services of type LoadBalancer; ``balancers``: ``{DNS name: [target group record]}`` of the ELBv2
    load balancers of this account and region that their status names; ``bindings``: :func:`binding_target_groups`
    with each arn's record, ``{arn: (record, [binding name])}``. Returns ``{"target_groups": [record with
    ``sources``], "unseen": [{"service", "address", "why"}]}``: the instance target groups by name, and each Service
    whose load balancer routes to the nodes with no target group the rollout can read. A Service whose load balancer
    has no address yet routes nothing."""
    found, unseen = {}, []

    def add(record, source):
        entry = found.setdefault(record["arn"], dict(record, sources=[]))
        if source not in entry["sources"]:
            entry["sources"].append(source)

    for service in services:
        name = _object_name(service)
        hostnames, ips = service_addresses(service)
        for hostname in hostnames:
            if hostname in balancers:
                for record in instance_target_groups(balancers[hostname]):
                    add(record, "service " + name)
            else:
                unseen.append({"service": name, "address": hostname,
                               "why": "not an Application or Network Load Balancer of this account and region (a Classic "
                                      "Load Balancer, or one the rollout cannot list): when a node has left it cannot be read"})
        for address in ips:
            unseen.append({"service": name, "address": address,
                           "why": "a load balancer known by its IP address only: when a node has left it cannot be read"})
    for record, sources in bindings.values():
        if record.get("target_type") == "instance":
            for source in sources:
                add(record, source)
    return {"target_groups": sorted(found.values(), key=lambda record: (record["name"] or "", record["arn"])), "unseen": unseen}


def watched_target_groups(own, cluster):
    """The group's own target groups (source ``group``) and the cluster's (:func:`cluster_load_balancers`), one entry
    per target group."""
    merged = {}
    for record in own:
        merged[record["arn"]] = dict(record, sources=["group"])
    for record in cluster:
        entry = merged.setdefault(record["arn"], dict(record, sources=[]))
        entry["sources"] = entry["sources"] + [source for source in record["sources"] if source not in entry["sources"]]
    return sorted(merged.values(), key=lambda record: (record["name"] or "", record["arn"]))


def post_drain_delay(configured, unseen):
    """The seconds between a node's drain and its termination: the operator's number as given; unset, none when every
    load balancer routing to the nodes can be read (their target groups are waited for instead), else
    :data:`BLIND_DELAY_SECONDS`."""
    if configured is not None:
        return configured
    return BLIND_DELAY_SECONDS if unseen else 0
