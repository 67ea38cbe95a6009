"""core/v1 Event objects, as client-go's event recorder writes them (what ``kubectl describe`` shows).

Only the cheap, useful ones are recorded (Scheduled, FailedScheduling, Killing, ScalingReplicaSet, node
registration and readiness); they expire after ``event_ttl_seconds`` simulated seconds as the API
server's one-hour event TTL does.
"""

import uuid

from ..errors import ApiError


class EventRecorder:
    def __init__(self, runtime):
        self.rt = runtime
        self.store = runtime.store
        self.clock = runtime.clock
        self.enabled = runtime.cfg.record_events

    def record(self, obj, reason, message, component, event_type="Normal", host=None):
        if not self.enabled:
            return None
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        now = self.clock.timestamp()
        api_version = obj.get("apiVersion") or "v1"
        event = {
            "metadata": {"name": "%s.%s" % (meta["name"], uuid.uuid4().hex[:16]), "namespace": namespace},
            "involvedObject": {"kind": obj.get("kind"), "namespace": meta.get("namespace"), "name": meta["name"],
                               "uid": meta.get("uid"), "apiVersion": api_version,
                               "resourceVersion": meta.get("resourceVersion")},
            "reason": reason, "message": message, "type": event_type, "count": 1,
            "source": {"component": component, **({"host": host} if host else {})},
            "firstTimestamp": now, "lastTimestamp": now, "eventTime": None,
            "reportingComponent": component, "reportingInstance": host or "",
        }
        if not meta.get("namespace"):
            event["involvedObject"].pop("namespace")
        try:
            created = self.store.create("events", event, client="sandbox-" + component.replace("default-", ""))
        except ApiError:
            return None
        self.rt.call_after(self.rt.cfg.event_ttl_seconds, self._expire, namespace, created["metadata"]["name"])
        return created

    def _expire(self, namespace, name):
        try:
            self.store.remove("events", namespace, name, client="sandbox-event-ttl")
        except ApiError:
            pass
