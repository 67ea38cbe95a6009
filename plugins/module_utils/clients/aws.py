# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Reading Auto Scaling groups, their EC2 instances and their Kubernetes nodes, and waiting on them.

Every function takes clients the caller built (``aws_client``/``k8s_client``), so each request carries the
calling module's user agent. Instances are returned in the shape ``rollout.outdated`` reads (see its docstring).
"""

from __future__ import annotations

import copy
import re
import time
from contextlib import contextmanager
from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import aws_connection, aws_error_parts, describe_aws_error
from ansible_collections.nodeops.rollout.plugins.module_utils.core.at_once import map_at_once
from ansible_collections.nodeops.rollout.plugins.module_utils.core.backoff import backoff_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.core.permissions import aws_refusal, refused
from ansible_collections.nodeops.rollout.plugins.module_utils.core.tags import TAG_INSTANCE_DETACHED, TAG_INSTANCE_DETACHED_FROM, tags_to_dict

try:
    from botocore.exceptions import BotoCoreError, ClientError
except ImportError:  # aws_connection() reports the missing library before any call here
    AWS_ERRORS = ()
else:
    # an answer of an AWS API, or none (unreachable, no credentials)
    AWS_ERRORS = (BotoCoreError, ClientError)

INSTANCE_ID_RE = re.compile(r"^i-[0-9a-f]{8,17}$")
# Auto Scaling lifecycle states of an instance that is leaving or has left the group.
LEAVING_STATES = ("Terminating", "Terminating:Wait", "Terminating:Proceed", "Terminated", "Detaching", "Detached")
# EC2 states of an instance that is gone or going.
GONE_EC2_STATES = ("shutting-down", "terminated")
ALIVE_EC2_STATES = ("pending", "running", "stopping", "stopped")
_FILTER_CHUNK = 199
# DescribeInstances calls at once for a group of more than one chunk (EC2's Describe* calls share a bucket of 100
# requests refilled at 20 a second: four at once leave the rest of the account room).
DESCRIBE_WORKERS = 4
_DETACH_CHUNK = 20   # DetachInstances takes at most 20 instances a call
_EC2_TERMINATE_CHUNK = 1000
_TARGET_GROUP_CHUNK = 20
# AWS's deregistration delay of a target group whose attributes do not say.
DEFAULT_DELAY_SECONDS = 300


def aws_clients(module, *services):
    """``(connection, client, ...)``: one AWS connection from the module's options and a client per service."""
    connection = aws_connection(module)
    return (connection,) + tuple(connection.client(service) for service in services)


def error_code(exc):
    """AWS's error code of a botocore ClientError, else None."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return (response.get("Error") or {}).get("Code")
    return None


def iso_time(value):
    """A datetime (or None) as ``2024-05-01T12:00:00Z``."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value)


# ---------------------------------------------------------------------------------------------------------
# Groups
# ---------------------------------------------------------------------------------------------------------

def describe_group(client, name):
    """The group named ``name`` as DescribeAutoScalingGroups returns it, or None."""
    groups = client.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
    return groups[0] if groups else None


def require_group(client, name, region, field="name"):
    group = describe_group(client, name)
    if group is None:
        raise RolloutError("%s: Auto Scaling group '%s' not found in region %s" % (field, name, region))
    return group


def tag_filters(tags):
    """DescribeAutoScalingGroups filters for ``{key: value}``; a null or empty value matches the key alone."""
    filters = []
    for key, value in sorted((tags or {}).items()):
        if value is None or value == "":
            filters.append({"Name": "tag-key", "Values": [key]})
        else:
            filters.append({"Name": "tag:%s" % key, "Values": [str(value)]})
    return filters


