// The emulated framework's host side: the operator's registered tiling function (found through
// its OpDef, as CANN finds it) run on an emulated gert::TilingContext built from a call, and the
// registration read back.  op/ascendc/op_host/log_softmax_grad.cpp is compiled unchanged against
// the emulation headers in op/ascendc_cpu/include.
#ifndef LSG_ACPU_HOST_TILING_H
#define LSG_ACPU_HOST_TILING_H

#include <cstdint>
#include <string>
#include <vector>

#include "tiling.h"

namespace lsg::acpu {

// The operator type OP_ADD registers in op_host/log_softmax_grad.cpp.
constexpr const char* kOpType = "LogSoftmaxGradCustom";

// What the tiling function decided (ok), or why it could not run or refused (error; when it
// refused the call and said why through lsg::report_rejection, `rejection` is that verdict).
struct HostTiling {
    bool ok = false;
    std::string error;
    bool reported = false;
    Verdict rejection;
    std::vector<uint8_t> tiling_data;  // GetRawTilingData()'s first GetDataSize() bytes
    uint32_t block_dim = 0;
    uint64_t tiling_key = 0;
    std::vector<uint64_t> workspaces;  // GetWorkspaceSizes, GetWorkspaceNum() of them
};

// Run the registered tiling function of kOpType on a context holding the call's shapes (no
// strides: the kernel sees contiguous data), dtypes, axes attribute and the SoC as platform.
HostTiling run_tiling(const Call& call, const SocProfile& soc);

// The tiling function's own decision on a call, with nothing before it (no registration check,
// no lsg::validate): ok when it tiled the call; the verdict it reported through
// lsg::report_rejection when it refused; an internal error (561000) naming what went wrong when
// it failed without saying why or could not run.  What the farm's tiling cases judge.
Verdict tiling_decision(const Call& call, const SocProfile& soc);

// Whether the OpDef asked to run when every output is empty (AICore().LaunchWithZeroEleOutputTensors).
bool launches_with_empty_outputs();

// The registration as JSON: {"op_type", "inputs", "outputs", "attrs", "socs": {soc: {"inputs":
// {name: [dtype names]}, "outputs": {...}}}, "has_tiling", "launch_with_zero_ele_outputs", "has_infer_shape", "has_infer_dtype"}.
std::string describe_opdef();

}  // namespace lsg::acpu

#endif  // LSG_ACPU_HOST_TILING_H
