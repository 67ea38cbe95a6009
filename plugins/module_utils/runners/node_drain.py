# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Drain nodes: cordon them all, then move every pod off each node concurrently, within the pods' budgets.

This file is the run: it reads the nodes, their pods, the budgets and the workloads, refuses before any change a drain
that cannot succeed, cordons, and starts one thread per node, each running ``node_drain_loop.NodeLoop`` (act on the
pods that are due, look at the node's pods, until none is left, the timeout is reached, or only pods that can never be
evicted remain). What is decided without I/O is the pure ``drain`` package's: the options (``drain.options``), each
pod's work and each answer (``drain.work``), the budgets' pacing (``drain.pacing``), the result (``drain.result``).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws import aws_clients, aws_errors, target_group_states
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import KubeApi, kube_errors, node_pods, with_pool_size
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.pod_watch import BudgetWatch
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError, reports_errors
from ansible_collections.nodeops.rollout.plugins.module_utils.drain import rules as drain_rules
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.budgets import BudgetIndex, pdbs_selecting
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.implicit import implicit_budget
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.options import DrainOptions
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pacing import BudgetPacing
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import controller_of, owner_key, pod_is_finished, pod_is_terminating, pod_key
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.preflight import drain_preflight, volume_findings
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.result import check_result, drain_result, node_result, refused_result
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.volumes import claim_names, exclusive_claims
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.work import pod_work
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import node_events
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import LABEL_EXCLUDE_LB
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_health import INSTANCE_NODE_FIELDS, instance_id_of, node_ready, node_summary
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.targets import checked_target_groups, instance_target_groups, still_serving
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.node_drain_loop import NodeLoop
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.nodes import (
    NodeNotFound,
    cordon_nodes,
    node_event_writer,
    node_names,
    quarantine_nodes,
    read_nodes,
)

# Upper bound of threads sending evictions, all nodes together.
MAX_EVICTION_THREADS = 64
# seconds between two reads of the target groups while the drained nodes leave them (a controller reacts in about one)
LEAVE_POLL_SECONDS = 0.5