def find_groups(client, tags):
    """Every group carrying all of ``tags``, sorted by name.

    AWS combines filters on different tags with AND; the result is checked again here so that a filter an
    endpoint ignores never widens the match.
    """
    groups = []
    paginator = client.get_paginator("describe_auto_scaling_groups")
    for page in paginator.paginate(Filters=tag_filters(tags)):
        groups.extend(page["AutoScalingGroups"])
    matched = []
    for group in groups:
        present = tags_to_dict(group.get("Tags"))
        if all(key in present and (value in (None, "") or present[key] == str(value)) for key, value in tags.items()):
            matched.append(group)
    return sorted(matched, key=lambda group: group["AutoScalingGroupName"])


def group_tags(group):
    return tags_to_dict(group.get("Tags"))


def group_azs(group):
    return sorted(group.get("AvailabilityZones") or [])


def suspended_processes(group):
    return sorted(process["ProcessName"] for process in group.get("SuspendedProcesses") or [])


def members(group):
    """The group's instances that belong to its capacity (not leaving), as DescribeAutoScalingGroups lists them."""
    return [instance for instance in group.get("Instances") or [] if instance.get("LifecycleState") not in LEAVING_STATES]


TERMINATING_TRANSITION = "autoscaling:EC2_INSTANCE_TERMINATING"
# What is waited for beyond a termination lifecycle hook's heartbeat timeout: its default result applies then, and EC2
# still has to shut the instance down.
HOOK_MARGIN_SECONDS = 120


def termination_hooks(client, group_name):
    """The group's termination lifecycle hooks (DescribeLifecycleHooks), each ``{"name", "heartbeat_timeout",
    "default_result"}``: what may hold an instance the group terminates in ``Terminating:Wait``, and for how long."""
    hooks = client.describe_lifecycle_hooks(AutoScalingGroupName=group_name).get("LifecycleHooks") or []
    return [{"name": hook["LifecycleHookName"], "heartbeat_timeout": int(hook.get("HeartbeatTimeout") or 3600),
             "default_result": hook.get("DefaultResult") or "ABANDON"}
            for hook in hooks if hook.get("LifecycleTransition") == TERMINATING_TRANSITION]


def hold_seconds(hooks):
    """How long a terminated instance may stay in ``Terminating:Wait`` under ``hooks`` (:func:`termination_hooks`),
    with the margin for its shutdown; 0 without hooks."""
    return max([hook["heartbeat_timeout"] for hook in hooks] or [-HOOK_MARGIN_SECONDS]) + HOOK_MARGIN_SECONDS


# ---------------------------------------------------------------------------------------------------------
# EC2 instances
# ---------------------------------------------------------------------------------------------------------

def describe_instances(ec2, instance_ids):
    """``{instance id: EC2 instance}`` for the ids that EC2 knows (unknown ids are simply absent)."""
    ids = list(dict.fromkeys(instance_ids))
    chunks = [ids[start:start + _FILTER_CHUNK] for start in range(0, len(ids), _FILTER_CHUNK)]

    def describe(chunk):
        paginator = ec2.get_paginator("describe_instances")
        return [instance for page in paginator.paginate(Filters=[{"Name": "instance-id", "Values": chunk}])
                for reservation in page["Reservations"] for instance in reservation["Instances"]]

    # a large group's chunks at once: each answer takes the service a moment to build and botocore one to parse
    described = map_at_once(describe, chunks, DESCRIBE_WORKERS)
    return {instance["InstanceId"]: instance for instances in described for instance in instances}


def _detached_from(ec2, group_name, *filters):
    """Instances tagged as detached from ``group_name`` for a surge that match the further EC2 ``filters``, by id."""
    found = []
    filters = [{"Name": "tag:%s" % TAG_INSTANCE_DETACHED_FROM, "Values": [group_name]}] + list(filters)
    for page in ec2.get_paginator("describe_instances").paginate(Filters=filters):
        for reservation in page["Reservations"]:
            found.extend(reservation["Instances"])
    return sorted(found, key=lambda instance: instance["InstanceId"])


def detached_instances(ec2, group_name):
    """Instances detached from ``group_name`` for surge by a rollout and still alive (EC2 tag detached-from)."""
    return _detached_from(ec2, group_name, {"Name": "instance-state-name", "Values": list(ALIVE_EC2_STATES)})


