"""``--diff`` (AWX's "Show Changes"): the upgrade runs with it as without it, and each change it makes is shown; with
``--check --diff`` the plan shows what the rollout would change - the group's sizes and launch template version, the
taints and cordons of its outdated nodes, the instances that would go - and still changes nothing."""

import os
import re

import pytest

from tests.integration.group_states import FAST, GROUP, assert_invariants, assert_nothing_of_ours_left, group_of, sizes

NODES = 3


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=3, speed=20, workloads=[os.path.join("sandbox", "workloads", "demo.yaml")])


def run(sandbox, tmp_path, check=False):
    return sandbox.run_role_playbook(tmp_path, extra=list(FAST), check=check, diff=True,
                                     node_groups=[{"name": GROUP, "image_id": sandbox.state["amis"]["new"]}])


def instance_ids(sandbox):
    return sorted(instance["InstanceId"] for instance in group_of(sandbox)["Instances"])


def template_version(sandbox):
    group = group_of(sandbox)
    spec = group.get("LaunchTemplate") or group["MixedInstancesPolicy"]["LaunchTemplate"]["LaunchTemplateSpecification"]
    return spec["Version"]


def diff_lines(out):
    """The lines the default callback's unified diffs add and remove, as ``(sign, text)``: ``text`` without its
    indentation and trailing comma (the callback prints a dict as indented JSON)."""
    return [(line[0], line[1:].strip().rstrip(",")) for line in out.splitlines() if re.match(r"^[-+](?![-+]{2} )", line)]


def test_check_diff_shows_what_the_rollout_would_change_and_changes_nothing(sandbox, tmp_path):
    before = (sizes(sandbox), instance_ids(sandbox), template_version(sandbox))
    since = sandbox.now()
    rc, out = run(sandbox, tmp_path, check=True)
    assert rc == 0, out[-4000:]
    assert sandbox.mutating_requests(since=since) == [], out[-3000:]
    assert (sizes(sandbox), instance_ids(sandbox), template_version(sandbox)) == before
    lines = diff_lines(out)
    # the group: its launch template version and the surged sizes
    assert "before: Auto Scaling group %s" % GROUP in out and "after: Auto Scaling group %s" % GROUP in out, out[-4000:]
    assert ("-", '"launch_template_version": "%s"' % before[2]) in lines, lines
    assert ("+", '"launch_template_version": "%d"' % (int(before[2]) + 1)) in lines, lines
    assert ("-", '"max_size": %d' % NODES) in lines and ("+", '"max_size": %d' % (NODES + NODES)) in lines, lines
    assert ("-", '"desired_capacity": %d' % NODES) in lines and ("+", '"desired_capacity": %d' % (NODES + NODES)) in lines, lines
    # every instance of the group goes, replaced by as many new ones
    for instance_id in before[1]:
        assert ("-", '"%s"' % instance_id) in lines, (instance_id, lines)
    assert ("+", '"%d new instance(s) at version %d"' % (NODES, int(before[2]) + 1)) in lines, lines
    # each outdated node: tainted and cordoned
    for node in sandbox.core().list_node().items:
        assert "before: node %s" % node.metadata.name in out, (node.metadata.name, out[-4000:])
    assert lines.count(("-", '"unschedulable": false')) >= NODES and lines.count(("+", '"unschedulable": true')) >= NODES, lines
    assert lines.count(("+", '"nodeops.rollout/outdated=true:NoSchedule"')) == NODES, lines
    assert_invariants(sandbox, NODES)


def test_the_upgrade_with_diff_converges_and_shows_each_drain(sandbox, tmp_path):
    old = instance_ids(sandbox)
    rc, out = run(sandbox, tmp_path)
    assert rc == 0, out[-4000:]
    # the group rolled: every old instance replaced, the sizes restored, nothing of the rollout left
    assert not set(old) & set(instance_ids(sandbox)), out[-3000:]
    assert sizes(sandbox) == (NODES, NODES, NODES)
    assert_nothing_of_ours_left(sandbox)
    # each drain's diff: its node cordoned and its workload pods gone
    lines = diff_lines(out)
    assert lines.count(("+", '"unschedulable": true')) >= NODES, lines
    assert any(sign == "-" and text.startswith('"shop/') for sign, text in lines), lines
    # each termination's diff: the old instances leave the group
    for instance_id in old:
        assert ("-", '"%s"' % instance_id) in lines, (instance_id, lines)
    assert_invariants(sandbox, NODES)
