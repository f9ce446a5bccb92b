"""The operator's real source on the CPU: op/ascendc/op_kernel/log_softmax_grad.cpp compiled
unchanged with g++ against our own emulation of the Ascend C programming model (op/ascendc_cpu),
run on the emulated device (emu::launch) with tiling data from the shared tiling, filled as the
op_host TilingFunc fills it.

- The emulation's own rules, each provoked by a hand-written kernel (op/ascendc_cpu/tests/
  emu_selftest.cpp) and caught with its kind (emu::Fault: CANN's rule or the device's;
  emu::PolicyFault: the emulation's own), and its conversions and ReduceSum orders (CANN's, per
  SoC) against numpy / ml_dtypes.
- The real kernel, for float, half and bfloat16_t, on both SoC families over shapes covering the
  three schedules, chunked rows, tails that are not a multiple of 32 bytes and big/small cores:
  within the SPEC's default standard against golden.reference, and bit for bit against the CPU
  twin (both with ReduceSum in CANN's order for the SoC).
- Planted kernel-source errors, each a text edit of a copy of the kernel (the real file is never
  touched), each caught by the emulated device as a Fault or a PolicyFault naming the API and the
  rule; and plants that break only a rule CANN does not have on that SoC, which run clean there.

The C++ side is built with CMake into build/ascendc_cpu_tests (incrementally; locked for
pytest-xdist workers).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

# the CPU twin's backend (named `native` since the emulated kernel joined it)
from farm.agent.backends import native as twin_backend
from farm.pool import build
from golden.inputs import make_inputs
from golden.reference import log_softmax_grad
from golden.standards import judge
from tests.requirements import need

ROOT = Path(__file__).resolve().parents[2]
EMU_DIR = ROOT / "op" / "ascendc_cpu"
KERNEL_SOURCE = ROOT / "op" / "ascendc" / "op_kernel" / "log_softmax_grad.cpp"
BUILD_DIR = ROOT / "build" / "ascendc_cpu_tests"
PLANTED_SRC = BUILD_DIR / "planted-src"

NP_DTYPES = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}
KERNEL_DTYPES = {"float32": "float", "float16": "half", "bfloat16": "bfloat16_t"}
DTYPE_CODES = {"float32": 0, "float16": 1, "bfloat16": 27}

# emu::ReduceSumOrder
DOCUMENTED, SEQUENTIAL, TREE, LANES, BODY_TAIL = 0, 1, 2, 3, 4

A2, B310 = "Ascend910B1", "Ascend310B1"

# lsg_emu_run's return codes (POLICY: an emu::PolicyFault, a rule of the emulation's own)
OK, FAULT, REJECTED, POLICY = 0, 1, 2, 4
POLICY_NOTE = " (emulation policy: CANN accepts this; "


# ---- planted kernel-source errors ------------------------------------------------------------


@dataclass(frozen=True)
class Plant:
    """A kernel-source error: text edits (old, new, occurrences replaced) of a copy of the kernel,
    the call that reaches it, and the stop it must raise: its message starts with `fault`, its
    kind is `kind` (FAULT: emu::Fault, POLICY: emu::PolicyFault)."""

    edits: tuple[tuple[str, str, int], ...]
    dtype: str
    soc: str
    shape: tuple[int, ...]
    axes: tuple[int, ...]
    fault: str
    threads: int = 1
    kind: int = FAULT


PLANTS = {
    # A ragged tail moved with DataCopy instead of DataCopyPad (in and out).
    "ragged_tail_in": Plant(
        (("DataCopyPad(raw, gm[at], params, pad);", "DataCopy(raw, gm[at], n);", 1),),
        "float32",
        A2,
        (3, 300),
        (-1,),
        "DataCopy: length not a multiple of 32 bytes: 300 elements x 4 B = 1200 B (GM -> UB; "
        "a ragged tail needs DataCopyPad)",
    ),
    "ragged_tail_out": Plant(
        (("DataCopyPad(outGm_[at], ready, params);", "DataCopy(outGm_[at], ready, n);", 1),),
        "float16",
        A2,
        (3, 1, 70),
        (1,),
        "DataCopy: length not a multiple of 32 bytes: 70 elements x 2 B = 140 B (UB -> GM",
    ),
    # One UB buffer too many: the reduce-tail plan fills Ascend310B1's UB to the last 32 bytes.
    "extra_ub_buffer": Plant(
        (
            (
                "pipe_.InitBuffer(dyQue_, BUFFER_NUM, bytes);",
                "pipe_.InitBuffer(dyQue_, BUFFER_NUM + 1, bytes);",
                1,
            ),
        ),
        "float32",
        B310,
        (4, 300),
        (-1,),
        "TPipe::InitBuffer: UB overflow: the buffers need 304704 B, Ascend310B1 has 253952 B of "
        "UB (this call: 1 x 50784 B at UB byte 253920)",
    ),
    # A bf16 Cast reached on Ascend310B (fp16 data read as bf16): CANN's library has it, the SoC
    # table says the SoC has none (emulation policy).
    "bf16_cast_on_310b": Plant(
        (
            (
                "Cast(f, raw[t_.blockElems], RoundMode::CAST_NONE, n);",
                "Cast(f, raw[t_.blockElems].template ReinterpretCast<bfloat16_t>(), "
                "RoundMode::CAST_NONE, n);",
                1,
            ),
        ),
        "float16",
        B310,
        (2, 300),
        (-1,),
        "Cast: bf16 Cast not available on Ascend310B1: bfloat16_t -> float",
        kind=POLICY,
    ),
    # Queues used out of order.
    "deque_before_enque": Plant(
        (("que.EnQue(raw);", "", 1),),
        "float32",
        A2,
        (3, 300),
        (-1,),
        "TQue::DeQue: queue empty: DeQue without a matching EnQue (VECIN queue #0",
    ),
    "free_to_wrong_queue": Plant(
        (
            (
                "dyQue_.FreeTensor(dyRaw);\n                yQue_.FreeTensor(yRaw);",
                "dyQue_.FreeTensor(yRaw);\n                yQue_.FreeTensor(dyRaw);",
                1,
            ),
        ),
        "float32",
        A2,
        (3, 1, 70),
        (1,),
        "TQue::FreeTensor: tensor belongs to another queue: buffer 0 of VECIN queue #1",
    ),
    "use_after_free": Plant(
        (
            (
                "Mul(out, dy, yf, n);\n                dyQue_.FreeTensor(dyRaw);",
                "dyQue_.FreeTensor(dyRaw);\n                Mul(out, dy, yf, n);",
                1,
            ),
        ),
        "float32",
        A2,
        (3, 1, 70),
        (1,),
        "Mul: queue tensor used after FreeTensor: src0",
    ),
    # Two cores writing the same row: the big cores' first row computed with the small cores'
    # row count (100 rows on 48 cores: 4 big cores of 3 rows, 44 of 2).
    "overlapping_rows": Plant(
        (("rowStart_ = core * t_.rowsPerBigCore;", "rowStart_ = core * t_.rowsPerSmallCore;", 1),),
        "float32",
        A2,
        (100, 19),
        (-1,),
        "DataCopyPad: two cores write one output element: core 1 writes grad_input[38], already "
        "written by core 0",
        kind=POLICY,
    ),
    "overlapping_rows_threads": Plant(
        (("rowStart_ = core * t_.rowsPerBigCore;", "rowStart_ = core * t_.rowsPerSmallCore;", 1),),
        "float32",
        A2,
        (100, 19),
        (-1,),
        "DataCopyPad: two cores write one output element: core ",
        threads=4,
        kind=POLICY,
    ),
    # Rows nobody writes: the big cores take the small cores' row count.
    "unwritten_rows": Plant(
        (("rowCount_ = t_.rowsPerBigCore;", "rowCount_ = t_.rowsPerSmallCore;", 1),),
        "float32",
        A2,
        (100, 19),
        (-1,),
        "launch: output elements not written: 76 of 1900 elements of grad_input (first: "
        "grad_input[38])",
        kind=POLICY,
    ),
    # The scalar read of ReduceSum's result, and the next ReduceSum, without their events.
    "missing_wait_v_s": Plant(
        (("WaitFlag<HardEvent::V_S>(vToS);", "", 1),),
        "float32",
        A2,
        (3, 300),
        (-1,),
        "LocalTensor::GetValue: scalar read of a vector write without "
        "SetFlag/WaitFlag<HardEvent::V_S>: UB byte 157184",  # the reduce buffer, 4 blocks in
    ),
    "missing_wait_s_v": Plant(
        (("WaitFlag<HardEvent::S_V>(sToV);", "", 1),),
        "float32",
        B310,  # one core: the next row's ReduceSum overwrites the result read last row
        (3, 300),
        (-1,),
        "ReduceSum: vector write after a scalar access without "
        "SetFlag/WaitFlag<HardEvent::S_V>: dst at UB byte",
    ),
    "missing_wait_s_v_end": Plant(
        (("WaitFlag<HardEvent::S_V>(sToV);", "", 1),),
        "float32",
        B310,
        (1, 300),
        (-1,),
        "SetFlag<HardEvent::S_V>: no matching WaitFlag by the end of the kernel: event id 0",
    ),
    # ReduceSum's work tensor on Ascend310B: below CANN's minimum, max(1, floor(count / 64))
    # elements, or on top of the result (CANN does not check that: emulation policy).  On Atlas
    # A2 CANN's ReduceSum does not use it (RELAXED_PLANTS).
    "reduce_work_small": Plant(
        (("pipe_.InitBuffer(reduceBuf_, bytes);", "pipe_.InitBuffer(reduceBuf_, 288);", 1),),
        "float32",
        B310,
        (1, 9000),
        (-1,),
        "ReduceSum: work tensor too small: work needs 560 B (count 9000: max(1, floor(count / "
        "64)) = 140 elements), the tensor has 32 B (GetSize() 8 of float)",
    ),
    "reduce_work_on_dst": Plant(
        (
            (
                "LocalTensor<float> reduceWork = reduce[REDUCE_WORK_AT];",
                "LocalTensor<float> reduceWork = reduce;",
                1,
            ),
        ),
        "float32",
        B310,
        (3, 300),
        (-1,),
        "ReduceSum: work overlaps dst: work UB [",
        kind=POLICY,
    ),
    # fp16 data copied one element past the 32-byte boundary of the block's back half.
    "misaligned_back_half": Plant(
        (
            (
                "DataCopyPad(raw[t_.blockElems], gm[at], params, pad);",
                "DataCopyPad(raw[t_.blockElems + 1], gm[at], params, pad);",
                1,
            ),
        ),
        "float16",
        A2,
        (3, 300),
        (-1,),
        "DataCopyPad: UB address not 32-byte aligned: dst at UB byte 19650",
    ),
    # The same on Ascend310B: CANN's implementation there has no check (emulation policy).
    "misaligned_back_half_310b": Plant(
        (
            (
                "DataCopyPad(raw[t_.blockElems], gm[at], params, pad);",
                "DataCopyPad(raw[t_.blockElems + 1], gm[at], params, pad);",
                1,
            ),
        ),
        "float16",
        B310,
        (3, 300),
        (-1,),
        "DataCopyPad: UB address not 32-byte aligned: dst at UB byte 25378",
        kind=POLICY,
    ),
    # The tensor-length rule: the back half viewed 16 elements late, so that a full chunk's Cast
    # reads past the view (blockElems 9824 of fp16 on Ascend910B1's REDUCE_TAIL).
    "cast_past_back_half": Plant(
        (
            (
                "Cast(f, raw[t_.blockElems], RoundMode::CAST_NONE, n);",
                "Cast(f, raw[t_.blockElems + 16], RoundMode::CAST_NONE, n);",
                1,
            ),
        ),
        "float16",
        A2,
        (2, 2 * 9824),
        (-1,),
        "Cast: count beyond the tensor: src needs 19648 B (9824 x 2 B), the tensor has 19616 B "
        "(GetSize() 9808 of half)",
    ),
}

# Plants that break only a rule CANN has not got on the SoC: they run clean there, with the real
# kernel's bits.  (name, SoC): on Atlas A2 ReduceSum does not use its work tensor.
RELAXED_PLANTS = [("reduce_work_small", A2, (1, 9000)), ("reduce_work_on_dst", A2, (3, 300))]


def planted_source(plant: Plant) -> str:
    """The kernel source with the plant's edits; each `old` must occur exactly as often as the
    edit replaces it, so that an edited kernel cannot silently stop matching."""
    text = KERNEL_SOURCE.read_text()
    for old, new, count in plant.edits:
        found = text.count(old)
        if found < count:
            raise AssertionError(f"the kernel source no longer contains {old!r}; update PLANTS")
        text = text.replace(old, new, count)
    return text


# ---- the build -------------------------------------------------------------------------------


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ))
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{tail}")


def build_emulation() -> Path:
    """Configure (once) and build op/ascendc_cpu into BUILD_DIR with every plant's copy."""
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with open(f"{BUILD_DIR}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        PLANTED_SRC.mkdir(exist_ok=True)
        wanted = {f"{name}.{KERNEL_DTYPES[p.dtype]}.cpp" for name, p in PLANTS.items()}
        for stale in PLANTED_SRC.glob("*.cpp"):
            if stale.name not in wanted:
                stale.unlink()
        for name, plant in PLANTS.items():
            _write_if_changed(
                PLANTED_SRC / f"{name}.{KERNEL_DTYPES[plant.dtype]}.cpp", planted_source(plant)
            )
        cmake = build.cmake_executable()
        if not (BUILD_DIR / "CMakeCache.txt").exists():
            _run(
                [
                    cmake,
                    "-S",
                    str(EMU_DIR),
                    "-B",
                    str(BUILD_DIR),
                    "-DCMAKE_BUILD_TYPE=Release",
                    f"-DEMU_PLANTED_DIR={PLANTED_SRC}",
                ]
            )
        _run([cmake, "--build", str(BUILD_DIR), "-j", str(os.cpu_count() or 2)])
    return BUILD_DIR


class TilingRecord(twin_backend.TilingRecord):
    """lsg_tiling_record (op/tiling/lsg_types.h)."""


class Emulation:
    """The emulated device and the kernels, through the test driver's C entry points."""

    def __init__(self, build_dir: Path):
        self.dir = build_dir
        self.lib = ctypes.CDLL(str(build_dir / "libemu_lsg.so"))
        p, i32, i64 = ctypes.POINTER, ctypes.c_int32, ctypes.c_int64
        self.lib.lsg_emu_run.argtypes = [
            ctypes.c_void_p,
            ctypes.c_char_p,
            i32,
            i32,
            p(i64),
            p(i64),
            i32,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            i32,
            i32,
            i32,
            p(TilingRecord),
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        self.lib.lsg_emu_run.restype = ctypes.c_int
        self.lib.lsg_emu_narrow.argtypes = [i32, i32, ctypes.c_void_p, ctypes.c_void_p, i64]
        self.lib.lsg_emu_widen.argtypes = [i32, ctypes.c_void_p, ctypes.c_void_p, i64]
        self.lib.lsg_emu_reduce_sum.argtypes = [
            ctypes.c_char_p,
            i32,
            ctypes.c_void_p,
            i32,
            p(ctypes.c_float),
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        self.lib.lsg_emu_tiling_data_size.restype = ctypes.c_size_t
        self.kernels = ctypes.CDLL(str(build_dir / "liblsg_emu_kernels.so"))
        self.planted: dict[tuple[str, str], ctypes.CDLL] = {}

    def kernel(self, dtype: str, plant: str | None = None) -> int:
        """The address of log_softmax_grad_<dtype>: the real kernel's, or a planted copy's."""
        lib = self.kernels if plant is None else self._planted(plant, dtype)
        fn = getattr(lib, f"log_softmax_grad_{KERNEL_DTYPES[dtype]}")
        address = ctypes.cast(fn, ctypes.c_void_p).value
        assert address is not None, f"{fn}: a null address"
        return address

    def _planted(self, plant: str, dtype: str) -> ctypes.CDLL:
        key = (plant, dtype)
        if key not in self.planted:
            name = f"libplanted_{plant}_{KERNEL_DTYPES[dtype]}.so"
            self.planted[key] = ctypes.CDLL(str(self.dir / "planted" / name))
        return self.planted[key]

    def run(
        self,
        kernel: int,
        dy: np.ndarray,
        y: np.ndarray,
        axes,
        soc: str,
        *,
        threads: int = 1,
        order: int = DOCUMENTED,
        skip_validate: bool = False,
    ) -> tuple[int, str, np.ndarray, dict]:
        """(return code, message, out, tiling) of one call; out starts as NaN."""
        dtype = next(k for k, v in NP_DTYPES.items() if v == dy.dtype)
        dy, y = np.require(dy, requirements="C"), np.require(y, requirements="C")  # 0-d stays 0-d
        out = np.full(dy.shape, np.nan, dtype=dy.dtype)
        shape = (ctypes.c_int64 * max(dy.ndim, 1))(*dy.shape)
        c_axes = (ctypes.c_int64 * max(len(axes), 1))(*axes)
        record = TilingRecord()
        message = ctypes.create_string_buffer(2048)
        rc = self.lib.lsg_emu_run(
            kernel,
            soc.encode(),
            DTYPE_CODES[dtype],
            dy.ndim,
            shape,
            c_axes,
            len(axes),
            dy.ctypes.data,
            y.ctypes.data,
            out.ctypes.data,
            threads,
            order,
            int(skip_validate),
            ctypes.byref(record),
            message,
            len(message),
        )
        return rc, message.value.decode(), out, record.as_dict()

    def narrow(self, x: np.ndarray, dtype: str, mode: int) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = np.empty(x.shape, dtype=np.uint16)
        assert (
            self.lib.lsg_emu_narrow(
                DTYPE_CODES[dtype], mode, x.ctypes.data, out.ctypes.data, x.size
            )
            == 0
        )
        return out.view(NP_DTYPES[dtype])

    def widen(self, bits: np.ndarray, dtype: str) -> np.ndarray:
        bits = np.ascontiguousarray(bits, dtype=np.uint16)
        out = np.empty(bits.shape, dtype=np.float32)
        assert (
            self.lib.lsg_emu_widen(DTYPE_CODES[dtype], bits.ctypes.data, out.ctypes.data, bits.size)
            == 0
        )
        return out

    def reduce_sum(self, x: np.ndarray, soc: str, order: int) -> np.float32:
        x = np.ascontiguousarray(x, dtype=np.float32)
        result = ctypes.c_float()
        message = ctypes.create_string_buffer(1024)
        rc = self.lib.lsg_emu_reduce_sum(
            soc.encode(), order, x.ctypes.data, x.size, ctypes.byref(result), message, len(message)
        )
        assert rc == OK, message.value.decode()
        return np.float32(result.value)


@pytest.fixture(scope="session")
def emu() -> Emulation:
    return Emulation(build_emulation())


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and np.array_equal(a.view(np.uint8), b.view(np.uint8))
    )


# ---- the emulation itself --------------------------------------------------------------------


def test_selftest_every_rule(emu):
    """Each rule of the emulated device on a hand-written kernel (emu_selftest.cpp)."""
    proc = subprocess.run([str(emu.dir / "emu_selftest")], capture_output=True, text=True)
    failed = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert proc.returncode == 0 and not failed, proc.stdout + proc.stderr
    assert "0 failed" in proc.stdout and proc.stdout.count("\nok ") >= 40


def _cxx() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++")
    need(cxx is not None, "g++ (apt-get install g++)")
    assert cxx is not None
    return cxx


INCLUDES = [
    f"-I{EMU_DIR / 'include'}",
    f"-I{ROOT / 'op/ascendc/op_host'}",
    f"-I{ROOT / 'op/tiling'}",
]
WARNINGS = ["-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Wpedantic"]


def _kernel_flags(ctype: str) -> list[str]:
    return [
        f"-DDTYPE_GRAD_OUTPUT={ctype}",
        f"-Dlog_softmax_grad_custom=log_softmax_grad_{ctype}",
        '-DEMU_TILING_HEADER="log_softmax_grad_tiling.h"',
    ]


def test_compiles_warning_free():
    """The kernel (every dtype) and the emulation compile with -Wall -Wextra -Wpedantic -Werror;
    the kernel's one warning is its unused parameter `workspace` (it needs none)."""
    cxx = _cxx()
    jobs = [
        [
            *WARNINGS,
            "-Werror",
            "-Wno-unused-parameter",
            *INCLUDES,
            *_kernel_flags(t),
            str(KERNEL_SOURCE),
        ]
        for t in KERNEL_DTYPES.values()
    ]
    for source in ("src/device.cpp", "tests/lsg_emu_driver.cpp", "tests/emu_selftest.cpp"):
        jobs.append([*WARNINGS, "-Werror", *INCLUDES, str(EMU_DIR / source)])
    env = {**os.environ, "LC_ALL": "C"}
    procs = [
        subprocess.Popen([cxx, *job], stderr=subprocess.PIPE, text=True, env=env) for job in jobs
    ]
    for job, proc in zip(jobs, procs, strict=True):
        _, err = proc.communicate()
        assert proc.returncode == 0, f"{job[-1]}:\n{err}"
    warned = subprocess.run(
        [cxx, *WARNINGS, *INCLUDES, *_kernel_flags("float"), str(KERNEL_SOURCE)],
        capture_output=True,
        text=True,
        env=env,
    )
    warnings = [line for line in warned.stderr.splitlines() if "warning:" in line]
    assert len(warnings) == 1 and "unused parameter 'workspace'" in warnings[0], warnings


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrowing_rint_matches_numpy(emu, dtype):
    """Cast float -> half / bfloat16 in CAST_RINT (and CAST_NONE) is round to nearest even, as
    numpy and ml_dtypes round: on every float bit pattern class (random, near the 2-byte range's
    edges, subnormals, specials)."""
    rng = np.random.default_rng(11)
    bits = rng.integers(0, 1 << 32, size=400_000, dtype=np.uint64).astype(np.uint32)
    edges = np.array(
        [
            65504,
            65519.99,
            65520,
            65536,
            6.1e-5,
            5.96e-8,
            2.98e-8,
            1e-45,
            3.4e38,
            0.0,
            -0.0,
            np.inf,
            -np.inf,
        ],
        dtype=np.float32,
    )
    x = np.concatenate([bits.view(np.float32), edges, -edges])
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is the point
        want = x.astype(NP_DTYPES[dtype])
    for mode in (0, 1):
        got = emu.narrow(x, dtype, mode)
        nan = np.isnan(want.astype(np.float32))
        assert np.array_equal(np.isnan(got.astype(np.float32)), nan)
        assert same_bits(got[~nan], want[~nan])


def _directed_reference(x: np.ndarray, dtype: str, mode: int) -> np.ndarray:
    """FLOOR (2), CEIL (3), ROUND (4), TRUNC (5), ODD (6) from the two neighbours of x in the
    2-byte format (finite, non-NaN x)."""
    t = NP_DTYPES[dtype]
    r = x.astype(t)
    rf = r.astype(np.float64)
    xf = x.astype(np.float64)
    with np.errstate(over="ignore"):  # the neighbour of the largest finite value is inf
        below = np.where(rf <= xf, r, np.nextafter(r, t.type(-np.inf)))
        above = np.where(rf >= xf, r, np.nextafter(r, t.type(np.inf)))
    exact = rf == xf
    lo, hi = below.astype(np.float64), above.astype(np.float64)
    if mode == 2:
        pick_hi = np.zeros(x.shape, bool)
    elif mode == 3:
        pick_hi = np.ones(x.shape, bool)
    elif mode == 4:  # nearest, ties away from zero
        d_lo, d_hi = xf - lo, hi - xf
        pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (xf > 0))
    elif mode == 5:
        pick_hi = xf < 0
    else:  # odd: the neighbour with an odd last bit
        pick_hi = (above.view(np.uint16) & 1) == 1
    out = np.where(pick_hi, above, below)
    return np.where(exact, r, out)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mode", [2, 3, 4, 5, 6])
def test_narrowing_directed_modes(emu, dtype, mode):
    """CAST_FLOOR / CEIL / ROUND / TRUNC / ODD: the neighbour the mode picks (finite inputs up to
    the largest finite 2-byte value, where both neighbours are finite)."""
    rng = np.random.default_rng(12 + mode)
    limit = 65504.0 if dtype == "float16" else 3.38e38
    x = np.concatenate(
        [
            rng.uniform(-limit, limit, 50_000),
            rng.normal(0, 1, 50_000) * 10.0 ** rng.integers(-8, 4, 50_000),
        ]
    ).astype(np.float32)
    x = x[np.abs(x) < limit]
    assert same_bits(emu.narrow(x, dtype, mode), _directed_reference(x, dtype, mode))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_widening_is_exact(emu, dtype):
    bits = np.arange(1 << 16, dtype=np.uint16)
    want = bits.view(NP_DTYPES[dtype]).astype(np.float32)
    got = emu.widen(bits, dtype)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan) and same_bits(got[~nan], want[~nan])


