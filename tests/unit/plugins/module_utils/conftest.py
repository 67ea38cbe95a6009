# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Fixtures for the connection helpers: a process environment with no AWS or Kubernetes settings, and a real
AnsibleModule run whose fail_json/exit_json output is captured."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, settings

from ansible.module_utils import _internal as module_internal, basic
from ansible.module_utils.common import warnings as module_warnings

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19
    import contextlib
    from unittest import mock

    from ansible.module_utils.common.text.converters import to_bytes

    @contextlib.contextmanager
    def patch_module_args(args=None):
        payload = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args or {}}))
        with mock.patch.object(basic, "_ANSIBLE_ARGS", payload):
            yield


ENV_PREFIXES = ("AWS_", "K8S_AUTH_")
ENV_NAMES = ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")


@pytest.fixture
def isolated_env(monkeypatch, tmp_path):
    """No AWS_*, K8S_AUTH_*, KUBECONFIG or in-cluster variables; HOME, AWS config files and ~/.kube are empty temp paths."""
    for name in list(os.environ):
        if name.startswith(ENV_PREFIXES) or name in ENV_NAMES:
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "aws-credentials"))
    # Never wait for the EC2 instance metadata service when looking for credentials.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return home


class ModuleExit(Exception):
    """Raised instead of exiting the process when the module under test calls exit_json or fail_json."""

    def __init__(self, result):
        super().__init__(result.get("msg", ""))
        self.result = result


@pytest.fixture
def run_module(capsys, monkeypatch):
    """Build a real AnsibleModule with ``args`` and call ``func(module)``; returns its value or raises ModuleExit."""
    # a test of a controller plugin (a filter) run earlier in the same process marks the process as Ansible's controller,
    # whose warnings go to the display instead of the module's result: the module runs as on a target, whatever ran before
    monkeypatch.setattr(module_internal, "is_controller", False)

    def runner(argument_spec, args, func, **module_kwargs):
        # a module's warnings are kept for the process: one run's must not show in the next one's result
        for name in ("_global_warnings", "_global_deprecations"):
            kept = getattr(module_warnings, name, None)
            if kept is not None:
                kept.clear()
        try:
            with patch_module_args(args):
                module = basic.AnsibleModule(argument_spec=argument_spec, **module_kwargs)
                return module, func(module)
        except SystemExit:
            out = capsys.readouterr().out.strip().splitlines()
            raise ModuleExit(json.loads(out[-1])) from None

    runner.ModuleExit = ModuleExit
    return runner


# The AWS world of the runner tests (test_node_group, test_launch_template, test_surge, test_terminate).
from ansible_collections.nodeops.rollout.tests.unit.plugins.module_utils.aws_world import (  # noqa: E402 pylint: disable=unused-import,wrong-import-position
    api_calls,
    cluster,
    run,
    world,
)


# The property tests check rules, not speed: no example may fail for the time it took on a busy machine (hypothesis's
# default deadline of 200 ms per example, and its health check of slow data generation, both depend on the machine's pace).
settings.register_profile("nodeops", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("nodeops")
