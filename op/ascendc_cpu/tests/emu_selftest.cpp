// The emulation's own tests: each rule the emulated device enforces, provoked by a small
// hand-written kernel and caught with its message and its kind (emu::Fault: CANN's rule or the
// device's; emu::PolicyFault: the emulation's own); each rule relaxed to CANN's, run without a
// fault; and the semantics the LogSoftmaxGrad kernel relies on (DataCopyPad's UB layout, Cast's
// round modes and in-place conversions, queue order, fresh UB, ReduceSum's orders and work).
// Prints "ok <name>" / "FAIL <name>: <why>" per check and exits 1 if any failed.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "emu/device.h"
#include "kernel_operator.h"

using namespace AscendC;

namespace {

int g_failed = 0;
int g_passed = 0;

void report(bool ok, const std::string& name, const std::string& why) {
    if (ok) {
        ++g_passed;
        std::printf("ok %s\n", name.c_str());
    } else {
        ++g_failed;
        std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
    }
}

const emu::Soc k910{"Ascend910B1", 48, 196608, 32, true};
const emu::Soc k310{"Ascend310B1", 1, 253952, 32, false};

// Two float inputs (kElems elements, or g_in0_elems for in0) and one float output, launched on
// `cores` cores.  g_policy: the last run threw a PolicyFault.
constexpr size_t kElems = 256;
std::vector<float> g_in0, g_in1, g_out;
size_t g_in0_elems = kElems;
std::vector<float> g_in0_values;  // when not empty: in0's values (else all 1.0f)
bool g_policy = false;

std::string run(emu::KernelFn kernel, uint32_t cores = 1, const emu::Soc& soc = k910,
                size_t out_elems = kElems, int threads = 1) {
    if (g_in0_values.empty())
        g_in0.assign(g_in0_elems, 1.0f);
    else
        g_in0 = g_in0_values;
    g_in1.assign(kElems, 2.0f);
    g_out.assign(out_elems, std::nanf(""));
    std::vector<emu::GmBuffer> gm = {
        {g_in0.data(), g_in0.size() * 4, "in0", false, 4},
        {g_in1.data(), kElems * 4, "in1", false, 4},
        {g_out.data(), out_elems * 4, "out", true, 4},
    };
    const uint32_t tiling[4] = {1, 2, 3, 4};
    g_policy = false;
    try {
        emu::launch(kernel, cores, soc, 0, gm, tiling, sizeof tiling, threads);
    } catch (const emu::PolicyFault& f) {
        g_policy = true;
        return f.what();
    } catch (const emu::Fault& f) {
        return f.what();
    }
    return "";
}

constexpr const char* kPolicyNote = " (emulation policy: CANN accepts this; ";

// The kernel must stop with a Fault (not a PolicyFault) whose message starts `prefix`.
void expect_fault(const std::string& name, emu::KernelFn kernel, const std::string& prefix,
                  uint32_t cores = 1, const emu::Soc& soc = k910) {
    const std::string got = run(kernel, cores, soc);
    report(!g_policy && got.rfind(prefix, 0) == 0 && got.find('\n') == std::string::npos &&
               got.find(kPolicyNote) == std::string::npos,
           name + " [Fault]",
           std::string("expected a Fault \"") + prefix + "...\", got " +
               (g_policy ? "a PolicyFault" : "") + " \"" + got + "\"");
}

// The kernel must stop with a PolicyFault whose message starts `prefix` and ends with the note
// "(emulation policy: CANN accepts this; <why>)".
void expect_policy(const std::string& name, emu::KernelFn kernel, const std::string& prefix,
                   uint32_t cores = 1, const emu::Soc& soc = k910, size_t out_elems = kElems) {
    const std::string got = run(kernel, cores, soc, out_elems);
    const size_t note = got.find(kPolicyNote);
    report(g_policy && got.rfind(prefix, 0) == 0 && got.find('\n') == std::string::npos &&
               note != std::string::npos && got.back() == ')' &&
               got.size() > note + std::strlen(kPolicyNote) + 10,
           name + " [PolicyFault]",
           std::string("expected a PolicyFault \"") + prefix +
               "... (emulation policy: ...)\", got " +
               (g_policy ? "" : "a Fault ") + "\"" + got + "\"");
}

// The kernel must run cleanly; out_elems 0 for a kernel that writes no output.
void expect_clean(const std::string& name, emu::KernelFn kernel, uint32_t cores = 1,
                  const emu::Soc& soc = k910, size_t out_elems = kElems) {
    const std::string got = run(kernel, cores, soc, out_elems);
    report(got.empty(), name, "expected no fault, got \"" + got + "\"");
}

// A correct copy kernel: out = in0 (+ in1 when g_add), 256 floats in 8-float rows per core.
bool g_add = false;
void copy_kernel(uint8_t* a, uint8_t* b, uint8_t* out, uint8_t*, uint8_t*) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> qa, qb;
    TQue<TPosition::VECOUT, 1> qo;
    pipe.InitBuffer(qa, 2, 1024);
    pipe.InitBuffer(qb, 2, 1024);
    pipe.InitBuffer(qo, 2, 1024);
    GlobalTensor<float> ga, gb, go;
    ga.SetGlobalBuffer(reinterpret_cast<float*>(a));
    gb.SetGlobalBuffer(reinterpret_cast<float*>(b));
    go.SetGlobalBuffer(reinterpret_cast<float*>(out));
    const int64_t per = static_cast<int64_t>(kElems) / GetBlockNum();
    const int64_t start = GetBlockIdx() * per;
    LocalTensor<float> ta = qa.AllocTensor<float>();
    LocalTensor<float> tb = qb.AllocTensor<float>();
    DataCopy(ta, ga[start], static_cast<uint32_t>(per));
    DataCopy(tb, gb[start], static_cast<uint32_t>(per));
    qa.EnQue(ta);
    qb.EnQue(tb);
    LocalTensor<float> xa = qa.DeQue<float>();
    LocalTensor<float> xb = qb.DeQue<float>();
    LocalTensor<float> o = qo.AllocTensor<float>();
    if (g_add)
        Add(o, xa, xb, static_cast<int32_t>(per));
    else
        Muls(o, xa, 1.0f, static_cast<int32_t>(per));
    qa.FreeTensor(xa);
    qb.FreeTensor(xb);
    qo.EnQue(o);
    LocalTensor<float> r = qo.DeQue<float>();
    DataCopy(go[start], r, static_cast<uint32_t>(per));
    qo.FreeTensor(r);
}

// The prologue many test kernels share: a TPipe with one VECCALC buffer of `bytes` named `name`.
#define ONE_TBUF(name, bytes)         \
    TPipe pipe;                       \
    TBuf<TPosition::VECCALC> name;    \
    pipe.InitBuffer(name, bytes)

// ... and two of the same size.
#define TWO_TBUFS(first, second, bytes)       \
    TPipe pipe;                               \
    TBuf<TPosition::VECCALC> first, second;   \
    pipe.InitBuffer(first, bytes);            \
    pipe.InitBuffer(second, bytes)

GlobalTensor<float> gm_floats(uint8_t* p) {
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<float*>(p));
    return g;
}

#define KERNEL(name) void name(uint8_t* a, uint8_t* b, uint8_t* out, uint8_t* ws, uint8_t* tiling)
#define UNUSED_ARGS static_cast<void>(a), static_cast<void>(b), static_cast<void>(out), \
                    static_cast<void>(ws), static_cast<void>(tiling)

KERNEL(ub_overflow) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(q, 2, 65536);
    pipe.InitBuffer(t, 65536 + 32);  // 196640 > 196608
}

KERNEL(datacopy_ragged) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g = gm_floats(a);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, g, 7);  // 28 B
}

KERNEL(ub_misaligned) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g = gm_floats(a);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t[1], g, 8);  // UB byte 4
}

KERNEL(gm_read_past_end) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g = gm_floats(a);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopyPad(t, g[250], DataCopyExtParams{1, 7 * 4, 0, 0, 0}, DataCopyPadExtParams<float>{});
}

KERNEL(gm_write_input) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g = gm_floats(a);
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate(t, 0.0f, 8);
    q.EnQue(t);
    LocalTensor<float> r = q.DeQue<float>();
    DataCopy(g, r, 8);
}

KERNEL(deque_empty) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 1024);
    q.AllocTensor<float>();
    q.DeQue<float>();
}

KERNEL(alloc_beyond) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 1024);
    q.AllocTensor<float>();
    q.AllocTensor<float>();
    q.AllocTensor<float>();
}

KERNEL(free_twice) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<float> t = q.AllocTensor<float>();
    q.FreeTensor(t);
    q.FreeTensor(t);
}

KERNEL(free_wrong_queue) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q, p;
    pipe.InitBuffer(q, 2, 1024);
    pipe.InitBuffer(p, 2, 1024);
    LocalTensor<float> t = q.AllocTensor<float>();
    p.FreeTensor(t);
}