def _tree(v: list[np.float32]) -> np.float32:
    """A binary tree of adjacent pairs; a value without a partner passes to the next level."""
    while len(v) > 1:
        nxt = [np.float32(v[i] + v[i + 1]) for i in range(0, len(v) - 1, 2)]
        if len(v) % 2:
            nxt.append(v[-1])
        v = nxt
    return v[0]


def _body_tail(x: np.ndarray) -> np.float32:
    """CANN's ReduceSum on Ascend310B (dav_m300): the whole repeats are the body (count < 64: all
    of it, one masked repeat), each a tree, their sums as trees of 64 consecutive sums (a short
    last group a tree of its own), those again as a tree, until one is left; the count % 64
    elements after the body are the tail, a tree of its own; the result body + tail."""
    n = len(x)
    whole = n // 64
    tail = n % 64 if whole else 0
    body = x[: n - tail]
    level = [_tree(list(body[i : i + 64])) for i in range(0, len(body), 64)]
    while len(level) > 1:
        level = [_tree(level[i : i + 64]) for i in range(0, len(level), 64)]
    if not tail:
        return level[0]
    return np.float32(level[0] + _tree(list(x[n - tail :])))


def _reduce_reference(x: np.ndarray, order: int) -> np.float32:
    """ReduceSum's orders in float32 with numpy: CANN's on Atlas A2 (SEQUENTIAL: the repeats, the
    last one short, each a tree, added in sequence) and on Ascend310B (BODY_TAIL); the old reading
    of the documentation (TREE: the short last repeat inside the tree of repeats) and the lane
    model (LANES)."""
    x = x.astype(np.float32)
    repeats = [list(x[i : i + 64]) for i in range(0, len(x), 64)]
    if order == SEQUENTIAL:
        acc = _tree(repeats[0])
        for rep in repeats[1:]:
            acc = np.float32(acc + _tree(rep))
        return acc
    if order == TREE:
        level = [_tree(rep) for rep in repeats]
        while len(level) > 1:
            level = [_tree(level[i : i + 64]) for i in range(0, len(level), 64)]
        return level[0]
    if order == BODY_TAIL:
        return _body_tail(x)
    lanes = x[:64].copy()
    for i in range(64, len(x), 64):
        m = min(64, len(x) - i)
        lanes[:m] += x[i : i + m]
    width = min(len(x), 64)
    while width > 1:
        h = (width + 1) // 2
        lanes[: width - h] += lanes[h:width]
        width = h
    return lanes[0]


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 127, 128, 130, 4097, 4160, 9824, 12688, 12689])
def test_reduce_sum_orders(emu, n):
    """The emulated ReduceSum adds in the order asked for; the default order of each SoC is
    CANN's: body + tail on Ascend310B, the repeats in sequence on Ascend910B."""
    x = np.random.default_rng(n).normal(0, 1, n).astype(np.float32) * np.float32(1e3)
    for order in (SEQUENTIAL, TREE, LANES, BODY_TAIL):
        want = _reduce_reference(x, order)
        assert emu.reduce_sum(x, A2, order).view(np.uint32) == want.view(np.uint32), order
        assert emu.reduce_sum(x, B310, order).view(np.uint32) == want.view(np.uint32), order
    assert emu.reduce_sum(x, A2, DOCUMENTED).view(np.uint32) == (
        _reduce_reference(x, SEQUENTIAL).view(np.uint32)
    )
    assert emu.reduce_sum(x, B310, DOCUMENTED).view(np.uint32) == _body_tail(x).view(np.uint32)


