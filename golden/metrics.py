"""Error metrics of a result against the float64 golden (SPEC section 5).

One pass computes everything every standard needs, so a verdict can be recomputed from the
recorded metrics alone. All values are plain Python types (int, float, bool, str, list, dict);
json.dumps accepts them (NaN/inf can only appear in the values of `worst` and `nonfinite`).

Relative error per element is |a - g| / (|g| + 1e-7). Positions where the golden or the result is
NaN or +-inf are left out of the error metrics; whether those positions agree is reported apart.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from golden.bound import FINITE, NAN, NEGINF, POSINF, class_names, class_of, rounded_classes
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
    ulp_of,
)


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

# The rounding bias (see MetricsAccumulator) is gated once this many elements qualify: with
# residuals in {-1, 0, 1} the standard error is at most 1/sqrt(n) = 0.03 ulp, and a correct
# kernel's residuals are rare (only where the golden lies within its fp32 error of a midpoint,
# which the 0.01-ulp cleanliness rule keeps below 2% of the elements, so below 0.02 ulp even
# if all of them leaned one way). BIAS_LIMIT is twice that; truncation gives about -0.25.
BIAS_MIN_N = 1000
BIAS_LIMIT = 0.05
BIAS_CLEAN_FRACTION = 0.01


class MetricsAccumulator:
    """Every metric of a result against the float64 golden, fed chunk by chunk.

    ``add(actual, golden, flat, allowed=None, bound=None)``: ``flat`` maps positions in the
    chunk to flat (C-order) indices in the whole tensor (or is the flat index of the chunk's
    first element when the chunk is contiguous); ``allowed`` the class bits a correct kernel
    may produce (golden/bound.py; default: the class of the golden rounded to the dtype);
    ``bound`` the largest error a correct kernel may reach on a finite element (the
    error-bound standard; None: not judged).

    Besides the public standards' metrics it keeps the bound's violations and two biases in
    units in the last place of the output dtype: ``bias_ulp``, the mean signed error over every
    compared element, and ``rounding_bias_ulp``, the mean of sign(g) * (ordinal(a) -
    ordinal(RNE(g))) over the *clean* elements, those whose fp32 error bound is below 1% of an
    ulp (fp16/bf16 only), where a correct kernel returns RNE(g) itself: truncating instead of
    rounding to nearest even shows there as a negative bias no per-element threshold sees.
    """

    def __init__(self, dtype: str, shape: tuple[int, ...], k: int = 8):
        self.dtype = check_dtype(dtype)
        self.shape = tuple(shape)
        self.k = k
        self.c = dict.fromkeys(
            (
                "n",
                "nan_golden",
                "inf_golden",
                "nan_actual",
                "inf_actual",
                "nonfinite_mismatch",
                "nan_mismatch",
                "inf_mismatch",
                "ambiguous",
                "n_compared",
                "mixed_ok",
                "dt_rel_over",
                "dt_abs_over",
                "small_n",
                "small_err_count",
                "bound_n",
                "bound_violations",
                "rounding_bias_n",
            ),
            0,
        )
        self.rel_sum = self.sq_sum = self.ulp_sum = self.signed_ulp_sum = 0.0
        self.rounding_bias_sum = 0
        self.max_abs = self.max_rel = self.bound_max_ratio = 0.0
        self.ulp_max = 0
        self.nonfinite: list[dict] = []
        self.cand: list[tuple[np.ndarray, ...]] = []
        self.bound_cand: list[tuple[np.ndarray, ...]] = []
        self.judged_bound = False
        # What the public standards would see from the worst correct kernel (every error at the
        # bound) and from the best possible one (the golden rounded once): standards.applicable.
        self.wc = dict.fromkeys(
            (
                "rel_sum",
                "max_rel",
                "max_abs",
                "mixed_ok",
                "dt_rel_over",
                "dt_abs_over",
                "small_err_count",
                "sq_sum",
            ),
            0.0,
        )
        self.bc = dict.fromkeys(("rel_sum", "max_rel", "sq_sum", "small_err_count"), 0.0)

    def add(
        self,
        actual: np.ndarray,
        golden: np.ndarray,
        flat: int | Callable[[np.ndarray], np.ndarray] = 0,
        allowed: np.ndarray | None = None,
        bound: np.ndarray | None = None,
    ) -> np.ndarray | None:
        """Account one chunk; returns the relative errors of the compared elements (for a
        histogram), or None when none was compared."""
        dtype, c, k = self.dtype, self.c, self.k
        a = to_float64(np.asarray(actual).ravel())
        g = np.asarray(golden, dtype=np.float64).ravel()
        n = int(a.size)
        if n == 0:
            return None
        self.judged_bound |= bound is not None
        if callable(flat):
            to_flat = flat
        else:
            first = int(flat)

            def to_flat(local: np.ndarray) -> np.ndarray:
                return np.asarray(local) + first

        pos = np.arange(n)  # local positions of the elements still in play
        allowed = rounded_classes(g, dtype) if allowed is None else allowed.ravel()
        c["n"] += n
        ca = class_of(a)
        c["nan_golden"] += int(np.count_nonzero(allowed == NAN))
        c["inf_golden"] += int(np.count_nonzero((allowed == POSINF) | (allowed == NEGINF)))
        c["nan_actual"] += int(np.count_nonzero(ca == NAN))
        c["inf_actual"] += int(np.count_nonzero((ca == POSINF) | (ca == NEGINF)))
        c["ambiguous"] += int(np.count_nonzero((allowed & (allowed - 1)) != 0))
        bad = np.flatnonzero((ca & allowed) == 0)
        if bad.size:
            c["nonfinite_mismatch"] += int(bad.size)
            c["nan_mismatch"] += int(np.count_nonzero((ca[bad] == NAN) | (allowed[bad] == NAN)))
            c["inf_mismatch"] += int(
                np.count_nonzero((ca[bad] >= POSINF) | ((allowed[bad] & (POSINF | NEGINF)) != 0))
            )
            for i in bad[: max(0, k - len(self.nonfinite))]:
                self.nonfinite.append(
                    {
                        "index": _index(int(to_flat(np.array([i]))[0]), self.shape),
                        "actual": float(a[i]),
                        "golden": float(g[i]),
                        "actual_class": class_names(int(ca[i])),
                        "golden_class": class_names(int(allowed[i])),
                    }
                )
        both = (ca == FINITE) & np.isfinite(g) & ((allowed & FINITE) != 0)
        where = None if both.all() else np.flatnonzero(both)
        if where is not None:
            a, g, pos = a[where], g[where], pos[where]
            bound = None if bound is None else bound.ravel()[where]
        elif bound is not None:
            bound = bound.ravel()
        m = int(a.size)
        if m == 0:
            return None
        t = T[dtype]
        tol = DOUBLE_THOUSANDTH_TOL[dtype]
        c["n_compared"] += m
        with np.errstate(over="ignore", invalid="ignore"):
            diff = a - g
            err = np.abs(diff)
            absg = np.abs(g)
            rel = err / (absg + REL_EPS)
            self.sq_sum += float(np.sum(np.square(err)))
        self.rel_sum += float(np.sum(rel))
        self.max_abs = max(self.max_abs, float(err.max()))
        self.max_rel = max(self.max_rel, float(rel.max()))
        ord_g = ordinal(g, dtype)
        ulp = np.abs(ordinal(a, dtype) - ord_g)
        self.ulp_max = max(self.ulp_max, int(ulp.max()))
        self.ulp_sum += float(ulp.sum())
        spacing = ulp_of(g, dtype)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.signed_ulp_sum += float(np.sum(np.where(spacing > 0, diff / spacing, 0.0)))
        c["mixed_ok"] += int(np.count_nonzero(err <= t + t * absg))
        c["dt_rel_over"] += int(np.count_nonzero(rel > tol))
        c["dt_abs_over"] += int(np.count_nonzero(err > tol))
        small = absg < SMALL_THRESHOLD[dtype]
        c["small_n"] += int(np.count_nonzero(small))
        c["small_err_count"] += int(np.count_nonzero(err[small] > SMALL_ERR_BOUND[dtype]))
        if k > 0:
            top = np.argpartition(rel, m - k)[m - k :] if k < m else np.arange(m)
            self.cand.append((rel[top], to_flat(pos[top]), a[top], g[top], err[top], ulp[top]))
        if bound is not None:
            self._bound(a, g, err, bound, to_flat, pos, spacing, absg, small)
        return rel

    def _bound(self, a, g, err, bound, to_flat, pos, spacing, absg, small) -> None:
        c, dtype = self.c, self.dtype
        t, tol = T[dtype], DOUBLE_THOUSANDTH_TOL[dtype]
        wc, bc = self.wc, self.bc
        with np.errstate(over="ignore", invalid="ignore"):
            wrel = bound / (absg + REL_EPS)
            best = np.abs(to_float64(round_to(g, dtype)) - g)
            brel = best / (absg + REL_EPS)
            wc["sq_sum"] += float(np.sum(np.square(bound)))
            bc["sq_sum"] += float(np.sum(np.square(best)))
        wc["rel_sum"] += float(wrel.sum())
        wc["max_rel"] = max(wc["max_rel"], float(wrel.max()))
        wc["max_abs"] = max(wc["max_abs"], float(bound.max()))
        wc["mixed_ok"] += int(np.count_nonzero(bound <= t + t * absg))
        wc["dt_rel_over"] += int(np.count_nonzero(wrel > tol))
        wc["dt_abs_over"] += int(np.count_nonzero(bound > tol))
        wc["small_err_count"] += int(np.count_nonzero(bound[small] > SMALL_ERR_BOUND[dtype]))
        bc["rel_sum"] += float(brel.sum())
        bc["max_rel"] = max(bc["max_rel"], float(brel.max()))
        bc["small_err_count"] += int(np.count_nonzero(best[small] > SMALL_ERR_BOUND[dtype]))
        c["bound_n"] += int(a.size)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(bound > 0, err / bound, np.where(err > 0, np.inf, 0.0))
        over = ratio > 1
        c["bound_violations"] += int(np.count_nonzero(over))
        self.bound_max_ratio = max(self.bound_max_ratio, float(ratio.max()))
        if self.k > 0 and over.any():
            idx = np.flatnonzero(over)
            top = idx[np.argsort(-ratio[idx], kind="stable")[: self.k]]
            self.bound_cand.append(
                (ratio[top], to_flat(pos[top]), a[top], g[top], err[top], bound[top])
            )
        if self.dtype == "float32":
            return
        with np.errstate(invalid="ignore"):
            clean = (bound - 0.5 * spacing) <= BIAS_CLEAN_FRACTION * spacing
        if clean.any():
            rne = ordinal(round_to(g[clean], self.dtype), self.dtype)
            resid = (ordinal(a[clean], self.dtype) - rne) * np.sign(g[clean]).astype(np.int64)
            c["rounding_bias_n"] += int(np.count_nonzero(clean))
            self.rounding_bias_sum += int(resid.sum())

    def result(self) -> dict:
        c, m = self.c, self.c["n_compared"]
        worst = _top(
            self.cand, self.k, self.shape, "rel_err", ("actual", "golden", "abs_err", "ulp")
        )
        out = {
            "dtype": self.dtype,
            "n": c["n"],
            "n_compared": m,
            "nan_golden": c["nan_golden"],
            "inf_golden": c["inf_golden"],
            "nan_actual": c["nan_actual"],
            "inf_actual": c["inf_actual"],
            "nonfinite_mismatch": c["nonfinite_mismatch"],
            "nan_mismatch": c["nan_mismatch"],
            "inf_mismatch": c["inf_mismatch"],
            "nonfinite_ok": c["nonfinite_mismatch"] == 0,
            "class_ambiguous": c["ambiguous"],
            "nonfinite": self.nonfinite,
            "mere": self.rel_sum / m if m else 0.0,
            "mare": self.max_rel,
            "rmse": float(np.sqrt(self.sq_sum / m)) if m else 0.0,
            "max_abs": self.max_abs,
            "max_rel": self.max_rel,
            "ulp_max": self.ulp_max,
            "ulp_mean": self.ulp_sum / m if m else 0.0,
            "bias_ulp": self.signed_ulp_sum / m if m else 0.0,
            "T": T[self.dtype],
            "mixed_ok": c["mixed_ok"],
            "mixed_ok_fraction": c["mixed_ok"] / m if m else 1.0,
            "double_thousandth_tol": DOUBLE_THOUSANDTH_TOL[self.dtype],
            "dt_rel_over": c["dt_rel_over"],
            "dt_abs_over": c["dt_abs_over"],
            "small_threshold": SMALL_THRESHOLD[self.dtype],
            "small_err_bound": SMALL_ERR_BOUND[self.dtype],
            "small_n": c["small_n"],
            "small_err_count": c["small_err_count"],
            "worst": worst,
        }
        if self.judged_bound:
            n_bias = c["rounding_bias_n"]
            out.update(
                bound_n=c["bound_n"],
                bound_violations=c["bound_violations"],
                bound_max_ratio=self.bound_max_ratio,
                bound_worst=_top(
                    self.bound_cand,
                    self.k,
                    self.shape,
                    "ratio",
                    ("actual", "golden", "abs_err", "bound"),
                ),
                rounding_bias_n=n_bias,
                rounding_bias_ulp=self.rounding_bias_sum / n_bias if n_bias else 0.0,
                worst_case={
                    "mere": self.wc["rel_sum"] / m if m else 0.0,
                    "mare": self.wc["max_rel"],
                    "rmse": float(np.sqrt(self.wc["sq_sum"] / m)) if m else 0.0,
                    "max_abs": self.wc["max_abs"],
                    "mixed_ok_fraction": self.wc["mixed_ok"] / m if m else 1.0,
                    "dt_rel_over": int(self.wc["dt_rel_over"]),
                    "dt_abs_over": int(self.wc["dt_abs_over"]),
                    "small_err_count": int(self.wc["small_err_count"]),
                },
                best_case={
                    "mere": self.bc["rel_sum"] / m if m else 0.0,
                    "mare": self.bc["max_rel"],
                    "rmse": float(np.sqrt(self.bc["sq_sum"] / m)) if m else 0.0,
                    "small_err_count": int(self.bc["small_err_count"]),
                },
            )
        return out


def _top(cand, k: int, shape, key: str, fields: tuple[str, ...]) -> list[dict]:
    """The k largest of the per-chunk candidates (key value, flat index, *fields), largest
    first, ties by position."""
    if not cand or k <= 0:
        return []
    cols = [np.concatenate(x) for x in zip(*cand, strict=True)]
    order = np.lexsort((cols[1], -cols[0]))[:k]
    rows = []
    for i in order:
        row = {"index": _index(cols[1][i], shape), key: float(cols[0][i])}
        for name, col in zip(fields, cols[2:], strict=True):
            row[name] = int(col[i]) if name == "ulp" else float(col[i])
        rows.append(row)
    return rows


def compute_metrics(actual: np.ndarray, golden: np.ndarray, dtype: str, k: int = 8) -> dict:
    """All metrics of `actual` (any float array, usually in the case dtype) against `golden`
    (float64), judged as dtype `dtype`; NaN/inf positions against the golden rounded to it."""
    actual = np.asarray(actual)
    golden = np.asarray(golden)
    if actual.shape != golden.shape:
        raise ValueError(f"actual shape {actual.shape} differs from golden shape {golden.shape}")
    acc = MetricsAccumulator(dtype, actual.shape, k)
    af, gf = actual.ravel(), golden.ravel()
    for lo in range(0, int(af.size), CHUNK):
        acc.add(af[lo : lo + CHUNK], gf[lo : lo + CHUNK], lo)
    return acc.result()


def golden_in_dtype(golden: np.ndarray, dtype: str) -> np.ndarray:
    """The golden rounded once to the case dtype: the best result a kernel can return."""
    return round_to(golden, dtype)
