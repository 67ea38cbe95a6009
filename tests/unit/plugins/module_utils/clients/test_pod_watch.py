# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""clients/pod_watch.py: a node's pods kept current by watch events; a broken watch hands back to listing."""

from __future__ import annotations

import json
import time

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.pod_watch import PodWatch
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.fake_kube import make_pod


class Response:
    """An open watch: its events as lines, then the server ends it."""

    def __init__(self, events):
        self.lines = [json.dumps(event).encode() + b"\n" for event in events]

    def stream(self, amt=None, decode_content=False):  # pylint: disable=unused-argument
        return iter(self.lines)

    def release_conn(self):
        pass


class Api:
    def __init__(self, *answers):
        self.answers = list(answers)
        self.opened = []

    def open_pod_watch(self, node, resource_version, timeout_seconds, label_selector=None):  # pylint: disable=unused-argument
        self.opened.append(resource_version)
        answer = self.answers.pop(0) if self.answers else Response([])
        if isinstance(answer, OSError):
            raise OSError(*answer.args)
        if not self.answers:
            time.sleep(0.05)
        return answer


def pod(name, uid, version):
    item = make_pod(name, "n1")
    item["metadata"].update({"uid": uid, "resourceVersion": version})
    return item


def settle(watch, condition):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not condition():
        time.sleep(0.01)
    watch.stop()


def test_events_add_change_and_remove_pods_and_the_watch_resumes_from_the_last_version():
    first, second = pod("web-1", "u1", "10"), pod("web-2", "u2", "11")
    moved = pod("web-3", "u3", "12")
    api = Api(Response([{"type": "DELETED", "object": pod("web-1", "u1", "13")},
                        {"type": "ADDED", "object": moved},
                        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "14"}}}]),
              Response([{"type": "MODIFIED", "object": pod("web-2", "u2", "15")}]))
    watch = PodWatch(api, "n1", [first, second], "9").start()
    settle(watch, lambda: len(api.opened) >= 3)
    names = sorted(item["metadata"]["name"] for item in watch.snapshot())
    assert names == ["web-2", "web-3"] and watch.healthy
    assert api.opened[:3] == ["9", "14", "15"]   # each new request starts where the last one ended


def test_an_error_event_or_a_broken_connection_hands_back_to_listing():
    api = Api(Response([{"type": "ERROR", "object": {"code": 410, "message": "too old resource version"}}]))
    watch = PodWatch(api, "n1", [], "9").start()
    settle(watch, lambda: not watch.healthy)
    assert not watch.healthy
    broken = PodWatch(Api(OSError("connection reset")), "n1", [], "9").start()
    settle(broken, lambda: not broken.healthy)
    assert not broken.healthy


def test_without_a_resource_version_there_is_no_watch():
    watch = PodWatch(Api(), "n1", [pod("web-1", "u1", "1")], None).start()
    assert not watch.healthy and len(watch.snapshot()) == 1
