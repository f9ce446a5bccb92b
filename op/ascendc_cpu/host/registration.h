// What CANN's generated aclnn layer of a custom operator checks before it runs the tiling: every
// tensor's dtype and format against the operator's OpDef registration for the SoC (the
// AICore().AddConfig of its family).  The registration is what op_host/log_softmax_grad.cpp's
// OP_ADD recorded; nothing here knows which dtypes the operator supports.
#ifndef LSG_ACPU_REGISTRATION_H
#define LSG_ACPU_REGISTRATION_H

#include "tiling.h"

namespace lsg::acpu {

// Accepted when some registered combination of the SoC's configuration takes the call's
// (grad_output, output, grad_input) dtypes, all in format ND (the C ABI's tensors are ND).
// Otherwise the rejection (161002), its reason in the contract's order:
//   dtype_unsupported        dy's dtype is registered for no SoC (or, not bf16, not for this one)
//   dtype_mismatch           no SoC registers dy's dtype with y's and out's
//   bf16_unsupported_on_soc  bf16 is registered, but not for this SoC's family
//   invalid_argument         the dtypes are registered here, format ND is not
// A registration that cannot be read (no OpDef, no configuration for the family, dtype lists of
// different lengths) is an internal error (561000) that names what is wrong with it.
Verdict check_registration(const Call& call, const SocProfile& soc);

}  // namespace lsg::acpu

#endif  // LSG_ACPU_REGISTRATION_H
