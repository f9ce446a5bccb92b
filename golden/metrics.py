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


# Elements per chunk: metrics are accumulated chunk by chunk so memory stays bounded.
CHUNK = 1 << 20


def compute_metrics(actual: np.ndarray, golden: np.ndarray, dtype: str, k: int = 8) -> dict:
    """All metrics of `actual` (any float array, usually in the case dtype) against `golden`
    (float64), judged as dtype `dtype`."""
    check_dtype(dtype)
    actual = np.asarray(actual)
    golden = np.asarray(golden)
    if actual.shape != golden.shape:
        raise ValueError(f"actual shape {actual.shape} differs from golden shape {golden.shape}")
    shape = actual.shape
    af, gf = actual.ravel(), golden.ravel()
    n = int(af.size)
    t = T[dtype]
    tol = DOUBLE_THOUSANDTH_TOL[dtype]
    small_thr, small_bound = SMALL_THRESHOLD[dtype], SMALL_ERR_BOUND[dtype]

    counts = dict.fromkeys(
        (
            "nan_golden",
            "inf_golden",
            "nan_actual",
            "inf_actual",
            "nonfinite_mismatch",
            "nan_mismatch",
            "inf_mismatch",
            "n_compared",
            "mixed_ok",
            "dt_rel_over",
            "dt_abs_over",
            "small_n",
            "small_err_count",
        ),
        0,
    )
    rel_sum = sq_sum = ulp_sum = 0.0
    max_abs = max_rel = 0.0
    ulp_max = 0
    nonfinite: list[dict] = []
    cand: list[tuple[np.ndarray, ...]] = []  # per-chunk top-k candidates

    for lo in range(0, n, CHUNK):
        a = to_float64(af[lo : lo + CHUNK])
        g = to_float64(gf[lo : lo + CHUNK])
        ca, cg = _classes(a), _classes(g)
        counts["nan_golden"] += int(np.count_nonzero(cg == 1))
        counts["inf_golden"] += int(np.count_nonzero(cg >= 2))
        counts["nan_actual"] += int(np.count_nonzero(ca == 1))
        counts["inf_actual"] += int(np.count_nonzero(ca >= 2))
        mismatch = ca != cg
        bad = np.flatnonzero(mismatch)
        if bad.size:
            counts["nonfinite_mismatch"] += int(bad.size)
            counts["nan_mismatch"] += int(np.count_nonzero((ca[bad] == 1) != (cg[bad] == 1)))
            counts["inf_mismatch"] += int(np.count_nonzero((ca[bad] >= 2) | (cg[bad] >= 2)))
            for pos in bad[: max(0, k - len(nonfinite))]:
                nonfinite.append(
                    {
                        "index": _index(lo + pos, shape),
                        "actual": float(a[pos]),
                        "golden": float(g[pos]),
                        "actual_class": _CLASS_NAMES[ca[pos]],
                        "golden_class": _CLASS_NAMES[cg[pos]],
                    }
                )
        both = (ca == 0) & (cg == 0)
        if both.all():
            where = None
        else:
            where = np.flatnonzero(both)
            a, g = a[where], g[where]
        m = int(a.size)
        if m == 0:
            continue
        counts["n_compared"] += m
        with np.errstate(over="ignore"):
            err = np.abs(a - g)
            absg = np.abs(g)
            rel = err / (absg + REL_EPS)
            sq_sum += float(np.sum(np.square(err)))
        rel_sum += float(np.sum(rel))
        max_abs = max(max_abs, float(err.max()))
        max_rel = max(max_rel, float(rel.max()))
        ulp = np.abs(ordinal(a, dtype) - ordinal(g, dtype))
        ulp_max = max(ulp_max, int(ulp.max()))
        ulp_sum += float(ulp.sum())
        counts["mixed_ok"] += int(np.count_nonzero(err <= t + t * absg))
        counts["dt_rel_over"] += int(np.count_nonzero(rel > tol))
        counts["dt_abs_over"] += int(np.count_nonzero(err > tol))
        small = absg < small_thr
        counts["small_n"] += int(np.count_nonzero(small))
        counts["small_err_count"] += int(np.count_nonzero(err[small] > small_bound))
        if k > 0:
            top = np.argpartition(rel, m - k)[m - k :] if k < m else np.arange(m)
            flat = (top if where is None else where[top]) + lo
            cand.append((rel[top], flat, a[top], g[top], err[top], ulp[top]))

    worst = []
    if cand:
        rel_c, flat_c, a_c, g_c, err_c, ulp_c = (np.concatenate(x) for x in zip(*cand, strict=True))
        order = np.lexsort((flat_c, -rel_c))[:k]  # largest first, ties by position
        worst = [
            {
                "index": _index(flat_c[i], shape),
                "actual": float(a_c[i]),
                "golden": float(g_c[i]),
                "abs_err": float(err_c[i]),
                "rel_err": float(rel_c[i]),
                "ulp": int(ulp_c[i]),
            }
            for i in order
        ]

    m = counts["n_compared"]
    return {
        "dtype": dtype,
        "n": n,
        "n_compared": m,
        "nan_golden": counts["nan_golden"],
        "inf_golden": counts["inf_golden"],
        "nan_actual": counts["nan_actual"],
        "inf_actual": counts["inf_actual"],
        "nonfinite_mismatch": counts["nonfinite_mismatch"],
        "nan_mismatch": counts["nan_mismatch"],
        "inf_mismatch": counts["inf_mismatch"],
        "nonfinite_ok": counts["nonfinite_mismatch"] == 0,
        "nonfinite": nonfinite,
        "mere": rel_sum / m if m else 0.0,
        "mare": max_rel,
        "rmse": float(np.sqrt(sq_sum / m)) if m else 0.0,
        "max_abs": max_abs,
        "max_rel": max_rel,
        "ulp_max": ulp_max,
        "ulp_mean": ulp_sum / m if m else 0.0,
        "T": t,
        "mixed_ok": counts["mixed_ok"],
        "mixed_ok_fraction": counts["mixed_ok"] / m if m else 1.0,
        "double_thousandth_tol": tol,
        "dt_rel_over": counts["dt_rel_over"],
        "dt_abs_over": counts["dt_abs_over"],
        "small_threshold": small_thr,
        "small_err_bound": small_bound,
        "small_n": counts["small_n"],
        "small_err_count": counts["small_err_count"],
        "worst": worst,
    }


def golden_in_dtype(golden: np.ndarray, dtype: str) -> np.ndarray:
    """The golden rounded once to the case dtype: the best result a kernel can return."""
    return round_to(golden, dtype)