KERNEL(use_after_free) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<float> t = q.AllocTensor<float>();
    q.FreeTensor(t);
    Duplicate(t, 1.0f, 8);
}

KERNEL(use_after_free_realloc) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    LocalTensor<float> t = q.AllocTensor<float>();
    q.FreeTensor(t);
    LocalTensor<float> u = q.AllocTensor<float>();  // the same buffer again
    Duplicate(u, 1.0f, 8);
    Duplicate(t, 1.0f, 8);  // the stale tensor
}

KERNEL(enque_beyond_depth) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<float> t = q.AllocTensor<float>();
    LocalTensor<float> u = q.AllocTensor<float>();
    q.EnQue(t);
    q.EnQue(u);
}

KERNEL(enque_foreign) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q, p;
    pipe.InitBuffer(q, 1, 1024);
    pipe.InitBuffer(p, 1, 1024);
    LocalTensor<float> t = q.AllocTensor<float>();
    p.EnQue(t);
}

KERNEL(used_while_enqueued) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    LocalTensor<float> t = q.AllocTensor<float>();
    q.EnQue(t);
    Duplicate(t, 1.0f, 8);
}

// GetValue and SetValue check the tensor's state in ub() itself (no ub_operand before them, as
// the copy and vector instructions have): a scalar access is refused like a vector one.
KERNEL(get_value_after_free) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<float> t = q.AllocTensor<float>();
    q.FreeTensor(t);
    (void)t.GetValue(0);
}

KERNEL(set_value_while_enqueued) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    LocalTensor<float> t = q.AllocTensor<float>();
    q.EnQue(t);
    t.SetValue(0, 1.0f);
}

KERNEL(vecin_read_early) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> o;
    pipe.InitBuffer(q, 1, 1024);
    pipe.InitBuffer(o, 1024);
    GlobalTensor<float> g = gm_floats(a);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, g, 8);
    LocalTensor<float> x = o.Get<float>();
    Exp(x, t, 8);  // no EnQue/DeQue between MTE2 and V
}

KERNEL(vecout_copied_early) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g = gm_floats(out);
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate(t, 1.0f, 8);
    DataCopyPad(g, t, DataCopyExtParams{1, 32, 0, 0, 0});  // no EnQue/DeQue between V and MTE3
}

KERNEL(bf16_cast) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    LocalTensor<float> f = t.Get<float>();
    LocalTensor<bfloat16_t> h = t.Get<bfloat16_t>()[256];
    Cast(f, h, RoundMode::CAST_NONE, 8);
}

KERNEL(bf16_narrow_odd) {
    UNUSED_ARGS;
    TWO_TBUFS(t, u, 1024);
    Duplicate(t.Get<float>(), 1.0f, 8);
    Cast(u.Get<bfloat16_t>(), t.Get<float>(), RoundMode::CAST_ODD, 8);
}

KERNEL(reduce_work_small) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t, w;
    pipe.InitBuffer(t, 4096);
    pipe.InitBuffer(w, 32);
    Duplicate(t.Get<float>(), 1.0f, 1000);
    // On Ascend310B 700 floats need max(1, 700 / 64) = 10 work elements; on Atlas A2 none.
    ReduceSum<float>(t.Get<float>(), t.Get<float>()[64], w.Get<float>(), 700);
}

KERNEL(reduce_work_overlaps_src) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t, d;
    pipe.InitBuffer(t, 4096);
    pipe.InitBuffer(d, 32);
    Duplicate(t.Get<float>(), 1.0f, 1000);
    ReduceSum<float>(d.Get<float>(), t.Get<float>(), t.Get<float>()[256], 300);
}

KERNEL(reduce_work_overlaps_dst) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t, w;
    pipe.InitBuffer(t, 4096);
    pipe.InitBuffer(w, 1024);
    Duplicate(t.Get<float>(), 1.0f, 300);
    ReduceSum<float>(w.Get<float>(), t.Get<float>(), w.Get<float>(), 300);
}

KERNEL(setflag_unwaited) {
    UNUSED_ARGS;
    TPipe pipe;
    const event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(e);
}

KERNEL(waitflag_unset) {
    UNUSED_ARGS;
    TPipe pipe;
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID1);
}

KERNEL(scalar_read_unsynced) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    LocalTensor<float> x = t.Get<float>();
    Duplicate(x, 1.0f, 8);
    static_cast<void>(x.GetValue(3));
}

KERNEL(scalar_read_synced) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    LocalTensor<float> x = t.Get<float>();
    Duplicate(x, 1.0f, 8);
    const event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(e);
    WaitFlag<HardEvent::V_S>(e);
    if (x.GetValue(3) != 1.0f) emu::rt::fault("scalar_read_synced: wrong value");
    x.SetValue(4, 2.0f);
    const event_t f = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_V));
    SetFlag<HardEvent::S_V>(f);
    WaitFlag<HardEvent::S_V>(f);
    Muls(x, x, 3.0f, 8);
}

KERNEL(vector_after_scalar_unsynced) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    LocalTensor<float> x = t.Get<float>();
    x.SetValue(0, 1.0f);
    Exp(x, x, 8);
}

// Each core writes elements [0, 64): two cores collide.
KERNEL(two_cores_one_element) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g = gm_floats(out);
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate(t, 1.0f, 64);
    q.EnQue(t);
    LocalTensor<float> r = q.DeQue<float>();
    DataCopyPad(g[GetBlockIdx() * 60], r, DataCopyExtParams{1, 64 * 4, 0, 0, 0});
    q.FreeTensor(r);
}

KERNEL(written_twice) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g = gm_floats(out);
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate(t, 1.0f, 64);
    q.EnQue(t);
    LocalTensor<float> r = q.DeQue<float>();
    DataCopy(g, r, 64);
    DataCopy(g[56], r, 8);
    q.FreeTensor(r);
}

// Writes only elements [0, 200) of 256.
KERNEL(unwritten) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g = gm_floats(out);
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate(t, 1.0f, 200);
    q.EnQue(t);
    LocalTensor<float> r = q.DeQue<float>();
    DataCopyPad(g, r, DataCopyExtParams{1, 200 * 4, 0, 0, 0});
    q.FreeTensor(r);
}

// A raw pointer write past the output: only the guard check sees it.
KERNEL(guard_overwrite) {
    UNUSED_ARGS;
    copy_kernel(a, b, out, ws, tiling);
    reinterpret_cast<float*>(out)[kElems + 3] = 0.0f;
}

KERNEL(partial_overlap) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    LocalTensor<float> x = t.Get<float>();
    Duplicate(x, 1.0f, 128);
    Add(x[8], x, x, 64);
}

KERNEL(cast_overwrites_src) {
    UNUSED_ARGS;
    ONE_TBUF(t, 2048);
    LocalTensor<half> h = t.Get<half>();
    Duplicate(h, half(1.0f), 128);
    Cast(t.Get<float>(), h, RoundMode::CAST_NONE, 128);  // front-to-front widening
}

KERNEL(beyond_buffer) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    LocalTensor<float> x = t.Get<float>();
    Exp(x, x, 257);
}

KERNEL(unassigned_tensor) {
    UNUSED_ARGS;
    TPipe pipe;
    LocalTensor<float> x;
    Duplicate(x, 1.0f, 8);
}

struct BigTiling {
    uint8_t bytes[64];
};

KERNEL(tiling_too_short) {
    UNUSED_ARGS;
    const BigTiling t = emu::rt::load_tiling<BigTiling>(tiling);
    static_cast<void>(t);
}

KERNEL(second_pipe) {
    UNUSED_ARGS;
    TPipe p1;
    TPipe p2;
}


// ---- the tensor-length rule, views, TBuf::Get, TPipe -------------------------------------------

// A view shortened with TBuf::Get<T>(len), then computed past: CANN bounds an operand by the
// tensor's own length, not by its buffer.
KERNEL(short_view_exp) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    LocalTensor<float> v = t.Get<float>(64);  // 256 B of a 1024-B buffer
    Duplicate(v, 1.0f, 64);
    Exp(v, v, 65);
}

KERNEL(short_view_add) {
    UNUSED_ARGS;
    TWO_TBUFS(t, u, 1024);
    LocalTensor<float> v = t.Get<float>(64);
    Add(u.Get<float>(), u.Get<float>(), v, 72);  // src1 is the short one
}

KERNEL(short_view_pad) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(a);
    LocalTensor<float> v = t.Get<float>(64);
    DataCopyPad(v, g, DataCopyExtParams{1, 65 * 4, 0, 0, 0}, DataCopyPadExtParams<float>{});
}

KERNEL(short_view_cast) {
    UNUSED_ARGS;
    TWO_TBUFS(t, f, 1024);
    LocalTensor<half> h = t.Get<half>(32);  // 64 B
    Cast(f.Get<float>(), h, RoundMode::CAST_NONE, 48);
}

