"""The reference backend's reading of kube-apiserver's audit log (sandbox/reference/observer.py), on written
audit lines: how a pod's end is explained, and which requests become ``k8s.request`` events. Needs no control plane."""

import json

from sandbox.clock import Clock
from sandbox.events import EventLog
from sandbox.reference import observer
from sandbox.reference.observer import AuditTail

KCM = "kube-controller-manager/v1.34.4 (linux/amd64) kubernetes/abcdef0/%s"
MODULE = "nodeops.rollout/1.0.0 node_drain (ansible)"


def line(stage, verb, name, user_agent, subresource=None, code=None, uri=""):
    entry = {"stage": stage, "verb": verb, "userAgent": user_agent, "requestURI": uri,
             "objectRef": {"resource": "pods", "namespace": "shop", "name": name}}
    if subresource:
        entry["objectRef"]["subresource"] = subresource
    if code is not None:
        entry["responseStatus"] = {"code": code}
    return json.dumps(entry) + "\n"


def tail_with(tmp_path, *lines):
    path = tmp_path / "audit.log"
    path.write_text("".join(lines))
    events = EventLog(Clock(10.0))
    tail = AuditTail(str(path), events)
    tail.catch_up()
    return tail, events


def test_an_eviction_explains_the_end_and_a_refused_one_explains_nothing(tmp_path):
    tail, events = tail_with(
        tmp_path,
        line("RequestReceived", "create", "web-1", MODULE, "eviction"),
        line("ResponseComplete", "create", "web-1", MODULE, "eviction", 201),
        line("RequestReceived", "create", "web-2", MODULE, "eviction"),
        line("ResponseComplete", "create", "web-2", MODULE, "eviction", 429))
    assert tail.cause("shop", "web-1") == {"how": "evicted", "client": "nodeops.rollout/1.0.0 node_drain"}
    assert tail.cause("shop", "web-2")["how"] == "killed"   # refused: whatever ends web-2 later is not this request
    requests = events.events("k8s.request")
    assert [(e["verb"], e["code"], e["mutating"]) for e in requests] == [("evict", 201, True), ("evict", 429, True)]


def test_the_controller_managers_deletions_are_named_after_the_controller(tmp_path):
    tail, events = tail_with(
        tmp_path,
        line("RequestReceived", "delete", "orphan", KCM % "pod-garbage-collector"),
        line("RequestReceived", "delete", "old", KCM % "replicaset-controller"),
        line("ResponseComplete", "delete", "old", KCM % "replicaset-controller", code=200))
    assert tail.cause("shop", "orphan") == {"how": "killed", "reason": "node-gone",
                                            "client": "kube-controller-manager/pod-garbage-collector"}
    assert tail.cause("shop", "old") == {"how": "deleted", "reason": "scale-down",
                                         "client": "kube-controller-manager/replicaset-controller"}
    assert events.events("k8s.request") == []   # the control plane's own requests are not a client's


def test_a_delete_by_a_client_is_a_deletion_and_a_dry_run_changes_nothing(tmp_path):
    tail, events = tail_with(
        tmp_path,
        line("RequestReceived", "delete", "db-0", "kubectl/v1.32.0 (linux/amd64)"),
        line("ResponseComplete", "delete", "db-0", "kubectl/v1.32.0 (linux/amd64)", code=200),
        line("ResponseComplete", "patch", "db-1", MODULE, code=200, uri="/api/v1/namespaces/shop/pods/db-1?dryRun=All"))
    assert tail.cause("shop", "db-0") == {"how": "deleted", "client": "kubectl/v1.32.0"}
    patch = events.events("k8s.request")[-1]
    assert patch["dry_run"] and not patch["mutating"]


def test_a_request_long_past_explains_nothing(tmp_path, monkeypatch):
    tail, _events = tail_with(tmp_path, line("RequestReceived", "create", "web-3", MODULE, "eviction"))
    monkeypatch.setattr(observer, "CAUSE_SECONDS", -1.0)
    assert tail.cause("shop", "web-3") == {"how": "killed", "reason": "unexplained", "client": None}


def test_a_line_written_in_two_parts_is_read_once_whole(tmp_path):
    path = tmp_path / "audit.log"
    whole = line("ResponseComplete", "get", "web-4", MODULE, code=200)
    path.write_text(whole[:20])
    events = EventLog(Clock(10.0))
    tail = AuditTail(str(path), events)
    tail.catch_up()
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(whole[20:])
    tail.catch_up()
    assert [(e["verb"], e["name"]) for e in events.events("k8s.request")] == [("get", "web-4")]


def test_an_access_review_is_a_create_that_changes_nothing(tmp_path):
    review = {"stage": "ResponseComplete", "verb": "create", "userAgent": "nodeops.rollout/1.0.0 node_group_info (ansible)",
              "requestURI": "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "responseStatus": {"code": 201},
              "objectRef": {"resource": "selfsubjectaccessreviews", "apiGroup": "authorization.k8s.io", "apiVersion": "v1"}}
    _tail, events = tail_with(tmp_path, json.dumps(review) + "\n",
                              line("ResponseComplete", "create", "web-5", MODULE, "eviction", 201))
    requests = events.events("k8s.request")
    assert [(e["resource"], e["verb"], e["mutating"]) for e in requests] == [
        ("selfsubjectaccessreviews", "create", False), ("pods", "evict", True)]
