/* Judging's arithmetic in single passes over a slab, the same bits as numpy's ~100 (golden/fused.py
 * builds, checks and loads this; the numpy code it replaces stays the reference):
 *
 *   lsg_golden_bound  the golden and the error bound of a plain slab: golden/bound.py
 *                     golden_and_bound's numpy path (grad_3d's golden, then _plain_bound);
 *   lsg_compared      every metric of the compared elements: golden/metrics.py
 *                     MetricsAccumulator._compared and _bound;
 *   lsg_histogram     the error histogram's binning of numpy's log10 values:
 *                     farm/agent/histogram.py HistogramAccumulator.
 *
 * The same bits because every element's values come from the same IEEE operations in the same
 * order (no fused multiply-add: the build passes -ffp-contract=off; no reassociation), every sum
 * is taken in numpy's own order (its pairwise summation of a contiguous float64 array: blocks of
 * 8 lanes up to 128 elements, halves at multiples of 8 above), and counts and maxima do not
 * depend on order (maxima: NaN wins, as in numpy). lsg_compared takes its elements a SIMD vector
 * at a time, which changes no bit: a lane does its element's IEEE operations. golden/fused.py
 * refuses a library that does not reproduce the numpy path on its samples;
 * tests/golden/test_fused.py compares the two on the tiers' kinds of input.
 *
 * Built for the architecture's baseline (golden/fused_library.py: -march=x86-64, -march=armv8-a; never
 * for the building host's own CPU, so one library serves every CPU of a home shared by hosts),
 * with the one pass that wider vectors speed up, lsg_compared (1.8x from SSE2 to AVX-512), also
 * compiled for AVX2 and AVX-512 on x86-64 and chosen when the library is loaded by what the CPU
 * running it has (lsg_lanes says which). The vector code below is that one source, included once
 * per width (#include __FILE__ with LSG_W set); the other passes gain nothing from wider vectors
 * and stay baseline.
 */
#ifndef LSG_W /* the library; its vector code is the #else part, included once per width */
#include <math.h>
#include <stdint.h>
#include <string.h>

#pragma STDC FP_CONTRACT OFF

enum { S_REL, S_SQ, S_SIGNED_ULP, S_WC_REL, S_WC_SQ, S_BC_REL, S_BC_SQ, NSUMS };
enum { M_ABS, M_REL, M_WC_REL, M_WC_ABS, M_BC_REL, M_BOUND_RATIO, NMAX };
enum { I_ULP_SUM, I_ULP_MAX, I_MIXED_OK, I_DT_REL_OVER, I_DT_ABS_OVER, I_SMALL_N,
       I_SMALL_ERR, I_WC_MIXED_OK, I_WC_DT_REL_OVER, I_WC_DT_ABS_OVER, I_WC_SMALL_ERR,
       I_BC_SMALL_ERR, I_BOUND_VIOLATIONS, I_BIAS_N, I_BIAS_SUM, NI };

enum { FLOAT32 = 0, FLOAT16 = 1, BFLOAT16 = 2 };

typedef struct {
    const double *a, *g, *bound;
    const uint16_t *abits16, *rbits16;
    const uint32_t *abits32, *rbits32;
    const double *spacing; /* by exponent field (golden/rounding.py SPACING_TABLE) */
    uint32_t max_bits;
    double t, tol, small_threshold, small_err_bound, rel_eps, clean_fraction;
    double *rel;
    /* golden/ratio_hist.py's bins of error / bound: each element's bin number into bins[] (a
     * byte, at its index modulo 128: a leaf of the summation holds at most 128 elements), counted
     * by the leaf into HISTS sets of counts (no increment waits on the one before of the same
     * bin): set j's bin k at hist[j * (nbins + 1) + k], the zeros last */
    uint8_t *bins;
    int64_t *hist, hist_lo, nbins;
} pass;

enum { HISTS = 4 };

