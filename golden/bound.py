"""What a correct fp32 kernel may return for each element: its possible classes and an error bound.

The farm's own standard (``error-bound``, golden/standards.py) judges every element against a
bound derived from a forward error analysis of the kernel's arithmetic (SPEC sections 1 and 3).
What it assumes about a correct kernel:

* Inputs are read exactly: fp16/bf16 widen to fp32 without error; dy and y are the case's values.
* ``p = exp(y)`` in fp32 with a relative error of at most ``EXP_REL_ERR`` (2^-21, eight fp32
  units in the last place: vendor Exp units are not correctly rounded), overflowing to +inf and
  possibly flushing results below 2^-126 to zero (``FLUSH``).
* ``s = sum(dy)`` over the reduce extent n in fp32, in any order in which each term passes through
  at most ``D(n) = min(n - 1, 2*ceil(n/64) + 64)`` additions: lane-parallel sums over 64 fp32
  lanes (one 256-byte vector repeat), grouped lines or UB chunks, then the lanes and groups folded
  by a tree or a short sequential pass. Its error is at most ``gamma(D) * sum(|dy|)`` with
  ``gamma(D) = D*u / (1 - D*u)``, u = 2^-24 (Higham, Accuracy and Stability of Numerical
  Algorithms, 2nd ed., section 4.2). A plain running sum over a long row (n - 1 additions) is NOT
  tolerated: on long rows it is measurably worse, and the farm reports it.
* ``q = p * s`` and ``out = dy - q`` with one fp32 rounding each (reduce extent 1:
  ``dy * (1 - p)`` or ``dy - p*dy``, both covered), then one round-to-nearest-even cast to the
  output dtype (half a unit in the last place of that dtype).

For an element with golden o = dy - e*s (float64, e = exp(y)) the bound is

    B32 = u|o| + u|dy| + 2u*e*|s| + (1 + 4u) * [(e(1 + eps) + eta) * gamma(D) * S1
                                              + |s| * (eps*e + eta)] + 4*eta + slack64

(S1 = sum |dy| over the line, eps = EXP_REL_ERR, eta = FLUSH, slack64 covers the float64 golden's
own rounding), and the output may differ from o by at most B32 plus half an ulp of the output
dtype at |o| + B32 (fp32 output: B32 alone, its last rounding is already counted).

The same model gives the possible classes of each element (finite, NaN, +inf, -inf) as the
device must produce them: the golden rounded to the output dtype, widened where fp32 arithmetic
can legitimately differ (an exp that overflows fp32 while float64 does not, a sum that may
overflow in some order, 0 * inf, a value within the bound of the dtype's overflow threshold).

``golden_and_bound`` is what golden/judge.py calls per slab: the golden (grad_3d's, bit for bit),
the classes and the bound from one set of float64 arrays (dy and exp(y) widened once, the line
sums shared with the golden, the bound's terms accumulated in place, in the order
``elementwise`` adds them, so the bound is the same bits). When no element of the slab can be
anything but finite, which scalar maxima of the same arrays decide, the class model is skipped and
``allowed`` is the int FINITE (every element); otherwise ``elementwise`` runs the whole model.

The model's numbers are in golden/fp32_model.py; rounding into the dtype and its spacing from
the bits in golden/rounding.py. The slab-sized arrays live in a ``Workspace``
(golden/workspace.py) reused from slab to slab and from case to case.
"""

from __future__ import annotations

import math

import numpy as np

from golden.dtypes import round_to
from golden.fp32_model import EXP_REL_ERR, FLUSH, LANES, SLACK64, SMALLEST_SUBNORMAL_HALF, U32
from golden.fused_library import Kernel
from golden.rounding import OVERFLOW, spacing_at, ulp_of
from golden.workspace import Workspace

# Class bits of the possible outcomes of one element.
FINITE, NAN, POSINF, NEGINF = 1, 2, 4, 8
CLASS_NAMES = {FINITE: "finite", NAN: "nan", POSINF: "+inf", NEGINF: "-inf"}


