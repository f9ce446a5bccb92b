"""golden/fused.c judges with numpy's bits: every record the same whichever path made it, and a
library that differs anywhere is refused before it judges."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from farm.agent.histogram import HistogramAccumulator, default_edges
from golden import fused, fused_library
from golden.judge import judge_case
from golden.tolerance import Tolerance
from tests.golden import fp32_kernel
from tests.golden.test_judge import DTYPES, KINDS, outside_inputs
from tests.requirements import need

REPO = Path(__file__).resolve().parents[2]

# [shape, axes]: reduce extent 1, lines along memory, across it (reduce-mid and reduce-first),
# lengths around the pairwise blocks, and a case larger than the slabs it is cut into below.
SHAPES = [
    ((16, 1), (-1,)),
    ((4, 1000), (-1,)),
    ((3, 70, 5), (1,)),
    ((129, 6), (0,)),
    ((2, 8, 9, 3), (1, 2)),
    ((3, 4100), (-1,)),
]


def the_library() -> fused.Kernel:
    k = fused.kernel() if fused.mode() != "off" else None
    need(k is not None, f"the fused judging pass ({fused.status()})")
    assert k is not None
    return k


def planted(out: np.ndarray, how: str, rng: np.random.Generator) -> np.ndarray:
    """The output of a wrong kernel: a few elements an ulp up, one far off, one NaN."""
    out = out.copy()
    flat = out.reshape(-1)
    if how == "nudged" and flat.size:
        at = rng.choice(flat.size, min(5, flat.size), replace=False)
        flat[at] = np.nextafter(flat[at], np.inf).astype(out.dtype)
    elif how == "far" and flat.size:
        flat[rng.integers(flat.size)] *= 3
    elif how == "nan" and flat.size:
        flat[rng.integers(flat.size)] = np.nan
    return out


def judged(
    monkeypatch: pytest.MonkeyPatch, path: str, *args: Any, **kwargs: Any
) -> tuple[bool, str, str, str, str]:
    monkeypatch.setenv(fused.ENV_MODE, path)
    j = judge_case(*args, **kwargs)
    return j.passed, j.reason, repr(j.metrics), repr(j.verdicts), repr(j.applicability)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
def test_the_fused_passes_judge_every_kind_of_input_as_numpy_does(
    monkeypatch: pytest.MonkeyPatch, dtype: str, kind: str
) -> None:
    the_library()
    rng = np.random.default_rng(len(kind))
    for shape, axes in SHAPES:
        dy, y = outside_inputs(kind, shape, dtype, rng)
        correct = fp32_kernel.run(dy, y, axes, dtype, order="pairwise")
        for how in ("correct", "nudged", "far", "nan"):
            out = correct if how == "correct" else planted(correct, how, rng)
            for slab in (1 << 20, 1000):  # one slab, and several (their sums chained)
                args = (dy, y, out, axes, dtype)
                kw = {"slab_elements": slab}
                want = judged(monkeypatch, "off", *args, **kw)
                got = judged(monkeypatch, "require", *args, **kw)
                assert got == want, f"{shape} {axes} {how} slab {slab}"


def test_the_fused_passes_judge_a_tolerance_and_a_benchmark_as_numpy_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    the_library()
    rng = np.random.default_rng(5)
    dy, y = outside_inputs("plain", (6, 900), "float16", rng)
    out = fp32_kernel.run(dy, y, (-1,), "float16")
    bench = planted(out, "nudged", rng)
    kw = {"tolerance": Tolerance(rtol=1e-3, atol=1e-5, max_fail_fraction=0.0), "benchmark": bench}
    want = judged(monkeypatch, "off", dy, y, out, (-1,), "float16", **kw)
    assert judged(monkeypatch, "require", dy, y, out, (-1,), "float16", **kw) == want


# Changes a compiler or an edit could make, each of which moves some bits: the library must be
# refused for every one.
MUTANTS = {
    "the 8 lanes folded in another order": (
        "((LANE(r[k], 0) + LANE(r[k], 1)) + (LANE(r[k], 2) + LANE(r[k], 3)))",
        "(((LANE(r[k], 0) + LANE(r[k], 1)) + LANE(r[k], 2)) + LANE(r[k], 3))",
    ),
    "halves not at multiples of 8": ("half -= half % 8;", ""),
    "a fused multiply-add": (
        "double q = ex * s[line];\n                    g[x] = d[x] - q;",
        "g[x] = fma(-ex, s[line], d[x]);",
    ),
    "the bound's terms in another order": (
        "b += t;\n                b += four_flush;",
        "b += four_flush;\n                b += t;",
    ),
    "the rounding bias's sign at zero": ("(dord & (g > 0))", "(dord & (g >= 0))"),
    "the half ulp's carry": (">= carry)", "> carry)"),
    "an element's count off the edge": (
        "small & (err > p->small_err_bound)",
        "small & (err >= p->small_err_bound)",
    ),
    "the lanes past a short block's end counted": ("t->i[k] -= yes & valid;", "t->i[k] -= yes;"),
    "an error exactly at its bound binned above it": (
        "(vl)((rbits_ & (((int64_t)1 << 52) - 1)) != 0)",
        "(vl)((rbits_ & (((int64_t)1 << 52) - 1)) >= 0)",
    ),
}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_a_library_that_differs_from_numpy_is_refused(tmp_path: Path, mutant: str) -> None:
    the_library()
    old, new = MUTANTS[mutant]
    text = fused_library.SOURCE.read_text()
    assert text.count(old) == 1, f"the mutant's text is not in {fused_library.SOURCE.name} once"
    source = tmp_path / "fused.c"
    source.write_text(text.replace(old, new))
    library = tmp_path / "mutant.so"
    fused_library.build(library, source)
    assert fused.self_check(fused_library.Kernel(library)) != ""


def test_the_library_as_built_passes_its_own_check() -> None:
    assert fused.self_check(the_library()) == ""


def test_without_a_compiler_judging_takes_the_numpy_path_and_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(fused, "_LOADED", {})
    monkeypatch.setenv(fused_library.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv(fused.ENV_MODE, "auto")
    assert fused.kernel() is None
    assert fused.status().startswith("numpy (golden/fused.c could not be built or loaded")
    dy, y = outside_inputs("plain", (4, 100), "float32", np.random.default_rng(1))
    assert judge_case(dy, y, fp32_kernel.run(dy, y, (-1,), "float32"), (-1,), "float32").passed
    monkeypatch.setenv(fused.ENV_MODE, "require")
    with pytest.raises(RuntimeError, match=r"LSG_FUSED=require, but .*could not be built"):
        fused.kernel()
    from farm.agent.identity import judging_path

    said, problems = judging_path()
    assert said.startswith("none: ") and problems and "could not be built" in problems[0]


def test_a_host_without_a_home_directory_judges_on_the_numpy_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_home(cls: type[Path]) -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(fused, "_LOADED", {})
    monkeypatch.delenv(fused_library.ENV_CACHE, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv(fused.ENV_MODE, "auto")
    monkeypatch.setattr(fused_library.Path, "home", classmethod(no_home))
    assert fused.kernel() is None
    assert fused.status() == (
        "numpy (golden/fused.c could not be built or loaded: Could not determine home directory.)"
    )


def test_a_relative_cache_directory_is_refused_by_name_and_judging_goes_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(fused, "_LOADED", {})
    monkeypatch.setenv(fused.ENV_MODE, "auto")
    monkeypatch.setenv(fused_library.ENV_CACHE, "on")
    assert fused.kernel() is None
    assert fused.status() == (
        "numpy (golden/fused.c could not be built or loaded: $LSG_FUSED_CACHE='on' is not an "
        "absolute path: give a directory such as /var/cache/lsg-farm or ~/.cache/lsg-farm)"
    )
    assert list(tmp_path.iterdir()) == []  # nothing made where the agent happened to start
    dy, y = outside_inputs("plain", (4, 100), "float32", np.random.default_rng(1))
    assert judge_case(dy, y, fp32_kernel.run(dy, y, (-1,), "float32"), (-1,), "float32").passed


def test_the_cache_directory_expands_home_and_ignores_a_relative_xdg_cache_home(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    monkeypatch.setenv(fused_library.ENV_CACHE, "~/lsg")
    assert fused_library.cache_dir() == Path("/home/someone/lsg")
    monkeypatch.delenv(fused_library.ENV_CACHE)
    monkeypatch.setenv("XDG_CACHE_HOME", "cache")
    assert fused_library.cache_dir() == Path("/home/someone/.cache/lsg-farm")
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert fused_library.cache_dir() == Path("/xdg/lsg-farm")


def test_the_path_can_be_chosen_and_a_wrong_choice_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(fused.ENV_MODE, "off")
    assert fused.kernel() is None and fused.status() == "numpy ($LSG_FUSED=off)"
    monkeypatch.setenv(fused.ENV_MODE, "fast")
    with pytest.raises(RuntimeError, match=r"\$LSG_FUSED='fast' is not one of auto, off, require"):
        fused.kernel()


def test_a_built_library_is_found_again_not_rebuilt(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    the_library()
    monkeypatch.setattr(fused, "_LOADED", {})
    monkeypatch.setenv(fused_library.ENV_CACHE, str(tmp_path))
    monkeypatch.setenv(fused.ENV_MODE, "auto")
    first = fused.kernel()
    assert first is not None and first.path.parent == tmp_path
    stamp = first.path.stat().st_mtime_ns
    monkeypatch.setattr(fused, "_LOADED", {})
    monkeypatch.setattr(fused_library, "build", lambda *a: pytest.fail("built again"))
    again = fused.kernel()
    assert again is not None and again.path == first.path
    assert first.path.stat().st_mtime_ns == stamp


def test_processes_starting_together_build_the_library_once(tmp_path: Path) -> None:
    the_library()
    calls = tmp_path / "calls"
    cc = tmp_path / "cc"
    cc.write_text(f'#!/bin/sh\necho built >> {calls}\nexec cc "$@"\n')
    cc.chmod(0o755)
    env = {
        **os.environ,
        "CC": str(cc),
        fused_library.ENV_CACHE: str(tmp_path / "cache"),
        fused.ENV_MODE: "require",
    }
    code = "from golden import fused; print(fused.status())"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], env=env, cwd=REPO, stdout=subprocess.PIPE)
        for _ in range(3)
    ]
    said = {p.communicate(timeout=300)[0].decode().strip() for p in procs}
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert len(said) == 1 and said.pop().startswith(f"fused ({tmp_path / 'cache'}")
    assert calls.read_text() == "built\n"


def test_the_library_is_built_for_the_architectures_baseline_never_for_this_cpu(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    the_library()
    calls = tmp_path / "calls"
    cc = tmp_path / "cc"  # a compiler that refuses -march=, as a cross compiler might
    cc.write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\n'
        'case " $* " in *" -march="*) exit 1;; esac\nexec cc "$@"\n'
    )
    cc.chmod(0o755)
    monkeypatch.setattr(fused, "_LOADED", {})
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv(fused_library.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.setenv(fused.ENV_MODE, "require")
    monkeypatch.setattr(fused_library.platform, "machine", lambda: "x86_64")
    assert fused.kernel() is not None
    first, second = (line.split() for line in calls.read_text().splitlines())
    assert "-march=x86-64" in first and not any(f.startswith("-march") for f in second)
    assert "-march=native" not in first + second


def test_hosts_of_other_cpus_sharing_a_cache_share_one_library(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Built for the baseline, the library runs on every CPU of its architecture: one for them
    all, named by the architecture (and the C library it links against), never by the CPU."""
    names = set()
    for features in ("fpu sse2 avx2", "fpu sse2 avx2 avx512f", None):
        monkeypatch.setattr(fused_library, "cpu_features", lambda f=features: f)
        names.add(fused_library.library_path())
    assert len(names) == 1
    monkeypatch.setattr(fused_library.platform, "machine", lambda: "aarch64")
    assert fused_library.library_path() not in names and fused_library.baseline_flags() == (
        "-march=armv8-a",
    )


