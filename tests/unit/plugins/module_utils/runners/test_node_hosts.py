# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""node_hosts: the node groups' instances as inventory hosts - outdated first, alternating AZs - and the plugin's
node_groups checked as the role checks rolling_update_node_groups."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.inventory.nodes import InventoryModule
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.node_hosts import (
    check_host_filters,
    check_node_groups,
    filter_hosts,
    group_name,
    host_entries,
)

TARGET = {"launch_template_id": "lt-1", "version": 2, "image_id": "ami-0000000000000new"}


def instance(number, az, version, node=True, launched="2026-11-25T07:00:%02dZ"):
    return {"instance_id": "i-%d" % number, "az": az, "lifecycle_state": "InService", "image_id": "ami-x",
            "launch_template": {"id": "lt-1", "name": "workers", "version": str(version)}, "launch_time": launched % number,
            "tags": {}, "node": {"name": "node-%d" % number, "ready": True, "schedulable": True, "taints": [], "labels": {},
                                 "annotations": {}} if node else None}


def test_outdated_hosts_come_first_alternating_azs_with_what_a_host_needs():
    records = [instance(1, "a", 1), instance(2, "a", 1), instance(3, "a", 1), instance(4, "b", 1), instance(5, "c", 2),
               instance(6, "b", 1, node=False)]
    entries = host_entries({"name": "workers"}, records, TARGET)
    assert [entry["host"] for entry in entries] == ["node-1", "node-4", "node-2", "i-6", "node-3", "node-5"]
    first = entries[0]["vars"]
    assert first == {"node_name": "node-1", "instance_id": "i-1", "availability_zone": "a", "node_group": "workers",
                     "launch_template_id": "lt-1", "launch_template_version": "1", "image_id": "ami-x",
                     "lifecycle_state": "InService", "ready": True, "outdated": True,
                     "outdated_reasons": first["outdated_reasons"], "target_launch_template_version": 2}
    assert first["outdated_reasons"] and entries[-1]["vars"]["outdated"] is False
    assert entries[3]["vars"]["node_name"] is None and entries[3]["vars"]["ready"] is False


@pytest.mark.parametrize("groups, message", [
    ([], "node_groups: [] is not allowed; use a list of at least one node group"),
    ([{"image_id": "ami-0123456789abcdef0"}], "node_groups[0]: {'image_id': 'ami-0123456789abcdef0'} has no name"),
    ([{"name": "a", "size": 3}], "node_groups[0].size: not a field of a node group; use name, image_id, ssm_parameter, "
     "launch_template_version, max_unavailable, max_surge, strategy"),
    ([{"name": "a", "image_id": "ami-0123456789abcdef0", "launch_template_version": 2}],
     "node_groups[0] (a): give at most one of image_id, ssm_parameter, launch_template_version"),
    ([{"name": "a", "image_id": "ubuntu"}], "node_groups[0].image_id: 'ubuntu' is not an AMI id"),
    ([{"name": "a", "launch_template_version": "newest"}], "node_groups[0].launch_template_version: 'newest' is not allowed"),
    ([{"name": "a", "max_unavailable": "0%"}], "node_groups[0].max_unavailable: '0%' is not allowed"),
    ([{"name": "a", "max_surge": -1}], "node_groups[0].max_surge: -1 is not allowed"),
    (["a", {"name": "a"}], "node_groups[1] (a): the group is listed twice"),
])
def test_node_groups_are_refused_naming_the_field(groups, message):
    with pytest.raises(RolloutError) as caught:
        check_node_groups(groups)
    assert str(caught.value).startswith(message), str(caught.value)


