# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One node's drain in ``node_drain``: the loop a node's thread runs.

Act on the pods that are due (evict, delete, or restart a single-replica Deployment through its rolling update), then
look at the node's pods (its watch's view, or one list call every poll interval for the whole node, not one call per
pod) to see which are gone, until none is left, the timeout is reached, or only pods that can never be evicted remain.
Evictions of one node run concurrently (bounded); a refused eviction (429) is retried after a capped exponential
backoff. This file reads, sends, waits and loops; what to do with each pod, what each answer means and how a node ends
are decided by the pure ``drain`` package (``drain.work``, ``drain.pacing``).

:class:`NodeLoop` is the half of ``node_drain.Drain`` that runs in the node threads; it uses the drain's ``api``,
``opts``, ``survey``, ``pacing``, ``pool``, ``clock``, ``sleep``, ``now_text``, ``drained_text``, ``utc_now``,
``not_ready``, ``work_for``, ``implicit`` (the implicit budgets met, by gate key) and the lock that guards ``_restarted``.
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, wait

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import TRANSPORT_ERRORS, ApiException, error_status
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import describe_k8s_error
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.pod_watch import PodWatch
from ansible_collections.nodeops.rollout.plugins.module_utils.core.backoff import retry_after_seconds, retry_delay
from ansible_collections.nodeops.rollout.plugins.module_utils.drain import rules as drain_rules
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.implicit import implicit_status, selector_text, unknown_replicasets, workload_pods
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pacing import is_implicit
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import pod_is_terminating, pod_key
from ansible_collections.nodeops.rollout.plugins.module_utils.drain.work import (
    UNCONFIRMED_SLACK_SECONDS,
    apply_answer,
    node_outcome,
    remaining_works,
    unconfirmed,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.marks import ANNOTATION_DRAINED_AT

# Extra seconds allowed, beyond the longest grace period, for pods deleted by timeout_action=force to go.
FORCE_SLACK_SECONDS = 30
# Seconds between two looks at a node's pods while a watch keeps them current (a look then costs no request).
WATCH_LOOK_SECONDS = 0.5


class NodeLoop:
    """Sending, observing and the loop of one node; mixed into ``node_drain.Drain``."""

    # ---- acting -------------------------------------------------------------------------------
    def _send(self, work):
        """Make one request for the pod; returns ``(answer, retry_after)`` (answer from drain_rules.eviction_answer)."""
        try:
            return self._request(work)
        finally:
            self.pacing.answered(work)

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

    def _read_budget(self, pdb):
        """The budget's status, for the pacing; None when unknown, "gone" when the budget no longer exists."""
        try:
            if is_implicit(pdb):
                return self._read_implicit(pdb)
            namespace, name = pdb.split("/", 1)
            return self.api.get_pdb(namespace, name).get("status") or {}
        except ApiException as exc:
            return "gone" if exc.status == 404 and not is_implicit(pdb) else None
        except TRANSPORT_ERRORS:
            return None

    def _read_implicit(self, key):
        """The implicit budget's status now (drain.implicit.implicit_status) from its workload's pods cluster-wide;
        None when they cannot be read."""
        budget = self.implicit.get(key)
        if budget is None:
            return "gone"
        namespace = budget["namespace"]
        pods = self.api.list_pods(namespace=namespace, label_selector=selector_text(budget["selector"]))
        if unknown_replicasets(budget, pods, self.survey.replicasets):
            # a ReplicaSet made since the survey (the Deployment rolled out): its pods are the workload's too
            self.survey.replicasets.update((pod_key(obj), obj) for obj in self.api.list_replicasets(namespace))
        return implicit_status(budget, workload_pods(budget, pods, self.survey.replicasets), self.pacing.evicted)

    def _apply(self, work, answer, retry_after, result):
        now = self.clock()
        gate = apply_answer(work, answer, now, lambda attempts: retry_delay(attempts, retry_after, self.opts.retry_max_delay),
                            self.opts.grace_period, self.opts.disable_eviction, self.survey.pdbs, result)
        self.pacing.answer(work, gate, now, retry_after)

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
            due = self.pacing.select_due(works, now)
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
                if answer.get("permission"):
                    work.blocking["permission"] = answer["permission"]
