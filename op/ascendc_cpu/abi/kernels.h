// The real kernel's entry points on the emulated device, one per dtype: the kernel source
// compiled with -Dlog_softmax_grad_custom=log_softmax_grad_<dtype> (op/CMakeLists.txt).  Shared by the C
// ABI library (lsg_ascendc_cpu.cpp) and the emulated ACL runtime's op-api (op/acl_emu).
#ifndef LSG_ACPU_KERNELS_H
#define LSG_ACPU_KERNELS_H

#include <cstdint>

#include "emu/device.h"
#include "lsg_types.h"

extern "C" {
void log_softmax_grad_float(uint8_t*, uint8_t*, uint8_t*, uint8_t*, uint8_t*);
void log_softmax_grad_half(uint8_t*, uint8_t*, uint8_t*, uint8_t*, uint8_t*);
void log_softmax_grad_bfloat16_t(uint8_t*, uint8_t*, uint8_t*, uint8_t*, uint8_t*);
}

namespace lsg::acpu {

// The kernel for an ACL dtype code, or nullptr for one the operator has no kernel for.
inline emu::KernelFn kernel_for(int32_t dtype) {
    switch (dtype) {
        case LSG_DT_FLOAT: return log_softmax_grad_float;
        case LSG_DT_FLOAT16: return log_softmax_grad_half;
        case LSG_DT_BF16: return log_softmax_grad_bfloat16_t;
        default: return nullptr;
    }
}

}  // namespace lsg::acpu

#endif  // LSG_ACPU_KERNELS_H
