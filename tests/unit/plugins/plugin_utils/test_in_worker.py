# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which tasks run their module inside the worker, and that every module has the action plugin that does it."""

from __future__ import annotations

import importlib
import os
import sys

import pytest

from ansible_collections.nodeops.rollout.plugins.plugin_utils.in_worker import InWorkerAction, runs_in_worker

COLLECTION = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULE_NAMES = sorted(name[:-3] for name in os.listdir(os.path.join(COLLECTION, "plugins", "modules"))
                      if name.endswith(".py") and not name.startswith("_"))


@pytest.mark.parametrize("name", MODULE_NAMES)
def test_every_module_has_an_action_that_runs_it(name):
    action = importlib.import_module("ansible_collections.nodeops.rollout.plugins.action." + name).ActionModule
    module = importlib.import_module("ansible_collections.nodeops.rollout.plugins.modules." + name)
    assert issubclass(action, InWorkerAction)
    assert action.module is module


@pytest.mark.parametrize("interpreter", [None, "", "auto", "auto_silent", sys.executable])
def test_a_local_task_on_this_python_runs_in_the_worker(interpreter):
    assert runs_in_worker("local", False, 0, interpreter)


def test_another_name_of_this_python_in_its_directory_is_this_python_and_a_link_elsewhere_is_not(tmp_path, monkeypatch):
    """As in a virtualenv: bin/python and bin/python3 link to the system's python; a link in another directory is
    another virtualenv, with other libraries."""
    venv, other = tmp_path / "venv" / "bin", tmp_path / "other" / "bin"
    for directory in (venv, other):
        directory.mkdir(parents=True)
    for link in (venv / "python", venv / "python3", other / "python3"):
        link.symlink_to(os.path.realpath(sys.executable))
    monkeypatch.setattr(sys, "executable", str(venv / "python"))
    assert runs_in_worker("local", False, 0, str(venv / "python3"))
    assert not runs_in_worker("local", False, 0, str(other / "python3"))


@pytest.mark.parametrize("connection, become, async_val, interpreter", [
    ("ssh", False, 0, None),                     # another machine
    ("local", True, 0, None),                    # another user
    ("local", False, 30, None),                  # in the background (async_wrapper)
    ("local", False, 0, "/usr/bin/python3.0"),   # another Python, with its own libraries
])
def test_anything_else_starts_the_module_the_usual_way(connection, become, async_val, interpreter):
    assert not runs_in_worker(connection, become, async_val, interpreter)


class _Broken:
    """A module whose main() raises, as a defect does."""

    @staticmethod
    def main():
        raise KeyError("ip-10-0-0-4.ec2.internal")


def test_a_module_that_raises_fails_its_task_naming_the_module_and_the_exception():
    action = InWorkerAction.__new__(InWorkerAction)
    action.module = _Broken
    action._task = type("Task", (), {"args": {}, "action": "nodeops.rollout.node_drain"})()
    action._update_module_args = lambda name, args, task_vars: None
    action._compute_environment_string = lambda environment: None
    result = action._run_in_worker({})
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"].startswith("nodeops.rollout.node_drain failed unexpectedly: KeyError: 'ip-10-0-0-4.ec2.internal'")
    assert "Traceback" in result["exception"] and "raise KeyError" in result["exception"]
