"""Fixtures of the operator tests: the twin libraries, built once per session (and per pytest-xdist
worker; the build directories are shared under build/ and locked, so a second build is a no-op)."""

from __future__ import annotations

import pytest

from farm import build


@pytest.fixture(scope="session")
def twin_lib():
    """The real twin, where farm.agent.backends.twin finds it (build/twin)."""
    return build.build_twin(build.default_build_dir())


@pytest.fixture(scope="session")
def seed_noreduce_lib():
    """A twin with the seed's wrong no-reduce formula planted."""
    return build.build_twin(build.default_build_dir("seed_noreduce"), plant_bug="seed_noreduce")


@pytest.fixture(scope="session")
def tail_lib():
    """A twin that drops the unaligned remainder of a row's last chunk."""
    return build.build_twin(build.default_build_dir("tail"), plant_bug="tail")
