# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The pre-flight of a drain: every blocker of a batch (budgets at zero, naked pods, emptyDir, do-not-disrupt, ...)
found before anything is tainted or drained, with the predicted outcome. Pure.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.budgets import (
    BudgetIndex,
    eviction_needs_budget,
    eviction_skips_pdbs,
    expected_pods_from_owners,
    pdb_key,
    pdb_status,
    pdbs_selecting,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.implicit import finding_text
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import (
    REPLICATED_OWNER_KINDS,
    classify_pod,
    controller_of,
    drain_options,
    pod_is_finished,
    pod_is_terminating,
    pod_key,
    pod_owner_key,
    tolerates_every_taint,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, int_at_least
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.rules import eviction_reason
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.volumes import homes, pinned_volumes


def _blocker(pod, kind, reason, severity, pdb=None, **extra):
    entry = {"pod": pod, "kind": kind, "reason": reason, "pdb": pdb, "severity": severity}
    entry.update(extra)
    return entry


def _pdb_zero_reason(status, bypassed):
    text = ("PodDisruptionBudget %s allows 0 disruptions: it needs %d healthy pods and has %d"
            % (status["pdb"], status["desired_healthy"], status["current_healthy"]))
    if 0 < status["expected_pods"] <= status["desired_healthy"]:
        text += ("; with %d expected pods it can never allow one (relax minAvailable/maxUnavailable or add replicas)"
                 % status["expected_pods"])
    if bypassed:
        text += "; disable_eviction deletes the pod anyway and breaks the budget"
    return text


def _pdb_insufficient_reason(status, needed, bypassed, in_wave=False):
    text = ("PodDisruptionBudget %s allows %d disruption(s) but %d of its pods are on the nodes %s"
            % (status["pdb"], status["disruptions_allowed"], needed, "of one wave" if in_wave else "drained together"))
    if bypassed:
        return text + "; disable_eviction deletes them all anyway and breaks the budget"
    return text + "; the drain waits for replacements to become Ready between evictions"


def _live_owner_counts(pods):
    counts = {}
    for pod in pods:
        if pod_is_terminating(pod) or pod_is_finished(pod):
            continue
        key = pod_owner_key(pod)
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
    return counts


def multiple_pdbs_reason(names):
    """Why a pod selected by several PodDisruptionBudgets (``names``, their keys) cannot be evicted."""
    return ("selected by %d PodDisruptionBudgets (%s); the Eviction API refuses such pods (HTTP 500) until one of them "
            "is removed" % (len(names), ", ".join(names)))


def predicted(blockers):
    """How a node's drain is predicted to end from its blockers: "blocked" when one is an error, "downtime" when a
    single-replica workload goes down while its pod moves, else "ok"."""
    if any(blocker["severity"] == "error" for blocker in blockers):
        return "blocked"
    if any(blocker["kind"] == "single_replica" for blocker in blockers):
        return "downtime"
    return "ok"


def eviction_preflight(node_pods_by_node, all_pods, pdbs, options=None, replicas_by_owner=None, waves=None, implicit=None):
    """Everything that would stop or hurt draining a batch of nodes together, found before touching them.

    ``node_pods_by_node`` maps each node of the batch to its pods; ``all_pods`` holds the pods of the
    cluster (or at least of the namespaces involved), used for the budgets' healthy counts and replica counts;
    ``pdbs`` the PodDisruptionBudgets; ``options`` the drain options (see :func:`drain_options`);
    ``replicas_by_owner`` optionally maps ``namespace/Kind/name`` of pod controllers (see :func:`owner_key`) to
    the workload's desired replicas, which makes ``single_replica`` and the budgets' expected pods exact
    (without it, live pods are counted).

    Returns, per node, ``{"would_evict": [pod], "would_delete": [pod], "skipped": [{"pod", "reason"}],
    "blockers": [{"pod", "kind", "reason", "pdb", "severity"}], "predicted": "ok" | "blocked" | "downtime"}``.

    Blocker kinds (severity ``error`` stops the drain, ``warning`` lets it finish at a cost):

    - ``pdb_zero`` (error): a budget selecting the pod allows 0 disruptions now;
    - ``pdb_insufficient`` (warning): the budget allows fewer disruptions than the batch has of its pods, so
      evictions wait for replacements to become Ready; with ``waves`` (lists of node names, the order the nodes will
      be drained in), its pods are counted wave by wave, the nodes in no wave together;
    - ``multiple_pdbs`` (error): more than one budget selects the pod; the Eviction API answers 500;
    - ``naked_pod``, ``emptydir``, ``do_not_disrupt`` (error): the pod is blocked under the current options;
    - ``single_replica`` (warning): the pod's workload has one replica, so it is down until the replacement
      is Ready (it carries ``owner``);
    - ``implicit_budget`` (warning): no budget covers the evicted pod and its workload of two or more replicas has an
      implicit budget (``implicit``: pod key -> ``drain.implicit.implicit_budget``), so its evictions wait for another
      pod Ready; the reason says how they are paced (it carries ``owner``);
    - ``tolerates_all`` (warning): the pod tolerates every taint and may be scheduled back onto a tainted node.

    With ``disable_eviction`` budgets are not enforced: ``pdb_zero`` and ``pdb_insufficient`` become warnings
    and ``multiple_pdbs`` does not apply. ``predicted`` is "blocked" when a node has an error, "downtime"
    when it has a ``single_replica`` warning, else "ok".
    """
    if not isinstance(node_pods_by_node, dict):
        raise PlanError("node_pods_by_node: %r is not allowed; use a dict of node name -> list of pods" % (node_pods_by_node,))
    opts = drain_options(options)
    if replicas_by_owner is not None and not isinstance(replicas_by_owner, dict):
        raise PlanError("replicas_by_owner: %r is not allowed; use a dict of namespace/Kind/name -> replicas" % (replicas_by_owner,))
    bypassed = opts["disable_eviction"]
    pool = list(all_pods or [])
    known = set(pod_key(pod) for pod in pool)
    for node_name, pods in node_pods_by_node.items():
        if not isinstance(pods, (list, tuple)):
            raise PlanError("node_pods_by_node[%s]: %r is not allowed; use a list of pods" % (node_name, pods))
        for pod in pods:
            if pod_key(pod) not in known:
                known.add(pod_key(pod))
                pool.append(pod)

    pdbs = BudgetIndex(pdbs or [])
    statuses = {}
    for pdb, selected in zip(pdbs, pdbs.pods_selected(pool)):
        expected = expected_pods_from_owners(selected, replicas_by_owner) if replicas_by_owner else None
        statuses[pdb_key(pdb)] = pdb_status(pdb, selected, expected)
    live_counts = _live_owner_counts(pool)

    report = {}
    needs = {}  # pdb key -> [(node, pod key)]
    for node_name, pods in node_pods_by_node.items():
        node_report = {"would_evict": [], "would_delete": [], "skipped": [], "blockers": [], "predicted": "ok"}
        report[node_name] = node_report
        for pod in pods:
            decision = classify_pod(pod, opts)
            key = decision["pod"]
            action = decision["action"]
            if action == "skip":
                node_report["skipped"].append({"pod": key, "reason": decision["reason"]})
                continue
            if action == "delete" and pod_is_finished(pod):
                node_report["would_delete"].append(key)
                continue
            if action == "evict":
                node_report["would_evict"].append(key)
            elif action == "delete":
                node_report["would_delete"].append(key)
            for block in decision["blocks"]:
                node_report["blockers"].append(_blocker(key, block["kind"], block["reason"], "error"))

            matching = pdbs_selecting(pod, pdbs)
            if len(matching) > 1 and not bypassed and not eviction_skips_pdbs(pod):
                names = [pdb_key(pdb) for pdb in matching]
                node_report["blockers"].append(_blocker(key, "multiple_pdbs", multiple_pdbs_reason(names), "error", ", ".join(names)))
            elif len(matching) == 1 or (matching and bypassed):
                for pdb in matching:
                    if eviction_needs_budget(pod, statuses[pdb_key(pdb)], pdb):
                        needs.setdefault(pdb_key(pdb), []).append((node_name, key))
            elif not matching and action == "evict" and key in (implicit or {}):
                budget = implicit[key]
                node_report["blockers"].append(_blocker(key, "implicit_budget", finding_text(budget), "warning",
                                                        owner="%s/%s" % (budget["kind"], budget["workload"].split("/", 1)[1])))

            owner = controller_of(pod)
            if owner is not None and owner.get("kind") in REPLICATED_OWNER_KINDS:
                okey = pod_owner_key(pod)
                if replicas_by_owner and okey in replicas_by_owner:
                    replicas = replicas_by_owner[okey]
                else:
                    replicas = live_counts.get(okey, 1)
                replicas = int_at_least(replicas, "replicas_by_owner[%s]" % okey, 0)
                if replicas <= 1:
                    node_report["blockers"].append(_blocker(
                        key, "single_replica", "%s %s/%s has %d replica; the workload has no Ready pod until the "
                        "replacement is Ready" % (owner.get("kind"), decision["namespace"], owner.get("name"), replicas),
                        "warning", owner="%s/%s" % (owner.get("kind"), owner.get("name"))))
            if tolerates_every_taint(pod, opts["taint_effect"]):
                node_report["blockers"].append(_blocker(
                    key, "tolerates_all", "tolerates every taint (operator Exists without a key); its replacement may "
                    "be scheduled back onto a tainted node", "warning"))

    wave_of = _wave_of(waves)
    for key_of_pdb, entries in needs.items():
        status = statuses[key_of_pdb]
        if status["disruptions_allowed"] == 0:
            reason, severity = _pdb_zero_reason(status, bypassed), "warning" if bypassed else "error"
            # expected pods no more than it needs healthy: no replacement, no wait ever lets one go
            never = 0 < status["expected_pods"] <= status["desired_healthy"]
            for node_name, key in entries:
                report[node_name]["blockers"].append(_blocker(key, "pdb_zero", reason, severity, key_of_pdb, never=never))
            continue
        together = {}
        for node_name, key in entries:
            together.setdefault(wave_of.get(node_name), []).append((node_name, key))
        for wave, drained in together.items():
            if status["disruptions_allowed"] >= len(drained):
                continue
            reason = _pdb_insufficient_reason(status, len(drained), bypassed, in_wave=wave is not None)
            for node_name, key in drained:
                report[node_name]["blockers"].append(_blocker(key, "pdb_insufficient", reason, "warning", key_of_pdb))

    for node_report in report.values():
        node_report["predicted"] = predicted(node_report["blockers"])
    return report


def wave_lists(waves):
    """``waves`` as lists of node names, from lists of them or node_group_info's plan batches (their ``nodes``; an
    instance that is no node yet has none); None stays None. PlanError naming the field otherwise."""
    if waves is None:
        return None
    named = []
    for wave in waves if isinstance(waves, (list, tuple)) else [None]:
        nodes = wave.get("nodes") if isinstance(wave, dict) else wave
        if not isinstance(nodes, (list, tuple)) or not all(node is None or isinstance(node, str) for node in nodes):
            raise PlanError("waves: %r is not allowed; use a list of lists of node names, or node_group_info's "
                            "plan.batches" % (waves,))
        named.append([node for node in nodes if node])
    return named


def _wave_of(waves):
    """{node: wave index} of ``waves`` (:func:`wave_lists`)."""
    return {node: index for index, wave in enumerate(wave_lists(waves) or []) for node in wave}


def static_blockers(pod, decision, pdbs, disable_eviction=False, restarted=False):
    """Why the pod can never leave the node under the options given: ``[{"kind", "reason", "pdb"}]``.

    ``decision`` is ``classify_pod``'s answer. Besides the option blockers (emptyDir, naked pods,
    do-not-disrupt), a pod selected by more than one PodDisruptionBudget is refused by the Eviction API (HTTP 500),
    unless it leaves through its Deployment's rolling update (``restarted``) or is deleted (``disable_eviction``).
    """
    result = [{"kind": block["kind"], "reason": block["reason"], "pdb": None} for block in decision.get("blocks") or []]
    if decision.get("action") == "evict" and not disable_eviction and not restarted:
        matching = pdbs_selecting(pod, pdbs)
        if len(matching) > 1:
            names = [pdb_key(pdb) for pdb in matching]
            result.append({"kind": "multiple_pdbs", "pdb": ", ".join(names), "reason": multiple_pdbs_reason(names)})
    return result


def predicted_outcome(node_report, timeout_action, timeout_seconds):
    """One sentence predicting how the drain of a node ends, from its pre-flight report."""
    errors = [blocker for blocker in node_report["blockers"] if blocker["severity"] == "error"]
    moved = len(node_report["would_evict"]) + len(node_report["would_delete"]) + len(node_report.get("would_restart") or [])
    if errors:
        pods = sorted(set(blocker["pod"] for blocker in errors))
        if timeout_action == "skip":
            return ("blocked by %d pod(s) (%s): the node would be left cordoned and skipped"
                    % (len(pods), ", ".join(pods)))
        if timeout_action == "force":
            return ("blocked by %d pod(s) (%s): they would be deleted without eviction once the rest is drained or "
                    "after %ds" % (len(pods), ", ".join(pods), timeout_seconds))
        return "blocked by %d pod(s) (%s): the drain would fail" % (len(pods), ", ".join(pods))
    if node_report["predicted"] == "downtime":
        owners = sorted(set(blocker.get("owner") or blocker["pod"] for blocker in node_report["blockers"]
                            if blocker["kind"] == "single_replica"))
        return "drained, with downtime for single-replica workload(s) %s until their replacement is Ready" % ", ".join(owners)
    kinds = set(blocker["kind"] for blocker in node_report["blockers"])
    if "pdb_insufficient" in kinds:
        return ("drained: %d pod(s) moved, evictions waiting for replacements to become Ready within their "
                "PodDisruptionBudgets%s" % (moved, " and implicit budgets" if "implicit_budget" in kinds else ""))
    if "implicit_budget" in kinds:
        return ("drained: %d pod(s) moved, the evictions of workloads without a PodDisruptionBudget each waiting for "
                "another pod Ready (implicit budget)" % moved)
    return "drained: %d pod(s) moved" % moved


def _explain_eviction(node_report, key, entry, pod, pdbs):
    """Name the Deployment, its maxUnavailable/maxSurge and the budget in the findings of a single-replica pod that
    is evicted because a restart could take the workload down."""
    reason = eviction_reason(entry, pod, pdbs)
    owner = "Deployment/%s" % entry["deployment"].split("/", 1)[1]
    found = False
    for blocker in node_report["blockers"]:
        if blocker["pod"] != key:
            continue
        if blocker["kind"] == "single_replica":
            blocker.update(reason=reason, owner=owner, deployment=entry["deployment"])
            found = True
        elif blocker["kind"] in ("pdb_zero", "pdb_insufficient"):
            blocker["reason"] = "%s; %s" % (blocker["reason"], entry["reason"])
            blocker["deployment"] = entry["deployment"]
    if not found:
        node_report["blockers"].append({"pod": key, "kind": "single_replica", "reason": reason, "pdb": None,
                                        "severity": "warning", "owner": owner, "deployment": entry["deployment"]})


def volume_findings(node_pods_by_node, claims, volumes, nodes, new_zones=None):
    """The pods of the drained nodes whose persistent volume is pinned by node affinity (a zone): ``{node: [blocker]}``.

    Each such pod gets a ``zonal_volume`` warning naming the volume, its zones and how many schedulable nodes outside
    the drained ones it could start again on. One that could start nowhere - no Ready, schedulable node outside the
    drained ones matches its volume, and none of ``new_zones`` (the zones new nodes will be launched in) does - gets
    ``volume_without_node``: an error when ``new_zones`` is given (no node will ever come for it), else a warning (it
    waits ``Pending`` until a node comes in its zone). ``claims``: ``namespace/name`` -> claim; ``volumes``: name ->
    volume; ``nodes``: every node (``node_health.node_summary`` shape with ``labels`` and ``taints``)."""
    leaving = set(node_pods_by_node)
    found = {}
    for node, pods in node_pods_by_node.items():
        for pod in pods:
            if pod_is_terminating(pod) or pod_is_finished(pod) or (controller_of(pod) or {}).get("kind") == "DaemonSet":
                continue
            for pinned in pinned_volumes(pod, claims, volumes):
                volume = volumes[pinned["volume"]]
                places = homes(volume, nodes, leaving, new_zones or ())
                zones = ", ".join(pinned["zones"]) or "the nodes its node affinity selects"
                what = "volume %s (claim %s) is pinned to %s" % (pinned["volume"], pinned["claim"], zones)
                entries = found.setdefault(node, [])
                entries.append(_blocker(pod_key(pod), "zonal_volume", "%s: it can start again only there; %d schedulable "
                                        "node(s) or new-node zone(s) match" % (what, len(places)), "warning",
                                        zones=pinned["zones"], volume=pinned["volume"]))
                if not places:
                    if new_zones is not None:
                        reason = ("%s, where no schedulable node stays and the group launches no new node (its zones: "
                                  "%s): the pod could never start again" % (what, ", ".join(new_zones) or "none"))
                    else:
                        reason = "%s, where no schedulable node stays: the pod waits Pending until a node is Ready there" % what
                    entries.append(_blocker(pod_key(pod), "volume_without_node", reason,
                                            "error" if new_zones is not None else "warning", zones=pinned["zones"],
                                            volume=pinned["volume"]))
    return found


# The errors no wait ever clears, and what gets a drain past each (node_drain's options; with timeout_action fail):
# a budget that can never allow an eviction, a pod the Eviction API refuses (two budgets), the option blockers. A budget at
# zero only for now (pods not Ready yet) is not among them: the drain waits for it.
GETS_PAST = {
    "pdb_zero": (("timeout_action", "force", "deletes the pod once the drain timeout has passed, breaking the budget"),
                 ("timeout_action", "skip", "leaves the node cordoned and goes on without it")),
    "multiple_pdbs": (("timeout_action", "force", "deletes the pod once the drain timeout has passed"),
                      ("timeout_action", "skip", "leaves the node cordoned and goes on without it")),
    "naked_pod": (("force", True, "deletes the pod, which no controller recreates"),
                  ("timeout_action", "skip", "leaves the node cordoned and goes on without it")),
    "do_not_disrupt": (("force", True, "evicts the pod despite its annotation"),
                       ("timeout_action", "skip", "leaves the node cordoned and goes on without it")),
    "emptydir": (("delete_emptydir_data", True, "evicts the pod, its emptyDir data lost"),
                 ("timeout_action", "skip", "leaves the node cordoned and goes on without it")),
}


def upgrade_stops(node_report, timeout_action="fail"):
    """The blockers of one node's pre-flight (:func:`drain_preflight`) that would stop an upgrade at the drain of the node
    whatever it waits for: errors :data:`GETS_PAST` names (a ``pdb_zero`` only when its budget can never allow an
    eviction), under ``timeout_action`` fail - ``force`` deletes such pods after the timeout and ``skip`` skips the node,
    so neither stops. Each is the blocker with ``gets_past``: ``[{"option", "value", "effect"}]``."""
    if timeout_action != "fail":
        return []
    # single-replica pods not offered a restart (restart_single_replica off): a restart may get them past their budget
    single = set(blocker["pod"] for blocker in node_report.get("blockers") or []
                 if blocker.get("kind") == "single_replica" and not blocker.get("deployment"))
    stops = []
    for blocker in node_report.get("blockers") or []:
        if blocker.get("severity") != "error" or blocker.get("kind") not in GETS_PAST:
            continue
        if blocker["kind"] == "pdb_zero" and not blocker.get("never"):
            continue
        gets_past = [{"option": option, "value": value, "effect": effect} for option, value, effect in GETS_PAST[blocker["kind"]]]
        if blocker["kind"] == "pdb_zero" and blocker["pod"] in single:
            gets_past.insert(0, {"option": "restart_single_replica", "value": True,
                                 "effect": "a Deployment's pod is restarted through its rolling update instead of evicted"})
        stops.append(dict(blocker, gets_past=gets_past))
    return stops


def _option_text(entry, names):
    value = entry["value"]
    value = ("true" if value else "false") if isinstance(value, bool) else value
    return "%s: %s (%s)" % ((names or {}).get(entry["option"], entry["option"]), value, entry["effect"])


def stop_message(stops, names=None):
    """The sentence an upgrade stops with, before any change, on ``stops`` (``[{"node", "pod", "pdb", "message",
    "gets_past"}]``, node_drain's ``would_stop``): each pod, its node, why, and the options that would get past it -
    named by ``names`` (node_drain's option -> what the caller calls it; the option's own name by default). None when
    there are none."""
    if not stops:
        return None
    parts = []
    for stop in stops:
        options = " or ".join(_option_text(entry, names) for entry in stop.get("gets_past") or [])
        parts.append("pod %s on node %s: %s%s" % (stop["pod"], stop["node"], stop.get("message") or stop.get("reason") or "",
                                                  "; gets past with %s" % options if options else ""))
    return ("the upgrade would stop at the drain of %d node(s), whatever it waited for: %s. Nothing was changed: fix "
            "what holds them (a budget: relax it or add replicas), or run with an option named above"
            % (len(set(stop["node"] for stop in stops)), "; ".join(parts)))


def drain_preflight(node_pods_by_node, all_pods, pdbs, options, replicas_by_owner, restarts, timeout_action="fail",
                    timeout_seconds=900, volume_blockers=None, waves=None, implicit=None):
    """``eviction_preflight`` with what :func:`restart_plan` decided for the pods of Deployments.

    ``restarts`` maps pod keys to :func:`restart_plan` results. A pod whose entry has ``restart`` True appears
    under ``would_restart`` (``{"pod", "deployment", "reason", "zero_downtime"}``) and its budget and
    single-replica findings are dropped: the rolling update keeps the workload up and does not go through the
    Eviction API. A single-replica pod whose entry has ``restart`` False stays under ``would_evict``: its
    ``single_replica`` finding (and its budget's ``pdb_zero``/``pdb_insufficient``, if any) names the Deployment,
    its maxUnavailable/maxSurge and the budget that decides. Each node also gets ``outcome``, one sentence
    predicting the end of its drain under ``timeout_action``, and ``stops``, :func:`upgrade_stops`. ``volume_blockers``:
    :func:`volume_findings`, added to each node's blockers. ``waves`` and ``implicit``: as :func:`eviction_preflight`.
    """
    report = eviction_preflight(node_pods_by_node, all_pods, pdbs, options, replicas_by_owner, waves, implicit)
    for node, blockers in (volume_blockers or {}).items():
        if node in report:
            report[node]["blockers"].extend(blockers)
    dropped = ("pdb_zero", "pdb_insufficient", "single_replica", "multiple_pdbs")
    pods_by_key = dict((pod_key(pod), pod) for pods in node_pods_by_node.values() for pod in pods)
    for node_report in report.values():
        node_report["would_restart"] = []
        for key in list(node_report["would_evict"]) + list(node_report["would_delete"]):
            entry = restarts.get(key)
            if not entry:
                continue
            if not entry.get("restart"):
                if entry.get("replicas") == 1 and key in node_report["would_evict"]:
                    _explain_eviction(node_report, key, entry, pods_by_key[key], pdbs or [])
                continue
            for bucket in ("would_evict", "would_delete"):
                if key in node_report[bucket]:
                    node_report[bucket].remove(key)
            node_report["would_restart"].append({"pod": key, "deployment": entry["deployment"], "reason": entry["reason"],
                                                 "zero_downtime": entry["zero_downtime"]})
            node_report["blockers"] = [blocker for blocker in node_report["blockers"]
                                       if not (blocker["pod"] == key and blocker["kind"] in dropped)]
        node_report["predicted"] = predicted(node_report["blockers"])
        node_report["outcome"] = predicted_outcome(node_report, timeout_action, timeout_seconds)
        node_report["stops"] = upgrade_stops(node_report, timeout_action)
    return report