/* Count a leaf's n <= 128 bins (pass.bins), from element lo, into pass.hist. */
static inline void count_bins(const pass *p, int64_t lo, int64_t n) {
    int64_t *restrict h = p->hist;
    const uint8_t *restrict b = p->bins;
    const int64_t stride = p->nbins + 1;
    int64_t j = 0;
    for (; j + HISTS <= n; j += HISTS)
        for (int k = 0; k < HISTS; k++) h[k * stride + b[(lo + j + k) & 127]] += 1;
    for (; j < n; j++) h[b[(lo + j) & 127]] += 1;
}

/* The order-free results: maxima (NaN wins, as in numpy's) and counts. */
typedef struct {
    double max[NMAX];
    int max_nan[NMAX];
    int64_t i[NI];
} tally;

static void tally_init(tally *t) {
    memset(t, 0, sizeof *t);
    for (int k = 0; k < NMAX; k++) t->max[k] = -INFINITY;
}

static void tally_merge(tally *into, const tally *t) {
    for (int k = 0; k < NMAX; k++) {
        into->max_nan[k] |= t->max_nan[k];
        if (t->max[k] > into->max[k]) into->max[k] = t->max[k];
    }
    int64_t ulp_max = into->i[I_ULP_MAX] > t->i[I_ULP_MAX] ? into->i[I_ULP_MAX] : t->i[I_ULP_MAX];
    for (int k = 0; k < NI; k++) into->i[k] += t->i[k];
    into->i[I_ULP_MAX] = ulp_max;
}

/* lsg_compared's vector code at each width: 2 lanes (SSE2, NEON: the baseline), and on x86-64
 * 4 (AVX2) and 8 (AVX-512F), compiled for those units alone. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(LSG_NO_DISPATCH)
#define LSG_DISPATCH 1
#else
#define LSG_DISPATCH 0
#endif

#define LSG_W 2
#include __FILE__
#undef LSG_W
#if LSG_DISPATCH
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
#define LSG_W 4
#include __FILE__
#undef LSG_W
#if defined(__clang__)
#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#else
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f")
#endif
#define LSG_W 8
#include __FILE__
#undef LSG_W
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

typedef int compared_fn(int64_t, const double *, const double *, const void *, const void *,
                        const double *, int, const double *, uint32_t, const double *, double *,
                        double *, int64_t *, int64_t *);
static compared_fn *compared_by_cpu = compared_2;
static int lanes_by_cpu = 2;

#if LSG_DISPATCH
/* When the library is loaded: the widest of the vector codes that this CPU (and its OS) runs. */
__attribute__((constructor)) static void choose_lanes(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        compared_by_cpu = compared_8;
        lanes_by_cpu = 8;
    } else if (__builtin_cpu_supports("avx2")) {
        compared_by_cpu = compared_4;
        lanes_by_cpu = 4;
    }
}
#endif

/* The lanes of the vector code lsg_compared runs on this CPU: 2, 4 or 8. */
int lsg_lanes(void) { return lanes_by_cpu; }

/* m >= 1 compared elements: the actual and the golden in float64, the bits of the actual and of
 * the golden rounded to the case dtype (uint16 for float16/bfloat16, uint32 for float32), the
 * error bound (NULL: not judged). Each element's relative error into rel[]; the sums, maxima and
 * counts into dout[] (S_ then M_) and iout[] (I_), in golden/fused_library.py's SUMS, MAXIMA and COUNTS
 * order. limits[]: T, the double-thousandth tolerance, the small-value threshold and error bound,
 * the relative error's guard, the rounding bias's clean fraction, and golden/ratio_hist.py's
 * LOG2_LO and BINS (at most 64). With a bound, each element's error over it binned as
 * golden/ratio_hist.py add bins it, added to ratio_counts[] (BINS bins, then the zeros). Returns
 * 0; 1 for an unknown dtype code or too many bins. */
int lsg_compared(int64_t m, const double *a, const double *g, const void *abits,
                const void *rbits, const double *bound, int dtype, const double *spacing,
                uint32_t max_bits, const double *limits, double *rel, double *dout,
                int64_t *iout, int64_t *ratio_counts) {
    return compared_by_cpu(m, a, g, abits, rbits, bound, dtype, spacing, max_bits, limits, rel,
                           dout, iout, ratio_counts);
}

