"""Error metrics of a result against the float64 golden (SPEC section 5).

One pass computes everything every standard needs, so a verdict can be recomputed from the
recorded metrics alone. All values are plain Python types (int, float, bool, str, list, dict);
json.dumps accepts them (NaN/inf can only appear in the values of `worst` and `nonfinite`).

Relative error per element is |a - g| / (|g| + 1e-7). Positions where the golden or the result is
NaN or +-inf are left out of the error metrics; whether those positions agree is reported apart.

Precision of the intermediate arrays: the error a - g and all that derives from it (relative
error, ratios to the bound, the worst and best correct kernels' errors) are float64, because the
golden carries 53 bits: fp16/bf16/fp32 results are exact in float32 but the golden is not, so
a - g in float32 would round, and counts against thresholds (|a - g| <= T + T|g|) would move.
What can be exact without float64 is done on the bits: ulp distances and the rounding bias from
integer ordinals, spacings from a table by exponent, bfloat16 rounding through float32 rounded to
odd (golden/rounding.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from golden import ratio_hist, rounding
from golden.bound import FINITE, NAN, NEGINF, POSINF, class_names, class_of
from golden.dtypes import (
    BIAS_CLEAN_FRACTION,
    DOUBLE_THOUSANDTH_TOL,
    REL_EPS,
    SMALL_ERR_BOUND,
    SMALL_THRESHOLD,
    SUPPORTED,
    T,
    numpy_dtype,
    round_to,
)
from golden.fused_library import Kernel
from golden.workspace import Workspace
from golden.worst import index_of, top_k, top_rows

# The bits of each case dtype as an unsigned integer, all but the sign, and the exponent field
# (all ones: inf/NaN).
_UINT = {"float32": np.uint32, "float16": np.uint16, "bfloat16": np.uint16}
_SIGN_OFF: dict[str, np.unsignedinteger] = {
    "float32": np.uint32(0x7FFFFFFF),
    "float16": np.uint16(0x7FFF),
    "bfloat16": np.uint16(0x7FFF),
}
_EXP_MASK: dict[str, np.unsignedinteger] = {
    "float32": np.uint32(0x7F800000),
    "float16": np.uint16(0x7C00),
    "bfloat16": np.uint16(0x7F80),
}


def check_dtype(dtype: str) -> str:
    if dtype not in SUPPORTED:
        raise ValueError(
            f"dtype {dtype!r} cannot be judged; precision standards cover {', '.join(SUPPORTED)}"
        )
    return dtype


# Elements per chunk: metrics are accumulated chunk by chunk so memory stays bounded.
CHUNK = 1 << 20


class MetricsAccumulator:
    """Every metric of a result against the float64 golden, fed chunk by chunk.

    ``add(actual, golden, flat, allowed=None, bound=None, rounded=None)``: ``flat`` maps
    positions in the chunk to flat (C-order) indices in the whole tensor (or is the flat index of
    the chunk's first element when the chunk is contiguous); ``allowed`` the class bits a
    correct kernel may produce (golden/bound.py; default: the class of the golden rounded to the
    dtype); ``bound`` the largest error a correct kernel may reach on a finite element (the
    error-bound standard; None: not judged); ``rounded`` the golden rounded to the dtype.

    One pass per chunk: where every element is finite and may only be (the common case), no
    class is computed; the metrics come from one set of arrays (error, |golden| + 1e-7, relative
    error, ordinals and spacings from the bits) kept in a workspace (golden.workspace.Workspace;
    ``ws``, shared by golden.judge between the result's accumulator and the benchmark's, each
    under its own ``name``).

    Besides the public standards' metrics it keeps the bound's violations and two biases in
    units in the last place of the output dtype: ``bias_ulp``, the mean signed error over every
    compared element, and ``rounding_bias_ulp``, the mean of sign(g) * (ordinal(a) -
    ordinal(RNE(g))) over the *clean* elements, those whose fp32 error bound is below 1% of an
    ulp (fp16/bf16 only), where a correct kernel returns RNE(g) itself: truncating instead of
    rounding to nearest even shows there as a negative bias no per-element threshold sees.
    """

    def __init__(
        self,
        dtype: str,
        shape: tuple[int, ...],
        k: int = 8,
        ws: Workspace | None = None,
        name: str = "m",
        fused: Kernel | None = None,
    ):
        self.dtype = check_dtype(dtype)
        # The compared elements' metrics from golden/fused.c (golden.fused.kernel(): when this
        # host has it checked), or from numpy (None); the same bits either way.
        self._fused = fused
        self._ws = Workspace() if ws is None else ws
        self._prefix = name + "."
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
        self.ratio_counts = ratio_hist.new_counts()  # every element's error / bound, binned
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
        allowed: np.ndarray | int | None = None,
        bound: np.ndarray | None = None,
        rounded: np.ndarray | None = None,
    ) -> np.ndarray | None:
        """Account one chunk; returns the relative errors of the compared elements (for a
        histogram; an array of the workspace, valid until the next add), or None when none was
        compared.

        ``allowed`` may be the int FINITE: every element may only be finite and its golden is
        finite (golden.bound.golden_and_bound says so of a plain slab). ``rounded``: the golden
        already rounded to the dtype (golden.rounding.rounded of it), if the caller has it."""
        dtype, c, ws, p = self.dtype, self.c, self._ws, self._prefix
        actual = np.asarray(actual)
        n = int(actual.size)
        if n == 0:
            return None
        g = np.ascontiguousarray(golden, dtype=np.float64).reshape(-1)
        if rounded is None:
            rg = rounding.rounded(g, dtype, ws, p + "rg", base=0)
        else:
            rg = rounded.reshape(-1)
        if actual.flags.c_contiguous:
            act = actual.reshape(-1)
        else:
            act = ws.get(p + "act", n, actual.dtype)
            np.copyto(act.reshape(actual.shape), actual)
        a = ws.s(0, n)  # scratch s(0): the actual in float64, for the whole add
        with np.errstate(invalid="ignore"):
            np.copyto(a, act, casting="unsafe")
        uint = _UINT[dtype]
        own = act.dtype == numpy_dtype(dtype)
        if own:
            abits = act.view(uint)
        else:
            abits = rounding.rounded(a, dtype, ws, p + "abits", base=1).view(uint)
        self.judged_bound |= bound is not None
        if callable(flat):
            to_flat = flat
        else:
            first = int(flat)

            def to_flat(local: np.ndarray) -> np.ndarray:
                return np.asarray(local) + first

        c["n"] += n
        if bound is not None:
            bound = bound.reshape(-1)
        a_finite = bool(np.isfinite(a, out=ws.b(0, n)).all())
        if isinstance(allowed, (int, np.integer)):
            plain = int(allowed) == FINITE
            allowed_arr = None if plain else np.full(n, allowed, np.uint8)
        elif allowed is None:
            mag = np.bitwise_and(rg.view(uint), _SIGN_OFF[dtype], out=ws.s(1, n, uint))
            plain = bool(mag.max() < _EXP_MASK[dtype])  # the golden rounds to finite values
            allowed_arr = None if plain else class_of(rg)
        else:
            allowed_arr = np.asarray(allowed).reshape(-1)
            plain = bool((allowed_arr == FINITE).all() and np.isfinite(g).all())
        if plain and a_finite:
            return self._compared(a, g, rg, abits, bound, to_flat, None)
        if allowed_arr is None:
            allowed_arr = np.full(n, FINITE, np.uint8)
        where = self._classes(a, g, allowed_arr, to_flat)
        if where is None:
            return self._compared(a, g, rg, abits, bound, to_flat, None)
        if where.size == 0:
            return None
        bound = None if bound is None else bound[where]
        return self._compared(a[where], g[where], rg[where], abits[where], bound, to_flat, where)

    def _classes(self, a, g, allowed, to_flat) -> np.ndarray | None:
        """NaN/inf accounting of a chunk where non-finite values may be, or are; the positions
        of the elements to compare (None: all of them)."""
        c, k = self.c, self.k
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
                        "index": index_of(int(to_flat(np.array([i]))[0]), self.shape),
                        "actual": float(a[i]),
                        "golden": float(g[i]),
                        "actual_class": class_names(int(ca[i])),
                        "golden_class": class_names(int(allowed[i])),
                    }
                )
        both = (ca == FINITE) & np.isfinite(g) & ((allowed & FINITE) != 0)
        return None if both.all() else np.flatnonzero(both)

    def _compared(self, a, g, rg, abits, bound, to_flat, where) -> np.ndarray | None:
        """Every metric of the compared elements (finite actual and golden, the finite class
        allowed) from one set of arrays, each computed once into the workspace: the error,
        |golden| + 1e-7, the relative error (float64: the golden is float64 and the thresholds
        compare at its precision) and the ordinals of the actual and of the rounded golden
        (integers from the bits, exact). ``where``: their positions in the chunk (None: all).
        Scratch s(1)..s(10), b(0)..b(2); `a` may be in s(0)."""
        dtype, c, k, ws = self.dtype, self.c, self.k, self._ws
        m = int(a.size)
        if m == 0:
            return None
        if self._fused is not None:
            return self._compared_fused(a, g, rg, abits, bound, to_flat, where)
        t = T[dtype]
        tol = DOUBLE_THOUSANDTH_TOL[dtype]
        c["n_compared"] += m
        diff, err, absg, den = ws.s(1, m), ws.s(2, m), ws.s(3, m), ws.s(4, m)
        scratch, mask = ws.s(5, m), ws.b(0, m)
        rel = ws.get(self._prefix + "rel", m)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            np.subtract(a, g, out=diff)
            np.abs(diff, out=err)
            np.abs(g, out=absg)
            np.add(absg, REL_EPS, out=den)
            np.divide(err, den, out=rel)
            self.sq_sum += float(np.multiply(err, err, out=scratch).sum())
        self.rel_sum += float(rel.sum())
        self.max_abs = max(self.max_abs, float(err.max()))
        self.max_rel = max(self.max_rel, float(rel.max()))
        # Units in the last place from the bits: exact integers.
        dord = _ordinals(abits, ws, 6, 7)
        dord -= _ordinals(rg.view(abits.dtype), ws, 8, 7)
        ulp = np.abs(dord, out=ws.s(8, m, dord.dtype))
        self.ulp_max = max(self.ulp_max, int(ulp.max()))
        self.ulp_sum += float(ulp.sum())
        spacing = rounding.spacing(rg, dtype, ws, "s7", base=9)
        with np.errstate(invalid="ignore", divide="ignore"):
            np.divide(diff, spacing, out=scratch)
        if not np.greater(spacing, 0, out=mask).all():
            scratch[~mask] = 0.0
        self.signed_ulp_sum += float(scratch.sum())
        lim = np.multiply(absg, t, out=ws.s(9, m))
        lim += t  # t + t|g|
        c["mixed_ok"] += int(np.count_nonzero(np.less_equal(err, lim, out=mask)))
        c["dt_rel_over"] += int(np.count_nonzero(np.greater(rel, tol, out=mask)))
        c["dt_abs_over"] += int(np.count_nonzero(np.greater(err, tol, out=mask)))
        small = np.less(absg, SMALL_THRESHOLD[dtype], out=ws.b(1, m))
        c["small_n"] += int(np.count_nonzero(small))
        np.greater(err, SMALL_ERR_BOUND[dtype], out=mask)
        c["small_err_count"] += int(np.count_nonzero(np.logical_and(mask, small, out=mask)))
        if k > 0:
            top = top_k(rel, k)
            pos = top if where is None else where[top]
            self.cand.append((rel[top], to_flat(pos), a[top], g[top], err[top], ulp[top]))
        if bound is not None:
            self._bound(a, g, rg, err, den, lim, small, bound, spacing, dord, to_flat, where)
        return rel

    def _bound(self, a, g, rg, err, den, lim, small, bound, spacing, dord, to_flat, where):
        """The error-bound standard and what the worst and the best correct kernel would score
        (standards.applicable), from the compared elements' arrays. Scratch s(1) (the signed
        error is no longer needed), s(4) (den, after its last use), s(5), s(8) (the ulps,
        after theirs), s(10), b(0)."""
        c, dtype, ws = self.c, self.dtype, self._ws
        m = int(a.size)
        tol, small_bound = DOUBLE_THOUSANDTH_TOL[dtype], SMALL_ERR_BOUND[dtype]
        wc, bc = self.wc, self.bc
        best, scratch, wrel, mask = ws.s(1, m), ws.s(5, m), ws.s(10, m), ws.b(0, m)
        with np.errstate(over="ignore", invalid="ignore"):
            np.divide(bound, den, out=wrel)
            np.copyto(best, rg)
            best -= g
            np.abs(best, out=best)  # |RNE(g) - g|
            brel = np.divide(best, den, out=den)  # den is not needed any more
            wc["sq_sum"] += float(np.multiply(bound, bound, out=scratch).sum())
            bc["sq_sum"] += float(np.multiply(best, best, out=scratch).sum())
        wc["rel_sum"] += float(wrel.sum())
        wc["max_rel"] = max(wc["max_rel"], float(wrel.max()))
        wc["max_abs"] = max(wc["max_abs"], float(bound.max()))
        wc["mixed_ok"] += int(np.count_nonzero(np.less_equal(bound, lim, out=mask)))
        wc["dt_rel_over"] += int(np.count_nonzero(np.greater(wrel, tol, out=mask)))
        wc["dt_abs_over"] += int(np.count_nonzero(np.greater(bound, tol, out=mask)))
        np.greater(bound, small_bound, out=mask)
        wc["small_err_count"] += int(np.count_nonzero(np.logical_and(mask, small, out=mask)))
        bc["rel_sum"] += float(brel.sum())
        bc["max_rel"] = max(bc["max_rel"], float(brel.max()))
        np.greater(best, small_bound, out=mask)
        bc["small_err_count"] += int(np.count_nonzero(np.logical_and(mask, small, out=mask)))
        c["bound_n"] += m
        ratio = _bound_ratio(err, bound, wrel, mask)
        ratio_hist.add(self.ratio_counts, ratio, ws.s(4, m, np.int64), mask)  # den: done with
        worst = float(ratio.max())
        self.bound_max_ratio = max(self.bound_max_ratio, worst)
        if worst > 1:
            over = np.greater(ratio, 1, out=mask)
            c["bound_violations"] += int(np.count_nonzero(over))
            self._bound_candidates(ratio, over, a, g, err, bound, to_flat, where)
        if dtype == "float32":
            return
        with np.errstate(invalid="ignore"):
            np.multiply(spacing, 0.5, out=best)
            np.subtract(bound, best, out=best)
            np.multiply(spacing, BIAS_CLEAN_FRACTION, out=scratch)
            clean = np.less_equal(best, scratch, out=mask)
        count = int(np.count_nonzero(clean))
        if count:
            c["rounding_bias_n"] += count
            resid = np.multiply(dord, clean, out=ws.s(8, m, dord.dtype))
            if resid.any():  # a correct kernel returns RNE(g) itself on clean elements
                nz = np.flatnonzero(resid)
                sign = np.sign(g[nz]).astype(resid.dtype)
                self.rounding_bias_sum += int((resid[nz] * sign).sum())

    def _bound_candidates(self, ratio, over, a, g, err, bound, to_flat, where) -> None:
        """The chunk's worst violations of the bound (``over``: ratio > 1), kept for the k
        worst of the case."""
        if self.k > 0:
            idx = np.flatnonzero(over)
            top = idx[np.argsort(-ratio[idx], kind="stable")[: self.k]]
            pos = top if where is None else where[top]
            self.bound_cand.append((ratio[top], to_flat(pos), a[top], g[top], err[top], bound[top]))

    def _compared_fused(self, a, g, rg, abits, bound, to_flat, where) -> np.ndarray:
        """What ``_compared`` and ``_bound`` account, from golden/fused.c (the same bits); the
        few values that only the worst elements need are computed for them alone."""
        c, wc, bc, ws, k = self.c, self.wc, self.bc, self._ws, self.k
        m = int(a.size)
        uint = abits.dtype
        rbits = rg.view(uint)
        rel = ws.get(self._prefix + "rel", m)
        s = self._fused.compared(  # type: ignore[union-attr]
            np.ascontiguousarray(a),
            np.ascontiguousarray(g),
            np.ascontiguousarray(abits),
            np.ascontiguousarray(rbits),
            None if bound is None else np.ascontiguousarray(bound),
            self.dtype,
            rel,
            None if bound is None else self.ratio_counts,
        )
        c["n_compared"] += m
        self.sq_sum += s["sq_sum"]
        self.rel_sum += s["rel_sum"]
        self.max_abs = max(self.max_abs, s["max_abs"])
        self.max_rel = max(self.max_rel, s["max_rel"])
        self.ulp_max = max(self.ulp_max, int(s["ulp_max"]))
        self.ulp_sum += float(s["ulp_sum"])
        self.signed_ulp_sum += s["signed_ulp_sum"]
        for name in ("mixed_ok", "dt_rel_over", "dt_abs_over", "small_n", "small_err_count"):
            c[name] += int(s[name])
        if k > 0:
            top = top_k(rel, k)
            pos = top if where is None else where[top]
            at, gt = a[top], g[top]
            ulp = np.abs(_ordinals(abits[top], ws, 6, 7) - _ordinals(rbits[top], ws, 8, 7))
            self.cand.append((rel[top], to_flat(pos), at, gt, np.abs(at - gt), ulp))
        if bound is None:
            return rel
        wc["sq_sum"] += s["wc_sq_sum"]
        bc["sq_sum"] += s["bc_sq_sum"]
        wc["rel_sum"] += s["wc_rel_sum"]
        wc["max_rel"] = max(wc["max_rel"], s["wc_max_rel"])
        wc["max_abs"] = max(wc["max_abs"], s["wc_max_abs"])
        for name in ("mixed_ok", "dt_rel_over", "dt_abs_over", "small_err_count"):
            wc[name] += int(s["wc_" + name])
        bc["rel_sum"] += s["bc_rel_sum"]
        bc["max_rel"] = max(bc["max_rel"], s["bc_max_rel"])
        bc["small_err_count"] += int(s["bc_small_err_count"])
        c["bound_n"] += m
        self.bound_max_ratio = max(self.bound_max_ratio, s["bound_max_ratio"])
        if s["bound_violations"]:
            c["bound_violations"] += int(s["bound_violations"])
            err = np.abs(a - g)
            ratio = _bound_ratio(err, bound, np.empty(m), np.empty(m, bool))
            self._bound_candidates(ratio, ratio > 1, a, g, err, bound, to_flat, where)
        if self.dtype != "float32" and s["rounding_bias_n"]:
            c["rounding_bias_n"] += int(s["rounding_bias_n"])
            self.rounding_bias_sum += int(s["rounding_bias_sum"])
        return rel

    def result(self) -> dict:
        c, m = self.c, self.c["n_compared"]
        worst = top_rows(
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
                bound_hist=ratio_hist.result(self.ratio_counts),
                bound_worst=top_rows(
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


def _ordinals(bits: np.ndarray, ws: Workspace, slot: int, sign_slot: int) -> np.ndarray:
    """golden.dtypes.ordinal from the bits of values already in the dtype (uint16 or uint32):
    sign-magnitude to a signed integer, +0 and -0 both 0; int32 for 16-bit dtypes, int64 for
    float32 (differences of two float32 ordinals need 33 bits). In scratch s(slot), using
    s(sign_slot)."""
    wide, signed, shift, low = (
        (np.int32, np.int16, 15, 0x7FFF)
        if bits.dtype == np.uint16
        else (np.int64, np.int32, 31, 0x7FFFFFFF)
    )
    v = ws.s(slot, bits.shape, wide)
    sign = ws.s(sign_slot, bits.shape, wide)
    np.copyto(v, bits.view(signed))
    np.right_shift(v, shift, out=sign)  # -1 where the sign bit is set, else 0
    v &= low
    v ^= sign
    v -= sign  # -magnitude where the sign bit was set
    return v


def _bound_ratio(err: np.ndarray, bound: np.ndarray, out: np.ndarray, mask: np.ndarray):
    """Each error over its bound into ``out``: err / bound where the bound is positive, else
    inf for a nonzero error and 0 for none (``mask``: scratch)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.divide(err, bound, out=out)
    if not np.greater(bound, 0, out=mask).all():
        off = ~mask
        ratio[off] = np.where(err[off] > 0, np.inf, 0.0)
    return ratio


def compute_metrics(
    actual: npt.ArrayLike,
    golden: npt.ArrayLike,
    dtype: str,
    k: int = 8,
    fused: Kernel | None = None,
) -> dict:
    """All metrics of `actual` (any float array, usually in the case dtype) against `golden`
    (float64), judged as dtype `dtype`; NaN/inf positions against the golden rounded to it.
    ``fused``: golden/fused.c's library to compute them with (None: numpy; the same bits)."""
    actual = np.asarray(actual)
    golden = np.asarray(golden)
    if actual.shape != golden.shape:
        raise ValueError(f"actual shape {actual.shape} differs from golden shape {golden.shape}")
    acc = MetricsAccumulator(dtype, actual.shape, k, fused=fused)
    af, gf = actual.ravel(), golden.ravel()
    for lo in range(0, int(af.size), CHUNK):
        acc.add(af[lo : lo + CHUNK], gf[lo : lo + CHUNK], lo)
    return acc.result()


def golden_in_dtype(golden: np.ndarray, dtype: str) -> np.ndarray:
    """The golden rounded once to the case dtype: the best result a kernel can return."""
    return round_to(golden, dtype)
