# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""clients/kube.py: KubeApi's retry policy: a few attempts on 429/5xx and on a server never reached; an outage of a
server that answered before is waited out for up to unreachable_seconds."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import KubeApi


class Response:
    data = b'{"kind": "Node"}'


class Clock:
    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def api_with(clock, unreachable_seconds=30.0):
    api = KubeApi.__new__(KubeApi)   # no kubernetes client needed for the policy
    api.sleep, api.clock, api.attempts = clock.sleep, lambda: clock.now, 5
    api.request_timeout, api.unreachable_seconds, api.reached = (1, 1), unreachable_seconds, False
    return api


def flaky(failures):
    """A client method that fails with a cut connection ``failures`` times, then answers."""
    calls = []

    def method(*_args, **_kwargs):
        calls.append(1)
        if len(calls) <= failures:
            raise ConnectionResetError("connection reset by peer")
        return Response()
    return method, calls


def test_a_server_never_reached_fails_after_a_few_attempts():
    clock = Clock()
    api = api_with(clock)
    method, calls = flaky(100)
    with pytest.raises(ConnectionResetError):
        api._call(method)  # pylint: disable=protected-access
    assert len(calls) == 5 and clock.now < 10


def test_an_outage_of_a_server_that_answered_is_waited_out():
    clock = Clock()
    api = api_with(clock)
    method, _calls = flaky(0)
    api._call(method)  # pylint: disable=protected-access
    # more cut connections than the 5 attempts a server never reached gets; even at the largest jitter their backoff
    # (0.5 + 1 + 2 + 4 + 5 + 5 + 5 s) stays inside the 30 s outage budget, so the call succeeds whatever is drawn
    method, calls = flaky(7)
    assert api._call(method) == {"kind": "Node"}  # pylint: disable=protected-access
    assert len(calls) == 8 and 0 < clock.now < 30


def test_an_outage_longer_than_the_budget_is_reported():
    clock = Clock()
    api = api_with(clock, unreachable_seconds=30.0)
    api.reached = True
    method, calls = flaky(1000)
    with pytest.raises(ConnectionResetError):
        api._call(method)  # pylint: disable=protected-access
    assert 30 <= clock.now < 40 and len(calls) > 5
