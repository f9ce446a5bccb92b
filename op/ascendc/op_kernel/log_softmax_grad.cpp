// LogSoftmaxGrad kernel: out = dy - exp(y) * sum(dy, axes), all arithmetic in fp32.
//
// The host merges the shape to [d0, d1, d2] and picks one of three schedules (tiling key):
//   0 NO_REDUCE   (d1 == 1)  out = dy * (1 - exp(y)), elementwise over rows of d2
//   1 REDUCE_TAIL (d2 == 1)  each row of d1 elements: pass 1 sums dy, pass 2 writes out
//   2 REDUCE_MID             each row group of d1 lines x d2 columns: the columns are chunked,
//                            a column chunk is summed over the d1 lines side by side, in groups
//                            of MID_GROUP_LINES lines (pass 1), then every line is written (pass 2)
// Rows (d0) are split over cores, the first bigCores cores taking one row more.  A row (or
// column range) longer than one UB block is processed in chunks of blockElems; the last chunk
// holds tailElems, moved with DataCopyPad so that a tail that is not a multiple of 32 bytes is
// neither dropped nor overrun.  fp16/bf16 data is copied into the back half of its block and
// cast to fp32 over the whole block; results are cast back with round-to-nearest-even.
//
// The CPU twin (op/twin/kernel.cpp) runs the same loops; keep the two in step.
#include "kernel_operator.h"

using namespace AscendC;

namespace {

constexpr int32_t BUFFER_NUM = 2;        // double buffering
constexpr int64_t REDUCE_DST_FLOATS = 8;  // one 32-byte block for ReduceSum's result
constexpr int64_t REDUCE_WORK_AT = 64;    // ReduceSum's scratch starts one repeat (256 B) in
constexpr int64_t MID_GROUP_LINES = 64;   // REDUCE_MID: lines summed into one partial sum

template <typename T>
class KernelLogSoftmaxGrad {
public:
    __aicore__ inline KernelLogSoftmaxGrad() {}

