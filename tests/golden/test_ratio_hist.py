"""Every element's error over its bound, binned (golden/ratio_hist.py, issue 58): the bins above
1 hold exactly the bound's violations, the fused pass bins as numpy does, and nothing is lost."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from golden import ratio_hist
from golden.dtypes import numpy_dtype, round_to
from golden.metrics import MetricsAccumulator
from tests.golden.test_fused import the_library


def _binned(ratios: list[float]) -> dict[str, Any]:
    r = np.array(ratios, np.float64)
    counts = ratio_hist.new_counts()
    ratio_hist.add(counts, r, np.empty(r.size, np.int64), np.empty(r.size, bool))
    return ratio_hist.result(counts)


def test_each_bin_is_closed_above_so_exactly_one_is_below_the_line() -> None:
    lo = ratio_hist.LOG2_LO
    h = _binned([1.0, float(np.nextafter(1.0, 2.0)), 2.0, 0.75, 0.0, 0.0])
    at = {i: c for i, c in enumerate(h["counts"]) if c}
    # 1 and 0.75 in (1/2, 1]; just above 1 and 2 in (1, 2]
    assert at == {0 - lo: 2, 1 - lo: 2} and h["zeros"] == 2
    assert ratio_hist.above_one(h) == 2
    edges = ratio_hist.log10_edges(h)
    assert edges[0 - lo + 1] == 0.0  # the bin of 1 ends at the line


def test_the_end_bins_take_everything_beyond_them() -> None:
    h = _binned([1e-300, 5e-324, 2.0**ratio_hist.LOG2_LO, 1e30, np.inf])
    assert h["counts"][0] == 3 and h["counts"][-1] == 2 and sum(h["counts"]) == 5
    assert ratio_hist.above_one(h) == 2


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_histogram_counts_every_compared_element_and_its_violations(dtype: str) -> None:
    rng = np.random.default_rng(3)
    m = 20_000
    g = rng.standard_normal(m)
    a = round_to(g * (1 + rng.standard_normal(m) * 1e-3), dtype).astype(numpy_dtype(dtype))
    bound = np.abs(rng.standard_normal(m)) * 1e-3
    bound[:7], bound[7:12] = 0.0, np.inf
    bound[12:20] = np.abs(a[12:20].astype(np.float64) - g[12:20])  # errors exactly at the bound
    results = []
    for kernel in (None, the_library()):  # numpy's path, then golden/fused.c's one pass
        acc = MetricsAccumulator(dtype, (m,), fused=kernel)
        acc.add(a, g, 0, bound=bound)
        results.append(acc.result())
    for r in results:
        h = r["bound_hist"]
        assert sum(h["counts"]) + h["zeros"] == r["bound_n"] == m
        assert ratio_hist.above_one(h) == r["bound_violations"] > 0
    assert results[1]["bound_hist"] == results[0]["bound_hist"]


def test_without_a_bound_there_is_no_histogram() -> None:
    acc = MetricsAccumulator("float32", (4,))
    acc.add(np.ones(4, np.float32), np.ones(4))
    assert "bound_hist" not in acc.result()
