// The emulated graph engine's inference: the shape and dtype inference functions the operator
// registered (OpDef::SetInferShape, SetInferDataType in op_host/log_softmax_grad.cpp), found
// through its OpDef as GE finds them, run on emulated gert::InferShapeContext and
// InferDataTypeContext holding a node's inputs and outputs by index, as GE's contexts do.
// A single-operator aclnn call never runs them; GE runs them on every node of a graph (torch_npu
// graph mode), before any check of the call.  The farm's infer cases (suites/matrix_layers.py).
#ifndef LSG_ACPU_INFERENCE_H
#define LSG_ACPU_INFERENCE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lsg::acpu {

// One input of the node: its dtype (ge::DataType code) and shape.
struct InferInput {
    int32_t dtype = 0;
    std::vector<int64_t> shape;
};

// What the registered functions said of the node.  A function the OpDef did not register is not
// run: its status stays GRAPH_FAILED, and `missing` names it.
struct Inference {
    uint32_t shape_status = 0xFFFFFFFF;  // InferShape's ge::graphStatus
    std::vector<int64_t> out_shape;      // output 0's shape after it (empty before)
    uint32_t dtype_status = 0xFFFFFFFF;  // InferDataType's ge::graphStatus
    int32_t out_dtype = 28;              // output 0's dtype after it (ge::DT_UNDEFINED before)
    std::string missing;                 // "" or what the OpDef did not register, for people
};

// Run InferShape, then InferDataType, of the OpDef registered as kOpType on a node with `inputs`
// (by index) and `outputs` outputs, each output's shape empty and dtype undefined before.
Inference run_inference(const std::vector<InferInput>& inputs, size_t outputs);

// The C ABI's form of run_inference (lsg_acpu_infer, lsg_emu_infer; see lsg_ascendc_cpu.h).
int32_t infer_abi(int32_t n_inputs, const int32_t* dtypes, const int32_t* ranks,
                  const int64_t* dims, int32_t n_outputs, uint32_t* shape_status,
                  int32_t* out_rank, int64_t* out_dims, int32_t out_dims_cap,
                  uint32_t* dtype_status, int32_t* out_dtype, char* message, size_t message_cap);

}  // namespace lsg::acpu

#endif  // LSG_ACPU_INFERENCE_H
