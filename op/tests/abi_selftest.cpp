// The C ABI self-test: a few real calls through op/twin/lsg_twin.h, the ABI that liblsg_twin.so
// and liblsg_ascendc_cpu.so both export (lsg_get_workspace_size, lsg_executor_tiling, lsg_run,
// lsg_executor_destroy), each checked against a float64 reference computed here. Built per library
// and only on request (op/tests/abi_selftest.cmake: lsg_abi_selftest_twin and
// lsg_abi_selftest_ascendc_cpu, into <build dir>/tests/), for whatever architecture the build is
// for, and run where that library runs: natively, or under qemu user-mode emulation for a cross
// build (farm/pool/build/selftest.py cross_selftest; `farm build --arch aarch64 --self-test`):
//
//   qemu-aarch64 -L /usr/aarch64-linux-gnu build/ascendc-cpu-aarch64/tests/lsg_abi_selftest_ascendc_cpu
//
// LD_LIBRARY_PATH (qemu: -E LD_LIBRARY_PATH=...) runs it on another copy of the library, e.g. the
// one a package carries. One line per call; exit 0 when every call did what it should, else 1,
// naming the calls that failed.
//
// Tolerance. out = dy - exp(y) * S, S = sum(dy over the axes). Both libraries compute in fp32
// (fp16 inputs cast up, the result rounded back to fp16). The reference is computed in double from
// the inputs as the library sees them (the fp16 ones decoded), and element i passes when
//   float32: |out_i - ref_i| <= 2^-16 * scale_i
//   float16: |out_i - ref_i| <= 2^-10 * |ref_i| + 2^-16 * scale_i + 2^-25
// with scale_i = |dy_i| + exp(y_i) * sum(|dy| over the axes), the size of the terms (cancellation
// between them is not the kernel's error). 2^-16 is 128 ulp (2^-23) of fp32 relative to the terms:
// a sum of at most 40 terms (40 roundings of 2^-24 at most), exp and the product (a few more) stay
// below 2^-18, four times under it.
// 2^-10 |ref| is twice the half ulp (2^-11 relative) of the output's rounding to fp16, 2^-25 half
// the smallest fp16 subnormal. A wrong formula, a dropped element or a chunk left unwritten is off
// by 1e-2 or more; an element never written stays NaN and fails.
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lsg_twin.h"

#ifndef LSG_SELFTEST_LIB
#define LSG_SELFTEST_LIB "the library"
#endif

#if defined(__aarch64__)
#define LSG_SELFTEST_ARCH "aarch64"
#elif defined(__x86_64__)
#define LSG_SELFTEST_ARCH "x86_64"
#else
#define LSG_SELFTEST_ARCH "another architecture"
#endif