// t[k]'s length is the parent's minus k.
KERNEL(offset_view_past) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    LocalTensor<float> x = t.Get<float>();
    Duplicate(x[200], 0.0f, 64);  // 56 elements left
}

KERNEL(offset_at_size) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    LocalTensor<float> x = t.Get<float>()[256];  // GetSize() is 256
    static_cast<void>(x);
}

KERNEL(offset_of_a_view) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    LocalTensor<float> x = t.Get<float>(64)[64];  // the view ends at 64, the buffer at 256
    static_cast<void>(x);
}

KERNEL(get_value_past) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    static_cast<void>(t.Get<float>(8).GetValue(8));
}

KERNEL(set_value_past) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    t.Get<float>()[250].SetValue(6, 1.0f);
}

KERNEL(tbuf_get_zero) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    static_cast<void>(t.Get<float>(0));
}

KERNEL(tbuf_get_ragged) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    static_cast<void>(t.Get<float>(7));
}

KERNEL(tbuf_get_beyond) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    static_cast<void>(t.Get<half>(528));  // 1056 B
}

KERNEL(initbuffer_num_range) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 65, 32);
}

KERNEL(initbuffer_num_zero) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 0, 32);
}

KERNEL(too_many_buffers) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> t[2];
    pipe.InitBuffer(q, 63, 32);
    pipe.InitBuffer(t[0], 32);  // 64 buffers: fine
    pipe.InitBuffer(t[1], 32);  // the 65th
}

KERNEL(ub_over_platform) {  // Ascend310B1: above the platform's 253952 B, within CANN's 262144
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(t, 253952 + 32);
}

KERNEL(ub_over_model) {  // Ascend310B1: above CANN's CPU model's 262144 B
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(t, 262144 + 32);
}

// ---- DataCopy / DataCopyPad ------------------------------------------------------------------

KERNEL(datacopy_count_past) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(a);
    DataCopy(t.Get<float>(64), g, 72);
}

KERNEL(datacopy_out_count_past) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(out);
    DataCopy(g, t.Get<float>()[192], 72);  // 64 elements left
}

KERNEL(datacopy_params_past) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(a);
    DataCopy(t.Get<float>(64), g, DataCopyParams{2, 3, 0, 1});  // 2 x 96 + 32 = 224 B: fits
    DataCopy(t.Get<float>(64), g, DataCopyParams{3, 2, 0, 1});  // 3 x 64 + 2 x 32 = 256 B: fits
    DataCopy(t.Get<float>(64), g, DataCopyParams{3, 3, 0, 0});  // 288 B
}

KERNEL(datacopy_block_count) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(a);
    DataCopy(t.Get<float>(), g, DataCopyParams{4096, 1, 0, 0});
}

KERNEL(datacopy_ub_to_ub_overlap) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    LocalTensor<float> x = t.Get<float>();
    Duplicate(x, 1.0f, 128);
    DataCopy(x[8], x, 64);
}

// Zero-length copies: CANN warns and copies nothing.
KERNEL(zero_length_copies) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g, o;
    g.SetGlobalBuffer(reinterpret_cast<float*>(a));
    o.SetGlobalBuffer(reinterpret_cast<float*>(out));
    LocalTensor<float> x = t.Get<float>();
    DataCopy(x, g, 0);
    DataCopy(o, x, 0);
    DataCopy(x, x[8], 0);
    DataCopy(x, g, DataCopyParams{0, 1, 0, 0});
    DataCopy(x, g, DataCopyParams{1, 0, 0, 0});
    DataCopy(o, x, DataCopyParams{0, 1, 0, 0});
    DataCopyPad(x, g, DataCopyExtParams{0, 32, 0, 0, 0}, DataCopyPadExtParams<float>{});
    DataCopyPad(x, g, DataCopyExtParams{1, 0, 0, 0, 0}, DataCopyPadExtParams<float>{});
    DataCopyPad(o, x, DataCopyExtParams{0, 32, 0, 0, 0});
    DataCopyPad(o, x, DataCopyExtParams{1, 0, 0, 0, 0});
    x.SetValue(0, 5.0f);  // the UB is untouched: no vector access to synchronise with
}

KERNEL(pad_block_len_range) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(a);
    DataCopyPad(t.Get<float>(), g, DataCopyExtParams{1, 2097152, 0, 0, 0},
                DataCopyPadExtParams<float>{});
}

KERNEL(pad_block_count_range) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(out);
    DataCopyPad(g, t.Get<float>(), DataCopyExtParams{4096, 4, 0, 0, 0});
}

KERNEL(pad_in_splits_element) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(a);
    DataCopyPad(t.Get<float>(), g, DataCopyExtParams{1, 30, 0, 0, 0},
                DataCopyPadExtParams<float>{});
}

// UB -> GM: blockLen % sizeof(T) is not checked by CANN; the GM write splitting an element is the
// farm's rule.
KERNEL(pad_out_splits_element) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(out);
    Duplicate(t.Get<float>(), 1.0f, 8);
    DataCopyPad(g, t.Get<float>(), DataCopyExtParams{1, 30, 0, 0, 0});
}

// The padding limits hold whether isPad is set or not.
KERNEL(pad_padding_not_set) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(a);
    DataCopyPad(t.Get<float>(), g, DataCopyExtParams{1, 32, 0, 0, 0},
                DataCopyPadExtParams<float>{false, 9, 0, 0.0f});
}

KERNEL(pad_in_unaligned) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(a);
    DataCopyPad(t.Get<float>()[1], g, DataCopyExtParams{1, 20, 0, 0, 0},
                DataCopyPadExtParams<float>{});
}

KERNEL(pad_out_unaligned) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(out);
    DataCopyPad(g, t.Get<float>()[1], DataCopyExtParams{1, 20, 0, 0, 0});
}

KERNEL(pad_in_past) {  // 2 bursts of AlignUp(36 + 8, 32) = 64 B and one 32-B gap: 160 > 128 B
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(a);
    DataCopyPad(t.Get<float>(32), g, DataCopyExtParams{2, 36, 0, 1, 0},
                DataCopyPadExtParams<float>{true, 1, 1, 0.0f});
}

KERNEL(pad_out_past) {  // 3 bursts of AlignUp(40, 32) = 64 B: 192 > 128 B
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    GlobalTensor<float> g = gm_floats(out);
    DataCopyPad(g, t.Get<float>(32), DataCopyExtParams{3, 40, 0, 0, 0});
}

// ---- vector instructions, Cast ---------------------------------------------------------------

KERNEL(vector_unaligned) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    Duplicate(t.Get<float>()[1], 1.0f, 8);
}

KERNEL(vector_negative_count) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    Muls(t.Get<float>(), t.Get<float>(), 2.0f, -1);
}

KERNEL(cast_widen_mode) {
    UNUSED_ARGS;
    TWO_TBUFS(t, u, 1024);
    Duplicate(t.Get<half>(), half(1.0f), 16);
    Cast(u.Get<float>(), t.Get<half>(), RoundMode::CAST_RINT, 16);
}

KERNEL(cast_bf16_none) {
    UNUSED_ARGS;
    TWO_TBUFS(t, u, 1024);
    Duplicate(t.Get<float>(), 1.0f, 8);
    Cast(u.Get<bfloat16_t>(), t.Get<float>(), RoundMode::CAST_NONE, 8);
}

// float -> half, the source at the lower address, 512 B > one repeat, running into dst.
KERNEL(cast_overlap_refused) {
    UNUSED_ARGS;
    ONE_TBUF(t, 2048);
    LocalTensor<float> f = t.Get<float>();
    Duplicate(f, 1.0f, 128);
    Cast(f[64].ReinterpretCast<half>(), f, RoundMode::CAST_RINT, 128);
}

// half -> float, the source (256 B: one repeat, so CANN accepts it) at the lower address; the
// first repeat's results overwrite the second repeat's source.
KERNEL(cast_overlap_accepted_by_cann) {
    UNUSED_ARGS;
    ONE_TBUF(t, 2048);
    LocalTensor<half> h = t.Get<half>();
    Duplicate(h, half(1.0f), 128);
    Cast(h[32].ReinterpretCast<float>(), h, RoundMode::CAST_NONE, 128);
}

