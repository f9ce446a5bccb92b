// Strided views and the kernel's contiguous [d0, d1, d2]: the copies the aclnn layer makes through
// the workspace before the kernel runs (strided dy, y) and after it (a strided out).  Shared by the
// CPU twin (op/twin/twin.cpp) and the emulated Ascend C kernel (op/ascendc_cpu/abi), so that both
// libraries move views alike.  Plain C++17, no vendor headers.
#ifndef LSG_VIEWS_H
#define LSG_VIEWS_H

#include <cstdint>
#include <vector>

#include "tiling.h"

namespace lsg {

// Row-major element strides of `shape` (an extent of 0 counts as 1).
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

// Copy every element of a view of `shape` from src (element strides ss) to dst (strides ds);
// es is the element size in bytes.
void copy_view(const std::vector<int64_t>& shape, int es, const unsigned char* src,
               const std::vector<int64_t>& ss, unsigned char* dst, const std::vector<int64_t>& ds);

// What the kernel reads and writes: contiguous dy, y and out, each the caller's own memory when
// that view is contiguous, else its copy in the workspace (lsg::workspace_layout).
struct KernelViews {
    const void* dy;
    const void* y;
    void* out;
};

// Before the kernel: copy strided dy and y into the workspace `ws`; point out at its workspace
// copy when it is strided.  Precondition: the call was validated and ws holds layout.total bytes.
KernelViews stage_views(const Call& call, const WorkspaceLayout& layout, const void* dy,
                        const void* y, void* out, unsigned char* ws);

// After the kernel: copy a strided out back from its workspace copy into the caller's view
// (nothing to do when out is contiguous).
void unstage_out(const Call& call, const WorkspaceLayout& layout, void* out,
                 const unsigned char* ws);

}  // namespace lsg

#endif  // LSG_VIEWS_H
