// The emulated graph engine's inference (see inference.h).
#include "inference.h"

#include <algorithm>
#include <deque>

#include "host_tiling.h"
#include "register/op_def_registry.h"

namespace lsg::acpu {

namespace {

// Bounds of what the C ABI reads: this operator's node has 2 inputs and 1 output.
constexpr int32_t kMaxTensors = 8;

void put(char* message, size_t cap, const std::string& text) {
    if (message == nullptr || cap == 0) return;
    const size_t n = std::min(cap - 1, text.size());
    std::copy(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(n), message);
    message[n] = '\0';
}

}  // namespace

Inference run_inference(const std::vector<InferInput>& inputs, size_t outputs) {
    Inference r;
    const ops::OpDef* def = ops::OpDefFactory::EmuFind(kOpType);
    if (def == nullptr) {
        r.missing = std::string("no OpDef registered as ") + kOpType + " (OP_ADD did not run)";
        return r;
    }
    // The node's tensors, kept at stable addresses: the contexts hold pointers to them.
    std::deque<gert::Shape> in_shapes, out_shapes(outputs);
    std::vector<const gert::Shape*> in_ptrs;
    std::vector<gert::Shape*> out_ptrs;
    std::vector<ge::DataType> in_dtypes;
    for (const InferInput& t : inputs) {
        in_shapes.emplace_back();
        for (int64_t e : t.shape) in_shapes.back().AppendDim(e);
        in_ptrs.push_back(&in_shapes.back());
        in_dtypes.push_back(static_cast<ge::DataType>(t.dtype));
    }
    for (gert::Shape& s : out_shapes) out_ptrs.push_back(&s);

    std::vector<std::string> missing;
    if (const auto infer_shape = def->GetInferShape()) {
        gert::InferShapeContext context(in_ptrs, out_ptrs);
        r.shape_status = infer_shape(&context);
    } else {
        missing.push_back("no shape inference (SetInferShape)");
    }
    if (!out_shapes.empty())
        for (size_t i = 0; i < out_shapes[0].GetDimNum(); ++i)
            r.out_shape.push_back(out_shapes[0].GetDim(i));
    if (const auto infer_dtype = def->GetInferDataType()) {
        gert::InferDataTypeContext context(in_dtypes, outputs);
        r.dtype_status = infer_dtype(&context);
        r.out_dtype = static_cast<int32_t>(context.GetOutputDataType(0));
    } else {
        missing.push_back("no dtype inference (SetInferDataType)");
    }
    for (size_t i = 0; i < missing.size(); ++i)
        r.missing += (i ? " and " : std::string(kOpType) + "'s OpDef registers ") + missing[i];
    return r;
}

static int32_t infer_node(int32_t n_inputs, const int32_t* dtypes, const int32_t* ranks,
                   const int64_t* dims, int32_t n_outputs, uint32_t* shape_status,
                   int32_t* out_rank, int64_t* out_dims, int32_t out_dims_cap,
                   uint32_t* dtype_status, int32_t* out_dtype, char* message,
                   size_t message_cap) {
    if (n_inputs < 0 || n_inputs > kMaxTensors || n_outputs < 0 || n_outputs > kMaxTensors ||
        (n_inputs > 0 && (dtypes == nullptr || ranks == nullptr))) {
        put(message, message_cap,
            "a node of 0 to " + std::to_string(kMaxTensors) +
                " inputs and outputs, with dtypes and ranks for every input");
        return LSG_ERR_PARAM_INVALID;
    }
    std::vector<InferInput> inputs(static_cast<size_t>(n_inputs));
    const int64_t* at = dims;
    for (int32_t i = 0; i < n_inputs; ++i) {
        const int32_t rank = ranks[i];
        if (rank < 0 || rank > static_cast<int32_t>(gert::Shape::kMaxDimNum) ||
            (rank > 0 && at == nullptr)) {
            put(message, message_cap,
                "input " + std::to_string(i) + " has rank " + std::to_string(rank) +
                    ": a gert::Shape holds 0 to " + std::to_string(gert::Shape::kMaxDimNum) +
                    " extents, given in dims");
            return LSG_ERR_PARAM_INVALID;
        }
        inputs[static_cast<size_t>(i)].dtype = dtypes[i];
        if (rank > 0) inputs[static_cast<size_t>(i)].shape.assign(at, at + rank);
        if (rank > 0) at += rank;
    }
    const Inference r = run_inference(inputs, static_cast<size_t>(n_outputs));
    if (shape_status) *shape_status = r.shape_status;
    if (dtype_status) *dtype_status = r.dtype_status;
    if (out_dtype) *out_dtype = r.out_dtype;
    if (out_rank) *out_rank = static_cast<int32_t>(r.out_shape.size());
    if (out_dims)
        for (size_t i = 0; i < r.out_shape.size() && static_cast<int32_t>(i) < out_dims_cap; ++i)
            out_dims[i] = r.out_shape[i];
    put(message, message_cap, r.missing);
    return r.missing.empty() ? 0 : LSG_ERR_INNER;
}

int32_t infer_abi(int32_t n_inputs, const int32_t* dtypes, const int32_t* ranks,
                  const int64_t* dims, int32_t n_outputs, uint32_t* shape_status,
                  int32_t* out_rank, int64_t* out_dims, int32_t out_dims_cap,
                  uint32_t* dtype_status, int32_t* out_dtype, char* message, size_t message_cap) {
    // Both C entries (lsg_acpu_infer, lsg_emu_infer) are this function: no exception leaves it.
    try {
        return infer_node(n_inputs, dtypes, ranks, dims, n_outputs, shape_status, out_rank,
                          out_dims, out_dims_cap, dtype_status, out_dtype, message, message_cap);
    } catch (const std::exception& e) {
        put(message, message_cap, std::string("internal error: ") + e.what());
        return LSG_ERR_INNER;
    }
}

}  // namespace lsg::acpu
