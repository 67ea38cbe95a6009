"""Tests that need the reference control plane itself (scripts/test.sh reference builds it first)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# the reference marker, registered as the integration tests register it
from tests.integration.conftest import pytest_configure  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
