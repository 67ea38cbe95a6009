"""Helpers for module end-to-end tests (the start_sandbox fixture lives in tests/integration/conftest.py)."""


def assert_safe(report):
    """The invariants every non-force end-to-end test holds: no PDB violated, no pod ended without eviction."""
    assert report["pdb_violations"] == 0, report["pdb_violation_details"]
    assert report["killed_without_eviction"] == 0, report["killed_without_eviction_details"]
    assert report["deleted_without_eviction"] == 0, report["deleted_without_eviction_details"]
