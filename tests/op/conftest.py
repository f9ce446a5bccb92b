"""Fixtures of the operator tests: the operator's C ABI libraries, built once per session (and per
pytest-xdist worker; the build directories are shared under build/ and locked, so a second build
is a no-op).

- ``twin_lib``: the CPU twin (build/twin), made the native backend's library for the test.
- ``acpu_lib``: the emulated real kernel (build/ascendc-cpu), likewise.
- ``native_lib``: each of the two in turn (the test runs once per library): the tests of the C
  ABI's behaviour that both libraries must share.
- ``<bug>_lib``: a twin with that bug planted; ``acpu_planted(bug)``: the emulated real kernel with
  it planted; ``judged(case, library, monkeypatch)``: the agent's record of a case on a library.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from farm.agent.backends import native
from farm.pool import build
from farm.run.requests import case_request
from tests.identities import host_identity
from tests.requirements import need

if TYPE_CHECKING:
    from farm.agent.record import ResultRecord
    from suites.case import Case

LIBRARIES = ("twin", "ascendc-cpu")


def _planted(bug: str):
    """The twin built with `bug` planted, in build/twin-<bug>."""
    return build.build_twin(build.default_build_dir(bug), plant_bug=bug)


def judged(case: Case, library: Path, monkeypatch: pytest.MonkeyPatch) -> ResultRecord:
    """The agent's record of `case` (a suites.case.Case) on `library`, on its family's SoC."""
    from farm.agent.execute import run_case
    from golden import soc

    monkeypatch.setenv(native.ENV_LIB, str(library))
    return run_case(
        case_request(case), "native", 0, host_identity(soc.representative_soc(case.family).name)
    )


def need_emulation() -> None:
    need(
        build.emulation_present(),
        "the CPU emulation of Ascend C (op/ascendc_cpu kernel side): a complete checkout",
    )


def acpu_planted(bug: str):
    """The emulated real kernel built with `bug` planted, in build/ascendc-cpu-<bug>."""
    need_emulation()
    return build.build_ascendc_cpu(build.default_build_dir(bug, target="ascendc-cpu"), bug)


@pytest.fixture(scope="session")
def twin_build():
    return build.build_twin(build.default_build_dir())


@pytest.fixture(scope="session")
def acpu_build():
    need_emulation()
    return build.build_ascendc_cpu(build.default_build_dir(target="ascendc-cpu"))


@pytest.fixture
def twin_lib(twin_build, monkeypatch):
    """The real twin (build/twin), the native backend's library for this test."""
    monkeypatch.setenv(native.ENV_LIB, str(twin_build))
    return twin_build


@pytest.fixture
def acpu_lib(acpu_build, monkeypatch):
    """The emulated real kernel (build/ascendc-cpu), the native backend's library for this test."""
    monkeypatch.setenv(native.ENV_LIB, str(acpu_build))
    return acpu_build


@pytest.fixture(params=LIBRARIES)
def native_lib(request, monkeypatch):
    """Each C ABI library in turn, the native backend's library for the test."""
    lib = request.getfixturevalue("twin_build" if request.param == "twin" else "acpu_build")
    monkeypatch.setenv(native.ENV_LIB, str(lib))
    return lib


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


def need_acl_emulation() -> str:
    """The emulated ACL runtime and the operator's op-api on it (build/ascendc-cpu/acl/lib), built
    with the default package against the genuine ACL headers; the directory of its libraries."""
    from farm.pool import acl_sdk

    need_emulation()
    need(acl_sdk.present(), "the genuine ACL headers (python -m farm.pool.acl_sdk downloads them)")
    lib = build.build_ascendc_cpu()
    acl_lib = lib.parent / build.ACL_DIR / "lib"
    assert (acl_lib / "libcust_opapi.so").is_file(), f"{acl_lib} has no libcust_opapi.so"
    return str(acl_lib)


@pytest.fixture(scope="session")
def acl_lib_dir() -> str:
    return need_acl_emulation()
