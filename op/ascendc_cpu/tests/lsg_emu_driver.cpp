// A C entry point for the tests (tests/op/test_ascendc_emulation.py, through ctypes): one
// LogSoftmaxGrad call tiled by the shared tiling (lsg::validate + lsg::plan), its tiling struct
// filled exactly as op/ascendc/op_host/log_softmax_grad.cpp's TilingFunc fills it (through the
// host side of the real tiling header, log_softmax_grad_tiling.h), and run by emu::launch with a
// kernel the caller passes (the real one, or a planted copy).  Also the emulation's own
// conversions and ReduceSum, exposed for tests.
#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "emu/device.h"
#include "emu/fp16.h"
#include "kernel_operator.h"
#include "log_softmax_grad_tiling.h"
#include "tiling.h"

namespace {

constexpr int kOk = 0;
constexpr int kFault = 1;     // the emulated device raised a Fault (message)
constexpr int kRejected = 2;  // lsg::validate refused the call (message)
constexpr int kBadCall = 3;   // unknown SoC, bad arguments, an internal error (message)
constexpr int kPolicy = 4;    // the emulated device raised a PolicyFault (message)

void put(char* message, size_t len, const std::string& text) {
    if (message == nullptr || len == 0) return;
    const size_t n = std::min(len - 1, text.size());
    std::memcpy(message, text.data(), n);
    message[n] = '\0';
}

// The ReduceSum probe's kernel: dst[0] = ReduceSum of the n floats in GM (g_probe_n).
int32_t g_probe_n = 0;

void reduce_probe(uint8_t* x, uint8_t* out, uint8_t*, uint8_t*, uint8_t*) {
    using namespace AscendC;
    TPipe pipe;
    TBuf<TPosition::VECCALC> data, work, dst;
    const uint32_t bytes = static_cast<uint32_t>((g_probe_n * 4 + 31) / 32 * 32);
    pipe.InitBuffer(data, bytes);
    pipe.InitBuffer(work, bytes);
    pipe.InitBuffer(dst, 32);
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer(reinterpret_cast<float*>(x));
    og.SetGlobalBuffer(reinterpret_cast<float*>(out));
    LocalTensor<float> d = data.Get<float>(), w = work.Get<float>(), r = dst.Get<float>();
    DataCopyPad(d, xg, DataCopyExtParams{1, static_cast<uint32_t>(g_probe_n * 4), 0, 0, 0},
                DataCopyPadExtParams<float>{});
    ReduceSum<float>(r, d, w, g_probe_n);
    DataCopyPad(og, r, DataCopyExtParams{1, 4, 0, 0, 0});
}

}  // namespace

