// The emulated Ascend device: one Global Memory, block_dim AI vector cores each with its own
// Unified Buffer, and the launch of a kernel written against kernel_operator.h (our own emulation
// of the Ascend C programming model, op/ascendc_cpu/README.md).
//
// launch() runs `kernel` for every block index 0..block_dim-1, sequentially (threads <= 1) or on
// `threads` host threads, over one emulated GM:
//   - each GmBuffer is copied (one of unspecified content is not: the kernel reads only what it
//     wrote there) into a GM region with guard bytes on both sides; the kernel's five GM_ADDR
//     arguments are gm[0..3] (dy, y, out, workspace; nullptr where gm has fewer entries) and a
//     GM copy of the tiling data (what GET_TILING_DATA reads);
//   - every GM access of the kernel is checked against the region it falls in, writes to an
//     input region are refused, and the guard bytes are verified after the run;
//   - each output element must be written exactly once (when block_dim > 0 and the output is not
//     empty), by one core;
//   - outputs are copied back after the run (also when it throws, for inspection);
//   - tiling_key is what TILING_KEY_IS compares; each core has its own UB of soc.ub_bytes.
// The first violation of a rule is thrown, one line "<API>: <rule>: <values>": a rule CANN or the
// device enforces as Fault, a rule of the emulation's own as PolicyFault (its message says why).
// The rules, their kinds and their messages: op/ascendc_cpu/README.md.
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

// How ReduceSum adds (an extension; the default is the order CANN's class library implements
// for the SoC).  Inside a 64-lane repeat (256 bytes of fp32) always a binary tree of adjacent
// pairs, a lane without a partner passing up.
enum class ReduceSumOrder : int32_t {
    // The SoC's order: kTreeBodyTail on Atlas 200I/500 A2 (a name starting "Ascend310B"),
    // kSequentialRepeats on every other SoC (Atlas A2).
    kDocumented = 0,
    kSequentialRepeats = 1,  // Atlas A2: every repeat (the last may be partial) as a tree, the
                             // repeat sums added in sequence
    kTreeRepeats = 2,        // not CANN's: every repeat (the last may be partial) as a tree, the
                             // repeat sums as trees of 64 again (the documentation's 方式一 read
                             // literally; the emulation's Ascend310B order before CANN's was read)
    kLaneAccumulate = 3,     // not a documented order: 64 lane sums accumulated repeat by
                             // repeat, then folded pairwise (the CPU twin's first model)
    kTreeBodyTail = 4,       // Ascend310B: the full repeats as trees, their sums as trees of 64,
                             // those again as a tree (BODY); the count % 64 last elements a tree
                             // of their own (TAIL); the result BODY + TAIL
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
    // An input whose content the kernel may not rely on (the system workspace the framework
    // provides): `data` is not read and may be null, nothing is copied; the kernel may write it,
    // and its read of a byte it did not write is a PolicyFault (a device holds garbage there).
    bool unspecified = false;
};

// The first violation of a rule the device enforces (CANN's own checkers stop it too, or the
// device would hang, race or write outside a tensor): "<API>: <rule>: <values>" (one line).
struct Fault : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A rule of the emulation's own that CANN does not enforce (op/ascendc_cpu/README.md, "emulation
// policy"): the message ends with "(emulation policy: CANN accepts this; <why we refuse it>)".
struct PolicyFault : Fault {
    using Fault::Fault;
};

using KernelFn = void (*)(uint8_t*, uint8_t*, uint8_t*, uint8_t*, uint8_t*);  // GM_ADDR x5

EMU_API void launch(KernelFn kernel, uint32_t block_dim, const Soc& soc, uint64_t tiling_key,
                    const std::vector<GmBuffer>& gm, const void* tiling, size_t tiling_bytes,
                    int threads);

}  // namespace emu

#endif  // EMU_DEVICE_H