/* golden/rounding.py spacing_at of x >= 0 (no NaN), for float16 and bfloat16: the spacing of the
 * binade x rounds into, from its float64 bits (the fraction at or above `carry` rounds up into the
 * next binade; at least the subnormal spacing, 2^(least - 1023)); inf where x rounds to the
 * largest finite value, NaN where to inf. */
static inline double spacing_at(double x, int64_t carry, int64_t p, int64_t least,
                                double near_max, double overflow) {
    int64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int64_t e = (bits >> 52) + ((bits & (((int64_t)1 << 52) - 1)) >= carry);
    e -= p;
    e = e > least ? e : least;
    e <<= 52;
    double sp;
    memcpy(&sp, &e, sizeof sp);
    if (x > near_max) sp = x < overflow ? INFINITY : NAN;
    return sp;
}

/* spacing_at of n values, with golden_bound's constants k[] (for golden/fused.py's check). */
void lsg_spacing_at(int64_t n, const double *x, const double *k, double *out) {
    for (int64_t i = 0; i < n; i++)
        out[i] = spacing_at(x[i], (int64_t)k[8], (int64_t)k[9], (int64_t)k[10], k[11], k[12]);
}

/* golden/bound.py golden_and_bound's plain slab in one pass: the golden (d - e*s, reduce
 * extent above 1; else given) and _plain_bound's bound, its terms in _plain_bound's order, of a
 * [rows, d1, cols] slab; s, abs_s and s_err are per line (rows*cols; abs_s NULL: |dy| itself,
 * s_err NULL: no sum, the reduce extent 1). k[]: U32, 2*U32, EXP_REL_ERR, FLUSH, 1+EXP_REL_ERR,
 * 1+4*U32, 4*FLUSH, SLACK64, then for 16-bit dtypes the spacing_at constants: the carry
 * fraction, p, the least biased exponent, _NEAR_MAX and OVERFLOW. *top: max(|golden| + B32). */
int lsg_golden_bound(int64_t rows, int64_t d1, int64_t cols, const double *d, const double *e,
                     const double *ad, const double *s, const double *abs_s,
                     const double *s_err, int half_ulp, const double *k, double *g,
                     double *bound, double *top) {
    const double u32 = k[0], two_u32 = k[1], eps = k[2], flush = k[3], one_eps = k[4];
    const double one_4u = k[5], four_flush = k[6], slack = k[7];
    const int64_t carry = (int64_t)k[8], p = (int64_t)k[9], least = (int64_t)k[10];
    const double near_max = k[11], overflow = k[12];
    double mx = -INFINITY;
    int nan = 0;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < d1; i++) {
            int64_t base = (r * d1 + i) * cols;
            for (int64_t c = 0; c < cols; c++) {
                int64_t x = base + c, line = r * cols + c;
                double ex = e[x], adx = ad[x];
                if (s) {
                    double q = ex * s[line];
                    g[x] = d[x] - q;
                }
                double as = abs_s ? abs_s[line] : adx;
                double absg = fabs(g[x]);
                double b = absg * u32;
                double t = adx * u32;
                b += t;
                t = ex * two_u32;
                t *= as;
                b += t;
                double u = ex * eps;
                u += flush;
                u *= as;
                if (s_err) {
                    t = ex * one_eps;
                    t += flush;
                    t *= s_err[line];
                    t += u;
                } else {
                    t = u;
                }
                t *= one_4u;
                b += t;
                b += four_flush;
                t = ex * as;
                t += adx;
                t *= slack;
                b += t;
                absg += b;
                nan |= absg != absg;
                mx = absg > mx ? absg : mx;
                if (half_ulp) b += spacing_at(absg, carry, p, least, near_max, overflow) * 0.5;
                bound[x] = b;
            }
        }
    }
    *top = nan ? NAN : mx;
    return 0;
}

