# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""clients/kube.py: KubeApi's retry policy: a few attempts on 429/5xx and on a server never reached; an outage of a
server that answered before is waited out for up to unreachable_seconds."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube import PODS_PAGE, ApiException, KubeApi, node_pods


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


# ---- node_pods: the pods of several nodes in as few requests as it takes ---------------------------------------

class Pods:
    """The cluster's pods behind list_pods_page (pages of ``limit`` with a continue token and, without a selector, the
    count left, as the API server answers) and list_node_pods (field selector spec.nodeName); every request logged."""

    def __init__(self, per_node, nodes, expire_after=None):
        self.pods = [{"metadata": {"name": "p-%s-%d" % (node, n)}, "spec": {"nodeName": node}}
                     for node in nodes for n in range(per_node)]
        self.requests = []
        self.expire_after = expire_after

    def list_pods_page(self, limit, token=None):
        self.requests.append("page")
        start = int(token or 0)
        if self.expire_after is not None and start >= self.expire_after:
            raise ApiException(status=410, reason="Expired")
        items = self.pods[start:start + limit]
        meta = {"resourceVersion": "41"}
        if start + limit < len(self.pods):
            meta.update({"continue": str(start + limit), "remainingItemCount": len(self.pods) - start - limit})
        return items, meta

    def list_node_pods(self, node, label_selector=None):  # pylint: disable=unused-argument
        self.requests.append("node " + node)
        return [pod for pod in self.pods if pod["spec"]["nodeName"] == node], "7"


def test_the_pods_of_many_nodes_are_one_snapshot_read_in_pages():
    nodes = ["n%d" % n for n in range(40)]
    cluster = Pods(per_node=30, nodes=nodes)   # 1200 pods: 3 pages, fewer requests than 10 node lists
    pods, versions = node_pods(cluster, nodes[:10] + nodes[:1])
    assert cluster.requests == ["page"] * 3 and PODS_PAGE == 500
    assert sorted(pods) == sorted(nodes[:10]) and all(len(found) == 30 for found in pods.values())
    assert set(versions.values()) == {"41"}   # the first page's resourceVersion: a watch of each node starts there


def test_a_few_nodes_of_a_large_cluster_are_listed_one_by_one_after_the_first_page_says_so():
    nodes = ["n%d" % n for n in range(100)]
    cluster = Pods(per_node=30, nodes=nodes)   # 3000 pods: 6 pages, more than 3 node lists
    pods, versions = node_pods(cluster, ["n1", "n2", "n3"])
    assert cluster.requests == ["page", "node n1", "node n2", "node n3"]
    assert [len(pods[name]) for name in ("n1", "n2", "n3")] == [30, 30, 30] and set(versions.values()) == {"7"}


@pytest.mark.parametrize("case", ["one node", "label selector", "expired"])
def test_one_node_a_label_selector_or_an_expired_snapshot_list_node_by_node(case):
    nodes = ["n%d" % n for n in range(40)]
    cluster = Pods(per_node=30, nodes=nodes, expire_after=500 if case == "expired" else None)
    names = ["n0"] if case == "one node" else nodes[:10]
    pods = node_pods(cluster, names, label_selector="app=web" if case == "label selector" else None, workers=4)[0]
    assert sorted(request for request in cluster.requests if request != "page") == sorted("node " + name for name in names)
    assert cluster.requests.count("page") == {"one node": 0, "label selector": 0, "expired": 2}[case]
    assert all(len(pods[name]) == 30 for name in names)
