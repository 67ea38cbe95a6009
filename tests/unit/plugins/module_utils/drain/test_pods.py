# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""drain/pods.py: what draining does with each pod."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.drain.pods import classify_pod
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import assert_plan_error, pod


# ---------------------------------------------------------------------------------------------------------
# Drain classification
# ---------------------------------------------------------------------------------------------------------

def classify(one, **options):
    return classify_pod(one, options)


def test_classify_each_kind_of_pod():
    assert classify(pod("ds", owner=("DaemonSet", "fluent-bit")))["action"] == "skip"
    assert classify(pod("ds", owner=("DaemonSet", "fluent-bit")))["reason"] == "managed by DaemonSet fluent-bit"
    mirror = classify(pod("kube-proxy", owner=("Node", "node-1"), annotations={"kubernetes.io/config.mirror": "abc"}))
    assert mirror["action"] == "skip" and "mirror pod" in mirror["reason"]
    terminating = classify(pod("leaving", deleting=True))
    assert (terminating["action"], terminating["reason"]) == ("skip", "already terminating")
    for phase in ("Succeeded", "Failed"):
        done = classify(pod("job-1", owner=("Job", "j"), phase=phase, ready=False))
        assert done["action"] == "delete" and "holds no disruption budget" in done["reason"] and phase in done["reason"]
    assert classify(pod("web-1"))["action"] == "evict"
    assert classify(pod("db-0", owner=("StatefulSet", "db")))["action"] == "evict"


def test_classify_emptydir():
    volumes = [{"name": "cache", "emptyDir": {}}]
    blocked = classify(pod("web-1", volumes=volumes))
    assert (blocked["action"], blocked["reason"]) == ("block", "uses emptyDir; set delete_emptydir_data")
    assert blocked["blocks"] == [{"kind": "emptydir", "reason": "uses emptyDir; set delete_emptydir_data"}]
    assert classify(pod("web-1", volumes=volumes), delete_emptydir_data=True)["action"] == "evict"
    assert classify(pod("web-1", volumes=[{"name": "cfg", "configMap": {"name": "x"}}]))["action"] == "evict"
    # A finished pod's emptyDir data is of no use to anyone.
    assert classify(pod("job", owner=None, phase="Succeeded", volumes=volumes))["action"] == "delete"


def test_classify_naked_pods():
    naked = classify(pod("debug", owner=None))
    assert (naked["action"], naked["reason"]) == ("block", "not managed by a controller; set force")
    assert classify(pod("debug", owner=None), force=True)["action"] == "evict"
    # An owner that is not the controller does not manage the pod.
    assert classify(pod("adopted", controller=False))["action"] == "block"


@pytest.mark.parametrize("annotations, blocked", [
    ({"karpenter.sh/do-not-disrupt": "true"}, True),
    ({"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}, True),
    ({"nodeops.rollout/do-not-evict": "true"}, True),
    ({"nodeops.rollout/do-not-evict": "True"}, True),
    ({"karpenter.sh/do-not-disrupt": "false"}, False),
    ({"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}, False),
])
def test_classify_do_not_disrupt_annotations(annotations, blocked):
    result = classify(pod("web-1", annotations=annotations))
    assert (result["action"] == "block") is blocked
    if blocked:
        assert result["blocks"][0]["kind"] == "do_not_disrupt"
        assert list(annotations)[0] in result["reason"] and result["reason"].endswith("set force")
        assert classify(pod("web-1", annotations=annotations), force=True)["action"] == "evict"


def test_classify_reports_every_cause_of_a_block():
    result = classify(pod("x", owner=None, volumes=[{"name": "d", "emptyDir": {"medium": "Memory"}}],
                          annotations={"karpenter.sh/do-not-disrupt": "true"}))
    assert [block["kind"] for block in result["blocks"]] == ["emptydir", "naked_pod", "do_not_disrupt"]
    assert result["reason"].startswith("uses emptyDir; set delete_emptydir_data, and not managed by a controller; set force")


def test_classify_disable_eviction_deletes_instead():
    result = classify(pod("web-1"), disable_eviction=True)
    assert result["action"] == "delete" and "PodDisruptionBudgets are not consulted" in result["reason"]
    # Options that block still apply.
    assert classify(pod("debug", owner=None), disable_eviction=True)["action"] == "block"


def test_classify_names_the_pod_and_its_node():
    result = classify(pod("c", namespace="kube-system", node="node-1"), pod_selector="app=web")
    assert result["pod"] == "kube-system/c" and result["namespace"] == "kube-system" and result["name"] == "c"
    assert result["node"] == "node-1"


@pytest.mark.parametrize("options, field", [
    ({"force": "yes"}, "options.force"), ({"delete_emptydir_data": 1}, "options.delete_emptydir_data"),
    ({"disable_eviction": "true"}, "options.disable_eviction"), ({"taint_effect": "NoEntry"}, "options.taint_effect"),
    ("force", "options"),
])
def test_drain_options_are_checked(options, field):
    assert_plan_error(lambda: classify_pod(pod("a"), options), field, "is not allowed")
