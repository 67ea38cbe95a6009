# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Whether a fleet worker may roll its cluster now, from the locks of the cluster's node groups as read. Pure.

Before a cluster's rollout the worker reads each node group's lock (``rollout_lock`` in check mode, with the holder
this attempt will use). A lock that is free, or held by nobody alive (expired), lets the rollout take it. A lock held by
``stopped_holder`` - the holder the ledger recorded for this run's earlier attempt on the cluster, whose worker stopped
before it finished (killed, its execution node lost) - frees itself when its duration runs out: the worker waits for
it, then resumes the cluster from its state tags. If that holder renews the lock while the worker waits, the earlier
attempt is alive elsewhere: the cluster is ``busy``, as it is when any other run holds a lock. A busy cluster is not a
failure; the next run takes it up.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.rollout import lease_lock

FREE, WAIT, BUSY, FAILED = "free", "wait", "busy", "failed"
# the actions of rollout_lock that mean the rollout may take the lock
TAKEN = ("create", "acquire", "take_over", "renew", "keep")
# seconds past the lock's expiry before it is read again: the Lease counts as expired only after that moment
AFTER_EXPIRY = 1


def _group(read):
    item = read.get("item")
    return item.get("name") if isinstance(item, dict) else item


def lock_turn(reads, cluster, stopped_holder=None, seen=None, now=None):
    """``{"decision": free | wait | busy | failed, "message", "seen", "wait_seconds"}`` for ``cluster`` from ``reads``,
    the results of ``rollout_lock`` (check mode, state acquired, its failure ignored) for each of its node groups (a
    loop's results, each with its ``item``: the node group). A refusal is ``action`` refuse with the ``holder``; a result
    with neither a taking action nor a refusal is a lock that could not be read. ``seen``: ``{group: expires_at}`` of
    the stopped attempt's locks as an earlier read of this wait found them; a later expiry means that attempt renewed its
    lock since, so it is alive. ``now``: an aware datetime (the wait's length is counted from it)."""
    if not isinstance(reads, list):
        raise lease_lock.LockError("reads: %r is not allowed; use the results of rollout_lock for each node group" % (reads,))
    seen = dict(seen or {})
    waits, busy = [], []
    for read in reads:
        group = _group(read) or "?"
        action, holder = read.get("action"), read.get("holder")
        if action in TAKEN:
            continue
        if action != "refuse" or not holder:
            return _turn(FAILED, "%s: the lock of node group %s could not be read: %s" % (cluster, group, read.get("msg") or "no answer"), seen)
        expires = (read.get("lease") or {}).get("expires_at")
        until = "until %s" % expires if expires else "for as long as it renews it"
        if stopped_holder and holder == stopped_holder:
            earlier = lease_lock.parse_time(seen.get(group))
            current = lease_lock.parse_time(expires)
            if current is None or (earlier is not None and current > earlier):
                busy.append("node group %s is still locked by %s, this run's earlier attempt on %s, which renewed it while "
                            "this worker waited (%s): that attempt is alive elsewhere" % (group, holder, cluster, until))
            else:
                seen[group] = expires
                waits.append((current, group, holder, until))
            continue
        busy.append("node group %s is locked by another run, %s (%s)" % (group, holder, until))
    if busy:
        return _turn(BUSY, "%s is busy, not failed: %s. Nothing was changed; the next run of the fleet takes it up."
                     % (cluster, "; ".join(busy)), seen)
    if waits:
        latest = max(moment for moment, _group_name, _holder, _until in waits)
        seconds = AFTER_EXPIRY
        if now is not None:
            seconds = max(AFTER_EXPIRY, int((latest - now).total_seconds()) + 1 + AFTER_EXPIRY)
        held = "; ".join("node group %s is held by %s, this run's stopped attempt on %s, %s" % (group, holder, cluster, until)
                         for _moment, group, holder, until in waits)
        return dict(_turn(WAIT, "%s: %s. Waiting %ds for it to free itself, then resuming the cluster from its state tags"
                          % (cluster, held, seconds), seen), wait_seconds=seconds)
    return _turn(FREE, "%s: every lock of its node groups is free" % cluster, seen)


def _turn(decision, message, seen):
    return {"decision": decision, "message": message, "seen": seen, "wait_seconds": 0}
