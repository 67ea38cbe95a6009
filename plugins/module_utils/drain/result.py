# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""node_drain's result: each node's entry, the message, the diff, for the three ways a run ends (the pre-flight of
check mode, a drain refused before any change, a drain that ran). Pure: built from what the drain read and did.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import pod_key


def node_result(status, **fields):
    """The one shape of a node in node_drain's result: ``status`` and what was done, as ``fields`` say (a drain that
    ran adds ``message``; the pre-flight of check mode adds ``predicted`` and ``outcome``)."""
    result = {"status": status, "cordoned": False, "evicted": [], "deleted": [], "restarted": [], "skipped": [],
              "blocking": [], "remaining": [], "downtime": [], "force_deleted": [], "eviction_retries": 0, "forced": False,
              "quarantined": False, "seconds": 0.0}
    result.update(fields)
    return result


def diff_entry(name, unschedulable, pods, after_pods):
    """The diff of one node: cordoned (``unschedulable``: whether it was before), and its pods (``pods`` as read
    before) down to ``after_pods`` (keys)."""
    before = {"unschedulable": bool(unschedulable), "pods": sorted(pod_key(pod) for pod in pods)}
    return {"before_header": "node %s" % name, "after_header": "node %s" % name, "before": before,
            "after": {"unschedulable": True, "pods": sorted(after_pods)}}


def check_result(names, report, nodes, pods_by_node, diff=False):
    """Check mode: the result from the pre-flight's ``report`` (``drain.preflight.drain_preflight``) of the nodes
    ``names`` (as read: ``nodes``, their pods ``pods_by_node``)."""
    found = {}
    for name in names:
        entry = report[name]
        unschedulable = bool((nodes[name].get("spec") or {}).get("unschedulable"))
        blocking = [{"pod": blocker["pod"], "kind": blocker["kind"], "pdb": blocker["pdb"], "message": blocker["reason"],
                     "severity": blocker["severity"]} for blocker in entry["blockers"]]
        found[name] = node_result("would be cordoned and drained" if not unschedulable else "would be drained",
                                  predicted=entry["predicted"], outcome=entry["outcome"], cordoned=not unschedulable,
                                  evicted=entry["would_evict"], deleted=entry["would_delete"],
                                  restarted=entry["would_restart"], skipped=entry["skipped"], blocking=blocking,
                                  downtime=[{"pod": blocker["pod"], "reason": blocker["reason"]}
                                            for blocker in entry["blockers"] if blocker["kind"] == "single_replica"])
    # what would stop an upgrade whatever it waited for (drain.preflight.upgrade_stops), in the nodes' order
    would_stop = [{"node": name, "pod": stop["pod"], "kind": stop["kind"], "pdb": stop["pdb"], "message": stop["reason"],
                   "gets_past": stop["gets_past"]} for name in names for stop in report[name].get("stops") or []]
    for stop in would_stop:
        for blocking in found[stop["node"]]["blocking"]:
            if (blocking["pod"], blocking["kind"]) == (stop["pod"], stop["kind"]):
                blocking["stops_upgrade"] = True
                blocking["gets_past"] = stop["gets_past"]
    changed = any(node["cordoned"] or node["evicted"] or node["deleted"] or node["restarted"] for node in found.values())
    blocked = sorted(name for name, node in found.items() if node["predicted"] == "blocked")
    if blocked:
        msg = "pre-flight: %d of %d node(s) blocked: %s" % (len(blocked), len(found), "; ".join(
            "%s: %s" % (name, found[name]["outcome"]) for name in blocked))
    else:
        msg = "pre-flight: %d node(s) can be drained" % len(found)
    output = {"changed": changed, "nodes": found, "msg": msg, "preflight_ok": not blocked,
              "would_stop": would_stop, "drained": [], "skipped_nodes": [], "failed_nodes": []}
    if diff:
        output["diff"] = [diff_entry(name, not found[name]["cordoned"], pods_by_node[name], [item["pod"] for item in found[name]["skipped"]]
                                     + [blocker["pod"] for blocker in found[name]["blocking"] if blocker["severity"] == "error"])
                          for name in names]
    return output


def refused_result(names, problems):
    """A drain refused before any change: ``problems`` (``{node: [blocking]}``) are pods that cannot leave their node."""
    lines = []
    for name in names:
        for blocking in problems.get(name, []):
            lines.append("%s on %s: %s" % (blocking["pod"], name, blocking["message"]))
    nodes = {name: node_result("not started", message="", blocking=problems.get(name, []),
                               remaining=[blocking["pod"] for blocking in problems.get(name, [])])
             for name in names}
    return {"failed": True, "changed": False, "nodes": nodes, "drained": [], "skipped_nodes": [],
            "failed_nodes": sorted(problems),
            "msg": "cannot drain: %d pod(s) cannot leave their node under the options given, nothing was changed: %s"
                   % (len(lines), "; ".join(lines))}


def drain_result(names, results, seconds, started_at, pods_by_node, diff=False):
    """A drain that ran: ``results`` (``{node: node_result}``, as each node's drain left it), ``failed`` set when a node
    was not drained; with ``diff``, each node's cordon and pods (``pods_by_node``, as read before) before and after
    (a node this drain cordoned, ``cordoned`` in its result, was schedulable before)."""
    for result in results.values():
        result.pop("forced_pods", None)
    drained = [name for name in names if results[name]["status"] == "drained"]
    skipped = [name for name in names if results[name]["status"] == "skipped"]
    failed = [name for name in names if results[name]["status"] == "failed"]
    changed = any(result["cordoned"] or result["evicted"] or result["deleted"] or result["restarted"]
                  for result in results.values())
    if failed:
        msg = "; ".join(results[name]["message"] for name in failed)
        if skipped:
            msg += "; skipped: " + ", ".join(skipped)
    else:
        msg = "%d node(s) drained in %ds" % (len(drained), int(round(seconds)))
        if skipped:
            msg += "; %d skipped and left cordoned: %s" % (len(skipped), "; ".join(results[name]["message"] for name in skipped))
    output = {"changed": changed, "nodes": results, "drained": drained, "skipped_nodes": skipped,
              "failed_nodes": failed, "msg": msg, "seconds": seconds, "started_at": started_at}
    if failed:
        output["failed"] = True
    if diff:
        output["diff"] = [diff_entry(name, not results[name]["cordoned"], pods_by_node[name], results[name]["remaining"]
                                     + [item["pod"] for item in results[name]["skipped"]
                                        if not item["reason"].startswith("already terminating")])
                          for name in names]
    return output
