"""The planted bugs are triage's test: the top line of a planted smoke run's triage names what the
bug depends on, with the store's counts (tests/e2e/planted_triage.py). Here the bugs whose
failures the judge finds in the numbers; the device's and the host's:
tests/e2e/test_triage_faults_and_host.py.
"""

from __future__ import annotations

import pytest

from farm.pool import build
from farm.results import triage
from tests.e2e.planted_triage import (
    DEPENDS_ON,
    FAULT_AND_HOST_BUGS,
    NUMBER_BUGS,
    assert_the_top_line_names_what_the_bug_depends_on,
)

pytestmark = pytest.mark.build  # builds (or finds built) the planted variants of the kernel


def test_every_planted_bug_has_what_it_depends_on():
    # The aclnn layer's bugs run through the acl backend only: tests/e2e/test_reason_planted.py.
    assert set(DEPENDS_ON) == set(build.PLANT_BUGS) - {""} - set(build.ACLNN_BUGS)
    assert all(feature in triage.FEATURES for feature, _ in DEPENDS_ON.values())
    # Each bug is triaged in one of the two files, none in both.
    assert sorted(NUMBER_BUGS + FAULT_AND_HOST_BUGS) == sorted(DEPENDS_ON)


@pytest.mark.parametrize("bug", NUMBER_BUGS)
def test_the_top_triage_line_names_what_the_planted_bug_depends_on(bug, tmp_path, monkeypatch):
    assert_the_top_line_names_what_the_bug_depends_on(bug, tmp_path, monkeypatch)