@pytest.fixture(scope="module")
def values_12688() -> np.ndarray:
    x = np.zeros(12688, dtype=np.float32)
    x[0] = 1.0
    x[192 * 64] = x[12672] = np.float32(2.0**-24)
    return x


def test_reduce_sum_over_12688_on_310b_is_body_plus_tail(emu, values_12688):
    """12688 floats (one REDUCE_TAIL block of fp32 on Ascend310B1: 198 whole repeats and a tail
    of 16), values where CANN's order (body + tail) and the old one (the tail inside the last tree
    of repeat sums) differ in the last bit: 1 at x[0], 2^-24 in repeat 192 (the last, short group
    of repeat sums) and 2^-24 in the tail.  Body + tail: (1 + 2^-24) + 2^-24, a tie to even
    twice, 1.  The tail in the tree: 1 + (2^-24 + 2^-24) = 1 + 2^-23."""
    x = values_12688
    want = _body_tail(x)
    old = _reduce_reference(x, TREE)
    assert want == np.float32(1.0) and old == np.float32(1.0) + np.float32(2.0**-23)
    assert want.view(np.uint32) != old.view(np.uint32)
    got = emu.reduce_sum(x, B310, DOCUMENTED)
    assert got.view(np.uint32) == want.view(np.uint32)
    assert emu.reduce_sum(x, B310, TREE).view(np.uint32) == old.view(np.uint32)
    # A random background keeps the difference in the last bits and the agreement with numpy.
    rng = np.random.default_rng(12688)
    y = (rng.normal(0, 1, x.size) * 2.0**-30).astype(np.float32) + x
    assert emu.reduce_sum(y, B310, DOCUMENTED).view(np.uint32) == _body_tail(y).view(np.uint32)