def tagged_by_rollout(ec2, group_name, rollout_id):
    """Instances rollout ``rollout_id`` tagged to detach from ``group_name`` for its surge, in any state (terminated ones
    too, while EC2 still lists them): none when it recorded its surge and stopped before it tagged one."""
    return _detached_from(ec2, group_name, {"Name": "tag:%s" % TAG_INSTANCE_DETACHED, "Values": [rollout_id]})


def ec2_state(instance):
    return ((instance or {}).get("State") or {}).get("Name")


def _template_of(asg_instance, tags):
    template = (asg_instance or {}).get("LaunchTemplate")
    if template:
        return {"id": template.get("LaunchTemplateId"), "name": template.get("LaunchTemplateName"),
                "version": template.get("Version")}
    if tags.get("aws:ec2launchtemplate:id"):
        return {"id": tags["aws:ec2launchtemplate:id"], "name": None, "version": tags.get("aws:ec2launchtemplate:version")}
    return None


def instance_record(asg_instance, ec2_instance, detached=False):
    """One instance in rollout.outdated's shape, from the group's view and EC2's view (either may be missing)."""
    ec2_instance = ec2_instance or {}
    tags = tags_to_dict(ec2_instance.get("Tags"))
    instance_id = (asg_instance or {}).get("InstanceId") or ec2_instance.get("InstanceId")
    if detached:
        lifecycle = "Detached"
    else:
        lifecycle = (asg_instance or {}).get("LifecycleState")
    return {
        "instance_id": instance_id,
        "az": (asg_instance or {}).get("AvailabilityZone") or (ec2_instance.get("Placement") or {}).get("AvailabilityZone"),
        "lifecycle_state": lifecycle,
        "health_status": (asg_instance or {}).get("HealthStatus"),
        "launch_template": _template_of(asg_instance, tags),
        "image_id": ec2_instance.get("ImageId"),
        "instance_type": (asg_instance or {}).get("InstanceType") or ec2_instance.get("InstanceType"),
        "launch_time": iso_time(ec2_instance.get("LaunchTime")),
        "private_dns_name": ec2_instance.get("PrivateDnsName") or None,
        "ec2_state": ec2_state(ec2_instance),
        "protected_from_scale_in": bool((asg_instance or {}).get("ProtectedFromScaleIn")),
        "detached": detached,
        "tags": tags,
        "node": None,
    }


def group_instances(ec2, group, include_detached=True):
    """Every member of ``group`` plus (optionally) the alive instances detached from it for surge, in rollout.outdated's shape."""
    listed = group.get("Instances") or []
    detached = detached_instances(ec2, group["AutoScalingGroupName"]) if include_detached else []
    in_group = set(instance["InstanceId"] for instance in listed)
    detached = [instance for instance in detached if instance["InstanceId"] not in in_group]
    details = describe_instances(ec2, sorted(in_group)) if in_group else {}
    records = [instance_record(instance, details.get(instance["InstanceId"])) for instance in listed]
    records.extend(instance_record(None, instance, detached=True) for instance in detached)
    return records


def warm_pool(client, ec2, group):
    """The group's warm pool: ``{"min_size", "max_group_prepared_capacity", "pool_state", "instances"}`` (the instances
    in rollout.outdated's shape, lifecycle ``Warmed:*``), or None when the group has none. DescribeWarmPool is called only
    for a group whose DescribeAutoScalingGroups shows a warm pool configuration."""
    if not group.get("WarmPoolConfiguration"):
        return None
    name = group["AutoScalingGroupName"]
    pages, token = [], None
    while True:
        page = client.describe_warm_pool(AutoScalingGroupName=name, **({"NextToken": token} if token else {}))
        pages.append(page)
        token = page.get("NextToken")
        if not token:
            break
    listed = [instance for page in pages for instance in page.get("Instances") or []]
    details = describe_instances(ec2, [instance["InstanceId"] for instance in listed]) if listed else {}
    config = pages[0].get("WarmPoolConfiguration") or group["WarmPoolConfiguration"]
    return {"min_size": config.get("MinSize") or 0, "max_group_prepared_capacity": config.get("MaxGroupPreparedCapacity"),
            "pool_state": config.get("PoolState") or "Stopped",
            "instances": [instance_record(instance, details.get(instance["InstanceId"])) for instance in listed]}


