# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""errors.py: one base error, one catch that turns it into fail_json, and the partial result a failure reports."""

from __future__ import annotations

import pytest

from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError, reporting, reports_errors


class _Module:
    def __init__(self):
        self.failed = None

    def fail_json(self, **kwargs):
        self.failed = kwargs
        raise SystemExit(1)


def test_the_one_catch_fails_the_module_with_the_message_first_and_the_details_beside_it():
    @reports_errors
    def run(module):  # pylint: disable=unused-argument
        raise RolloutError("asg_name: Auto Scaling group 'x' not found", changed=False)

    module = _Module()
    with pytest.raises(SystemExit):
        run(module)
    assert module.failed == {"msg": "asg_name: Auto Scaling group 'x' not found", "changed": False}


def test_other_errors_are_not_caught():
    @reports_errors
    def run(module):  # pylint: disable=unused-argument
        raise KeyError("bug")

    with pytest.raises(KeyError):
        run(_Module())


def test_reporting_adds_what_was_done_and_the_error_details_win():
    result = {"terminated": [], "changed": False}
    with pytest.raises(RolloutError) as error:
        with reporting(result):
            result["terminated"].append("i-1")
            result["changed"] = True
            raise RolloutError("timed out", changed="error's own")
    assert error.value.details == {"terminated": ["i-1"], "changed": "error's own"}