// The kernel's in-place conversions: fp16 in the back half of a block, cast up over the whole
// block (CANN: the source starts at or after AlignUp(dst + n * 2, 32)); then the fp32 block cast
// down in place, front to back.  Both accepted, both exact here.
float g_inplace[4];
KERNEL(cast_in_place_both_ways) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(t, 4096);                       // a block of 1024 floats
    LocalTensor<float> f = t.Get<float>();
    LocalTensor<half> front = t.Get<half>();
    LocalTensor<half> back = t.Get<half>()[1024];   // its back half: 1024 halves
    int k = 0;
    for (int n : {1000, 1024}) {
        Duplicate(back, half(0.25f), n);
        Cast(f, back, RoundMode::CAST_NONE, n);     // widening in place
        Muls(f, f, 8.0f, n);
        Cast(front, f, RoundMode::CAST_RINT, n);    // narrowing in place
        const event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
        SetFlag<HardEvent::V_S>(e);
        WaitFlag<HardEvent::V_S>(e);
        g_inplace[k++] = static_cast<float>(front.GetValue(0));
        g_inplace[k++] = static_cast<float>(front.GetValue(static_cast<uint32_t>(n - 1)));
        const event_t g = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_V));
        SetFlag<HardEvent::S_V>(g);
        WaitFlag<HardEvent::S_V>(g);
    }
}

// ---- ReduceSum -------------------------------------------------------------------------------

KERNEL(reduce_count_zero) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    ReduceSum<float>(t.Get<float>(), t.Get<float>()[64], t.Get<float>()[128], 0);
}

KERNEL(reduce_count_above_ub) {
    UNUSED_ARGS;
    ONE_TBUF(t, 1024);
    ReduceSum<float>(t.Get<float>(), t.Get<float>()[64], t.Get<float>()[128], 49153);
}

KERNEL(reduce_src_past) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t, d, w;
    pipe.InitBuffer(t, 1024);
    pipe.InitBuffer(d, 32);
    pipe.InitBuffer(w, 64);
    ReduceSum<float>(d.Get<float>(), t.Get<float>(64), w.Get<float>(), 65);
}

KERNEL(reduce_src_unaligned) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t, d, w;
    pipe.InitBuffer(t, 1024);
    pipe.InitBuffer(d, 32);
    pipe.InitBuffer(w, 64);
    ReduceSum<float>(d.Get<float>(), t.Get<float>()[1], w.Get<float>(), 64);
}

KERNEL(reduce_dst_unaligned) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t, d, w;
    pipe.InitBuffer(t, 1024);
    pipe.InitBuffer(d, 32);
    pipe.InitBuffer(w, 64);
    Duplicate(t.Get<float>(), 1.0f, 64);
    LocalTensor<float> dst = d.Get<half>()[1].ReinterpretCast<float>();  // UB byte 2 of the TBuf
    ReduceSum<float>(dst, t.Get<float>(), w.Get<float>(), 64);
}

// Relaxed to CANN: dst at a 4-byte offset; on Atlas A2 a work tensor of one element that even
// overlaps src (CANN's 910B ReduceSum does not use it), left untouched.
float g_reduce[4];
KERNEL(reduce_relaxed) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t, d, w;
    pipe.InitBuffer(t, 4096);
    pipe.InitBuffer(d, 32);
    pipe.InitBuffer(w, 64);
    LocalTensor<float> x = t.Get<float>();
    LocalTensor<float> work = t.Get<float>()[1023];  // one element, inside src
    Duplicate(x, 0.5f, 1024);
    ReduceSum<float>(d.Get<float>()[1], x, work, 1000);
    const event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(e);
    WaitFlag<HardEvent::V_S>(e);
    g_reduce[0] = d.Get<float>().GetValue(1);
    g_reduce[1] = x.GetValue(1023);  // the "work" element: still src's value
}

// Ascend310B: dst at a 4-byte offset, work as CANN asks (15 elements for 1000 floats).
KERNEL(reduce_dst_offset) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t, d, w;
    pipe.InitBuffer(t, 4096);
    pipe.InitBuffer(d, 32);
    pipe.InitBuffer(w, 64);
    Duplicate(t.Get<float>(), 0.5f, 1024);
    ReduceSum<float>(d.Get<float>()[1], t.Get<float>(), w.Get<float>()[1], 1000);
    const event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(e);
    WaitFlag<HardEvent::V_S>(e);
    g_reduce[2] = d.Get<float>().GetValue(1);
}

KERNEL(reduce_work_overlaps_src_310b) {  // the work as long as CANN asks, inside src
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t, d;
    pipe.InitBuffer(t, 4096);
    pipe.InitBuffer(d, 32);
    Duplicate(t.Get<float>(), 0.5f, 1024);
    ReduceSum<float>(d.Get<float>(), t.Get<float>(), t.Get<float>()[992], 1000);
}

// Ascend310B: work of one element where CANN's implementation writes two (count % 64 != 0).
KERNEL(reduce_work_one_element) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t, d, w;
    pipe.InitBuffer(t, 1024);
    pipe.InitBuffer(d, 32);
    pipe.InitBuffer(w, 64);
    Duplicate(t.Get<float>(), 1.0f, 100);
    ReduceSum<float>(d.Get<float>(), t.Get<float>(), w.Get<float>()[15], 100);
}

KERNEL(reduce_work_one_element_no_tail) {  // count 64: one repeat, no tail: one element is enough
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t, d, w;
    pipe.InitBuffer(t, 1024);
    pipe.InitBuffer(d, 32);
    pipe.InitBuffer(w, 64);
    Duplicate(t.Get<float>(), 1.0f, 100);
    ReduceSum<float>(d.Get<float>(), t.Get<float>(), w.Get<float>()[15], 64);  // writes work[0]
}

// CANN's order on Ascend310B over 12688 floats (one REDUCE_TAIL block of Ascend310B1): 198 full
// repeats and a 16-element tail.  x[0] = 1, x[192 * 64] = 2^-24 (the last, partial group of
// repeat sums), x[12672] = 2^-24 (the tail): body + tail = (1 + 2^-24) + 2^-24 = 1 (ties to
// even, twice); with the tail inside the last group (kTreeRepeats) 1 + 2^-23.  In sequence
// (Atlas A2): 1.  Also the work tensor as CANN's implementation leaves it.
constexpr int32_t kN310 = 12688;
float g_sum = 0.0f;
float g_work[8];
KERNEL(reduce_12688) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> data, work, dst;
    pipe.InitBuffer(data, kN310 * 4);
    pipe.InitBuffer(work, 200 * 4);  // RoundUp(198, 8)
    pipe.InitBuffer(dst, 32);
    GlobalTensor<float> g = gm_floats(a);
    DataCopyPad(data.Get<float>(), g, DataCopyExtParams{1, kN310 * 4, 0, 0, 0},
                DataCopyPadExtParams<float>{});
    Duplicate(work.Get<float>(), -1.0f, 200);
    ReduceSum<float>(dst.Get<float>(), data.Get<float>(), work.Get<float>(), kN310);
    const event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(e);
    WaitFlag<HardEvent::V_S>(e);
    g_sum = dst.Get<float>().GetValue(0);
    const int idx[8] = {0, 1, 2, 3, 4, 100, 197, 198};
    for (int i = 0; i < 8; ++i)
        g_work[i] = work.Get<float>().GetValue(static_cast<uint32_t>(idx[i]));
}

// ---- semantics -------------------------------------------------------------------------------

// DataCopyPad GM -> UB of 5 floats: the block's other 3 floats are copies of the first element;
// with isPad, paddingValue; two bursts with a GM gap of 4 B and a UB gap of one block.
std::vector<float> g_seen;
KERNEL(pad_layout) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g = gm_floats(a);
    for (int pass = 0; pass < 2; ++pass) {
        LocalTensor<float> t = q.AllocTensor<float>();
        if (pass == 0)
            DataCopyPad(t, g, DataCopyExtParams{1, 5 * 4, 0, 0, 0}, DataCopyPadExtParams<float>{});
        else
            DataCopyPad(t, g, DataCopyExtParams{2, 5 * 4, 4, 1, 0},
                        DataCopyPadExtParams<float>{true, 1, 1, -7.0f});
        q.EnQue(t);
        LocalTensor<float> r = q.DeQue<float>();
        for (uint32_t i = 0; i < 24; ++i) g_seen.push_back(r.GetValue(i));
        q.FreeTensor(r);
    }
}

std::vector<float> g_pad_in;
void check_pad_layout() {
    g_seen.clear();
    g_pad_in.resize(kElems);
    for (size_t i = 0; i < kElems; ++i) g_pad_in[i] = static_cast<float>(i + 1);
    std::vector<float> out(kElems);
    std::vector<emu::GmBuffer> gm = {{g_pad_in.data(), kElems * 4, "in", false, 4},
                                     {nullptr, 0, "unused", false, 4},
                                     {out.data(), 0, "out", true, 4}};
    std::string err;
    try {
        emu::launch(pad_layout, 1, k910, 0, gm, nullptr, 0, 1);
    } catch (const emu::Fault& f) {
        err = f.what();
    }
    const float n = std::nanf("");
    const std::vector<float> want = {
        // pass 0: 5 elements, 3 fillers (the first element), then fresh UB (NaN)
        1, 2, 3, 4, 5, 1, 1, 1, n, n, n, n, n, n, n, n, n, n, n, n, n, n, n, n,
        // pass 1: [pad, 1..5, pad, fill] [gap block] [pad, 7..11 (after a 4-byte GM gap), pad, fill]
        -7, 1, 2, 3, 4, 5, -7, -7, n, n, n, n, n, n, n, n, -7, 7, 8, 9, 10, 11, -7, -7};
    bool ok = err.empty() && g_seen.size() == want.size();
    for (size_t i = 0; ok && i < want.size(); ++i)
        ok = std::isnan(want[i]) ? std::isnan(g_seen[i]) : g_seen[i] == want[i];
    std::string got;
    for (float v : g_seen) got += std::to_string(v) + " ";
    report(ok, "DataCopyPad GM -> UB layout (filler, padding, strides)", err + " got " + got);
}

