// LogSoftmaxGrad host tiling (see tiling.h and SPEC section 3).
#include "tiling.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

namespace lsg {

namespace {

const SocProfile kSocs[] = {
#define LSG_SOC(name, family, cores, ub, block, bf16) {name, family, cores, ub, block, bf16},
#include "soc_profiles.inc"
#undef LSG_SOC
};

// UB blocks per schedule.  Every path double-buffers dy (2 blocks) and has one block each for y
// and out.  REDUCE_TAIL adds ReduceSum's work buffer (5, as the seed plans); REDUCE_MID adds a
// partial and a total column sum (6: lines are summed in groups, see op/twin/kernel.cpp); the
// streaming NO_REDUCE path double-buffers y and out too (6).
constexpr int kBlocksNoReduce = 6;
constexpr int kBlocksReduceTail = 5;
constexpr int kBlocksReduceMid = 6;

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

const char* const kLabels[] = {"gradOutput (dy)", "output (y)", "out (gradInput)"};

std::string shape_str(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) {
        if (i) r += ", ";
        r += std::to_string(s[i]);
    }
    return r + "]";
}

struct ReasonRow {
    int32_t id;
    const char* name;
    int32_t status;
};

const ReasonRow kReasons[] = {
#define LSG_REASON(id, NAME, name, status, words) {id, #name, status},
#include "reasons.def"
#undef LSG_REASON
};

const ReasonRow* reason_row(int32_t reason) {
    for (const ReasonRow& r : kReasons)
        if (r.id == reason) return &r;
    return nullptr;
}

Verdict reject(int32_t reason, std::string message) {
    Verdict v;
    v.reason = reason;
    v.status = reason_status(reason);
    v.message = std::move(message);
    return v;
}

// Product of the extents, or -1 if it does not fit in int64 (0 wins over overflow).
int64_t checked_numel(const std::vector<int64_t>& shape) {
    for (int64_t e : shape)
        if (e == 0) return 0;
    int64_t n = 1;
    for (int64_t e : shape) {
        if (n > kMaxInt64 / e) return -1;
        n *= e;
    }
    return n;
}

// Product of dims[begin, end), saturating at INT64_MAX: only an empty tensor (whose element
// count is 0) can have a partial product that overflows, and its merged extents are only reported.
int64_t prod(const std::vector<int64_t>& dims, size_t begin, size_t end) {
    int64_t p = 1;
    for (size_t i = begin; i < end; ++i)
        if (__builtin_mul_overflow(p, dims[i], &p)) return kMaxInt64;
    return p;
}

int64_t align_down(int64_t v, int64_t a) { return v / a * a; }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Axes as indices in [0, n); a 0-d tensor counts as n = 1.  Precondition: in range.
std::vector<int64_t> normalized_sorted(const std::vector<int64_t>& axes, size_t rank) {
    const int64_t n = rank ? static_cast<int64_t>(rank) : 1;
    std::vector<int64_t> out;
    out.reserve(axes.size());
    for (int64_t a : axes) out.push_back(a < 0 ? a + n : a);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

int soc_count() { return static_cast<int>(sizeof(kSocs) / sizeof(kSocs[0])); }

const SocProfile& soc_at(int index) { return kSocs[index]; }

const SocProfile* find_soc(std::string_view name) {
    for (const SocProfile& s : kSocs)
        if (name == s.name) return &s;
    return nullptr;
}

const SocProfile* find_soc_or_family(std::string_view name) {
    if (const SocProfile* exact = find_soc(name)) return exact;
    // "Ascend910B" + a digit is an Atlas A2 SoC, "Ascend310B" + a digit an Atlas 200I/500 A2 one
    // (a bare "Ascend910B" is CANN's name of an older Ascend910: not the family).
    static const struct { std::string_view prefix; std::string_view family; } kFamilies[] = {
        {"Ascend910B", "ascend910b"}, {"Ascend310B", "ascend310b"}};
    for (const auto& f : kFamilies) {
        if (name.size() <= f.prefix.size() || name.substr(0, f.prefix.size()) != f.prefix ||
            name[f.prefix.size()] < '0' || name[f.prefix.size()] > '9')
            continue;
        for (const SocProfile& s : kSocs)
            if (f.family == s.family) return &s;
    }
    return nullptr;
}

int dtype_size(int32_t dtype) {
    switch (dtype) {
        case LSG_DT_FLOAT: case LSG_DT_INT32: case LSG_DT_UINT32: return 4;
        case LSG_DT_FLOAT16: case LSG_DT_BF16: case LSG_DT_INT16: case LSG_DT_UINT16: return 2;
        case LSG_DT_INT8: case LSG_DT_UINT8: case LSG_DT_BOOL: return 1;
        case LSG_DT_INT64: case LSG_DT_UINT64: case LSG_DT_DOUBLE: return 8;
        default: return 0;
    }
}

const char* dtype_name(int32_t dtype) {
    switch (dtype) {
        case LSG_DT_FLOAT: return "float32";
        case LSG_DT_FLOAT16: return "float16";
        case LSG_DT_BF16: return "bfloat16";
        case LSG_DT_INT8: return "int8";
        case LSG_DT_INT32: return "int32";
        case LSG_DT_UINT8: return "uint8";
        case LSG_DT_INT16: return "int16";
        case LSG_DT_UINT16: return "uint16";
        case LSG_DT_UINT32: return "uint32";
        case LSG_DT_INT64: return "int64";
        case LSG_DT_UINT64: return "uint64";
        case LSG_DT_DOUBLE: return "double";
        case LSG_DT_BOOL: return "bool";
        default: return "unknown";
    }
}

const char* schedule_name(int32_t schedule) {
    switch (schedule) {
        case LSG_SCHED_NO_REDUCE: return "NO_REDUCE";
        case LSG_SCHED_REDUCE_TAIL: return "REDUCE_TAIL";
        case LSG_SCHED_REDUCE_MID: return "REDUCE_MID";
        default: return "UNKNOWN";
    }
}

bool is_contiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
    if (strides.empty()) return true;
    if (strides.size() != shape.size()) return false;
    int64_t expected = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        if (shape[i] == 0) return true;  // nothing is addressed
        if (shape[i] != 1 && strides[i] != expected) return false;
        expected *= shape[i];
    }
    return true;
}