def class_of(x: np.ndarray) -> np.ndarray:
    """The class bit of each value."""
    x = np.asarray(x, dtype=np.float64)
    c = np.full(x.shape, FINITE, dtype=np.uint8)
    c[np.isnan(x)] = NAN
    c[np.isposinf(x)] = POSINF
    c[np.isneginf(x)] = NEGINF
    return c


def class_names(bits: int) -> str:
    return "|".join(name for bit, name in CLASS_NAMES.items() if bits & bit) or "none"


def rounded_classes(golden: np.ndarray, dtype: str) -> np.ndarray:
    """The class of the golden rounded to `dtype` (SPEC section 5), without any input model."""
    return class_of(round_to(np.asarray(golden, dtype=np.float64), dtype))


def depth(n: int) -> int:
    """D(n): the additions a term of an n-term sum may pass through (see the module docstring)."""
    if n <= 1:
        return 0
    return min(n - 1, 2 * math.ceil(n / LANES) + LANES)


def gamma(d: int) -> float:
    return d * U32 / (1 - d * U32)


def line_sums(dy3: np.ndarray) -> dict[str, np.ndarray]:
    """Per reduce line (axis 1 of a [rows, d1, cols] float64 slab): the classes the fp32 sum may
    have, its value and sum |dy| over the finite terms, and its error bound."""
    d1 = dy3.shape[1]
    g = gamma(depth(d1))
    finite = np.isfinite(dy3)
    fin = np.where(finite, dy3, 0.0)
    s = np.ascontiguousarray(np.swapaxes(fin, 1, 2)).sum(axis=2)[:, None, :]
    s1 = np.ascontiguousarray(np.swapaxes(np.abs(fin), 1, 2)).sum(axis=2)[:, None, :]
    any_nan = np.isnan(dy3).any(axis=1, keepdims=True)
    any_pinf = np.isposinf(dy3).any(axis=1, keepdims=True)
    any_minf = np.isneginf(dy3).any(axis=1, keepdims=True)
    err = g * s1 + SLACK64 * s1
    cls = np.full(s.shape, FINITE, dtype=np.uint8)
    # Partial sums of finite terms may overflow fp32 in some order once sum |dy| can reach it.
    may_overflow = s1 * (1 + g) >= OVERFLOW["float32"]
    cls[may_overflow] = FINITE | POSINF | NEGINF | NAN
    cls[any_pinf] = POSINF
    cls[any_minf] = NEGINF
    cls[(any_pinf & any_minf) | any_nan] = NAN
    return {"cls": cls, "s": s, "s1": s1, "err": err}


def elementwise(dy3: np.ndarray, y3: np.ndarray, golden3: np.ndarray, dtype: str):
    """(allowed classes, bound for finite results) of every element of a [rows, d1, cols] slab.

    ``allowed`` is a uint8 of class bits; ``bound`` the largest |actual - golden| a correct
    kernel may reach on an element whose result is finite."""
    d = dy3.astype(np.float64)
    o = np.asarray(golden3, dtype=np.float64)
    no_reduce = d.shape[1] == 1
    with np.errstate(all="ignore"):
        e = np.exp(y3.astype(np.float64))
        if no_reduce:
            s = np.where(np.isfinite(d), d, 0.0)
            s_err = np.zeros(d.shape)
        else:
            line = line_sums(d)
            s, s_err = line["s"], line["err"]
        abs_s = np.abs(s)
        b32 = (
            U32 * np.abs(o)
            + U32 * np.abs(d)
            + 2 * U32 * e * abs_s
            + (1 + 4 * U32)
            * ((e * (1 + EXP_REL_ERR) + FLUSH) * s_err + abs_s * (EXP_REL_ERR * e + FLUSH))
            + 4 * FLUSH
            + SLACK64 * (np.abs(d) + e * abs_s)
        )
        bound = b32 if dtype == "float32" else b32 + 0.5 * ulp_of(np.abs(o) + b32, dtype)
        p = _exp_classes(y3, e)
        if no_reduce:
            fp32 = _no_reduce_classes(d, p, e)
        else:
            fp32 = _reduce_classes(d, p, e, line)
        allowed = _cast_classes(fp32, o, b32, dtype)
    bound = np.where(np.isfinite(bound), bound, np.inf)
    return allowed, bound