/* farm/agent/histogram.py HistogramAccumulator's binning of n values log10(|error|) (numpy's
 * log10, already taken) on evenly spaced edges: the exact zeros (-inf) counted apart, every value
 * clamped into [edges[0], top] and binned as numpy.histogram bins (the bin from the value, then
 * one step down below its edge, one step up at or above the next), added to counts[]. */
void lsg_histogram(int64_t n, const double *logs, const double *edges, int64_t last,
                   double scale, double top, int64_t *counts, int64_t *zeros) {
    const double first = edges[0];
    int64_t z = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = logs[i];
        z += v == -INFINITY;
        v = v < first ? first : v; /* np.clip: maximum, then minimum */
        v = v > top ? top : v;
        double at = v - first;
        at *= scale;
        int64_t k = (int64_t)at;
        /* k is in [0, last] for every value numpy's log10 gives an error (finite or -inf); the
         * lower clamp keeps any other value from writing outside counts[] */
        k = k < last ? k : last;
        k = k > 0 ? k : 0;
        k -= v < edges[k];
        k += v >= edges[k + 1];
        counts[k] += 1;
    }
    counts[0] -= z;
    *zeros += z;
}

#else /* LSG_W: lsg_compared's vector code, LSG_W lanes wide */

/* Elements W at a time (LSG_W: 2, 4 or 8; GCC's vector extensions), numpy's 8 summation lanes
 * being 8 / W vectors. A lane's arithmetic is the IEEE operation the scalar code would do on its
 * element, so vectors change no bit. Every name is the width's own (vd_4, part_8, ...): the file
 * holds this code once per width. */
#define LSG_JOIN2(a, b) a##_##b
#define LSG_JOIN(a, b) LSG_JOIN2(a, b)
#define W LSG_W
#define COMPARED LSG_JOIN(compared, LSG_W)
#define vd LSG_JOIN(vd, LSG_W)
#define vl LSG_JOIN(vl, LSG_W)
#define vu LSG_JOIN(vu, LSG_W)
#define vf LSG_JOIN(vf, LSG_W)
#define vb LSG_JOIN(vb, LSG_W)
#define lanes LSG_JOIN(lanes, LSG_W)
#define splat LSG_JOIN(splat, LSG_W)
#define select_d LSG_JOIN(select_d, LSG_W)
#define vabs LSG_JOIN(vabs, LSG_W)
#define lanes_init LSG_JOIN(lanes_init, LSG_W)
#define lanes_into LSG_JOIN(lanes_into, LSG_W)
#define take_max LSG_JOIN(take_max, LSG_W)
#define count LSG_JOIN(count, LSG_W)
#define load_d LSG_JOIN(load_d, LSG_W)
#define load_bits LSG_JOIN(load_bits, LSG_W)
#define decode LSG_JOIN(decode, LSG_W)
#define ordinal LSG_JOIN(ordinal, LSG_W)
#define part LSG_JOIN(part, LSG_W)
#define block LSG_JOIN(block, LSG_W)
#define pairwise_f32 LSG_JOIN(pairwise_f32, LSG_W)
#define pairwise_f32_bound LSG_JOIN(pairwise_f32_bound, LSG_W)
#define pairwise_f16 LSG_JOIN(pairwise_f16, LSG_W)
#define pairwise_f16_bound LSG_JOIN(pairwise_f16_bound, LSG_W)
#define pairwise_bf16 LSG_JOIN(pairwise_bf16, LSG_W)
#define pairwise_bf16_bound LSG_JOIN(pairwise_bf16_bound, LSG_W)
#define PARTS (8 / W)
typedef double vd __attribute__((vector_size(W * 8)));
typedef int64_t vl __attribute__((vector_size(W * 8)));
typedef uint32_t vu __attribute__((vector_size(W * 4)));
typedef float vf __attribute__((vector_size(W * 4)));
typedef uint8_t vb __attribute__((vector_size(W)));