# ---------------------------------------------------------------------------------------------------------
# Load balancer target groups
# ---------------------------------------------------------------------------------------------------------

def group_target_groups(elbv2, group):
    """The group's target groups (``TargetGroupARNs``) as :func:`target_group_record`: one
    DescribeTargetGroups a chunk, one DescribeTargetGroupAttributes each; none (and no request) for a group without."""
    return target_group_records(elbv2, list(group.get("TargetGroupARNs") or []))


def target_group_records(elbv2, arns):
    """The target groups ``arns`` as :func:`target_group_record`, by name (one DescribeTargetGroups a chunk, one
    DescribeTargetGroupAttributes each)."""
    return _records(elbv2, [description for start in range(0, len(arns), _TARGET_GROUP_CHUNK)
                            for description in elbv2.describe_target_groups(
                                TargetGroupArns=arns[start:start + _TARGET_GROUP_CHUNK])["TargetGroups"]])


def existing_target_groups(elbv2, arns):
    """``{arn: record}`` of those of ``arns`` that exist (a TargetGroupBinding may outlive its target group): one
    DescribeTargetGroups for all, each one alone only when one of them is gone."""
    try:
        return {record["arn"]: record for record in target_group_records(elbv2, arns)}
    except ClientError as exc:
        if error_code(exc) != "TargetGroupNotFound":
            raise
    found = {}
    for arn in arns:
        try:
            found.update((record["arn"], record) for record in target_group_records(elbv2, [arn]))
        except ClientError as exc:
            if error_code(exc) != "TargetGroupNotFound":
                raise
    return found


def balancer_target_groups(elbv2, hostnames):
    """``{DNS name: [target group record]}`` of the Application and Network Load Balancers of this account and region
    whose DNS name is one of ``hostnames`` (DescribeLoadBalancers pages, then one DescribeTargetGroups each); none (and
    no request) without hostnames."""
    wanted = set(hostname.lower() for hostname in hostnames)
    if not wanted:
        return {}
    found = {}
    for page in elbv2.get_paginator("describe_load_balancers").paginate():
        for balancer in page.get("LoadBalancers") or []:
            dns = (balancer.get("DNSName") or "").lower()
            if dns in wanted:
                found[dns] = _records(elbv2, elbv2.describe_target_groups(LoadBalancerArn=balancer["LoadBalancerArn"])["TargetGroups"])
    return found


def _records(elbv2, descriptions):
    records = []
    for description in descriptions:
        attributes = elbv2.describe_target_group_attributes(TargetGroupArn=description["TargetGroupArn"])["Attributes"]
        records.append(target_group_record(description, {item["Key"]: item["Value"] for item in attributes}))
    return sorted(records, key=lambda record: record["name"] or "")


def target_group_record(description, attributes):
    """One target group as the rollout uses it, from DescribeTargetGroups' entry and its attributes (``{key: value}``)."""
    try:
        delay = int(float(attributes.get("deregistration_delay.timeout_seconds", DEFAULT_DELAY_SECONDS)))
    except (TypeError, ValueError):
        delay = DEFAULT_DELAY_SECONDS
    return {"name": description.get("TargetGroupName"), "arn": description.get("TargetGroupArn"),
            "target_type": description.get("TargetType") or "instance", "deregistration_delay": max(0, delay)}


def target_states(elbv2, arn):
    """``{target id: state}`` of one target group: its targets (registered and draining), one DescribeTargetHealth."""
    health = elbv2.describe_target_health(TargetGroupArn=arn)["TargetHealthDescriptions"]
    return {entry["Target"]["Id"]: (entry.get("TargetHealth") or {}).get("State") for entry in health}


