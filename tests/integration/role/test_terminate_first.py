"""The strategy terminate_first, for the pools that cannot surge: the group never runs more instances than its size,
max_unavailable outdated nodes are drained, terminated and replaced by the group at a time, and the group keeps its
size less max_unavailable Ready schedulable nodes - with the demo's workloads behind a target group, no budget
violated, no pod killed without eviction, no Deployment without a Ready pod, no target cut, each pod moved once. The
plan prices it beside the surges. A surge given with it is refused before anything changes."""

import json
import os

import pytest

from sandbox.drive.convergence import members, problems, sizes
from sandbox.drive.handle import promised_floor
from tests.integration.controls import GROUP, QUICK, assert_invariants, assert_refused_before_any_change
from tests.integration.load_balancers import assert_left_before_terminated, attach_target_group

pytestmark = pytest.mark.reference   # also on the real kube-apiserver and scheduler (scripts/test.sh reference)

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")
NODES, AZS = 4, 2
DELAY = 60   # simulated seconds of deregistration delay: 3 s of wall time


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[DEMO])


def test_a_surge_given_with_terminate_first_is_refused_before_any_change(sandbox, tmp_path):
    assert_refused_before_any_change(sandbox, tmp_path, (
        "rolling_update_max_surge: '2' is not allowed with rolling_update_strategy terminate_first, which launches no "
        "extra instance; leave it unset or 0, or use rolling_update_strategy surge"),
        extra=QUICK + ["rolling_update_strategy=terminate_first", "rolling_update_max_surge=2"])


def test_the_plan_shows_terminate_first_priced_beside_the_surges_and_changes_nothing(sandbox, tmp_path):
    since = sandbox.now()
    rc, out = sandbox.run_role_playbook(tmp_path, check=True, extra=QUICK + ["rolling_update_strategy=terminate_first"])
    assert rc == 0, out[-3000:]
    # the plan's lines, as the debug task prints its list: each quoted, with a comma
    table = [line.strip().rstrip(",").strip('"').strip() for line in out.splitlines() if "terminate first" in line or "fewest Ready" in line]
    # the surge priced: terminate first is the configured one, a node out at a time leaves 3 of 4 Ready
    assert any(line.startswith("0 (configured, terminate first)") and line.endswith("3 of 4") for line in table), table
    assert sandbox.mutating_requests(since=since) == []


@pytest.fixture(scope="module")
def rolled(sandbox, tmp_path_factory):
    attach_target_group(sandbox, GROUP, DELAY)
    directory = tmp_path_factory.mktemp("terminate-first")
    report = directory / "result.json"
    original, old, since = sizes(sandbox, GROUP), members(sandbox), sandbox.now()
    rc, out = sandbox.run_role_playbook(directory, report=report, extra=[
        "rolling_update_strategy=terminate_first", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s"])
    return {"rc": rc, "out": out, "result": json.loads(report.read_text()) if report.exists() else {},
            "original": original, "old": old, "since": since}


def test_terminate_first_replaces_every_node_without_an_extra_instance(sandbox, rolled):
    assert rolled["rc"] == 0, rolled["out"][-5000:]
    group = rolled["result"]["node_groups"][0]
    assert group["status"] == "replaced" and group["nodes_replaced"] == NODES, group
    # no extra instance, ever: the group's desired and max sizes never rose above its size, and it launched exactly
    # one instance for each it terminated
    # (the sandbox records each change of the sizes from its start; a rollout that changes none adds no entry)
    history = sandbox.report()["asg_size_history"][GROUP]
    assert history and all(entry["desired"] <= NODES and entry["max"] <= rolled["original"][1] for entry in history), history
    launched = [e for e in sandbox.events() if e["kind"] == "instance.launched" and e["t"] >= rolled["since"]]
    assert len(launched) == NODES, launched
    # a canary of one, then max_unavailable (1) at a time
    assert [len(batch["instance_ids"]) for batch in group["batches"]] == [1] * NODES, group["batches"]
    assert problems(sandbox, rolled["original"], 2) == []


def test_terminate_first_keeps_the_floor_and_every_invariant(sandbox, rolled):
    assert rolled["rc"] == 0, rolled["out"][-3000:]
    report = sandbox.report()
    figures = assert_invariants(report, NODES, 1)
    # the floor, reached: a node at a time is out, none more
    assert figures["min_ready_schedulable_nodes"] == promised_floor(NODES, 1), figures
    assert figures["max_evictions_per_pod"] <= 1, figures
    assert_left_before_terminated(sandbox, rolled["old"], size=NODES, max_unavailable=1)


def test_the_plan_prices_terminate_first_beside_the_surges(rolled):
    assert rolled["rc"] == 0, rolled["out"][-3000:]
    choices = rolled["result"]["node_groups"][0]["plan"]["surge_choices"]
    first = choices[0]
    assert (first["surge"], first["choices"], first["extra_instance_minutes"]) == (0, ["configured", "terminate first"], 0.0), choices
    # the fewest Ready it keeps is the floor; EKS's default surge (twice the 2 AZs) keeps the group's size
    assert first["fewest_ready"] == NODES - 1 and first["wave_count"] == NODES, first
    assert [choice["fewest_ready"] for choice in choices[1:]] == [NODES] * (len(choices) - 1), choices
    assert all(choice["extra_instance_minutes"] > 0 for choice in choices[1:]), choices
