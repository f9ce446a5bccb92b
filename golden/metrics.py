"""Error metrics of a result against the float64 golden (SPEC section 5).

One pass computes everything every standard needs, so a verdict can be recomputed from the
recorded metrics alone. All values are plain Python types (int, float, bool, str, list, dict);
json.dumps accepts them (NaN/inf can only appear in the values of `worst` and `nonfinite`).

Relative error per element is |a - g| / (|g| + 1e-7). Positions where the golden or the result is
NaN or +-inf are left out of the error metrics; whether those positions agree is reported apart.
"""

from __future__ import annotations

import numpy as np

from golden.dtypes import (
    DOUBLE_THOUSANDTH_TOL,
    REL_EPS,
    SMALL_ERR_BOUND,
    SMALL_THRESHOLD,
    SUPPORTED,
    T,
    ordinal,
    round_to,
    to_float64,
)

# Per-element class: 0 finite, 1 NaN, 2 +inf, 3 -inf.
_CLASS_NAMES = ("finite", "nan", "+inf", "-inf")


def _classes(x64: np.ndarray) -> np.ndarray:
    c = np.zeros(x64.shape, dtype=np.int8)
    c[np.isnan(x64)] = 1
    c[np.isposinf(x64)] = 2
    c[np.isneginf(x64)] = 3
    return c


def _index(flat: int, shape: tuple[int, ...]) -> list[int]:
    return [int(i) for i in np.unravel_index(int(flat), shape)] if shape else []


def check_dtype(dtype: str) -> str:
    if dtype not in SUPPORTED:
        raise ValueError(
            f"dtype {dtype!r} cannot be judged; precision standards cover {', '.join(SUPPORTED)}"
        )
    return dtype


def compute_metrics(actual: np.ndarray, golden: np.ndarray, dtype: str, k: int = 8) -> dict:
    """All metrics of `actual` (any float array, usually in the case dtype) against `golden`
    (float64), judged as dtype `dtype`."""
    check_dtype(dtype)
    actual = np.asarray(actual)
    golden = np.asarray(golden)
    if actual.shape != golden.shape:
        raise ValueError(f"actual shape {actual.shape} differs from golden shape {golden.shape}")
    shape = actual.shape
    a = to_float64(actual).reshape(-1)
    g = to_float64(golden).reshape(-1)
    n = int(a.size)

    ca, cg = _classes(a), _classes(g)
    mismatch = ca != cg
    nan_mismatch = int(np.count_nonzero((ca == 1) != (cg == 1)))
    inf_mismatch = int(np.count_nonzero(((ca >= 2) | (cg >= 2)) & mismatch))
    n_mismatch = int(np.count_nonzero(mismatch))
    nonfinite = []
    for pos in np.flatnonzero(mismatch)[:k]:
        nonfinite.append(
            {
                "index": _index(pos, shape),
                "actual": float(a[pos]),
                "golden": float(g[pos]),
                "actual_class": _CLASS_NAMES[ca[pos]],
                "golden_class": _CLASS_NAMES[cg[pos]],
            }
        )

    both = (ca == 0) & (cg == 0)
    where = np.flatnonzero(both)
    av, gv = a[where], g[where]
    m = int(where.size)

    t = T[dtype]
    tol = DOUBLE_THOUSANDTH_TOL[dtype]
    small_thr, small_bound = SMALL_THRESHOLD[dtype], SMALL_ERR_BOUND[dtype]
    out = {
        "dtype": dtype,
        "n": n,
        "n_compared": m,
        "nan_golden": int(np.count_nonzero(cg == 1)),
        "inf_golden": int(np.count_nonzero(cg >= 2)),
        "nan_actual": int(np.count_nonzero(ca == 1)),
        "inf_actual": int(np.count_nonzero(ca >= 2)),
        "nonfinite_mismatch": n_mismatch,
        "nan_mismatch": nan_mismatch,
        "inf_mismatch": inf_mismatch,
        "nonfinite_ok": n_mismatch == 0,
        "nonfinite": nonfinite,
        "T": t,
        "double_thousandth_tol": tol,
        "small_threshold": small_thr,
        "small_err_bound": small_bound,
    }
    if m == 0:
        out.update(
            mere=0.0, mare=0.0, rmse=0.0, max_abs=0.0, max_rel=0.0, ulp_max=0, ulp_mean=0.0,
            mixed_ok=0, mixed_ok_fraction=1.0, dt_rel_over=0, dt_abs_over=0,
            small_n=0, small_err_count=0, worst=[],
        )
        return out

    with np.errstate(over="ignore"):
        err = np.abs(av - gv)
        absg = np.abs(gv)
        rel = err / (absg + REL_EPS)
        rmse = float(np.sqrt(np.mean(np.square(err))))
    ulp = np.abs(ordinal(av, dtype) - ordinal(gv, dtype))
    small = absg < small_thr
    mixed_ok = int(np.count_nonzero(err <= t + t * absg))

    kk = min(k, m)
    if kk > 0:
        top = np.argpartition(rel, m - kk)[m - kk :] if kk < m else np.arange(m)
        top = top[np.lexsort((top, -rel[top]))]  # largest first, ties by position
    else:
        top = np.array([], dtype=np.int64)
    worst = [
        {
            "index": _index(where[i], shape),
            "actual": float(av[i]),
            "golden": float(gv[i]),
            "abs_err": float(err[i]),
            "rel_err": float(rel[i]),
            "ulp": int(ulp[i]),
        }
        for i in top
    ]
    out.update(
        mere=float(np.mean(rel)),
        mare=float(np.max(rel)),
        rmse=rmse,
        max_abs=float(np.max(err)),
        max_rel=float(np.max(rel)),
        ulp_max=int(np.max(ulp)),
        ulp_mean=float(np.mean(ulp)),
        mixed_ok=mixed_ok,
        mixed_ok_fraction=mixed_ok / m,
        dt_rel_over=int(np.count_nonzero(rel > tol)),
        dt_abs_over=int(np.count_nonzero(err > tol)),
        small_n=int(np.count_nonzero(small)),
        small_err_count=int(np.count_nonzero(err[small] > small_bound)),
        worst=worst,
    )
    return out


def golden_in_dtype(golden: np.ndarray, dtype: str) -> np.ndarray:
    """The golden rounded once to the case dtype: the best result a kernel can return."""
    return round_to(golden, dtype)
