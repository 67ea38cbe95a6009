"""A blocking pod holds the rollout (rolling_update_blocking_pods, kured's blockingPodSelector): while a pod the selector
selects runs - a backup here - no step cordons, drains or terminates; the surge is not held. Once the pod has ended the
rollout goes on and finishes, the progress line saying which pod held the step and how long, with the demo's workloads,
no budget violated, no pod killed without eviction, no Deployment without a Ready pod, the floor kept. A selector that
does not parse is refused before any change."""

import json
import os
import time

import pytest

from sandbox.drive.convergence import problems, sizes
from tests.integration.controls import GROUP, QUICK, assert_invariants, assert_refused_before_any_change, wait_for

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")
NODES, AZS = 4, 2
# The backup's pod carries app=backup while it runs; "it ends" when its Deployment rolls to a pod without that label (a
# rolling update: the new pod Ready before the old one goes, so the workload itself never lacks a Ready pod).
BACKUP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: backup, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {name: backup}}
  template:
    metadata: {labels: {name: backup, app: backup}}
    spec:
      containers: [{name: backup, image: registry.example/backup:1}]
"""
DONE = {"spec": {"template": {"metadata": {"labels": {"name": "backup", "app": "idle"}}}}}
HELD = {"rolling_update_blocking_pods": ["app=backup"]}


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[DEMO])


def test_a_selector_that_does_not_parse_is_refused_before_any_change(sandbox, tmp_path):
    assert_refused_before_any_change(sandbox, tmp_path, "rolling_update_blocking_pods[0]: 'app in ()' is not allowed; use a label selector "
                                     "such as app=backup", extra=QUICK, host_vars={"rolling_update_blocking_pods": ["app in ()"]})


@pytest.fixture(scope="module")
def held(sandbox, tmp_path_factory):
    sandbox.apply(BACKUP)
    wait_for(lambda: (sandbox.apps().read_namespaced_deployment("backup", "shop").status.ready_replicas or 0) == 1, 120, "Ready backup pod")
    directory = tmp_path_factory.mktemp("blocking")
    report, output = directory / "result.json", directory / "run.log"
    original, since = sizes(sandbox, GROUP), sandbox.now()
    run = sandbox.start_role_playbook(directory, str(output), extra=list(QUICK), report=report, host_vars=HELD)
    try:
        # the first step is being decided: held, it waits inside rollout_step while the backup runs
        wait_for(lambda: "| step 1 | decide" in output.read_text(), 300, "first step", run)
        time.sleep(6)
        during = [event for event in sandbox.events() if event["t"] > since and event["kind"] in ("node.cordoned", "pod.terminating",
                                                                                                  "instance.terminated")]
        ended = sandbox.now()
        sandbox.apps().patch_namespaced_deployment("backup", "shop", DONE)
        rc = run.wait(timeout=900)
    finally:
        if run.poll() is None:
            run.kill()
    return {"rc": rc, "out": output.read_text(), "result": json.loads(report.read_text()) if report.exists() else {},
            "during": during, "ended": ended, "since": since, "original": original}


def test_no_node_is_cordoned_drained_or_terminated_while_the_backup_runs(held):
    assert held["rc"] == 0, held["out"][-5000:]
    # until the backup ended, no cordon, no pod leaving, no termination
    assert held["during"] == [], held["during"]


def test_once_the_backup_ended_the_rollout_finishes_and_says_what_held_it(sandbox, held):
    assert held["rc"] == 0, held["out"][-5000:]
    group = held["result"]["node_groups"][0]
    assert group["status"] == "replaced" and group["nodes_replaced"] == NODES, group
    first = group["steps"][0]
    assert any("to end (rolling_update_blocking_pods app=backup)" in text and "shop/backup-" in text for text in first["waited_for"]), first
    assert "held " in held["out"] and " by shop/backup-" in held["out"], held["out"][-3000:]
    # the first cordon came after the backup ended
    cordons = [event for event in sandbox.events() if event["t"] > held["since"] and event["kind"] == "node.cordoned"]
    assert cordons and min(event["t"] for event in cordons) > held["ended"], (cordons[:2], held["ended"])
    assert problems(sandbox, held["original"], 2) == []


def test_the_held_rollout_keeps_every_invariant(sandbox, held):
    assert held["rc"] == 0, held["out"][-3000:]
    figures = assert_invariants(sandbox.report(), NODES, 1)
    assert figures["max_evictions_per_pod"] <= 1, figures
