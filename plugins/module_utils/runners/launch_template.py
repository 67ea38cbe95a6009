# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A group's launch template: which one and which explicit version it launches, the AMI in it, and the setup
step of a rollout (``launch_template_version``): a new version with the target AMI, pointed at by number.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws import (
    aws_clients,
    aws_errors,
    create_template_version,
    describe_image,
    describe_template,
    describe_version,
    parameter_value,
    point_group,
    require_group,
    set_default_version,
    write_state,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError, reporting, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.core.tags import tags_to_dict
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import parse_duration
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import MIN_NODE_AGE, aged_target
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.state import group_state, state_writes
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.template import AMI_ID_RE, DESCRIPTION_LIMIT, DIGITS_RE, check_target_options


def template_spec(group):
    """The group's launch template as configured: ``{"id", "name", "version", "mixed_instances_policy", "overrides"}``.

    ``version`` is what the group says (a number, ``$Latest`` or ``$Default``; ``$Default`` when unset, as AWS
    reads it). Groups with a MixedInstancesPolicy use its launch template specification; ``overrides`` lists the
    policy's overrides that carry a launch template of their own, each ``{"instance_type", "id", "name", "version"}``
    (AWS launches that instance type from it instead of the group's). None for groups with a launch configuration.
    """
    spec = group.get("LaunchTemplate")
    mixed = False
    overrides = []
    if not spec and group.get("MixedInstancesPolicy"):
        launch_template = group["MixedInstancesPolicy"].get("LaunchTemplate") or {}
        spec = launch_template.get("LaunchTemplateSpecification")
        mixed = True
        for override in launch_template.get("Overrides") or []:
            own = override.get("LaunchTemplateSpecification")
            if own:
                overrides.append({"instance_type": override.get("InstanceType"), "id": own.get("LaunchTemplateId"),
                                  "name": own.get("LaunchTemplateName"), "version": str(own.get("Version") or "$Default")})
    if not spec:
        return None
    return {"id": spec.get("LaunchTemplateId"), "name": spec.get("LaunchTemplateName"),
            "version": str(spec.get("Version") or "$Default"), "mixed_instances_policy": mixed, "overrides": overrides}


def _own_template(override, template_id, template_name):
    return (override["id"] and override["id"] == template_id) or (not override["id"] and override["name"] == template_name)


def override_refusals(spec, template_id, template_name):
    """Why the group cannot be rolled because of its MixedInstancesPolicy: each override that launches its instance type
    from another launch template than the group's (``template_id``, ``template_name``), named. A rollout moves the group's
    own template to the target, and with it every override that names that template; another template's target cannot
    be told (its AMI may be for another architecture), and its instances would stay outdated for ever."""
    return ["MixedInstancesPolicy override for instance type %s launches from launch template %s version %s, not the group's "
            "launch template %s (%s): a rollout moves only the group's own template to the target; make the override use the "
            "group's launch template (or none), or roll that template's instances apart"
            % (override["instance_type"] or "?", override["id"] or override["name"], override["version"], template_id, template_name)
            for override in (spec or {}).get("overrides") or [] if not _own_template(override, template_id, template_name)]


def stale_overrides(spec, template_id, template_name, number):
    """The overrides that name the group's own launch template at another version than ``number``: they move with it."""
    return [override for override in (spec or {}).get("overrides") or []
            if _own_template(override, template_id, template_name) and override["version"] != str(number)]


def resolve_version(template, version, field="version"):
    """``$Latest``/``$Default``/``"7"``/``7`` -> the explicit version number (int) of ``template``."""
    if version in (None, "", "$Default"):
        return int(template["DefaultVersionNumber"])
    if version == "$Latest":
        return int(template["LatestVersionNumber"])
    text = str(version).strip()
    if isinstance(version, bool) or not DIGITS_RE.match(text) or int(text) < 1:
        raise RolloutError("%s: %r is not allowed; use a version number (1 or more), $Latest or $Default" % (field, version))
    number = int(text)
    if number > int(template["LatestVersionNumber"]):
        raise RolloutError("%s: launch template %s (%s) has no version %d; its versions go up to %d"
                           % (field, template["LaunchTemplateId"], template["LaunchTemplateName"], number,
                              template["LatestVersionNumber"]))
    return number


def group_target(ec2, group):
    """What the group launches now, resolved: ``{"launch_template_id", "launch_template_name", "version" (int),
    "version_spec", "default_version", "latest_version", "image_id", "instance_type", "mixed_instances_policy"}``.

    None for a group with a launch configuration (not supported by a rollout).
    """
    spec = template_spec(group)
    if spec is None:
        return None
    template = describe_template(ec2, spec)
    number = resolve_version(template, spec["version"])
    data = describe_version(ec2, template, number).get("LaunchTemplateData") or {}
    return {
        "launch_template_id": template["LaunchTemplateId"],
        "launch_template_name": template["LaunchTemplateName"],
        "version": number,
        "version_spec": spec["version"],
        "default_version": int(template["DefaultVersionNumber"]),
        "latest_version": int(template["LatestVersionNumber"]),
        "image_id": data.get("ImageId"),
        "instance_type": data.get("InstanceType"),
        "mixed_instances_policy": spec["mixed_instances_policy"],
    }


# ---------------------------------------------------------------------------------------------------------
# Images
# ---------------------------------------------------------------------------------------------------------

def check_image(ec2, image_id, region, field="image_id", source=None):
    """Refuse an AMI id that is malformed, unknown or not available; return the image."""
    where = "%s: AMI '%s'%s" % (field, image_id, " (from %s)" % source if source else "")
    if not isinstance(image_id, str) or not AMI_ID_RE.match(image_id):
        raise RolloutError("%s is not an AMI id; use an id such as ami-0123456789abcdef0" % where)
    image = describe_image(ec2, image_id)
    if image is None:
        raise RolloutError("%s not found in region %s" % (where, region))
    if image.get("State") not in (None, "available"):
        raise RolloutError("%s is %s, not available" % (where, image.get("State")))
    return image


def image_from_ssm(ssm, name, region):
    """The AMI id an SSM parameter holds (as EKS publishes them, or the user's own)."""
    value = parameter_value(ssm, name)
    if value is None:
        raise RolloutError("ssm_parameter: SSM parameter '%s' not found in region %s" % (name, region))
    value = str(value).strip()
    if not AMI_ID_RE.match(value):
        raise RolloutError("ssm_parameter: SSM parameter '%s' holds %r, not an AMI id" % (name, value[:80]))
    return value


# ---------------------------------------------------------------------------------------------------------
# The module: launch_template_version
# ---------------------------------------------------------------------------------------------------------

def _reusable_version(ec2, template, source_number, image_id):
    """The latest version when an earlier, interrupted run already made it from the same source with ``image_id``."""
    latest = int(template["LatestVersionNumber"])
    if latest <= source_number:
        return None
    version = describe_version(ec2, template, latest)
    if (version.get("LaunchTemplateData") or {}).get("ImageId") == image_id:
        return version
    return None


def resolve_target(params, ec2, ssm, group, region):
    """What a group is to be rolled to, read only: the group's launch template and the version it points at (the
    source), and the target asked by ``params`` (``version``, ``image_id`` or ``ssm_parameter``, as the module's
    options; none of them: the source) - an existing version, a version an interrupted run already made with the same
    AMI, or one still to be made from the source.

    Returns ``{"spec", "template", "source_number", "source", "source_image", "image_id", "target" (the target
    version as EC2 describes it, None when it is still to be made), "reused", "create", "target_number",
    "target_image"}``. Raises RolloutError naming the option for a group with a launch configuration, an AMI or a
    parameter that is not there.
    """
    name = group["AutoScalingGroupName"]
    resource = "Auto Scaling group '%s'" % name
    spec = template_spec(group)
    if spec is None:
        raise RolloutError("asg_name: Auto Scaling group '%s' uses a launch configuration; only groups with a launch "
                           "template (or a MixedInstancesPolicy with one) can be rolled" % name)
    with aws_errors("DescribeLaunchTemplates", resource, params):
        template = describe_template(ec2, spec)
        source_number = resolve_version(template, spec["version"])
        source = describe_version(ec2, template, source_number)
    source_image = (source.get("LaunchTemplateData") or {}).get("ImageId")

    image_id = None
    if params.get("ssm_parameter"):
        with aws_errors("GetParameter", resource, params):
            image_id = image_from_ssm(ssm, params["ssm_parameter"], region)
        with aws_errors("DescribeImages", resource, params):
            check_image(ec2, image_id, region, field="ssm_parameter", source="SSM parameter %s" % params["ssm_parameter"])
    elif params.get("image_id"):
        image_id = params["image_id"]
        with aws_errors("DescribeImages", resource, params):
            check_image(ec2, image_id, region)

    target = None
    reused = None
    if params.get("version") is not None:
        with aws_errors("DescribeImages", resource, params):
            target = describe_version(ec2, template, resolve_version(template, params["version"]))
    elif image_id is None or image_id == source_image:
        target = source
    else:
        with aws_errors("DescribeImages", resource, params):
            reused = _reusable_version(ec2, template, source_number, image_id)
        target = reused
    return {"spec": spec, "template": template, "source_number": source_number, "source": source, "source_image": source_image,
            "image_id": image_id, "target": target, "reused": reused, "create": target is None,
            "target_number": int(target["VersionNumber"]) if target else int(template["LatestVersionNumber"]) + 1,
            "target_image": (target.get("LaunchTemplateData") or {}).get("ImageId") if target else image_id}


@reports_errors
def run_launch_template_version(module):
    """Resolve the target, create a version with the new AMI when needed, point the group at it by number."""
    params = module.params
    check_target_options(params)
    max_node_age = None if params.get("max_node_age") in (None, "") else parse_duration(params["max_node_age"], "max_node_age", minimum=MIN_NODE_AGE)
    connection, autoscaling, ec2, ssm = aws_clients(module, "autoscaling", "ec2", "ssm")
    region = connection.region
    name = params["asg_name"]
    resource = "Auto Scaling group '%s'" % name
    with aws_errors("DescribeAutoScalingGroups", resource, params):
        group = require_group(autoscaling, name, region, field="asg_name")
    resolved = resolve_target(params, ec2, ssm, group, region)
    spec, template, source_number = resolved["spec"], resolved["template"], resolved["source_number"]
    source_image, image_id, reused = resolved["source_image"], resolved["image_id"], resolved["reused"]
    target_number, target_image, create = resolved["target_number"], resolved["target_image"], resolved["create"]
    state = group_state(group)
    refusals = override_refusals(spec, template["LaunchTemplateId"], template["LaunchTemplateName"])
    if refusals:
        raise RolloutError("asg_name: Auto Scaling group '%s' cannot be rolled: %s" % (name, "; ".join(refusals)))

    point = spec["version"] != str(target_number) or bool(stale_overrides(spec, template["LaunchTemplateId"],
                                                                          template["LaunchTemplateName"], target_number))
    make_default = bool(params["set_default"]) and int(template["DefaultVersionNumber"]) != target_number
    changed = create or point or make_default

    # The recorded rollout follows the group to its new target (a rollback moves it back to its previous version).
    retarget = bool(state) and state.get("target_version") not in (None, target_number)
    if retarget and target_number != state.get("previous_version"):
        module.warn("Auto Scaling group '%s' has rollout %s recorded with target version %s; this run moves it to version %d, "
                    "so instances launched from now on differ from the recorded target"
                    % (name, state["rollout_id"], state["target_version"], target_number))
    changed = changed or retarget

    result = {
        "changed": changed,
        "asg_name": name,
        "launch_template_id": template["LaunchTemplateId"],
        "launch_template_name": template["LaunchTemplateName"],
        "version": target_number,
        "previous_version": source_number,
        "previous_version_spec": spec["version"],
        "image_id": target_image,
        "previous_image_id": source_image,
        "created": create,
        "reused_interrupted_version": reused is not None,
        "default_version": target_number if params["set_default"] else int(template["DefaultVersionNumber"]),
        "mixed_instances_policy": spec["mixed_instances_policy"],
        "rollout_retargeted": retarget,
        # with a max_node_age, the time before which an instance is outdated whatever it runs, settled now for the run
        "target": aged_target(dict({"launch_template_id": template["LaunchTemplateId"], "version": target_number, "image_id": target_image},
                                   **({"ssm_parameter": params["ssm_parameter"]} if params.get("ssm_parameter") else {})),
                              max_node_age, datetime.now(timezone.utc)),
    }
    if module._diff:  # pylint: disable=protected-access
        result["diff"] = {
            "before": {"launch_template_version": spec["version"], "image_id": source_image,
                       "default_version": int(template["DefaultVersionNumber"])},
            "after": {"launch_template_version": str(target_number), "image_id": target_image,
                      "default_version": result["default_version"]},
        }
    if module.check_mode or not changed:
        module.exit_json(**result)

    applied = "%s launch template %s" % (resource, template["LaunchTemplateId"])
    with reporting(result):
        if create:
            description = params.get("version_description") or "nodeops.rollout: %s from version %d" % (image_id, source_number)
            with aws_errors("CreateLaunchTemplateVersion", applied, params):
                target_number = create_template_version(ec2, template["LaunchTemplateId"], source_number,
                                                        description[:DESCRIPTION_LIMIT], image_id)
            result["version"] = target_number
            result["target"]["version"] = target_number
            if params["set_default"]:
                result["default_version"] = target_number
            if module._diff:  # pylint: disable=protected-access
                result["diff"]["after"]["launch_template_version"] = str(target_number)
                result["diff"]["after"]["default_version"] = result["default_version"]
        if params["set_default"] and int(template["DefaultVersionNumber"]) != target_number:
            with aws_errors("ModifyLaunchTemplate", applied, params):
                set_default_version(ec2, template["LaunchTemplateId"], target_number)
        if retarget:
            with aws_errors("CreateOrUpdateTags", resource, params):
                write, delete = state_writes(dict(state, target_version=target_number), tags_to_dict(group.get("Tags")))
                write_state(autoscaling, name, write, delete)
        if point:
            with aws_errors("UpdateAutoScalingGroup", applied, params):
                point_group(autoscaling, group, spec, template["LaunchTemplateId"], template["LaunchTemplateName"], target_number)
    module.exit_json(**result)
