# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The pods of one node being drained, kept current by a watch: one request for the whole drain, where listing the
node's pods every poll interval is one request every 2 seconds (and, without the watch cache, a quorum read that
filters every pod of the cluster).

The drain reads :meth:`PodWatch.snapshot` as it would read a list. When the watch breaks (the connection drops, the
server answers 410 Gone for a resource version it no longer has), ``healthy`` turns false and the drain lists the
node's pods again, as it does without a watch.
"""

from __future__ import annotations

import threading

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import watch_events

# Seconds a watch request is asked to stay open before the server ends it; the watch then starts again from where it was.
WATCH_SECONDS = 300


def _uid(pod):
    return (pod.get("metadata") or {}).get("uid")


class PodWatch:
    """A thread that applies the watch events of ``node``'s pods to a dict ``{uid: pod}`` seeded by a list."""

    def __init__(self, api, node, pods, resource_version, label_selector=None):
        self.api = api
        self.node = node
        self.label_selector = label_selector
        self.resource_version = resource_version
        self._pods = {_uid(pod): pod for pod in pods}
        self._lock = threading.Lock()
        self._stopped = False
        self.healthy = bool(resource_version)
        self.requests = 0
        self._thread = threading.Thread(target=self._run, name="watch-%s" % node, daemon=True)

    def start(self):
        if self.healthy:
            self._thread.start()
        return self

    def snapshot(self):
        """The node's pods as the watch knows them now (a list, as a list request answers)."""
        with self._lock:
            return list(self._pods.values())

    def stop(self):
        """Stop applying events. The request stays open until the server ends it or the module exits (the thread is a
        daemon): closing a response another thread is reading blocks until that read returns."""
        self._stopped = True

    def _run(self):
        try:
            while not self._stopped:
                self.requests += 1
                response = self.api.open_pod_watch(self.node, self.resource_version, WATCH_SECONDS, self.label_selector)
                for event in watch_events(response):
                    if self._stopped:
                        return
                    self._apply(event)
                response.release_conn()
        except Exception:  # pylint: disable=broad-except
            # Whatever broke the watch (the connection, 410 Gone, a stop), the drain goes back to listing the pods.
            self.healthy = False

    def _apply(self, event):
        kind, pod = event.get("type"), event.get("object") or {}
        version = (pod.get("metadata") or {}).get("resourceVersion")
        if kind == "ERROR":
            raise ValueError("watch of the pods of node %s ended: %s" % (self.node, pod.get("message") or pod))
        with self._lock:
            if kind == "DELETED":
                self._pods.pop(_uid(pod), None)
            elif kind in ("ADDED", "MODIFIED"):
                self._pods[_uid(pod)] = pod
            if version:
                self.resource_version = version