def target_group_states(elbv2, target_groups):
    """``{arn: {target id: state}}`` of each of ``target_groups`` (:func:`target_group_record`'s shape)."""
    return {group["arn"]: target_states(elbv2, group["arn"]) for group in target_groups}


# ---------------------------------------------------------------------------------------------------------
# Launch templates, images, SSM parameters
# ---------------------------------------------------------------------------------------------------------

def describe_template(ec2, spec):
    """DescribeLaunchTemplates for the template ``spec`` names (by id, else by name)."""
    kwargs = {"LaunchTemplateIds": [spec["id"]]} if spec.get("id") else {"LaunchTemplateNames": [spec["name"]]}
    templates = ec2.describe_launch_templates(**kwargs)["LaunchTemplates"]
    if not templates:
        raise RolloutError("launch template %s not found" % (spec.get("id") or spec.get("name")))
    return templates[0]


def describe_version(ec2, template, number, field="version"):
    """The LaunchTemplateVersion ``number`` of ``template`` (a deleted version is an error naming ``field``)."""
    try:
        versions = ec2.describe_launch_template_versions(
            LaunchTemplateId=template["LaunchTemplateId"], Versions=[str(number)])["LaunchTemplateVersions"]
    except AWS_ERRORS as exc:
        if (error_code(exc) or "").startswith("InvalidLaunchTemplateId.VersionNotFound"):
            versions = []
        else:
            raise
    if not versions:
        raise RolloutError("%s: launch template %s (%s) has no version %s" % (
            field, template["LaunchTemplateId"], template["LaunchTemplateName"], number))
    return versions[0]


def describe_image(ec2, image_id):
    """The AMI ``image_id`` as DescribeImages returns it, or None when EC2 does not know it."""
    try:
        images = ec2.describe_images(ImageIds=[image_id])["Images"]
    except AWS_ERRORS as exc:
        if (error_code(exc) or "").startswith("InvalidAMIID"):
            return None
        raise
    return images[0] if images else None


def parameter_value(ssm, name):
    """The value of the SSM parameter ``name``, or None when it does not exist (or its name is not valid)."""
    try:
        return ssm.get_parameter(Name=name)["Parameter"]["Value"]
    except AWS_ERRORS as exc:
        if error_code(exc) in ("ParameterNotFound", "ParameterVersionNotFound", "ValidationException"):
            return None
        raise


# ---------------------------------------------------------------------------------------------------------
# Changes: every write a rollout makes to AWS, each one call (or one call per chunk)
# ---------------------------------------------------------------------------------------------------------

def write_state(client, group_name, values, delete=()):
    """Create or overwrite group tags (``{key: value}``, as ``rollout.state.state_writes`` says) in one CreateOrUpdateTags
    call, nothing propagated; then delete the tags ``delete`` names (the previous format's) in one DeleteTags call."""
    if values:
        client.create_or_update_tags(Tags=[
            {"ResourceId": group_name, "ResourceType": "auto-scaling-group", "Key": key, "Value": str(value),
             "PropagateAtLaunch": False}
            for key, value in sorted(values.items())
        ])
    if delete:
        client.delete_tags(Tags=[
            {"ResourceId": group_name, "ResourceType": "auto-scaling-group", "Key": key} for key in sorted(delete)
        ])


def clear_state(client, group_name, tags):
    """Delete the state tags ``tags`` (their keys: the group's tags that ``rollout.state.recorded_tags`` keeps) in one
    DeleteTags call."""
    present = sorted(tags)
    if not present:
        return []
    client.delete_tags(Tags=[
        {"ResourceId": group_name, "ResourceType": "auto-scaling-group", "Key": key} for key in present
    ])
    return present


def suspend_group_processes(client, group_name, processes):
    client.suspend_processes(AutoScalingGroupName=group_name, ScalingProcesses=list(processes))


def resume_group_processes(client, group_name, processes):
    client.resume_processes(AutoScalingGroupName=group_name, ScalingProcesses=list(processes))


