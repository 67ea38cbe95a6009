"""The sandbox's event log: every observable change, in order, as JSON lines.

The invariant checker (report.py) works only from this log, so anything a safety claim depends on
(a pod killed, an eviction granted, a node becoming Ready, an ASG size change, an API request) must be
emitted here by the component that caused it.
"""

import json
import threading
import time


class EventLog:
    """Append-only, thread-safe; kept in memory and mirrored to a JSONL file when a path is given."""

    def __init__(self, clock, path=None):
        self.clock = clock
        self.path = path
        self._lock = threading.Lock()
        self._events = []
        self._fh = open(path, "a", encoding="utf-8") if path else None  # pylint: disable=consider-using-with

    def emit(self, kind, **fields):
        """Record one event. ``kind`` is a dotted name such as ``pod.evicted`` or ``asg.desired``."""
        event = {"t": round(self.clock.now(), 3), "wall": round(time.time(), 3), "kind": kind}
        event.update(fields)
        with self._lock:
            self._events.append(event)
            if self._fh:
                self._fh.write(json.dumps(event, sort_keys=True) + "\n")
                self._fh.flush()
        return event

    def events(self, kind_prefix=None):
        with self._lock:
            items = list(self._events)
        if kind_prefix is None:
            return items
        return [e for e in items if e["kind"].startswith(kind_prefix)]

    def close(self):
        with self._lock:
            if self._fh:
                self._fh.close()
                self._fh = None


def read_events(path):
    """Load a JSONL event log written by :class:`EventLog`."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
