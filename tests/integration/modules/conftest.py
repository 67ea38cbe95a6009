"""Fixtures for module end-to-end tests: sandboxes started like a user starts them, stopped afterwards."""

import pytest

from tests.integration.harness import SandboxHandle


@pytest.fixture(scope="module")
def start_sandbox(tmp_path_factory):
    """``start_sandbox(nodes=6, azs=3, groups=1, speed=20.0, workloads=())`` -> SandboxHandle; all stopped at the end."""
    started = []

    def _start(**kwargs):
        handle = SandboxHandle.start(str(tmp_path_factory.mktemp("sandbox")), **kwargs)
        started.append(handle)
        return handle

    yield _start
    for handle in started:
        handle.stop()


def assert_safe(report):
    """The invariants every non-force end-to-end test holds: no PDB violated, no pod ended without eviction."""
    assert report["pdb_violations"] == 0, report["pdb_violation_details"]
    assert report["killed_without_eviction"] == 0, report["killed_without_eviction_details"]
    assert report["deleted_without_eviction"] == 0, report["deleted_without_eviction_details"]
