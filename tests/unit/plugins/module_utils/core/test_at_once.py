# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""at_once.map_at_once: the answers in order, one call in this thread, an error after every call has ended."""

from __future__ import annotations

import threading

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.at_once import map_at_once


def test_answers_come_in_the_order_of_the_items_and_run_on_several_threads():
    threads = set()

    def square(number):
        threads.add(threading.get_ident())
        return number * number

    assert map_at_once(square, range(20), 4) == [number * number for number in range(20)]
    assert threading.get_ident() not in threads


@pytest.mark.parametrize("items, workers", [([3], 8), ([1, 2, 3], 1), ([], 4)])
def test_one_item_or_one_worker_runs_in_the_calling_thread(items, workers):
    threads = set()

    def same(item):
        threads.add(threading.get_ident())
        return item

    assert map_at_once(same, iter(items), workers) == items
    assert threads <= {threading.get_ident()}


def test_an_error_is_raised_once_every_call_has_ended():
    ended = []

    def fail_on_two(number):
        if number == 2:
            raise ValueError("no %d" % number)
        ended.append(number)
        return number

    with pytest.raises(ValueError, match="no 2"):
        map_at_once(fail_on_two, range(6), 3)
    assert sorted(ended) == [0, 1, 3, 4, 5]
