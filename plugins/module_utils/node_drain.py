# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Drain nodes: cordon them all, then move every pod off each node concurrently, within the pods' budgets.

Per node, one thread runs a loop: act on the pods that are due (evict, delete, or restart a single-replica
Deployment through its rolling update), then look at the node's pods (one list call every poll interval for the
whole node, not one call per pod) to see which are gone, until none is left, the timeout is reached, or only
pods that can never be evicted remain. Evictions of one node run concurrently (bounded); a refused eviction
(429) is retried after a capped exponential backoff. This file reads, sends, waits and loops; what to do with
each pod, what each answer means and how a node ends are decided by the pure ``drain`` package (``drain.work``).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.backoff import retry_after_seconds, retry_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.choices import TIMEOUT_ACTIONS
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import (
    TRANSPORT_ERRORS,
    ApiException,
    KubeApi,
    error_status,
    kube_errors,
    node_pods,
    with_pool_size,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import describe_k8s_error
from ansible_collections.nodeops.rollout.plugins.module_utils.drain import rules as drain_rules
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.budgets import BudgetGates, paced_by_budget, pdb_key
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import controller_of, drain_options, owner_key, pod_is_terminating, pod_key
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.preflight import drain_preflight, volume_findings
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.volumes import claim_names, exclusive_claims
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.pod_watch import BudgetWatch, PodWatch
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.work import (
    UNCONFIRMED_SLACK_SECONDS,
    apply_answer,
    budget_wait,
    node_outcome,
    pod_work,
    remaining_works,
    unconfirmed,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.errors import RolloutError, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.node_health import INSTANCE_NODE_FIELDS, node_ready, node_summary
from ansible_collections.nodeops.rollout.plugins.module_utils.nodes import NodeNotFound, cordon_nodes, node_names, read_nodes
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import ANNOTATION_DRAINED_AT, LABEL_EXCLUDE_LB
from ansible_collections.nodeops.rollout.plugins.module_utils.values import PlanError, parse_duration

# Upper bound of threads sending evictions, all nodes together.
MAX_EVICTION_THREADS = 64
# Extra seconds allowed, beyond the longest grace period, for pods deleted by timeout_action=force to go.
FORCE_SLACK_SECONDS = 30
# Seconds between two looks at a node's pods while a watch keeps them current (a look then costs no request).
WATCH_LOOK_SECONDS = 0.5
# While the budgets' watch shows a budget allowing nothing, it is read again only every this many poll intervals (every
# poll interval without the watch): the watch brings the change that frees a disruption, the read stays the count's
# source, and a watch that falls behind delays a drain by a few seconds at most.
WATCHED_BUDGET_READ_POLLS = 4


def utc_now_text():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_now_precise():
    """Now, to the millisecond: a post-drain delay counted from a time cut to the second could end a second early."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class DrainOptions:
    """The module's drain options, validated (raises PlanError naming the field)."""

    def __init__(self, params):
        self.timeout = parse_duration(params.get("timeout", "15m"), "timeout")
        self.timeout_action = params.get("timeout_action") or "fail"
        if self.timeout_action not in TIMEOUT_ACTIONS:
            raise PlanError("timeout_action: %r is not allowed; use one of %s"
                            % (self.timeout_action, ", ".join(TIMEOUT_ACTIONS)))
        self.force = bool(params.get("force"))
        self.delete_emptydir_data = bool(params.get("delete_emptydir_data"))
        self.disable_eviction = bool(params.get("disable_eviction"))
        self.pod_selector = params.get("pod_selector") or None
        self.restart_single_replica = params.get("restart_single_replica", True) is not False
        # unset (or empty, as a survey sends it) keeps each pod's own terminationGracePeriodSeconds; 0 is immediate
        grace_period = params.get("grace_period")
        if grace_period is None or (isinstance(grace_period, str) and not grace_period.strip()):
            self.grace_period = None
        else:
            self.grace_period = parse_duration(grace_period, "grace_period")
        self.max_concurrent_nodes = self._positive(params, "max_concurrent_nodes", None)
        self.exclude_from_load_balancers = bool(params.get("exclude_from_load_balancers"))
        zones = params.get("new_node_zones")
        if zones is not None and (not isinstance(zones, (list, tuple)) or not all(isinstance(z, str) and z.strip() for z in zones)):
            raise PlanError("new_node_zones: %r is not allowed; use a list of Availability Zone names" % (zones,))
        self.new_node_zones = [zone.strip() for zone in zones] if zones is not None else None
        self.max_concurrent_evictions = self._positive(params, "max_concurrent_evictions", 10)
        self.poll_interval = self._seconds(params, "poll_interval", 2.0)
        self.retry_max_delay = self._seconds(params, "retry_max_delay", 16.0)
        self.classify = drain_options({"force": self.force, "delete_emptydir_data": self.delete_emptydir_data,
                                       "disable_eviction": self.disable_eviction})

    @staticmethod
    def _positive(params, name, default):
        value = params.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PlanError("%s: %r is not allowed; use an integer >= 1" % (name, value))
        return value

    @staticmethod
    def _seconds(params, name, default):
        value = params.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise PlanError("%s: %r is not allowed; use a number of seconds > 0" % (name, value))
        return float(value)


class Survey:
    """What the drain reads before it changes anything."""

    def __init__(self):
        self.nodes = {}
        self.pods_by_node = {}
        self.versions = {}   # node -> the resourceVersion of its pod list, where a watch of them starts
        self.pdbs = []
        self.pdbs_version = None   # the resourceVersion of the budgets' list, where a watch of them starts
        self.replicasets = {}
        self.deployments = {}
        self.namespace_pods = []
        self.claims = {}       # namespace/name -> PersistentVolumeClaim, for the namespaces of pods that mount one
        self.volumes = {}      # name -> PersistentVolume, listed when a pod mounts a claim
        self.all_nodes = []    # every node (node_summary), listed when a pod mounts a claim


def node_result(status, **fields):
    """The one shape of a node in node_drain's result: ``status`` and what was done, as ``fields`` say (a drain that
    ran adds ``message``; the pre-flight of check mode adds ``predicted`` and ``outcome``)."""
    result = {"status": status, "cordoned": False, "evicted": [], "deleted": [], "restarted": [], "skipped": [],
              "blocking": [], "remaining": [], "downtime": [], "force_deleted": [], "eviction_retries": 0, "forced": False,
              "seconds": 0.0}
    result.update(fields)
    return result


class Drain:
    """One drain run over ``names``; ``run()`` returns the module result (without exiting)."""

    def __init__(self, api, names, options, check_mode=False, diff=False, clock=time.monotonic, sleep=time.sleep,
                 now_text=utc_now_text, watch=False, drained_text=utc_now_precise, utc_now=lambda: datetime.now(timezone.utc)):
        self.api = api
        self.watch = watch
        self.names = names
        self.opts = options
        self.check_mode = check_mode
        self.diff = diff
        self.clock = clock
        self.sleep = sleep
        self.now_text = now_text
        self.drained_text = drained_text
        self.utc_now = utc_now
        self.not_ready = {}   # node -> why it is not Ready (its kubelet cannot confirm a pod gone), when it is not
        self.survey = None
        self.pool = None
        self._lock = threading.Lock()
        self._restarted = {}
        self._budget_status = {}
        self._budget_read_at = {}
        self.budget_watch = None
        self.gates = BudgetGates(cap=options.retry_max_delay, check_interval=options.poll_interval,
                                 settle=min(0.1, options.poll_interval))

    # ---- reading ------------------------------------------------------------------------------
    def _owned_namespaces(self, pods, kinds):
        return sorted(set((pod.get("metadata") or {}).get("namespace") or "default" for pod in pods
                          if (controller_of(pod) or {}).get("kind") in kinds))

    def read(self, full=False):
        """Nodes (each must exist), their pods, the budgets, and the workloads behind single-replica pods."""
        survey = Survey()
        if full:
            # a drain's cordon reads every node before it writes any (a missing one fails before a change): the check
            # mode, which does not cordon, reads them here
            survey.nodes = dict(zip(self.names, read_nodes(self.api, self.names)))
        pods, versions = node_pods(self.api, self.names, label_selector=self.opts.pod_selector)
        survey.pods_by_node.update(pods)
        if self.watch and not full:
            survey.versions.update(versions)
            survey.pdbs, survey.pdbs_version = self.api.list_pdbs_versioned()
        else:
            survey.pdbs = self.api.list_pdbs()
        for pdb in survey.pdbs:
            self.gates.seed(pdb_key(pdb), (pdb.get("status") or {}).get("disruptionsAllowed"))
            self._budget_status[pdb_key(pdb)] = pdb.get("status") or {}
        every_pod = [pod for pods in survey.pods_by_node.values() for pod in pods]
        if full or self.opts.restart_single_replica:
            for namespace in self._owned_namespaces(every_pod, ("ReplicaSet",)):
                survey.replicasets.update((pod_key(obj), obj) for obj in self.api.list_replicasets(namespace))
                survey.deployments.update((pod_key(obj), obj) for obj in self.api.list_deployments(namespace))
        if full:
            namespaces = sorted(set((pod.get("metadata") or {}).get("namespace") or "default" for pod in every_pod))
            for namespace in namespaces:
                survey.namespace_pods.extend(self.api.list_pods(namespace=namespace))
        self._read_volumes(survey, every_pod)
        self.survey = survey
        return survey

    def _read_volumes(self, survey, pods):
        """The claims of the pods that mount one, the volumes and the nodes (where a pinned pod could start again)."""
        namespaces = sorted(set((pod.get("metadata") or {}).get("namespace") or "default" for pod in pods if claim_names(pod)))
        if not namespaces:
            return
        for namespace in namespaces:
            survey.claims.update((pod_key(claim), claim) for claim in self.api.list_pvcs(namespace))
        survey.volumes = {volume["metadata"]["name"]: volume for volume in self.api.list_persistent_volumes()}
        survey.all_nodes = [node_summary(node, INSTANCE_NODE_FIELDS) for node in self.api.list_nodes()]

    def volume_blockers(self):
        """drain.preflight.volume_findings for the nodes of this drain."""
        survey = self.survey
        if not survey.volumes:
            return {}
        return volume_findings(survey.pods_by_node, survey.claims, survey.volumes, survey.all_nodes, self.opts.new_node_zones)

    # ---- deciding -----------------------------------------------------------------------------
    def restart_for(self, pod):
        if not self.opts.restart_single_replica:
            return None
        return drain_rules.restart_plan(pod, self.survey.replicasets, self.survey.deployments,
                                        exclusive_claims(pod, self.survey.claims))

    def work_for(self, pod, result):
        """The PodWork for the pod (drain.work.pod_work, with this drain's options, budgets and restart plans)."""
        return pod_work(pod, self.opts.classify, self.opts.disable_eviction, self.survey.pdbs, self.restart_for, result)

    def preflight(self):
        """Check mode: per node what would be evicted, deleted, restarted, what would block and why."""
        survey = self.survey
        replicas = {}
        for key, replicaset in survey.replicasets.items():
            namespace, name = key.split("/", 1)
            parent = controller_of(replicaset)
            count = (replicaset.get("spec") or {}).get("replicas")
            if parent and parent.get("kind") == "Deployment" and "%s/%s" % (namespace, parent.get("name")) in survey.deployments:
                count = (survey.deployments["%s/%s" % (namespace, parent.get("name"))].get("spec") or {}).get("replicas")
            replicas[owner_key(namespace, "ReplicaSet", name)] = 1 if count is None else count
        restarts = {}
        for pods in survey.pods_by_node.values():
            for pod in pods:
                entry = self.restart_for(pod)
                if entry:
                    restarts[pod_key(pod)] = entry
        options = dict(self.opts.classify)
        return drain_preflight(survey.pods_by_node, survey.namespace_pods, survey.pdbs, options, replicas,
                               restarts, self.opts.timeout_action, self.opts.timeout, self.volume_blockers())

    def volume_problems(self):
        """With ``new_node_zones``: the pods whose pinned volume leaves them nowhere to start again, per node."""
        problems = {}
        for name, blockers in self.volume_blockers().items():
            for blocker in blockers:
                if blocker["severity"] == "error":
                    problems.setdefault(name, []).append({"pod": blocker["pod"], "kind": blocker["kind"], "pdb": None,
                                                          "message": blocker["reason"]})
        return problems

    def static_problems(self):
        """Pods that can never be evicted under the options given, per node: ``{node: [blocking]}``."""
        problems = {}
        for name, pods in self.survey.pods_by_node.items():
            scratch = {"skipped": [], "downtime": []}
            for pod in pods:
                work = self.work_for(pod, scratch)
                if work.state == "blocked":
                    problems.setdefault(name, []).append(work.blocking)
        return problems

    # ---- acting -------------------------------------------------------------------------------
    def _send(self, work):
        """Make one request for the pod; returns ``(answer, retry_after)`` (answer from drain_rules.eviction_answer)."""
        try:
            return self._request(work)
        finally:
            if work.admitted:
                with self._lock:
                    self.gates.answered(work.admitted)
                work.admitted = None

    def _request(self, work):
        try:
            if work.mode == "evict":
                self.api.evict_pod(work.namespace, work.name, work.uid, self.opts.grace_period)
            elif work.mode == "delete":
                self.api.delete_pod(work.namespace, work.name, work.uid, self.opts.grace_period)
            elif work.mode == "restart":
                self._restart(work)
            return {"kind": "done", "message": "", "pdb": None}, None
        except ApiException as exc:
            code, status, headers = error_status(exc)
            if work.mode == "restart" and code == 404:
                return {"kind": "fallback", "message": status.get("message") or "", "pdb": None}, None
            return drain_rules.eviction_answer(code, status), retry_after_seconds(headers)
        except TRANSPORT_ERRORS as exc:
            return {"kind": "retry", "message": describe_k8s_error(exc, "send"), "pdb": None}, None

    def _restart(self, work):
        deployment = work.restart["deployment"]
        with self._lock:
            if deployment in self._restarted or work.restart.get("pending"):
                self._restarted.setdefault(deployment, None)
                return
            self._restarted[deployment] = self.now_text()
            stamp = self._restarted[deployment]
        namespace, name = deployment.split("/", 1)
        try:
            self.api.patch_deployment(namespace, name, drain_rules.restart_patch(stamp))
        except Exception:
            with self._lock:
                self._restarted.pop(deployment, None)
            raise

    def _run_bounded(self, works):
        """Send requests for ``works``, at most max_concurrent_evictions at a time; yields (work, answer, retry_after)."""
        limit = self.opts.max_concurrent_evictions
        inflight = {}
        out = []
        for work in works:
            inflight[self.pool.submit(self._send, work)] = work
            if len(inflight) >= limit:
                done, _pending = wait(list(inflight), return_when=FIRST_COMPLETED)
                for future in done:
                    out.append((inflight.pop(future),) + tuple(future.result()))
        if inflight:
            done, _pending = wait(list(inflight))
            for future in done:
                out.append((inflight.pop(future),) + tuple(future.result()))
        return out

    def _select_due(self, works, now):
        """The pods to send a request for now; evictions are paced by their budget (BudgetGates, shared by the nodes)."""
        due = []
        for work in works.values():
            if work.state != "todo" or work.next_try > now:
                continue
            if work.mode != "evict" or not work.pdb or not paced_by_budget(work.pod):
                due.append(work)
                continue
            pdb = work.pdb
            with self._lock:
                verdict, when = self._decide_and_take(pdb, now)
                if verdict == "check":
                    self.gates.reading(pdb)
            if verdict == "check":
                verdict, when = self._check_budget(pdb, now)
                if verdict == "gone":
                    work.pdb = None
                    due.append(work)
                    continue
            if verdict == "go":
                work.admitted = pdb
                due.append(work)
            else:  # "wait", or "check" again: the pods just let through hold the budget's count
                work.next_try = when if verdict == "wait" else now + self.opts.poll_interval
                self._hold(work)
        return due

    def _decide_and_take(self, pdb, now):
        """The gate's verdict, with the disruption taken at once on "go" (the caller holds the lock): two nodes must not
        both be let through on the last one."""
        verdict, when = self.gates.decide(pdb, now)
        if verdict == "go":
            self.gates.sent(pdb)
        return verdict, when

    def _check_budget(self, pdb, now):
        """Read the budget this caller holds the gate of; the gate's verdict for the next pod, or "gone"."""
        if self._still_zero(pdb):
            with self._lock:
                self.gates.checked(pdb, 0, self.clock())
                return self._decide_and_take(pdb, now)
        allowed = None
        try:
            self._budget_read_at[pdb] = self.clock()
            allowed = self._disruptions_allowed(pdb)
        finally:
            with self._lock:
                if allowed == "gone":
                    self.gates.forget(pdb)
                else:
                    self.gates.checked(pdb, allowed, self.clock())
        if allowed == "gone":
            return "gone", None
        with self._lock:
            return self._decide_and_take(pdb, now)

    def _still_zero(self, pdb):
        """Whether the budgets' watch shows ``pdb`` still allowing nothing since it was last read, recently enough that
        no request is needed to know it."""
        watch = self.budget_watch
        if watch is None or not watch.healthy:
            return False
        seen = watch.get(pdb)
        read_at = self._budget_read_at.get(pdb)
        return (seen is not None and read_at is not None and (seen.get("status") or {}).get("disruptionsAllowed") == 0
                and self.clock() - read_at < WATCHED_BUDGET_READ_POLLS * self.opts.poll_interval)

    def _hold(self, work):
        """Record that the pod waits for its budget, with the budget's last known status."""
        budget_wait(work, self._budget_status.get(work.pdb) or {})

    def _disruptions_allowed(self, pdb):
        """The budget's status.disruptionsAllowed; None when unknown, "gone" when the budget no longer exists."""
        namespace, name = pdb.split("/", 1)
        try:
            status = self.api.get_pdb(namespace, name).get("status") or {}
            with self._lock:
                self._budget_status[pdb] = status
            value = status.get("disruptionsAllowed")
        except ApiException as exc:
            return "gone" if exc.status == 404 else None
        except TRANSPORT_ERRORS:
            return None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def _apply(self, work, answer, retry_after, result):
        now = self.clock()
        gate = apply_answer(work, answer, now, lambda attempts: retry_delay(attempts, retry_after, self.opts.retry_max_delay),
                            self.opts.grace_period, self.opts.disable_eviction, self.survey.pdbs, result)
        if gate is None:
            return
        verdict, pdb = gate
        with self._lock:
            if verdict == "accepted":
                self.gates.accepted(pdb)
            else:
                work.next_try = self.gates.refused(pdb, now, retry_after)

    # ---- observing ----------------------------------------------------------------------------
    def _observe(self, node, works, result, watch=None):
        """Look at the node's pods: the watch's view while it is healthy, else a list request."""
        if watch is not None and watch.healthy:
            pods = watch.snapshot()
        else:
            pods = self.api.list_pods(node=node, label_selector=self.opts.pod_selector)
        present = {}
        for pod in pods:
            present[(pod.get("metadata") or {}).get("uid")] = pod
        for uid, work in works.items():
            if work.state in ("gone", "ignored"):
                continue
            pod = present.get(uid)
            if pod is None:
                self._gone(work, result)
            else:
                work.pod = pod
                if work.state == "todo" and pod_is_terminating(pod):
                    work.state = "sent"
                    work.why = work.why or "terminating"
        for uid, pod in present.items():
            if uid not in works:
                works[uid] = self.work_for(pod, result)

    def _gone(self, work, result):
        work.state = "gone"
        work.blocking = None
        if work.mode == "restart":
            entry = {"pod": work.key, "deployment": work.restart["deployment"], "ready": None}
            namespace, name = work.restart["deployment"].split("/", 1)
            try:
                status = self.api.get_deployment(namespace, name).get("status") or {}
                entry["ready"] = (status.get("readyReplicas") or 0) >= 1
            except (ApiException,) + TRANSPORT_ERRORS:
                entry["ready"] = None
            result["restarted"].append(entry)

    # ---- one node -----------------------------------------------------------------------------
    def drain_node(self, name, result):
        started = self.clock()
        result["started_at"] = self.drained_text()
        try:
            self._drain_node(name, result, started)
            if result["status"] == "drained":
                self._mark_drained(name, result)
        except Exception as exc:  # pylint: disable=broad-except
            # A node thread must report what stopped it; the other nodes go on.
            result["status"] = "failed"
            result["message"] = "node %s: drain stopped: %s" % (name, describe_k8s_error(exc, "drain"))
        result["seconds"] = round(self.clock() - started, 3)
        return result

    def _mark_drained(self, name, result):
        """Record on the node when its drain ended (the post-drain delay counts from it): one merge patch. (The
        load-balancer exclusion label went on with the cordon.)"""
        stamp = self.drained_text()
        self.api.patch_node(name, {"metadata": {"annotations": {ANNOTATION_DRAINED_AT: stamp}}})
        result["drained_at"] = stamp

    def _drain_node(self, name, result, started):
        watch = None
        if self.survey.versions.get(name):
            # from the list read before the cordon: the watch brings every pod that landed since
            pods = self.survey.pods_by_node[name]
            watch = PodWatch(self.api, name, pods, self.survey.versions[name], label_selector=self.opts.pod_selector).start()
        else:
            pods = self.api.list_pods(node=name, label_selector=self.opts.pod_selector)
        try:
            self._drain_pods(name, pods, result, started, watch)
        finally:
            if watch is not None:
                watch.stop()

    def _drain_pods(self, name, pods, result, started, watch):
        opts = self.opts
        deadline = started + opts.timeout
        # the watch's view costs no request: look at it often; a list costs one: every poll interval
        look_interval = min(opts.poll_interval, WATCH_LOOK_SECONDS) if watch is not None else opts.poll_interval
        works = {}
        for pod in pods:
            work = self.work_for(pod, result)
            works[work.uid] = work
        if opts.timeout_action == "skip" and any(work.state == "blocked" for work in works.values()):
            self._finish(name, works, result, started, "skip", stuck=True)
            return
        next_poll = self.clock() + look_interval
        while True:
            now = self.clock()
            due = self._select_due(works, now)
            if due:
                for work, answer, retry_after in self._run_bounded(due):
                    self._apply(work, answer, retry_after, result)
            pending = [work for work in works.values() if work.state in ("todo", "sent")]
            if not pending:
                stuck = any(work.state == "blocked" for work in works.values())
                self._finish(name, works, result, started, opts.timeout_action if stuck else None, stuck=stuck)
                return
            now = self.clock()
            if now >= deadline:
                self._finish(name, works, result, started, opts.timeout_action, stuck=False)
                return
            if now >= next_poll:
                self._observe(name, works, result, watch)
                if self.not_ready.get(name):
                    self._delete_unconfirmed(name, works, result)
                next_poll = self.clock() + (look_interval if watch is not None and watch.healthy else opts.poll_interval)
                continue
            wake = min([next_poll, deadline] + [work.next_try for work in pending if work.state == "todo"])
            self.sleep(max(0.01, wake - now))

    def _delete_unconfirmed(self, name, works, result):
        """On a node that is not Ready: delete with grace 0 the pods whose deletion was accepted and whose grace period
        ended (drain.work.unconfirmed), since no kubelet there will confirm them gone; each is named in
        ``force_deleted`` with why."""
        for work in unconfirmed(works, self.utc_now()):
            if work.why and work.why.startswith("deleted with grace 0"):
                continue
            try:
                self.api.delete_pod(work.namespace, work.name, work.uid, 0)
            except ApiException as exc:
                if exc.status != 404:
                    work.why = "delete with grace 0 refused: %s" % describe_k8s_error(exc, "delete")
                    continue
            except TRANSPORT_ERRORS:
                continue   # tried again at the next look
            work.why = "deleted with grace 0: its node is not Ready"
            result["force_deleted"].append({"pod": work.key, "reason": (
                "node %s is not Ready (%s): no kubelet confirmed the pod gone %ds after its grace period ended; deleted "
                "with grace 0, as it served nothing" % (name, self.not_ready[name], UNCONFIRMED_SLACK_SECONDS))})

    def _finish(self, name, works, result, started, action, stuck):
        """End the node's drain: ``timeout_action=force`` deletes what is left first; drain.work.node_outcome says how
        it ended."""
        remaining = remaining_works(works)
        forced = False
        if remaining and action == "force":
            self._force(name, works, result)
            remaining = remaining_works(works)
            forced = True
        result.update(node_outcome(name, remaining, action, stuck, forced, result.get("forced_pods") or [],
                                   self.clock() - started, self.opts.timeout))

    def _force(self, name, works, result):
        """timeout_action=force: delete every pod still there, then wait for them to go."""
        remaining = remaining_works(works)
        result.setdefault("forced_pods", [])
        self._force_delete(remaining, result)
        grace = max([drain_rules.pod_grace_seconds(work.pod, self.opts.grace_period) for work in remaining] or [0])
        deadline = self.clock() + grace + max(FORCE_SLACK_SECONDS, 5 * self.opts.poll_interval)
        while any(work.state == "sent" for work in works.values()) and self.clock() < deadline:
            self.sleep(self.opts.poll_interval)
            self._observe(name, works, result)
            # a pod that appeared meanwhile goes too: force means the node ends empty
            self._force_delete([work for work in works.values() if work.state == "todo"], result)

    def _force_delete(self, works, result):
        for work in works:
            work.mode = "delete"
            work.state = "todo"
            work.next_try = 0.0
        for work, answer, _retry_after in self._run_bounded(works):
            if answer["kind"] == "done":
                result["deleted"].append(work.key)
                result["forced_pods"].append(work.key)
                work.state = "sent"
                work.why = "deleted by timeout_action=force, terminating"
            elif answer["kind"] == "gone":
                work.state = "gone"
            else:
                work.state = "blocked"
                work.why = "delete refused: %s" % answer["message"]
                work.blocking = {"pod": work.key, "kind": "api_error", "pdb": None, "message": answer["message"]}

    # ---- the run ------------------------------------------------------------------------------
    def _diff_entry(self, name, after_pods):
        node = self.survey.nodes[name]
        before = {"unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
                  "pods": sorted(pod_key(pod) for pod in self.survey.pods_by_node[name])}
        return {"before_header": "node %s" % name, "after_header": "node %s" % name, "before": before,
                "after": {"unschedulable": True, "pods": sorted(after_pods)}}

    def run_check(self):
        report = self.preflight()
        nodes = {}
        for name in self.names:
            entry = report[name]
            unschedulable = bool((self.survey.nodes[name].get("spec") or {}).get("unschedulable"))
            blocking = [{"pod": blocker["pod"], "kind": blocker["kind"], "pdb": blocker["pdb"], "message": blocker["reason"],
                         "severity": blocker["severity"]} for blocker in entry["blockers"]]
            nodes[name] = node_result("would be cordoned and drained" if not unschedulable else "would be drained",
                                      predicted=entry["predicted"], outcome=entry["outcome"], cordoned=not unschedulable,
                                      evicted=entry["would_evict"], deleted=entry["would_delete"],
                                      restarted=entry["would_restart"], skipped=entry["skipped"], blocking=blocking,
                                      downtime=[{"pod": blocker["pod"], "reason": blocker["reason"]}
                                                for blocker in entry["blockers"] if blocker["kind"] == "single_replica"])
        changed = any(node["cordoned"] or node["evicted"] or node["deleted"] or node["restarted"] for node in nodes.values())
        blocked = sorted(name for name, node in nodes.items() if node["predicted"] == "blocked")
        if blocked:
            msg = "pre-flight: %d of %d node(s) blocked: %s" % (len(blocked), len(nodes), "; ".join(
                "%s: %s" % (name, nodes[name]["outcome"]) for name in blocked))
        else:
            msg = "pre-flight: %d node(s) can be drained" % len(nodes)
        output = {"changed": changed, "nodes": nodes, "msg": msg, "preflight_ok": not blocked,
                  "drained": [], "skipped_nodes": [], "failed_nodes": []}
        if self.diff:
            output["diff"] = [self._diff_entry(name, [item["pod"] for item in nodes[name]["skipped"]]
                                               + [blocker["pod"] for blocker in nodes[name]["blocking"] if blocker["severity"] == "error"])
                              for name in self.names]
        return output

    def run(self):
        """The whole drain; returns the module result dict with ``failed`` set when a node was not drained."""
        started = self.clock()
        self.read(full=self.check_mode)
        if self.check_mode:
            return self.run_check()
        # a pod that could never start again stops every drain before it changes anything, whatever timeout_action says
        problems = self.volume_problems()
        if self.opts.timeout_action == "fail":
            for name, found in self.static_problems().items():
                problems.setdefault(name, []).extend(found)
        if problems:
            lines = []
            for name in self.names:
                for blocking in problems.get(name, []):
                    lines.append("%s on %s: %s" % (blocking["pod"], name, blocking["message"]))
            nodes = {name: node_result("not started", message="", blocking=problems.get(name, []),
                                       remaining=[blocking["pod"] for blocking in problems.get(name, [])])
                     for name in self.names}
            return {"failed": True, "changed": False, "nodes": nodes, "drained": [], "skipped_nodes": [],
                    "failed_nodes": sorted(problems),
                    "msg": "cannot drain: %d pod(s) cannot leave their node under the options given, nothing was changed: %s"
                           % (len(lines), "; ".join(lines))}
        started_at = self.drained_text()
        # out of external load balancers from the start: the deregistration delay runs while the pods are evicted
        cordoned = cordon_nodes(self.api, self.names,
                                labels={LABEL_EXCLUDE_LB: "true"} if self.opts.exclude_from_load_balancers else None)
        results = {name: node_result("draining", message="") for name in self.names}
        for name in self.names:
            results[name]["cordoned"] = cordoned[name]["cordoned"]
            ready, reason = node_ready(cordoned[name]["node"])
            self.not_ready[name] = None if ready else reason
        node_workers = min(len(self.names), self.opts.max_concurrent_nodes or len(self.names))
        pool_size = max(1, min(MAX_EVICTION_THREADS, node_workers * self.opts.max_concurrent_evictions))
        if self.survey.pdbs_version:
            self.budget_watch = BudgetWatch(self.api, self.survey.pdbs, self.survey.pdbs_version).start()
        try:
            with ThreadPoolExecutor(max_workers=pool_size) as pool, ThreadPoolExecutor(max_workers=node_workers) as node_pool:
                self.pool = pool
                list(node_pool.map(lambda name: self.drain_node(name, results[name]), self.names))
        finally:
            if self.budget_watch is not None:
                self.budget_watch.stop()
        for result in results.values():
            result.pop("forced_pods", None)
        drained = [name for name in self.names if results[name]["status"] == "drained"]
        skipped = [name for name in self.names if results[name]["status"] == "skipped"]
        failed = [name for name in self.names if results[name]["status"] == "failed"]
        changed = any(result["cordoned"] or result["evicted"] or result["deleted"] or result["restarted"]
                      for result in results.values())
        seconds = round(self.clock() - started, 3)
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
        if self.diff:
            output["diff"] = [self._diff_entry(name, results[name]["remaining"]
                                               + [item["pod"] for item in results[name]["skipped"]
                                                  if not item["reason"].startswith("already terminating")])
                              for name in self.names]
        return output


@reports_errors
def run_node_drain(module, make_client):
    """node_drain: validate the options, build the client (``make_client(module)``), drain, exit the module."""
    names = node_names(module)
    options = DrainOptions(module.params)
    workers = min(len(names), options.max_concurrent_nodes or len(names))
    api_client = with_pool_size(make_client(module), min(MAX_EVICTION_THREADS, workers * options.max_concurrent_evictions) + workers + 4)
    drain = Drain(KubeApi(api_client), names, options, check_mode=module.check_mode, diff=module._diff, watch=True)
    try:
        with kube_errors("drain", "nodes %s" % ", ".join(names)):
            output = drain.run()
    except NodeNotFound as exc:
        raise RolloutError("%s; nothing was changed" % exc) from None
    if output.pop("failed", False):
        module.fail_json(**output)
    module.exit_json(**output)
