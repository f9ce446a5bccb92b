"""The planted bugs are triage's test (tests/e2e/planted_triage.py), continued: the kernel-source
errors the emulated device stops, and the errors of the host code. (A file of its own so that
--dist loadfile triages these on one worker while tests/e2e/test_triage.py runs on the other.)
"""

from __future__ import annotations

import pytest

from tests.e2e.planted_triage import (
    FAULT_AND_HOST_BUGS,
    assert_the_top_line_names_what_the_bug_depends_on,
)

pytestmark = pytest.mark.build  # builds (or finds built) the planted variants of the kernel


@pytest.mark.parametrize("bug", FAULT_AND_HOST_BUGS)
def test_the_top_triage_line_names_what_the_planted_bug_depends_on(bug, tmp_path, monkeypatch):
    assert_the_top_line_names_what_the_bug_depends_on(bug, tmp_path, monkeypatch)
