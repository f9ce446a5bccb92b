"""Fixtures of the operator tests: the twin libraries, built once per session (and per pytest-xdist
worker; the build directories are shared under build/ and locked, so a second build is a no-op)."""

from __future__ import annotations

import pytest

from farm import build


def _planted(bug: str):
    """The twin built with `bug` planted, in build/twin-<bug>."""
    return build.build_twin(build.default_build_dir(bug), plant_bug=bug)


@pytest.fixture(scope="session")
def twin_lib():
    """The real twin, where farm.agent.backends.twin finds it (build/twin)."""
    return build.build_twin(build.default_build_dir())


@pytest.fixture(scope="session")
def seed_noreduce_lib():
    """A twin with the seed's wrong no-reduce formula planted."""
    return _planted("seed_noreduce")


@pytest.fixture(scope="session")
def tail_lib():
    """A twin that drops the unaligned remainder of a row's last chunk."""
    return _planted("tail")


@pytest.fixture(scope="session")
def trunc_narrow_lib():
    """A twin whose output cast fp32 -> fp16/bf16 rounds toward zero."""
    return _planted("trunc_narrow")


@pytest.fixture(scope="session")
def fp16_sum_lib():
    """A twin that accumulates sum(dy) in fp16."""
    return _planted("fp16_sum")


@pytest.fixture(scope="session")
def drop_element_lib():
    """A twin whose reductions over d1 >= 4096 leave the last element (line) out of the sum."""
    return _planted("drop_element")


@pytest.fixture(scope="session")
def strided_out_unwritten_lib():
    """A twin that never copies the result back into a non-contiguous out."""
    return _planted("strided_out_unwritten")
