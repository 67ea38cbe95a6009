# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""serial_hosts: the node groups and instances each part and batch of the serial playbook goes through, and the
batches of its play's serial, each group's canary then its own count."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.nodeops.rollout.plugins.filter.run_groups import FilterModule
from ansible_collections.nodeops.rollout.plugins.filter.serial_batches import FilterModule as SerialBatches
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.serial_hosts import batch_instances, run_groups, serial_batches
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.node_hosts import host_entries
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.runners.test_node_hosts import TARGET, instance


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