/* A leaf's maxima and counts lane by lane (a comparison gives all ones, so a count subtracts). */
typedef struct {
    vd max[NMAX];
    vl max_nan[NMAX];
    vl i[NI]; /* I_ULP_MAX a maximum, the others sums */
} lanes;

static inline vd splat(double x) { return (vd){0} + x; }

static inline vd select_d(vl m, vd a, vd b) { return (vd)(((vl)a & m) | ((vl)b & ~m)); }

static inline vd vabs(vd x) { return (vd)((vl)x & INT64_MAX); }

static void lanes_init(lanes *t) {
    memset(t, 0, sizeof *t);
    for (int k = 0; k < NMAX; k++) t->max[k] = splat(-INFINITY);
}

/* Into a leaf's tally (of maxima the first of equal lanes: each maximum is of values >= +0, so
 * equal lanes hold the same bits). */
static void lanes_into(const lanes *l, tally *t) {
    for (int j = 0; j < W; j++) {
        for (int k = 0; k < NMAX; k++) {
            t->max_nan[k] |= l->max_nan[k][j] != 0;
            if (l->max[k][j] > t->max[k]) t->max[k] = l->max[k][j];
        }
        for (int k = 0; k < NI; k++)
            if (k != I_ULP_MAX) t->i[k] += l->i[k][j];
        if (l->i[I_ULP_MAX][j] > t->i[I_ULP_MAX]) t->i[I_ULP_MAX] = l->i[I_ULP_MAX][j];
    }
}

/* The lanes past a short block's end hold zeros in every maximum, where they change nothing:
 * each is of values >= +0, over at least one element. */
static inline void take_max(lanes *t, int k, vd v) {
    t->max_nan[k] |= v != v;
    t->max[k] = select_d(v > t->max[k], v, t->max[k]);
}

static inline void count(lanes *t, int k, vl yes, vl valid) { t->i[k] -= yes & valid; }

static inline vd load_d(const double *x, int cnt) {
    vd v = {0};
    memcpy(&v, x, (size_t)cnt * sizeof(double));
    return v;
}

/* The bits of cnt elements, 32 a lane. */
static inline vu load_bits(int dtype, const uint16_t *b16, const uint32_t *b32, int cnt) {
    if (dtype == FLOAT32) {
        vu v = {0};
        memcpy(&v, b32, (size_t)cnt * sizeof(uint32_t));
        return v;
    }
    uint16_t h[W] = {0};
    memcpy(h, b16, (size_t)cnt * sizeof(uint16_t));
    vu v;
    for (int j = 0; j < W; j++) v[j] = h[j];
    return v;
}

/* The value of the golden rounded to the dtype, from its bits (exact). */
static inline vd decode(int dtype, vu bits) {
    vu wide;
    if (dtype == FLOAT32) {
        wide = bits;
    } else if (dtype == BFLOAT16) {
        wide = bits << 16;
    } else {
        vu sign = (bits & 0x8000u) << 16, e = bits & 0x7C00u, m = bits & 0x3FFu;
        vu inf = (vu)(e == 0x7C00u);
        vu normal = sign | (inf & 0x7F800000u) | (~inf & (e + 0x1C000u) << 13) | m << 13;
        /* zero and subnormals: m * 2^-24, exact in float */
        vf mf;
        for (int j = 0; j < W; j++) mf[j] = (float)m[j];
        vu tiny = (vu)(mf * 0x1p-24f) | sign;
        vu zero_e = (vu)(e == 0u);
        wide = (zero_e & tiny) | (~zero_e & normal);
    }
    vf f = (vf)wide;
    vd d;
    for (int j = 0; j < W; j++) d[j] = f[j];
    return d;
}

/* golden.dtypes.ordinal: sign-magnitude to a signed integer, +0 and -0 both 0. */
static inline vl ordinal(uint32_t sign_off, vu bits) {
    vl mag, neg;
    for (int j = 0; j < W; j++) {
        mag[j] = bits[j] & sign_off;
        neg[j] = -(int64_t)((bits[j] & ~sign_off) != 0);
    }
    return (mag ^ neg) - neg;
}

