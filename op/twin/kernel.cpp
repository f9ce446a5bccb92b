// The twin's kernel (see kernel.h).  The loops mirror op/ascendc/op_kernel/log_softmax_grad.cpp:
// per core its rows, per row its UB chunks; dy is loaded into alternating (ping-pong) blocks as
// the double-buffered queue would; fp16/bf16 data is copied into the back half of a block and
// cast up in place; all arithmetic is fp32; results are cast down in place and copied out.
#include "kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "convert.h"
#include "tiling.h"

namespace lsg::twin {

namespace {

constexpr int64_t kMidGroupLines = 64;  // REDUCE_MID: lines summed into one partial sum

// Every partial sum of sum(dy) goes through round_sum(): fp32, one rounding per addition.
#if defined(LSG_PLANT_BUG_FP16_SUM)
// Planted bug: sum(dy) is accumulated in fp16 (a ReduceSum / Add on the 2-byte data instead of on
// its fp32 cast): every partial sum is rounded to fp16 after each addition.
inline float round_sum(float x) { return f16_to_f32(f32_to_f16(x)); }
#else
inline float round_sum(float x) { return x; }
#endif

#if defined(LSG_PLANT_BUG_DROP_ELEMENT)
// Planted bug: the long-reduction path (d1 >= kLongReduce) sums one element too few, an
// off-by-one loop bound (d1 - 1): REDUCE_TAIL leaves the last element of the row's last chunk out
// of sum(dy), REDUCE_MID its last line.  The output pass is unchanged.
constexpr int64_t kLongReduce = 4096;
#endif

// ---- data movement (DataCopy + Cast) -------------------------------------------------------

// Copy n elements at element offset `at` of gm into block `dst` as fp32.  A 2-byte dtype lands
// in the back half (byte offset 2 * block_elems) and is cast up over the block, front to back:
// element i is written at bytes [4i, 4i + 4), never past the next element still to be read.
void copy_in(float* dst, const void* gm, int64_t at, int64_t n, int32_t dtype, int64_t block_elems) {
    if (dtype == LSG_DT_FLOAT) {
        std::memcpy(dst, static_cast<const float*>(gm) + at, static_cast<size_t>(n) * 4);
        return;
    }
    unsigned char* bytes = reinterpret_cast<unsigned char*>(dst);
    unsigned char* back = bytes + 2 * block_elems;
    std::memcpy(back, static_cast<const uint16_t*>(gm) + at, static_cast<size_t>(n) * 2);
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, back + 2 * i, 2);
        const float f = dtype == LSG_DT_FLOAT16 ? f16_to_f32(h) : bf16_to_f32(h);
        std::memcpy(bytes + 4 * i, &f, 4);
    }
}

// Cast n fp32 results of block `src` down in place (front to back) and copy them to gm.
void copy_out(void* gm, int64_t at, float* src, int64_t n, int32_t dtype) {
    if (dtype == LSG_DT_FLOAT) {
        std::memcpy(static_cast<float*>(gm) + at, src, static_cast<size_t>(n) * 4);
        return;
    }
    unsigned char* bytes = reinterpret_cast<unsigned char*>(src);
    for (int64_t i = 0; i < n; ++i) {
        float f;
        std::memcpy(&f, bytes + 4 * i, 4);
#if defined(LSG_PLANT_BUG_TRUNC_NARROW)
        // Planted bug: the output cast truncates (convert.h).
        const uint16_t h = dtype == LSG_DT_FLOAT16 ? f32_to_f16_trunc(f) : f32_to_bf16_trunc(f);
#else
        const uint16_t h = dtype == LSG_DT_FLOAT16 ? f32_to_f16(f) : f32_to_bf16(f);
#endif
        std::memcpy(bytes + 2 * i, &h, 2);
    }
    std::memcpy(static_cast<uint16_t*>(gm) + at, bytes, static_cast<size_t>(n) * 2);
}

// ---- vector operations (fp32, one rounding per operation) -----------------------------------

void exp_(float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}

// Elements of chunk c of a row: the block, or the tail for the last chunk.
int64_t elems_of_chunk(const lsg_tiling_record& t, int64_t c, int32_t dtype) {
    int64_t n = chunk_len(t, c);
#if defined(LSG_PLANT_BUG_TAIL)
    // Planted bug: the last chunk is moved and computed in whole 32-byte blocks only, as a kernel
    // that uses DataCopy where DataCopyPad is needed would; its unaligned remainder is dropped.
    if (c == t.chunk_count - 1) n = n / (32 / dtype_size(dtype)) * (32 / dtype_size(dtype));
#else
    (void)dtype;
#endif
    return n;
}

// ---- the three schedules -------------------------------------------------------------------

