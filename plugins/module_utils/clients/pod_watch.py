# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Objects kept current by a watch: one request for the whole drain.

- :class:`PodWatch`: the pods of one node being drained, where listing them every poll interval is one request every
  2 seconds (and, without the watch cache, a quorum read that filters every pod of the cluster). The drain reads
  :meth:`ObjectWatch.snapshot` as it would read a list.
- :class:`BudgetWatch`: the PodDisruptionBudgets, so that a budget allowing no disruption is read again when its
  status changes rather than every poll interval.

When a watch breaks (the connection drops, the server answers 410 Gone for a resource version it no longer has),
``healthy`` turns false and the drain reads again, as it does without a watch.
"""

from __future__ import annotations

import threading

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import watch_events

# Seconds a watch request is asked to stay open before the server ends it; the watch then starts again from where it was.
WATCH_SECONDS = 300


def _uid(pod):
    return (pod.get("metadata") or {}).get("uid")


def _namespaced_name(obj):
    metadata = obj.get("metadata") or {}
    return "%s/%s" % (metadata.get("namespace") or "default", metadata.get("name"))


class ObjectWatch:
    """A thread that applies the events of a watch to a dict ``{key(object): object}`` seeded by a list.

    ``open_watch(resource_version, timeout_seconds)`` starts the watch (one request) and returns the open response.
    """

    def __init__(self, open_watch, items, resource_version, key, name):
        self.open_watch = open_watch
        self.key = key
        self.name = name
        self.resource_version = resource_version
        self._items = {key(item): item for item in items}
        self._lock = threading.Lock()
        self._stopped = False
        self.healthy = bool(resource_version)
        self.requests = 0
        self._thread = threading.Thread(target=self._run, name="watch-%s" % name, daemon=True)

    def start(self):
        if self.healthy:
            self._thread.start()
        return self

    def snapshot(self):
        """The objects as the watch knows them now (a list, as a list request answers)."""
        with self._lock:
            return list(self._items.values())

    def get(self, key):
        """One object as the watch knows it now, or None."""
        with self._lock:
            return self._items.get(key)

    def stop(self):
        """Stop applying events. The request stays open until the server ends it or the module exits (the thread is a
        daemon): closing a response another thread is reading blocks until that read returns."""
        self._stopped = True

    def _run(self):
        try:
            while not self._stopped:
                self.requests += 1
                response = self.open_watch(self.resource_version, WATCH_SECONDS)
                for event in watch_events(response):
                    if self._stopped:
                        return
                    self._apply(event)
                response.release_conn()
        except Exception:  # pylint: disable=broad-except
            # Whatever broke the watch (the connection, 410 Gone, a stop), the caller goes back to reading.
            self.healthy = False

    def _apply(self, event):
        kind, item = event.get("type"), event.get("object") or {}
        version = (item.get("metadata") or {}).get("resourceVersion")
        if kind == "ERROR":
            raise ValueError("watch of %s ended: %s" % (self.name, item.get("message") or item))
        with self._lock:
            if kind == "DELETED":
                self._items.pop(self.key(item), None)
            elif kind in ("ADDED", "MODIFIED"):
                self._items[self.key(item)] = item
            if version:
                self.resource_version = version


class PodWatch(ObjectWatch):
    """The pods of ``node`` (uid -> pod), seeded by the list the drain read before the cordon."""

    def __init__(self, api, node, pods, resource_version, label_selector=None):
        self.node = node
        super().__init__(lambda version, seconds: api.open_pod_watch(node, version, seconds, label_selector),
                         pods, resource_version, _uid, "the pods of node %s" % node)


class BudgetWatch(ObjectWatch):
    """Every PodDisruptionBudget of the cluster (namespace/name -> budget), seeded by the drain's list of them."""

    def __init__(self, api, pdbs, resource_version):
        super().__init__(api.open_pdb_watch, pdbs, resource_version, _namespaced_name, "the PodDisruptionBudgets")