# ---- the real kernel -------------------------------------------------------------------------

# (shape, axes, SoC, schedule, chunk count or None): the three schedules, chunked rows, tails not
# a multiple of 32 bytes, more rows than cores (big and small cores), rank 0, an axis list, empty.
CASES = [
    ((3, 1, 70), (1,), A2, "NO_REDUCE", 1),
    ((2, 1, 8200), (1,), A2, "NO_REDUCE", 2),
    ((50, 1, 33), (1,), A2, "NO_REDUCE", 1),
    ((), (-1,), A2, "NO_REDUCE", 1),
    ((5, 300), (-1,), A2, "REDUCE_TAIL", 1),
    ((100, 19), (-1,), A2, "REDUCE_TAIL", 1),
    ((2, 19651), (-1,), A2, "REDUCE_TAIL", 3),
    ((2, 7, 33), (1,), A2, "REDUCE_MID", 1),
    ((60, 5, 7), (1,), A2, "REDUCE_MID", 1),
    ((2, 130, 5), (1,), A2, "REDUCE_MID", 1),
    ((1, 3, 9833), (1,), A2, "REDUCE_MID", 2),
    ((2, 3, 4, 5), (1, 2), A2, "REDUCE_MID", 1),
    ((0, 5), (-1,), A2, None, None),
    ((4, 0, 3), (1,), A2, None, None),
    ((3, 1, 1000), (1,), B310, "NO_REDUCE", 1),
    ((7, 33), (-1,), B310, "REDUCE_TAIL", 1),
    ((2, 12689), (-1,), B310, "REDUCE_TAIL", None),  # 2 chunks for fp16, 1 for fp32
    ((1, 25500), (-1,), B310, "REDUCE_TAIL", 3),
    ((1, 3, 12697), (1,), B310, "REDUCE_MID", 2),
    ((3, 70, 9), (1,), B310, "REDUCE_MID", 1),
]


