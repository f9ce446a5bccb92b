// tests/golden/test_reasons.py's driver: the C side's table of reasons as the operator compiles it
// (op/tiling/tiling.cpp: lsg::reason_name, lsg::reason_status, lsg::reason_line; lsg_types.h:
// enum lsg_reason), one line per reason id, so that the test compares it with golden/reasons.py.
#include <cstdio>

#include "tiling.h"

int main() {
    // The ids the code names, by their enum names (not through the table's own X-macro).
    const int named[] = {LSG_REASON_OK, LSG_REASON_NULL_TENSOR, LSG_REASON_DTYPE_UNSUPPORTED,
                         LSG_REASON_DTYPE_MISMATCH, LSG_REASON_SHAPE_MISMATCH,
                         LSG_REASON_RANK_TOO_LARGE, LSG_REASON_DIM_OUT_OF_RANGE,
                         LSG_REASON_AXES_NOT_CONSECUTIVE, LSG_REASON_AXES_EMPTY,
                         LSG_REASON_BF16_UNSUPPORTED_ON_SOC, LSG_REASON_UNKNOWN_SOC,
                         LSG_REASON_INVALID_ARGUMENT, LSG_REASON_INTERNAL,
                         LSG_REASON_KERNEL_FAULT, LSG_REASON_EMULATION_POLICY};
    for (int id : named) std::printf("named %d\n", id);
    for (int id = 0; id < 256; ++id) {
        const char* name = lsg::reason_name(id);
        if (!*name) continue;
        lsg::Verdict v;
        v.reason = id;
        v.status = lsg::reason_status(id);
        v.message = "why";
        std::printf("row %d %s %d|%s\n", id, name, v.status, lsg::reason_line(v).c_str());
    }
    std::printf("unknown '%s' %d\n", lsg::reason_name(255), lsg::reason_status(255));
    return 0;
}