def set_group_sizes(client, group_name, max_size, desired_capacity, min_size=None):
    """UpdateAutoScalingGroup with the sizes given (min only when given)."""
    sizes = {"MaxSize": max_size, "DesiredCapacity": desired_capacity}
    if min_size is not None:
        sizes["MinSize"] = min_size
    client.update_auto_scaling_group(AutoScalingGroupName=group_name, **sizes)


def detach_for_surge(autoscaling, ec2, group_name, instance_ids, rollout_id):
    """Tag the instances as detached by the rollout, then detach them without lowering desired capacity.

    Tagged first: an instance detached by an interrupted run is still found (and drained, terminated) later."""
    ec2.create_tags(Resources=list(instance_ids), Tags=[
        {"Key": TAG_INSTANCE_DETACHED, "Value": rollout_id},
        {"Key": TAG_INSTANCE_DETACHED_FROM, "Value": group_name}])
    for start in range(0, len(instance_ids), _DETACH_CHUNK):
        autoscaling.detach_instances(AutoScalingGroupName=group_name, InstanceIds=instance_ids[start:start + _DETACH_CHUNK],
                                     ShouldDecrementDesiredCapacity=False)


def terminate_in_group(client, instance_id, decrement):
    """TerminateInstanceInAutoScalingGroup; False when the instance was already gone (not an error), else True."""
    try:
        client.terminate_instance_in_auto_scaling_group(InstanceId=instance_id, ShouldDecrementDesiredCapacity=decrement)
    except AWS_ERRORS as exc:
        if error_code(exc) == "ValidationError" and "not found" in str(exc).lower():
            # Gone between the read and this call (another run, a spot interruption).
            return False
        raise
    return True


def terminate_detached(ec2, instance_ids):
    """TerminateInstances for instances outside any group, in chunks; yields each chunk once it is terminated."""
    for start in range(0, len(instance_ids), _EC2_TERMINATE_CHUNK):
        chunk = instance_ids[start:start + _EC2_TERMINATE_CHUNK]
        ec2.terminate_instances(InstanceIds=chunk)
        yield chunk


def create_template_version(ec2, template_id, source_number, description, image_id):
    """CreateLaunchTemplateVersion from ``source_number`` with only the AMI changed; the new version's number."""
    created = ec2.create_launch_template_version(
        LaunchTemplateId=template_id, SourceVersion=str(source_number), VersionDescription=description,
        LaunchTemplateData={"ImageId": image_id})["LaunchTemplateVersion"]
    return int(created["VersionNumber"])


def set_default_version(ec2, template_id, number):
    ec2.modify_launch_template(LaunchTemplateId=template_id, DefaultVersion=str(number))


def point_group(client, group, spec, template_id, template_name, number):
    """Make the group launch ``template_id`` version ``number``: for a group with a MixedInstancesPolicy, its template
    specification and every override that names the same template (by id, or by ``template_name``)."""
    name = group["AutoScalingGroupName"]
    if spec["mixed_instances_policy"]:
        # Send the whole policy with only the template specifications changed, so the instances distribution and the
        # overrides stay as they are whatever the endpoint does with the parts it is not given.
        policy = copy.deepcopy(group["MixedInstancesPolicy"])
        launch_template = policy.setdefault("LaunchTemplate", {})
        launch_template["LaunchTemplateSpecification"] = {"LaunchTemplateId": template_id, "Version": str(number)}
        for override in launch_template.get("Overrides") or []:
            own = override.get("LaunchTemplateSpecification")
            if own and (own.get("LaunchTemplateId") == template_id or (not own.get("LaunchTemplateId")
                                                                       and own.get("LaunchTemplateName") == template_name)):
                override["LaunchTemplateSpecification"] = {"LaunchTemplateId": template_id, "Version": str(number)}
        if not launch_template.get("Overrides"):
            launch_template.pop("Overrides", None)
        client.update_auto_scaling_group(AutoScalingGroupName=name, MixedInstancesPolicy=policy)
    else:
        client.update_auto_scaling_group(AutoScalingGroupName=name, LaunchTemplate={
            "LaunchTemplateId": template_id, "Version": str(number)})