// NO_REDUCE (d1 == 1): out = dy * (1 - exp(y)).  Blocks: dy x2, y x2, out x2.
void no_reduce_row(const KernelArgs& a, int64_t row, UnifiedBuffer& ub, int64_t& ping) {
    const lsg_tiling_record& t = a.tiling;
    const int64_t base = row * t.d2;
    for (int64_t c = 0; c < t.chunk_count; ++c, ++ping) {
        const int64_t n = elems_of_chunk(t, c, a.dtype);
        const int64_t at = base + c * t.block_elems;
        float* dy = ub.block(static_cast<int>(ping & 1));
        float* y = ub.block(2 + static_cast<int>(ping & 1));
        float* out = ub.block(4 + static_cast<int>(ping & 1));
        copy_in(dy, a.dy, at, n, a.dtype, t.block_elems);
        copy_in(y, a.y, at, n, a.dtype, t.block_elems);
        exp_(y, n);
#if defined(LSG_PLANT_BUG_SEED_NOREDUCE)
        // Planted bug: the seed's erratum, (dy - 1) * exp(y).
        for (int64_t i = 0; i < n; ++i) out[i] = (dy[i] - 1.0f) * y[i];
#else
        for (int64_t i = 0; i < n; ++i) y[i] = -y[i];         // Muls(y, y, -1)
        for (int64_t i = 0; i < n; ++i) y[i] = y[i] + 1.0f;   // Adds(y, y, 1)
        for (int64_t i = 0; i < n; ++i) out[i] = dy[i] * y[i];  // Mul(out, dy, y)
#endif
        copy_out(a.out, at, out, n, a.dtype);
    }
}

// REDUCE_TAIL (d2 == 1): a row is d1 contiguous elements.  Blocks: dy x2, work, y, out.
void reduce_tail_row(const KernelArgs& a, int64_t row, UnifiedBuffer& ub, int64_t& ping) {
    const lsg_tiling_record& t = a.tiling;
    const int64_t base = row * t.d1;
    float* work = ub.block(2);
    float* y = ub.block(3);
    float* out = ub.block(4);
    // Pass 1: sum(dy) over all chunks of the row.
    float sum = 0.0f;
    for (int64_t c = 0; c < t.chunk_count; ++c, ++ping) {
        const int64_t n = elems_of_chunk(t, c, a.dtype);
        float* dy = ub.block(static_cast<int>(ping & 1));
        copy_in(dy, a.dy, base + c * t.block_elems, n, a.dtype, t.block_elems);
#if defined(LSG_PLANT_BUG_DROP_ELEMENT)
        const int64_t m = t.d1 >= kLongReduce && c == t.chunk_count - 1 ? n - 1 : n;
        sum = round_sum(sum + reduce_sum(dy, m, work, a.tree_repeats));
#else
        sum = round_sum(sum + reduce_sum(dy, n, work, a.tree_repeats));
#endif
    }
    // Pass 2: out = dy - exp(y) * sum.
    for (int64_t c = 0; c < t.chunk_count; ++c, ++ping) {
        const int64_t n = elems_of_chunk(t, c, a.dtype);
        const int64_t at = base + c * t.block_elems;
        float* dy = ub.block(static_cast<int>(ping & 1));
        copy_in(dy, a.dy, at, n, a.dtype, t.block_elems);
        copy_in(y, a.y, at, n, a.dtype, t.block_elems);
        exp_(y, n);
        for (int64_t i = 0; i < n; ++i) y[i] = y[i] * sum;       // Muls(y, y, sum)
        for (int64_t i = 0; i < n; ++i) out[i] = dy[i] - y[i];   // Sub(out, dy, y)
        copy_out(a.out, at, out, n, a.dtype);
    }
}