def test_node_groups_take_a_name_alone_a_group_s_own_counts_and_the_group_names_are_inventory_safe():
    assert check_node_groups(["a", {"name": " b ", "ssm_parameter": "/ami", "image_id": ""}]) == [
        {"name": "a"}, {"name": "b", "ssm_parameter": "/ami"}]
    # a group's own counts are kept as given (the role resolves them); a count not given stays out, for the role's own
    assert check_node_groups([{"name": "a", "max_unavailable": "50%"}, {"name": "b", "max_surge": 0}]) == [
        {"name": "a", "max_unavailable": "50%"}, {"name": "b", "max_surge": 0}]
    assert group_name("az_", "eu-west-1a") == "az_eu_west_1a" and group_name("node_group_", "prod.workers") == "node_group_prod_workers"


def test_the_plugin_reads_only_files_named_nodes_yml(tmp_path):
    plugin = InventoryModule()
    for name, wanted in (("prod.nodes.yml", True), ("nodes.yaml", True), ("hosts.yml", False)):
        path = tmp_path / name
        path.write_text("plugin: nodeops.rollout.nodes\n")
        assert plugin.verify_file(str(path)) is wanted, name


def _hosts():
    records = [instance(1, "a", 1), instance(2, "b", 1), instance(3, "a", 2), instance(4, "b", 2, node=False)]
    records[3]["lifecycle_state"] = "Pending"
    return host_entries({"name": "workers"}, records, TARGET)


def _names(hosts):
    return [entry["host"] for entry in hosts]


def test_without_filters_every_host_is_kept_in_its_order():
    hosts = _hosts()
    assert _names(filter_hosts(hosts, check_host_filters(None, "include_filters"), [])) == _names(hosts)


def test_include_filters_keep_hosts_matching_every_key_of_one_filter():
    include = check_host_filters([{"availability_zone": "a", "outdated": True}, {"lifecycle_state": "Pending"}], "include_filters")
    assert _names(filter_hosts(_hosts(), include, [])) == ["node-1", "i-4"]
    # a list holds alternatives; booleans match YAML's spellings
    include = check_host_filters([{"availability_zone": ["a", "b"], "outdated": "no"}], "include_filters")
    assert _names(filter_hosts(_hosts(), include, [])) == ["node-3", "i-4"]


def test_exclude_filters_win_over_include_filters():
    include = check_host_filters([{"node_group": "workers"}], "include_filters")
    exclude = check_host_filters([{"ready": False}, {"launch_template_version": 1, "availability_zone": "b"}], "exclude_filters")
    assert _names(filter_hosts(_hosts(), include, exclude)) == ["node-1", "node-3"]


@pytest.mark.parametrize("filters, message", [
    ({"outdated": True}, "include_filters: {'outdated': True} is not allowed; use a list of filters, each a dict of host variable to value(s)"),
    (["outdated"], "include_filters[0]: 'outdated' is not allowed; use a dict of host variable to value(s), e.g. {outdated: true}"),
    ([{"outdated": True}, {"colour": "red", "az": "a"}],
     "include_filters[1]: az, colour is not a host variable to filter on; use node_name, instance_id, availability_zone, "
     "node_group, launch_template_id, launch_template_version, target_launch_template_version, image_id, lifecycle_state, "
     "ready, outdated"),
    ([{"node_group": {"name": "x"}}], "include_filters[0].node_group: {'name': 'x'} is not allowed; use a value or a list of values"),
    ([{"node_group": []}], "include_filters[0].node_group: [] is not allowed; use a value or a list of values"),
])
def test_bad_filters_are_refused_naming_the_filter(filters, message):
    with pytest.raises(RolloutError) as err:
        check_host_filters(filters, "include_filters")
    assert str(err.value) == message


def test_node_groups_keep_a_group_s_own_strategy_checked_as_the_role_checks_it():
    assert check_node_groups([{"name": "gpu", "strategy": "terminate_first"}]) == [{"name": "gpu", "strategy": "terminate_first"}]
    with pytest.raises(RolloutError, match=r"^node_groups\[0\]\.max_surge: 2 is not allowed with node_groups\[0\]\.strategy terminate_first"):
        check_node_groups([{"name": "gpu", "strategy": "terminate_first", "max_surge": 2}])