namespace {

// fp16 <-> float, written here so that the check does not rest on the library's conversions.
float HalfToFloat(uint16_t h) {
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    float v;
    if (exponent == 0) {
        v = std::ldexp(static_cast<float>(mantissa), -24);
    } else if (exponent == 31) {
        v = mantissa ? NAN : INFINITY;
    } else {
        v = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
    }
    return (h & 0x8000) ? -v : v;
}

uint16_t FloatToHalf(float f) {  // round to nearest, ties to even
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
    const uint32_t mag = x & 0x7fffffffu;
    if (mag >= 0x7f800000u) return sign | (mag > 0x7f800000u ? 0x7e00 : 0x7c00);
    if (mag >= 0x477ff000u) return sign | 0x7c00;  // 65520 and above round to infinity
    if (mag < 0x38800000u) {                        // below 2^-14: an fp16 subnormal
        float v;
        std::memcpy(&v, &mag, sizeof v);
        return sign | static_cast<uint16_t>(std::nearbyint(v * 16777216.0f));  // v * 2^24, exact
    }
    uint32_t h = ((mag >> 23) - 112) << 10 | ((mag >> 13) & 0x3ff);  // rebias 127 -> 15
    const uint32_t rest = mag & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry moves into the exponent
    return sign | static_cast<uint16_t>(h);
}

struct Call {
    const char* name;
    std::vector<int64_t> shape;
    std::vector<int64_t> axes;
    int32_t dtype;         // LSG_DT_FLOAT, LSG_DT_FLOAT16 or LSG_DT_BF16
    const char* soc;
    const char* schedule;  // what the tiling must choose ("" for a rejection)
    int32_t status;        // the expected status of phase one
    int32_t reason;        // and its lsg_reason
};

// The merged [d0, d1, d2] of a contiguous shape around its (consecutive) reduce axes.
void Merge(const Call& c, int64_t* d0, int64_t* d1, int64_t* d2) {
    const int64_t rank = static_cast<int64_t>(c.shape.size());
    int64_t first = rank, last = -1;
    for (int64_t a : c.axes) {
        const int64_t n = a < 0 ? a + rank : a;
        first = n < first ? n : first;
        last = n > last ? n : last;
    }
    *d0 = *d1 = *d2 = 1;
    for (int64_t i = 0; i < rank; ++i) (i < first ? *d0 : i <= last ? *d1 : *d2) *= c.shape[i];
}

// One call: 0 when it did what it should, else 1 with the reason in *why.
int Run(const Call& c, uint32_t seed, std::string* why) {
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    const size_t elem = c.dtype == LSG_DT_FLOAT ? 4 : 2;
    // dy uniform in [-1, 1), y uniform in [-4, 0) (exp(y) in (0.018, 1]), from a fixed LCG.
    uint32_t state = seed;
    auto uniform = [&state]() {
        state = state * 1664525u + 1013904223u;
        return static_cast<double>(state >> 8) * 0x1p-24;
    };
    std::vector<double> dy(n), y(n);  // the inputs as the library sees them
    std::vector<uint8_t> dy_buf(n * elem), y_buf(n * elem), out_buf(n * elem);
    for (int64_t i = 0; i < n; ++i) {
        const float a = static_cast<float>(2.0 * uniform() - 1.0);
        const float b = static_cast<float>(-4.0 * uniform());
        if (elem == 4) {
            std::memcpy(&dy_buf[i * 4], &a, 4);
            std::memcpy(&y_buf[i * 4], &b, 4);
            const float nan = NAN;
            std::memcpy(&out_buf[i * 4], &nan, 4);
            dy[i] = a;
            y[i] = b;
        } else {  // float16 (bfloat16 is only refused here: its bits are never read)
            const uint16_t ha = FloatToHalf(a), hb = FloatToHalf(b), hnan = 0x7e00;
            std::memcpy(&dy_buf[i * 2], &ha, 2);
            std::memcpy(&y_buf[i * 2], &hb, 2);
            std::memcpy(&out_buf[i * 2], &hnan, 2);
            dy[i] = HalfToFloat(ha);
            y[i] = HalfToFloat(hb);
        }
    }
    const int32_t rank = static_cast<int32_t>(c.shape.size());
    const lsg_tensor tdy{dy_buf.data(), c.dtype, rank, c.shape.data(), nullptr};
    const lsg_tensor ty{y_buf.data(), c.dtype, rank, c.shape.data(), nullptr};
    const lsg_tensor tout{out_buf.data(), c.dtype, rank, c.shape.data(), nullptr};

    uint64_t ws = 12345;
    lsg_executor* ex = nullptr;
    int32_t reason = -1;
    char msg[512] = "";
    const int32_t status =
        lsg_get_workspace_size(&tdy, &ty, c.axes.data(), static_cast<int32_t>(c.axes.size()),
                               &tout, c.soc, &ws, &ex, &reason, msg, sizeof msg);
    char line[768];
    if (status != c.status || reason != c.reason) {
        std::snprintf(line, sizeof line, "phase one returned status %d reason %d (%s), expected %d reason %d",
                      status, reason, msg, c.status, c.reason);
        *why = line;
        if (ex) lsg_executor_destroy(ex);
        return 1;
    }
    if (status != LSG_STATUS_OK) {  // the expected rejection: no executor, no workspace, words
        if (ex != nullptr || ws != 0 || msg[0] == '\0') {
            *why = "a rejection must leave no executor, workspace 0 and a message";
            if (ex) lsg_executor_destroy(ex);
            return 1;
        }
        std::printf("PASS  %-48s status %d reason %d: %s\n", c.name, status, reason, msg);
        return 0;
    }
    if (ex == nullptr) {
        *why = "phase one accepted the call but gave no executor";
        return 1;
    }
    lsg_tiling_record rec;
    std::memset(&rec, 0, sizeof rec);
    if (lsg_executor_tiling(ex, &rec) != 0 || std::strcmp(rec.schedule_name, c.schedule) != 0) {
        *why = std::string("the tiling chose ") + rec.schedule_name + ", expected " + c.schedule;
        lsg_executor_destroy(ex);
        return 1;
    }
    std::vector<uint8_t> workspace(ws);
    const int32_t run = lsg_run(ws ? workspace.data() : nullptr, ws, ex, 2);
    if (run != LSG_STATUS_OK) {
        int32_t run_reason = 0;
        char run_msg[512] = "";
        lsg_run_error(ex, &run_reason, run_msg, sizeof run_msg);
        std::snprintf(line, sizeof line, "lsg_run returned %d reason %d: %s", run, run_reason, run_msg);
        *why = line;
        lsg_executor_destroy(ex);
        return 1;
    }
    lsg_executor_destroy(ex);

    int64_t d0, d1, d2;
    Merge(c, &d0, &d1, &d2);
    double worst = 0.0;  // the largest |error| / tolerance
    int64_t worst_at = -1;
    for (int64_t r = 0; r < d0; ++r) {
        for (int64_t col = 0; col < d2; ++col) {
            double sum = 0.0, sum_abs = 0.0;
            for (int64_t k = 0; k < d1; ++k) {
                sum += dy[(r * d1 + k) * d2 + col];
                sum_abs += std::fabs(dy[(r * d1 + k) * d2 + col]);
            }
            for (int64_t k = 0; k < d1; ++k) {
                const int64_t i = (r * d1 + k) * d2 + col;
                const double e = std::exp(y[i]);
                const double ref = dy[i] - e * sum;
                const double scale = std::fabs(dy[i]) + e * sum_abs;
                double got, tol;
                if (elem == 4) {
                    float f;
                    std::memcpy(&f, &out_buf[i * 4], 4);
                    got = f;
                    tol = 0x1p-16 * scale;
                } else {
                    uint16_t h;
                    std::memcpy(&h, &out_buf[i * 2], 2);
                    got = HalfToFloat(h);
                    tol = 0x1p-10 * std::fabs(ref) + 0x1p-16 * scale + 0x1p-25;
                }
                const double err = std::fabs(got - ref);
                if (!(err <= tol)) {  // NaN (never written) fails too
                    std::snprintf(line, sizeof line,
                                  "element %lld: out %.9g, reference %.9g, |error| %.3g > tolerance %.3g",
                                  static_cast<long long>(i), got, ref, err, tol);
                    *why = line;
                    return 1;
                }
                const double ratio = tol > 0 ? err / tol : 0.0;
                if (ratio > worst || worst_at < 0) {
                    worst = ratio;
                    worst_at = i;
                }
            }
        }
    }
    std::printf("PASS  %-48s %-11s n=%-5lld workspace=%llu max|err|/tol=%.3f\n", c.name,
                rec.schedule_name, static_cast<long long>(n), static_cast<unsigned long long>(ws),
                worst);
    return 0;
}

}  // namespace

