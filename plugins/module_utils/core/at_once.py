# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Independent reads and writes, several at once: one home for the thread pool the clients share."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, wait


def map_at_once(fn, items, workers):
    """``[fn(item) for item in items]``, up to ``workers`` calls at once, in this thread when one at a time would do
    (one item, or one worker). The answers come in the order of ``items``; an error is raised once every call has
    ended."""
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    # Every call is submitted and waited for before any answer is read: ``pool.map`` would cancel the calls not yet
    # started as soon as one failed, and an error must not leave half of a batch of writes undone.
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        futures = [pool.submit(fn, item) for item in items]
        wait(futures)
    return [future.result() for future in futures]