def utc_now_text():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_now_precise():
    """Now, to the millisecond: a post-drain delay counted from a time cut to the second could end a second early."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


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
        self.statefulset_pods = {}   # namespace/name -> live pods of a StatefulSet whose pods no budget covers
        self.namespace_pods = []
        self.claims = {}       # namespace/name -> PersistentVolumeClaim, for the namespaces of pods that mount one
        self.volumes = {}      # name -> PersistentVolume, listed when a pod mounts a claim
        self.all_nodes = []    # every node (node_summary), listed when a pod mounts a claim


class Drain(NodeLoop):
    """One drain run over ``names``; ``run()`` returns the module result (without exiting)."""

    def __init__(self, api, names, options, check_mode=False, diff=False, clock=time.monotonic, sleep=time.sleep,
                 now_text=utc_now_text, watch=False, drained_text=utc_now_precise, utc_now=lambda: datetime.now(timezone.utc),
                 events=None, target_groups=(), read_targets=None):
        self.api = api
        # the instance target groups the drained nodes leave before their pods are evicted, and ``read_targets()``,
        # their targets now (``{arn: {target id: state}}``)
        self.target_groups = list(target_groups)
        self.read_targets = read_targets
        self.load_balancers = None
        self.events = events   # clients.event_writer.NodeEvents: the Events on the nodes, or None
        self.cordoned_nodes = {}   # name -> the node as the cordon wrote it
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
        self.implicit = {}   # gate key -> the implicit budget (drain.implicit) of a workload whose pods this drain evicts
        self.pacing = BudgetPacing(options.poll_interval, options.retry_max_delay, clock, self._read_budget)

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
            pdbs, survey.pdbs_version = self.api.list_pdbs_versioned()
        else:
            pdbs = self.api.list_pdbs()
        # every pod of the drain is matched against the budgets: found through the index, not by testing each
        survey.pdbs = BudgetIndex(pdbs)
        self.pacing.seed(survey.pdbs)
        every_pod = [pod for pods in survey.pods_by_node.values() for pod in pods]
        implicit = self._implicit_on()
        if full or self.opts.restart_single_replica or implicit:
            for namespace in self._owned_namespaces(every_pod, ("ReplicaSet",)):
                survey.replicasets.update((pod_key(obj), obj) for obj in self.api.list_replicasets(namespace))
                survey.deployments.update((pod_key(obj), obj) for obj in self.api.list_deployments(namespace))
        if full:
            namespaces = sorted(set((pod.get("metadata") or {}).get("namespace") or "default" for pod in every_pod))
            for namespace in namespaces:
                survey.namespace_pods.extend(self.api.list_pods(namespace=namespace))
        if implicit:
            self._count_statefulset_pods(survey, every_pod)
        self._read_volumes(survey, every_pod)
        self.survey = survey
        return survey

    def _implicit_on(self):
        """Whether evictions are paced by implicit budgets: the option is on and pods are evicted (disable_eviction
        deletes them past every budget, as asked)."""
        return self.opts.implicit_budget and not self.opts.disable_eviction

    def _count_statefulset_pods(self, survey, pods):
        """The live pods of each StatefulSet behind ``pods`` that no budget covers: its replicas, for its implicit budget
        (the StatefulSet itself is not read: its rolling update counts as one pod at a time, the strictest)."""
        wanted = set()
        for pod in pods:
            owner = controller_of(pod)
            if owner is not None and owner.get("kind") == "StatefulSet" and not pdbs_selecting(pod, survey.pdbs):
                wanted.add(((pod.get("metadata") or {}).get("namespace") or "default", owner.get("name")))
        for namespace in sorted(set(namespace for namespace, _name in wanted)):
            listed = survey.namespace_pods if survey.namespace_pods else self.api.list_pods(namespace=namespace)
            for pod in listed:
                owner = controller_of(pod)
                meta = pod.get("metadata") or {}
                if (meta.get("namespace") or "default") != namespace or owner is None or owner.get("kind") != "StatefulSet":
                    continue
                if (namespace, owner.get("name")) in wanted and not pod_is_terminating(pod) and not pod_is_finished(pod):
                    key = "%s/%s" % (namespace, owner.get("name"))
                    survey.statefulset_pods[key] = survey.statefulset_pods.get(key, 0) + 1

    def implicit_for(self, pod):
        """The implicit budget of the pod's workload (drain.implicit.implicit_budget), or None; the caller checks that
        no PodDisruptionBudget covers the pod. Each one found is kept for its gate's reads."""
        if not self._implicit_on():
            return None
        survey = self.survey
        budget = implicit_budget(pod, survey.replicasets, survey.deployments, None, survey.statefulset_pods)
        if budget is not None:
            with self._lock:
                self.implicit.setdefault(budget["key"], budget)
        return budget

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
        return pod_work(pod, self.opts.classify, self.opts.disable_eviction, self.survey.pdbs, self.restart_for, result,
                        self.implicit_for)

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
        implicit = {}
        for pods in survey.pods_by_node.values():
            for pod in pods:
                if not pdbs_selecting(pod, survey.pdbs):
                    budget = self.implicit_for(pod)
                    if budget is not None:
                        implicit[pod_key(pod)] = budget
        options = dict(self.opts.classify)
        return drain_preflight(survey.pods_by_node, survey.namespace_pods, survey.pdbs, options, replicas,
                               restarts, self.opts.timeout_action, self.opts.timeout, self.volume_blockers(), self.opts.waves,
                               implicit)

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

    # ---- the run ------------------------------------------------------------------------------
    def _record_outcomes(self, results):
        """An Event per node saying how its drain ended (``results``: node_drain's entries), best effort."""
        if self.events is None:
            return
        nodes = dict(self.survey.nodes)
        nodes.update(self.cordoned_nodes)
        if not nodes and self.events.active:
            try:   # a drain refused before its cordon read no node: their uids are what kubectl describe looks for
                nodes = dict(zip(self.names, read_nodes(self.api, self.names)))
            except Exception:  # pylint: disable=broad-except
                return   # best effort: no Event rather than a failed drain
        for name in self.names:
            node = nodes.get(name) or {"metadata": {"name": name}}
            self.events.record(node, node_events.drain_event(name, results[name], self.events.context))

    def run_check(self):
        survey = self.survey
        return check_result(self.names, self.preflight(), survey.nodes, survey.pods_by_node, self.diff)

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
            output = refused_result(self.names, problems)
            self._record_outcomes(output["nodes"])
            return output
        started_at = self.drained_text()
        # out of external load balancers from the start: the deregistration delay runs while the pods are evicted
        cordoned = cordon_nodes(self.api, self.names,
                                labels={LABEL_EXCLUDE_LB: "true"} if self.opts.exclude_from_load_balancers else None)
        results = {name: node_result("draining", message="") for name in self.names}
        self.load_balancers = self.leave_load_balancers(cordoned)
        for name in self.names:
            results[name]["cordoned"] = cordoned[name]["cordoned"]
            if cordoned[name]["cordoned"] and self.events is not None:
                self.events.record(cordoned[name]["node"], node_events.cordon_event(name, self.events.context, draining=True))
            ready, reason = node_ready(cordoned[name]["node"])
            self.not_ready[name] = None if ready else reason
        node_workers = min(len(self.names), self.opts.max_concurrent_nodes or len(self.names))
        pool_size = max(1, min(MAX_EVICTION_THREADS, node_workers * self.opts.max_concurrent_evictions))
        if self.survey.pdbs_version:
            self.pacing.watch = BudgetWatch(self.api, self.survey.pdbs, self.survey.pdbs_version).start()
        try:
            with ThreadPoolExecutor(max_workers=pool_size) as pool, ThreadPoolExecutor(max_workers=node_workers) as node_pool:
                self.pool = pool
                list(node_pool.map(lambda name: self.drain_node(name, results[name]), self.names))
        finally:
            if self.pacing.watch is not None:
                self.pacing.watch.stop()
        self.cordoned_nodes = {name: cordoned[name]["node"] for name in self.names}
        # a node skipped stays cordoned, labelled as quarantined for the operator (its Event names what holds it)
        skipped = [name for name in self.names if results[name]["status"] == "skipped"]
        if skipped:
            with kube_errors("patch", "nodes %s" % ", ".join(skipped)):
                quarantine_nodes(self.api, skipped)
            for name in skipped:
                results[name]["quarantined"] = True
        self._record_outcomes(results)
        output = drain_result(self.names, results, round(self.clock() - started, 3), started_at, self.survey.pods_by_node,
                              self.diff)
        output["load_balancers"] = self.load_balancers
        return output

    def leave_load_balancers(self, cordoned):
        """Once the nodes carry the label that takes them out of external load balancers, wait until no target group
        of ``target_groups`` sends their instances new connections (each target draining, unused or gone) before any pod
        is evicted: a node whose pods went first would be sent requests it has no pod for, for as long as its load
        balancer controller takes to react. Bounded by the option ``target_leave_timeout``, after which the pods are
        evicted anyway and the result says which nodes still served. ``{"waited_seconds", "still_serving": {node:
        [target group names]}, "timed_out"}``; None when there is nothing to leave."""
        if not (self.opts.exclude_from_load_balancers and self.target_groups and self.read_targets):
            return None
        instances = {}
        for name in self.names:
            instance_id = instance_id_of(((cordoned[name]["node"] or {}).get("spec") or {}).get("providerID"))
            if instance_id:
                instances[instance_id] = name
        started = self.clock()
        while True:
            serving = still_serving(self.target_groups, self.read_targets(), sorted(instances))
            waited = self.clock() - started
            if not serving or waited >= self.opts.target_leave_timeout:
                break
            self.sleep(LEAVE_POLL_SECONDS)
        return {"waited_seconds": round(waited, 3), "still_serving": {instances[iid]: names for iid, names in serving.items()},
                "timed_out": bool(serving)}