static bool is_supported_dtype(int32_t d) {
    return d == LSG_DT_FLOAT || d == LSG_DT_FLOAT16 || d == LSG_DT_BF16;
}

static std::string dtype_label(int32_t d) {
    std::string s = dtype_name(d);
    if (s == "unknown") s = "code " + std::to_string(d);
    return s;
}

Verdict check_present(const Call& call) {
    const TensorDesc* tensors[] = {&call.dy, &call.y, &call.out};
    std::string missing;
    for (int i = 0; i < 3; ++i)
        if (!tensors[i]->present) missing += (missing.empty() ? "" : ", ") + std::string(kLabels[i]);
    if (!missing.empty())
        return reject(LSG_REASON_NULL_TENSOR,
                      "null tensor: " + missing +
                          " is missing; pass a valid tensor for gradOutput, output and out");
    return Verdict{};
}

namespace {
thread_local RejectionCapture* t_capture = nullptr;
}  // namespace

RejectionCapture::RejectionCapture() : outer_(t_capture) { t_capture = this; }

RejectionCapture::~RejectionCapture() { t_capture = outer_; }

const char* reason_name(int32_t reason) {
    const ReasonRow* r = reason_row(reason);
    return r ? r->name : "";
}

int32_t reason_status(int32_t reason) {
    const ReasonRow* r = reason_row(reason);
    return r ? r->status : LSG_ERR_INNER;
}

std::string reason_line(const Verdict& verdict) {
    return "LogSoftmaxGrad: status " + std::to_string(verdict.status) + " (reason " +
           std::to_string(verdict.reason) + " " + reason_name(verdict.reason) +
           "): " + verdict.message;
}

void report_rejection(const Verdict& verdict) {
    if (t_capture != nullptr) {
        t_capture->reported = true;
        t_capture->verdict = verdict;
        return;
    }
    std::fprintf(stderr, "[ERROR] %s\n", reason_line(verdict).c_str());
}

Verdict check_descriptors(const Call& call) {
    const TensorDesc* tensors[] = {&call.dy, &call.y, &call.out};

    // Malformed descriptors are outside the contract; refuse them before anything reads them.
    for (int i = 0; i < 3; ++i) {
        const TensorDesc& t = *tensors[i];
        if (!t.present) continue;
        for (int64_t e : t.shape)
            if (e < 0)
                return reject(LSG_REASON_INVALID_ARGUMENT,
                              std::string(kLabels[i]) + " shape " + shape_str(t.shape) +
                                  " has a negative extent: extents must be >= 0");
        if (checked_numel(t.shape) < 0)
            return reject(LSG_REASON_INVALID_ARGUMENT,
                          std::string(kLabels[i]) + " shape " + shape_str(t.shape) +
                              " has more than 2^63 elements: use a smaller tensor");
        if (!t.strides.empty() && t.strides.size() != t.shape.size())
            return reject(LSG_REASON_INVALID_ARGUMENT,
                          std::string(kLabels[i]) + " has " + std::to_string(t.strides.size()) +
                              " strides for rank " + std::to_string(t.shape.size()) +
                              ": pass one stride per dimension, or none for contiguous");
    }
    return Verdict{};
}

