"""The four public precision standards (SPEC section 5), each a verdict with a readable reason.

    judge("experimental", actual, golden, "float16")  -> Verdict(standard, passed, reason, metrics)

Thresholds follow the dtype the result is judged as. A NaN/inf position that differs from the
golden fails every standard. benchmark-ratio compares the result's errors with a third-party
benchmark's errors (e.g. PyTorch on CPU, golden.benchmark.torch_benchmark) in the same dtype.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from golden import fused as fused_mod
from golden.dtypes import (
    BIAS_LIMIT,
    BIAS_MIN_N,
    DOUBLE_THOUSANDTH_TOL,
    MIXED_MAX_ABS,
    MIXED_MIN_OK_FRACTION,
    REL_EPS,
    SUPPORTED,
    T,
    dtype_name,
)
from golden.metrics import check_dtype, compute_metrics

STANDARDS = ("experimental", "mixed-tolerance", "double-thousandth", "benchmark-ratio")
DEFAULT_STANDARD = "experimental"
# The farm's own standard: every element within the bound a correct fp32 kernel meets
# (golden/bound.py), NaN/inf where the device must produce them, no rounding bias.
ERROR_BOUND = "error-bound"
LEVELS = ("L0", "L1", "L2")

# benchmark-ratio limits on device/benchmark ratios, per level.
RATIO_LIMITS = {
    "L0": {"mare": 10.0, "mere": 2.0, "rmse": 2.0},
    "L1": {"mare": 5.0, "mere": 1.5, "rmse": 1.5},
    "L2": {"mare": 2.0, "mere": 1.2, "rmse": 1.2},
}
# The device's small-value error count may be at most this times max(benchmark count, 1).
SMALL_COUNT_FACTOR = 2
RATIO_EPS = REL_EPS  # ratios are device / (benchmark + 1e-7)


class BenchmarkRequired(ValueError):
    """benchmark-ratio was asked for without a benchmark result."""


@dataclass
class Verdict:
    standard: str
    passed: bool
    reason: str
    metrics: dict = field(repr=False)
    level: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _fmt_index(idx: list[int]) -> str:
    return str(tuple(idx))


def _worst_text(m: dict) -> str:
    if not m.get("worst"):
        return ""
    w = m["worst"][0]
    return (
        f"; worst rel {w['rel_err']:.2e} at {_fmt_index(w['index'])}: "
        f"actual {w['actual']:.6g} vs golden {w['golden']:.6g}"
    )


def _nonfinite_reason(name: str, m: dict) -> str:
    first = m["nonfinite"][0] if m["nonfinite"] else None
    where = (
        f"; first at {_fmt_index(first['index'])}: actual {first['actual']:.6g}, "
        f"golden {first['golden']:.6g}"
        if first
        else ""
    )
    return (
        f"FAIL {name} {m['dtype']}: NaN/inf positions differ from the golden at "
        f"{m['nonfinite_mismatch']} of {m['n']} elements ({m['nan_mismatch']} NaN, "
        f"{m['inf_mismatch']} inf){where}"
    )


def _tag(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def _experimental(m: dict) -> tuple[bool, str]:
    t = T[m["dtype"]]
    ok_mere, ok_mare = m["mere"] < t, m["mare"] < 10 * t
    passed = ok_mere and ok_mare
    text = (
        f"{_tag(passed)} experimental {m['dtype']}: "
        f"MERE {m['mere']:.2e} {'<' if ok_mere else '>='} T {t:.2e}, "
        f"MARE {m['mare']:.2e} {'<' if ok_mare else '>='} 10T {10 * t:.2e} (n={m['n_compared']})"
    )
    return passed, text + ("" if passed else _worst_text(m))


def _mixed(m: dict) -> tuple[bool, str]:
    dt = m["dtype"]
    t, max_abs = T[dt], MIXED_MAX_ABS[dt]
    frac = m["mixed_ok_fraction"]
    ok_frac = frac >= MIXED_MIN_OK_FRACTION
    ok_abs = m["max_abs"] <= max_abs
    passed = ok_frac and ok_abs
    text = (
        f"{_tag(passed)} mixed-tolerance {dt}: {100 * frac:.2f}% of elements within "
        f"|a-g| <= T+T|g| (T {t:.2e}; need >= {100 * MIXED_MIN_OK_FRACTION:.0f}%), "
        f"max abs err {m['max_abs']:.2e} {'<=' if ok_abs else '>'} {max_abs:g} "
        f"(n={m['n_compared']})"
    )
    return passed, text + ("" if passed else _worst_text(m))


def _double_thousandth(m: dict) -> tuple[bool, str]:
    dt = m["dtype"]
    tol = DOUBLE_THOUSANDTH_TOL[dt]
    allowed = m["n"] * tol
    rel_bad, abs_bad = m["dt_rel_over"] > allowed, m["dt_abs_over"] > allowed
    passed = not (rel_bad and abs_bad)
    text = (
        f"{_tag(passed)} double-thousandth {dt}: {m['dt_rel_over']} elements over rel tol "
        f"{tol:g} ({'>' if rel_bad else '<='} n*tol {allowed:g}) and {m['dt_abs_over']} over "
        f"abs tol {tol:g} ({'>' if abs_bad else '<='} n*tol {allowed:g}); fails only when both "
        f"exceed (n={m['n']})"
    )
    return passed, text + ("" if passed else _worst_text(m))


def error_bound(m: dict) -> tuple[bool, str]:
    """The farm's own standard, on metrics that judged the bound (golden.judge.judge_case)."""
    dt = m["dtype"]
    if "bound_violations" not in m:
        return False, f"FAIL {ERROR_BOUND} {dt}: no bound was computed (needs the inputs)"
    over = m["bound_violations"]
    n_bias, bias = m["rounding_bias_n"], m["rounding_bias_ulp"]
    biased = n_bias >= BIAS_MIN_N and abs(bias) > BIAS_LIMIT
    passed = over == 0 and not biased
    bias_text = (
        f"rounding bias {bias:+.3f} ulp over {n_bias} clean elements "
        f"({'>' if biased else '<='} {BIAS_LIMIT:g})"
        if n_bias >= BIAS_MIN_N
        else f"rounding bias not judged ({n_bias} clean elements < {BIAS_MIN_N})"
    )
    text = (
        f"{_tag(passed)} {ERROR_BOUND} {dt}: {over} of {m['bound_n']} elements beyond the fp32 "
        f"error bound (worst {m['bound_max_ratio']:.3g}x the bound), {bias_text}"
    )
    if m["bound_n"] < m["n"]:
        # Every other element is NaN or inf where the golden may be (matched, or an overflow
        # that some correct order of operations makes): say it, as "0 of 0" alone hides it.
        text += (
            f"; {m['n'] - m['bound_n']} of {m['n']} elements non-finite where the golden "
            "allows it (not compared)"
        )
    if over and m.get("bound_worst"):
        w = m["bound_worst"][0]
        text += (
            f"; worst at {_fmt_index(w['index'])}: actual {w['actual']:.6g} vs golden "
            f"{w['golden']:.6g}, error {w['abs_err']:.3g} > bound {w['bound']:.3g}"
        )
    return passed, text


