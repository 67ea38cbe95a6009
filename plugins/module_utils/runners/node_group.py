# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""``node_group_info``: one or more Auto Scaling groups as node groups -- sizes, target launch template version,
every instance joined to its node, what is outdated, the recorded rollout state and the plan."""

from __future__ import annotations

from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws import (
    aws_clients,
    aws_errors,
    balancer_target_groups,
    describe_image,
    existing_target_groups,
    detached_instances,
    find_groups,
    group_azs,
    group_instances,
    group_tags,
    group_target_groups,
    members,
    read_alarms,
    require_group,
    suspended_processes,
    termination_hooks,
    warm_pool,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import K8S_ERRORS, KubeApi, check_access, kube_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import k8s_client
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError, reporting, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.volumes import attachments_by_node, stranded_volumes
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.launch_template import group_target, override_refusals, template_spec
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import (
    INSTANCE_NODE_FIELDS,
    failed_to_join,
    instance_id_of,
    node_summary,
    nodes_by_instance,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.permissions import access_refused
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.alertmanager import read_gates
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.control import alert_names, pause_requested, start_refusal, window_report
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import (
    DEFAULT_TAINT_KEY,
    autoscaler_unprotected,
    leftovers,
    marked_outdated,
    marked_up_to_date,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import node_events, skew
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan import rollout_plan
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_diff import plan_diff
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.sizes import base_size, max_unavailable_count, payback_choice, sizes_of, surge_owed_now
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import check_alerts_option
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.state import detach_room_refusal, group_state, tag_room_refusal
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.steps import cancel_payback, taking_pods
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.targets import (
    binding_target_groups,
    cluster_load_balancers,
    load_balancer_services,
    post_drain_delay,
    service_addresses,
    watched_target_groups,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import (
    PlanError,
    parse_checkpoints,
    parse_duration,
    parse_hold,
    parse_int_or_percent,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.termination_gate import cluster_mismatch
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.window import parse_windows

_PUBLIC_INSTANCE_KEYS = ("instance_id", "az", "lifecycle_state", "health_status", "launch_template", "image_id",
                         "instance_type", "launch_time", "private_dns_name", "ec2_state", "protected_from_scale_in",
                         "detached")


def check_settings(params):
    """Refuse bad max_unavailable/max_surge/tags before any API call (the percentages need the group's size later)."""
    if params.get("max_unavailable") is not None:
        max_unavailable_count(params["max_unavailable"], 0)
    if params.get("join_timeout") not in (None, ""):
        parse_duration(params["join_timeout"], "join_timeout")
    if params.get("max_surge") is not None:
        parse_int_or_percent(params["max_surge"], "max_surge", allow_zero=True)
    params["windows"] = parse_windows(params.get("windows"), "windows")
    params["step_seconds"] = parse_duration(params.get("step_seconds") or 0, "step_seconds")
    params["bake_time"] = parse_hold(params.get("bake_time") or 0, "bake_time")
    params["checkpoints"] = parse_checkpoints(params.get("checkpoints"), "checkpoints")
    params["alerts"] = check_alerts_option(params.get("alerts"), params.get("alertmanager_token"))
    target = params.get("target")
    if target is not None:
        version = target.get("version")
        if version is None or not str(version).isdigit() or int(version) < 1:
            raise PlanError("target.version: %r is not allowed; use the explicit launch template version number the group "
                            "will launch (launch_template_version returns it as target)" % (version,))
    tags = params.get("tags")
    if tags is not None:
        if not tags:
            raise PlanError("tags: an empty dict is not allowed; give at least one tag, for example {'eks:nodegroup-name': 'workers'}")
        for key, value in tags.items():
            if not isinstance(key, str) or not key:
                raise PlanError("tags: key %r is not allowed; use tag keys as text" % (key,))
            if value is not None and not isinstance(value, (str, int)):
                raise PlanError("tags: the value of %s is %r; use text, or null to match the key alone" % (key, value))


def _node_view(node):
    if node is None:
        return None
    return {"name": node["name"], "ready": node["ready"], "schedulable": node["schedulable"], "taints": node["taints"]}


def _instance_view(record, outdated):
    view = {key: record.get(key) for key in _PUBLIC_INSTANCE_KEYS}
    view["node"] = _node_view(record.get("node"))
    reasons = outdated.get(record["instance_id"])
    view["outdated"] = reasons is not None
    view["outdated_reasons"] = list(reasons or [])
    return view


def join_nodes(records, nodes, raw_nodes):
    """Set each instance record's ``node``: by providerID (``nodes``: instance id -> node summary); failing that by
    name, as EKS names a node after its instance's private DNS name."""
    by_name = {node["name"]: node for node in (node_summary(raw, INSTANCE_NODE_FIELDS) for raw in raw_nodes or [])
               if instance_id_of(node["provider_id"]) is None}
    for record in records:
        record["node"] = nodes.get(record["instance_id"]) or by_name.get(record.get("private_dns_name"))
    return records


def group_refusals(group, records, outdated, target, surge_method="scale", stranded=()):
    """Why the group cannot be rolled as it stands, one sentence each (empty when it can): no room for the state tags;
    MixedInstancesPolicy overrides that launch from another launch template than the group's (``target``,
    ``launch_template.group_target``); with ``surge_method`` ``detach``, outdated instances without room for the tags of
    a detached instance; volumes on outdated nodes pinned to zones where no node would be left for their pods
    (``stranded``: ``drain.volumes.stranded_volumes``)."""
    name = group["AutoScalingGroupName"]
    refusals = [tag_room_refusal(group_tags(group), name)]
    refusals.extend(override_refusals(template_spec(group), target["launch_template_id"], target["launch_template_name"]))
    if surge_method == "detach":
        tags = {record["instance_id"]: record.get("tags") for record in records}
        refusals.extend(detach_room_refusal(entry["instance_id"], tags.get(entry["instance_id"])) for entry in outdated)
    refusals.extend("volume %s%s on outdated node %s is pinned to %s, where the group launches no instance (its zones: %s) "
                    "and no other schedulable node is: its pod could never start again once the node is drained; "
                    "add the zone to the group or make room on a node there" % (
                        entry["volume"], " (claim %s)" % entry["claim"] if entry["claim"] else "", entry["node"],
                        ", ".join(entry["zones"]) or "the nodes its node affinity selects", ", ".join(group_azs(group)))
                    for entry in stranded)
    return [text for text in refusals if text]


def kubelet_versions(ec2, plan_target, control_plane, records, up_to_date, raw_nodes):
    """The version skew check of a target (``rollout.skew``): ``{"control_plane", "kubelet", "kubelet_source",
    "refusals"}``. ``control_plane`` is the API server's ``/version`` (None when it could not be read); the kubelet comes
    from the target AMI's name (one DescribeImages), its SSM parameter's path, or the first new node; every new node of
    ``up_to_date`` is checked against it."""
    image_id = plan_target.get("image_id")
    image = describe_image(ec2, image_id) if image_id else None
    expected, source = skew.expected_kubelet(image_id, (image or {}).get("Name"), plan_target.get("ssm_parameter"))
    by_instance = {instance_id_of((node.get("spec") or {}).get("providerID")): node for node in raw_nodes or []}
    new_nodes = []
    for record in sorted((record for record in records if record["instance_id"] in set(up_to_date)),
                         key=lambda record: (str(record.get("launch_time") or ""), record["instance_id"])):
        node = by_instance.get(record["instance_id"])
        if node is not None:
            new_nodes.append((node["metadata"]["name"], ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion")))
    refusals, expected, source = skew.new_node_refusals(expected, source, new_nodes)
    plane, plane_text = skew.server_version(control_plane), skew.server_version_text(control_plane)
    refusal = skew.skew_refusal(expected, plane, source, plane_text if plane_text != (plane and skew.version_text(plane)) else None)
    return {"control_plane": plane_text, "kubelet": skew.version_text(expected) if expected else None,
            "kubelet_source": source, "refusals": ([refusal] if refusal else []) + refusals}


def describe_node_group(ec2, group, nodes, params, raw_nodes=None, target_groups=(), volumes=None, hooks=(), pool=None,
                        control_plane=None, load_balancers=None):
    """One node group as node_group_info returns it (``nodes``: instance id -> node summary, or None; ``raw_nodes``:
    the cluster's nodes as the API returns them, to tell a group whose instances are not nodes of this cluster;
    ``target_groups``: the group's, as ``clients.aws.group_target_groups`` reads them; ``control_plane``: a function
    returning the API server's ``/version``, called when a target is given or a rollout is recorded (the version skew
    check, :func:`kubelet_versions`), or None; ``volumes``: a function
    returning ``{"attached": drain.volumes.attachments_by_node, "volumes": name -> PersistentVolume}`` of the cluster
    (called only when an outdated instance has a node), or None; ``hooks``: its
    termination lifecycle hooks, ``clients.aws.termination_hooks``; ``pool``: its warm pool, ``clients.aws.warm_pool``;
    ``load_balancers``: the cluster's, :func:`read_load_balancers`, or None unread)."""
    name = group["AutoScalingGroupName"]
    target = group_target(ec2, group)
    if target is None:
        raise RolloutError("Auto Scaling group '%s' uses a launch configuration; only groups with a launch template "
                           "(or a MixedInstancesPolicy with one) can be rolled" % name)
    state = group_state(group)
    records = group_instances(ec2, group)
    if nodes is not None:
        join_nodes(records, nodes, raw_nodes)
    azs = group_azs(group)
    group_size = base_size(state, group["DesiredCapacity"])
    plan_target = {"launch_template_id": target["launch_template_id"], "version": target["version"],
                   "image_id": target["image_id"]}
    override = params.get("target")
    if override:
        # a target that does not exist yet (check mode): compare with it instead of what the group launches now
        plan_target.update({key: value for key, value in override.items() if value is not None})
        plan_target["version"] = int(plan_target["version"])
    owed = surge_owed_now(state, sizes_of(group))
    # A recorded rollout is resumed, never surged anew (asg_surge): the extra capacity it has is the surge still owed,
    # which is what the plan prices - the taint effect above all (a hard taint on every outdated node with no surge
    # left would leave the pods of the first drain nowhere to go).
    max_surge = owed if state and state.get("method") == "scale" else params.get("max_surge")
    balancers = load_balancers or {"target_groups": [], "unseen": []}
    watched = watched_target_groups(target_groups, balancers["target_groups"])
    configured = params.get("post_drain_delay")
    delay = post_drain_delay(None if configured in (None, "") else parse_duration(configured, "post_drain_delay"), balancers["unseen"])
    plan = rollout_plan(records, plan_target, max_unavailable=params.get("max_unavailable"),
                        max_surge=max_surge, az_count=len(azs), group_size=group_size,
                        taint_effect=params.get("taint_effect") or "NoSchedule", target_groups=watched,
                        standby=params.get("standby_instances"), termination_hooks=hooks, warm_pool=pool,
                        bake_seconds=params.get("bake_time") or 0, checkpoints=params.get("checkpoints") or (),
                        post_drain_delay=delay, **(params.get("timings") or {}))
    # how the delay was settled, for the plan's line (rollout.plan_text.post_drain_delay_line); nothing to say unread
    plan["post_drain_delay"] = {"set": configured not in (None, ""), "unseen": balancers["unseen"]} if load_balancers is not None else None
    outdated = {entry["instance_id"]: entry["reasons"] for entry in plan["outdated"]}
    versions = None
    if control_plane is not None and (override or state):
        versions = kubelet_versions(ec2, plan_target, control_plane(), records, plan["up_to_date"], raw_nodes)
    in_group = members(group)
    detached = [record["instance_id"] for record in records if record["detached"]]
    marked = marked_old = []
    if nodes is not None:
        marked = marked_up_to_date(records, plan["up_to_date"], params.get("taint_key") or DEFAULT_TAINT_KEY)
        marked_old = marked_outdated(records, list(outdated), params.get("taint_key") or DEFAULT_TAINT_KEY)
    # Surge is paid back through outdated instances while there are any; what is left then is paid back here.
    payback = payback_choice(records, plan["up_to_date"], owed) if nodes is not None and not plan["outdated"] else []
    view = {
        "name": name,
        "arn": group.get("AutoScalingGroupARN"),
        "min_size": group["MinSize"],
        "max_size": group["MaxSize"],
        "desired_capacity": group["DesiredCapacity"],
        "availability_zones": azs,
        "az_count": len(azs),
        "suspended_processes": suspended_processes(group),
        "tags": group_tags(group),
        "launch_template": target,
        "target": plan["target"],
        "instance_count": len(in_group),
        "in_service_count": sum(1 for instance in in_group if instance.get("LifecycleState") == "InService"),
        "instances": [_instance_view(record, outdated) for record in records],
        "detached_instances": detached,
        "outdated": plan["outdated"],
        "outdated_count": plan["outdated_count"],
        "up_to_date": plan["up_to_date"],
        "nodes_joined": nodes is not None,
        "mismatch": cluster_mismatch(name, records, raw_nodes) if raw_nodes is not None else None,
        "surge_method": params.get("surge_method") or "scale",
        "refusals": group_refusals(group, records, plan["outdated"], target, params.get("surge_method") or "scale",
                                   _stranded(plan["outdated"], volumes, raw_nodes, group)) + (versions or {}).get("refusals", []),
        "versions": versions,
        "surge_owed": owed,
        "payback": payback,
        "marked": marked,
        # the group's own taints (every node carries them), and the nodes that can take pods now: any other NoSchedule
        # or NoExecute taint but the rollout's keeps a node from counting (rollout.steps._serving)
        "tolerated_taints": plan["capacity"]["tolerated_taints"] if nodes is not None else [],
        "taking_pods": taking_pods(records, params.get("taint_key")) if nodes is not None else [],
        "unprotected": autoscaler_unprotected(records, plan["up_to_date"]) if nodes is not None else [],
        "marked_outdated": marked_old,
        "cancel_payback": cancel_payback(records, list(outdated), owed, datetime.now(timezone.utc)) if nodes is not None and state else [],
        "pause_requested": pause_requested(group_tags(group)),
        "failed_to_join": (failed_to_join(records, plan["up_to_date"], datetime.now(timezone.utc),
                                          parse_duration(params["join_timeout"], "join_timeout"))
                           if nodes is not None and params.get("join_timeout") not in (None, "") else []),
        "leftovers": (leftovers(plan["outdated"], marked, owed, detached, (plan["warm_pool"] or {}).get("outdated"))
                      if nodes is not None else None),
        "state": state,
        "plan": plan,
        # what a drained node of the group waits for before its termination (rollout_step's post_drain_delay and
        # target_groups): the target groups that list its instance, and a fixed delay only where it is set or a load
        # balancer cannot be read
        "load_balancers": {"target_groups": watched, "unseen": balancers["unseen"], "post_drain_delay": delay,
                           "post_drain_delay_set": configured not in (None, ""), "read": load_balancers is not None},
    }
    view.update(group_flags(view))
    return view


def group_flags(view):
    """What the role's tasks ask of a group as read (the view :func:`read_group` returns), each a plain flag, and the
    lists they act on that are picked from the view."""
    outdated_nodes = [entry["node"] for entry in view["outdated"] if entry.get("node")]
    standby_left = [entry["instance_id"] for entry in (view["plan"].get("standby") or {}).get("instances") or [] if entry.get("outdated")]
    stale_warm = list((view["plan"].get("warm_pool") or {}).get("outdated") or [])
    # where the scale up waits for a Ready new node: every AZ of the outdated nodes when the surge (recorded, else
    # planned) covers the AZs, less the AZs the group could launch no new instance in (insufficient capacity)
    outdated_azs = sorted(set(entry["az"] for entry in view["outdated"] if entry.get("az")))
    new_azs = set(instance.get("az") for instance in view.get("instances") or [] if not instance.get("outdated"))
    surge = (view["state"] or {}).get("surge") if view["state"] else view["plan"].get("surge")
    surge_each_az = int(surge or 0) >= int(view.get("az_count") or 0)
    unplaced = [zone for zone in outdated_azs if zone not in new_azs] if surge_each_az else []
    return {
        "outdated_nodes": outdated_nodes,
        "standby_left": standby_left,
        "stale_warm": stale_warm,
        # what a cancel or a rollback releases (every node with a mark of the rollout's), and a pause (the outdated
        # nodes not drained: drained ones stay cordoned for the run that terminates them)
        "marked_all": list(view["marked_outdated"]) + list(view["marked"]),
        "marked_undrained": [entry for entry in view["marked_outdated"] if not entry.get("drained")],
        # the surge of the rollout: recorded in the state tags once surged, else the plan's
        "surge_count": int(surge or 0),
        "surge_each_az": surge_each_az,
        # a surge by detaching takes out the instances replaced first, as many as the surge
        "surge_detach": ([instance_id for batch in view["plan"].get("batches") or [] for instance_id in batch.get("instance_ids") or []][:int(surge or 0)]
                         if view.get("surge_method") == "detach" else None),
        "new_node_azs": [zone for zone in outdated_azs if zone in new_azs],
        "unplaced_azs": unplaced,
        "has": {
            "unplaced_azs": bool(unplaced),
            "refusal": view["mismatch"] is not None or bool(view["refusals"]),
            "outdated_nodes": bool(outdated_nodes),
            "up_to_date": bool(view["up_to_date"]),
            "marked": bool(view["marked"]),
            "failed_to_join": bool(view["failed_to_join"]),
            "leftovers": bool(view["leftovers"]),
            "standby_left": bool(standby_left),
            "stale_warm": bool(stale_warm),
            "payback": bool(view["payback"]),
            "rollout": view["state"] is not None,
            # a new node runs another kubelet than the target's (versions.refusals)
            "kubelet_refusal": bool((view.get("versions") or {}).get("refusals")),
        },
    }


def _stranded(outdated, volumes, raw_nodes, group):
    """drain.volumes.stranded_volumes for the group's outdated nodes (none when the volumes are not read, or no outdated
    instance has a node: a group replaced already reads no VolumeAttachments)."""
    leaving = [entry["node"] for entry in outdated if entry.get("node")]
    if volumes is None or raw_nodes is None or not leaving:
        return []
    volumes = volumes()
    if not volumes["attached"]:
        return []
    nodes = [node_summary(raw, INSTANCE_NODE_FIELDS) for raw in raw_nodes]
    return stranded_volumes(leaving, volumes["attached"], volumes["volumes"], nodes, group_azs(group))


def read_volumes(api, params):
    """The cluster's VolumeAttachments by node, and its PersistentVolumes when a volume is attached: what
    :func:`describe_node_group` needs to find volumes a rollout would strand (one list, two when volumes are attached)."""
    with kube_errors("list", "volumeattachments", params):
        attached = attachments_by_node(api.list_volume_attachments())
    if not attached:
        return {"attached": attached, "volumes": {}}
    with kube_errors("list", "persistentvolumes", params):
        return {"attached": attached, "volumes": {volume["metadata"]["name"]: volume for volume in api.list_persistent_volumes()}}


def read_load_balancers(api, elbv2, params):
    """The load balancers that route to the cluster's nodes (``rollout.targets.cluster_load_balancers``): its Services
    of type LoadBalancer, the TargetGroupBindings where the cluster serves them, and the ELBv2 load balancers and
    target groups they name (two lists; DescribeLoadBalancers only for a Service with an address, DescribeTargetGroups
    only for a binding)."""
    with kube_errors("list", "services", params):
        services = load_balancer_services(api.list_services())
    with kube_errors("list", "targetgroupbindings.elbv2.k8s.aws", params):
        bindings = binding_target_groups(api.list_target_group_bindings())
    hostnames = [hostname for service in services for hostname in service_addresses(service)[0]]
    with aws_errors("DescribeLoadBalancers", "the load balancers of the cluster's Services", params):
        balancers = balancer_target_groups(elbv2, hostnames)
    with aws_errors("DescribeTargetGroups", "the target groups of the cluster's TargetGroupBindings", params):
        records = existing_target_groups(elbv2, list(bindings)) if bindings else {}
    return cluster_load_balancers(services, balancers, {arn: (records[arn], names) for arn, names in bindings.items() if arn in records})


def lock_namespace(params):
    """The namespace of the lock's Leases the access check asks for: ``lock_namespace``, else the ``lock`` option's."""
    return params.get("lock_namespace") or (params.get("lock") or {}).get("namespace") or "kube-system"


@reports_errors
def run_node_group_info(module):
    params = module.params
    check_settings(params)
    connection, autoscaling, ec2, elbv2 = aws_clients(module, "autoscaling", "ec2", "elbv2")
    checking = params.get("check_access") or params.get("require_access")
    api = KubeApi(k8s_client(module)) if params["include_nodes"] or checking else None
    access = None
    if checking:
        # first, so that a refusal of a read below is reported with everything else the identity may not do
        with kube_errors("check the access of", "the Kubernetes identity", params):
            access = check_access(api, lock_namespace(params), node_events.NAMESPACE)
        if params.get("require_access") and access["refusal"]:
            raise access_refused(access)
    with reporting({"access": access} if access is not None else {}):
        result = _read_groups(module, params, connection, autoscaling, ec2, elbv2, api if params["include_nodes"] else None)
    if access is not None:
        result["access"] = access
    if module._diff and params.get("target"):  # pylint: disable=protected-access
        # the plan against a target: what the rollout would change (--check --diff)
        result["diff"] = [entry for group in result["node_groups"] for entry in plan_diff(group, params.get("taint_key"))]
    module.exit_json(**result)


def _read_groups(module, params, connection, autoscaling, ec2, elbv2, api):
    where = "Auto Scaling group '%s'" % params["name"] if params.get("name") else "Auto Scaling groups tagged %s" % params.get("tags")
    with aws_errors("DescribeAutoScalingGroups", where, params):
        if params.get("name"):
            groups = [require_group(autoscaling, params["name"], connection.region)]
            if not groups[0].get("Instances") and not detached_instances(ec2, params["name"]):
                raise RolloutError("name: Auto Scaling group '%s' has no instances (desired capacity %d): there are no nodes to roll"
                                   % (params["name"], groups[0]["DesiredCapacity"]))
        else:
            groups = find_groups(autoscaling, params["tags"])
            if not groups:
                raise RolloutError("tags: no Auto Scaling group in region %s has the tags %s" % (connection.region, params["tags"]))
    nodes = raw_nodes = volumes = control_plane = None
    if api is not None:
        read_version = []   # the API server's /version, read once for every group that needs it

        def control_plane():
            if not read_version:
                try:
                    read_version.append(api.server_version())
                except K8S_ERRORS:
                    read_version.append(None)   # unknown: the skew is not checked against it (versions.control_plane null)
            return read_version[0]

        with kube_errors("list", "nodes", params):
            raw_nodes = api.list_nodes()
        nodes = nodes_by_instance(raw_nodes)
        if params.get("check_volumes", True):
            read = []   # the volumes, read once for every group that needs them

            def volumes():
                if not read:
                    read.append(read_volumes(api, params))
                return read[0]
    with aws_errors("DescribeTargetGroups", where, params):
        target_groups = {group["AutoScalingGroupName"]: group_target_groups(elbv2, group) for group in groups}
    load_balancers = read_load_balancers(api, elbv2, params) if api is not None and params["load_balancers"] else None
    with aws_errors("DescribeLifecycleHooks", where, params):
        hooks = {group["AutoScalingGroupName"]: termination_hooks(autoscaling, group["AutoScalingGroupName"]) for group in groups}
    with aws_errors("DescribeWarmPool", where, params):
        pools = {group["AutoScalingGroupName"]: warm_pool(autoscaling, ec2, group) for group in groups}
    if nodes is not None:
        for pool in pools.values():
            join_nodes((pool or {}).get("instances") or [], nodes, raw_nodes)
    with aws_errors("DescribeInstances", where, params):
        node_groups = [describe_node_group(ec2, group, nodes, params, raw_nodes if nodes is not None else None,
                                           target_groups[group["AutoScalingGroupName"]], volumes,
                                           hooks[group["AutoScalingGroupName"]], pools[group["AutoScalingGroupName"]],
                                           control_plane, load_balancers)
                       for group in groups]
    result = {"changed": False, "node_groups": node_groups}
    if params.get("abort_alarms"):
        result["alarms"] = read_alarms(connection.client("cloudwatch"), params["abort_alarms"], params)
    fired = {}
    if params.get("alerts"):
        # an Alertmanager that does not answer fails the module here, naming its URL: before any change
        gates = params["alerts"]
        fired = read_gates(gates, {"abort": gates["abort"], "pause": gates["pause"]},
                           connection.session.get_credentials() if gates["auth"] == "sigv4" else None, connection.region)
        result["alerts"] = {gate: alert_names(alerts) for gate, alerts in fired.items()}
    now = datetime.now(timezone.utc)
    result["window"] = window_report(params["windows"], now)
    result["start_refusal"] = start_refusal(now, result.get("alarms") or (), params["windows"], params["step_seconds"],
                                            abort_alerts=fired.get("abort"))
    # why no group read can be rolled here, or not now, in one message (None when nothing refuses)
    refusals = [text for group in node_groups for text in [group["mismatch"]] + group["refusals"] if text]
    result["refusal"] = "; ".join(refusals + [result["start_refusal"]] if result["start_refusal"] else refusals) or None
    return result