def _cases():
    for shape, axes, soc, schedule, chunks in CASES:
        for dtype in NP_DTYPES:
            if dtype == "bfloat16" and soc == B310:
                continue
            yield pytest.param(
                shape, axes, soc, schedule, chunks, dtype, id=f"{soc}-{dtype}-{shape}-{axes}"
            )


@pytest.mark.parametrize("shape, axes, soc, schedule, chunks, dtype", list(_cases()))
def test_real_kernel(emu, twin_lib, shape, axes, soc, schedule, chunks, dtype):
    """The unchanged kernel on the emulated device: clean (no Fault, no PolicyFault), the tiling
    the twin plans, within the default standard against the golden, bit for bit equal to the twin
    (both add in CANN's ReduceSum order for the SoC)."""
    dy, y = make_inputs(shape, dtype, axes, "uniform", "normal", seed=len(shape) + sum(shape))
    kernel = emu.kernel(dtype)
    rc, message, out, tiling = emu.run(kernel, dy, y, axes, soc)
    assert rc == OK, message

    twin = twin_backend.run(dy, y, axes, soc, library=twin_lib)
    assert (twin.status, twin.reason) == (0, "ok"), twin.message
    assert twin.tiling is not None and twin.out is not None  # an accepted call has both
    for field in (
        "schedule",
        "key",
        "cores_used",
        "big_cores",
        "block_bytes",
        "block_elems",
        "chunk_count",
        "tail_elems",
    ):
        assert tiling[field] == twin.tiling[field], field
    if schedule is not None:
        assert tiling["schedule_name"] == schedule
    if chunks is not None:
        assert tiling["chunk_count"] == chunks

    golden = log_softmax_grad(dy, y, axes)
    verdict = judge("experimental", out, golden, None)
    assert verdict.passed, verdict.reason

    assert same_bits(out, twin.out)