# ---------------------------------------------------------------------------------------------------------
# CloudWatch alarms
# ---------------------------------------------------------------------------------------------------------

_ALARM_NAMES_PER_CALL = 100


def alarm_states(cloudwatch, names):
    """``[{"name", "found", "state", "reason", "updated"}]`` for the alarms named (metric and composite ones), in the
    order given; ``found`` is False (and ``state`` None) for a name CloudWatch does not know. DescribeAlarms, 100
    names a call."""
    names = list(dict.fromkeys(names or ()))
    found = {}
    for start in range(0, len(names), _ALARM_NAMES_PER_CALL):
        paginator = cloudwatch.get_paginator("describe_alarms")
        for page in paginator.paginate(AlarmNames=names[start:start + _ALARM_NAMES_PER_CALL],
                                       AlarmTypes=["CompositeAlarm", "MetricAlarm"]):
            for alarm in (page.get("MetricAlarms") or []) + (page.get("CompositeAlarms") or []):
                found[alarm["AlarmName"]] = alarm
    return [{"name": name, "found": name in found, "state": (found.get(name) or {}).get("StateValue"),
             "reason": (found.get(name) or {}).get("StateReason"),
             "updated": iso_time((found.get(name) or {}).get("StateUpdatedTimestamp"))}
            for name in names]


def read_alarms(cloudwatch, names, params=None):
    """The abort alarms' states (:func:`alarm_states`); a name CloudWatch does not know is an error naming it."""
    with aws_errors("DescribeAlarms", "abort alarms %s" % ", ".join(names), params):
        alarms = alarm_states(cloudwatch, names)
    missing = [alarm["name"] for alarm in alarms if not alarm["found"]]
    if missing:
        raise RolloutError("abort_alarms: CloudWatch alarm(s) %s not found; name existing metric or composite alarms of "
                           "this account and region" % ", ".join(missing))
    return alarms


# ---------------------------------------------------------------------------------------------------------
# Waiting
# ---------------------------------------------------------------------------------------------------------

def wait_for(check, timeout, what, sleep=time.sleep, clock=time.monotonic, poll_cap=10.0):
    """Call ``check()`` -> ``(done, detail, value)`` until done; poll with capped backoff; give up after ``timeout`` s.

    Returns the last value. On timeout raises RolloutError naming ``what`` and the last detail (text).
    """
    started = clock()
    attempt = 0
    while True:
        done, detail, value = check()
        if done:
            return value
        elapsed = clock() - started
        if elapsed >= timeout:
            raise RolloutError("timed out after %ds waiting for %s: %s" % (timeout, what, detail), waited_seconds=round(elapsed, 1))
        attempt += 1
        sleep(min(backoff_delay(attempt, base=1.0, cap=poll_cap), max(0.1, timeout - elapsed)))


@contextmanager
def aws_errors(operation, resource=None, params=None):
    """Turn an AWS error raised inside into a RolloutError whose message is describe_aws_error's line.

    ``with aws_errors("SetDesiredCapacity", "Auto Scaling group 'web'"): ...``: the text is written where the call is made.

    A request AWS refused to the identity (AccessDenied, AccessDeniedException, UnauthorizedOperation,
    UnauthorizedAccess) is a ``permissions.PermissionRefused``: its message names the action (of the request that was
    sent, which may be another than ``operation`` names) and resource refused, the statement of docs/iam-policy.json
    that allows it and that nothing was changed, and the failed result carries them as ``permission``.
    """
    try:
        yield
    except AWS_ERRORS as exc:
        code, message = aws_error_parts(exc)
        permission = aws_refusal(code, message, getattr(exc, "operation_name", None) or operation, resource)
        if permission is not None:
            raise refused("%s on %s" % (operation, resource) if resource else str(operation), permission) from exc
        raise RolloutError(describe_aws_error(exc, operation, resource, params)) from exc
