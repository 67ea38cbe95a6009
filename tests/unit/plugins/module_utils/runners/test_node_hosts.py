# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""node_hosts: the node groups' instances as inventory hosts - outdated first, alternating AZs - and the plugin's
node_groups checked as the role checks rolling_update_node_groups."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.filter.run_groups import FilterModule
from ansible_collections.nodeops.rollout.plugins.filter.serial_batches import FilterModule as SerialBatches
from ansible_collections.nodeops.rollout.plugins.inventory.nodes import InventoryModule
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.node_hosts import (
    batch_instances,
    check_host_filters,
    check_node_groups,
    filter_hosts,
    group_name,
    run_groups,
    host_entries,
    serial_batches,
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
    ([{"image_id": "ami-0123456789abcdef0"}], "node_groups[0]: {'image_id': 'ami-0123456789abcdef0'} is not allowed"),
    ([{"name": "a", "size": 3}], "node_groups[0]: size is not allowed; use name, image_id, ssm_parameter, launch_template_version"),
    ([{"name": "a", "image_id": "ami-0123456789abcdef0", "launch_template_version": 2}],
     "node_groups[0] (a): give at most one of image_id, ssm_parameter, launch_template_version"),
    ([{"name": "a", "image_id": "ubuntu"}], "node_groups[0].image_id: 'ubuntu' is not an AMI id"),
    ([{"name": "a", "launch_template_version": "newest"}], "node_groups[0].launch_template_version: 'newest' is not allowed"),
    (["a", {"name": "a"}], "node_groups[1] (a): the group is listed twice"),
])
def test_node_groups_are_refused_naming_the_field(groups, message):
    with pytest.raises(RolloutError) as caught:
        check_node_groups(groups)
    assert str(caught.value).startswith(message), str(caught.value)


def test_node_groups_take_a_name_alone_and_the_group_names_are_inventory_safe():
    assert check_node_groups(["a", {"name": " b ", "ssm_parameter": "/ami", "image_id": ""}]) == [
        {"name": "a"}, {"name": "b", "ssm_parameter": "/ami"}]
    assert group_name("az_", "eu-west-1a") == "az_eu_west_1a" and group_name("node_group_", "prod.workers") == "node_group_prod_workers"


def test_the_plugin_reads_only_files_named_nodes_yml(tmp_path):
    plugin = InventoryModule()
    for name, wanted in (("prod.nodes.yml", True), ("nodes.yaml", True), ("hosts.yml", False)):
        path = tmp_path / name
        path.write_text("plugin: nodeops.rollout.nodes\n")
        assert plugin.verify_file(str(path)) is wanted, name


def test_a_batch_names_its_own_instances_per_node_group_and_nothing_outside_it():
    records = [instance(1, "a", 1), instance(2, "b", 1), instance(3, "a", 1, node=False), instance(4, "b", 1)]
    hostvars = {entry["host"]: entry["vars"] for entry in host_entries({"name": "workers"}, records, TARGET)}
    hostvars.update({entry["host"]: entry["vars"] for entry in host_entries({"name": "batch"}, [instance(7, "a", 1)], TARGET)})
    # a host without a node (i-3) is named by its instance; the outdated hosts outside the batch (node-2, node-4) are not
    assert batch_instances(["node-1", "i-3", "node-7"], hostvars) == {"workers": ["i-1", "i-3"], "batch": ["i-7"]}
    groups = [{"name": "batch", "max_unavailable": 1}, {"name": "workers", "max_unavailable": 2}, {"name": "idle"}]
    by_part = FilterModule().filters()["run_groups"]
    assert by_part(groups, "batch", ["node-1", "i-3", "node-7"], ["node-2"], hostvars) == [{"name": "workers", "instances": ["i-2"]}]
    # the start and the finish go through the groups with a host in the run, in the run's order; any other run all
    assert run_groups(groups, "start", ["node-1", "node-7"], [], hostvars) == groups[:2]
    assert run_groups(groups, "finish", ["node-1"], [], hostvars) == [groups[1]]
    assert run_groups(groups, "none", [], [], {}) == groups
    with pytest.raises(AnsibleFilterError, match="part: 'middle' is not allowed; use one of none, start, batch, finish"):
        by_part(groups, "middle", [], [], {})


def test_a_batch_of_hosts_from_another_inventory_is_refused_naming_the_host():
    with pytest.raises(RolloutError, match="host cluster-1 has no node_group and instance_id"):
        batch_instances(["cluster-1"], {"cluster-1": {"kubeconfig": "x"}})
    with pytest.raises(AnsibleFilterError, match="batch: 'node-1' is not allowed"):
        FilterModule().filters()["run_groups"]([], "batch", [], "node-1", {})


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


def _serial_hostvars(groups):
    """``{host: {"node_group", "instance_id"}}`` for ``[(group, [host, ...]), ...]``."""
    return {host: {"node_group": group, "instance_id": "i-" + host} for group, hosts in groups for host in hosts}


def _counts(**counts):
    return [{"name": name, "max_unavailable": count} for name, count in counts.items()]


def test_the_serial_batches_are_each_group_s_canary_then_its_own_count():
    hostvars = _serial_hostvars([("a", ["a1", "a2", "a3", "a4"]), ("b", ["b1", "b2", "b3", "b4", "b5"])])
    hosts = ["a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4", "b5"]
    # a: 1 + 2 + 1; b (its own count 3): 1 + 3 + 1 - never a batch across the two groups
    assert serial_batches(hosts, hostvars, _counts(a=2, b=3)) == [1, 2, 1, 1, 3, 1]
    # a group not listed goes one at a time; a count over the group's hosts takes them all after the canary
    assert serial_batches(hosts, hostvars, _counts(b=10)) == [1, 1, 1, 1, 1, 4]
    # mixed hosts: a batch ends where the next host is of another group (each group's canary still first)
    assert serial_batches(["a1", "b1", "a2", "a3", "b2", "b3"], hostvars, _counts(a=2, b=2)) == [1, 1, 2, 2]
    assert serial_batches([], {}, []) == [1]


def test_the_serial_batches_are_refused_without_resolved_counts_or_hosts_of_the_inventory():
    hostvars = _serial_hostvars([("a", ["a1", "a2", "a3"]), ("b", ["b1", "b2"])])
    by_groups = SerialBatches().filters()["serial_batches"]
    assert by_groups(["a1", "a2", "a3", "b1", "b2"], hostvars, _counts(a=2, b=3)) == [1, 2, 1, 1]
    with pytest.raises(AnsibleFilterError, match=r"node_groups\[1\].max_unavailable: '50%' is not allowed; use the group's resolved count"):
        by_groups(["a1"], hostvars, _counts(a=2, b="50%"))
    with pytest.raises(AnsibleFilterError, match="host cluster-1 has no node_group and instance_id"):
        by_groups(["cluster-1"], {"cluster-1": {}}, [])
    with pytest.raises(AnsibleFilterError, match="hosts: 'a1' is not allowed"):
        by_groups("a1", hostvars, [])
