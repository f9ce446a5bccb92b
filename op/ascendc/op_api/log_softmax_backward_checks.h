// The decisions of the operator's aclnn layer (aclnn_log_softmax_backward.cpp) that need no ACL:
// one source for the package's entry on a device and for the CPU library's phase one
// (op/ascendc_cpu/abi), so a rejection reads the same, from the same code, on every path.
//
// The layer checks what only it can before the generated entry (malformed descriptors, a missing
// tensor); every other decision is the host code's, made underneath (the OpDef registration, the
// tiling function).  When the generated entry refuses a call, its status says only that it did
// (on a device the tiling function's reason goes to CANN's log): the call's status and reason are
// then the contract's, from the shared checks the tiling function itself runs (op/tiling).
#ifndef LSG_LOG_SOFTMAX_BACKWARD_CHECKS_H
#define LSG_LOG_SOFTMAX_BACKWARD_CHECKS_H

#include <cstdint>
#include <string>

#include "tiling.h"

namespace lsg::op_api {

// Before the generated entry: malformed descriptors, then every tensor present.
Verdict check_call(const Call& call);

// The status CANN's generated entry returns when the operator's tiling function refused a call
// (ACLNN_ERR_INNER_TILING_ERROR); a refusal of its dtype and format check against the OpDef
// registration is ACLNN_ERR_PARAM_INVALID.
constexpr int32_t kTilingRefused = 561002;

// The verdict of a call the generated entry refused with `status`, having said `said`: the
// contract's (reason and message from lsg::validate, ending with which layer refused it, as the
// status says: "; refused by the OpDef registration" or "; refused by the tiling function")
// when it refuses the call too; an inner error
// (LSG_ERR_INNER, reason internal) naming the entry's status and words when the contract accepts
// it (reason unknown_soc when the SoC is not the operator's).
Verdict after_refusal(const Call& call, const SocProfile* soc, int32_t status,
                      const std::string& said);

// "LogSoftmaxGrad: status S (reason R name): message [api]", the layer's recent error message:
// lsg::reason_line (the table of reasons.def), which the farm reads strictly (golden/reasons.py).
std::string message(const char* api, const Verdict& v);

}  // namespace lsg::op_api

#endif  // LSG_LOG_SOFTMAX_BACKWARD_CHECKS_H
