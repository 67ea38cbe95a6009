"""Integration tests import the sandbox as ``sandbox`` and their helpers as ``tests.integration`` (pytest.ini puts the
repository root on the import path) and start sandboxes like a user does (``start_sandbox``)."""

import os

import pytest


@pytest.fixture(scope="module")
def start_sandbox(tmp_path_factory):
    """``start_sandbox(nodes=6, azs=3, groups=1, speed=20.0, workloads=())`` -> SandboxHandle; all stopped at the end.

    On the reference backend the collection runs with docs/rbac.yaml enforced (``rbac=True`` unless a test says
    otherwise): a ServiceAccount token bound by the documented roles, under kube-apiserver's RBAC authorizer, so every
    test of the reference stage proves that the roles are enough for what it runs."""
    started = []

    def _start(**kwargs):
        from sandbox.drive.handle import KUBE_ENV, SandboxHandle  # pylint: disable=import-outside-toplevel
        if (kwargs.get("kube") or os.environ.get(KUBE_ENV)) == "reference":
            kwargs.setdefault("rbac", True)
        handle = SandboxHandle.start(str(tmp_path_factory.mktemp("sandbox")), **kwargs)
        started.append(handle)
        return handle

    yield _start
    for handle in started:
        handle.stop()


# The longest files, longest first (their seconds in one run of the stage at 1fe8ed7 on a 2-core machine, --durations;
# some have fewer or smaller tests since). The test
# command runs whole files per worker (--dist loadfile) in the order collected: starting the long ones first keeps both
# workers busy to the end, instead of one of them finishing a long file alone while the other has nothing left.
LONGEST_FILES = (
    "role/test_cancel_floor.py",            # 826 s
    "reliability/test_kill_late.py",        # 675
    "reliability/test_kill_early.py",       # 584
    "role/test_rollback.py",                # 521
    "role/test_termination_gate.py",        # 474
    "role/test_serial_stops.py",            # 340 (added later, three runs)
    "reliability/test_stop_then_end.py",    # 330 (added later, two trials of two runs)
    "test_doc_outputs.py",                  # 326 (added later: the demo's three runs, a stop and its rerun)
    "reliability/test_node_faults.py",      # 465
    "reliability/test_blocking_budget.py",  # 434
    "role/test_two_clusters.py",            # 390
    "reliability/test_lock_frees_itself.py",  # 341
    "role/test_window.py",                  # 277
    "role/test_standby_and_protected.py",   # 275
    "role/test_pause_and_cancel.py",        # 264
    "role/test_least_privilege.py",         # 256 (reference stage only: every path, then twelve rules taken out)
    "role/test_iam_policy.py",              # 190 (four paths, then each statement they use taken out and the rerun)
    "reliability/test_api_faults.py",       # 243
    "role/test_bake_and_checkpoints.py",    # 218
    "role/test_fleet.py",                   # 171 alone (six sandboxes, three ansible-runner processes)
    "role/test_startup_taints.py",          # 430 beside six other suites (added later: three sandboxes, three runs)
    "role/test_implicit_budget.py",         # 271 beside other suites (added later: four runs)
    "role/test_fleet_relaunch.py",          # 227 beside other suites (added later: a lock of a minute waited for)
    "role/test_diff_mode.py",               # 130 beside other suites (added later)
)


def pytest_collection_modifyitems(items):
    """The files of LONGEST_FILES first, longest first; every other test after them, in the order collected."""
    def rank(item):
        path = item.nodeid.split("::", 1)[0]
        for index, name in enumerate(LONGEST_FILES):
            if path.endswith("tests/integration/" + name):
                return index
        return len(LONGEST_FILES)

    items.sort(key=rank)   # stable: each file's tests keep their order
