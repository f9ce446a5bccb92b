/* LogSoftmaxGrad: the plain-C types shared by the tiling, the CPU twin's C ABI and its callers.
 *
 * Reason ids, names and statuses are reasons.def's, the table golden/contract.py reads too; the
 * order in which the parameter checks run is the contract's (op/tiling/tiling.cpp, lsg::validate).
 * Status codes are aclnn's.  No vendor headers: this file is included by the twin, by the
 * Ascend C op_host tiling and by C callers alike.
 */
#ifndef LSG_TYPES_H
#define LSG_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* aclnn status codes. */
#define LSG_STATUS_OK 0
#define LSG_ERR_PARAM_NULLPTR 161001 /* ACLNN_ERR_PARAM_NULLPTR: a required tensor is missing */
#define LSG_ERR_PARAM_INVALID 161002 /* ACLNN_ERR_PARAM_INVALID: every other rejection */
/* Not a parameter rejection: the twin was asked to emulate a SoC it does not know, or failed
 * internally (out of memory).  The ACLNN_ERR_INNER class. */
#define LSG_ERR_INNER 561000

/* Why a call was rejected (0 = accepted): the ids of reasons.def, the one table of reasons that
 * golden/contract.py reads too (ids 0-99 the contract's, 100 and above the libraries' own). */
enum lsg_reason {
#define LSG_REASON(id, NAME, name, status, words) LSG_REASON_##NAME = id,
#include "reasons.def"
#undef LSG_REASON
};

/* ACL dtype codes (aclDataType).  Only FLOAT, FLOAT16 and BF16 are supported by the operator. */
enum lsg_dtype {
    LSG_DT_FLOAT = 0,
    LSG_DT_FLOAT16 = 1,
    LSG_DT_INT8 = 2,
    LSG_DT_INT32 = 3,
    LSG_DT_UINT8 = 4,
    LSG_DT_INT16 = 6,
    LSG_DT_UINT16 = 7,
    LSG_DT_UINT32 = 8,
    LSG_DT_INT64 = 9,
    LSG_DT_UINT64 = 10,
    LSG_DT_DOUBLE = 11,
    LSG_DT_BOOL = 12,
    LSG_DT_BF16 = 27
};

/* The three kernel schedules (SPEC section 3); the value is also the "mode" of the key. */
enum lsg_schedule {
    LSG_SCHED_NO_REDUCE = 0,   /* d1 == 1: out = dy * (1 - exp(y)) */
    LSG_SCHED_REDUCE_TAIL = 1, /* d2 == 1: reduce the innermost extent */
    LSG_SCHED_REDUCE_MID = 2   /* reduce a middle extent, d2 columns side by side */
};

#define LSG_MAX_RANK 8

/* What the host tiling decided for one call.  Field order is ABI: append only. */
typedef struct lsg_tiling_record {
    int32_t schedule;       /* enum lsg_schedule */
    int32_t key;            /* public-style: schedule | is_small_shape << 8 | is_contiguous << 9 */
    int32_t is_small_shape; /* a row (row group for REDUCE_MID) fits in one UB block: 1 chunk */
    int32_t is_contiguous;  /* dy, y and out are all contiguous: no copies in the workspace */
    int32_t is_empty;       /* some extent is 0: nothing runs, workspace 0 */
    int32_t cores_used;     /* min(rows, vector cores); 0 when empty */
    int32_t big_cores;      /* the first rows % cores_used cores take one extra row */
    int32_t ub_blocks;      /* the UB is divided into this many equal blocks (per schedule) */
    int64_t d0, d1, d2;     /* the merged shape: before, over and after the reduce axes */
    int64_t rows;           /* the outer extent split over cores: d0 */
    int64_t rows_per_big_core;   /* rows_per_small_core + 1, or equal to it when big_cores == 0 */
    int64_t rows_per_small_core; /* rows / cores_used */
    int64_t row_len;        /* the extent chunked through UB: d2 (NO_REDUCE, REDUCE_MID), d1 (TAIL) */
    int64_t block_bytes;    /* UB bytes / ub_blocks, aligned down to the UB block size */
    int64_t block_elems;    /* elements per UB block (fp32 compute width; see tiling.cpp) */
    int64_t chunk_count;    /* ceil(row_len / block_elems); 0 when empty */
    int64_t tail_elems;     /* elements in the last chunk, 1..block_elems; 0 when empty */
    uint64_t workspace_bytes; /* contiguous copies of strided views; 0 when all contiguous */
    char schedule_name[16]; /* "NO_REDUCE", "REDUCE_TAIL", "REDUCE_MID" */
    char soc_name[32];
} lsg_tiling_record;

/* One SoC profile (SPEC section 4; the same table as golden/soc.py). */
typedef struct lsg_soc_profile {
    char name[32];
    char family[16];        /* "ascend910b" or "ascend310b" */
    int32_t vector_cores;
    int32_t block_bytes;    /* the UB block (alignment) size */
    int64_t ub_bytes;
    int32_t bf16_cast;      /* 1 if the SoC has a bf16 -> fp32 vector Cast */
    int32_t reserved;
} lsg_soc_profile;

#ifdef __cplusplus
}
#endif

#endif /* LSG_TYPES_H */
