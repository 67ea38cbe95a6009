# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a drain does with each pod, and what each answer and each ending mean: the drain's decisions.

Pure: ``node_drain.Drain`` reads the cluster, sends the requests, waits, and asks these functions what to do next.
A pod's work (:class:`PodWork`) is decided once from the pod (:func:`pod_work`), changed by every answer the API gives
(:func:`apply_answer`) and by a budget that holds it (:func:`budget_wait`), and a node ends drained, skipped or failed
as :func:`node_outcome` says.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, parse_time
from ansible_collections.nodeops.rollout.plugins.module_utils.drain import rules as drain_rules
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.budgets import pdb_key, pdbs_selecting
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import classify_pod, pod_is_finished, pod_is_terminating, pod_key
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.preflight import static_blockers

# Seconds past a pod's deletionTimestamp (the end of the grace period its deletion gave it) after which a pod of a node
# that is not Ready is deleted with grace 0: no kubelet there will confirm it is gone.
UNCONFIRMED_SLACK_SECONDS = 10


class PodWork:
    """One pod the drain has to see gone, and where its removal stands."""

    # mode: evict | delete | restart | wait | ignore; state: todo | sent | blocked | gone | ignored
    def __init__(self, pod, mode, restart=None):
        metadata = pod.get("metadata") or {}
        self.pod = pod
        self.key = pod_key(pod)
        self.namespace = metadata.get("namespace") or "default"
        self.name = metadata.get("name")
        self.uid = metadata.get("uid")
        self.mode = mode
        self.state = {"wait": "sent", "ignore": "ignored"}.get(mode, "todo")
        self.restart = restart
        self.pdb = None  # the one PodDisruptionBudget covering the pod, when it is evicted
        self.implicit = None  # the gate key of the pod's implicit budget (drain.implicit), when no budget covers it
        self.admitted = None  # the budget whose gate let the request go, until the request has its answer
        self.attempts = 0
        self.next_try = 0.0
        self.blocking = None
        self.why = None
        self.note = None  # why a single-replica Deployment's pod is evicted rather than restarted


def pod_work(pod, classify_options, disable_eviction, pdbs, restart_for, result, implicit_for=None):
    """The PodWork for one pod of a node being drained (mode ``ignore`` when the drain leaves it alone).

    ``restart_for(pod)`` is the single-replica restart plan (``drain.rules.restart_plan``) or None; ``result`` is the
    node's result, whose ``skipped`` and ``downtime`` lists get the pods the drain leaves alone or cannot restart;
    ``implicit_for(pod)``, when given, the implicit budget of the pod's workload (``drain.implicit.implicit_budget``) or
    None: an evicted pod no PodDisruptionBudget covers is paced by it.
    """
    decision = classify_pod(pod, classify_options)
    action = decision["action"]
    if action == "skip":
        if pod_is_terminating(pod):
            result["skipped"].append({"pod": decision["pod"], "reason": "already terminating; waited for until gone"})
            return PodWork(pod, "wait")
        result["skipped"].append({"pod": decision["pod"], "reason": decision["reason"]})
        return PodWork(pod, "ignore")
    if action == "delete" and pod_is_finished(pod):
        return PodWork(pod, "delete")
    restart = restart_for(pod) if action in ("evict", "delete") else None
    restarting = bool(restart and restart["restart"])
    blockers = static_blockers(pod, decision, pdbs, disable_eviction, restarting)
    if blockers:
        work = PodWork(pod, "evict" if action != "delete" else "delete")
        work.state = "blocked"
        work.blocking = {"pod": work.key, "kind": blockers[0]["kind"], "pdb": blockers[0]["pdb"],
                         "message": "; ".join(blocker["reason"] for blocker in blockers)}
        work.why = work.blocking["message"]
        return work
    if restarting:
        return PodWork(pod, "restart", restart)
    work = PodWork(pod, "evict" if action == "evict" else "delete")
    if restart and restart["replicas"] == 1:
        # not restarted (its rolling update could stop the pod before the new one is Ready): the pod goes through
        # the Eviction API like any other, so its budget decides, and the result says why and which budget
        reason = drain_rules.eviction_reason(restart, pod, pdbs) if work.mode == "evict" else restart["reason"]
        result["downtime"].append({"pod": decision["pod"], "deployment": restart["deployment"], "reason": reason})
        work.note = restart["reason"]
    if work.mode == "evict":
        budgets = pdbs_selecting(pod, pdbs)
        if len(budgets) == 1:
            work.pdb = pdb_key(budgets[0])
        elif not budgets and implicit_for is not None:
            implicit = implicit_for(pod)
            work.implicit = implicit["key"] if implicit else None
    return work