def _target_reader(module, target_groups):
    """A function that reads ``target_groups``' targets now (``{arn: {target id: state}}``), one client for all reads."""
    elbv2 = aws_clients(module, "elbv2")[1]
    where = "the target groups %s" % ", ".join(group["name"] for group in target_groups)

    def read():
        with aws_errors("DescribeTargetHealth", where, module.params):
            return target_group_states(elbv2, target_groups)
    return read


@reports_errors
def run_node_drain(module, make_client):
    """node_drain: validate the options, build the client (``make_client(module)``), drain, exit the module."""
    names = node_names(module)
    options = DrainOptions(module.params)
    workers = min(len(names), options.max_concurrent_nodes or len(names))
    api_client = with_pool_size(make_client(module), min(MAX_EVICTION_THREADS, workers * options.max_concurrent_evictions) + workers + 4)
    api = KubeApi(api_client)
    events = node_event_writer(module, api)
    target_groups = instance_target_groups(checked_target_groups(module.params["target_groups"])) if module.params.get("target_groups") else []
    read_targets = None
    if target_groups and options.exclude_from_load_balancers and not module.check_mode:
        read_targets = _target_reader(module, target_groups)
    drain = Drain(api, names, options, check_mode=module.check_mode, diff=module._diff, watch=True, events=events,
                  target_groups=target_groups, read_targets=read_targets)
    try:
        with kube_errors("drain", "nodes %s" % ", ".join(names)):
            output = drain.run()
    except NodeNotFound as exc:
        raise RolloutError("%s; nothing was changed" % exc) from None
    output["events"] = events.summary()
    if output.pop("failed", False):
        module.fail_json(**output)
    module.exit_json(**output)