/* Elements lo .. lo+cnt-1 (cnt <= W), a lane each: their relative errors stored, the order-free
 * results into t, the summed values into v[k]. The lanes from cnt on hold zeros (bits 0: no ulp;
 * no maximum moves) and are left out of the counts. dtype and judged are constants where it is
 * inlined. */
static inline __attribute__((always_inline)) void part(const pass *p, lanes *t, int64_t lo,
                                                        int cnt, vd v[NSUMS], int dtype,
                                                        int judged) {
    const uint32_t sign_off = dtype == FLOAT32 ? 0x7FFFFFFFu : 0x7FFFu;
    const int frac = dtype == FLOAT32 ? 23 : dtype == FLOAT16 ? 10 : 7;
    vl lane;
    for (int j = 0; j < W; j++) lane[j] = j;
    vl valid = lane < cnt;
    vd a = load_d(p->a + lo, cnt), g = load_d(p->g + lo, cnt);
    vd diff = a - g;
    vd err = vabs(diff);
    vd absg = vabs(g);
    vd den = absg + p->rel_eps;
    vd rel = err / den;
    memcpy(p->rel + lo, &rel, (size_t)cnt * sizeof(double));
    v[S_REL] = rel;
    v[S_SQ] = err * err;
    take_max(t, M_ABS, err);
    take_max(t, M_REL, rel);

    vu ab = load_bits(dtype, p->abits16 + lo, p->abits32 + lo, cnt);
    vu rb = load_bits(dtype, p->rbits16 + lo, p->rbits32 + lo, cnt);
    vl dord = ordinal(sign_off, ab) - ordinal(sign_off, rb);
    vl ulp = (dord ^ (dord >> 63)) - (dord >> 63);
    t->i[I_ULP_SUM] += ulp;
    t->i[I_ULP_MAX] = (vl)select_d(ulp > t->i[I_ULP_MAX], (vd)ulp, (vd)t->i[I_ULP_MAX]);

    vu mag = rb & sign_off;
    vd spacing;
    for (int j = 0; j < W; j++)
        spacing[j] = mag[j] == p->max_bits ? INFINITY : p->spacing[mag[j] >> frac];
    v[S_SIGNED_ULP] = select_d(spacing > 0, diff / spacing, splat(0.0));

    vd lim = absg * p->t;
    lim = lim + p->t;
    vl small = absg < p->small_threshold;
    count(t, I_MIXED_OK, err <= lim, valid);
    count(t, I_DT_REL_OVER, rel > p->tol, valid);
    count(t, I_DT_ABS_OVER, err > p->tol, valid);
    count(t, I_SMALL_N, small, valid);
    count(t, I_SMALL_ERR, small & (err > p->small_err_bound), valid);

    if (!judged) return;
    vd b = load_d(p->bound + lo, cnt);
    vd wrel = b / den;
    vd best = vabs(decode(dtype, rb) - g);
    vd brel = best / den;
    v[S_WC_REL] = wrel;
    v[S_WC_SQ] = b * b;
    v[S_BC_REL] = brel;
    v[S_BC_SQ] = best * best;
    take_max(t, M_WC_REL, wrel);
    take_max(t, M_WC_ABS, b);
    take_max(t, M_BC_REL, brel);
    count(t, I_WC_MIXED_OK, b <= lim, valid);
    count(t, I_WC_DT_REL_OVER, wrel > p->tol, valid);
    count(t, I_WC_DT_ABS_OVER, b > p->tol, valid);
    count(t, I_WC_SMALL_ERR, small & (b > p->small_err_bound), valid);
    count(t, I_BC_SMALL_ERR, small & (best > p->small_err_bound), valid);
    vd ratio = select_d(b > 0, err / b, select_d(err > 0, splat(INFINITY), splat(0.0)));
    take_max(t, M_BOUND_RATIO, ratio);
    count(t, I_BOUND_VIOLATIONS, ratio > 1, valid);
    /* The ratio's bin from its bits: the exponent, one up above a power of two, clamped; 0 apart */
    vl rbits_ = (vl)ratio;
    vl bin = (rbits_ >> 52) - (1023 + p->hist_lo) - (vl)((rbits_ & (((int64_t)1 << 52) - 1)) != 0);
    bin &= ~(vl)(bin < 0);
    vl high = (vl)(bin > p->nbins - 1);
    bin = (bin & ~high) | ((p->nbins - 1) & high);
    vl zero = (vl)(rbits_ == 0);
    bin = (bin & ~zero) | (p->nbins & zero);
    vb bytes = __builtin_convertvector(bin, vb);
    /* lo is a multiple of W; an empty part (a leaf of a multiple of 8) is past its leaf's end */
    if (cnt) memcpy(p->bins + (lo & 127), &bytes, W);
    if (dtype == FLOAT32) return;
    vl clean = (b - spacing * 0.5 <= spacing * p->clean_fraction) & valid;
    t->i[I_BIAS_N] -= clean;
    t->i[I_BIAS_SUM] += clean & ((dord & (g > 0)) | (-dord & (g < 0)));
}