def gate_key(work):
    """The budget whose gate paces the pod's eviction: its PodDisruptionBudget, else its implicit budget, else None."""
    return work.pdb or work.implicit


def add_note(work):
    """A budget holds a single-replica Deployment's pod: say why it was not restarted instead."""
    if work.note and work.blocking:
        work.blocking["message"] = "%s; %s" % (work.blocking["message"], work.note)
        work.why = "%s; %s" % (work.why, work.note)


def budget_wait(work, status):
    """Record that the pod waits for its budget (``status``: the budget's last known status), in the words a failure
    message needs."""
    if not work.pdb and work.implicit:
        # drain.implicit.implicit_status words it; before the first read, the gate's key names the workload
        text = status.get("implicit") or "waiting for the implicit budget of %s (no PodDisruptionBudget) to allow a disruption" % (
            work.implicit.split(":", 1)[1])
        work.blocking = {"pod": work.key, "kind": "implicit_budget", "pdb": None, "message": text}
        work.why = "waiting: " + text
        return
    if status.get("disruptionsAllowed") is None:
        if not work.blocking:  # nothing known beyond the API's last refusal, if any: keep that
            work.blocking = {"pod": work.key, "kind": "pdb", "pdb": work.pdb,
                             "message": "waiting for PodDisruptionBudget %s to allow a disruption" % work.pdb}
            work.why = work.blocking["message"]
            add_note(work)
        return
    text = "PodDisruptionBudget %s allows %s disruption(s)" % (work.pdb, status["disruptionsAllowed"])
    if status.get("desiredHealthy") is not None:
        text += ": it needs %s healthy pods and has %s" % (status.get("desiredHealthy"), status.get("currentHealthy"))
    work.blocking = {"pod": work.key, "kind": "pdb", "pdb": work.pdb, "message": text}
    work.why = "waiting: " + text
    add_note(work)


def budget_names(work, pdbs):
    """The budgets selecting the pod, joined (None when there is none)."""
    return ", ".join(pdb_key(pdb) for pdb in pdbs_selecting(work.pod, pdbs)) or None


