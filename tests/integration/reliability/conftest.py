"""The reliability tests' sandbox: 3 nodes in 3 AZs with the demo workload (Deployments under PodDisruptionBudgets),
a fresh one for each test (each test faults, kills or blocks it), stopped when the test ends."""

import os

import pytest

DEMO = os.path.join("sandbox", "workloads", "demo.yaml")


@pytest.fixture
def sandbox(start_sandbox):
    box = start_sandbox(nodes=3, azs=3, speed=20, workloads=[DEMO])
    yield box
    box.stop()