def test_threads_give_the_same_bits(emu):
    """48 cores on 4 host threads: the same bits as one by one."""
    shape, axes = (200, 3, 77), (1,)
    dy, y = make_inputs(shape, "float16", axes, "normal", "outliers", seed=5)
    kernel = emu.kernel("float16")
    rc1, m1, one, _ = emu.run(kernel, dy, y, axes, A2, threads=1)
    rc4, m4, four, _ = emu.run(kernel, dy, y, axes, A2, threads=4)
    assert (rc1, rc4) == (OK, OK), (m1, m4)
    assert same_bits(one, four)


@pytest.mark.parametrize("special", ["nan_dy", "inf_dy", "nan_y", "neginf_y"])
def test_real_kernel_specials_match_twin(emu, twin_lib, special):
    """NaN and inf inputs: the same bits as the twin (NaN/inf propagate as the twin's do)."""
    shape, axes = (6, 2, 300), (1,)
    dy, y = make_inputs(shape, "float32", axes, "uniform", "normal", special, seed=9)
    rc, message, out, _ = emu.run(emu.kernel("float32"), dy, y, axes, A2)
    assert rc == OK, message
    twin_out = twin_backend.run(dy, y, axes, A2, library=twin_lib).out
    assert twin_out is not None  # the twin accepts the call too
    assert same_bits(out, twin_out)


