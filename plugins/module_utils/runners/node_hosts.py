# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The instances of node groups as Ansible hosts (the inventory plugin ``nodeops.rollout.nodes``): read each group, its
instances and their nodes, and the target it is to be rolled to, all read only; then say per instance what a host
needs - its node, AZ, instance, launch template version and whether it is outdated - in the order a rollout drains
them, so that consecutive hosts alternate AZs.

The reads are the modules' own: ``launch_template.resolve_target`` (the target of ``launch_template_version``, never
created here), ``clients.aws.group_instances``, ``node_health.nodes_by_instance`` and ``rollout.outdated``.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws import aws_errors, group_instances, require_group
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import aws_connection
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import KubeApi, kube_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import k8s_client
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.batches import plan_batches
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import nodes_by_instance
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import aged_target, instance_is_active, node_name_of, outdated_instances
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.settings import check_node_groups as check_groups, target_options
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.launch_template import resolve_target
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.node_group import join_nodes


def group_name(prefix, value):
    """An inventory group name: ``prefix`` and ``value`` with every character that is not a letter, digit or _ as _."""
    return prefix + re.sub(r"[^A-Za-z0-9_]", "_", str(value))


def check_node_groups(node_groups):
    """The plugin's ``node_groups``, as ``rolling_update_node_groups`` takes them (:func:`rollout.settings.check_node_groups`,
    the role's own check): each ``{"name"}`` with at most one target and its own ``max_unavailable``/``max_surge``; a
    plain name stands for ``{"name": name}``. A count a group does not give stays out: the role settles it against its
    own variables. Raises SettingsError naming the field."""
    if isinstance(node_groups, list):
        node_groups = [{"name": group} if isinstance(group, str) else group for group in node_groups]
    return check_groups(node_groups, "node_groups")


def host_entries(group_spec, records, target):
    """The hosts of one node group: ``[{"host", "vars"}]``, outdated instances first, each part spread across AZs
    (consecutive hosts alternate AZs, oldest first within an AZ). ``records``: the group's active instances with their
    nodes joined; ``target``: ``{"launch_template_id", "version", "image_id"}``."""
    reasons = {entry["instance_id"]: entry["reasons"] for entry in outdated_instances(records, target)}
    outdated = [record for record in records if record["instance_id"] in reasons]
    current = [record for record in records if record["instance_id"] not in reasons]
    entries = []
    for part in (outdated, current):
        ordered = plan_batches(part, [len(part)])[0] if part else []
        for record in ordered:
            node = node_name_of(record)
            template = record.get("launch_template") or {}
            entries.append({"host": node or record["instance_id"], "vars": {
                "node_name": node,
                "instance_id": record["instance_id"],
                "availability_zone": record.get("az"),
                "node_group": group_spec["name"],
                "launch_template_id": template.get("id"),
                "launch_template_version": template.get("version"),
                "image_id": record.get("image_id"),
                "lifecycle_state": record.get("lifecycle_state"),
                "ready": bool((record.get("node") or {}).get("ready")),
                "outdated": record["instance_id"] in reasons,
                "outdated_reasons": list(reasons.get(record["instance_id"]) or []),
                "target_launch_template_version": target["version"],
            }})
    return entries


# The host variables an inventory's include_filters and exclude_filters may test (every one host_entries sets, but the
# list of reasons).
FILTER_KEYS = ("node_name", "instance_id", "availability_zone", "node_group", "launch_template_id", "launch_template_version",
               "target_launch_template_version", "image_id", "lifecycle_state", "ready", "outdated")


def _filter_text(value):
    """A value as a filter compares it: booleans as true/false (YAML's yes/no/True too), everything else as text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return {"yes": "true", "no": "false", "true": "true", "false": "false"}.get(text.lower(), text)


def check_host_filters(filters, field):
    """The plugin's ``include_filters`` or ``exclude_filters`` (named ``field``): a list of dicts of a host variable of
    FILTER_KEYS to a value or a list of values. Returns them as ``[{key: [text, ...]}]``; raises RolloutError naming
    the entry and the allowed keys."""
    if filters is None:
        return []
    if not isinstance(filters, list):
        raise RolloutError("%s: %r is not allowed; use a list of filters, each a dict of host variable to value(s)" % (field, filters))
    checked = []
    for index, entry in enumerate(filters):
        where = "%s[%d]" % (field, index)
        if not isinstance(entry, dict):
            raise RolloutError("%s: %r is not allowed; use a dict of host variable to value(s), e.g. {outdated: true}" % (where, entry))
        unknown = sorted(str(key) for key in entry if key not in FILTER_KEYS)
        if unknown:
            raise RolloutError("%s: %s is not a host variable to filter on; use %s" % (where, ", ".join(unknown), ", ".join(FILTER_KEYS)))
        converted = {}
        for key, value in entry.items():
            values = value if isinstance(value, list) else [value]
            if not values or any(isinstance(item, (dict, list)) or item is None for item in values):
                raise RolloutError("%s.%s: %r is not allowed; use a value or a list of values" % (where, key, value))
            converted[key] = [_filter_text(item) for item in values]
        checked.append(converted)
    return checked


def _matches(hostvars, entry):
    return all(_filter_text(hostvars.get(key)) in values for key, values in entry.items())


def filter_hosts(hosts, include, exclude):
    """The entries of ``hosts`` (host_entries's) kept by checked ``include`` and ``exclude`` filters, in their order:
    with include filters, only hosts matching every key of one of them; then no host matching every key of an exclude
    filter (exclude wins). A filter key's values are alternatives."""
    return [host for host in hosts
            if (not include or any(_matches(host["vars"], entry) for entry in include))
            and not any(_matches(host["vars"], entry) for entry in exclude)]


def read_node_hosts(params, node_groups, client_name="nodes"):
    """Every node group's hosts (``host_entries``), read with the connection options ``params`` (the modules'
    AWS and Kubernetes options, falling back to the same environment variables); requests say ``client_name`` in their
    user agent."""
    connection = aws_connection(params, client_name)
    autoscaling, ec2, ssm = (connection.client(service) for service in ("autoscaling", "ec2", "ssm"))
    api = KubeApi(k8s_client(params, client_name))
    with kube_errors("list", "nodes", params):
        raw_nodes = api.list_nodes()
    nodes = nodes_by_instance(raw_nodes)
    now = datetime.now(timezone.utc)
    hosts = []
    for spec in node_groups:
        resource = "Auto Scaling group '%s'" % spec["name"]
        with aws_errors("DescribeAutoScalingGroups", resource, params):
            group = require_group(autoscaling, spec["name"], connection.region, field="node_groups")
            records = [record for record in group_instances(ec2, group, include_detached=False) if instance_is_active(record)]
        resolved = resolve_target(dict(params, **target_options(spec)), ec2, ssm, group, connection.region)
        target = aged_target({"launch_template_id": resolved["template"]["LaunchTemplateId"], "version": resolved["target_number"],
                              "image_id": resolved["target_image"]}, spec.get("max_node_age"), now)
        join_nodes(records, nodes, raw_nodes)
        hosts.extend(host_entries(spec, records, target))
    return hosts
