# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run a module of this collection inside Ansible's worker process when its host is this machine.

Every module of the collection talks to APIs (AWS, Kubernetes) from the machine that runs Ansible: its hosts are
``ansible_connection=local``. Run the usual way, each task starts a new Python and imports botocore and the kubernetes
client again, about a second of CPU per task before the first request. Each module's action plugin imports the module
(and with it those libraries) when the controller first loads the plugin, before it forks the worker for the task, so
the worker starts with them in memory and runs the module's ``main()`` in place: same arguments, same result, same check
mode, no new interpreter.

Either way, the connection options set by ``module_defaults`` on amazon.aws's and kubernetes.core's groups reach the
module (plugin_utils/foreign_groups.py).

The module runs the usual way (AnsiballZ, a new interpreter) whenever in place could differ from it: a connection other
than ``local``, ``become``, ``async``, or an ``ansible_python_interpreter`` other than the controller's own Python.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback

from ansible import constants as C
from ansible.module_utils import basic
from ansible.module_utils.common.json import Direction, get_module_encoder
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.vars.clean import remove_internal_keys

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import warm_models
from ansible_collections.nodeops.rollout.plugins.plugin_utils.foreign_groups import foreign_connection_defaults, group_entries

# the serialisation profile of a module without metadata (every module of this collection)
PROFILE = "legacy"

# The libraries the modules import when they make their first client: imported here, once in the controller, so that
# each worker forked from it has them already.
for _library in ("boto3", "botocore.session", "kubernetes.client"):
    try:
        __import__(_library)
    except ImportError:
        pass  # the module reports the missing library itself, in the worker, as it does when run the usual way


def runs_in_worker(connection, become, async_val, interpreter):
    """True when running the module in the worker gives what a new interpreter on the host would: the host is this
    machine, as this user, in the foreground, with this Python."""
    if connection != "local" or become or async_val:
        return False
    if interpreter in (None, "") or str(interpreter).startswith("auto"):
        return True
    # the same file, in the same directory: a virtualenv's python is a link to the system's, with other libraries
    interpreter, controller = os.path.abspath(str(interpreter)), os.path.abspath(sys.executable)
    return (os.path.realpath(os.path.dirname(interpreter)) == os.path.realpath(os.path.dirname(controller))
            and os.path.realpath(interpreter) == os.path.realpath(controller))


# Imported by the action plugins on the controller, before Ansible forks the workers that run the tasks: the AWS models
# read here once are every worker's without reading them again.
warm_models()


class InWorkerAction(NormalAction):
    """The action of one module: in the worker when :func:`runs_in_worker`, else the usual way."""

    module = None  # the module's Python module (plugins/modules/<name>.py), set by each action plugin
    # whether the connection options of the other collections' and ansible-core's groups reach the module (every
    # module in this collection's action groups; not fleet_state, whose ledger is no cluster's connection)
    group_defaults = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        if self.group_defaults:
            self._task.args = dict(self._foreign_group_defaults(), **self._task.args)
        # ansible_python_interpreter, else the interpreter_python setting (ANSIBLE_PYTHON_INTERPRETER, ansible.cfg)
        interpreter = self._templar.template(C.config.get_config_value("INTERPRETER_PYTHON", variables=task_vars))
        if not runs_in_worker(self._connection.transport, self._play_context.become, self._task.async_val, interpreter):
            return super().run(tmp, task_vars)
        result = super(NormalAction, self).run(tmp, task_vars)  # pylint: disable=bad-super-call
        result.update(self._run_in_worker(task_vars))
        return result

    def _foreign_group_defaults(self):
        """The connection options set by ``module_defaults`` on group/amazon.aws.aws, group/kubernetes.core.k8s and
        ansible-core's group/aws and group/k8s that the task's arguments do not set (plugin_utils/foreign_groups.py), templated."""
        added = foreign_connection_defaults(group_entries(self._task.module_defaults), self._task.args)
        return self._templar.template(added) if added else {}

    def _run_in_worker(self, task_vars):
        module_args = dict(self._task.args)
        self._update_module_args(self._task.action, module_args, task_vars)
        environment = {}
        self._compute_environment_string(environment)
        os.environ.update(environment)  # this worker runs this one task, then exits
        encoder = get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE)
        basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": module_args}, cls=encoder).encode()  # pylint: disable=protected-access
        basic._ANSIBLE_PROFILE = PROFILE  # pylint: disable=protected-access
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            try:
                self.module.main()
            except SystemExit:
                pass  # exit_json and fail_json end with sys.exit after writing the result
            except Exception as exc:  # pylint: disable=broad-except
                # a defect of the module: its failure, named with the exception and its traceback as AnsiballZ's
                # run reports it, instead of Ansible's bare "Task failed: <the exception's text>"
                return {"failed": True, "changed": False, "exception": traceback.format_exc(),
                        "msg": "%s failed unexpectedly: %s: %s (see the traceback with -vvv)" % (self._task.action, type(exc).__name__, exc)}
        data = self._parse_returned_data({"rc": 0, "stdout": stdout.getvalue(), "stderr": ""}, PROFILE)
        data.pop("_ansible_suppress_tmpdir_delete", None)
        remove_internal_keys(data)
        return data
