# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout/plan_diff.py: what --check --diff shows of a planned rollout."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.plan_diff import plan_diff, taint_text


def group(outdated=("i-1", "i-2"), state=None, surge=2, method="scale", taints=None):
    instances = []
    for index, instance_id in enumerate(("i-1", "i-2", "i-3")):
        node = {"name": "node-%d" % (index + 1), "ready": True, "schedulable": index != 1,
                "taints": list(taints or []) if index == 0 else []}
        instances.append({"instance_id": instance_id, "detached": False, "node": node})
    return {"name": "web", "min_size": 3, "max_size": 4, "desired_capacity": 3, "state": state, "surge_method": method,
            "launch_template": {"version": "7", "image_id": "ami-old"}, "instances": instances,
            "plan": {"outdated": [{"instance_id": instance_id} for instance_id in outdated], "surge": surge,
                     "taint_effect": "NoSchedule", "target": {"version": 8, "image_id": "ami-new"}}}


def test_the_group_shows_its_version_its_sizes_while_surged_and_the_instances_that_go():
    entry = plan_diff(group())[0]
    assert entry["before"] == {"launch_template_version": "7", "image_id": "ami-old", "min_size": 3, "max_size": 4,
                               "desired_capacity": 3, "instances": ["i-1", "i-2", "i-3"]}
    assert entry["after"] == {"launch_template_version": "8", "image_id": "ami-new", "min_size": 3, "max_size": 6,
                              "desired_capacity": 5, "instances": ["i-3", "2 new instance(s) at version 8"]}
    assert entry["before_header"] == "Auto Scaling group web" and "restored at the end" in entry["after_header"]


def test_each_outdated_node_is_tainted_and_cordoned_and_an_up_to_date_one_is_not_shown():
    nodes = plan_diff(group(taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]))[1:]
    assert [entry["before_header"] for entry in nodes] == ["node node-1", "node node-2"]
    assert nodes[0]["before"] == {"unschedulable": False, "taints": ["dedicated=db:NoSchedule"]}
    assert nodes[0]["after"] == {"unschedulable": True, "taints": ["dedicated=db:NoSchedule", "nodeops.rollout/outdated=true:NoSchedule"]}
    # already cordoned by someone else: the cordon shows as it is
    assert nodes[1]["before"]["unschedulable"] is True and nodes[1]["after"]["unschedulable"] is True


def test_a_recorded_rollout_or_a_detach_surge_leaves_the_sizes_as_they_are():
    for entry in (plan_diff(group(state={"surge": 2}))[0], plan_diff(group(method="detach"))[0]):
        assert (entry["after"]["max_size"], entry["after"]["desired_capacity"]) == (4, 3)


def test_nothing_outdated_is_no_diff_and_a_taint_reads_as_kubectl_writes_it():
    assert plan_diff(group(outdated=())) == []
    assert taint_text({"key": "k", "value": None, "effect": "NoExecute"}) == "k:NoExecute"
    assert plan_diff(group(), taint_key="example.com/old")[1]["after"]["taints"] == ["example.com/old=true:NoSchedule"]