def _driver_samples(path: Path) -> None:
    """fused_driver.c's input: lsg_compared's arguments for samples of every dtype and length,
    with and without a bound (as golden/metrics.py passes them)."""
    from golden import rounding
    from golden.dtypes import numpy_dtype, round_to

    chunks = []
    for code, dtype in enumerate(("float32", "float16", "bfloat16")):
        uint = np.uint32 if dtype == "float32" else np.uint16
        for seed, m in enumerate(fused.SAMPLE_LENGTHS):
            a, g, bound = fused.sample(dtype, m, seed)
            rounded = round_to(g, dtype).astype(numpy_dtype(dtype))
            spacing = np.ascontiguousarray(rounding.SPACING_TABLE[dtype], np.float64)
            for b in (bound, None):
                head = [int(b is not None), int(rounding.MAX_BITS[dtype]), spacing.size]
                chunks += [np.int64(m).tobytes(), np.array([code, *head], np.int32).tobytes()]
                arrays = [a.astype(np.float64), g] + ([] if b is None else [b])
                arrays += [spacing, fused_library._limits(dtype)]
                chunks += [np.ascontiguousarray(x, np.float64).tobytes() for x in arrays]
                chunks += [a.view(uint).tobytes(), rounded.view(uint).tobytes()]
    path.write_bytes(b"".join(chunks))


