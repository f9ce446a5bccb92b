// The front half of the C ABI (lsg_twin.h) that both libraries share: the twin (twin.cpp) and the
// emulated Ascend C kernel (op/ascendc_cpu/abi).  Reading the caller's descriptors into a
// lsg::Call, finding the SoC, the parameter checks of phase one, messages, the SoC table and the
// reference conversions: one implementation, so that both libraries accept, reject and report
// every call alike.
#ifndef LSG_ABI_COMMON_H
#define LSG_ABI_COMMON_H

#include <cstddef>
#include <cstdint>
#include <string>

#include "lsg_twin.h"
#include "tiling.h"

namespace lsg::abi {

// Copy text into message (cap bytes, NUL-terminated); nothing when message is NULL or cap is 0.
void put_message(char* message, size_t cap, const std::string& text);

// Set *reason and the message, return status.
int32_t finish(int32_t status, int32_t reason_id, const std::string& text, int32_t* reason,
               char* message, size_t cap);

// The caller's arguments read: the SoC by name (`library` names the library in the message for an
// unknown one), the descriptors and axes (a rank out of [0, 64], a NULL shape or NULL axes
// refused).  On success *call and *soc are set and the verdict is ok; otherwise the verdict is
// the refusal (status, reason, message).
Verdict read_call(const lsg_tensor* dy, const lsg_tensor* y, const int64_t* axes, int32_t n_axes,
                  const lsg_tensor* out, const char* soc_name, const char* library, Call* call,
                  const SocProfile** soc);

// Phase one up to the tiling, as the twin makes it: read_call, then lsg::validate.
Verdict check_call(const lsg_tensor* dy, const lsg_tensor* y, const int64_t* axes, int32_t n_axes,
                   const lsg_tensor* out, const char* soc_name, const char* library, Call* call,
                   const SocProfile** soc);

// lsg_soc_get and lsg_convert.
int32_t soc_get(int32_t index, lsg_soc_profile* out);
int32_t convert(int32_t src_dtype, const void* src, int32_t dst_dtype, void* dst, int64_t n);

}  // namespace lsg::abi

#endif  // LSG_ABI_COMMON_H