Verdict validate(const Call& call, const SocProfile& soc) {
    const TensorDesc* tensors[] = {&call.dy, &call.y, &call.out};

    const Verdict descriptors = check_descriptors(call);
    if (!descriptors.ok()) return descriptors;

    // 1. null_tensor
    const Verdict present = check_present(call);
    if (!present.ok()) return present;

    // 2. dtype_unsupported
    if (!is_supported_dtype(call.dy.dtype))
        return reject(LSG_REASON_DTYPE_UNSUPPORTED,
                      "gradOutput (dy) dtype " + dtype_label(call.dy.dtype) +
                          " is not supported: use float32, float16 or bfloat16");

    // 3. dtype_mismatch (y, then out, against dy)
    for (int i = 1; i < 3; ++i)
        if (tensors[i]->dtype != call.dy.dtype)
            return reject(LSG_REASON_DTYPE_MISMATCH,
                          std::string(kLabels[i]) + " dtype " + dtype_label(tensors[i]->dtype) +
                              " differs from gradOutput (dy) dtype " + dtype_label(call.dy.dtype) +
                              ": gradOutput, output and out must have the same dtype");

    // 9. bf16_unsupported_on_soc (checked here, in the contract's order)
    if (call.dy.dtype == LSG_DT_BF16 && !soc.bf16_cast)
        return reject(LSG_REASON_BF16_UNSUPPORTED_ON_SOC,
                      std::string("bfloat16 is not supported on ") + soc.name +
                          ": this SoC has no bf16->fp32 vector Cast; use float32 or float16");

    // 5. rank_too_large
    const size_t rank = call.dy.shape.size();
    if (rank > LSG_MAX_RANK)
        return reject(LSG_REASON_RANK_TOO_LARGE,
                      "gradOutput (dy) has rank " + std::to_string(rank) + ", above the maximum of " +
                          std::to_string(LSG_MAX_RANK) +
                          ": merge dimensions so that the rank is at most 8");

    // 4. shape_mismatch (y, then out, against dy)
    for (int i = 1; i < 3; ++i)
        if (tensors[i]->shape != call.dy.shape)
            return reject(LSG_REASON_SHAPE_MISMATCH,
                          std::string(kLabels[i]) + " shape " + shape_str(tensors[i]->shape) +
                              " differs from gradOutput (dy) shape " + shape_str(call.dy.shape) +
                              ": gradOutput, output and out must have the same shape "
                              "(no broadcasting)");

    // 8. axes_empty
    if (call.axes.empty())
        return reject(LSG_REASON_AXES_EMPTY,
                      "the reduce axes (dim) are empty: pass one axis, or a list of "
                      "consecutive axes");

    // 6. dim_out_of_range
    const int64_t n = rank ? static_cast<int64_t>(rank) : 1;
    for (int64_t a : call.axes)
        if (a < -n || a > n - 1)
            return reject(LSG_REASON_DIM_OUT_OF_RANGE,
                          "dim " + std::to_string(a) + " is out of range [" + std::to_string(-n) +
                              ", " + std::to_string(n - 1) + "] for a tensor of rank " +
                              std::to_string(rank) + ": pick a dim in that range" +
                              (rank ? "" : " (a 0-d tensor takes -1 or 0)"));

    // 7. axes_not_consecutive (duplicates included)
    const std::vector<int64_t> norm = normalized_sorted(call.axes, rank);
    for (size_t i = 1; i < norm.size(); ++i) {
        if (norm[i] == norm[i - 1])
            return reject(LSG_REASON_AXES_NOT_CONSECUTIVE,
                          "reduce axes " + shape_str(call.axes) + " name axis " +
                              std::to_string(norm[i]) +
                              " twice after normalisation: the axes must be distinct and "
                              "consecutive, e.g. [2, 3, 4]");
        if (norm[i] != norm[i - 1] + 1)
            return reject(LSG_REASON_AXES_NOT_CONSECUTIVE,
                          "reduce axes " + shape_str(call.axes) + " (normalised " +
                              shape_str(norm) +
                              ") are not consecutive: the axes must be distinct and "
                              "consecutive, e.g. [2, 3, 4]");
    }
    return Verdict{};
}

int ub_blocks_for(int32_t schedule) {
    switch (schedule) {
        case LSG_SCHED_NO_REDUCE: return kBlocksNoReduce;
        case LSG_SCHED_REDUCE_TAIL: return kBlocksReduceTail;
        default: return kBlocksReduceMid;
    }
}

int64_t block_bytes_for(const SocProfile& soc, int32_t schedule) {
    return align_down(soc.ub_bytes / ub_blocks_for(schedule), soc.block_bytes);
}