// Cast float -> half on the documentation's example, 0.5 + 2^-12, and its negative.
uint16_t g_cast_bits[14];
KERNEL(cast_modes) {
    UNUSED_ARGS;
    TWO_TBUFS(f, h, 64);
    LocalTensor<float> x = f.Get<float>();
    Duplicate(x, 0.5f + std::ldexp(1.0f, -12), 1);
    Duplicate(x[8], -(0.5f + std::ldexp(1.0f, -12)), 1);
    const RoundMode modes[] = {RoundMode::CAST_NONE,  RoundMode::CAST_RINT, RoundMode::CAST_FLOOR,
                               RoundMode::CAST_CEIL,  RoundMode::CAST_ROUND, RoundMode::CAST_TRUNC,
                               RoundMode::CAST_ODD};
    for (int m = 0; m < 7; ++m) {
        for (int s = 0; s < 2; ++s) {
            LocalTensor<half> y = h.Get<half>();
            Cast(y, x[s * 8], modes[m], 1);
            const event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
            SetFlag<HardEvent::V_S>(e);
            WaitFlag<HardEvent::V_S>(e);
            g_cast_bits[m * 2 + s] = y.GetValue(0).bits;
            const event_t g = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_V));
            SetFlag<HardEvent::S_V>(g);
            WaitFlag<HardEvent::S_V>(g);
        }
    }
}

void check_cast_modes() {
    const std::string err = run(cast_modes, 1, k910, 0);
    // 0.5 = 0x3800; 0.5 + 2^-11 = 0x3801; the sign bit 0x8000.
    const uint16_t want[14] = {0x3800, 0xb800, 0x3800, 0xb800, 0x3800, 0xb801, 0x3801,
                               0xb800, 0x3801, 0xb801, 0x3800, 0xb800, 0x3801, 0xb801};
    bool ok = err.empty();
    std::string got;
    for (int i = 0; i < 14; ++i) {
        ok = ok && g_cast_bits[i] == want[i];
        char buf[16];
        std::snprintf(buf, sizeof buf, "%04x ", g_cast_bits[i]);
        got += buf;
    }
    report(ok, "Cast float -> half round modes (the documentation's 0.5 + 2^-12)", err + " got " + got);
}

// Queues: FIFO order of DeQue, buffers handed out in turn.
uint32_t g_addr[4];
KERNEL(queue_order) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<float> t = q.AllocTensor<float>();
    LocalTensor<float> u = q.AllocTensor<float>();
    q.EnQue(t);
    q.EnQue(u);
    g_addr[0] = static_cast<uint32_t>(t.GetPhyAddr());
    g_addr[1] = static_cast<uint32_t>(u.GetPhyAddr());
    LocalTensor<float> first = q.DeQue<float>();
    g_addr[2] = static_cast<uint32_t>(first.GetPhyAddr());
    LocalTensor<float> second = q.DeQue<float>();
    g_addr[3] = static_cast<uint32_t>(second.GetPhyAddr());
    q.FreeTensor(first);
    q.FreeTensor(second);
}

// A fresh TBuf reads as NaN (0xFF bytes).
uint32_t g_fresh = 0;
KERNEL(fresh_ub) {
    UNUSED_ARGS;
    ONE_TBUF(t, 64);
    const float v = t.Get<float>().GetValue(5);
    std::memcpy(&g_fresh, &v, 4);
}

// A queue buffer allocated again reads as NaN where the last allocation wrote it (by the vector
// pipe, by a GM copy, by the scalar unit), and where nothing wrote it.
float g_again[4];
KERNEL(realloc_reads_nan) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, gm_floats(a), 8);
    Duplicate(t[8], 1.0f, 64);
    const event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(e);
    WaitFlag<HardEvent::V_S>(e);
    t.SetValue(200, 2.0f);
    q.FreeTensor(t);
    q.EnQue(q.AllocTensor<float>());  // the same buffer again
    LocalTensor<float> u = q.DeQue<float>();
    const uint32_t at[4] = {3, 40, 200, 250};
    for (int i = 0; i < 4; ++i) g_again[i] = u.GetValue(at[i]);
    q.FreeTensor(u);
}

// The same after writes in more places than the emulation tracks apart (device.cpp DirtyRanges:
// the closest merge), the last address first, one by the vector pipe: the buffer allocated again
// reads as NaN in every element, in each of two rounds (the second after a refill).
bool g_scattered_nan[2] = {false, false};
KERNEL(realloc_scattered_reads_nan) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    for (int round = 0; round < 2; ++round) {
        LocalTensor<float> t = q.AllocTensor<float>();
        Duplicate(t[96], 1.0f, 8);
        const event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
        SetFlag<HardEvent::V_S>(e);
        WaitFlag<HardEvent::V_S>(e);
        for (uint32_t at : {255u, 190u, 130u, 70u, 40u, 10u, 1u}) t.SetValue(at - round, 2.0f);
        q.FreeTensor(t);
        q.EnQue(q.AllocTensor<float>());
        LocalTensor<float> u = q.DeQue<float>();
        bool nan = true;
        for (uint32_t i = 0; i < 256; ++i) nan = nan && std::isnan(u.GetValue(i));
        g_scattered_nan[round] = nan;
        q.FreeTensor(u);
        const event_t s = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_V));
        SetFlag<HardEvent::S_V>(s);  // the next round's vector write after these scalar reads
        WaitFlag<HardEvent::S_V>(s);
    }
}

// A GM buffer of unspecified content (the system workspace): the kernel may write it and read
// back what it wrote; a read of a byte it did not write is a policy fault naming it (the
// emulation would present zeros where a device holds garbage); an output cannot be one.
float g_ws_seen[8];
uint32_t g_ws_written = 0;  // floats written at ws[64] before the 8 are read back
KERNEL(read_workspace) {
    static_cast<void>(a), static_cast<void>(b), static_cast<void>(out), static_cast<void>(tiling);
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> to_gm;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(to_gm, 1, 64);
    pipe.InitBuffer(t, 64);
    if (g_ws_written) {
        LocalTensor<float> w = to_gm.AllocTensor<float>();
        Duplicate(w, 5.0f, 8);
        to_gm.EnQue(w);
        LocalTensor<float> r = to_gm.DeQue<float>();
        DataCopyPad(gm_floats(ws)[64], r, DataCopyExtParams{1, g_ws_written * 4, 0, 0, 0});
        to_gm.FreeTensor(r);
        PipeBarrier<PIPE_ALL>();
    }
    LocalTensor<float> l = t.Get<float>();
    DataCopy(l, gm_floats(ws)[64], 8);
    PipeBarrier<PIPE_ALL>();
    for (int i = 0; i < 8; ++i) g_ws_seen[i] = l.GetValue(i);
}

std::string run_with_workspace(std::vector<float>& ws, bool unspecified, bool output) {
    std::vector<float> in(kElems, 1.0f);
    std::vector<emu::GmBuffer> gm = {{in.data(), kElems * 4, "in0", false, 4},
                                     {in.data(), kElems * 4, "in1", false, 4},
                                     {nullptr, 0, "out", true, 4},
                                     {ws.data(), ws.size() * 4, "workspace", output, 4,
                                      unspecified}};
    g_policy = false;
    try {
        emu::launch(read_workspace, 1, k910, 0, gm, nullptr, 0, 1);
    } catch (const emu::PolicyFault& f) {
        g_policy = true;
        return f.what();
    } catch (const emu::Fault& f) {
        return f.what();
    }
    return "";
}

