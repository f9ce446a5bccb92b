// The twin's kernel: the three schedules as the Ascend C kernel runs them, one emulated vector
// core at a time, each with its own Unified Buffer.
#ifndef LSG_TWIN_KERNEL_H
#define LSG_TWIN_KERNEL_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lsg_types.h"

namespace lsg::twin {

struct KernelArgs {
    const void* dy;  // contiguous [d0, d1, d2] in dtype
    const void* y;
    void* out;
    int32_t dtype;
    lsg_tiling_record tiling;
    // How ReduceSum adds on this SoC: body and tail as trees of trees (Atlas 200I/500 A2,
    // Ascend310B) or the repeat sums in sequence (Atlas A2); see reduce_sum.
    bool tree_repeats;
};

// One core's Unified Buffer: ub_bytes of storage carved into the tiling's equal blocks.
class UnifiedBuffer {
public:
    UnifiedBuffer(int64_t ub_bytes, int64_t block_bytes)
        : mem_(static_cast<size_t>(ub_bytes / 4)), block_floats_(block_bytes / 4) {}
    float* block(int index) { return mem_.data() + index * block_floats_; }

private:
    std::vector<float> mem_;
    int64_t block_floats_;
};

// Run the rows of core `core` (see lsg::core_rows) through its UB.
void run_core(const KernelArgs& args, int64_t core, UnifiedBuffer& ub);

// The kernel's reduction of one chunk, ReduceSum's order in CANN's class library (the one the
// emulated device of op/ascendc_cpu implements): inside a 64-lane repeat (256 bytes of fp32) a
// binary tree of adjacent pairs.  Atlas A2: every repeat (the last may be short) a tree, the
// repeat sums added in sequence.  Atlas 200I/500 A2 (tree_repeats): the whole repeats the body,
// their sums reduced 64 at a time as trees until one is left; the n % 64 elements after them
// (n > 64) the tail, a tree of its own; the result body + tail.  work: at least
// 64 + ceil(n / 64) floats.  Exposed for tests.
float reduce_sum(const float* x, int64_t n, float* work, bool tree_repeats);

}  // namespace lsg::twin

#endif  // LSG_TWIN_KERNEL_H