def test_host_rejects_bf16_on_310b_before_any_kernel(emu):
    dy, y = make_inputs((2, 300), "bfloat16", (-1,), "uniform", "normal", seed=1)
    rc, message, out, _ = emu.run(emu.kernel("bfloat16"), dy, y, (-1,), B310)
    assert rc == REJECTED and "bfloat16 is not supported on Ascend310B1" in message
    assert np.isnan(out.astype(np.float32)).all()


def test_bf16_kernel_on_310b_faults(emu):
    """The bf16 kernel launched on Ascend310B anyway (the host check bypassed): its Cast stops,
    as emulation policy (CANN's class library has the Cast; the SoC table says the SoC has not)."""
    dy, y = make_inputs((2, 300), "bfloat16", (-1,), "uniform", "normal", seed=1)
    rc, message, _, _ = emu.run(emu.kernel("bfloat16"), dy, y, (-1,), B310, skip_validate=True)
    assert rc == POLICY
    assert message.startswith(
        "Cast: bf16 Cast not available on Ascend310B1: bfloat16_t -> float, core 0" + POLICY_NOTE
    )
    assert "SoC table" in message and message.endswith(")")


def test_tiling_data_size(emu):
    """The host side's GetDataSize(): the 11 fields of log_softmax_grad_tiling.h, 9 int64 and 2
    int32, 80 bytes, what GET_TILING_DATA reads on the kernel side."""
    assert emu.lib.lsg_emu_tiling_data_size() == 80