int main() {
    Dl_info info;
    std::memset(&info, 0, sizeof info);
    const bool found = dladdr(reinterpret_cast<void*>(&lsg_run), &info) != 0 && info.dli_fname;
    std::printf("lsg_abi_selftest (%s, built for %s): %s version %s, %s\n", LSG_SELFTEST_LIB,
                LSG_SELFTEST_ARCH, found ? info.dli_fname : "(library path unknown)",
                lsg_version(), lsg_build_info());
    const std::vector<Call> calls = {
        {"float32 (4,1,8) dim 1, Ascend910B1", {4, 1, 8}, {1}, LSG_DT_FLOAT, "Ascend910B1",
         "NO_REDUCE", LSG_STATUS_OK, LSG_REASON_OK},
        {"float32 (3,33) dim -1, Ascend910B1", {3, 33}, {-1}, LSG_DT_FLOAT, "Ascend910B1",
         "REDUCE_TAIL", LSG_STATUS_OK, LSG_REASON_OK},
        {"float32 (3,33) dim -1, Ascend310B1", {3, 33}, {-1}, LSG_DT_FLOAT, "Ascend310B1",
         "REDUCE_TAIL", LSG_STATUS_OK, LSG_REASON_OK},
        {"float32 (2,7,5) dim 1, Ascend910B1", {2, 7, 5}, {1}, LSG_DT_FLOAT, "Ascend910B1",
         "REDUCE_MID", LSG_STATUS_OK, LSG_REASON_OK},
        {"float16 (4,40) dim -1, Ascend910B1", {4, 40}, {-1}, LSG_DT_FLOAT16, "Ascend910B1",
         "REDUCE_TAIL", LSG_STATUS_OK, LSG_REASON_OK},
        {"float16 (2,6,9) dim -2, Ascend310B1", {2, 6, 9}, {-2}, LSG_DT_FLOAT16, "Ascend310B1",
         "REDUCE_MID", LSG_STATUS_OK, LSG_REASON_OK},
        {"bfloat16 (4,6) on Ascend310B1: refused", {4, 6}, {-1}, LSG_DT_BF16, "Ascend310B1", "",
         LSG_ERR_PARAM_INVALID, LSG_REASON_BF16_UNSUPPORTED_ON_SOC},
    };
    std::vector<std::string> failed;
    for (size_t k = 0; k < calls.size(); ++k) {
        std::string why;
        if (Run(calls[k], 0x9e3779b9u + static_cast<uint32_t>(k), &why) != 0) {
            std::printf("FAIL  %-48s %s\n", calls[k].name, why.c_str());
            failed.push_back(calls[k].name);
        }
    }
    std::printf("abi self-test: %zu calls, %zu failed\n", calls.size(), failed.size());
    for (const std::string& name : failed) std::fprintf(stderr, "FAILED: %s\n", name.c_str());
    return failed.empty() ? 0 : 1;
}