def test_the_library_runs_on_the_oldest_cpu_of_its_architecture_with_the_same_bits(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The library as the farm builds it (fused.kernel: its cache, its flags) under qemu-x86_64
    as a baseline x86-64 CPU (SSE2, the oldest a home shared over NFS may hold) and as an AVX2
    one: it loads, picks the vector code the CPU has, and gives the bits it gives here. A library
    built with -march=native for this host dies there with an illegal instruction."""
    import shutil

    qemu = shutil.which("qemu-x86_64")
    cc = shutil.which("cc") or shutil.which("gcc")
    need(platform.machine() == "x86_64" and qemu is not None, "x86-64 and qemu-x86_64")
    need(cc is not None, "a C compiler")
    assert qemu is not None and cc is not None
    monkeypatch.setattr(fused, "_LOADED", {})
    monkeypatch.setenv(fused_library.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.setenv(fused.ENV_MODE, "require")
    library = the_library().path
    driver = tmp_path / "driver"
    source = Path(__file__).with_name("fused_driver.c")
    subprocess.run([cc, "-O1", "-march=x86-64", "-o", str(driver), str(source), "-ldl"], check=True)
    samples = tmp_path / "samples.bin"
    _driver_samples(samples)
    said = {}
    for cpu, prefix in (("this", []), ("qemu64", [qemu, "-cpu", "qemu64"]), ("Haswell", None)):
        argv = [*(prefix if prefix is not None else [qemu, "-cpu", cpu]), str(driver)]
        run = subprocess.run(
            [*argv, str(library), str(samples)], capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 0, (cpu, run.returncode, run.stderr[-2000:])
        lanes, *results = run.stdout.splitlines()
        said[cpu] = (lanes, results)
    assert said["qemu64"][0] == "lanes 2" and said["Haswell"][0] == "lanes 4"
    assert said["this"][0] == f"lanes {fused.kernel().lanes}"  # type: ignore[union-attr]
    assert len(said["this"][1]) == 3 * 2 * 3 * len(fused.SAMPLE_LENGTHS)
    assert said["qemu64"][1] == said["this"][1] == said["Haswell"][1]


def test_cc_is_a_command_line_as_make_reads_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """$CC="ccache gcc" or "gcc -m64" is common; it was taken for one executable's name."""
    the_library()
    calls = tmp_path / "calls"
    wrapper = tmp_path / "wrapper"  # ccache's part: runs the compiler it is given
    wrapper.write_text(f'#!/bin/sh\necho "$1" >> {calls}\nexec "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setattr(fused, "_LOADED", {})
    monkeypatch.setenv("CC", f"'{wrapper}' cc -O2")
    monkeypatch.setenv(fused_library.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.setenv(fused.ENV_MODE, "require")
    assert fused.kernel() is not None
    assert calls.read_text().splitlines()[0] == "cc"


def test_the_fused_histogram_bins_as_numpy_does_on_every_edge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    the_library()
    edges = default_edges()
    x = 10.0**edges
    up, down = np.nextafter(x, np.inf), np.nextafter(x, 0.0)
    errors = np.concatenate(
        [x, up, down, np.nextafter(up, np.inf), np.nextafter(down, 0.0), [0.0, 0.0, 1e-300, 1e300]]
    )
    errors = np.concatenate([errors, np.random.default_rng(9).random(5000) * 10.0**-6])
    counted = {}
    for path in ("off", "require"):
        monkeypatch.setenv(fused.ENV_MODE, path)
        hist = HistogramAccumulator()
        hist.add(errors)
        counted[path] = hist.result(errors.size)
    assert counted["require"] == counted["off"]
    logs = np.clip(np.log10(errors[errors > 0]), edges[0], np.nextafter(edges[-1], -np.inf))
    assert counted["off"]["counts"] == np.histogram(logs, bins=edges)[0].tolist()
    assert counted["off"]["zeros"] == 2
