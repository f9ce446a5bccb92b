// CPU emulation of CANN's graph types, as far as the operator's host code uses them: the data
// type and format enums and the status type of GE.  Written from the public CANN documentation
// (ge::DataType, ge::Format, ge::graphStatus); the codes are the documented ones, which are also
// aclDataType's (op/tiling/lsg_types.h enum lsg_dtype).
#ifndef LSG_EMU_GRAPH_TYPES_H
#define LSG_EMU_GRAPH_TYPES_H

#include <cstdint>

namespace ge {

using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFF;

enum DataType {
    DT_FLOAT = 0,
    DT_FLOAT16 = 1,
    DT_INT8 = 2,
    DT_INT32 = 3,
    DT_UINT8 = 4,
    DT_INT16 = 6,
    DT_UINT16 = 7,
    DT_UINT32 = 8,
    DT_INT64 = 9,
    DT_UINT64 = 10,
    DT_DOUBLE = 11,
    DT_BOOL = 12,
    DT_BF16 = 27,
    DT_UNDEFINED = 28
};

enum Format {
    FORMAT_NCHW = 0,
    FORMAT_NHWC = 1,
    FORMAT_ND = 2,
    FORMAT_RESERVED = 40
};

}  // namespace ge

#endif  // LSG_EMU_GRAPH_TYPES_H
