# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a planned rollout would change, as Ansible's diff (``--check --diff``): node_group_info's ``diff`` when it is
given the target. One entry for the group (its launch template version and image, its sizes while surged, the
instances that would go) and one for each outdated node (the rollout's taint and the cordon of its drain). Pure: built
from the group as node_group_info returns it.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import DEFAULT_TAINT_KEY
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.sizes import surged_sizes


def taint_text(taint):
    """A taint as kubectl writes it: ``key=value:effect`` (``key:effect`` without a value)."""
    value = taint.get("value")
    return "%s%s:%s" % (taint.get("key"), "=%s" % value if value not in (None, "") else "", taint.get("effect"))


def _group_entry(group):
    plan = group["plan"]
    current = {"min_size": group["min_size"], "max_size": group["max_size"], "desired_capacity": group["desired_capacity"]}
    outdated = set(entry["instance_id"] for entry in plan["outdated"])
    # a rollout already recorded is surged already; a surge by detaching replaces instances without raising the sizes
    surged = current
    if plan["outdated"] and not group.get("state") and (group.get("surge_method") or "scale") == "scale" and plan.get("surge"):
        surged = surged_sizes(current, plan["surge"])
        surged = {key: surged[key] for key in current}
    instances = [instance["instance_id"] for instance in group["instances"] if not instance.get("detached")]
    kept = [instance_id for instance_id in instances if instance_id not in outdated]
    replacements = len(instances) - len(kept)
    before = {"launch_template_version": str(group["launch_template"]["version"]),
              "image_id": group["launch_template"].get("image_id"), "instances": instances}
    before.update(current)
    after = {"launch_template_version": str(plan["target"]["version"]), "image_id": plan["target"].get("image_id"),
             "instances": kept + (["%d new instance(s) at version %s" % (replacements, plan["target"]["version"])]
                                  if replacements else [])}
    after.update(surged)
    name = group["name"]
    return {"before_header": "Auto Scaling group %s" % name,
            "after_header": "Auto Scaling group %s while the rollout runs (its sizes are restored at the end)" % name,
            "before": before, "after": after}


def _node_entry(instance, taint):
    node = instance["node"]
    taints = [taint_text(entry) for entry in node.get("taints") or []]
    after = list(taints)
    if taint_text(taint) not in after:
        after = [entry for entry in after if not entry.startswith(taint["key"] + "=") and not entry.startswith(taint["key"] + ":")]
        after.append(taint_text(taint))
    return {"before_header": "node %s" % node["name"],
            "after_header": "node %s, tainted and cordoned to be drained" % node["name"],
            "before": {"unschedulable": not node.get("schedulable", True), "taints": sorted(taints)},
            "after": {"unschedulable": True, "taints": sorted(after)}}


def plan_diff(group, taint_key=None):
    """The diff of the rollout planned for ``group`` (one of node_group_info's ``node_groups``): a list of Ansible diff
    entries, empty when nothing is outdated. ``taint_key``: the rollout's taint (``nodeops.rollout/outdated``)."""
    plan = group["plan"]
    if not plan["outdated"]:
        return []
    taint = {"key": taint_key or DEFAULT_TAINT_KEY, "value": "true", "effect": plan.get("taint_effect") or "NoSchedule"}
    outdated = set(entry["instance_id"] for entry in plan["outdated"])
    nodes = [_node_entry(instance, taint) for instance in group["instances"]
             if instance["instance_id"] in outdated and instance.get("node")]
    return [_group_entry(group)] + sorted(nodes, key=lambda entry: entry["before_header"])
