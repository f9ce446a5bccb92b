// LogSoftmaxGrad host tiling: parameter checks, shape merge, schedule, core split, UB plan and
// workspace.  Plain C++17, no vendor headers: the CPU twin (op/twin) and the Ascend C op_host
// (op/ascendc/op_host) are both built on it, so the two builds of the operator tile alike.
//
// enum lsg_reason, the status codes and the tiling record live in lsg_types.h (plain C).
#ifndef LSG_TILING_H
#define LSG_TILING_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lsg_types.h"

namespace lsg {

// A tensor as the checks see it.  strides are in elements; empty = contiguous.
struct TensorDesc {
    bool present = false;
    int32_t dtype = LSG_DT_FLOAT;
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;
};

struct Call {
    TensorDesc dy;  // gradOutput
    TensorDesc y;   // output (the forward result)
    TensorDesc out; // gradInput
    std::vector<int64_t> axes;
};

struct SocProfile {
    const char* name;
    const char* family;
    int32_t vector_cores;
    int64_t ub_bytes;
    int32_t block_bytes;
    bool bf16_cast;
};

int soc_count();
const SocProfile& soc_at(int index);
const SocProfile* find_soc(std::string_view name);  // exactly this name; nullptr if unknown
// The profile of `name`, else the first profile of its family known by the name's prefix
// (Ascend910B<digit>..., Ascend310B<digit>...: golden/soc.py family_of), for what the contract's
// checks need of a SoC (bf16 or not); nullptr when neither.  Never for values a test or an
// emulated platform needs exact (core counts, UB): those take find_soc.
const SocProfile* find_soc_or_family(std::string_view name);

struct Verdict {
    int32_t reason = LSG_REASON_OK;
    int32_t status = LSG_STATUS_OK;
    std::string message;
    bool ok() const { return reason == LSG_REASON_OK; }
};

// The table of reasons (reasons.def): a reason's name ("null_tensor") and status (161001), and
// the line that says why a call was rejected, "LogSoftmaxGrad: status S (reason R name): message",
// the one format the aclnn layer, the generated entry and the tiling function's log write and the
// farm reads (golden/reasons.py).  An id not in the table: name "" and status LSG_ERR_INNER.
const char* reason_name(int32_t reason);
int32_t reason_status(int32_t reason);
std::string reason_line(const Verdict& verdict);

// The parameter checks, in golden/contract.py's order.  An empty tensor passes (after all checks).
Verdict validate(const Call& call, const SocProfile& soc);

// The first two steps of validate alone, as an aclnn layer makes them before anything reads a
// descriptor: malformed descriptors (negative extents, strides not one per dimension: reason
// invalid_argument, outside the contract), then every tensor present (null_tensor, 161001).
Verdict check_descriptors(const Call& call);
Verdict check_present(const Call& call);

// How a host tiling function that refuses a call says why.  By default the verdict is one line on
// stderr (the log of the CANN build); while a RejectionCapture is alive on the calling thread it
// is kept there instead, so that an emulated framework can return it as the call's status.
void report_rejection(const Verdict& verdict);

class RejectionCapture {
public:
    RejectionCapture();
    ~RejectionCapture();
    RejectionCapture(const RejectionCapture&) = delete;
    RejectionCapture& operator=(const RejectionCapture&) = delete;

    bool reported = false;
    Verdict verdict;  // the last one reported

private:
    RejectionCapture* outer_;
};

// Where each contiguous copy of a strided view sits in the workspace.
struct WorkspaceLayout {
    bool dy_copy = false, y_copy = false, out_copy = false;
    uint64_t dy_offset = 0, y_offset = 0, out_offset = 0;
    uint64_t total = 0;
};

// The tiling of a validated call.  Precondition: validate(call, soc).ok().
lsg_tiling_record plan(const Call& call, const SocProfile& soc);
WorkspaceLayout workspace_layout(const Call& call, const SocProfile& soc);

// Pieces of the plan, exposed for the kernel builds and for tests.
int ub_blocks_for(int32_t schedule);
int64_t block_bytes_for(const SocProfile& soc, int32_t schedule);
int64_t block_elems_for(int64_t block_bytes, int32_t dtype, int32_t ub_block_bytes);
// Rows [start, start + count) of core `core` (big cores first).
void core_rows(const lsg_tiling_record& t, int64_t core, int64_t* start, int64_t* count);
// Elements in chunk c of a row (the last one is the tail).
inline int64_t chunk_len(const lsg_tiling_record& t, int64_t c) {
    return c == t.chunk_count - 1 ? t.tail_elems : t.block_elems;
}

int dtype_size(int32_t dtype);  // bytes; 0 for codes the operator does not know
const char* dtype_name(int32_t dtype);
const char* schedule_name(int32_t schedule);
bool is_contiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides);

}  // namespace lsg

#endif  // LSG_TILING_H
