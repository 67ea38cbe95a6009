# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The serial playbook's hosts, decided without I/O: which node groups and instances a part or a batch of
nodeops.rollout.upgrade_serial goes through, and the batches its play's ``serial`` takes (filters run_groups and
serial_batches). The hosts are those the inventory plugin nodeops.rollout.nodes lists (runners/node_hosts.py reads
them)."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError


def batch_instances(batch, hostvars):
    """The instances a batch of the serial playbook replaces: ``{node group: [instance id, ...]}``, in the batch's
    order. ``batch``: the batch's hosts (``ansible_play_batch``); ``hostvars``: every host's variables, as the inventory
    plugin sets them (runners/node_hosts.py ``host_entries``). Nothing outside the batch is named: a rollout given these
    ids leaves every other outdated instance of the group as it is (``rollout_step``'s ``limit``). Raises RolloutError
    naming a host that is not an instance of this inventory."""
    if not isinstance(batch, (list, tuple)):
        raise RolloutError("batch: %r is not allowed; use the batch's hosts (ansible_play_batch)" % (batch,))
    found = {}
    for host in batch:
        facts = hostvars[host] if host in hostvars else {}
        group, instance_id = facts.get("node_group"), facts.get("instance_id")
        if not group or not instance_id:
            raise RolloutError("host %s has no node_group and instance_id: it is not a node of an inventory of the plugin "
                               "nodeops.rollout.nodes; run nodeops.rollout.upgrade_serial over such an inventory" % host)
        found.setdefault(group, [])
        if instance_id not in found[group]:
            found[group].append(instance_id)
    return found


def serial_batches(hosts, hostvars, node_groups):
    """The serial playbook's batches, as its play's ``serial`` takes them: a list of batch sizes over ``hosts`` (the
    play's hosts, in the order the play takes them, ``ansible_play_hosts_all``), each batch the hosts of one node group:
    a canary of one first, then at most the group's count: its ``max_unavailable`` in ``node_groups`` (the run's, as
    the role resolved them against each group's size: an integer; 1 for a group not listed). A batch also ends where
    the next host is of another group, so the batches are right whatever order the hosts come in (the inventory plugin
    lists each group's hosts together; a host pattern that mixes the groups' hosts makes smaller batches, never one
    over a group's count). Raises RolloutError naming a host that is
    not an instance of this inventory (:func:`batch_instances`)."""
    if not isinstance(hosts, (list, tuple)):
        raise RolloutError("hosts: %r is not allowed; use the play's hosts (ansible_play_hosts_all)" % (hosts,))
    batch_instances(hosts, hostvars)
    counts = {}
    for index, group in enumerate(node_groups or ()):
        count = group.get("max_unavailable")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise RolloutError("node_groups[%d].max_unavailable: %r is not allowed; use the group's resolved count, an "
                               "integer >= 1 (nodeops.rollout.resolved_settings)" % (index, count))
        counts[group["name"]] = count
    sizes, started = [], set()
    group, size, limit = None, 0, 0
    for host in hosts:
        name = hostvars[host]["node_group"]
        if size and (name != group or size >= limit):
            sizes.append(size)
            size = 0
        if not size:
            group = name
            limit = counts.get(name, 1) if name in started else 1
            started.add(name)
        size += 1
    if size:
        sizes.append(size)
    return sizes or [1]


# The parts of the serial playbook (the role's rolling_update__serial_part); 'none' is every other run.
SERIAL_PARTS = ("none", "start", "batch", "finish")


def run_groups(groups, part, hosts, batch, hostvars):
    """The node groups one include of the role goes through, in the order of ``groups`` (the run's, as the settings
    check gave them): every one for a run that is not the serial playbook's (``part`` none); for its start and finish,
    those with a node among ``hosts`` (``ansible_play_hosts_all``: a group --limit leaves out is not touched); for a
    batch, ``{"name", "instances"}`` for each group with a node among ``batch`` (``ansible_play_batch``), its instances
    those of the batch (:func:`batch_instances`)."""
    if part not in SERIAL_PARTS:
        raise RolloutError("part: %r is not allowed; use one of %s" % (part, ", ".join(SERIAL_PARTS)))
    if part == "none":
        return list(groups or [])
    if part == "batch":
        return [{"name": name, "instances": ids} for name, ids in batch_instances(batch, hostvars).items()]
    in_run = batch_instances(hosts, hostvars)
    return [group for group in groups or [] if group.get("name") in in_run]
