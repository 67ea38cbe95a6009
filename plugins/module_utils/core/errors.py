# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one base error of the collection, and the one place it becomes ``fail_json``.

Every error this collection raises derives from :class:`RolloutError`: a message first (the text of the failed task),
then structured ``details`` that go into the failed result beside it. The text is written where the call is made
(``clients.aws.aws_errors("DescribeAutoScalingGroups", "Auto Scaling group 'web'")``), and every module runner is
wrapped once by :func:`reports_errors`, which turns the error into ``fail_json(msg=..., **details)``.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager


class RolloutError(Exception):
    """A failure to report through fail_json: ``msg`` first, then structured ``details``."""

    def __init__(self, msg="", **details):
        super().__init__(msg)
        self.msg = msg
        self.details = details


def reports_errors(run):
    """Wrap a module runner ``run(module, ...)``: a RolloutError it raises fails the module with its message and details."""
    @functools.wraps(run)
    def runner(module, *args, **kwargs):
        try:
            return run(module, *args, **kwargs)
        except RolloutError as exc:
            module.fail_json(msg=exc.msg, **exc.details)
            return None  # not reached: fail_json exits
    return runner


@contextmanager
def reporting(result):
    """A RolloutError raised inside also reports ``result``, what was done before it (its own details win)."""
    try:
        yield
    except RolloutError as exc:
        exc.details = dict(result, **exc.details)
        raise