/* Elements lo .. lo+cnt-1 (cnt <= 8), numpy's lane j in v[k][j / W][j % W]. */
static inline __attribute__((always_inline)) void block(const pass *p, lanes *t, int64_t lo,
                                                         int cnt, vd v[NSUMS][PARTS], int dtype,
                                                         int judged) {
    for (int h = 0; h < PARTS; h++) {
        int in = cnt - h * W;
        vd s[NSUMS];
        part(p, t, lo + h * W, in < 0 ? 0 : in > W ? W : in, s, dtype, judged);
        for (int k = 0; k < (judged ? NSUMS : S_WC_REL); k++) v[k][h] = s[k];
    }
}

#define LANE(x, j) ((x)[(j) / W][(j) % W])

/* numpy's pairwise summation (its float add reduction) of every sum at once, in a function per
 * dtype and bound (the constants let the compiler drop the branches of the others). */
#define PAIRWISE(NAME, DTYPE, JUDGED)                                                           \
    static void NAME(const pass *p, tally *into, int64_t lo, int64_t n, double res[NSUMS]) {   \
        const int nsums = (JUDGED) ? NSUMS : S_WC_REL;                                          \
        if (n > 128) {                                                                          \
            int64_t half = n / 2;                                                               \
            half -= half % 8;                                                                   \
            double right[NSUMS];                                                                \
            NAME(p, into, lo, half, res);                                                       \
            NAME(p, into, lo + half, n - half, right);                                          \
            for (int k = 0; k < nsums; k++) res[k] += right[k];                                 \
            return;                                                                             \
        }                                                                                       \
        vd v[NSUMS][PARTS];                                                                     \
        lanes t;                                                                                \
        lanes_init(&t);                                                                         \
        int64_t i = 0;                                                                          \
        for (int k = 0; k < NSUMS; k++) res[k] = 0.0;                                           \
        if (n >= 8) {                                                                           \
            vd r[NSUMS][PARTS];                                                                 \
            block(p, &t, lo, 8, r, DTYPE, JUDGED);                                              \
            for (i = 8; i < n - (n % 8); i += 8) {                                              \
                block(p, &t, lo + i, 8, v, DTYPE, JUDGED);                                      \
                for (int k = 0; k < nsums; k++)                                                 \
                    for (int h = 0; h < PARTS; h++) r[k][h] += v[k][h];                         \
            }                                                                                   \
            for (int k = 0; k < nsums; k++)                                                     \
                res[k] = ((LANE(r[k], 0) + LANE(r[k], 1)) + (LANE(r[k], 2) + LANE(r[k], 3))) +  \
                         ((LANE(r[k], 4) + LANE(r[k], 5)) + (LANE(r[k], 6) + LANE(r[k], 7)));  \
        }                                                                                       \
        int rest = (int)(n - i);                                                                \
        block(p, &t, lo + i, rest, v, DTYPE, JUDGED);                                           \
        for (int k = 0; k < nsums; k++)                                                         \
            for (int j = 0; j < rest; j++) res[k] += LANE(v[k], j);                             \
        if (JUDGED) count_bins(p, lo, n);                                                       \
        tally leaf;                                                                             \
        tally_init(&leaf);                                                                      \
        lanes_into(&t, &leaf);                                                                  \
        tally_merge(into, &leaf);                                                               \
    }

