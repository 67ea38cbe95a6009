# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: run_id
short_description: Name one run of the role, the holder of each node group's lock
version_added: 0.3.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Who runs, where, and a random part that tells two runs of the same job apart - C(<runner>@<host>/<8 hex digits>).
    The runner is C(awx-job-<id>) when the run is an AWX job (the input, else the environment's C(AWX_JOB_ID) or
    C(JOB_ID)), else the user (C(USER)), else C(unknown); the host is the controller's node name.
  - A run refused a group's lock is told this name of the run that holds it.
options:
  _input:
    description: The AWX job's id (C(awx_job_id)), or null outside AWX.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Name this run
  ansible.builtin.set_fact:
    run_id: "{{ awx_job_id | default(none) | nodeops.rollout.run_id }}"
"""

RETURN = r"""
_value:
  description: The run's name, for example C(awx-job-4711@controller-1/0c5f29ab) or C(ops@laptop/9e01d377).
  type: str
"""

import os
import secrets
import socket


def run_id(job_id=None, environ=None, host=None, token=None):
    """The run's name from the AWX job (or the environment's job, or user), the host and a random token."""
    environ = os.environ if environ is None else environ
    job = job_id if job_id not in (None, "") else (environ.get("AWX_JOB_ID") or environ.get("JOB_ID"))
    runner = "awx-job-%s" % job if job not in (None, "") else (environ.get("USER") or "unknown")
    return "%s@%s/%s" % (runner, host or socket.gethostname(), token or "%08x" % secrets.randbits(32))


def run_id_filter(job_id):
    return run_id(job_id)


class FilterModule:
    """nodeops.rollout.run_id"""

    def filters(self):
        return {"run_id": run_id_filter}