    __aicore__ inline void Init(GM_ADDR dy, GM_ADDR y, GM_ADDR out,
                                const LogSoftmaxGradTilingData& tiling, int32_t schedule) {
        t_ = tiling;
        const int64_t core = GetBlockIdx();
        if (core < t_.bigCores) {
            rowStart_ = core * t_.rowsPerBigCore;
            rowCount_ = t_.rowsPerBigCore;
        } else {
            rowStart_ = t_.bigCores * t_.rowsPerBigCore + (core - t_.bigCores) * t_.rowsPerSmallCore;
            rowCount_ = t_.rowsPerSmallCore;
        }
        dyGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dy));
        yGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(y));
        outGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(out));

        // The UB plan of op/tiling (ub_blocks_for): NO_REDUCE 6 blocks (dy, y, out double-
        // buffered); REDUCE_TAIL 5 (dy x2, ReduceSum's block, y, out); REDUCE_MID 6 (dy x2, the
        // partial and the total column sums, y, out).
        const uint32_t bytes = static_cast<uint32_t>(t_.blockBytes);
        const int32_t yOutBuffers = schedule == 0 ? BUFFER_NUM : 1;
        pipe_.InitBuffer(dyQue_, BUFFER_NUM, bytes);
        pipe_.InitBuffer(yQue_, yOutBuffers, bytes);
        pipe_.InitBuffer(outQue_, yOutBuffers, bytes);
        if (schedule != 0) {
            pipe_.InitBuffer(reduceBuf_, bytes);
        }
        if (schedule == 2) {
            pipe_.InitBuffer(partBuf_, bytes);
        }
    }

    __aicore__ inline void ProcessNoReduce() {
        for (int64_t row = rowStart_; row < rowStart_ + rowCount_; ++row) {
            const int64_t base = row * t_.d2;
            for (int64_t c = 0; c < t_.chunkCount; ++c) {
                const int64_t n = ChunkLen(c);
                const int64_t at = base + c * t_.blockElems;
                CopyIn(dyQue_, dyGm_, at, n);
                CopyIn(yQue_, yGm_, at, n);
                LocalTensor<T> dyRaw = dyQue_.template DeQue<T>();
                LocalTensor<T> yRaw = yQue_.template DeQue<T>();
                LocalTensor<float> dy = ToFloat(dyRaw, n);
                LocalTensor<float> yf = ToFloat(yRaw, n);
                LocalTensor<T> outRaw = outQue_.template AllocTensor<T>();
                LocalTensor<float> out = outRaw.template ReinterpretCast<float>();
                Exp(yf, yf, n);
                Muls(yf, yf, -1.0f, n);
                Adds(yf, yf, 1.0f, n);  // 1 - exp(y): sum(dy) over an extent of 1 is dy itself
                Mul(out, dy, yf, n);
                dyQue_.FreeTensor(dyRaw);
                yQue_.FreeTensor(yRaw);
                CopyOut(outRaw, at, n);
            }
        }
    }

    __aicore__ inline void ProcessReduceTail() {
        LocalTensor<float> reduce = reduceBuf_.Get<float>();
        LocalTensor<float> reduceDst = reduce;
        LocalTensor<float> reduceWork = reduce[REDUCE_WORK_AT];
        for (int64_t row = rowStart_; row < rowStart_ + rowCount_; ++row) {
            const int64_t base = row * t_.d1;
            // Pass 1: sum(dy) over every chunk of the row, accumulated as an fp32 scalar.
            float sum = 0.0f;
            for (int64_t c = 0; c < t_.chunkCount; ++c) {
                const int64_t n = ChunkLen(c);
                CopyIn(dyQue_, dyGm_, base + c * t_.blockElems, n);
                LocalTensor<T> dyRaw = dyQue_.template DeQue<T>();
                LocalTensor<float> dy = ToFloat(dyRaw, n);
                ReduceSum<float>(reduceDst, dy, reduceWork, static_cast<int32_t>(n));
                const event_t vToS = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
                SetFlag<HardEvent::V_S>(vToS);
                WaitFlag<HardEvent::V_S>(vToS);
                sum += reduceDst.GetValue(0);
                const event_t sToV = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_V));
                SetFlag<HardEvent::S_V>(sToV);
                WaitFlag<HardEvent::S_V>(sToV);
                dyQue_.FreeTensor(dyRaw);
            }
            // Pass 2: out = dy - exp(y) * sum.
            for (int64_t c = 0; c < t_.chunkCount; ++c) {
                const int64_t n = ChunkLen(c);
                const int64_t at = base + c * t_.blockElems;
                CopyIn(dyQue_, dyGm_, at, n);
                CopyIn(yQue_, yGm_, at, n);
                LocalTensor<T> dyRaw = dyQue_.template DeQue<T>();
                LocalTensor<T> yRaw = yQue_.template DeQue<T>();
                LocalTensor<float> dy = ToFloat(dyRaw, n);
                LocalTensor<float> yf = ToFloat(yRaw, n);
                LocalTensor<T> outRaw = outQue_.template AllocTensor<T>();
                LocalTensor<float> out = outRaw.template ReinterpretCast<float>();
                Exp(yf, yf, n);
                Muls(yf, yf, sum, n);
                Sub(out, dy, yf, n);
                dyQue_.FreeTensor(dyRaw);
                yQue_.FreeTensor(yRaw);
                CopyOut(outRaw, at, n);
            }
        }
    }

    __aicore__ inline void ProcessReduceMid() {
        LocalTensor<float> acc = reduceBuf_.Get<float>();
        LocalTensor<float> part = partBuf_.Get<float>();
        for (int64_t row = rowStart_; row < rowStart_ + rowCount_; ++row) {
            const int64_t base = row * t_.d1 * t_.d2;
            for (int64_t c = 0; c < t_.chunkCount; ++c) {
                const int64_t n = ChunkLen(c);
                const int64_t col = c * t_.blockElems;
                // Pass 1: acc[j] = sum over the d1 lines of dy[line, col + j], a group of lines
                // at a time, so that rounding grows with group + d1 / group additions, not d1.
                Duplicate(acc, 0.0f, n);
                for (int64_t first = 0; first < t_.d1; first += MID_GROUP_LINES) {
                    const int64_t last = first + MID_GROUP_LINES < t_.d1 ? first + MID_GROUP_LINES : t_.d1;
                    Duplicate(part, 0.0f, n);
                    for (int64_t line = first; line < last; ++line) {
                        CopyIn(dyQue_, dyGm_, base + line * t_.d2 + col, n);
                        LocalTensor<T> dyRaw = dyQue_.template DeQue<T>();
                        LocalTensor<float> dy = ToFloat(dyRaw, n);
                        Add(part, part, dy, n);
                        dyQue_.FreeTensor(dyRaw);
                    }
                    Add(acc, acc, part, n);
                }
                // Pass 2: out = dy - exp(y) * acc, line by line.
                for (int64_t line = 0; line < t_.d1; ++line) {
                    const int64_t at = base + line * t_.d2 + col;
                    CopyIn(dyQue_, dyGm_, at, n);
                    CopyIn(yQue_, yGm_, at, n);
                    LocalTensor<T> dyRaw = dyQue_.template DeQue<T>();
                    LocalTensor<T> yRaw = yQue_.template DeQue<T>();
                    LocalTensor<float> dy = ToFloat(dyRaw, n);
                    LocalTensor<float> yf = ToFloat(yRaw, n);
                    LocalTensor<T> outRaw = outQue_.template AllocTensor<T>();
                    LocalTensor<float> out = outRaw.template ReinterpretCast<float>();
                    Exp(yf, yf, n);
                    Mul(yf, yf, acc, n);
                    Sub(out, dy, yf, n);
                    dyQue_.FreeTensor(dyRaw);
                    yQue_.FreeTensor(yRaw);
                    CopyOut(outRaw, at, n);
                }
            }
        }
    }