def applicable(standard: str, m: dict, level: str = "L0") -> tuple[bool, str]:
    """Whether every correct kernel passes `standard` on this case, from its numbers.

    The worst correct kernel has every error at the bound (m["worst_case"]); no kernel beats the
    golden rounded once (m["best_case"]), which bounds a benchmark's errors from below. A
    standard is applicable when it passes the worst case (benchmark-ratio: when the worst-case
    device over the best-case benchmark stays within the level's limits), so gating on it can
    never fail a correct kernel. Metrics without a bound (no inputs) make nothing applicable."""
    wc, bc = m.get("worst_case"), m.get("best_case")
    dt = m["dtype"]
    if wc is None or bc is None:
        return False, "no error bound was computed"
    if m["n_compared"] == 0:
        return True, "no finite element to compare"
    if standard == "experimental":
        t = T[dt]
        ok = wc["mere"] < t and wc["mare"] < 10 * t
        why = f"worst-case MERE {wc['mere']:.2e} (T {t:.2e}), MARE {wc['mare']:.2e} (10T)"
    elif standard == "mixed-tolerance":
        ok = wc["mixed_ok_fraction"] >= MIXED_MIN_OK_FRACTION and wc["max_abs"] <= MIXED_MAX_ABS[dt]
        why = (
            f"worst case {100 * wc['mixed_ok_fraction']:.2f}% within T+T|g|, max abs "
            f"{wc['max_abs']:.2e} (limit {MIXED_MAX_ABS[dt]:g})"
        )
    elif standard == "double-thousandth":
        allowed = m["n"] * DOUBLE_THOUSANDTH_TOL[dt]
        ok = not (wc["dt_rel_over"] > allowed and wc["dt_abs_over"] > allowed)
        why = (
            f"worst case {wc['dt_rel_over']} over rel tol and {wc['dt_abs_over']} over abs tol "
            f"(n*tol {allowed:g})"
        )
    elif standard == "benchmark-ratio":
        r = {k: _ratio(wc[k], bc[k]) for k in ("mare", "mere", "rmse")}
        limit = SMALL_COUNT_FACTOR * max(bc["small_err_count"], 1)
        lim = RATIO_LIMITS[level]
        ok = all(r[k] <= lim[k] for k in r) and wc["small_err_count"] <= limit
        why = (
            f"worst-case ratios MARE {r['mare']:.3g}, MERE {r['mere']:.3g}, RMSE {r['rmse']:.3g} "
            f"(limits {lim['mare']:g}/{lim['mere']:g}/{lim['rmse']:g})"
        )
    else:
        raise ValueError(f"unknown standard {standard!r}; use one of: {', '.join(STANDARDS)}")
    return ok, ("applicable: " if ok else "not applicable: ") + why


