// LogSoftmaxGrad: the tiling data the host passes to the kernel.  Filled from the shared tiling
// record (op/tiling/tiling.h, lsg::plan); the field meanings are lsg_tiling_record's.
#ifndef LOG_SOFTMAX_GRAD_TILING_H
#define LOG_SOFTMAX_GRAD_TILING_H

#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(LogSoftmaxGradTilingData)
TILING_DATA_FIELD_DEF(int64_t, d0);
TILING_DATA_FIELD_DEF(int64_t, d1);
TILING_DATA_FIELD_DEF(int64_t, d2);
TILING_DATA_FIELD_DEF(int64_t, rowsPerBigCore);
TILING_DATA_FIELD_DEF(int64_t, rowsPerSmallCore);
TILING_DATA_FIELD_DEF(int64_t, blockBytes);
TILING_DATA_FIELD_DEF(int64_t, blockElems);
TILING_DATA_FIELD_DEF(int64_t, chunkCount);
TILING_DATA_FIELD_DEF(int64_t, tailElems);
TILING_DATA_FIELD_DEF(int32_t, bigCores);
TILING_DATA_FIELD_DEF(int32_t, publicKey);  // schedule | isSmallShape << 8 | isContiguous << 9
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(LogSoftmaxGradCustom, LogSoftmaxGradTilingData)
}  // namespace optiling

#endif  // LOG_SOFTMAX_GRAD_TILING_H
