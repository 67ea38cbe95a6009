# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Builders of instances, pods and budgets for the tests of the pure rollout and drain layers."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError


TARGET = {"launch_template_id": "lt-new", "version": 5}
BASE_TIME = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


def instance(instance_id, az="eu-west-1a", version="4", template="lt-new", state="InService", minutes=0,
             node=True, annotations=None, tags=None, image="ami-old"):
    node_summary = None
    if node:
        node_summary = {"name": "node-" + instance_id, "ready": True, "schedulable": True, "taints": [],
                        "labels": {}, "annotations": annotations or {}}
    return {
        "instance_id": instance_id, "az": az, "lifecycle_state": state, "health_status": "Healthy",
        "launch_template": None if template is None else {"id": template, "name": "workers", "version": version},
        "image_id": image, "launch_time": (BASE_TIME + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tags": tags or {}, "node": node_summary,
    }


def pod(name, namespace="default", owner=("ReplicaSet", "web-abc"), labels=None, ready=True, phase="Running",
        node="node-1", volumes=None, annotations=None, tolerations=None, deleting=False, controller=True):
    metadata = {"name": name, "namespace": namespace, "labels": labels if labels is not None else {"app": "web"}}
    if owner:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": "u-" + owner[1],
                                        "controller": controller}]
    if annotations:
        metadata["annotations"] = annotations
    if deleting:
        metadata["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    spec = {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}
    if volumes:
        spec["volumes"] = volumes
    if tolerations:
        spec["tolerations"] = tolerations
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def pdb(name, selector=None, min_available=None, max_unavailable=None, namespace="default", null_selector=False, **extra):
    spec = {}
    if not null_selector:
        spec["selector"] = {"matchLabels": {"app": "web"}} if selector is None else selector
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    spec.update(extra.get("spec_extra", {}))
    body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": namespace},
            "spec": spec}
    if "status" in extra:
        body["status"] = extra["status"]
    return body


def assert_plan_error(call, field, *fragments):
    with pytest.raises(PlanError) as caught:
        call()
    message = str(caught.value)
    assert message.startswith(field + ":"), message
    for fragment in fragments:
        assert fragment in message, message
    return message
