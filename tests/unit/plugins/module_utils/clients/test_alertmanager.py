# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""clients/alertmanager.py: the request a gate makes of Alertmanager's API v2 (its query, its authentication) and the
errors that name the URL. The answers of the real Alertmanager are the integration test's (test_alert_gates)."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.parse

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.clients import alertmanager
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError

GATE = {"url": "http://am.monitoring:9093", "auth": "none"}


class Answer(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Request:
    """What the gate asked: its URL and headers."""

    def __init__(self, url, headers):
        self.full_url, self.headers = url, headers

    def get_header(self, name):
        return self.headers.get(name)


def opener(answer, seen):
    def _open(url, headers, timeout):
        seen.append((Request(url, headers), timeout))
        if isinstance(answer, Exception):
            raise answer
        return Answer(json.dumps(answer).encode())
    return _open


def test_a_gate_asks_for_active_alerts_neither_silenced_nor_inhibited_matching_every_matcher():
    seen = []
    alerts = alertmanager.firing_alerts(GATE, ['severity="warning"', 'team=~"plat.*"'], opener=opener(
        [{"labels": {"alertname": "NodeNetworkSaturated", "severity": "warning"}, "startsAt": "2026-12-03T10:00:00Z"}], seen))
    assert alerts == [{"name": "NodeNetworkSaturated", "labels": {"alertname": "NodeNetworkSaturated", "severity": "warning"},
                       "since": "2026-12-03T10:00:00Z"}]
    request, timeout = seen[0]
    url = urllib.parse.urlsplit(request.full_url)
    assert url.path == "/api/v2/alerts" and timeout == alertmanager.TIMEOUT_SECONDS
    assert urllib.parse.parse_qsl(url.query) == [("active", "true"), ("silenced", "false"), ("inhibited", "false"),
                                                 ("filter", 'severity="warning"'), ("filter", 'team=~"plat.*"')]
    assert request.get_header("Authorization") is None


def test_a_bearer_token_and_sigv4_sign_the_request():
    from botocore.credentials import Credentials  # pylint: disable=import-outside-toplevel
    seen = []
    alertmanager.firing_alerts(dict(GATE, auth="bearer", token="s3cret"), ["a=b"], opener=opener([], seen))
    assert seen[0][0].get_header("Authorization") == "Bearer s3cret"
    alertmanager.firing_alerts(dict(GATE, auth="sigv4"), ["a=b"], Credentials("AKIDEXAMPLE", "secret"), "eu-west-1", opener=opener([], seen))
    signed = seen[1][0].get_header("Authorization")
    assert signed.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") and "/eu-west-1/aps/aws4_request" in signed
    with pytest.raises(RolloutError, match="auth sigv4 needs AWS credentials"):
        alertmanager.firing_alerts(dict(GATE, auth="sigv4"), ["a=b"], opener=opener([], seen))


def test_an_alertmanager_that_does_not_answer_or_refuses_is_an_error_naming_its_url():
    with pytest.raises(RolloutError, match=r"the Alertmanager at http://am.monitoring:9093 is unreachable \(\[Errno 111\] refused\)"):
        alertmanager.firing_alerts(GATE, ["a=b"], opener=opener(urllib.error.URLError(ConnectionRefusedError(111, "refused")), []))
    refused = urllib.error.HTTPError(GATE["url"], 400, "Bad Request", {}, io.BytesIO(b'"bad matcher format: a=="'))
    with pytest.raises(RolloutError, match=r'answered 400 to GET /api/v2/alerts for the matchers a==: "bad matcher format: a=="'):
        alertmanager.firing_alerts(GATE, ["a=="], opener=opener(refused, []))


def test_only_gates_with_matchers_are_read():
    seen = []
    assert alertmanager.read_gates(GATE, {"abort": ["severity=critical"], "pause": []}, opener=opener([], seen)) == {"abort": []}
    assert len(seen) == 1
