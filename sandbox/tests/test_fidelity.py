"""The fidelity table as a test: the same scripted scenario on both backends; every answer a module can observe must
be the same, or be listed with its reason in ``sandbox.fidelity.KNOWN_DIFFERENCES``. The table is written to
``tests/output/fidelity.md``. It needs the reference control plane, so the test command runs it in its reference stage
only."""

import os

import pytest

from sandbox import fidelity

pytestmark = pytest.mark.reference


def test_every_answer_a_module_observes_is_the_same_on_both_backends():
    rows = fidelity.compare(fidelity.run())
    out = os.path.join(fidelity.ROOT, "tests", "output")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "fidelity.md"), "w", encoding="utf-8") as fh:
        fh.write(fidelity.markdown(rows))
    unexplained = [row for row in rows if not row["same"] and not row["known"]]
    assert not unexplained, fidelity.markdown(unexplained)
    assert len(rows) >= 20   # every probe ran on both