# ---- planted kernel-source errors ------------------------------------------------------------


@pytest.mark.parametrize("name", list(PLANTS))
def test_planted_error_is_a_fault(emu, name):
    plant = PLANTS[name]
    dy, y = make_inputs(plant.shape, plant.dtype, plant.axes, "uniform", "normal", seed=2)
    rc, message, _, _ = emu.run(
        emu.kernel(plant.dtype, name), dy, y, plant.axes, plant.soc, threads=plant.threads
    )
    assert rc == plant.kind, f"not the expected kind ({rc}, want {plant.kind}): {message}"
    assert message.startswith(plant.fault), message
    assert "\n" not in message
    assert (POLICY_NOTE in message) == (plant.kind == POLICY), message
    api, rule = message.split(": ")[:2]
    assert plant.fault.startswith(f"{api}: {rule}")


@pytest.mark.parametrize("name, soc, shape", RELAXED_PLANTS)
def test_planted_error_cann_accepts_runs_clean(emu, name, soc, shape):
    """A plant that breaks only a rule CANN has not got on this SoC (the emulation follows CANN
    there): no stop, and the real kernel's bits."""
    plant = PLANTS[name]
    dy, y = make_inputs(shape, plant.dtype, plant.axes, "uniform", "normal", seed=2)
    rc, message, out, _ = emu.run(emu.kernel(plant.dtype, name), dy, y, plant.axes, soc)
    assert rc == OK, message
    rc, message, real, _ = emu.run(emu.kernel(plant.dtype), dy, y, plant.axes, soc)
    assert rc == OK, message
    assert same_bits(out, real)


def test_planted_copies_leave_the_kernel_untouched(emu):
    """Every plant is a copy under build/: each built copy is the real source with the plant's
    edits, and differs from it; the kernel the real tests run is the real file's."""
    real = KERNEL_SOURCE.read_text()
    for name, plant in PLANTS.items():
        copy = (PLANTED_SRC / f"{name}.{KERNEL_DTYPES[plant.dtype]}.cpp").read_text()
        assert copy == planted_source(plant) != real, name
    cache = (emu.dir / "CMakeCache.txt").read_text().splitlines()
    source = next(line for line in cache if line.startswith("EMU_KERNEL_SOURCE:FILEPATH="))
    assert Path(source.split("=", 1)[1]).resolve() == KERNEL_SOURCE.resolve()
