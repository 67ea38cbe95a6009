# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Events on nodes are best effort: a refusal is counted, never raised, and stops the next ones only when they would be
refused the same way."""

from __future__ import annotations

import urllib3

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.event_writer import NodeEvents
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.node_events import NAMESPACE, event_body

from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fake_kube import api_error

NODE = {"metadata": {"name": "n1", "uid": "u1"}}
EVENT = ("Normal", "RolloutCordoned", "Cordoned")


class Api:
    def __init__(self, answers):
        self.answers = list(answers)
        self.sent = []

    def create_event(self, namespace, body, request_timeout=None):
        self.sent.append((namespace, body["reason"], request_timeout))
        answer = self.answers.pop(0) if self.answers else body
        if isinstance(answer, Exception):
            raise answer
        return body


def writer(api, enabled=True, check_mode=False):
    return NodeEvents(api, {"enabled": enabled, "run": "run-1"}, event_body, NAMESPACE, check_mode=check_mode,
                      now_text=lambda: "2026-01-01T00:00:00Z")


def test_written_once_each_with_a_short_timeout():
    api = Api([])
    events = writer(api)
    events.record(NODE, EVENT)
    events.record(NODE, ("Normal", "DrainSucceeded", "Drained"))
    assert api.sent == [("default", "RolloutCordoned", (3, 5)), ("default", "DrainSucceeded", (3, 5))]
    assert events.summary() == {"written": 2, "not_written": 0, "error": None}


def test_forbidden_stops_the_next_ones_and_raises_nothing():
    api = Api([api_error(403, 'events is forbidden: User "rollout" cannot create resource "events"', "Forbidden")])
    events = writer(api)
    for _attempt in range(3):
        events.record(NODE, EVENT)
    assert len(api.sent) == 1
    summary = events.summary()
    assert summary["written"] == 0 and summary["not_written"] == 3
    assert summary["error"].startswith("the API server refused an Event (403): events is forbidden")


def test_throttled_is_not_retried_but_the_next_one_is_sent():
    api = Api([api_error(429, "slow down", "TooManyRequests")])
    events = writer(api)
    events.record(NODE, EVENT)
    events.record(NODE, EVENT)
    assert len(api.sent) == 2 and events.summary()["written"] == 1 and events.summary()["not_written"] == 1


def test_unreachable_gives_up_at_once():
    api = Api([urllib3.exceptions.MaxRetryError(None, "/api/v1/namespaces/default/events")])
    events = writer(api)
    events.record(NODE, EVENT)
    events.record(NODE, EVENT)
    assert len(api.sent) == 1 and events.summary()["not_written"] == 2


def test_nothing_sent_in_check_mode_disabled_or_without_node():
    for events in (writer(Api([]), check_mode=True), writer(Api([]), enabled=False)):
        events.record(NODE, EVENT)
        assert events.api.sent == [] and events.summary() == {"written": 0, "not_written": 0, "error": None}
    events = writer(Api([]))
    events.record(None, EVENT)
    assert events.api.sent == []
