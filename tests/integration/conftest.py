"""Integration tests import the sandbox as ``tests.sandbox`` (the repository root goes on sys.path) and start
sandboxes like a user does (``start_sandbox``)."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def pytest_configure(config):
    config.addinivalue_line("markers", "reference: also run on the reference backend, the real kube-apiserver, controllers and "
                                       "scheduler (the reference stage of scripts/test.sh sets NODEOPS_SANDBOX_KUBE=reference)")


@pytest.fixture(scope="module")
def start_sandbox(tmp_path_factory):
    """``start_sandbox(nodes=6, azs=3, groups=1, speed=20.0, workloads=())`` -> SandboxHandle; all stopped at the end."""
    started = []

    def _start(**kwargs):
        from tests.integration.harness import SandboxHandle  # pylint: disable=import-outside-toplevel
        handle = SandboxHandle.start(str(tmp_path_factory.mktemp("sandbox")), **kwargs)
        started.append(handle)
        return handle

    yield _start
    for handle in started:
        handle.stop()
