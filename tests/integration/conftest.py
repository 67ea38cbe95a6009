"""Integration tests import the sandbox as ``sandbox`` and their helpers as ``tests.integration`` (pytest.ini puts the
repository root on the import path) and start sandboxes like a user does (``start_sandbox``)."""

import pytest


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
