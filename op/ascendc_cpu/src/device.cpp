// The emulated device (emu/device.h) and the runtime kernel_operator.h calls (emu/runtime.h).
//
// One launch: a GM arena holding every buffer between guard bytes; per core a fresh state (its
// UB filled with 0xFF, a NaN in float, half and bfloat16), the TPipe's buffer slots, the queues,
// the event flags and the scalar/vector hazard shadows.  Every check is here; each failure is
// one line "<API>: <rule>: <values>, core N": a Fault (a rule CANN's own CPU-debug checkers
// enforce, or one the device cannot survive), or a PolicyFault (a rule of the emulation's own,
// the message ending "(emulation policy: CANN accepts this; <why>)").
#include "emu/device.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include <sys/mman.h>

#include "emu/runtime.h"

namespace emu {

namespace rt {
namespace {

constexpr uint64_t kGuardBytes = 4096;   // guard on each side of every GM region
constexpr uint64_t kRegionAlign = 512;   // GM regions start on 512-byte boundaries
constexpr uint8_t kGuardFill = 0xA5;
constexpr uint8_t kFreshUbFill = 0xFF;   // a NaN in float, half and bfloat16_t
constexpr uint64_t kUbBlock = 32;

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string range(int64_t lo, int64_t hi) {
    return "[" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
}

const char* position_name(TPosition p) {
    switch (p) {
        case TPosition::VECIN: return "VECIN";
        case TPosition::VECOUT: return "VECOUT";
        case TPosition::VECCALC: return "VECCALC";
        default: return "non-vector";
    }
}

// ---- the device: GM regions ------------------------------------------------------------------

// Anonymous pages, zero until written: the GM arena, so that a region whose content is
// unspecified (the system workspace, 16 MiB on Atlas A2) costs nothing unless the kernel uses it,
// and the shadow that says which of that region's bytes the kernel has written.
class Arena {
public:
    explicit Arena(size_t bytes) : bytes_(std::max<size_t>(bytes, 1)) {
        void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
        base_ = static_cast<uint8_t*>(p);
    }
    ~Arena() { munmap(base_, bytes_); }
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;
    uint8_t* base() const { return base_; }  // page-aligned

private:
    uint8_t* base_ = nullptr;
    size_t bytes_ = 0;
};

struct Region {
    std::string name;
    uint8_t* lo = nullptr;    // start of the leading guard
    uint8_t* data = nullptr;  // the buffer
    uint64_t bytes = 0;
    uint8_t* hi = nullptr;    // end of the trailing guard
    bool output = false;
    // Content the kernel may not rely on (the system workspace): it may write it, and read only
    // what it wrote. `written`: one byte per byte of the region, non-zero once written.
    bool unspecified = false;
    std::unique_ptr<Arena> written;
    uint64_t elem_bytes = 1;
    uint64_t elems = 0;
    std::unique_ptr<std::atomic<int32_t>[]> writer;  // output elements: 0 unwritten, core + 1
};

struct Device {
    const Soc* soc = nullptr;
    bool ascend310b = false;  // soc's name starts "Ascend310B": asked on every copy instruction
    ReduceSumOrder order = ReduceSumOrder::kSequentialRepeats;
    uint64_t tiling_key = 0;
    uint32_t block_dim = 0;
    std::unique_ptr<Arena> arena;
    std::vector<Region> regions;  // in address order
    // The output policies (every output element written exactly once, by one core) enforced;
    // LSG_EMU_OUTPUT_POLICY=off lifts them and the device does what CANN's does (an element
    // nothing writes keeps the storage's bytes, the last write wins), so that `farm mutate` can
    // ask whether a kill these policies made shows in the results too.
    bool output_policy = true;
};

// ---- a core ----------------------------------------------------------------------------------

enum class SlotState : uint8_t { kFree, kAllocated, kEnqueued, kDequeued, kBuffer };

// Byte ranges [lo, hi) of a slot, relative to its start, kept as a few disjoint ranges rather
// than one high-water mark: a 2-byte dtype's block is copied in at its back half and cast up from
// its front (op/ascendc/op_kernel), so a short row writes two small ranges a block apart, and
// refilling everything up to the last byte written took a quarter of the emulated device's time
// on large cases. Past kMax ranges the two closest merge: a refill then covers the gap between
// them too (filled bytes filled again), never less than what was written.
struct DirtyRanges {
    static constexpr int kMax = 4;
    uint32_t lo[kMax + 1] = {};
    uint32_t hi[kMax + 1] = {};
    int n = 0;