extern "C" {

// Runs `kernel` (a KernelFn) on one call.  dtype: an lsg_dtype code; shape[rank], axes[n_axes];
// dy, y: contiguous inputs; out: the output (its contents go in and come back).  reduce_order:
// an emu::ReduceSumOrder.  skip_validate: plan without the parameter checks (to reach a kernel
// the host would refuse, e.g. bf16 on Ascend310B).  record: the tiling (may be NULL).
// Returns 0, or 1 (Fault), 2 (rejected by the host checks), 3 (bad call), 4 (PolicyFault: a
// rule of the emulation's own); message says why.
EMU_API int lsg_emu_run(const void* kernel, const char* soc_name, int32_t dtype, int32_t rank,
                        const int64_t* shape, const int64_t* axes, int32_t n_axes, const void* dy,
                        const void* y, void* out, int32_t threads, int32_t reduce_order,
                        int32_t skip_validate, lsg_tiling_record* record, char* message,
                        size_t message_len) {
    put(message, message_len, "");
    try {
        const lsg::SocProfile* p = soc_name ? lsg::find_soc(soc_name) : nullptr;
        if (p == nullptr) {
            put(message, message_len, std::string("unknown SoC ") + (soc_name ? soc_name : "NULL"));
            return kBadCall;
        }
        if (kernel == nullptr || rank < 0 || (rank > 0 && shape == nullptr) || n_axes < 0 ||
            (n_axes > 0 && axes == nullptr)) {
            put(message, message_len, "bad arguments");
            return kBadCall;
        }
        lsg::Call call;
        for (lsg::TensorDesc* t : {&call.dy, &call.y, &call.out}) {
            t->present = true;
            t->dtype = dtype;
            t->shape.assign(shape, shape + rank);
        }
        call.axes.assign(axes, axes + n_axes);
        if (!skip_validate) {
            const lsg::Verdict v = lsg::validate(call, *p);
            if (!v.ok()) {
                put(message, message_len, v.message);
                return kRejected;
            }
        }
        const lsg_tiling_record t = lsg::plan(call, *p);
        if (record) *record = t;

        // As TilingFunc (op/ascendc/op_host/log_softmax_grad.cpp) fills and saves it.
        optiling::LogSoftmaxGradTilingData tiling;
        tiling.set_d0(t.d0);
        tiling.set_d1(t.d1);
        tiling.set_d2(t.d2);
        tiling.set_rowsPerBigCore(t.rows_per_big_core);
        tiling.set_rowsPerSmallCore(t.rows_per_small_core);
        tiling.set_blockBytes(t.block_bytes);
        tiling.set_blockElems(t.block_elems);
        tiling.set_chunkCount(t.chunk_count);
        tiling.set_tailElems(t.tail_elems);
        tiling.set_bigCores(t.big_cores);
        tiling.set_publicKey(t.key);
        const uint32_t block_dim = t.is_empty ? 1 : static_cast<uint32_t>(t.cores_used);
        const uint64_t tiling_key = static_cast<uint64_t>(t.schedule);
        std::vector<uint8_t> raw(4096, 0);
        tiling.SaveToBuffer(raw.data(), raw.size());
        raw.resize(tiling.GetDataSize());

        int64_t n = 1;
        for (int64_t e : call.dy.shape) n *= e;
        const size_t esz = static_cast<size_t>(lsg::dtype_size(dtype));
        const size_t bytes = static_cast<size_t>(n) * esz;
        emu::Soc soc{p->name, p->vector_cores, p->ub_bytes, p->block_bytes, p->bf16_cast,
                     static_cast<emu::ReduceSumOrder>(reduce_order)};
        std::vector<emu::GmBuffer> gm = {
            {const_cast<void*>(dy), bytes, "grad_output", false, esz},
            {const_cast<void*>(y), bytes, "output", false, esz},
            {out, bytes, "grad_input", true, esz},
            {nullptr, 0, "workspace", false, 1},
        };
        emu::launch(reinterpret_cast<emu::KernelFn>(const_cast<void*>(kernel)), block_dim, soc,
                    tiling_key, gm, raw.data(), raw.size(), threads);
        return kOk;
    } catch (const emu::PolicyFault& f) {
        put(message, message_len, f.what());
        return kPolicy;
    } catch (const emu::Fault& f) {
        put(message, message_len, f.what());
        return kFault;
    } catch (const std::exception& e) {
        put(message, message_len, std::string("internal error: ") + e.what());
        return kBadCall;
    }
}

// The tiling struct's size as the host side saves it (GetDataSize()).
EMU_API size_t lsg_emu_tiling_data_size() {
    return optiling::LogSoftmaxGradTilingData().GetDataSize();
}

// float -> half (dtype 1) or bfloat16 (dtype 27) in RoundMode `mode` (CAST_NONE = 0 .. CAST_ODD
// = 6), as the emulated Cast narrows.  Returns 0, or -1 for an unknown dtype or mode.
EMU_API int lsg_emu_narrow(int32_t dtype, int32_t mode, const float* in, uint16_t* out,
                           int64_t n) {
    static const emu::fp::Round kModes[] = {emu::fp::Round::kRint,  emu::fp::Round::kRint,
                                            emu::fp::Round::kFloor, emu::fp::Round::kCeil,
                                            emu::fp::Round::kRound, emu::fp::Round::kTrunc,
                                            emu::fp::Round::kOdd};
    if (mode < 0 || mode > 6 || (dtype != LSG_DT_FLOAT16 && dtype != LSG_DT_BF16)) return -1;
    for (int64_t i = 0; i < n; ++i)
        out[i] = dtype == LSG_DT_FLOAT16 ? emu::fp::f32_to_f16(in[i], kModes[mode])
                                         : emu::fp::f32_to_bf16(in[i], kModes[mode]);
    return 0;
}

// half (1) or bfloat16 (27) -> float, as the emulated Cast widens.
EMU_API int lsg_emu_widen(int32_t dtype, const uint16_t* in, float* out, int64_t n) {
    if (dtype != LSG_DT_FLOAT16 && dtype != LSG_DT_BF16) return -1;
    for (int64_t i = 0; i < n; ++i)
        out[i] = dtype == LSG_DT_FLOAT16 ? emu::fp::f16_to_f32(in[i]) : emu::fp::bf16_to_f32(in[i]);
    return 0;
}

// The emulated ReduceSum of x[0..n) on one core of `soc_name` in `order`; 0, or 1 (Fault) / 4
// (PolicyFault) with message.
EMU_API int lsg_emu_reduce_sum(const char* soc_name, int32_t order, const float* x, int32_t n,
                               float* result, char* message, size_t message_len) {
    put(message, message_len, "");
    const lsg::SocProfile* p = soc_name ? lsg::find_soc(soc_name) : nullptr;
    if (p == nullptr || n < 1) {
        put(message, message_len, "bad arguments");
        return kBadCall;
    }
    try {
        g_probe_n = n;
        float r = 0.0f;
        emu::Soc soc{p->name, p->vector_cores, p->ub_bytes, p->block_bytes, p->bf16_cast,
                     static_cast<emu::ReduceSumOrder>(order)};
        std::vector<emu::GmBuffer> gm = {
            {const_cast<float*>(x), static_cast<size_t>(n) * 4, "x", false, 4},
            {&r, 4, "sum", true, 4},
        };
        emu::launch(reduce_probe, 1, soc, 0, gm, nullptr, 0, 1);
        *result = r;
        return kOk;
    } catch (const emu::PolicyFault& f) {
        put(message, message_len, f.what());
        return kPolicy;
    } catch (const emu::Fault& f) {
        put(message, message_len, f.what());
        return kFault;
    }
}

}  // extern "C"