def golden_and_bound(
    dy3: np.ndarray,
    y3: np.ndarray,
    dtype: str,
    ws: Workspace | None = None,
    fused: Kernel | None = None,
):
    """(golden, allowed, bound) of a [rows, d1, cols] slab in the case dtype, reducing axis 1.

    ``golden`` is golden.reference.grad_3d's, bit for bit (the same float64 operations in the
    same order); ``bound`` is ``elementwise``'s, bit for bit. ``allowed`` is the int FINITE when
    every element of the slab can only be finite, else ``elementwise``'s uint8 array. The golden
    and the bound are in `ws` under "golden" and "bound" (scratch s(0)..s(7), b(0)).

    The slab is plain, and the class model not needed, when every dy is finite, no exp(y) can
    overflow fp32 (max e), no line's |dy| sum can reach fp32's overflow in any order (max S1), no
    product exp(y) * sum can (max e times the largest |sum| plus its error bound, an upper bound
    of every element's, rounding being monotone) and no output is within its bound of the
    dtype's overflow (max |golden| + bound): each class mask of ``elementwise`` is then FINITE
    alone. Anything else (NaN, inf, huge values) runs the whole model.

    ``fused``: the library that computes a plain slab's golden and bound in one pass, the same
    bits (golden/fused_library.py; golden.fused.kernel() is this host's checked one, when it has
    one; None: numpy)."""
    ws = Workspace() if ws is None else ws
    kernel = fused
    shape = dy3.shape
    d1 = shape[1]
    ovf32 = OVERFLOW["float32"]
    d, e, ad = ws.s(0, shape), ws.s(1, shape), ws.s(2, shape)
    g = ws.get("golden", shape)
    np.copyto(d, dy3)
    np.copyto(e, y3)  # y in float64, exp(y) below
    np.abs(d, out=ad)
    with np.errstate(all="ignore"):
        if d1 == 1:
            # grad_3d: dy * -expm1(y)
            np.expm1(e, out=g)
            np.negative(g, out=g)
            np.multiply(d, g, out=g)
            np.exp(e, out=e)
            emax = float(e.max())
            admax = float(ad.max())
            m_hi = max(1.0, emax) + EXP_REL_ERR * emax + FLUSH + U32 * (1 + emax)
            plain = (
                math.isfinite(admax)
                and emax * (1 + EXP_REL_ERR) < ovf32
                and admax * m_hi * (1 + U32) < ovf32
            )
            abs_s, s_err = ad, None
        else:
            np.exp(e, out=e)
            emax = float(e.max())
            # grad_3d: each line summed contiguously, then dy - exp(y) * sum
            lines = np.swapaxes(d, 1, 2)
            if not lines.flags.c_contiguous:  # reduce-mid: copy the lines together
                copy = ws.s(3, lines.shape)
                np.copyto(copy, lines)
                lines = copy
            s = lines.sum(axis=2)[:, None, :]
            abs_lines = np.swapaxes(ad, 1, 2)
            if not abs_lines.flags.c_contiguous:
                abs_lines = np.abs(lines, out=lines)  # the copy, no longer needed
            s1 = abs_lines.sum(axis=2)[:, None, :]
            gam = gamma(depth(d1))
            s_err = gam * s1 + SLACK64 * s1
            abs_s = np.abs(s)
            s1max = float(s1.max())
            s_hi = float((abs_s + s_err).max())
            plain = (
                math.isfinite(s1max)
                and s1max * (1 + gam) < ovf32
                and emax * (1 + EXP_REL_ERR) < ovf32
                and (emax * (1 + EXP_REL_ERR) + FLUSH) * s_hi * (1 + U32) < ovf32
            )
        if plain and kernel is not None:  # the golden and the bound in one pass (golden/fused.c)
            bound = ws.get("bound", shape)
            per_line = None if s_err is None else (s, abs_s, s_err)
            top = kernel.golden_bound(d, e, ad, per_line, dtype, g, bound)
            if top < OVERFLOW[dtype]:
                return g, FINITE, bound
        elif d1 > 1:  # grad_3d: dy - exp(y) * sum
            np.multiply(e, s, out=g)
            np.subtract(d, g, out=g)
        if plain and kernel is None:
            bound, top = _plain_bound(g, ad, e, abs_s, s_err, dtype, ws)
            if top < OVERFLOW[dtype]:
                return g, FINITE, bound
    allowed, bound = elementwise(dy3, y3, g, dtype)
    return g, allowed, bound