def _ratio(dev: float, bench: float) -> float:
    return float(dev / (bench + RATIO_EPS))


def benchmark_ratios(m: dict, bm: dict) -> dict:
    """The device/benchmark ratios and small-value counts benchmark-ratio judges."""
    return {
        "mare": _ratio(m["mare"], bm["mare"]),
        "mere": _ratio(m["mere"], bm["mere"]),
        "rmse": _ratio(m["rmse"], bm["rmse"]),
        "small_err_count": m["small_err_count"],
        "small_err_count_benchmark": bm["small_err_count"],
        "small_err_count_limit": SMALL_COUNT_FACTOR * max(bm["small_err_count"], 1),
    }


def _ratio_failures(r: dict, level: str) -> list[str]:
    lim = RATIO_LIMITS[level]
    bad = [
        f"{key.upper()} ratio {r[key]:.3g} > {lim[key]:g}"
        for key in ("mare", "mere", "rmse")
        if r[key] > lim[key]
    ]
    if r["small_err_count"] > r["small_err_count_limit"]:
        bad.append(
            f"small-value errors {r['small_err_count']} > {r['small_err_count_limit']} "
            f"(2 x max(benchmark {r['small_err_count_benchmark']}, 1))"
        )
    return bad


def _benchmark_ratio(m: dict, bm: dict, level: str) -> tuple[bool, str, dict]:
    r = benchmark_ratios(m, bm)
    bad = _ratio_failures(r, level)
    passed = not bad
    levels_passed = [lv for lv in LEVELS if not _ratio_failures(r, lv)]
    lim = RATIO_LIMITS[level]
    summary = (
        f"MARE ratio {r['mare']:.3g} (limit {lim['mare']:g}), "
        f"MERE ratio {r['mere']:.3g} (limit {lim['mere']:g}), "
        f"RMSE ratio {r['rmse']:.3g} (limit {lim['rmse']:g}), "
        f"small-value errors {r['small_err_count']} (limit {r['small_err_count_limit']}); "
        f"device MERE {m['mere']:.2e} vs benchmark {bm['mere']:.2e}"
    )
    head = f"{_tag(passed)} benchmark-ratio {level} {m['dtype']}: "
    if bad:
        text = head + "; ".join(bad) + " | " + summary + _worst_text(m)
    else:
        text = head + summary + f"; levels passed: {','.join(levels_passed) or 'none'}"
    extra = {"ratios": r, "levels_passed": levels_passed, "benchmark": _strip(bm)}
    return passed, text, extra


def _strip(m: dict) -> dict:
    """Benchmark metrics without the per-element lists (kept short in records)."""
    return {k: v for k, v in m.items() if k not in ("worst", "nonfinite")}


