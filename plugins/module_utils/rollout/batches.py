# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Batches: which outdated instances are replaced together -- a canary first, then spread across Availability Zones.

Pure: instances in ``rollout.outdated``'s shape in, lists of instances out.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import int_at_least, parse_time
from ansible_collections.nodeops.rollout.plugins.module_utils.rollout.outdated import checked_instances


_LATEST = datetime.max.replace(tzinfo=timezone.utc)


def _az_queues(outdated):
    """Outdated instances grouped by AZ, each queue oldest launch first (then by instance id)."""
    checked_instances(outdated, "outdated")
    queues = {}
    for index, instance in enumerate(outdated):
        launch_time = instance.get("launch_time")
        stamp = _LATEST if launch_time in (None, "") else parse_time(launch_time, "outdated[%d].launch_time" % index)
        queues.setdefault(instance.get("az") or "", []).append((stamp, instance["instance_id"], instance))
    for queue in queues.values():
        queue.sort(key=lambda item: (item[0], item[1]))
        queue.reverse()  # pop() from the end takes the oldest
    return queues


def _take(queues, size):
    """Take up to ``size`` instances round robin over AZs, the AZs with the most outdated instances first."""
    order = sorted((az for az in queues if queues[az]), key=lambda az: (-len(queues[az]), az))
    batch = []
    while len(batch) < size and order:
        for az in order:
            if len(batch) >= size:
                break
            batch.append(queues[az].pop()[2])
        order = [az for az in order if queues[az]]
    return batch


def batch_limit(up_to_date_count, batch_size):
    """How many instances the next batch may take: 1 (a canary) while nothing is up to date, else batch_size."""
    up_to_date_count = int_at_least(up_to_date_count, "up_to_date_count", 0)
    batch_size = int_at_least(batch_size, "batch_size", 1)
    return 1 if up_to_date_count == 0 else batch_size


def next_batch(outdated, up_to_date_count, batch_size):
    """The instances to replace next.

    While no instance is up to date the batch is a canary of one, which limits the damage if the new launch
    template does not produce working nodes. Otherwise the batch takes up to ``batch_size`` instances
    round robin across Availability Zones, starting with the AZs that have the most outdated instances, so a
    batch never takes two instances from one AZ while another AZ with outdated instances is untouched. Within
    an AZ the oldest launch goes first, then the lowest instance id, so the order is deterministic.
    """
    limit = batch_limit(up_to_date_count, batch_size)
    return _take(_az_queues(outdated), limit)


def plan_batches(outdated, sizes):
    """The outdated instances in the order the rollout drains them, cut into waves of ``sizes`` (as
    ``rollout.goals.planned_waves`` predicts them), each spread across Availability Zones as :func:`next_batch` does.

    Every outdated instance appears in exactly one wave; a last wave takes what the sizes leave over.
    """
    queues = _az_queues(outdated)
    batches = []
    remaining = len(outdated)
    for index, size in enumerate(sizes):
        size = int_at_least(size, "sizes[%d]" % index, 1)
        if not remaining:
            break
        batch = _take(queues, size)
        batches.append(batch)
        remaining -= len(batch)
    if remaining:
        batches.append(_take(queues, remaining))
    return batches