private:
    __aicore__ inline int64_t ChunkLen(int64_t c) const {
        return c == t_.chunkCount - 1 ? t_.tailElems : t_.blockElems;
    }

    // GM -> UB.  A 2-byte dtype lands in the back half of the block (element offset blockElems,
    // a 32-byte boundary by the tiling's alignment) so that it can be cast up in place.
    template <typename Q>
    __aicore__ inline void CopyIn(Q& que, GlobalTensor<T>& gm, int64_t at, int64_t n) {
        LocalTensor<T> raw = que.template AllocTensor<T>();
        const DataCopyExtParams params{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        const DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        if constexpr (sizeof(T) == 2) {
            DataCopyPad(raw[t_.blockElems], gm[at], params, pad);
        } else {
            DataCopyPad(raw, gm[at], params, pad);
        }
        que.EnQue(raw);
    }

    // The block as fp32: for a 2-byte dtype, cast its back half up over the whole block.
    __aicore__ inline LocalTensor<float> ToFloat(LocalTensor<T>& raw, int64_t n) {
        LocalTensor<float> f = raw.template ReinterpretCast<float>();
        if constexpr (sizeof(T) == 2) {
            Cast(f, raw[t_.blockElems], RoundMode::CAST_NONE, n);
            PipeBarrier<PIPE_V>();
        }
        return f;
    }

    // fp32 results -> dtype (round-to-nearest-even, in place, front to back) -> GM.
    __aicore__ inline void CopyOut(LocalTensor<T>& outRaw, int64_t at, int64_t n) {
        if constexpr (sizeof(T) == 2) {
            LocalTensor<float> f = outRaw.template ReinterpretCast<float>();
            PipeBarrier<PIPE_V>();
            Cast(outRaw, f, RoundMode::CAST_RINT, n);
        }
        outQue_.EnQue(outRaw);
        LocalTensor<T> ready = outQue_.template DeQue<T>();
        const DataCopyExtParams params{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        DataCopyPad(outGm_[at], ready, params);
        outQue_.FreeTensor(ready);
    }

    TPipe pipe_;
    TQue<QuePosition::VECIN, 1> dyQue_;
    TQue<QuePosition::VECIN, 1> yQue_;
    TQue<QuePosition::VECOUT, 1> outQue_;
    TBuf<QuePosition::VECCALC> reduceBuf_;  // REDUCE_TAIL: ReduceSum; REDUCE_MID: total sums
    TBuf<QuePosition::VECCALC> partBuf_;    // REDUCE_MID: partial sums of a group of lines
    GlobalTensor<T> dyGm_;
    GlobalTensor<T> yGm_;
    GlobalTensor<T> outGm_;
    LogSoftmaxGradTilingData t_;
    int64_t rowStart_ = 0;
    int64_t rowCount_ = 0;
};

}  // namespace

extern "C" __global__ __aicore__ void log_softmax_grad_custom(GM_ADDR grad_output, GM_ADDR output,
                                                              GM_ADDR grad_input,
                                                              GM_ADDR workspace, GM_ADDR tiling) {
#if defined(__NPU_ARCH__) && __NPU_ARCH__ == 2201
    // Vector cores only (Atlas A2); Atlas 200I/500 A2 (3002) does not support setting the type.
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
#endif
    GET_TILING_DATA(tilingData, tiling);
    KernelLogSoftmaxGrad<DTYPE_GRAD_OUTPUT> op;
    if (TILING_KEY_IS(0)) {
        op.Init(grad_output, output, grad_input, tilingData, 0);
        op.ProcessNoReduce();
    } else if (TILING_KEY_IS(1)) {
        op.Init(grad_output, output, grad_input, tilingData, 1);
        op.ProcessReduceTail();
    } else if (TILING_KEY_IS(2)) {
        op.Init(grad_output, output, grad_input, tilingData, 2);
        op.ProcessReduceMid();
    }
}