// Every block is computed on in fp32, so it holds block_bytes / 4 elements whatever the dtype.
// A 2-byte dtype is copied into the back half of the block (at byte offset 2 * elems) and cast
// up over the whole block, so a 2-byte block holds half as many elements as block_bytes / 2.
// That back-half copy must start on a UB block boundary, so for 2-byte dtypes the count is
// also aligned down to whole UB blocks of 2-byte data (ub_block / 2 elements).  On every SoC of
// the table this changes nothing except the Ascend310B1 reduce paths (12696 -> 12688).
int64_t block_elems_for(int64_t block_bytes, int32_t dtype, int32_t ub_block_bytes) {
    int64_t elems = block_bytes / 4;
    if (dtype_size(dtype) == 2) elems = align_down(elems, ub_block_bytes / 2);
    return elems;
}

void core_rows(const lsg_tiling_record& t, int64_t core, int64_t* start, int64_t* count) {
    if (core < t.big_cores) {
        *start = core * t.rows_per_big_core;
        *count = t.rows_per_big_core;
    } else {
        *start = t.big_cores * t.rows_per_big_core + (core - t.big_cores) * t.rows_per_small_core;
        *count = t.rows_per_small_core;
    }
}

WorkspaceLayout workspace_layout(const Call& call, const SocProfile& soc) {
    WorkspaceLayout w;
    const int64_t n = checked_numel(call.dy.shape);
    if (n <= 0) return w;  // empty: nothing runs, nothing is copied
    const uint64_t bytes = align_up(static_cast<uint64_t>(n) * dtype_size(call.dy.dtype),
                                    static_cast<uint64_t>(soc.block_bytes));
    uint64_t at = 0;
    if (!is_contiguous(call.dy.shape, call.dy.strides)) {
        w.dy_copy = true;
        w.dy_offset = at;
        at += bytes;
    }
    if (!is_contiguous(call.y.shape, call.y.strides)) {
        w.y_copy = true;
        w.y_offset = at;
        at += bytes;
    }
    if (!is_contiguous(call.out.shape, call.out.strides)) {
        w.out_copy = true;
        w.out_offset = at;
        at += bytes;
    }
    w.total = at;
    return w;
}

lsg_tiling_record plan(const Call& call, const SocProfile& soc) {
    lsg_tiling_record t;
    std::memset(&t, 0, sizeof t);

    // Merge to [d0, d1, d2] around the reduce axes (a 0-d tensor is [1]).
    std::vector<int64_t> dims = call.dy.shape;
    if (dims.empty()) dims.push_back(1);
    const std::vector<int64_t> norm = normalized_sorted(call.axes, call.dy.shape.size());
    const size_t first = static_cast<size_t>(norm.front());
    const size_t last = static_cast<size_t>(norm.back());
    t.d0 = prod(dims, 0, first);
    t.d1 = prod(dims, first, last + 1);
    t.d2 = prod(dims, last + 1, dims.size());

    t.schedule = t.d1 == 1 ? LSG_SCHED_NO_REDUCE
                 : t.d2 == 1 ? LSG_SCHED_REDUCE_TAIL
                             : LSG_SCHED_REDUCE_MID;
    std::snprintf(t.schedule_name, sizeof t.schedule_name, "%s", schedule_name(t.schedule));
    std::snprintf(t.soc_name, sizeof t.soc_name, "%s", soc.name);

    t.ub_blocks = ub_blocks_for(t.schedule);
    t.block_bytes = block_bytes_for(soc, t.schedule);
    t.block_elems = block_elems_for(t.block_bytes, call.dy.dtype, soc.block_bytes);
    t.rows = t.d0;
    t.row_len = t.schedule == LSG_SCHED_REDUCE_TAIL ? t.d1 : t.d2;

    t.is_contiguous = is_contiguous(call.dy.shape, call.dy.strides) &&
                      is_contiguous(call.y.shape, call.y.strides) &&
                      is_contiguous(call.out.shape, call.out.strides);
    t.is_empty = checked_numel(call.dy.shape) == 0;

    if (!t.is_empty) {
        t.cores_used = static_cast<int32_t>(std::min<int64_t>(t.rows, soc.vector_cores));
        t.rows_per_small_core = t.rows / t.cores_used;
        t.big_cores = static_cast<int32_t>(t.rows % t.cores_used);
        t.rows_per_big_core = t.rows_per_small_core + (t.big_cores ? 1 : 0);
        t.chunk_count = (t.row_len + t.block_elems - 1) / t.block_elems;
        t.tail_elems = t.row_len - (t.chunk_count - 1) * t.block_elems;
        t.is_small_shape = t.chunk_count == 1;
    }
    t.key = t.schedule | (t.is_small_shape << 8) | (t.is_contiguous << 9);
    t.workspace_bytes = workspace_layout(call, soc).total;
    return t;
}

}  // namespace lsg
