"""farm/agent/benchmark_cache.py: PyTorch's benchmark results kept on the host, under a key that
names the inputs, the PyTorch build and the kernel it picks; never a result PyTorch would not
give."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from farm.agent import benchmark_cache as bc
from golden import benchmark
from golden.dtypes import numpy_dtype


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(bc.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    bc._installation.cache_clear()
    bc._HELD.clear()
    yield tmp_path / "cache"
    bc._installation.cache_clear()
    bc._HELD.clear()


def inputs(shape: tuple[int, ...], dtype: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    dy = rng.standard_normal(shape).astype(numpy_dtype(dtype))
    y = (-3 * np.abs(rng.standard_normal(shape))).astype(numpy_dtype(dtype))
    return dy, y


def count_torch_calls(monkeypatch) -> list[int]:
    calls: list[int] = []
    computed = benchmark.torch_benchmark

    def counted(*args, **kwargs):
        calls.append(1)
        return computed(*args, **kwargs)

    monkeypatch.setattr(benchmark, "torch_benchmark", counted)
    return calls


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize(
    ("shape", "axes"), [((4, 37), [-1]), ((3, 5, 7), [1]), ((2, 3, 4), [0, 1])]
)
@pytest.mark.parametrize("special", [False, True])
def test_a_kept_result_is_pytorchs_bit_for_bit_and_pytorch_is_not_asked_again(
    monkeypatch, shape, axes, dtype, special
):
    dy, y = inputs(shape, dtype)
    if special:  # inputs no generator of the farm's makes: NaN, infinities, subnormals, zeros
        tiny = np.finfo(np.float32).smallest_subnormal
        values = [np.nan, np.inf, -np.inf, tiny, -0.0, 0.0, 65504.0, -1e30]
        flat_dy, flat_y = dy.reshape(-1), y.reshape(-1)
        with np.errstate(over="ignore"):  # -1e30 is -inf in float16
            for i, v in enumerate(values):
                flat_dy[(3 * i) % flat_dy.size] = v
                flat_y[(5 * i + 1) % flat_y.size] = v
    calls = count_torch_calls(monkeypatch)
    first = bc.torch_benchmark(dy, y, axes, dtype)
    kept = bc.torch_benchmark(dy, y, axes, dtype)
    assert len(calls) == 1
    want = benchmark.torch_benchmark(dy, y, axes, dtype)
    for got in (first, kept):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    assert kept.flags.writeable


def test_a_run_whose_results_are_kept_imports_no_pytorch(cache):
    """The point of the cache: an agent process with every result kept never imports torch."""
    script = textwrap.dedent(
        """
        import sys
        import numpy as np
        from farm.agent.benchmark_cache import torch_benchmark
        rng = np.random.default_rng(1)
        dy = rng.standard_normal((8, 129)).astype(np.float16)
        y = (-np.abs(rng.standard_normal((8, 129)))).astype(np.float16)
        out = torch_benchmark(dy, y, [-1], "float16")
        print("torch" in sys.modules, out.tobytes().hex()[:32])
        """
    )
    env = dict(os.environ, **{bc.ENV_CACHE: str(cache)})
    runs = [
        subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs[0][0] == "True"  # computed: PyTorch imported
    assert runs[1] == ["False", runs[0][1]]  # kept: the same bytes, no import


def test_the_key_names_the_inputs_their_shape_axes_and_dtype():
    dy, y = inputs((4, 6), "float32")
    base = bc.entry_path(dy, y, [-1], "float32")
    changed = dy.copy()
    changed[2, 3] = np.nextafter(changed[2, 3], np.float32(np.inf))
    others = [
        bc.entry_path(changed, y, [-1], "float32"),
        bc.entry_path(dy, changed, [-1], "float32"),
        bc.entry_path(dy.reshape(6, 4), y.reshape(6, 4), [-1], "float32"),
        bc.entry_path(dy, y, [0], "float32"),
        bc.entry_path(dy, y, [0, 1], "float32"),
        bc.entry_path(dy.astype(np.float16), y.astype(np.float16), [-1], "float16"),
    ]
    assert base is not None and None not in others
    assert len({base, *others}) == 1 + len(others)
    # The same inputs, however laid out, are the same entry.
    assert bc.entry_path(np.asfortranarray(dy), y, [1], "float32") == base


def test_the_key_names_the_kernel_pytorch_picks(monkeypatch):
    dy, y = inputs((4, 6), "float32")
    base = bc.entry_path(dy, y, [-1], "float32")
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    bc._installation.cache_clear()
    assert bc.entry_path(dy, y, [-1], "float32") not in (None, base)
    monkeypatch.delenv("ATEN_CPU_CAPABILITY")
    monkeypatch.setattr(bc.fused_library, "cpu_features", lambda: "fpu sse2")
    bc._installation.cache_clear()
    assert bc.entry_path(dy, y, [-1], "float32") not in (None, base)


def no_home(cls):
    raise RuntimeError("Could not determine home directory.")


def test_no_entry_without_pytorch_a_readable_cpu_or_a_cache(monkeypatch):
    dy, y = inputs((4, 6), "float32")

    def no_torch(name):
        raise bc.importlib.metadata.PackageNotFoundError(name)

    with monkeypatch.context() as m:
        m.setattr(bc.importlib.metadata, "version", no_torch)
        bc._installation.cache_clear()
        assert bc.entry_path(dy, y, [-1], "float32") is None
    with monkeypatch.context() as m:
        m.setattr(bc.fused_library, "cpu_features", lambda: None)
        bc._installation.cache_clear()
        assert bc.entry_path(dy, y, [-1], "float32") is None
    bc._installation.cache_clear()
    monkeypatch.setenv(bc.ENV_CACHE, "off")
    assert bc.entry_path(dy, y, [-1], "float32") is None
    with monkeypatch.context() as m:  # the default place, on a host with no home directory
        m.delenv(bc.ENV_CACHE)
        m.delenv("XDG_CACHE_HOME", raising=False)
        m.setattr(bc.fused_library.Path, "home", classmethod(no_home))
        assert bc.entry_path(dy, y, [-1], "float32") is None
    # What the benchmark refuses or makes without PyTorch is never kept.
    monkeypatch.setenv(bc.ENV_CACHE, "/nonexistent")
    assert bc.entry_path(dy[:0], y[:0], [-1], "float32") is None
    assert bc.entry_path(dy, y[:2], [-1], "float32") is None
    assert bc.entry_path(dy, y, [5], "float32") is None
    assert bc.entry_path(dy, y, [-1], "float64") is None


def test_a_relative_cache_keeps_nothing_and_says_why(monkeypatch, tmp_path):
    """Each agent starts in a working directory of its own: `on` or `cache` would be a new
    directory wherever that is."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(bc.ENV_CACHE, "on")
    dy, y = inputs((4, 6), "float32")
    assert bc.entry_path(dy, y, [-1], "float32") is None
    assert bc.status() == (
        "PyTorch's results not kept ($LSG_BENCHMARK_CACHE='on' is not an absolute path: give a "
        "directory such as /var/cache/lsg-farm or ~/.cache/lsg-farm)"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_a_damaged_entry_is_computed_again_and_replaced(monkeypatch, damage):
    dy, y = inputs((3, 50), "bfloat16")
    want = bc.torch_benchmark(dy, y, [-1], "bfloat16")
    entry = bc.entry_path(dy, y, [-1], "bfloat16")
    assert entry is not None
    blob = bytearray(entry.read_bytes())
    if damage == "flip":
        blob[-1] ^= 0x01
    elif damage == "truncate":
        del blob[-2:]
    else:
        blob.clear()
    entry.write_bytes(bytes(blob))
    calls = count_torch_calls(monkeypatch)
    got = bc.torch_benchmark(dy, y, [-1], "bfloat16")
    assert len(calls) == 1 and got.tobytes() == want.tobytes()
    assert bc.torch_benchmark(dy, y, [-1], "bfloat16").tobytes() == want.tobytes()
    assert len(calls) == 1  # the entry was written again, whole


def test_a_full_cache_makes_room_from_stale_entries_only(monkeypatch, cache):
    shape = (2, 64)  # 512 float32 bytes behind a 32-byte hash
    entry_size = 32 + 2 * 64 * 4
    monkeypatch.setattr(bc, "BUDGET", 3 * entry_size)
    made = [inputs(shape, "float32", seed) for seed in range(5)]
    for dy, y in made[:3]:
        bc.torch_benchmark(dy, y, [-1], "float32")
    paths = [bc.entry_path(dy, y, [-1], "float32") for dy, y in made]
    entries = [e for e in paths if e is not None]
    assert len(entries) == len(made), "the cache is on: every input has its entry"
    assert all(e.exists() for e in entries[:3])
    # Full, and every entry in use: the fourth result is computed, not kept.
    bc._HELD.clear()
    calls = count_torch_calls(monkeypatch)
    bc.torch_benchmark(*made[3], [-1], "float32")
    bc.torch_benchmark(*made[3], [-1], "float32")
    assert len(calls) == 2 and not entries[3].exists()
    # One entry unused for longer than STALE_AFTER: it makes room for the next.
    old = bc.time.time() - bc.STALE_AFTER - 60
    os.utime(entries[0], (old, old))
    bc._HELD.clear()
    bc.torch_benchmark(*made[4], [-1], "float32")
    assert entries[4].exists() and not entries[0].exists()
    assert entries[1].exists() and entries[2].exists()
    assert sum(p.stat().st_size for p in cache.iterdir()) <= 3 * entry_size


def test_a_cache_that_cannot_be_written_still_gives_pytorchs_result(monkeypatch, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    monkeypatch.setenv(bc.ENV_CACHE, str(blocked / "cache"))
    dy, y = inputs((4, 9), "float16")
    got = bc.torch_benchmark(dy, y, [-1], "float16")
    assert got.tobytes() == benchmark.torch_benchmark(dy, y, [-1], "float16").tobytes()


def test_the_agent_judges_benchmark_ratio_cases_through_the_cache(monkeypatch):
    """execute._judge asks the cache, so a kept benchmark judges the case as PyTorch's would."""
    from farm.agent import execute

    called: list[str] = []
    through = bc.torch_benchmark

    def spy(*args, **kwargs):
        called.append("cache")
        return through(*args, **kwargs)

    monkeypatch.setattr(bc, "torch_benchmark", spy)
    dy, y = inputs((4, 64), "float16")
    out = benchmark.torch_benchmark(dy, y, [-1], "float16")
    case = {"dtype": "float16", "axes": [-1]}
    expect = {"kind": "precision", "standard": "benchmark-ratio", "level": "L0"}
    judged = execute._judge(case, dy, y, out, expect)  # type: ignore[arg-type]
    assert called == ["cache"]
    again = execute._judge(case, dy, y, out, expect)  # type: ignore[arg-type]
    verdict = judged["verdict"]
    assert again == judged and verdict is not None and verdict["passed"]


def test_farm_hosts_says_where_the_results_are_kept_and_how_many(monkeypatch, cache):
    from farm.agent.identity import judging_path

    assert bc.status() == f"PyTorch's results kept in {cache}: 0, 0 of 512 MiB"
    for seed in range(3):
        bc.torch_benchmark(*inputs((2, 64), "float32", seed), [-1], "float32")
    assert bc.status() == f"PyTorch's results kept in {cache}: 3, 0 of 512 MiB"
    said, problems = judging_path()
    assert said.endswith(f"; PyTorch's results kept in {cache}: 3, 0 of 512 MiB") and not problems
    monkeypatch.setenv(bc.ENV_CACHE, "off")
    assert bc.status() == "PyTorch's results not kept ($LSG_BENCHMARK_CACHE=off)"
    monkeypatch.setenv(bc.ENV_CACHE, str(cache))
    monkeypatch.setattr(bc.fused_library, "cpu_features", lambda: None)
    bc._installation.cache_clear()
    assert bc.status().startswith("PyTorch's results not kept (no PyTorch")