def _plain_bound(o, ad, e, abs_s, s_err, dtype: str, ws: Workspace) -> tuple[np.ndarray, float]:
    """``elementwise``'s bound of a plain slab (finite s = sum(dy); s_err None: reduce extent 1,
    where s is dy), its terms added in the same order, in place; and max(|o| + B32), for the
    overflow check. The bound is in `ws` under "bound" (scratch s(3)..s(7), b(0))."""
    shape = o.shape
    b = ws.get("bound", shape)
    absg, t, u = ws.s(3, shape), ws.s(4, shape), ws.s(5, shape)
    np.abs(o, out=absg)
    np.multiply(absg, U32, out=b)
    np.multiply(ad, U32, out=t)
    b += t
    np.multiply(e, 2 * U32, out=t)
    t *= abs_s
    b += t
    np.multiply(e, EXP_REL_ERR, out=u)
    u += FLUSH
    u *= abs_s
    if s_err is not None:
        np.multiply(e, 1 + EXP_REL_ERR, out=t)
        t += FLUSH
        t *= s_err
        t += u
    else:  # (e(1 + eps) + FLUSH) * 0 + u is u
        t, u = u, t
    t *= 1 + 4 * U32
    b += t
    b += 4 * FLUSH
    np.multiply(e, abs_s, out=t)
    t += ad
    t *= SLACK64
    b += t
    absg += b  # |o| + B32
    top = float(absg.max())
    if dtype == "float32":
        return b, top
    half = spacing_at(absg, dtype, ws, base=6)
    half *= 0.5
    b += half  # B32 + ulp/2
    return b, top


def _exp_classes(y: np.ndarray, e: np.ndarray) -> dict[str, np.ndarray]:
    """What p = exp(y) in fp32 may be: NaN, +inf, finite, zero, nonzero."""
    nan = np.isnan(y.astype(np.float64))
    fin = ~nan & (e * (1 - EXP_REL_ERR) < OVERFLOW["float32"])
    return {
        "nan": nan,
        "inf": ~nan & (e * (1 + EXP_REL_ERR) >= OVERFLOW["float32"]),
        "fin": fin,
        "zero": fin & (e * (1 - EXP_REL_ERR) <= FLUSH),
        "nonzero": ~nan & (e * (1 + EXP_REL_ERR) >= SMALLEST_SUBNORMAL_HALF),
    }


def _product_classes(a_fin, a_zero, a_nonzero, a_inf, a_nan, a_pos, a_neg, b, lo, hi):
    """Classes of fp32 a*b where b is described like a (dict of masks) and lo/hi bound |a*b|
    over the finite cases. a_pos/a_neg: the signs a may take (inf included)."""
    out = np.zeros(lo.shape, dtype=np.uint8)
    out[a_nan | b["nan"] | (a_zero & b["inf"]) | (a_inf & b["zero"])] |= NAN
    inf = (a_inf & b["nonzero"]) | (a_nonzero & b["inf"])
    finite = a_fin & b["fin"]
    inf_or_big = inf | (finite & (hi >= OVERFLOW["float32"]))
    pos = (a_pos & b["pos"]) | (a_neg & b["neg"])
    neg = (a_pos & b["neg"]) | (a_neg & b["pos"])
    out[inf_or_big & pos] |= POSINF
    out[inf_or_big & neg] |= NEGINF
    out[finite & (lo < OVERFLOW["float32"])] |= FINITE
    return out


