"""cluster_validate end to end: nodes registering and turning Ready, AZ coverage, critical pods, cordoned nodes."""

import threading
from datetime import datetime, timezone

import pytest

from sandbox.drive.handle import wait_until

from tests.integration.modules.conftest import DEMO, assert_holds_workload, assert_safe, workload_pods

GROUP = "sandbox-nodes"


def run_module(sandbox, name, args, check=False):
    return sandbox.run_module(name, check=check, module_args=args)


def validate(sandbox, check=False, **args):
    return run_module(sandbox, "cluster_validate", args, check=check)


def instances(sandbox):
    group = sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    return sorted(i["InstanceId"] for i in group["Instances"]), group


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    # speed 4: an instance boots in 10 s and its node is Ready about 4 s later, long enough to watch it happen
    # with the demo shop running, so the invariants checked at the end are about pods that could have been disturbed
    return start_sandbox(nodes=3, azs=3, speed=4, workloads=[DEMO])


def ready_for(sandbox):
    """How long the most recently Ready node has been Ready, by its Ready condition (whole seconds, as the API writes)."""
    moments = [condition.last_transition_time for node in sandbox.core().list_node().items
               for condition in node.status.conditions or [] if condition.type == "Ready" and condition.status == "True"]
    return (datetime.now(timezone.utc) - max(moments)).total_seconds()


def test_the_group_as_it_is_validates(sandbox):
    ids, _group = instances(sandbox)
    wait_until("every node Ready for 3s by its Ready condition", lambda: ready_for(sandbox) >= 3, timeout=30)
    result = validate(sandbox, instance_ids=ids, each_az=True, critical_pods=True, passes=2, interval=1)
    assert result["rc"] == 0, result["output"]
    # the nodes' Ready conditions record that they have been Ready longer than 2 passes 1s apart: one evaluation, no wait
    assert result["ok"] and result["passes_done"] == 2 and result["evaluations"] == 1 and result["held_seconds"] >= 1
    assert sorted(node["instance_id"] for node in result["nodes"].values()) == ids
    assert result["message"] == "valid: 3 node(s) Ready and schedulable in us-east-1a, us-east-1b, us-east-1c; critical pods Ready"


def test_validation_fails_then_passes_as_a_new_node_comes_up(sandbox):
    ids, group = instances(sandbox)
    since = sandbox.now() + 0.01  # after the newest event so far (which may be a request of the previous test)
    sandbox.aws("autoscaling").update_auto_scaling_group(AutoScalingGroupName=GROUP, MaxSize=max(group["MaxSize"], 4),
                                                         DesiredCapacity=4)
    new_ids, _group = instances(sandbox)
    assert len(new_ids) == 4
    waited = {}
    waiter = threading.Thread(target=lambda: waited.update(validate(
        sandbox, instance_ids=new_ids, each_az=True, critical_pods=True, passes=2, interval=1, timeout=120)))
    waiter.start()
    now = validate(sandbox, check=True, instance_ids=new_ids, each_az=True, critical_pods=True)
    waiter.join()

    assert now["rc"] == 0 and not now["ok"] and now["evaluations"] == 1  # check mode: one look, no failure
    fresh = sorted(set(new_ids) - set(ids))[0]
    # not joined yet, or joined and not Ready yet
    unborn = now["missing"] + [now["nodes"][name]["instance_id"] for name in now["not_ready"]]
    assert fresh in unborn, now["message"]

    assert waited["rc"] == 0, waited["output"]
    assert waited["ok"] and waited["passes_done"] == 2 and waited["evaluations"] >= 3
    history = waited["history"]
    assert not history[0]["ok"] and history[-1]["ok"]
    assert any("%s" % fresh in entry["message"] or "not Ready" in entry["message"] for entry in history[:-1])
    assert history[-1]["message"].startswith("valid: 4 node(s) Ready and schedulable")
    assert sandbox.mutating_requests(since=since) == []  # validation only reads


def test_timeout_says_exactly_what_failed(sandbox):
    ids, _group = instances(sandbox)
    result = validate(sandbox, instance_ids=ids + ["i-0000000000000dead"], each_az=True,
                      azs=["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"], interval=1, timeout=3)
    assert result["rc"] != 0 and not result["ok"]
    assert result["missing"] == ["i-0000000000000dead"] and result["azs_without_ready_node"] == ["us-east-1d"]
    # an instance that never registers is EKS's NodeCreationFailure, named with the instance
    assert result["msg"].startswith("NodeCreationFailure: 1 of 5 instance(s) did not become Ready nodes within ")
    assert "(i-0000000000000dead)" in result["msg"]
    assert "1 of 5 instance(s) have no node registered: i-0000000000000dead" in result["msg"]
    assert "no Ready schedulable node in AZ(s) us-east-1d" in result["msg"]


def test_cordoned_nodes_fail_unless_schedulable_is_false(sandbox):
    ids, _group = instances(sandbox)
    core = sandbox.core()
    node = sorted(n.metadata.name for n in core.list_node().items)[0]
    before = assert_holds_workload(sandbox, node)
    core.patch_node(node, {"spec": {"unschedulable": True}})
    try:
        strict = validate(sandbox, instance_ids=ids, interval=1, timeout=2)
        assert strict["rc"] != 0 and strict["unschedulable"] == [node]
        assert "node(s) cordoned: %s" % node in strict["msg"]
        relaxed = validate(sandbox, instance_ids=ids, schedulable=False, interval=1, timeout=2)
        assert relaxed["rc"] == 0 and relaxed["ok"]
        assert workload_pods(sandbox, node) == before  # validation only reads: the pods stay
    finally:
        core.patch_node(node, {"spec": {"unschedulable": None}})


def test_label_selector_with_an_expected_count(sandbox):
    enough = validate(sandbox, label_selector="eks.amazonaws.com/nodegroup=%s" % GROUP, expected_count=4, interval=1)
    assert enough["rc"] == 0 and enough["ok"] and enough["ready_count"] == 4
    short = validate(sandbox, label_selector="eks.amazonaws.com/nodegroup=%s" % GROUP, expected_count=6, interval=1, timeout=2)
    assert short["rc"] != 0
    assert "4 node(s) matching eks.amazonaws.com/nodegroup=%s Ready and schedulable, 6 expected" % GROUP in short["msg"]


def test_bad_input_is_refused_before_any_request(sandbox):
    since = sandbox.now() + 0.01  # after the newest event so far (which may be a request of the previous test)
    result = validate(sandbox, instance_ids=["web-1"])
    assert result["rc"] != 0 and result["msg"] == "instance_ids[0]: 'web-1' is not allowed; use an EC2 instance id (i-...)"
    result = validate(sandbox, label_selector="a=b")
    assert result["rc"] != 0 and "expected_count" in result["msg"]
    requests = [e for e in sandbox.events() if e["kind"] == "k8s.request" and e["t"] >= since
                and str(e.get("client")).endswith("cluster_validate")]
    assert requests == []


def test_invariants_hold(sandbox):
    report = sandbox.report()
    assert_safe(report)
    # validation only reads: the demo's pods were there all along and none was moved or went down
    assert report["evictions"]["pre_existing_pods"] > 0 and report["evictions"]["total"] == 0, report["evictions"]
    assert report["deployments"] and all(d["zero_ready_seconds"] == 0 for d in report["deployments"].values()), \
        report["deployments"]
