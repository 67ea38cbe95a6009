# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Write the rollout's Events on nodes (worded by ``rollout.node_events``), best effort.

An Event is a courtesy to whoever runs ``kubectl describe node``: one the API server refuses (no RBAC for ``events``,
a namespace missing, throttling, an outage) never stops or fails the module that writes it. Each Event is sent once,
with a short timeout; after a refusal that would answer every other Event the same (403, 404, no answer at all) the
module writes no more of them. The module's result counts what was written and what was not (``events``).
"""

from __future__ import annotations

from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import ApiException, TRANSPORT_ERRORS, error_status

EVENTS_ARGUMENT_SPEC = dict(
    events=dict(type="dict", options=dict(
        enabled=dict(type="bool", default=True),
        run=dict(type="str"),
        target=dict(type="str"),
    )),
)
# seconds to connect and to read the answer of one Event: a slow API server costs a node's Event, not the rollout time
EVENT_TIMEOUT = (3, 5)
# answers after which no other Event of the module is sent: the next ones would be refused the same way
GIVE_UP_STATUSES = (401, 403, 404)


def utc_now_text():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class NodeEvents:
    """The Events of one module run: ``record(node, event)`` for each; ``summary()`` for the module's result.

    ``context`` is ``rollout.node_events.event_context``'s; with ``enabled`` false or in check mode nothing is sent.
    ``build(node, event, now_text, instance)`` makes the Event object (``rollout.node_events.event_body``), in
    ``namespace``."""

    def __init__(self, api, context, build, namespace, check_mode=False, now_text=utc_now_text, timeout=EVENT_TIMEOUT):
        self.api = api
        self.context = context
        self.build = build
        self.namespace = namespace
        self.active = bool(context.get("enabled")) and not check_mode
        self.now_text = now_text
        self.timeout = timeout
        self.written = []
        self.not_written = 0
        self.error = None
        self._given_up = False

    def record(self, node, event):
        """Send one Event (``(type, reason, message)``) about ``node`` (the Node object); never raises."""
        if not self.active or node is None:
            return
        if self._given_up:
            self.not_written += 1
            return
        body = self.build(node, event, self.now_text(), self.context.get("run"))
        try:
            self.api.create_event(self.namespace, body, request_timeout=self.timeout)
        except ApiException as exc:
            code, status, _headers = error_status(exc)
            self.not_written += 1
            self.error = self.error or "the API server refused an Event (%s): %s" % (code, status.get("message") or status.get("reason") or exc)
            self._given_up = code in GIVE_UP_STATUSES
            return
        except TRANSPORT_ERRORS as exc:
            self.not_written += 1
            self.error = self.error or "an Event could not be sent: %s" % exc
            self._given_up = True
            return
        except Exception as exc:  # pylint: disable=broad-except
            # an Event is never worth a failed rollout, whatever went wrong writing it
            self.not_written += 1
            self.error = self.error or "an Event could not be sent: %s" % exc
            return
        self.written.append({"node": body["involvedObject"]["name"], "reason": body["reason"]})

    def summary(self):
        """What the module result says: ``{"written", "not_written", "error"}``."""
        return {"written": len(self.written), "not_written": self.not_written, "error": self.error}