def _reduce_classes(d, p, e, line) -> np.ndarray:
    """Classes of dy - exp(y) * sum(dy) in fp32."""
    shape = d.shape
    cls = np.broadcast_to(line["cls"], shape)
    s = np.broadcast_to(line["s"], shape)
    err = np.broadcast_to(line["err"], shape)
    fin = (cls & FINITE) != 0
    s_desc = {
        "nan": (cls & NAN) != 0,
        "inf": (cls & (POSINF | NEGINF)) != 0,
        "fin": fin,
        "zero": fin & (np.abs(s) <= err),
        "nonzero": fin & ((np.abs(s) + err) > 0) | ((cls & (POSINF | NEGINF)) != 0),
        "pos": (fin & (s + err > 0)) | ((cls & POSINF) != 0),
        "neg": (fin & (s - err < 0)) | ((cls & NEGINF) != 0),
    }
    s_lo = np.maximum(np.abs(s) - err, 0.0)
    s_hi = np.abs(s) + err
    q_hi = (e * (1 + EXP_REL_ERR) + FLUSH) * s_hi * (1 + U32)
    q_lo = np.maximum(e * (1 - EXP_REL_ERR) - FLUSH, 0.0) * s_lo * (1 - U32)
    positive = ~p["nan"]  # exp is never negative
    q = _product_classes(
        p["fin"],
        p["zero"],
        p["nonzero"],
        p["inf"],
        p["nan"],
        positive,
        np.zeros(shape, bool),
        s_desc,
        q_lo,
        q_hi,
    )
    out = np.zeros(shape, dtype=np.uint8)
    d_nan, d_pinf, d_minf, d_fin = np.isnan(d), np.isposinf(d), np.isneginf(d), np.isfinite(d)
    qf, qn = (q & FINITE) != 0, (q & NAN) != 0
    qp, qm = (q & POSINF) != 0, (q & NEGINF) != 0
    out[d_nan | qn] |= NAN
    out[(d_pinf & (qf | qm)) | (d_fin & qm)] |= POSINF
    out[(d_minf & (qf | qp)) | (d_fin & qp)] |= NEGINF
    out[(d_pinf & qp) | (d_minf & qm)] |= NAN
    out[d_fin & qf] |= FINITE
    return out


def _no_reduce_classes(d, p, e) -> np.ndarray:
    """Classes of dy * (1 - exp(y)) in fp32 (the no-reduce form SPEC section 1 names)."""
    # m = 1 - p: NaN with p, -inf when p overflows, zero possible when p may be 1.
    m_fin = p["fin"]
    m_lo = np.maximum(np.abs(1 - e) - EXP_REL_ERR * e - FLUSH - U32 * (1 + e), 0.0)
    m_hi = np.abs(1 - e) + EXP_REL_ERR * e + FLUSH + U32 * (1 + e)
    m = {
        "nan": p["nan"],
        "inf": p["inf"],
        "fin": m_fin,
        "zero": m_fin & (m_lo == 0),
        "nonzero": (m_fin & (m_hi > 0)) | p["inf"],
        "pos": m_fin & (e * (1 - EXP_REL_ERR) < 1),
        "neg": (m_fin & (e * (1 + EXP_REL_ERR) > 1)) | p["inf"],
    }
    d_fin = np.isfinite(d)
    ad = np.abs(np.where(d_fin, d, 0.0))
    return _product_classes(
        d_fin,
        d_fin & (d == 0),
        np.isinf(d) | (d_fin & (d != 0)),
        np.isinf(d),
        np.isnan(d),
        d > 0,
        d < 0,
        m,
        ad * m_lo * (1 - U32),
        ad * m_hi * (1 + U32),
    )


def _cast_classes(fp32: np.ndarray, o: np.ndarray, b32: np.ndarray, dtype: str) -> np.ndarray:
    """The fp32 result's classes after the round-to-nearest-even cast to `dtype`: a finite fp32
    result may overflow the dtype when the golden is within the bound of its threshold."""
    out = fp32.copy()
    fin = (fp32 & FINITE) != 0
    known = np.isfinite(o)
    ovf = OVERFLOW[dtype]
    out[fin & (~known | (o + b32 >= ovf))] |= POSINF
    out[fin & (~known | (o - b32 <= -ovf))] |= NEGINF
    certain = fin & known & (np.abs(o) - b32 >= ovf)
    out[certain] &= np.uint8(~FINITE & 0xFF)
    return out