void check_workspace() {
    std::vector<float> ws(1024, 3.0f);
    g_ws_written = 0;
    std::string err = run_with_workspace(ws, true, false);
    report(err.rfind("DataCopy: GM read of content nothing wrote: bytes [256, 288) of workspace, "
                     "whose content is unspecified; byte 256 was never written, core 0 "
                     "(emulation policy: CANN accepts this; ",
                     0) == 0 && g_policy,
           "a read of a GM buffer of unspecified content is a policy fault naming it", err);
    g_ws_written = 4;
    err = run_with_workspace(ws, true, false);
    report(err.rfind("DataCopy: GM read of content nothing wrote: bytes [256, 288) of workspace, "
                     "whose content is unspecified; byte 272 was never written, core 0 ",
                     0) == 0 && g_policy,
           "a read of unspecified GM the kernel wrote only in part names the first byte it did "
           "not write", err);
    g_ws_written = 8;
    err = run_with_workspace(ws, true, false);
    bool read_back = err.empty();
    for (float v : g_ws_seen) read_back = read_back && v == 5.0f;
    report(read_back, "what the kernel wrote to unspecified GM it reads back", err);
    g_ws_written = 0;
    err = run_with_workspace(ws, false, false);
    bool copied = err.empty();
    for (float v : g_ws_seen) copied = copied && v == 3.0f;
    report(copied, "a GM buffer is copied", err);
    err = run_with_workspace(ws, true, true);
    report(err.rfind("launch: an output's content cannot be unspecified: workspace", 0) == 0,
           "an output of unspecified content is refused", err);
}

}  // namespace

// ReduceSum over 12688 floats: CANN's order on Ascend310B (body + tail) against the old one (the
// tail inside the last tree) and Atlas A2's (in sequence); and the work tensor CANN leaves.
void check_reduce_12688() {
    const emu::Soc k310_old{"Ascend310B1", 1, 253952, 32, false, emu::ReduceSumOrder::kTreeRepeats};
    const float tiny = std::ldexp(1.0f, -24);
    g_in0_values.assign(kN310, 0.0f);
    g_in0_values[0] = 1.0f;
    g_in0_values[192 * 64] = tiny;
    g_in0_values[12672] = tiny;
    std::string err = run(reduce_12688, 1, k310, 0);
    report(err.empty() && g_sum == 1.0f,
           "ReduceSum on Ascend310B, 12688 floats: body + tail (CANN's order)",
           err + " got " + std::to_string(g_sum));
    err = run(reduce_12688, 1, k310_old, 0);
    report(err.empty() && g_sum == 1.0f + 2 * tiny,
           "ReduceSum, 12688 floats, the tail in the last tree (kTreeRepeats): another last bit",
           err + " got " + std::to_string(g_sum));
    err = run(reduce_12688, 1, k910, 0);
    bool untouched = true;
    for (float w : g_work) untouched = untouched && w == -1.0f;
    report(err.empty() && g_sum == 1.0f && untouched,
           "ReduceSum on Atlas A2, 12688 floats: in sequence, the work tensor untouched", err);

    // Small integers: every sum exact, so the work tensor's contents can be computed directly.
    g_in0_values.resize(kN310);
    for (int i = 0; i < kN310; ++i) g_in0_values[i] = static_cast<float>((i * 7) % 11 - 5);
    auto sum = [](int lo, int hi) {
        double t = 0;
        for (int i = lo; i < hi; ++i) t += g_in0_values[i];
        return static_cast<float>(t);
    };
    auto repeats = [&](int lo, int hi) {  // the sum of the repeat sums S[lo..hi)
        return sum(lo * 64, hi * 64);
    };
    err = run(reduce_12688, 1, k310, 0);
    const float want[8] = {sum(0, kN310),     // work[0]: body + tail, the result
                           sum(12672, kN310), // work[1]: the tail
                           repeats(128, 192), // work[2]: the third group of 64 repeat sums
                           repeats(192, 198), // work[3]: the last, partial group
                           repeats(4, 5),     // work[4..197]: the repeat sums
                           repeats(100, 101),
                           repeats(197, 198),
                           -1.0f};            // work[198]: not written
    bool ok = err.empty() && g_sum == want[0];
    std::string got;
    for (int i = 0; i < 8; ++i) {
        ok = ok && g_work[i] == want[i];
        got += std::to_string(g_work[i]) + "/" + std::to_string(want[i]) + " ";
    }
    report(ok, "ReduceSum on Ascend310B: the work tensor as CANN's implementation leaves it",
           err + " got/want " + got);
    g_in0_values.clear();
}