// REDUCE_MID: a row group is d1 lines of d2 columns; the columns are chunked, and each column
// chunk is reduced over the d1 lines side by side.  The lines are summed in groups of
// kMidGroupLines into a partial sum that is then added to the total, so that the rounding error
// grows with (group + d1 / group) additions rather than with d1.  Blocks: dy x2, part, acc, y, out.
void reduce_mid_row(const KernelArgs& a, int64_t row, UnifiedBuffer& ub, int64_t& ping) {
    const lsg_tiling_record& t = a.tiling;
    const int64_t base = row * t.d1 * t.d2;
    float* part = ub.block(2);
    float* acc = ub.block(3);
    float* y = ub.block(4);
    float* out = ub.block(5);
    for (int64_t c = 0; c < t.chunk_count; ++c) {
        const int64_t n = elems_of_chunk(t, c, a.dtype);
        const int64_t col = c * t.block_elems;
        // Pass 1: acc[j] = sum over the d1 lines of dy[line, col + j].
        std::fill(acc, acc + n, 0.0f);  // Duplicate(acc, 0)
#if defined(LSG_PLANT_BUG_DROP_ELEMENT)
        const int64_t lines = t.d1 >= kLongReduce ? t.d1 - 1 : t.d1;
        for (int64_t first = 0; first < lines; first += kMidGroupLines) {
            const int64_t last = std::min(lines, first + kMidGroupLines);
#else
        for (int64_t first = 0; first < t.d1; first += kMidGroupLines) {
            const int64_t last = std::min(t.d1, first + kMidGroupLines);
#endif
            std::fill(part, part + n, 0.0f);  // Duplicate(part, 0)
            for (int64_t line = first; line < last; ++line, ++ping) {
                float* dy = ub.block(static_cast<int>(ping & 1));
                copy_in(dy, a.dy, base + line * t.d2 + col, n, a.dtype, t.block_elems);
                for (int64_t j = 0; j < n; ++j)
                    part[j] = round_sum(part[j] + dy[j]);  // Add(part, part, dy)
            }
            for (int64_t j = 0; j < n; ++j)
                acc[j] = round_sum(acc[j] + part[j]);  // Add(acc, acc, part)
        }
        // Pass 2: out = dy - exp(y) * acc, line by line.
        for (int64_t line = 0; line < t.d1; ++line, ++ping) {
            const int64_t at = base + line * t.d2 + col;
            float* dy = ub.block(static_cast<int>(ping & 1));
            copy_in(dy, a.dy, at, n, a.dtype, t.block_elems);
            copy_in(y, a.y, at, n, a.dtype, t.block_elems);
            exp_(y, n);
            for (int64_t j = 0; j < n; ++j) y[j] = y[j] * acc[j];    // Mul(y, y, acc)
            for (int64_t j = 0; j < n; ++j) out[j] = dy[j] - y[j];   // Sub(out, dy, y)
            copy_out(a.out, at, out, n, a.dtype);
        }
    }
}

}  // namespace

namespace {

// One 64-lane repeat (m <= 64 elements) as a binary tree of adjacent pairs, a lane without a
// partner passing to the next level.  buf holds at least m floats.
float tree_sum(const float* x, int64_t m, float* buf) {
    for (int64_t i = 0; i < m; ++i) buf[i] = x[i];
    int64_t width = m;
    while (width > 1) {
        int64_t h = 0;
        for (int64_t i = 0; i + 1 < width; i += 2) buf[h++] = round_sum(buf[i] + buf[i + 1]);
        if (width & 1) buf[h++] = buf[width - 1];
        width = h;
    }
    return buf[0];
}

}  // namespace

float reduce_sum(const float* x, int64_t n, float* work, bool tree_repeats) {
    constexpr int64_t kLanes = 64;  // one 256-byte vector repeat of fp32
    if (n <= 0) return 0.0f;
    float* lanes = work;  // one repeat's tree: 64 floats, then the repeat sums
    float* sums = work + kLanes;
    if (!tree_repeats) {
        // Atlas A2: every repeat (the last one may be short) as a tree, the repeat sums added in
        // sequence.
        float result = 0.0f;
        for (int64_t at = 0; at < n; at += kLanes) {
            const float part = tree_sum(x + at, std::min(kLanes, n - at), lanes);
            result = at == 0 ? part : round_sum(result + part);
        }
        return result;
    }
    // Atlas 200I/500 A2: the whole repeats are the body, the n % 64 elements after them the tail
    // (n < 64: all of it is the body).  Body: each repeat as a tree, the repeat sums as trees of
    // 64 at a time, again and again until one is left.  Tail: a tree of its own.  Then one fp32
    // addition, body + tail.
    const int64_t whole = n / kLanes;
    const int64_t tail = whole == 0 ? 0 : n % kLanes;
    const int64_t body_len = n - tail;
    int64_t width = 0;
    for (int64_t at = 0; at < body_len; at += kLanes)
        sums[width++] = tree_sum(x + at, std::min(kLanes, body_len - at), lanes);
    while (width > 1) {
        int64_t next = 0;
        for (int64_t i = 0; i < width; i += kLanes)
            sums[next++] = tree_sum(sums + i, std::min(kLanes, width - i), lanes);
        width = next;
    }
    if (tail == 0) return sums[0];
    return round_sum(sums[0] + tree_sum(x + body_len, tail, lanes));
}

void run_core(const KernelArgs& args, int64_t core, UnifiedBuffer& ub) {
    int64_t start = 0, count = 0;
    core_rows(args.tiling, core, &start, &count);
    int64_t ping = 0;
    for (int64_t row = start; row < start + count; ++row) {
        switch (args.tiling.schedule) {
            case LSG_SCHED_NO_REDUCE: no_reduce_row(args, row, ub, ping); break;
            case LSG_SCHED_REDUCE_TAIL: reduce_tail_row(args, row, ub, ping); break;
            default: reduce_mid_row(args, row, ub, ping); break;
        }
    }
}

}  // namespace lsg::twin
