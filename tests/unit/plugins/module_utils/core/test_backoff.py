# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""backoff.py: capped exponential backoff with jitter."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, strategies as st

from ansible_collections.nodeops.rollout.plugins.module_utils.core.backoff import backoff_delay
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.plan_builders import assert_plan_error


def test_backoff_first_try_does_not_wait_and_retries_never_fire_at_once():
    assert backoff_delay(0) == 0.0
    for attempt in range(1, 40):
        assert backoff_delay(attempt, jitter=lambda: 0.0) == 0.5


def test_backoff_ceiling_doubles_until_the_cap():
    top = [backoff_delay(attempt, jitter=lambda: 1.0) for attempt in range(1, 9)]
    assert top == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert backoff_delay(10 ** 6, base=0.1, cap=10.0, jitter=lambda: 1.0) == 10.0


@given(st.integers(min_value=1, max_value=500), st.floats(min_value=0.001, max_value=10.0),
       st.floats(min_value=0.001, max_value=600.0), st.floats(min_value=0.0, max_value=0.999999))
def test_backoff_bounds(attempt, base, cap, draw):
    delay = backoff_delay(attempt, base=base, cap=cap, jitter=lambda: draw)
    ceiling = min(cap, base * 2 ** min(attempt - 1, 62))
    assert 0 < delay <= ceiling + 1e-9
    assert delay >= min(base, cap) / 2 - 1e-9


def test_backoff_grows_on_average_with_the_default_random_source():
    random.seed(7)
    means = []
    for attempt in (1, 3, 5):
        samples = [backoff_delay(attempt) for dummy in range(2000)]
        assert all(0.5 <= sample <= min(30.0, 2 ** (attempt - 1)) for sample in samples)
        means.append(sum(samples) / len(samples))
    assert means[0] < means[1] < means[2]


@pytest.mark.parametrize("kwargs, field", [
    ({"attempt": -1}, "attempt"), ({"attempt": "1"}, "attempt"), ({"attempt": True}, "attempt"),
    ({"attempt": 1, "base": 0}, "base"), ({"attempt": 1, "cap": -1}, "cap"),
    ({"attempt": 1, "jitter": lambda: 2.0}, "jitter"), ({"attempt": 1, "jitter": lambda: "x"}, "jitter"),
])
def test_backoff_bad_input(kwargs, field):
    assert_plan_error(lambda: backoff_delay(**kwargs), field)
