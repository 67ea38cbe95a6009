# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's name says who runs it, where, and tells two runs of one job apart."""

from __future__ import annotations

import re

from ansible_collections.nodeops.rollout.plugins.filter.run_id import run_id


def test_an_awx_job_is_named_by_its_id_else_the_environment_s_job_else_the_user():
    assert run_id(4711, {"USER": "ops"}, "ctl", "0000abcd") == "awx-job-4711@ctl/0000abcd"
    assert run_id(None, {"JOB_ID": "12", "USER": "ops"}, "ctl", "1") == "awx-job-12@ctl/1"
    assert run_id("", {"USER": "ops"}, "ctl", "1") == "ops@ctl/1"
    assert run_id(None, {}, "ctl", "1") == "unknown@ctl/1"


def test_two_runs_on_one_host_get_two_names():
    first, second = run_id(None, {"USER": "ops"}), run_id(None, {"USER": "ops"})
    assert re.match(r"^ops@[^/]+/[0-9a-f]{8}$", first) and first != second