def apply_answer(work, answer, now, backoff, grace_period, disable_eviction, pdbs, result):
    """Change ``work`` as the API's ``answer`` (``drain.rules.eviction_answer``) says, counting it in ``result``.

    ``backoff(attempts)`` is how many seconds a refused or failed request waits before it is tried again (drawn only
    then). Returns what the budget's
    gate learns: ``("accepted", pdb)`` for an eviction the budget took, ``("refused", pdb)`` when the budget refused one
    (the gate then decides the next try for every pod it covers), else None.
    """
    kind = answer["kind"]
    if kind == "done":
        work.state = "sent"
        work.blocking = None
        if work.mode == "evict":
            result["evicted"].append(work.key)
            work.why = "evicted, terminating (grace period %ds)" % drain_rules.pod_grace_seconds(work.pod, grace_period)
        elif work.mode == "delete":
            result["deleted"].append(work.key)
            work.why = "deleted, terminating"
        else:
            work.why = "Deployment %s restarted; waiting for its new pod to be Ready and this one to stop" % work.restart["deployment"]
        return ("accepted", gate_key(work)) if gate_key(work) else None
    if kind == "gone":
        work.state = "gone"
        return None
    if kind == "fallback":
        work.mode = "evict" if not disable_eviction else "delete"
        work.next_try = now
        return None
    if kind in ("pdb", "throttled", "retry"):
        work.attempts += 1
        result["eviction_retries"] += 1
        work.next_try = now + backoff(work.attempts)
        pdb = answer["pdb"]
        if pdb and "/" not in pdb:
            pdb = "%s/%s" % (work.namespace, pdb)
        if kind == "pdb" and not pdb:
            pdb = work.pdb or budget_names(work, pdbs)
        gate = None
        if kind == "pdb" and pdb and "," not in pdb:
            # the budget is closed for every pod it covers, not only this one: no eviction it would refuse
            work.pdb = pdb
            gate = ("refused", pdb)
        work.blocking = {"pod": work.key, "kind": "pdb" if kind == "pdb" else kind, "pdb": pdb if kind == "pdb" else None,
                         "message": answer["message"] or "HTTP error, retried"}
        work.why = ("eviction refused by PodDisruptionBudget %s: %s" % (pdb, answer["message"]) if kind == "pdb"
                    else "request failed, retried: %s" % (answer["message"] or "no answer"))
        if kind == "pdb":
            add_note(work)
        return gate
    work.state = "blocked"
    pdb = budget_names(work, pdbs) if kind == "multiple_pdbs" else None
    work.blocking = {"pod": work.key, "kind": "multiple_pdbs" if kind == "multiple_pdbs" else "api_error", "pdb": pdb,
                     "message": answer["message"]}
    if answer.get("permission"):
        work.blocking["permission"] = answer["permission"]
    work.why = ("selected by more than one PodDisruptionBudget (%s): %s" % (pdb, answer["message"])
                if kind == "multiple_pdbs" else "request refused: %s" % answer["message"])
    return None


def unconfirmed(works, now, slack=UNCONFIRMED_SLACK_SECONDS):
    """The works of a node that is not Ready whose pods are past their grace: their deletion was accepted (an eviction,
    a delete, or someone else's), ``slack`` seconds or more have passed since their ``deletionTimestamp``, and they are
    still there. Such a node's kubelet cannot confirm they are gone, and they serve nothing (a node that is not Ready
    has its pods marked not Ready): the drain deletes them with grace 0. ``now``: an aware datetime."""
    found = []
    for work in works.values():
        if work.state != "sent" or work.mode == "ignore":
            continue
        stamp = ((work.pod or {}).get("metadata") or {}).get("deletionTimestamp")
        if not stamp:
            continue
        try:
            due = (now - parse_time(stamp, "deletionTimestamp")).total_seconds() >= slack
        except PlanError:
            continue
        if due:
            found.append(work)
    return found


def remaining_works(works):
    """The pods still on the node: not gone and not left alone."""
    return [work for work in works.values() if work.state in ("todo", "sent", "blocked")]


def node_outcome(name, remaining, action, stuck, forced, forced_pods, seconds, timeout):
    """How one node's drain ends, as the fields of its result.

    ``remaining``: :func:`remaining_works` at the end; ``action``: the timeout action applied (None when the node
    emptied, or only blocked pods are left under ``fail``); ``stuck``: only pods that can never be evicted are left;
    ``forced``: ``timeout_action=force`` deleted ``forced_pods``.
    """
    if not remaining:
        if forced:
            return {"status": "drained", "forced": True,
                    "message": "node %s drained; %d pod(s) deleted without eviction (timeout_action=force)" % (name, len(forced_pods))}
        return {"status": "drained", "message": "node %s drained" % name}
    fields = {"remaining": [work.key for work in remaining],
              "blocking": [work.blocking for work in remaining if work.blocking]}
    entries = [{"pod": work.key, "why": work.why} for work in remaining]
    if action == "skip":
        reason = "pods that cannot be evicted" if stuck else "timeout %ds reached" % timeout
        fields["status"] = "skipped"
        fields["message"] = "node %s skipped and left cordoned (%s): %d pod(s) still there: %s" % (
            name, reason, len(entries), "; ".join(drain_rules.remaining_text(entry) for entry in entries))
        return fields
    why = "only pods that cannot be evicted are left" if stuck else "timeout"
    if action == "force":
        why = "pods deleted by timeout_action=force did not go"
    fields["status"] = "failed"
    fields["message"] = drain_rules.not_drained_message(name, entries, seconds, why)
    return fields