    void add(uint32_t a, uint32_t b) {
        if (a >= b) return;
        for (int i = 0; i < n; ++i)
            if (lo[i] <= a && b <= hi[i]) return;  // the usual case: a range already dirty
        lo[n] = a;
        hi[n] = b;
        ++n;
        // Sorted by start, then overlapping or touching neighbours merged.
        for (int i = n - 1; i > 0 && lo[i] < lo[i - 1]; --i) {
            std::swap(lo[i], lo[i - 1]);
            std::swap(hi[i], hi[i - 1]);
        }
        int m = 0;
        for (int i = 1; i < n; ++i) {
            if (lo[i] <= hi[m]) {
                hi[m] = std::max(hi[m], hi[i]);
            } else {
                ++m;
                lo[m] = lo[i];
                hi[m] = hi[i];
            }
        }
        n = m + 1;
        if (n > kMax) {
            int closest = 0;
            for (int i = 1; i + 1 < n; ++i)
                if (lo[i + 1] - hi[i] < lo[closest + 1] - hi[closest]) closest = i;
            hi[closest] = hi[closest + 1];
            for (int i = closest + 1; i + 1 < n; ++i) {
                lo[i] = lo[i + 1];
                hi[i] = hi[i + 1];
            }
            --n;
        }
    }
};

struct Slot {
    uint32_t start = 0;
    uint32_t bytes = 0;
    int32_t queue = -1;  // owning queue, -1 for a TBuf
    int32_t index = 0;   // buffer index within the queue
    TPosition pos = TPosition::VECCALC;
    SlotState state = SlotState::kFree;
    uint32_t gen = 1;
    // Where the slot may have been written since it was last filled with kFreshUbFill (every UB
    // write goes through ub()): AllocTensor refills only those bytes.
    DirtyRanges dirty;
};

struct Queue {
    TPosition pos = TPosition::VECIN;
    int32_t depth = 1;
    std::vector<int32_t> slots;
    std::deque<Ref> fifo;
    size_t cursor = 0;
    bool dead = false;
};

struct Core {
    Device* dev = nullptr;
    int64_t idx = 0;
    // Uninitialised: a kernel reaches the UB only through its buffer slots, and new_slot fills
    // each slot with kFreshUbFill before any tensor of it exists.
    std::unique_ptr<uint8_t[]> ub;
    void* pipe = nullptr;
    uint64_t ub_used = 0;
    std::vector<Slot> slots;
    std::vector<Queue> queues;
    std::vector<int32_t> tbufs;  // TBuf id -> slot
    // Event flags set and not yet waited for: (event, id) -> the sequence captured at each SetFlag.
    std::map<std::pair<int, int>, std::deque<uint64_t>> flags;
    uint8_t allocated_ids[static_cast<int>(HardEvent::MAX)] = {};
    // Hazards between the scalar unit and the vector pipe, per 32-byte UB block: the sequence
    // number of the last access; an access is ordered after those with a number <= synced.
    // Sized to the UB the slots have reached (new_slot), which every access lies in.
    uint64_t vseq = 0, sseq = 0, synced_v = 0, synced_s = 0;
    std::vector<uint64_t> vread, vwrite, sread, swrite;
    // The highest sequence number marked in each shadow: when it is not above the last sync, no
    // block of that shadow is, and its scan is skipped (a vector operand with no scalar UB
    // access since the last sync).
    uint64_t vread_top = 0, vwrite_top = 0, sread_top = 0, swrite_top = 0;
};

// Every AscendC call looks its core up here, several times: with the default TLS model of a
// library loaded with dlopen each lookup calls __tls_get_addr (a fifth of the emulated device's
// time on the nightly's largest cases). initial-exec is one load; it puts this library's TLS
// block (64 bytes: this, the C ABI's and the tiling's) in glibc's static TLS surplus for dlopen'ed
// libraries (512 bytes; torch's libgomp, loaded before or after us in an agent, takes 120).
// tests/op/test_ascendc_cpu.py loads them into one process in both orders.
thread_local Core* t_core __attribute__((tls_model("initial-exec"))) = nullptr;

[[noreturn, gnu::cold, gnu::noinline]] void outside_launch(const char* api) {
    throw Fault(std::string(api) + ": AscendC API called outside emu::launch");
}

// Inlined into every check: the message is built out of line, in outside_launch.
inline Core& core(const char* api) {
    if (__builtin_expect(t_core == nullptr, 0)) outside_launch(api);
    return *t_core;
}

std::string queue_text(const Core& c, int32_t q) {
    const Queue& Q = c.queues[static_cast<size_t>(q)];
    return std::string(position_name(Q.pos)) + " queue #" + std::to_string(q) + " (depth " +
           std::to_string(Q.depth) + ", " + std::to_string(Q.slots.size()) + " buffers)";
}

std::string slot_text(const Core& c, int32_t s) {
    const Slot& S = c.slots[static_cast<size_t>(s)];
    if (S.queue < 0) return "a TBuf at UB byte " + std::to_string(S.start);
    return "buffer " + std::to_string(S.index) + " of " + queue_text(c, S.queue);
}

Queue& live_queue(Core& c, int32_t id, const char* api) {
    if (id < 0 || static_cast<size_t>(id) >= c.queues.size())
        fault(std::string(api) + ": queue not initialised: TPipe::InitBuffer missing");
    Queue& q = c.queues[static_cast<size_t>(id)];
    if (q.dead) fault(std::string(api) + ": queue used after its TPipe was destroyed");
    return q;
}

// The first block in [lo, hi) whose shadow is above `synced`, or UINT64_MAX; `top`: the highest
// value marked in the shadow (Core's *_top).
uint64_t unsynced(const std::vector<uint64_t>& shadow, uint64_t top, uint64_t lo, uint64_t hi,
                  uint64_t synced) {
    if (top <= synced) return UINT64_MAX;
    for (uint64_t b = lo / kUbBlock; b < (hi + kUbBlock - 1) / kUbBlock; ++b)
        if (shadow[b] > synced) return b * kUbBlock;
    return UINT64_MAX;
}

// Blocks [lo, hi) of a shadow get `seq`; `top` keeps the highest value marked (for unsynced).
void mark(std::vector<uint64_t>& shadow, uint64_t& top, uint64_t lo, uint64_t hi, uint64_t seq) {
    for (uint64_t b = lo / kUbBlock; b < (hi + kUbBlock - 1) / kUbBlock; ++b) shadow[b] = seq;
    top = std::max(top, seq);
}

void hazards(Core& c, const char* api, const char* role, uint64_t lo, uint64_t hi, Access a) {
    if (hi <= lo) return;
    // Plain literals: this runs on every UB access, and a std::string here is two heap allocations.
    constexpr const char* vs = "SetFlag/WaitFlag<HardEvent::V_S>";
    constexpr const char* sv = "SetFlag/WaitFlag<HardEvent::S_V>";
    switch (a) {
        case Access::kVecRead: {
            const uint64_t at = unsynced(c.swrite, c.swrite_top, lo, hi, c.synced_s);
            if (at != UINT64_MAX)
                fault(std::string(api) + ": vector read of a scalar write without " + sv + ": " +
                      role + " at UB byte " + std::to_string(at));
            mark(c.vread, c.vread_top, lo, hi, c.vseq);
            break;
        }
        case Access::kVecWrite: {
            uint64_t at = unsynced(c.swrite, c.swrite_top, lo, hi, c.synced_s);
            if (at == UINT64_MAX) at = unsynced(c.sread, c.sread_top, lo, hi, c.synced_s);
            if (at != UINT64_MAX)
                fault(std::string(api) + ": vector write after a scalar access without " + sv +
                      ": " + role + " at UB byte " + std::to_string(at));
            mark(c.vwrite, c.vwrite_top, lo, hi, c.vseq);
            break;
        }
        case Access::kScalarRead: {
            ++c.sseq;
            const uint64_t at = unsynced(c.vwrite, c.vwrite_top, lo, hi, c.synced_v);
            if (at != UINT64_MAX)
                fault(std::string(api) + ": scalar read of a vector write without " + vs +
                      ": UB byte " + std::to_string(at));
            mark(c.sread, c.sread_top, lo, hi, c.sseq);
            break;
        }
        case Access::kScalarWrite: {
            ++c.sseq;
            uint64_t at = unsynced(c.vwrite, c.vwrite_top, lo, hi, c.synced_v);
            if (at == UINT64_MAX) at = unsynced(c.vread, c.vread_top, lo, hi, c.synced_v);
            if (at != UINT64_MAX)
                fault(std::string(api) + ": scalar write after a vector access without " + vs +
                      ": UB byte " + std::to_string(at));
            mark(c.swrite, c.swrite_top, lo, hi, c.sseq);
            break;
        }
        default: break;  // MTE pipes: ordered through the queues (see README)
    }
}

bool is_read(Access a) {
    return a == Access::kVecRead || a == Access::kScalarRead || a == Access::kMte3Read ||
           a == Access::kUbCopyRead;
}

Slot& new_slot(Core& c, uint64_t bytes, int32_t queue, int32_t index, TPosition pos,
               SlotState state) {
    Slot s;
    s.start = static_cast<uint32_t>(c.ub_used);
    s.bytes = static_cast<uint32_t>(bytes);
    s.queue = queue;
    s.index = index;
    s.pos = pos;
    s.state = state;
    c.ub_used += bytes;
    c.slots.push_back(s);
    std::memset(c.ub.get() + s.start, kFreshUbFill, bytes);
    const size_t blocks = (c.ub_used + kUbBlock - 1) / kUbBlock;
    if (c.vread.size() < blocks) {
        for (auto* shadow : {&c.vread, &c.vwrite, &c.sread, &c.swrite}) shadow->resize(blocks, 0);
    }
    return c.slots.back();
}

// The UB CANN's CPU model gives a core (what its TPipe::InitBuffer checks): 262144 B on
// Ascend310B, the SoC's UB elsewhere (196608 B on Atlas A2).
uint64_t cann_model_ub(const Soc& soc) {
    const uint64_t ub = static_cast<uint64_t>(soc.ub_bytes);
    return soc.name.rfind("Ascend310B", 0) == 0 ? std::max<uint64_t>(ub, 262144) : ub;
}

constexpr uint64_t kMaxBuffers = 64;  // a TPipe's queue buffers and TBufs together

void reserve(Core& c, const char* api, uint64_t num, uint64_t len) {
    if (c.slots.size() + num > kMaxBuffers)
        fault(std::string(api) + ": more than " + std::to_string(kMaxBuffers) +
              " buffers in the TPipe: this call (" + std::to_string(num) +
              " buffer(s)) makes " + std::to_string(c.slots.size() + num) +
              " (queue buffers and TBufs together)");
    const uint64_t total = c.ub_used + num * len;
    const Soc& soc = *c.dev->soc;
    if (total > static_cast<uint64_t>(soc.ub_bytes)) {
        const std::string message =
            std::string(api) + ": UB overflow: the buffers need " + std::to_string(total) +
            " B, " + soc.name + " has " + std::to_string(soc.ub_bytes) +
            " B of UB (this call: " + std::to_string(num) + " x " + std::to_string(len) +
            " B at UB byte " + std::to_string(c.ub_used) + ")";
        const uint64_t model = cann_model_ub(soc);
        if (total > model) fault(message);
        policy_fault(message, "CANN's CPU model gives a core " + std::to_string(model) +
                                  " B of UB, but the platform reports " +
                                  std::to_string(soc.ub_bytes) + " B of UB to the kernel");
    }
}

uint64_t checked_len(const char* api, uint64_t len) {
    if (len == 0) fault(std::string(api) + ": buffer length is 0");
    return (len + kUbBlock - 1) / kUbBlock * kUbBlock;  // rounded up to whole 32-byte blocks
}

void check_pipe(Core& c, void* pipe, const char* api) {
    if (c.pipe == nullptr || c.pipe != pipe)
        fault(std::string(api) + ": TPipe not alive: InitBuffer on a destroyed TPipe");
}

}  // namespace

// ---- runtime entry points --------------------------------------------------------------------

namespace {
std::string core_suffix() { return t_core ? ", core " + std::to_string(t_core->idx) : ""; }
}  // namespace

void fault(const std::string& message) { throw Fault(message + core_suffix()); }

void policy_fault(const std::string& message, const std::string& why) {
    throw PolicyFault(message + core_suffix() + " (emulation policy: CANN accepts this; " + why +
                      ")");
}

void stop(const std::string& message, const char* why) {
    if (why) policy_fault(message, why);
    fault(message);
}

int64_t block_idx() { return core("GetBlockIdx").idx; }
int64_t block_num() { return core("GetBlockNum").dev->block_dim; }
uint64_t tiling_key() { return core("TILING_KEY_IS").dev->tiling_key; }
const Soc& soc() { return *core("Cast").dev->soc; }
bool ascend310b() { return core("Ascend C API").dev->ascend310b; }
ReduceSumOrder reduce_sum_order() { return core("ReduceSum").dev->order; }

void vec_begin() { ++core("vector instruction").vseq; }

void check_state(const char* api, const char* role, const Ref& t, Access access) {
    Core& c = core(api);
    if (t.slot < 0 || static_cast<size_t>(t.slot) >= c.slots.size())
        fault(std::string(api) + ": LocalTensor used before it was assigned: " + role);
    const Slot& s = c.slots[static_cast<size_t>(t.slot)];
    if (t.gen != s.gen)
        fault(std::string(api) + ": queue tensor used after FreeTensor: " + role + " (" +
              slot_text(c, t.slot) + ")");
    if (s.state == SlotState::kEnqueued)
        fault(std::string(api) + ": queue tensor used between EnQue and DeQue: " + role + " (" +
              slot_text(c, t.slot) + ")");
    if (s.state == SlotState::kAllocated && s.pos == TPosition::VECIN && is_read(access) &&
        access != Access::kUbCopyRead)
        fault(std::string(api) + ": VECIN tensor read before EnQue/DeQue: " + role + " (" +
              slot_text(c, t.slot) + ")");
    if (s.state == SlotState::kAllocated && s.pos == TPosition::VECOUT &&
        access == Access::kMte3Read)
        fault(std::string(api) + ": VECOUT tensor copied out before EnQue/DeQue: " + role +
              " (" + slot_text(c, t.slot) + ")");
}

void check_align(const char* api, const char* role, const Ref& t, uint32_t align,
                 const char* why) {
    if (t.slot < 0 || align <= 1 || t.addr % align == 0) return;
    stop(std::string(api) + ": UB address not " + std::to_string(align) +
             "-byte aligned: " + role + " at UB byte " + std::to_string(t.addr),
         why);
}

namespace {
std::string tensor_text(const Ref& t, uint32_t elem_bytes, const char* type) {
    return std::to_string(t.bytes) + " B (GetSize() " + std::to_string(t.bytes / elem_bytes) +
           " of " + type + ")";
}
}  // namespace

void check_length(const char* api, const char* rule, const char* role, const Ref& t,
                  uint64_t need, const std::string& detail, uint32_t elem_bytes, const char* type,
                  const char* why) {
    if (t.slot < 0 || need <= t.bytes) return;
    stop(std::string(api) + ": " + rule + ": " + role + " needs " + std::to_string(need) + " B (" +
             detail + "), the tensor has " + tensor_text(t, elem_bytes, type),
         why);
}

uint8_t* ub(const char* api, const char* role, const Ref& t, uint64_t offset, uint64_t bytes,
            Access access, uint32_t align) {
    check_state(api, role, t, access);
    return ub_checked(api, role, t, offset, bytes, access, align);
}

uint8_t* ub_checked(const char* api, const char* role, const Ref& t, uint64_t offset,
                    uint64_t bytes, Access access, uint32_t align) {
    Core& c = core(api);
    const uint64_t lo = uint64_t{t.addr} + offset;
    const uint64_t hi = lo + bytes;
    if (align > 1 && lo % align)
        fault(std::string(api) + ": UB address not " + std::to_string(align) +
              "-byte aligned: " + role + " at UB byte " + std::to_string(lo));
    // The one bound: the tensor's length (a tensor never reaches past its buffer).
    if (offset + bytes > t.bytes)
        fault(std::string(api) + ": access beyond the tensor: " + role + " needs UB bytes " +
              range(static_cast<int64_t>(lo), static_cast<int64_t>(hi)) + ", the tensor is " +
              range(t.addr, int64_t{t.addr} + t.bytes) + " (" + slot_text(c, t.slot) + ")");
    hazards(c, api, role, lo, hi, access);
    if (!is_read(access)) {
        Slot& s = c.slots[static_cast<size_t>(t.slot)];
        s.dirty.add(static_cast<uint32_t>(lo - s.start), static_cast<uint32_t>(hi - s.start));
    }
    return c.ub.get() + lo;
}

Ref offset_ref(const Ref& t, uint64_t offset, uint32_t elem_bytes, const char* type) {
    if (t.slot < 0) return t;  // an unassigned tensor stays unassigned (its use faults)
    const uint64_t byte_offset = offset * elem_bytes;
    if (byte_offset >= t.bytes)
        fault("LocalTensor::operator[]: offset beyond the tensor: element " +
              std::to_string(offset) + " (" + std::to_string(byte_offset) +
              " B) of a tensor of " + tensor_text(t, elem_bytes, type));
    Ref r = t;
    r.addr = static_cast<uint32_t>(t.addr + byte_offset);
    r.bytes = static_cast<uint32_t>(t.bytes - byte_offset);
    return r;
}

void check_index(const char* api, const Ref& t, uint64_t index, uint32_t elem_bytes,
                 const char* type) {
    if (t.slot < 0 || index * elem_bytes < t.bytes) return;
    fault(std::string(api) + ": index beyond the tensor: index " + std::to_string(index) +
          " (" + std::to_string(index * elem_bytes) + " B) of a tensor of " +
          tensor_text(t, elem_bytes, type));
}

void check_overlap(const char* api, const char* dst_role, const Ref& dst, uint64_t dst_bytes,
                   const char* src_role, const Ref& src, uint64_t src_bytes) {
    if (dst.slot < 0 || src.slot < 0 || dst_bytes == 0 || src_bytes == 0) return;
    const uint64_t d0 = dst.addr, d1 = d0 + dst_bytes, s0 = src.addr, s1 = s0 + src_bytes;
    if (d1 <= s0 || s1 <= d0) return;                // disjoint
    if (d0 == s0 && dst_bytes == src_bytes) return;  // in place
    policy_fault(std::string(api) + ": " + src_role + " and " + dst_role +
                     " partially overlap: " + dst_role + " UB " +
                     range(static_cast<int64_t>(d0), static_cast<int64_t>(d1)) + ", " +
                     src_role + " UB " + range(static_cast<int64_t>(s0), static_cast<int64_t>(s1)),
                 "the result depends on the order in which the device's pipeline reads and "
                 "writes the repeats, which the emulation does not model");
}

void check_disjoint(const char* api, const char* a_role, const Ref& a, uint64_t a_bytes,
                    const char* b_role, const Ref& b, uint64_t b_bytes, const char* why) {
    if (a.slot < 0 || b.slot < 0 || a_bytes == 0 || b_bytes == 0) return;
    const uint64_t a0 = a.addr, a1 = a0 + a_bytes, b0 = b.addr, b1 = b0 + b_bytes;
    if (a1 <= b0 || b1 <= a0) return;
    stop(std::string(api) + ": " + a_role + " overlaps " + b_role + ": " + a_role + " UB " +
             range(static_cast<int64_t>(a0), static_cast<int64_t>(a1)) + ", " + b_role + " UB " +
             range(static_cast<int64_t>(b0), static_cast<int64_t>(b1)),
         why);
}

void check_cast_overlap(const Ref& dst, uint32_t dst_size, const Ref& src, uint32_t src_size,
                        uint64_t count) {
    if (dst.slot < 0 || src.slot < 0 || count == 0) return;
    const uint64_t d0 = dst.addr, s0 = src.addr;
    const uint64_t d1 = d0 + count * dst_size, s1 = s0 + count * src_size;
    const auto where = [&] {  // built only for a message: Cast runs this on every call
        return "dst UB " + range(static_cast<int64_t>(d0), static_cast<int64_t>(d1)) +
               ", src UB " + range(static_cast<int64_t>(s0), static_cast<int64_t>(s1));
    };
    // CANN's rule (its Cast asserts it in CPU debug): a widening Cast whose source starts at or
    // after the 32-byte block that ends its own length counted from dst (the source in the back
    // half) is accepted; a widening Cast onto its own address is refused; otherwise an overlap is
    // refused when the operand at the lower address is longer than one 256-byte repeat.
    const bool widen = src_size < dst_size;
    const uint64_t back = (d0 + count * src_size + kUbBlock - 1) / kUbBlock * kUbBlock;
    if (!(widen && s0 >= back)) {
        if (widen && s0 == d0)
            fault("Cast: a widening Cast in place (CANN refuses it): " + where());
        const uint64_t low_bytes = d0 > s0 ? count * src_size : count * dst_size;
        const uint64_t low = std::min(d0, s0), high = std::max(d0, s0);
        if (low_bytes > 256 && s0 != d0 && low + low_bytes > high)
            fault("Cast: dst and src overlap by more than CANN allows: " + where() + " (the lower "
                  "operand's " + std::to_string(low_bytes) + " B, more than one 256-byte repeat, "
                  "run into the higher one)");
    }
    if (d1 <= s0 || s1 <= d0) return;
    if (d0 == s0 && dst_size == src_size) return;
    // Accepted by CANN.  Executed repeat by repeat (256 B of the wider type): repeat k reads its
    // source elements, then writes its results; no result may land on source data of a later
    // repeat.
    const uint64_t per = 256 / std::max(dst_size, src_size);
    for (uint64_t k = 0; k * per < count; ++k) {
        const uint64_t next = (k + 1) * per;
        if (next >= count) break;
        const uint64_t w0 = d0 + k * per * dst_size, w1 = d0 + next * dst_size;
        const uint64_t r0 = s0 + next * src_size;
        if (w0 < s1 && r0 < w1)
            policy_fault("Cast: dst overwrites src before it is read: repeat " + std::to_string(k) +
                             " writes UB " +
                             range(static_cast<int64_t>(w0), static_cast<int64_t>(w1)) +
                             ", later repeats read UB " +
                             range(static_cast<int64_t>(r0), static_cast<int64_t>(s1)),
                         "a later repeat would read source data an earlier one overwrote; the "
                         "result depends on the order in which the device's pipeline reads and "
                         "writes the repeats, which the emulation does not model");
    }
}

uint8_t* gm(const char* api, uint64_t addr, uint64_t bytes, bool write) {
    Core& c = core(api);
    const std::vector<Region>& regions = c.dev->regions;
    auto it = std::upper_bound(regions.begin(), regions.end(), addr,
                               [](uint64_t a, const Region& r) {
                                   return a < reinterpret_cast<uint64_t>(r.lo);
                               });
    if (it == regions.begin() || addr >= reinterpret_cast<uint64_t>((it - 1)->hi))
        fault(std::string(api) + ": GM address not in any tensor: " + hex(addr) + ", " +
              std::to_string(bytes) + " B " + (write ? "written" : "read"));
    const Region& r = *(it - 1);
    const int64_t lo = static_cast<int64_t>(addr - reinterpret_cast<uint64_t>(r.data));
    const int64_t hi = lo + static_cast<int64_t>(bytes);
    if (lo < 0 || hi > static_cast<int64_t>(r.bytes))
        fault(std::string(api) + ": GM access outside the tensor: " + (write ? "write" : "read") +
              " of bytes " + range(lo, hi) + " of " + r.name + ", which has " +
              std::to_string(r.bytes) + " B");
    if (r.unspecified) {
        uint8_t* shadow = r.written->base();
        for (int64_t i = lo; i < hi; ++i) {
            if (write) {
                __atomic_store_n(&shadow[i], 1, __ATOMIC_RELAXED);
            } else if (!__atomic_load_n(&shadow[i], __ATOMIC_RELAXED)) {
                policy_fault(std::string(api) + ": GM read of content nothing wrote: bytes " +
                                 range(lo, hi) + " of " + r.name +
                                 ", whose content is unspecified; byte " + std::to_string(i) +
                                 " was never written",
                             "on a device it holds whatever the memory held last, so what the "
                             "kernel computes from it is garbage there; the emulation would "
                             "present zeros");
            }
        }
        return reinterpret_cast<uint8_t*>(addr);
    }
    if (write) {
        if (!r.output)
            policy_fault(std::string(api) + ": GM write to an input tensor: bytes " +
                             range(lo, hi) + " of " + r.name,
                         "the farm's contract: the inputs are const");
        const int64_t e = static_cast<int64_t>(r.elem_bytes);
        if (lo % e || hi % e)
            policy_fault(std::string(api) + ": GM write splits an element: bytes " +
                             range(lo, hi) + " of " + r.name + ", elements of " +
                             std::to_string(e) + " B",
                         "the farm's contract: every output element is written whole, exactly "
                         "once, by one core");
        const int32_t me = static_cast<int32_t>(c.idx) + 1;
        for (int64_t i = lo / e; i < hi / e; ++i) {
            int32_t expected = 0;
            if (!r.writer[static_cast<size_t>(i)].compare_exchange_strong(expected, me) &&
                c.dev->output_policy) {
                if (expected == me)
                    policy_fault(std::string(api) + ": output element written twice: core " +
                                     std::to_string(c.idx) + " writes " + r.name + "[" +
                                     std::to_string(i) + "] again",
                                 "the farm's contract: every output element is written exactly "
                                 "once");
                policy_fault(std::string(api) + ": two cores write one output element: core " +
                                 std::to_string(c.idx) + " writes " + r.name + "[" +
                                 std::to_string(i) + "], already written by core " +
                                 std::to_string(expected - 1),
                             "the farm's contract: every output element is written by one core");
            }
        }
    }
    return reinterpret_cast<uint8_t*>(addr);
}

void pipe_open(void* pipe) {
    Core& c = core("TPipe");
    if (c.pipe != nullptr) fault("TPipe: a second TPipe while one is alive");
    c.pipe = pipe;
    c.ub_used = 0;
}

void pipe_close(void* pipe) noexcept {
    if (t_core == nullptr || t_core->pipe != pipe) return;
    Core& c = *t_core;
    c.pipe = nullptr;
    c.ub_used = 0;
    for (Queue& q : c.queues) q.dead = true;
    for (Slot& s : c.slots) {
        s.state = SlotState::kFree;
        ++s.gen;
    }
}

void* pipe_current() {
    Core& c = core("GetTPipePtr");
    if (c.pipe == nullptr) fault("GetTPipePtr: no TPipe alive");
    return c.pipe;
}

void init_queue(void* pipe, int32_t* id, TPosition pos, int32_t depth, int32_t num,
                uint64_t len) {
    const char* api = "TPipe::InitBuffer";
    Core& c = core(api);
    check_pipe(c, pipe, api);
    if (*id >= 0 && static_cast<size_t>(*id) < c.queues.size() &&
        !c.queues[static_cast<size_t>(*id)].dead)
        fault(std::string(api) + ": queue initialised twice: " + queue_text(c, *id));
    if (num < 1 || num > static_cast<int32_t>(kMaxBuffers))
        fault(std::string(api) + ": buffer count out of range [1, " +
              std::to_string(kMaxBuffers) + "]: " + std::to_string(num));
    if (depth < 1) fault(std::string(api) + ": queue depth below 1: " + std::to_string(depth));
    if (pos != TPosition::VECIN && pos != TPosition::VECOUT && pos != TPosition::VECCALC)
        fault(std::string(api) + ": position not emulated: only VECIN, VECOUT and VECCALC");
    const uint64_t bytes = checked_len(api, len);
    reserve(c, api, static_cast<uint64_t>(num), bytes);
    Queue q;
    q.pos = pos;
    q.depth = depth;
    const int32_t qid = static_cast<int32_t>(c.queues.size());
    for (int32_t i = 0; i < num; ++i) {
        new_slot(c, bytes, qid, i, pos, SlotState::kFree);
        q.slots.push_back(static_cast<int32_t>(c.slots.size() - 1));
    }
    c.queues.push_back(std::move(q));
    *id = qid;
}

void init_tbuf(void* pipe, int32_t* id, TPosition pos, uint64_t len) {
    const char* api = "TPipe::InitBuffer";
    Core& c = core(api);
    check_pipe(c, pipe, api);
    if (*id >= 0 && static_cast<size_t>(*id) < c.tbufs.size() &&
        c.slots[static_cast<size_t>(c.tbufs[static_cast<size_t>(*id)])].state == SlotState::kBuffer)
        fault(std::string(api) + ": TBuf initialised twice");
    if (pos != TPosition::VECIN && pos != TPosition::VECOUT && pos != TPosition::VECCALC)
        fault(std::string(api) + ": position not emulated: only VECIN, VECOUT and VECCALC");
    const uint64_t bytes = checked_len(api, len);
    reserve(c, api, 1, bytes);
    new_slot(c, bytes, -1, 0, pos, SlotState::kBuffer);
    c.tbufs.push_back(static_cast<int32_t>(c.slots.size() - 1));
    *id = static_cast<int32_t>(c.tbufs.size() - 1);
}

Ref tbuf_get(int32_t id, uint64_t len, uint32_t elem_bytes, const char* type) {
    const char* api = "TBuf::Get";
    Core& c = core(api);
    if (id < 0 || static_cast<size_t>(id) >= c.tbufs.size())
        fault(std::string(api) + ": TBuf not initialised: TPipe::InitBuffer missing");
    const int32_t sid = c.tbufs[static_cast<size_t>(id)];
    const Slot& s = c.slots[static_cast<size_t>(sid)];
    if (s.state != SlotState::kBuffer)
        fault(std::string(api) + ": TBuf used after its TPipe was destroyed");
    if (len == UINT64_MAX) return Ref{s.start, s.bytes, sid, s.gen};
    const uint64_t bytes = len * elem_bytes;
    const auto what = [&] {  // built only for a message
        return std::to_string(len) + " elements x " + std::to_string(elem_bytes) + " B = " +
               std::to_string(bytes) + " B of " + type;
    };
    if (len == 0) fault(std::string(api) + ": length is 0: Get<" + type + ">(0)");
    if (bytes % kUbBlock)
        fault(std::string(api) + ": length not a multiple of 32 bytes: " + what());
    if (bytes > s.bytes)
        fault(std::string(api) + ": length beyond the buffer: " + what() + ", the TBuf has " +
              std::to_string(s.bytes) + " B");
    return Ref{s.start, static_cast<uint32_t>(bytes), sid, s.gen};
}

Ref que_alloc(int32_t id) {
    const char* api = "TQue::AllocTensor";
    Core& c = core(api);
    Queue& q = live_queue(c, id, api);
    for (size_t k = 0; k < q.slots.size(); ++k) {
        const size_t i = (q.cursor + k) % q.slots.size();
        Slot& s = c.slots[static_cast<size_t>(q.slots[i])];
        if (s.state != SlotState::kFree) continue;
        s.state = SlotState::kAllocated;
        q.cursor = (i + 1) % q.slots.size();
        // Stale data reads as NaN: the bytes written since the last fill are filled again.
        for (int r = 0; r < s.dirty.n; ++r)
            std::memset(c.ub.get() + s.start + s.dirty.lo[r], kFreshUbFill,
                        s.dirty.hi[r] - s.dirty.lo[r]);
        s.dirty.n = 0;
        return Ref{s.start, s.bytes, q.slots[i], s.gen};
    }
    fault(std::string(api) + ": no free buffer: all " + std::to_string(q.slots.size()) +
          " buffers of " + queue_text(c, id) + " are in use (FreeTensor missing)");
}

void que_enque(int32_t id, const Ref& t) {
    const char* api = "TQue::EnQue";
    Core& c = core(api);
    Queue& q = live_queue(c, id, api);
    if (t.slot < 0) fault(std::string(api) + ": LocalTensor was never assigned");
    Slot& s = c.slots[static_cast<size_t>(t.slot)];
    if (s.queue != id)
        fault(std::string(api) + ": tensor not allocated from this queue: " +
              slot_text(c, t.slot) + " enqueued to " + queue_text(c, id));
    if (t.gen != s.gen || s.state == SlotState::kFree)
        fault(std::string(api) + ": queue tensor used after FreeTensor: " + slot_text(c, t.slot));
    if (s.state == SlotState::kEnqueued)
        fault(std::string(api) + ": tensor enqueued twice: " + slot_text(c, t.slot));
    if (static_cast<int32_t>(q.fifo.size()) >= q.depth)
        fault(std::string(api) + ": queue full: " + std::to_string(q.fifo.size()) +
              " tensor(s) enqueued, depth " + std::to_string(q.depth) + " (" + queue_text(c, id) +
              "; DeQue missing)");
    s.state = SlotState::kEnqueued;
    q.fifo.push_back(t);
}

Ref que_deque(int32_t id) {
    const char* api = "TQue::DeQue";
    Core& c = core(api);
    Queue& q = live_queue(c, id, api);
    if (q.fifo.empty())
        fault(std::string(api) + ": queue empty: DeQue without a matching EnQue (" +
              queue_text(c, id) + ")");
    const Ref t = q.fifo.front();
    q.fifo.pop_front();
    c.slots[static_cast<size_t>(t.slot)].state = SlotState::kDequeued;
    return t;
}

void que_free(int32_t id, const Ref& t) {
    const char* api = "TQue::FreeTensor";
    Core& c = core(api);
    live_queue(c, id, api);
    if (t.slot < 0) fault(std::string(api) + ": LocalTensor was never assigned");
    Slot& s = c.slots[static_cast<size_t>(t.slot)];
    if (s.queue != id)
        fault(std::string(api) + ": tensor belongs to another queue: " + slot_text(c, t.slot) +
              " freed to " + queue_text(c, id));
    if (t.gen != s.gen || s.state == SlotState::kFree)
        fault(std::string(api) + ": tensor freed twice: " + slot_text(c, t.slot));
    if (s.state == SlotState::kEnqueued)
        fault(std::string(api) + ": tensor still enqueued (DeQue missing): " +
              slot_text(c, t.slot));
    s.state = SlotState::kFree;
    ++s.gen;
}

void set_flag(HardEvent event, int32_t id) {
    Core& c = core("SetFlag");
    if (id < 0 || id > 7)
        fault(std::string("SetFlag<HardEvent::") + event_name(event) +
              ">: event id out of range [0, 7]: " + std::to_string(id));
    const uint64_t seq = event == HardEvent::V_S ? c.vseq : event == HardEvent::S_V ? c.sseq : 0;
    c.flags[{static_cast<int>(event), id}].push_back(seq);
}

void wait_flag(HardEvent event, int32_t id) {
    Core& c = core("WaitFlag");
    auto it = c.flags.find({static_cast<int>(event), id});
    if (it == c.flags.end() || it->second.empty())
        fault(std::string("WaitFlag<HardEvent::") + event_name(event) +
              ">: no matching SetFlag: event id " + std::to_string(id));
    const uint64_t seq = it->second.front();
    it->second.pop_front();
    if (it->second.empty()) c.flags.erase(it);
    if (event == HardEvent::V_S) c.synced_v = std::max(c.synced_v, seq);
    if (event == HardEvent::S_V) c.synced_s = std::max(c.synced_s, seq);
}

void pipe_barrier(int32_t pipe) {
    Core& c = core("PipeBarrier");
    constexpr int32_t kPipeAll = 6;  // pipe_t PIPE_ALL
    if (pipe == kPipeAll) {
        c.synced_v = c.vseq;
        c.synced_s = c.sseq;
    }
}

int32_t fetch_event_id(HardEvent event) {
    Core& c = core("TPipe::FetchEventID");
    const uint8_t used = c.allocated_ids[static_cast<int>(event)];
    for (int32_t i = 0; i < 8; ++i)
        if (!(used & (1u << i))) return i;
    fault(std::string("TPipe::FetchEventID: no free event id: HardEvent::") + event_name(event));
}

int32_t alloc_event_id(HardEvent event) {
    Core& c = core("TPipe::AllocEventID");
    uint8_t& used = c.allocated_ids[static_cast<int>(event)];
    for (int32_t i = 0; i < 8; ++i) {
        if (!(used & (1u << i))) {
            used = static_cast<uint8_t>(used | (1u << i));
            return i;
        }
    }
    fault(std::string("TPipe::AllocEventID: no free event id: HardEvent::") + event_name(event));
}

void release_event_id(HardEvent event, int32_t id) {
    Core& c = core("TPipe::ReleaseEventID");
    uint8_t& used = c.allocated_ids[static_cast<int>(event)];
    if (id < 0 || id > 7 || !(used & (1u << id)))
        fault(std::string("TPipe::ReleaseEventID: event id not allocated: HardEvent::") +
              event_name(event) + " id " + std::to_string(id));
    used = static_cast<uint8_t>(used & ~(1u << id));
}

const char* event_name(HardEvent event) {
    static const char* const kNames[] = {
        "MTE2_MTE1", "MTE1_MTE2", "MTE1_M", "M_MTE1", "MTE2_V", "V_MTE2", "MTE3_V", "V_MTE3",
        "M_V", "V_M", "V_V", "MTE3_MTE1", "MTE1_MTE3", "MTE1_V", "MTE2_M", "M_MTE2", "V_MTE1",
        "M_FIX", "FIX_M", "MTE3_MTE2", "MTE2_MTE3", "S_V", "V_S", "S_MTE2", "MTE2_S", "S_MTE3",
        "MTE3_S", "MTE2_FIX", "FIX_MTE2", "FIX_S", "M_S", "FIX_MTE3", "MTE1_FIX", "FIX_MTE1",
        "FIX_FIX"};
    const int i = static_cast<int>(event);
    return i >= 0 && i < static_cast<int>(sizeof kNames / sizeof kNames[0]) ? kNames[i] : "?";
}

}  // namespace rt

// ---- launch ----------------------------------------------------------------------------------

namespace {

using rt::Core;
using rt::Device;
using rt::Region;

ReduceSumOrder resolve_order(const Soc& soc) {
    if (soc.reduce_sum_order != ReduceSumOrder::kDocumented) return soc.reduce_sum_order;
    // CANN's class library: on Ascend310B (dav_m300) the count interface sums the full repeats
    // as trees of trees and the ragged tail on its own (body + tail); on Atlas A2 (dav_c220) one
    // counter-mode instruction adds the repeat sums in sequence.
    return soc.name.rfind("Ascend310B", 0) == 0 ? ReduceSumOrder::kTreeBodyTail
                                                : ReduceSumOrder::kSequentialRepeats;
}

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The end of a core's kernel: every SetFlag waited for.
void end_of_kernel(Core& c) {
    if (!c.flags.empty()) {
        const auto& [key, seqs] = *c.flags.begin();
        rt::fault(std::string("SetFlag<HardEvent::") +
                  rt::event_name(static_cast<rt::HardEvent>(key.first)) +
                  ">: no matching WaitFlag by the end of the kernel: event id " +
                  std::to_string(key.second) + " set " + std::to_string(seqs.size()) +
                  " time(s) more than waited for");
    }
}

void run_core(Device& dev, KernelFn kernel, uint32_t idx, uint8_t* const args[5]) {
    Core c;
    c.dev = &dev;
    c.idx = idx;
    c.ub.reset(new uint8_t[static_cast<size_t>(dev.soc->ub_bytes)]);
    struct Current {
        explicit Current(Core* p) { rt::t_core = p; }
        ~Current() { rt::t_core = nullptr; }
    } current(&c);
    kernel(args[0], args[1], args[2], args[3], args[4]);
    end_of_kernel(c);
}

}  // namespace

void launch(KernelFn kernel, uint32_t block_dim, const Soc& soc, uint64_t tiling_key,
            const std::vector<GmBuffer>& gm, const void* tiling, size_t tiling_bytes,
            int threads) {
    if (kernel == nullptr) throw Fault("launch: no kernel: the kernel function is null");
    if (soc.ub_bytes <= 0 || soc.ub_bytes % rt::kUbBlock)
        throw Fault("launch: UB size not a positive multiple of 32 bytes: " +
                    std::to_string(soc.ub_bytes));
    if (tiling == nullptr && tiling_bytes > 0)
        throw Fault("launch: tiling data is null with " + std::to_string(tiling_bytes) + " B");

    Device dev;
    dev.soc = &soc;
    dev.ascend310b = soc.name.rfind("Ascend310B", 0) == 0;
    dev.order = resolve_order(soc);
    dev.tiling_key = tiling_key;
    dev.block_dim = block_dim;
    const char* output_policy = std::getenv("LSG_EMU_OUTPUT_POLICY");
    dev.output_policy = !(output_policy && std::string(output_policy) == "off");

    // The GM arena: per region [guard][data, padded to 512 B][guard]; the tiling data last.
    struct Source {
        const void* data;  // null: zeros (unspecified content)
        size_t bytes;
        std::string name;
        bool output;
        size_t elem_bytes;
        bool unspecified;
    };
    std::vector<Source> sources;
    for (size_t i = 0; i < gm.size(); ++i) {
        const GmBuffer& g = gm[i];
        if (g.data == nullptr && g.bytes > 0 && !g.unspecified)
            throw Fault("launch: GM buffer is null with " + std::to_string(g.bytes) + " B: " +
                        (g.name ? g.name : "gm[" + std::to_string(i) + "]"));
        if (g.unspecified && g.output)
            throw Fault("launch: an output's content cannot be unspecified: " +
                        (g.name ? std::string(g.name) : "gm[" + std::to_string(i) + "]"));
        sources.push_back({g.unspecified ? nullptr : g.data, g.bytes,
                           g.name ? g.name : "gm[" + std::to_string(i) + "]", g.output,
                           g.elem_bytes ? g.elem_bytes : 1, g.unspecified});
    }
    sources.push_back({tiling, tiling_bytes, "tiling", false, 1, false});
    uint64_t total = 0;
    for (const Source& s : sources)
        total += 2 * rt::kGuardBytes + round_up(std::max<uint64_t>(s.bytes, 1), rt::kRegionAlign);
    dev.arena.reset(new rt::Arena(total));
    uint8_t* at = dev.arena->base();
    for (const Source& s : sources) {
        Region r;
        r.name = s.name;
        r.lo = at;
        r.data = at + rt::kGuardBytes;
        r.bytes = s.bytes;
        r.hi = r.data + round_up(std::max<uint64_t>(s.bytes, 1), rt::kRegionAlign) +
               rt::kGuardBytes;
        r.output = s.output;
        r.unspecified = s.unspecified;
        if (r.unspecified) r.written.reset(new rt::Arena(s.bytes));
        r.elem_bytes = s.elem_bytes;
        // Only the guards and the padding are filled: the data is copied, or left as the
        // arena's zero pages when its content is unspecified (gm() reads only what was written).
        std::memset(r.lo, rt::kGuardFill, rt::kGuardBytes);
        if (s.bytes && s.data) std::memcpy(r.data, s.data, s.bytes);
        std::memset(r.data + s.bytes, rt::kGuardFill, static_cast<size_t>(r.hi - (r.data + s.bytes)));
        if (r.output) {
            r.elems = s.bytes / s.elem_bytes;
            r.writer.reset(new std::atomic<int32_t>[r.elems]());
        }
        at = r.hi;
        dev.regions.push_back(std::move(r));
    }
    uint8_t* args[5] = {nullptr, nullptr, nullptr, nullptr, dev.regions.back().data};
    for (size_t i = 0; i < gm.size() && i < 4; ++i) args[i] = dev.regions[i].data;

    // Run the cores.
    std::mutex mutex;
    struct Stop {
        std::string message;
        bool policy;
    };
    std::map<uint32_t, Stop> faults;  // by core
    std::atomic<uint32_t> next{0};
    std::atomic<bool> stop{false};
    auto worker = [&] {
        for (;;) {
            if (stop.load()) return;
            const uint32_t idx = next.fetch_add(1);
            if (idx >= block_dim) return;
            try {
                run_core(dev, kernel, idx, args);
            } catch (const Fault& f) {
                std::lock_guard<std::mutex> lock(mutex);
                const bool policy = dynamic_cast<const PolicyFault*>(&f) != nullptr;
                faults.emplace(idx, Stop{f.what(), policy});
                stop.store(true);
            } catch (const std::exception& e) {
                std::lock_guard<std::mutex> lock(mutex);
                faults.emplace(idx, Stop{std::string("launch: the kernel threw: ") + e.what() +
                                             ", core " + std::to_string(idx),
                                         false});
                stop.store(true);
            }
        }
    };
    const int n = std::max(1, std::min<int>(threads, static_cast<int>(block_dim)));
    if (n <= 1) {
        worker();
    } else {
        std::vector<std::thread> pool;
        for (int i = 0; i < n; ++i) pool.emplace_back(worker);
        for (std::thread& t : pool) t.join();
    }

    // Outputs back (also after a fault, for inspection), then the verdict.
    for (size_t i = 0; i < gm.size(); ++i)
        if (gm[i].output && gm[i].bytes) std::memcpy(gm[i].data, dev.regions[i].data, gm[i].bytes);
    if (!faults.empty()) {
        const Stop& first = faults.begin()->second;
        if (first.policy) throw PolicyFault(first.message);
        throw Fault(first.message);
    }

    for (const Region& r : dev.regions) {
        const uint8_t* tail = r.data + r.bytes;
        const uint8_t* p = std::find_if(r.lo, r.data, [](uint8_t b) { return b != rt::kGuardFill; });
        if (p != r.data)
            throw Fault("launch: GM guard overwritten: bytes before " + r.name + " changed (first at " +
                        std::to_string(p - r.data) + " relative to its start)");
        p = std::find_if(tail, const_cast<const uint8_t*>(r.hi),
                         [](uint8_t b) { return b != rt::kGuardFill; });
        if (p != r.hi)
            throw Fault("launch: GM guard overwritten: bytes after " + r.name + " changed (first at " +
                        std::to_string(p - r.data) + " relative to its start)");
    }
    if (block_dim > 0 && dev.output_policy) {
        for (const Region& r : dev.regions) {
            if (!r.output || r.elems == 0) continue;
            uint64_t missing = 0, first = 0;
            for (uint64_t i = 0; i < r.elems; ++i) {
                if (r.writer[i].load() == 0) {
                    if (missing == 0) first = i;
                    ++missing;
                }
            }
            if (missing)
                throw PolicyFault("launch: output elements not written: " +
                                  std::to_string(missing) + " of " + std::to_string(r.elems) +
                                  " elements of " + r.name + " (first: " + r.name + "[" +
                                  std::to_string(first) + "]) (emulation policy: CANN accepts "
                                  "this; the farm's contract: every output element is written)");
        }
    }
}

}  // namespace emu
