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
           std::string("expected a PolicyFault \"") + prefix + "... (emulation policy: ...)\", got " +
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
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<float*>(a));
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, g, 7);  // 28 B
}

KERNEL(ub_misaligned) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<float*>(a));
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t[1], g, 8);  // UB byte 4
}

KERNEL(gm_read_past_end) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<float*>(a));
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopyPad(t, g[250], DataCopyExtParams{1, 7 * 4, 0, 0, 0}, DataCopyPadExtParams<float>{});
}

KERNEL(gm_write_input) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<float*>(a));
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

KERNEL(vecin_read_early) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> o;
    pipe.InitBuffer(q, 1, 1024);
    pipe.InitBuffer(o, 1024);
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<float*>(a));
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
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<float*>(out));
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate(t, 1.0f, 8);
    DataCopyPad(g, t, DataCopyExtParams{1, 32, 0, 0, 0});  // no EnQue/DeQue between V and MTE3
}

KERNEL(bf16_cast) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(t, 1024);
    LocalTensor<float> f = t.Get<float>();
    LocalTensor<bfloat16_t> h = t.Get<bfloat16_t>()[256];
    Cast(f, h, RoundMode::CAST_NONE, 8);
}

KERNEL(bf16_narrow_odd) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t, u;
    pipe.InitBuffer(t, 1024);
    pipe.InitBuffer(u, 1024);
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
    ReduceSum<float>(t.Get<float>(), t.Get<float>()[64], w.Get<float>(), 513);  // needs 9 -> 16
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
    TPipe pipe;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(t, 1024);
    LocalTensor<float> x = t.Get<float>();
    Duplicate(x, 1.0f, 8);
    static_cast<void>(x.GetValue(3));
}

KERNEL(scalar_read_synced) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(t, 1024);
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
    TPipe pipe;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(t, 1024);
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
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<float*>(out));
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
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<float*>(out));
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
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<float*>(out));
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
    TPipe pipe;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(t, 1024);
    LocalTensor<float> x = t.Get<float>();
    Duplicate(x, 1.0f, 128);
    Add(x[8], x, x, 64);
}

KERNEL(cast_overwrites_src) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(t, 2048);
    LocalTensor<half> h = t.Get<half>();
    Duplicate(h, half(1.0f), 128);
    Cast(t.Get<float>(), h, RoundMode::CAST_NONE, 128);  // front-to-front widening
}

KERNEL(beyond_buffer) {
    UNUSED_ARGS;
    TPipe pipe;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(t, 1024);
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

// ---- semantics -------------------------------------------------------------------------------

// DataCopyPad GM -> UB of 5 floats: the block's other 3 floats are copies of the first element;
// with isPad, paddingValue; two bursts with a GM gap of 4 B and a UB gap of one block.
std::vector<float> g_seen;
KERNEL(pad_layout) {
    UNUSED_ARGS;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<float*>(a));
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
    TPipe pipe;
    TBuf<TPosition::VECCALC> f, h;
    pipe.InitBuffer(f, 64);
    pipe.InitBuffer(h, 64);
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
    TPipe pipe;
    TBuf<TPosition::VECCALC> t;
    pipe.InitBuffer(t, 64);
    const float v = t.Get<float>().GetValue(5);
    std::memcpy(&g_fresh, &v, 4);
}

}  // namespace

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
    expect_fault("GM write to an input", gm_write_input,
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
    expect_fault("VECIN read before EnQue/DeQue", vecin_read_early,
                 "Exp: VECIN tensor read before EnQue/DeQue: src");
    expect_fault("VECOUT copied out before EnQue/DeQue", vecout_copied_early,
                 "DataCopyPad: VECOUT tensor copied out before EnQue/DeQue: src");
    expect_fault("bf16 Cast on Ascend310B", bf16_cast,
                 "Cast: bf16 Cast not available on Ascend310B1: bfloat16_t -> float", 1, k310);
    expect_clean("bf16 Cast on Ascend910B", bf16_cast, 1, k910, 0);
    expect_fault("float -> bf16 with CAST_ODD", bf16_narrow_odd,
                 "Cast: round mode not supported: CAST_ODD for float -> bfloat16_t");
    expect_fault("ReduceSum work too small", reduce_work_small,
                 "ReduceSum: work buffer too small: count 513 needs 16 elements (64 B), work has "
                 "8 (32 B)");
    expect_fault("ReduceSum work overlaps src", reduce_work_overlaps_src,
                 "ReduceSum: work overlaps src");
    expect_fault("ReduceSum work overlaps dst", reduce_work_overlaps_dst,
                 "ReduceSum: work overlaps dst");
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
    expect_fault("two cores write one output element", two_cores_one_element,
                 "DataCopyPad: two cores write one output element: core 1 writes out[60], "
                 "already written by core 0",
                 4);
    expect_fault("an output element written twice", written_twice,
                 "DataCopy: output element written twice: core 0 writes out[56] again");
    expect_fault("output elements not written", unwritten,
                 "launch: output elements not written: 56 of 256 elements of out (first: "
                 "out[200])");
    expect_fault("GM guard overwritten", guard_overwrite,
                 "launch: GM guard overwritten: bytes after out changed (first at 1036");
    expect_fault("vector operands partially overlap", partial_overlap,
                 "Add: src0 and dst partially overlap");
    expect_fault("Cast overwrites its source", cast_overwrites_src,
                 "Cast: dst overwrites src before it is read: repeat 0");
    expect_fault("access beyond the buffer", beyond_buffer,
                 "Exp: access beyond the tensor's buffer: src needs UB bytes [0, 1028)");
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
