// The emulated Ascend device: one Global Memory, block_dim AI vector cores each with its own
// Unified Buffer, and the launch of a kernel written against kernel_operator.h (our own emulation
// of the Ascend C programming model, op/ascendc_cpu/README.md).
//
// launch() runs `kernel` for every block index 0..block_dim-1, sequentially (threads <= 1) or on
// `threads` host threads, over one emulated GM:
//   - each GmBuffer is copied into a GM region with guard bytes on both sides; the kernel's five
//     GM_ADDR arguments are gm[0..3] (dy, y, out, workspace; nullptr where gm has fewer entries)
//     and a GM copy of the tiling data (what GET_TILING_DATA reads);
//   - every GM access of the kernel is checked against the region it falls in, writes to a
//     non-output region are refused, and the guard bytes are verified after the run;
//   - each output element must be written exactly once (when block_dim > 0 and the output is not
//     empty), by one core;
//   - outputs are copied back after the run (also when it throws, for inspection);
//   - tiling_key is what TILING_KEY_IS compares; each core has its own UB of soc.ub_bytes.
// The first violation of a rule the hardware enforces is thrown as Fault, one line:
// "<API>: <rule>: <values>".  The rules and their messages: op/ascendc_cpu/README.md.
#ifndef EMU_DEVICE_H
#define EMU_DEVICE_H

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__GNUC__)
#define EMU_API __attribute__((visibility("default")))
#else
#define EMU_API
#endif

namespace emu {

// How ReduceSum adds (an extension; the default is the documented order).
enum class ReduceSumOrder : int32_t {
    // The documented order for the SoC: Atlas 200I/500 A2 (a name starting "Ascend310B") adds
    // the repeat sums as a binary tree, every other SoC (Atlas A2) adds them in sequence.
    kDocumented = 0,
    kSequentialRepeats = 1,  // each 64-lane repeat summed as a binary tree, repeat sums in order
    kTreeRepeats = 2,        // each repeat as a binary tree, the repeat sums as a tree again
    kLaneAccumulate = 3,     // not a documented order: 64 lane sums accumulated repeat by
                             // repeat, then folded pairwise (the CPU twin's first model)
};

struct Soc {
    std::string name;
    int32_t vector_cores;
    int64_t ub_bytes;
    int32_t block_bytes;
    bool bf16_cast;
    ReduceSumOrder reduce_sum_order = ReduceSumOrder::kDocumented;  // extension
};

struct GmBuffer {
    void* data;
    size_t bytes;
    const char* name;
    bool output;
    size_t elem_bytes;
};

// The first violation of a rule the hardware enforces: "<API>: <rule>: <values>" (one line).
struct Fault : std::runtime_error {
    using std::runtime_error::runtime_error;
};

using KernelFn = void (*)(uint8_t*, uint8_t*, uint8_t*, uint8_t*, uint8_t*);  // GM_ADDR x5

EMU_API void launch(KernelFn kernel, uint32_t block_dim, const Soc& soc, uint64_t tiling_key,
                    const std::vector<GmBuffer>& gm, const void* tiling, size_t tiling_bytes,
                    int threads);

}  // namespace emu

#endif  // EMU_DEVICE_H
