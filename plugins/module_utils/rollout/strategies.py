# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The strategies a node group is rolled by, and what each makes of the group's settings (pure).

- ``surge`` (the default): new instances first, as EKS's managed node update does - ``max_surge`` of them (EKS's
  default unset) - then the outdated nodes drained and replaced ``max_unavailable`` at a time.
- ``terminate_first``: no extra instance, for the pools that cannot surge (GPU or reserved capacity, an account at its
  quota; EKS's ``updateStrategy: MINIMAL``, AKS's ``maxSurge 0``): ``max_unavailable`` outdated nodes drained,
  terminated, replaced by the group at its own size, validated, then the next. The group keeps ``N - max_unavailable``
  Ready schedulable nodes, the capacity floor, and never runs more instances than its desired capacity.

Both are the same engine's steps (``rollout/goals.py`` ``Replace``): a strategy settles the surge the steps are given,
once, with the rest of the group's settings (``rollout/settings.py``).
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.core.values import PlanError, parse_int_or_percent

SURGE = "surge"
TERMINATE_FIRST = "terminate_first"
STRATEGIES = (SURGE, TERMINATE_FIRST)


def check_strategy(value, field="strategy"):
    """``value`` if it names a strategy, else PlanError naming ``field`` and the strategies."""
    if value not in STRATEGIES:
        raise PlanError("%s: %r is not allowed; use one of %s" % (field, value, ", ".join(STRATEGIES)))
    return value


def strategy_surge(strategy, max_surge, field="max_surge", strategy_field="strategy"):
    """The ``max_surge`` a group is rolled with under ``strategy``: as given for ``surge`` (None: EKS's default); 0 for
    ``terminate_first``, which launches no extra instance - a ``max_surge`` given that asks for one (above 0 or 0 %)
    is refused, naming ``field``, since the two say opposite things."""
    check_strategy(strategy, strategy_field)
    if strategy != TERMINATE_FIRST:
        return max_surge
    if max_surge is not None and not (isinstance(max_surge, str) and not max_surge.strip()):
        _kind, number = parse_int_or_percent(max_surge, field, allow_zero=True)
        if number:
            raise PlanError("%s: %r is not allowed with %s %s, which launches no extra instance; leave it unset or 0, or "
                            "use %s %s" % (field, max_surge, strategy_field, TERMINATE_FIRST, strategy_field, SURGE))
    return 0
