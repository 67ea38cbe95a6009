# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""How long a client waits before trying a call again: capped exponential backoff with jitter, and a refused
eviction's delay (which honours the server's Retry-After)."""

from __future__ import annotations

import random

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, int_at_least, is_number


def backoff_delay(attempt, base=1.0, cap=30.0, jitter=None):
    """Seconds to wait before retry number ``attempt`` (0 for the first try, which does not wait).

    Capped exponential backoff with full jitter: the ceiling is ``base * 2**(attempt-1)``, at most ``cap``, and
    the delay is drawn uniformly between half of ``base`` (half of ``cap`` if smaller) and that ceiling, so
    a retry never fires at once (no hot loop) and concurrent retries spread out. ``jitter`` is a callable
    returning a number in [0, 1) (``random.random`` by default), injectable for tests.
    """
    attempt = int_at_least(attempt, "attempt", 0)
    if not is_number(base) or base <= 0:
        raise PlanError("base: %r is not allowed; use a number of seconds > 0" % (base,))
    if not is_number(cap) or cap <= 0:
        raise PlanError("cap: %r is not allowed; use a number of seconds > 0" % (cap,))
    if attempt == 0:
        return 0.0
    ceiling = min(float(cap), float(base) * float(1 << min(attempt - 1, 62)))
    floor = min(float(base), float(cap)) / 2.0
    draw = (jitter or random.random)()
    if not is_number(draw) or not 0 <= draw <= 1:
        raise PlanError("jitter: returned %r, which is not allowed; it must return a number between 0 and 1" % (draw,))
    return floor + (ceiling - floor) * draw


def retry_after_seconds(headers):
    """The Retry-After header as seconds (None when absent or not a number of seconds)."""
    if not headers:
        return None
    for name in headers:
        if str(name).lower() == "retry-after":
            try:
                value = float(str(headers[name]).strip())
            except ValueError:
                return None
            return value if value >= 0 else None
    return None


def retry_delay(attempt, retry_after=None, cap=16.0, jitter=None):
    """Seconds before retry number ``attempt`` (>= 1) of a refused eviction.

    Capped exponential backoff with jitter (``backoff_delay``): the delay starts at 1/16 of the cap (1 s with
    the default cap of 16 s) and doubles up to the cap; a Retry-After from the server is honoured as a lower bound.
    Never 0, so a refused eviction is never retried in a hot loop.
    """
    cap = float(cap)
    delay = backoff_delay(max(1, attempt), base=cap / 16.0, cap=cap, jitter=jitter)
    if retry_after is not None:
        delay = max(delay, float(retry_after))
    return max(delay, 0.05)