def _resolve_dtype(actual: np.ndarray, dtype: str | None) -> str:
    """The dtype to judge as: the given one, which must agree with the result's own dtype when
    that is one of the supported ones (a bf16 result is judged with bf16 thresholds)."""
    own = None
    try:
        own = dtype_name(np.asarray(actual).dtype)
    except ValueError:
        pass
    if dtype is None:
        if own not in SUPPORTED:
            raise ValueError(
                f"cannot tell the dtype to judge a {np.asarray(actual).dtype} result as; pass dtype"
            )
        return own
    check_dtype(dtype)
    if own in SUPPORTED and own != dtype:
        raise ValueError(
            f"the result is {own} but was to be judged as {dtype}; thresholds follow the "
            f"result's dtype, pass dtype={own!r}"
        )
    return dtype


def judge(
    standard: str,
    actual: np.ndarray,
    golden: np.ndarray | None,
    dtype: str | None,
    *,
    benchmark: np.ndarray | None = None,
    level: str = "L0",
    metrics: dict | None = None,
    benchmark_metrics: dict | None = None,
) -> Verdict:
    """The verdict of one standard. `metrics` (from compute_metrics or golden.judge) saves
    recomputing them (golden may then be None); benchmark-ratio needs `benchmark`, the
    third-party result in the same dtype, or its `benchmark_metrics`."""
    if standard not in (*STANDARDS, ERROR_BOUND):
        known = ", ".join((*STANDARDS, ERROR_BOUND))
        raise ValueError(f"unknown standard {standard!r}; use one of: {known}")
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; use one of: {', '.join(LEVELS)}")
    if standard == "benchmark-ratio" and benchmark is None and benchmark_metrics is None:
        raise BenchmarkRequired(
            "benchmark-ratio needs the benchmark result (e.g. golden.benchmark.torch_benchmark "
            "of the same inputs); pass benchmark="
        )
    dtype = _resolve_dtype(actual, dtype)
    if metrics is None:
        if golden is None:
            raise ValueError("judge needs the golden or the metrics")
        metrics = compute_metrics(actual, golden, dtype, fused=fused_mod.kernel())
    m = dict(metrics)
    if m.get("dtype") != dtype:
        raise ValueError(f"metrics were computed for {m.get('dtype')}, not {dtype}")
    lvl = level if standard == "benchmark-ratio" else None

    if m["n"] == 0:
        return Verdict(
            standard,
            True,
            f"PASS {standard} {dtype}: empty tensor (n=0), nothing to compare",
            m,
            lvl,
        )
    if not m["nonfinite_ok"]:
        return Verdict(standard, False, _nonfinite_reason(standard, m), m, lvl)

    if standard == ERROR_BOUND:
        passed, reason = error_bound(m)
    elif standard == "experimental":
        passed, reason = _experimental(m)
    elif standard == "mixed-tolerance":
        passed, reason = _mixed(m)
    elif standard == "double-thousandth":
        passed, reason = _double_thousandth(m)
    else:
        if benchmark_metrics is not None:
            bm = benchmark_metrics
        elif golden is None:
            raise ValueError("benchmark-ratio needs the golden or the benchmark's metrics")
        else:
            bench, gshape = np.asarray(benchmark), np.asarray(golden).shape
            if bench.shape != gshape:
                raise ValueError(
                    f"benchmark shape {bench.shape} differs from golden shape {gshape}"
                )
            bm = compute_metrics(bench, golden, dtype, fused=fused_mod.kernel())
        passed, reason, extra = _benchmark_ratio(m, bm, level)
        m.update(extra)
    return Verdict(standard, passed, reason, m, lvl)


def judge_all(
    actual: np.ndarray,
    golden: np.ndarray,
    dtype: str | None,
    benchmark: np.ndarray | None = None,
    *,
    level: str = "L0",
) -> dict[str, Verdict]:
    """Every standard that can be judged (benchmark-ratio only with a benchmark), sharing one
    metrics computation; for recording all metrics whichever standard gates the case."""
    dtype = _resolve_dtype(actual, dtype)
    m = compute_metrics(actual, golden, dtype, fused=fused_mod.kernel())
    out = {}
    for std in STANDARDS:
        if std == "benchmark-ratio" and benchmark is None:
            continue
        out[std] = judge(std, actual, golden, dtype, benchmark=benchmark, level=level, metrics=m)
    return out
