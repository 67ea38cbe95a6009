"""The rollout's state fits AWS's 50 tags per group, end to end.

One sandbox (3 nodes, the demo shop) whose AWS side refuses a 51st group tag as AWS does (LimitExceeded). A group with
48 tags of its own is refused before any change, naming its tag count and the limit (its state takes two and an
operator's pause request must still fit); with 47 it is rolled, its state in two tags. Then a rollout recorded in the
previous release's format (one tag per field) is resumed by the playbook and moved to the two tags at its first write.
The invariant report holds over all of it.
"""

import os

import pytest

from tests.integration.group_states import GROUP, PREFIX, assert_invariants, group_of, playbook

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")
LEGACY_KEYS = {"rollout_id": "rollout-id", "method": "method", "original_min_size": "original-min",
               "original_max_size": "original-max", "original_desired_capacity": "original-desired", "surge": "surge",
               "surge_owed": "surge-owed", "surged_max_size": "surged-max", "target_launch_template": "target-launch-template",
               "target_version": "target-version", "started_at": "started-at"}


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=3, azs=3, speed=20, workloads=[DEMO])


def tags_of(sandbox):
    return {tag["Key"]: tag["Value"] for tag in group_of(sandbox)["Tags"]}


def set_tags(sandbox, tags):
    sandbox.aws("autoscaling").create_or_update_tags(Tags=[
        {"ResourceId": GROUP, "ResourceType": "auto-scaling-group", "Key": key, "Value": value, "PropagateAtLaunch": False}
        for key, value in tags.items()])


def delete_tags(sandbox, keys):
    sandbox.aws("autoscaling").delete_tags(Tags=[{"ResourceId": GROUP, "ResourceType": "auto-scaling-group", "Key": key} for key in keys])


def assert_rolled_and_clean(sandbox, version, own_tags):
    group = group_of(sandbox)
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == (3, 3, 3)
    assert {instance["LaunchTemplate"]["Version"] for instance in group["Instances"]} == {str(version)}
    assert group["SuspendedProcesses"] == []
    assert tags_of(sandbox) == own_tags
    for node in sandbox.core().list_node().items:
        assert not node.spec.unschedulable, node.metadata.name
        assert not [taint for taint in node.spec.taints or [] if taint.key.startswith(PREFIX)], node.metadata.name


def test_a_group_without_room_for_two_tags_is_refused_before_any_change_and_with_room_it_is_rolled(sandbox, tmp_path):
    own = tags_of(sandbox)
    filler = {"team-tag-%02d" % index: "x" for index in range(48 - len(own))}
    set_tags(sandbox, filler)
    assert len(tags_of(sandbox)) == 48
    since = sandbox.now()
    rc, out, _result = playbook(sandbox, tmp_path, "new")
    assert rc != 0
    assert ("Auto Scaling group 'sandbox-nodes' has 48 tags; a rollout records its state in 2 more (nodeops.rollout/state, "
            "nodeops.rollout/progress), keeps room for a pause request (nodeops.rollout/pause), and a group takes at most 50") \
        in out, out[-3000:]
    assert sandbox.mutating_requests(since=since) == []

    # 47 tags of its own: the two state tags fit, and a pause request would (the previous release's 12 did not: its
    # first write was LimitExceeded)
    delete_tags(sandbox, ["team-tag-00"])
    own_47 = tags_of(sandbox)
    assert len(own_47) == 47
    rc, out, result = playbook(sandbox, tmp_path, "new")
    assert rc == 0, out[-4000:]
    assert result["node_groups"][0]["status"] == "replaced"
    assert_rolled_and_clean(sandbox, 2, own_47)
    # the state was written as the two tags and nothing else
    writes = [e for e in sandbox.events() if e["kind"] == "aws.request" and e.get("action") == "CreateOrUpdateTags"
              and str(e.get("client") or "").startswith("nodeops.rollout") and e["t"] >= since]
    assert writes and all(e["status"] == 200 for e in writes)
    assert_invariants(sandbox, 3, name="state-tags-room")
    delete_tags(sandbox, [key for key in own_47 if key.startswith("team-tag-")])


def test_a_rollout_recorded_by_the_previous_release_is_resumed_and_moved_to_the_two_tags(sandbox, tmp_path):
    own = tags_of(sandbox)
    assert not [key for key in own if key.startswith(PREFIX)]
    # a rollout to the old AMI started, as the previous release recorded it: one tag per field
    pointed = sandbox.run_module("launch_template_version", asg_name=GROUP, image_id=sandbox.state["amis"]["old"])
    assert pointed["rc"] == 0, pointed["output"][-2000:]
    surged = sandbox.run_module("asg_surge", name=GROUP, state="surged", surge=3, wait=True)
    assert surged["rc"] == 0, surged["output"][-2000:]
    state = surged["rollout_state"]
    delete_tags(sandbox, [PREFIX + "state", PREFIX + "progress"])
    legacy = {PREFIX + tag: str(state[field]) for field, tag in LEGACY_KEYS.items()}
    legacy[PREFIX + "suspended-processes"] = ",".join(state["suspended_processes"])
    set_tags(sandbox, legacy)
    read = sandbox.run_module("node_group_info", name=GROUP)["node_groups"][0]["state"]
    assert read == dict(state, previous_version=None)   # which the previous release did not record

    since = sandbox.now()
    rc, out, result = playbook(sandbox, tmp_path, "old")
    assert rc == 0, out[-4000:]
    group = result["node_groups"][0]
    assert group["status"] == "replaced" and group["plan"]["resumed"] is True, group
    # the first termination that paid surge back wrote the two tags and deleted the previous release's
    deletes = [e for e in sandbox.events() if e["kind"] == "aws.request" and e.get("action") == "DeleteTags" and e["t"] >= since
               and "instance_terminate" in str(e.get("client"))]
    assert len(deletes) == 1 and deletes[0]["status"] == 200, deletes
    assert_rolled_and_clean(sandbox, 3, own)
    assert_invariants(sandbox, 3, name="state-tags-legacy-resume")