int main() {
    expect_clean("a correct copy kernel on 4 cores", copy_kernel, 4);
    g_add = true;
    expect_clean("a correct add kernel on 8 cores", copy_kernel, 8);
    report(g_out[0] == 3.0f && g_out[255] == 3.0f, "the add kernel's output", "wrong values");
    {
        const std::string got = run(copy_kernel, 8, k910, kElems, 4);
        report(got.empty() && g_out[100] == 3.0f, "the add kernel on 4 host threads", got);
    }
    g_add = false;

    expect_fault("UB overflow", ub_overflow,
                 "TPipe::InitBuffer: UB overflow: the buffers need 196640 B, Ascend910B1 has "
                 "196608 B of UB");
    expect_fault("DataCopy ragged length", datacopy_ragged,
                 "DataCopy: length not a multiple of 32 bytes: 7 elements x 4 B = 28 B");
    expect_fault("UB address not aligned", ub_misaligned,
                 "DataCopy: UB address not 32-byte aligned: dst at UB byte 4");
    expect_fault("GM read past the end", gm_read_past_end,
                 "DataCopyPad: GM access outside the tensor: read of bytes [1000, 1028) of in0, "
                 "which has 1024 B");
    expect_policy("GM write to an input", gm_write_input,
                 "DataCopy: GM write to an input tensor: bytes [0, 32) of in0");
    expect_fault("DeQue on an empty queue", deque_empty, "TQue::DeQue: queue empty");
    expect_fault("AllocTensor beyond the buffers", alloc_beyond,
                 "TQue::AllocTensor: no free buffer: all 2 buffers");
    expect_fault("FreeTensor twice", free_twice, "TQue::FreeTensor: tensor freed twice");
    expect_fault("FreeTensor to the wrong queue", free_wrong_queue,
                 "TQue::FreeTensor: tensor belongs to another queue");
    expect_fault("use after FreeTensor", use_after_free,
                 "Duplicate: queue tensor used after FreeTensor: dst");
    expect_fault("use after FreeTensor, buffer reallocated", use_after_free_realloc,
                 "Duplicate: queue tensor used after FreeTensor: dst");
    expect_fault("EnQue beyond the depth", enque_beyond_depth, "TQue::EnQue: queue full");
    expect_fault("EnQue to a foreign queue", enque_foreign,
                 "TQue::EnQue: tensor not allocated from this queue");
    expect_fault("use between EnQue and DeQue", used_while_enqueued,
                 "Duplicate: queue tensor used between EnQue and DeQue: dst");
    expect_fault("GetValue after FreeTensor", get_value_after_free,
                 "LocalTensor::GetValue: queue tensor used after FreeTensor: tensor");
    expect_fault("SetValue between EnQue and DeQue", set_value_while_enqueued,
                 "LocalTensor::SetValue: queue tensor used between EnQue and DeQue: tensor");
    expect_fault("VECIN read before EnQue/DeQue", vecin_read_early,
                 "Exp: VECIN tensor read before EnQue/DeQue: src");
    expect_fault("VECOUT copied out before EnQue/DeQue", vecout_copied_early,
                 "DataCopyPad: VECOUT tensor copied out before EnQue/DeQue: src");
    expect_policy("bf16 Cast on Ascend310B", bf16_cast,
                 "Cast: bf16 Cast not available on Ascend310B1: bfloat16_t -> float", 1, k310);
    expect_clean("bf16 Cast on Ascend910B", bf16_cast, 1, k910, 0);
    expect_fault("float -> bf16 with CAST_ODD", bf16_narrow_odd,
                 "Cast: round mode not supported: CAST_ODD for float -> bfloat16_t");
    expect_fault("ReduceSum work too small on Ascend310B", reduce_work_small,
                 "ReduceSum: work tensor too small: work needs 40 B (count 700: max(1, floor(count "
                 "/ 64)) = 10 elements), the tensor has 32 B (GetSize() 8 of float), core 0",
                 1, k310);
    expect_clean("ReduceSum work not checked on Atlas A2", reduce_work_small, 1, k910, 0);
    expect_policy("ReduceSum work overlaps src on Ascend310B", reduce_work_overlaps_src,
                  "ReduceSum: work overlaps src: work UB [1024, 1040), src UB [0, 1200)", 1, k310);
    expect_clean("ReduceSum work overlapping src on Atlas A2", reduce_work_overlaps_src, 1, k910,
                 0);
    expect_policy("ReduceSum work overlaps dst on Ascend310B", reduce_work_overlaps_dst,
                  "ReduceSum: work overlaps dst", 1, k310);
    expect_clean("ReduceSum work on dst on Atlas A2", reduce_work_overlaps_dst, 1, k910, 0);
    expect_fault("SetFlag without WaitFlag", setflag_unwaited,
                 "SetFlag<HardEvent::V_S>: no matching WaitFlag by the end of the kernel: event "
                 "id 0");
    expect_fault("WaitFlag without SetFlag", waitflag_unset,
                 "WaitFlag<HardEvent::MTE2_V>: no matching SetFlag: event id 1");
    expect_fault("scalar read of a vector write, unsynchronised", scalar_read_unsynced,
                 "LocalTensor::GetValue: scalar read of a vector write without "
                 "SetFlag/WaitFlag<HardEvent::V_S>");
    expect_clean("scalar access synchronised with V_S and S_V", scalar_read_synced, 1, k910, 0);
    expect_fault("vector read of a scalar write, unsynchronised", vector_after_scalar_unsynced,
                 "Exp: vector read of a scalar write without SetFlag/WaitFlag<HardEvent::S_V>");
    expect_policy("two cores write one output element", two_cores_one_element,
                 "DataCopyPad: two cores write one output element: core 1 writes out[60], "
                 "already written by core 0",
                 4);
    expect_policy("an output element written twice", written_twice,
                 "DataCopy: output element written twice: core 0 writes out[56] again");
    expect_policy("output elements not written", unwritten,
                 "launch: output elements not written: 56 of 256 elements of out (first: "
                 "out[200])");
    expect_fault("GM guard overwritten", guard_overwrite,
                 "launch: GM guard overwritten: bytes after out changed (first at 1036");
    expect_policy("vector operands partially overlap", partial_overlap,
                  "Add: src0 and dst partially overlap: dst UB [32, 288), src0 UB [0, 256), core 0 "
                  "(emulation policy: CANN accepts this; the result depends on the order in which "
                  "the device's pipeline reads and writes the repeats, which the emulation does "
                  "not model)");
    expect_fault("Cast widening in place", cast_overwrites_src,
                 "Cast: a widening Cast in place (CANN refuses it): dst UB [0, 512), src UB [0, "
                 "256), core 0");
    expect_fault("count beyond the buffer", beyond_buffer,
                 "Exp: count beyond the tensor: src needs 1028 B (257 x 4 B), the tensor has "
                 "1024 B (GetSize() 256 of float), core 0");
    // The tensor-length rule (CANN: count * sizeof(T) <= GetSize() * sizeof(T) per operand).
    expect_fault("Exp past a TBuf::Get(len) view", short_view_exp,
                 "Exp: count beyond the tensor: src needs 260 B (65 x 4 B), the tensor has 256 B "
                 "(GetSize() 64 of float), core 0");
    expect_fault("Add past a TBuf::Get(len) view", short_view_add,
                 "Add: count beyond the tensor: src1 needs 288 B (72 x 4 B), the tensor has 256 B "
                 "(GetSize() 64 of float)");
    expect_fault("DataCopyPad past a TBuf::Get(len) view", short_view_pad,
                 "DataCopyPad: bursts beyond the tensor: dst needs 288 B (1 burst of AlignUp(260, "
                 "32) = 288 B), the tensor has 256 B (GetSize() 64 of float)");
    expect_policy("DataCopyPad past a TBuf::Get(len) view on Ascend310B", short_view_pad,
                  "DataCopyPad: bursts beyond the tensor: dst needs 288 B", 1, k310);
    expect_fault("Cast past a TBuf::Get(len) view", short_view_cast,
                 "Cast: count beyond the tensor: src needs 96 B (48 x 2 B), the tensor has 64 B "
                 "(GetSize() 32 of half)");
    expect_fault("Duplicate past t[k]", offset_view_past,
                 "Duplicate: count beyond the tensor: dst needs 256 B (64 x 4 B), the tensor has "
                 "224 B (GetSize() 56 of float)");
    expect_fault("operator[] at GetSize()", offset_at_size,
                 "LocalTensor::operator[]: offset beyond the tensor: element 256 (1024 B) of a "
                 "tensor of 1024 B (GetSize() 256 of float), core 0");
    expect_fault("operator[] past a view's end", offset_of_a_view,
                 "LocalTensor::operator[]: offset beyond the tensor: element 64 (256 B) of a "
                 "tensor of 256 B (GetSize() 64 of float)");
    expect_fault("GetValue past the tensor", get_value_past,
                 "LocalTensor::GetValue: index beyond the tensor: index 8 (32 B) of a tensor of "
                 "32 B (GetSize() 8 of float)");
    expect_fault("SetValue past t[k]", set_value_past,
                 "LocalTensor::SetValue: index beyond the tensor: index 6 (24 B) of a tensor of "
                 "24 B (GetSize() 6 of float)");
    expect_fault("TBuf::Get(0)", tbuf_get_zero, "TBuf::Get: length is 0: Get<float>(0)");
    expect_fault("TBuf::Get of a ragged length", tbuf_get_ragged,
                 "TBuf::Get: length not a multiple of 32 bytes: 7 elements x 4 B = 28 B of float");
    expect_fault("TBuf::Get beyond the buffer", tbuf_get_beyond,
                 "TBuf::Get: length beyond the buffer: 528 elements x 2 B = 1056 B of half, the "
                 "TBuf has 1024 B");
    expect_fault("InitBuffer num above 64", initbuffer_num_range,
                 "TPipe::InitBuffer: buffer count out of range [1, 64]: 65");
    expect_fault("InitBuffer num 0", initbuffer_num_zero,
                 "TPipe::InitBuffer: buffer count out of range [1, 64]: 0");
    expect_fault("65 buffers in a TPipe", too_many_buffers,
                 "TPipe::InitBuffer: more than 64 buffers in the TPipe: this call (1 buffer(s)) "
                 "makes 65");
    expect_policy("UB above the platform's, within CANN's CPU model (Ascend310B)",
                  ub_over_platform,
                  "TPipe::InitBuffer: UB overflow: the buffers need 253984 B, Ascend310B1 has "
                  "253952 B of UB (this call: 1 x 253984 B at UB byte 0), core 0 (emulation "
                  "policy: CANN accepts this; CANN's CPU model gives a core 262144 B of UB, but "
                  "the platform reports 253952 B of UB to the kernel)",
                  1, k310);
    expect_fault("UB above CANN's CPU model (Ascend310B)", ub_over_model,
                 "TPipe::InitBuffer: UB overflow: the buffers need 262176 B, Ascend310B1 has "
                 "253952 B of UB",
                 1, k310);

    // DataCopy / DataCopyPad.
    expect_fault("DataCopy count past the tensor (Atlas A2)", datacopy_count_past,
                 "DataCopy: count beyond the tensor: dst needs 288 B (72 x 4 B), the tensor has "
                 "256 B (GetSize() 64 of float)");
    expect_policy("DataCopy count past the tensor (Ascend310B)", datacopy_count_past,
                  "DataCopy: count beyond the tensor: dst needs 288 B (72 x 4 B), the tensor has "
                  "256 B (GetSize() 64 of float), core 0 (emulation policy: CANN accepts this; "
                  "CANN's Ascend310B build does not run its copy-overflow check",
                  1, k310);
    expect_fault("DataCopy UB -> GM count past t[k]", datacopy_out_count_past,
                 "DataCopy: count beyond the tensor: src needs 288 B (72 x 4 B), the tensor has "
                 "256 B (GetSize() 64 of float)");
    expect_fault("DataCopy params past the tensor", datacopy_params_past,
                 "DataCopy: bursts beyond the tensor: dst needs 288 B (3 bursts of 96 B, 2 gaps of "
                 "0 B), the tensor has 256 B (GetSize() 64 of float)");
    expect_policy("DataCopy params past the tensor (Ascend310B)", datacopy_params_past,
                  "DataCopy: bursts beyond the tensor: dst needs 288 B", 1, k310);
    expect_fault("DataCopy blockCount above 4095", datacopy_block_count,
                 "DataCopy: blockCount out of range [0, 4095]: 4096");
    expect_policy("DataCopy blockCount above 4095 (Ascend310B)", datacopy_block_count,
                  "DataCopy: blockCount out of range [0, 4095]: 4096", 1, k310);
    expect_policy("DataCopy UB -> UB overlap", datacopy_ub_to_ub_overlap,
                  "DataCopy: dst overlaps src: dst UB [32, 288), src UB [0, 256)");
    expect_clean("zero-length copies copy nothing", zero_length_copies, 1, k910, 0);
    expect_clean("zero-length copies copy nothing (Ascend310B)", zero_length_copies, 1, k310, 0);
    expect_fault("DataCopyPad blockLen above 2097151", pad_block_len_range,
                 "DataCopyPad: blockLen out of range [0, 2097151]: 2097152 B");
    expect_policy("DataCopyPad blockLen above 2097151 (Ascend310B)", pad_block_len_range,
                  "DataCopyPad: blockLen out of range [0, 2097151]: 2097152 B", 1, k310);
    expect_fault("DataCopyPad blockCount above 4095", pad_block_count_range,
                 "DataCopyPad: blockCount out of range [0, 4095]: 4096");
    expect_policy("DataCopyPad blockCount above 4095 (Ascend310B)", pad_block_count_range,
                  "DataCopyPad: blockCount out of range [0, 4095]: 4096", 1, k310);
    expect_fault("DataCopyPad GM -> UB splits an element", pad_in_splits_element,
                 "DataCopyPad: blockLen not a multiple of the element size: 30 B, elements of 4 B");
    expect_policy("DataCopyPad GM -> UB splits an element (Ascend310B)", pad_in_splits_element,
                  "DataCopyPad: blockLen not a multiple of the element size: 30 B", 1, k310);
    expect_policy("DataCopyPad UB -> GM splits an element: the GM rule", pad_out_splits_element,
                  "DataCopyPad: GM write splits an element: bytes [0, 30) of out, elements of 4 B");
    expect_fault("DataCopyPad padding above 32 bytes without isPad", pad_padding_not_set,
                 "DataCopyPad: padding above 32 bytes: left 9 elements (36 B), right 0 elements "
                 "(0 B)");
    expect_fault("DataCopyPad GM -> UB unaligned (Atlas A2)", pad_in_unaligned,
                 "DataCopyPad: UB address not 32-byte aligned: dst at UB byte 4");
    expect_policy("DataCopyPad GM -> UB unaligned (Ascend310B)", pad_in_unaligned,
                  "DataCopyPad: UB address not 32-byte aligned: dst at UB byte 4, core 0 "
                  "(emulation policy: CANN accepts this; CANN's Ascend310B implementation does "
                  "not check it; the emulation does not model where an unaligned burst lands)",
                  1, k310);
    expect_fault("DataCopyPad UB -> GM unaligned (Ascend310B)", pad_out_unaligned,
                 "DataCopyPad: UB address not 32-byte aligned: src at UB byte 4", 1, k310);
    expect_fault("DataCopyPad GM -> UB bursts past the tensor", pad_in_past,
                 "DataCopyPad: bursts beyond the tensor: dst needs 160 B (2 bursts of AlignUp(36 + "
                 "8 B padding, 32) = 64 B, 1 gap of 32 B), the tensor has 128 B (GetSize() 32 of "
                 "float)");
    expect_fault("DataCopyPad UB -> GM bursts past the tensor", pad_out_past,
                 "DataCopyPad: bursts beyond the tensor: src needs 192 B (3 bursts of AlignUp(40, "
                 "32) = 64 B, 2 gaps of 0 B), the tensor has 128 B (GetSize() 32 of float)");
    expect_policy("DataCopyPad UB -> GM bursts past the tensor (Ascend310B)", pad_out_past,
                  "DataCopyPad: bursts beyond the tensor: src needs 192 B", 1, k310);

    // Vector instructions and Cast.
    expect_fault("vector operand unaligned", vector_unaligned,
                 "Duplicate: UB address not 32-byte aligned: dst at UB byte 4");
    expect_fault("vector count negative", vector_negative_count, "Muls: count is negative: -1");
    expect_fault("Cast half -> float in CAST_RINT", cast_widen_mode,
                 "Cast: round mode not supported: CAST_RINT for half -> float (CAST_NONE only)");
    expect_fault("Cast float -> bfloat16_t in CAST_NONE", cast_bf16_none,
                 "Cast: round mode not supported: CAST_NONE for float -> bfloat16_t (not "
                 "CAST_NONE nor CAST_ODD)");
    expect_fault("Cast overlap CANN refuses", cast_overlap_refused,
                 "Cast: dst and src overlap by more than CANN allows: dst UB [256, 512), src UB "
                 "[0, 512) (the lower operand's 512 B, more than one 256-byte repeat, run into the "
                 "higher one)");
    expect_policy("Cast overlap CANN accepts, a later repeat's source overwritten",
                  cast_overlap_accepted_by_cann,
                  "Cast: dst overwrites src before it is read: repeat 0 writes UB [64, 320), later "
                  "repeats read UB [128, 256)");
    {
        const std::string err = run(cast_in_place_both_ways, 1, k910, 0);
        report(err.empty() && g_inplace[0] == 2.0f && g_inplace[1] == 2.0f &&
                   g_inplace[2] == 2.0f && g_inplace[3] == 2.0f,
               "Cast in place: widening from the back half and narrowing front to back (accepted)",
               err);
    }

    // ReduceSum.
    expect_fault("ReduceSum count 0", reduce_count_zero,
                 "ReduceSum: count out of range [1, 49152]: 0");
    expect_fault("ReduceSum count above the UB", reduce_count_above_ub,
                 "ReduceSum: count out of range [1, 49152]: 49153");
    expect_fault("ReduceSum count past src", reduce_src_past,
                 "ReduceSum: count beyond the tensor: src needs 260 B (65 x 4 B), the tensor has "
                 "256 B (GetSize() 64 of float)");
    expect_fault("ReduceSum count past src (Ascend310B)", reduce_src_past,
                 "ReduceSum: count beyond the tensor: src needs 260 B", 1, k310);
    expect_fault("ReduceSum src unaligned", reduce_src_unaligned,
                 "ReduceSum: UB address not 32-byte aligned: src at UB byte 4");
    expect_fault("ReduceSum dst not on 4 bytes", reduce_dst_unaligned,
                 "ReduceSum: UB address not 4-byte aligned: dst at UB byte 1026");
    {
        const std::string err = run(reduce_relaxed, 1, k910, 0);
        report(err.empty() && g_reduce[0] == 500.0f && g_reduce[1] == 0.5f,
               "ReduceSum relaxed on Atlas A2: dst at a 4-byte offset, work of one element inside "
               "src, untouched",
               err);
    }
    expect_fault("ReduceSum work of one element (Ascend310B)", reduce_relaxed,
                 "ReduceSum: work tensor too small: work needs 60 B (count 1000: max(1, "
                 "floor(count / 64)) = 15 elements), the tensor has 4 B (GetSize() 1 of float)",
                 1, k310);
    {
        const std::string err = run(reduce_dst_offset, 1, k310, 0);
        report(err.empty() && g_reduce[2] == 500.0f,
               "ReduceSum on Ascend310B: dst and work at 4-byte offsets", err);
    }
    expect_policy("ReduceSum work overlaps src (Ascend310B)", reduce_work_overlaps_src_310b,
                  "ReduceSum: work overlaps src: work UB [3968, 4028), src UB [0, 4000), core 0 "
                  "(emulation policy: CANN accepts this; CANN does not check it",
                  1, k310);
    expect_policy("ReduceSum work shorter than CANN writes (Ascend310B)", reduce_work_one_element,
                  "ReduceSum: work shorter than CANN's implementation writes: work needs 8 B "
                  "(count 100: work[0] and work[1] hold the body and tail sums), the tensor has "
                  "4 B (GetSize() 1 of float), core 0 (emulation policy: CANN accepts this; "
                  "CANN's check asks for max(1, floor(count / 64)) elements, but its Ascend310B "
                  "implementation writes work[1] when count % 64 != 0)",
                  1, k310, 0);
    expect_clean("ReduceSum work of one element on Atlas A2", reduce_work_one_element, 1, k910,
                 0);
    expect_clean("ReduceSum work of one element, no tail (Ascend310B)",
                 reduce_work_one_element_no_tail, 1, k310, 0);
    check_reduce_12688();
    expect_fault("unassigned LocalTensor", unassigned_tensor,
                 "Duplicate: LocalTensor used before it was assigned: dst");
    expect_fault("GET_TILING_DATA beyond the tiling data", tiling_too_short,
                 "GET_TILING_DATA: GM access outside the tensor: read of bytes [0, 64) of tiling, "
                 "which has 16 B");
    expect_fault("a second TPipe", second_pipe, "TPipe: a second TPipe while one is alive");

    check_pad_layout();
    check_cast_modes();
    {
        const std::string err = run(queue_order, 1, k910, 0);
        report(err.empty() && g_addr[0] == 0 && g_addr[1] == 1024 && g_addr[2] == 0 &&
                   g_addr[3] == 1024,
               "queue: buffers in turn, DeQue in EnQue order", err);
    }
    {
        const std::string err = run(fresh_ub, 1, k910, 0);
        report(err.empty() && g_fresh == 0xFFFFFFFFu, "fresh UB reads as NaN", err);
    }
    {
        const std::string err = run(realloc_reads_nan, 1, k910, 0);
        bool nan = err.empty();
        for (float v : g_again) nan = nan && std::isnan(v);
        report(nan, "a queue buffer allocated again reads as NaN where it was written", err);
    }
    {
        const std::string err = run(realloc_scattered_reads_nan, 1, k910, 0);
        report(err.empty() && g_scattered_nan[0] && g_scattered_nan[1],
               "a queue buffer written in many places reads as NaN in every element again", err);
    }
    check_workspace();
    try {
        AscendC::GetBlockIdx();
        report(false, "API outside launch", "no fault");
    } catch (const emu::Fault& f) {
        report(std::string(f.what()) == "GetBlockIdx: AscendC API called outside emu::launch",
               "API outside launch", f.what());
    }

    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