PAIRWISE(pairwise_f32, FLOAT32, 0)
PAIRWISE(pairwise_f32_bound, FLOAT32, 1)
PAIRWISE(pairwise_f16, FLOAT16, 0)
PAIRWISE(pairwise_f16_bound, FLOAT16, 1)
PAIRWISE(pairwise_bf16, BFLOAT16, 0)
PAIRWISE(pairwise_bf16_bound, BFLOAT16, 1)

static int COMPARED(int64_t m, const double *a, const double *g, const void *abits,
                    const void *rbits, const double *bound, int dtype, const double *spacing,
                    uint32_t max_bits, const double *limits, double *rel, double *dout,
                    int64_t *iout, int64_t *ratio_counts) {
    static void (*const by_dtype[3][2])(const pass *, tally *, int64_t, int64_t, double *) = {
        {pairwise_f32, pairwise_f32_bound},
        {pairwise_f16, pairwise_f16_bound},
        {pairwise_bf16, pairwise_bf16_bound},
    };
    if (dtype != FLOAT32 && dtype != FLOAT16 && dtype != BFLOAT16) return 1;
    pass p;
    memset(&p, 0, sizeof p);
    p.a = a;
    p.g = g;
    p.bound = bound;
    if (dtype == FLOAT32) {
        p.abits32 = abits;
        p.rbits32 = rbits;
    } else {
        p.abits16 = abits;
        p.rbits16 = rbits;
    }
    p.spacing = spacing;
    p.max_bits = max_bits;
    p.t = limits[0];
    p.tol = limits[1];
    p.small_threshold = limits[2];
    p.small_err_bound = limits[3];
    p.rel_eps = limits[4];
    p.clean_fraction = limits[5];
    p.rel = rel;
    int64_t hist[HISTS * 65];
    uint8_t bins[128];
    p.hist_lo = (int64_t)limits[6];
    p.nbins = (int64_t)limits[7];
    if (p.nbins < 1 || p.nbins > 64) return 1;
    if (bound != NULL) {
        memset(hist, 0, sizeof hist);
        p.hist = hist;
        p.bins = bins;
    }
    tally t;
    tally_init(&t);
    double sums[NSUMS];
    by_dtype[dtype][bound != NULL](&p, &t, 0, m, sums);
    for (int k = 0; k < NSUMS; k++) dout[k] = 0.0 + sums[k]; /* numpy's sum of -0.0s is 0.0 */
    for (int k = 0; k < NMAX; k++) dout[NSUMS + k] = t.max_nan[k] ? NAN : t.max[k];
    memcpy(iout, t.i, sizeof t.i);
    if (bound != NULL)
        for (int j = 0; j < HISTS; j++)
            for (int64_t k = 0; k <= p.nbins; k++) ratio_counts[k] += hist[j * (p.nbins + 1) + k];
    return 0;
}

#undef vd
#undef vl
#undef vu
#undef vf
#undef vb
#undef lanes
#undef splat
#undef select_d
#undef vabs
#undef lanes_init
#undef lanes_into
#undef take_max
#undef count
#undef load_d
#undef load_bits
#undef decode
#undef ordinal
#undef part
#undef block
#undef pairwise_f32
#undef pairwise_f32_bound
#undef pairwise_f16
#undef pairwise_f16_bound
#undef pairwise_bf16
#undef pairwise_bf16_bound
#undef W
#undef PARTS
#undef LANE
#undef PAIRWISE
#undef COMPARED
#endif
