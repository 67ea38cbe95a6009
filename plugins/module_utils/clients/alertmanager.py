# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The alerts of an Alertmanager (its API v2, ``GET /api/v2/alerts``), for the alert gates.

One request per gate and read: the gate's matchers go as ``filter`` parameters (Alertmanager ANDs them), with
``active=true&silenced=false&inhibited=false``, so a silenced or inhibited alert never counts. The request is signed
as an Alertmanager that wants it: nothing (``auth: none``), a bearer token, or AWS SigV4 for Amazon Managed Service
for Prometheus (service ``aps``, the run's AWS credentials and region; the URL is the workspace's, ending in
``/alertmanager``). Any answer but 200, or none, is an error naming the URL.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse

from ansible.module_utils.urls import ConnectionError as OpenUrlError, open_url

from ansible_collections.nodeops.rollout.plugins.module_utils.core.choices import ALERTMANAGER_AUTH
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError

API = "/api/v2/alerts"
TIMEOUT_SECONDS = 10
AUTH = ALERTMANAGER_AUTH
SIGV4_SERVICE = "aps"


def alerts_url(url, matchers):
    query = [("active", "true"), ("silenced", "false"), ("inhibited", "false")] + [("filter", matcher) for matcher in matchers]
    return url.rstrip("/") + API + "?" + urllib.parse.urlencode(query)


def _signed_headers(url, credentials, region):
    from botocore.auth import SigV4Auth  # pylint: disable=import-outside-toplevel
    from botocore.awsrequest import AWSRequest  # pylint: disable=import-outside-toplevel
    request = AWSRequest(method="GET", url=url)
    SigV4Auth(credentials, SIGV4_SERVICE, region).add_auth(request)
    return dict(request.headers.items())


def _get(url, headers, timeout):
    return open_url(url, method="GET", headers=headers, timeout=timeout)


def firing_alerts(alertmanager, matchers, credentials=None, region=None, opener=_get):
    """The alerts firing now (active, neither silenced nor inhibited) that match every one of ``matchers``:
    ``[{"name", "labels", "since"}]``. ``alertmanager`` is ``{"url", "auth", "token"}``; ``credentials`` (botocore's)
    and ``region`` sign a ``sigv4`` request."""
    url = alerts_url(alertmanager["url"], matchers)
    headers = {"Accept": "application/json"}
    auth = alertmanager.get("auth") or "none"
    if auth == "bearer":
        headers["Authorization"] = "Bearer %s" % alertmanager.get("token")
    elif auth == "sigv4":
        if credentials is None:
            raise RolloutError("alertmanager: auth sigv4 needs AWS credentials, and the run has none")
        headers.update(_signed_headers(url, credentials, region))
    where = "the Alertmanager at %s" % alertmanager["url"]
    try:
        with opener(url, headers, TIMEOUT_SECONDS) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace").strip()[:300]
        raise RolloutError("%s answered %d to GET %s for the matchers %s: %s" % (
            where, exc.code, API, ", ".join(matchers), detail or exc.reason)) from None
    except (urllib.error.URLError, OpenUrlError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise RolloutError("%s is unreachable (%s); set rolling_update_alertmanager_url to an Alertmanager this host can "
                           "reach" % (where, reason)) from None
    try:
        answer = json.loads(body)
    except ValueError:
        raise RolloutError("%s did not answer GET %s with JSON; is it an Alertmanager (API v2)?" % (where, API)) from None
    return [{"name": (alert.get("labels") or {}).get("alertname") or "(no alertname)", "labels": alert.get("labels") or {},
             "since": alert.get("startsAt")} for alert in answer if isinstance(alert, dict)]


def read_gates(alertmanager, gates, credentials=None, region=None, opener=_get):
    """``{gate: [alerts firing]}`` for each gate (``{"abort": [matchers], "pause": [matchers]}``) that has matchers."""
    return {gate: firing_alerts(alertmanager, matchers, credentials, region, opener) for gate, matchers in gates.items() if matchers}
