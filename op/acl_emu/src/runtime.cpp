// libascendcl.so of the emulated ACL runtime: initialisation, devices, device memory, streams,
// events and error messages, implementing the genuine declarations of acl/acl.h (the torch-npu
// wheel's copy of CANN's headers: a definition that differs from its declaration does not compile).
//
// Strict where a real runtime is strict or would silently corrupt (op/acl_emu/README.md):
//   - device memory is not host memory: it is mapped without access, opened only while a copy or
//     a stream's task uses it, so a host read or write of a device pointer faults, and the fault
//     is named on stderr before the process dies;
//   - work on a stream runs when the stream is synchronised; a copy of device memory that a
//     pending task writes (or a write to memory it reads) is refused, where a device would copy
//     stale data or race;
//   - a copy kind that does not match where its pointers are, a wrong device id, use of a
//     destroyed stream or event, a free of what is not a live buffer, and buffers, streams or
//     events still alive at aclrtResetDevice or aclFinalize are errors naming the API and values.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lsg_emu_acl.h"

namespace {

constexpr const char* kVersion = "0.1.0";
constexpr size_t kMaxTracked = 4096;  // device buffers the fault handler can name

std::string hex(const void* p) {
    char b[32];
    std::snprintf(b, sizeof b, "%p", p);
    return b;
}

std::string bytes_text(size_t n) { return std::to_string(n) + " bytes"; }

// The thread's error messages since aclGetRecentErrMsg last read them, a line each: CANN's error
// manager keeps every message reported on the thread until aclGetRecentErrMsg gets and clears them
// (hicann/runtime docs/zh/api_ref/13_exception_handling.md).
thread_local std::string t_error;
thread_local std::string t_returned;  // what it returned last (the pointer stays valid)
thread_local int32_t t_device = -1;

struct Buffer {
    uintptr_t base;
    size_t bytes;   // what aclrtMalloc was asked for
    size_t mapped;  // whole pages
    int32_t device;
    uint64_t serial;  // the how-manieth aclrtMalloc of the process
    // How far into it the tasks queued so far reach: the end of the furthest range a task said
    // it reads or writes (lsg_emu_acl_buffers "reached"; the backend compares a workspace's with
    // what phase one asked for).
    size_t reached = 0;
};

struct Event;

struct Pending {
    std::string what;
    lsg_emu::Task task;
    std::vector<lsg_emu::Range> reads, writes;
    Event* marker = nullptr;  // a recorded event, not work
};

struct Stream {
    int32_t device;
    std::vector<Pending> tasks;
};

struct Event {
    int32_t device;
    bool recorded = false;   // aclrtRecordEvent was called
    bool completed = false;  // and the stream reached it
    std::chrono::steady_clock::time_point at;
};

struct Runtime {
    std::mutex mu;
    bool initialized = false;
    bool declared = false;  // lsg_emu_acl_declare said which host (else the environment does)
    int32_t devices = 1;
    std::string soc = "Ascend910B1";
    size_t capacity = 0;  // bytes of device memory per device
    std::map<uintptr_t, Buffer> buffers;
    std::map<uintptr_t, Buffer> freed;  // recent frees, to name a double free
    std::set<Stream*> streams;
    std::set<Event*> events;
    std::map<int32_t, size_t> used;  // bytes allocated per device
    uint64_t serial = 0;
    std::string description;
    std::string listing;
};

Runtime& rt() {
    static Runtime* r = new Runtime;  // never destroyed: atexit order must not matter
    return *r;
}

// The buffers the fault handler reads (without a lock: a fault stops everything anyway).
struct Tracked {
    std::atomic<uintptr_t> base{0};
    std::atomic<size_t> bytes{0};
};
Tracked g_tracked[kMaxTracked];
std::atomic<int> g_open{0};  // > 0 while device memory is reachable (a copy or a task)
struct sigaction g_previous;
bool g_handler = false;

void track(uintptr_t base, size_t bytes) {
    for (auto& t : g_tracked) {
        uintptr_t none = 0;
        if (t.base.load() == 0 && t.base.compare_exchange_strong(none, base)) {
            t.bytes.store(bytes);
            return;
        }
    }
}

void untrack(uintptr_t base) {
    for (auto& t : g_tracked)
        if (t.base.load() == base) {
            t.bytes.store(0);
            t.base.store(0);
            return;
        }
}

void write_all(const char* s) {
    size_t n = std::strlen(s);
    while (n > 0) {
        const ssize_t w = ::write(2, s, n);
        if (w <= 0) return;
        s += w;
        n -= static_cast<size_t>(w);
    }
}

void on_segv(int sig, siginfo_t* info, void* context) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(info->si_addr);
    for (const auto& t : g_tracked) {
        const uintptr_t base = t.base.load();
        const size_t bytes = t.bytes.load();
        if (base != 0 && at >= base && at < base + std::max<size_t>(bytes, 1) && g_open == 0) {
            char line[320];
            std::snprintf(line, sizeof line,
                          "lsg emulated ACL runtime: host code read or wrote device memory at %p "
                          "(byte %zu of a %zu-byte aclrtMalloc buffer at %p): device memory is "
                          "reached only through aclrtMemcpy or a kernel\n",
                          info->si_addr, static_cast<size_t>(at - base), bytes,
                          reinterpret_cast<void*>(base));
            write_all(line);
            break;
        }
    }
    // Whoever handled SIGSEGV before (Python's faulthandler, the default) sees the fault next.
    sigaction(SIGSEGV, &g_previous, nullptr);
    (void)sig;
    (void)context;
}

void install_handler() {
    if (g_handler) return;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &g_previous) == 0) g_handler = true;
}

size_t page() {
    static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return p;
}

void protect(const Buffer& b, bool open) {
    mprotect(reinterpret_cast<void*>(b.base), b.mapped, open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

// Device memory reachable while alive: the given buffers, or every buffer.
class Open {
public:
    explicit Open(std::vector<Buffer> buffers) : buffers_(std::move(buffers)) {
        ++g_open;
        for (const auto& b : buffers_) protect(b, true);
    }
    ~Open() {
        for (const auto& b : buffers_) protect(b, false);
        --g_open;
    }
    Open(const Open&) = delete;
    Open& operator=(const Open&) = delete;

private:
    std::vector<Buffer> buffers_;
};

// The live buffer holding [p, p + n), or nullptr.
const Buffer* find_buffer(Runtime& r, const void* p, size_t n) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    auto it = r.buffers.upper_bound(a);
    if (it == r.buffers.begin()) return nullptr;
    --it;
    const Buffer& b = it->second;
    if (a >= b.base && a < b.base + std::max<size_t>(b.bytes, 1) && a + n <= b.base + b.bytes)
        return &b;
    return nullptr;
}

// Whether any byte of [p, p + n) is in a live buffer.
bool touches_device(Runtime& r, const void* p, size_t n) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    for (const auto& [base, b] : r.buffers)
        if (a < b.base + b.bytes && b.base < a + std::max<size_t>(n, 1)) return true;
    return false;
}

std::string describe_range(Runtime& r, const void* p, size_t n) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    for (const auto& [base, b] : r.buffers)
        if (a >= b.base && a < b.base + b.bytes)
            return hex(p) + " is byte " + std::to_string(a - b.base) + " of a " +
                   bytes_text(b.bytes) + " buffer at " + hex(reinterpret_cast<void*>(b.base)) +
                   " (device " + std::to_string(b.device) + "), which " + bytes_text(n) +
                   " from there overrun";
    for (const auto& [base, b] : r.freed)
        if (a >= b.base && a < b.base + b.bytes)
            return hex(p) + " is in a " + bytes_text(b.bytes) + " buffer at " +
                   hex(reinterpret_cast<void*>(b.base)) + " that aclrtFree released";
    return hex(p) + " is not device memory (no aclrtMalloc buffer holds it)";
}

bool overlap(const lsg_emu::Range& a, const void* p, size_t n) {
    const uintptr_t x = reinterpret_cast<uintptr_t>(a.data), y = reinterpret_cast<uintptr_t>(p);
    return x < y + n && y < x + a.bytes;
}

// The pending task of any stream that reads (writes=false) or writes [p, p + n).
const Pending* pending_use(Runtime& r, const void* p, size_t n, bool writes_only,
                           const Stream** on) {
    for (const Stream* s : r.streams)
        for (const Pending& t : s->tasks) {
            for (const auto& w : t.writes)
                if (overlap(w, p, n)) return *on = s, &t;
            if (!writes_only)
                for (const auto& rd : t.reads)
                    if (overlap(rd, p, n)) return *on = s, &t;
        }
    return nullptr;
}

int32_t not_initialized(const char* api) {
    return lsg_emu::fail(ACL_ERROR_UNINITIALIZE,
                         std::string(api) + ": aclInit has not been called (or aclFinalize was)");
}

int32_t no_device(const char* api) {
    return lsg_emu::fail(ACL_ERROR_RT_CONTEXT_NULL,
                         std::string(api) + ": no device set on this thread; call aclrtSetDevice "
                                            "first");
}

std::string leaks(Runtime& r, int32_t device) {
    std::string s;
    size_t n = 0;
    for (const auto& [base, b] : r.buffers)
        if (device < 0 || b.device == device) {
            if (n++ < 4)
                s += (s.empty() ? "" : ", ") + bytes_text(b.bytes) + " at " +
                     hex(reinterpret_cast<void*>(b.base)) + " (aclrtMalloc #" +
                     std::to_string(b.serial) + ")";
        }
    if (n > 4) s += ", and " + std::to_string(n - 4) + " more";
    std::string out;
    if (n) out = std::to_string(n) + " device buffer" + (n > 1 ? "s" : "") + " still allocated (" + s + "): release them with aclrtFree";
    size_t streams = 0, events = 0;
    for (const Stream* st : r.streams) streams += device < 0 || st->device == device;
    for (const Event* e : r.events) events += device < 0 || e->device == device;
    if (streams) out += (out.empty() ? "" : "; ") + std::to_string(streams) + " stream(s) not destroyed (aclrtDestroyStream)";
    if (events) out += (out.empty() ? "" : "; ") + std::to_string(events) + " event(s) not destroyed (aclrtDestroyEvent)";
    return out;
}

// Runs the stream's tasks in order with device memory reachable; "" or the first failure.
std::string drain(Runtime& r, Stream* s, std::unique_lock<std::mutex>& lock) {
    std::vector<Pending> tasks = std::move(s->tasks);
    s->tasks.clear();
    std::vector<Buffer> all;
    for (const auto& [base, b] : r.buffers) all.push_back(b);
    lock.unlock();
    std::string failure;
    {
        Open open(all);
        for (Pending& t : tasks) {
            if (t.marker) {
                t.marker->completed = true;
                t.marker->at = std::chrono::steady_clock::now();
                continue;
            }
            if (!failure.empty()) continue;  // a stream stops at its first failed task
            std::string why;
            try {
                why = t.task();
            } catch (const std::exception& e) {
                why = std::string("internal error: ") + e.what();
            }
            if (!why.empty()) failure = t.what + ": " + why;
        }
    }
    lock.lock();
    return failure;
}

Stream* live_stream(Runtime& r, aclrtStream stream) {
    Stream* s = static_cast<Stream*>(stream);
    return r.streams.count(s) ? s : nullptr;
}

size_t env_size(const char* name, size_t fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    return end && *end == '\0' && n > 0 ? static_cast<size_t>(n) : fallback;
}

}  // namespace

namespace lsg_emu {

int32_t fail(int32_t status, const std::string& message) {
    report(message);
    return status;
}

void report(const std::string& line) {
    if (!t_error.empty()) t_error += '\n';
    t_error += line;
}

std::string device_range(const void* data, size_t bytes) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    const Buffer* b = find_buffer(r, data, bytes);
    if (!b) return describe_range(r, data, bytes);
    if (b->device != t_device)
        return hex(data) + " is memory of device " + std::to_string(b->device) +
               ", not of the current device " + std::to_string(t_device);
    return "";
}

int32_t current_device() { return t_device; }

const char* soc_name() { return rt().soc.c_str(); }

// Under r.mu: a task will use `x`; the buffer it lies in remembers how far tasks reach.
void note_reach(Runtime& r, const Range& x) {
    const auto at = reinterpret_cast<uintptr_t>(x.data);
    auto it = r.buffers.upper_bound(at);
    if (x.bytes == 0 || it == r.buffers.begin()) return;
    Buffer& b = (--it)->second;
    if (at - b.base <= b.bytes && x.bytes <= b.bytes - (at - b.base))
        b.reached = std::max(b.reached, static_cast<size_t>(at - b.base) + x.bytes);
}

int32_t enqueue(aclrtStream stream, const std::string& what, Task task, std::vector<Range> reads,
                std::vector<Range> writes) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    Stream* s = live_stream(r, stream);
    if (!s)
        return fail(ACL_ERROR_RT_INVALID_HANDLE,
                    what + ": stream " + hex(stream) +
                        " is not a live stream (aclrtCreateStream; destroyed streams cannot be used)");
    if (s->device != t_device)
        return fail(ACL_ERROR_RT_STREAM_CONTEXT,
                    what + ": stream " + hex(stream) + " belongs to device " +
                        std::to_string(s->device) + ", the current device is " +
                        std::to_string(t_device));
    for (const auto* ranges : {&reads, &writes})
        for (const Range& x : *ranges) note_reach(r, x);
    s->tasks.push_back(Pending{what, std::move(task), std::move(reads), std::move(writes), nullptr});
    return ACL_SUCCESS;
}

}  // namespace lsg_emu

extern "C" {

const char* lsg_emu_acl_buffers(void) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    r.listing = "[";
    for (const auto& [base, b] : r.buffers)
        r.listing += (r.listing.size() > 1 ? ", " : "") + std::string("{\"bytes\": ") +
                     std::to_string(b.bytes) + ", \"device\": " + std::to_string(b.device) +
                     ", \"serial\": " + std::to_string(b.serial) + ", \"base\": " +
                     std::to_string(b.base) + ", \"reached\": " + std::to_string(b.reached) + "}";
    r.listing += "]";
    return r.listing.c_str();
}

// Which emulated host the next calls are for: its SoC and device count (an agent that serves
// several emulated hosts of one machine in one process declares each before its call).
void lsg_emu_acl_declare(const char* soc, int32_t devices) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (soc && *soc) r.soc = soc;
    if (devices > 0) r.devices = devices;
    r.declared = true;
}

const char* lsg_emu_acl_runtime(void) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    r.description = std::string("lsg emulated ACL runtime ") + kVersion + "; soc=" + r.soc +
                    "; devices=" + std::to_string(r.devices);
    return r.description.c_str();
}

aclError aclInit(const char* configPath) {
    (void)configPath;  // a JSON of dump and profiling settings: nothing here reads it
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (r.initialized)
        return lsg_emu::fail(ACL_ERROR_REPEAT_INITIALIZE,
                             "aclInit: already initialised in this process (call it once)");
    if (!r.declared) {  // the host's own declaration, unless its agent declared it already
        r.devices = static_cast<int32_t>(env_size("LSG_EMULATED_DEVICES", 1));
        const char* soc = std::getenv("LSG_EMULATED_SOC");
        r.soc = soc && *soc ? soc : "Ascend910B1";
    }
    r.capacity = env_size("LSG_EMULATED_DEVICE_MEMORY", size_t{16} << 30);
    r.initialized = true;
    install_handler();
    return ACL_SUCCESS;
}

aclError aclFinalize() {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (!r.initialized) return not_initialized("aclFinalize");
    const std::string left = leaks(r, -1);
    r.initialized = false;
    if (!left.empty())
        return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID, "aclFinalize: " + left +
                                                             " (emulation: CANN would release them "
                                                             "silently; a leak per call adds up)");
    return ACL_SUCCESS;
}

const char* aclGetRecentErrMsg() {
    t_returned = std::move(t_error);
    t_error.clear();
    return t_returned.empty() ? nullptr : t_returned.c_str();
}

// The version queries: absent from a runtime built as a CANN release before 8.1.RC1 (where the
// deprecated aclsysGetCANNVersion had not appeared yet, nor aclsysGetVersionStr: hicann/runtime
// docs/zh/api_ref/24_other_APIs.md); refusals elsewhere, since this is no CANN package.
#ifndef LSG_EMU_CANN_BEFORE_8_1
aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion* version) {
    (void)name;
    (void)version;
    return lsg_emu::fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                         "aclsysGetCANNVersion: this is the lsg emulated ACL runtime, not a CANN "
                         "package (lsg_emu_acl_runtime says which)");
}

aclError aclsysGetVersionStr(char* pkgName, char* versionStr) {
    (void)pkgName;
    (void)versionStr;
    return lsg_emu::fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                         "aclsysGetVersionStr: this is the lsg emulated ACL runtime, not a CANN "
                         "package (lsg_emu_acl_runtime says which)");
}
#endif

const char* aclrtGetSocName() {
    Runtime& r = rt();
    return r.initialized ? r.soc.c_str() : nullptr;
}

aclError aclrtGetDeviceCount(uint32_t* count) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (!r.initialized) return not_initialized("aclrtGetDeviceCount");
    if (!count) return lsg_emu::fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is NULL");
    *count = static_cast<uint32_t>(r.devices);
    return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (!r.initialized) return not_initialized("aclrtSetDevice");
    if (deviceId < 0 || deviceId >= r.devices)
        return lsg_emu::fail(ACL_ERROR_RT_INVALID_DEVICEID,
                             "aclrtSetDevice(" + std::to_string(deviceId) + "): this host has " +
                                 std::to_string(r.devices) +
                                 " emulated device(s) (LSG_EMULATED_DEVICES): use 0.." +
                                 std::to_string(r.devices - 1));
    t_device = deviceId;
    return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t* deviceId) {
    if (!deviceId) return lsg_emu::fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is NULL");
    if (t_device < 0) return no_device("aclrtGetDevice");
    *deviceId = t_device;
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (!r.initialized) return not_initialized("aclrtResetDevice");
    if (deviceId < 0 || deviceId >= r.devices)
        return lsg_emu::fail(ACL_ERROR_RT_INVALID_DEVICEID,
                             "aclrtResetDevice(" + std::to_string(deviceId) + "): no such device");
    const std::string left = leaks(r, deviceId);
    if (t_device == deviceId) t_device = -1;
    if (!left.empty())
        return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                             "aclrtResetDevice(" + std::to_string(deviceId) + "): " + left +
                                 " (emulation: CANN would release them silently)");
    return ACL_SUCCESS;
}

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
    (void)policy;  // where the pages come from: one kind of memory here
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (!r.initialized) return not_initialized("aclrtMalloc");
    if (!devPtr) return lsg_emu::fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr is NULL");
    *devPtr = nullptr;
    if (t_device < 0) return no_device("aclrtMalloc");
    if (size == 0)
        return lsg_emu::fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: size 0; ask for at least 1 byte");
    if (r.used[t_device] + size > r.capacity)
        return lsg_emu::fail(ACL_ERROR_RT_MEMORY_ALLOCATION,
                             "aclrtMalloc(" + bytes_text(size) + "): device " +
                                 std::to_string(t_device) + " has " +
                                 bytes_text(r.capacity - r.used[t_device]) + " left of " +
                                 bytes_text(r.capacity) + " (LSG_EMULATED_DEVICE_MEMORY)");
    const size_t mapped = (size + page() - 1) / page() * page();
    void* p = mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return lsg_emu::fail(ACL_ERROR_RT_MEMORY_ALLOCATION,
                             "aclrtMalloc(" + bytes_text(size) + "): the host could not map it");
    const uintptr_t base = reinterpret_cast<uintptr_t>(p);
    r.buffers[base] = Buffer{base, size, mapped, t_device, ++r.serial};
    r.freed.erase(base);
    r.used[t_device] += size;
    track(base, size);
    *devPtr = p;
    return ACL_SUCCESS;
}

aclError aclrtFree(void* devPtr) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (!r.initialized) return not_initialized("aclrtFree");
    const uintptr_t a = reinterpret_cast<uintptr_t>(devPtr);
    auto it = r.buffers.find(a);
    if (it == r.buffers.end()) {
        auto f = r.freed.find(a);
        if (f != r.freed.end())
            return lsg_emu::fail(ACL_ERROR_RT_MEMORY_FREE,
                                 "aclrtFree(" + hex(devPtr) + "): freed before (a " +
                                     bytes_text(f->second.bytes) + " buffer): a double free");
        return lsg_emu::fail(ACL_ERROR_RT_MEMORY_FREE,
                             "aclrtFree(" + hex(devPtr) + "): " +
                                 (touches_device(r, devPtr, 1)
                                      ? "points inside a buffer; pass the address aclrtMalloc "
                                        "returned"
                                      : "not a device buffer of aclrtMalloc"));
    }
    const Buffer b = it->second;
    const Stream* on = nullptr;
    if (const Pending* t = pending_use(r, devPtr, b.bytes, false, &on))
        return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                             "aclrtFree(" + hex(devPtr) + "): " + t->what +
                                 ", still pending on stream " + hex(on) +
                                 ", uses this buffer; synchronize the stream first");
    r.buffers.erase(it);
    untrack(a);
    munmap(devPtr, b.mapped);
    r.used[b.device] -= b.bytes;
    if (r.freed.size() >= kMaxTracked) r.freed.erase(r.freed.begin());
    r.freed[a] = b;
    return ACL_SUCCESS;
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                     aclrtMemcpyKind kind) {
    Runtime& r = rt();
    std::unique_lock<std::mutex> lock(r.mu);
    if (!r.initialized) return not_initialized("aclrtMemcpy");
    if (t_device < 0) return no_device("aclrtMemcpy");
    const std::string call = "aclrtMemcpy(dst " + hex(dst) + ", destMax " + std::to_string(destMax) +
                             ", src " + hex(src) + ", count " + std::to_string(count) + ")";
    if (count > destMax)
        return lsg_emu::fail(ACL_ERROR_INVALID_PARAM,
                             call + ": count exceeds destMax, the room at dst");
    if (count == 0) return ACL_SUCCESS;
    if (!dst || !src) return lsg_emu::fail(ACL_ERROR_INVALID_PARAM, call + ": a NULL pointer");
    const Buffer* d = find_buffer(r, dst, count);
    const Buffer* s = find_buffer(r, src, count);
    const bool dst_dev = touches_device(r, dst, count), src_dev = touches_device(r, src, count);
    bool want_dst = false, want_src = false;
    const char* name = "";
    switch (kind) {
        case ACL_MEMCPY_HOST_TO_HOST: name = "ACL_MEMCPY_HOST_TO_HOST"; break;
        case ACL_MEMCPY_HOST_TO_DEVICE: want_dst = true; name = "ACL_MEMCPY_HOST_TO_DEVICE"; break;
        case ACL_MEMCPY_DEVICE_TO_HOST: want_src = true; name = "ACL_MEMCPY_DEVICE_TO_HOST"; break;
        case ACL_MEMCPY_DEVICE_TO_DEVICE:
            want_dst = want_src = true;
            name = "ACL_MEMCPY_DEVICE_TO_DEVICE";
            break;
        case ACL_MEMCPY_DEFAULT:
            want_dst = dst_dev;
            want_src = src_dev;
            name = "ACL_MEMCPY_DEFAULT";
            break;
        default:
            return lsg_emu::fail(ACL_ERROR_INVALID_PARAM,
                                 call + ": copy kind " + std::to_string(kind) +
                                     " is not one the emulation runs");
    }
    if (want_dst && !d)
        return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID, call + " with " + name + ": dst " +
                                                             describe_range(r, dst, count));
    if (!want_dst && dst_dev)
        return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                             call + " with " + name + ": dst " + hex(dst) +
                                 " is device memory; the copy kind says host");
    if (want_src && !s)
        return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID, call + " with " + name + ": src " +
                                                             describe_range(r, src, count));
    if (!want_src && src_dev)
        return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                             call + " with " + name + ": src " + hex(src) +
                                 " is device memory; the copy kind says host");
    for (const Buffer* b : {want_dst ? d : nullptr, want_src ? s : nullptr})
        if (b && b->device != t_device)
            return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                                 call + ": buffer " + hex(reinterpret_cast<void*>(b->base)) +
                                     " is memory of device " + std::to_string(b->device) +
                                     ", the current device is " + std::to_string(t_device));
    const Stream* on = nullptr;
    if (want_src)
        if (const Pending* t = pending_use(r, src, count, true, &on))
            return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                                 call + ": " + t->what + ", still pending on stream " + hex(on) +
                                     ", writes this memory; call aclrtSynchronizeStream first (a "
                                     "device would copy stale data)");
    if (want_dst)
        if (const Pending* t = pending_use(r, dst, count, false, &on))
            return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                                 call + ": " + t->what + ", still pending on stream " + hex(on) +
                                     ", uses this memory; call aclrtSynchronizeStream first (a "
                                     "device would race with it)");
    std::vector<Buffer> open;
    if (want_dst) open.push_back(*d);
    if (want_src && s != d) open.push_back(*s);
    Open reachable(open);
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (!r.initialized) return not_initialized("aclrtMemset");
    if (t_device < 0) return no_device("aclrtMemset");
    const std::string call = "aclrtMemset(" + hex(devPtr) + ", maxCount " +
                             std::to_string(maxCount) + ", count " + std::to_string(count) + ")";
    if (count > maxCount)
        return lsg_emu::fail(ACL_ERROR_INVALID_PARAM, call + ": count exceeds maxCount");
    if (count == 0) return ACL_SUCCESS;
    const Buffer* b = find_buffer(r, devPtr, count);
    if (!b) return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID, call + ": " + describe_range(r, devPtr, count));
    const Stream* on = nullptr;
    if (const Pending* t = pending_use(r, devPtr, count, false, &on))
        return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                             call + ": " + t->what + ", still pending, uses this memory; "
                                                     "synchronize first");
    Open reachable({*b});
    std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream* stream) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (!r.initialized) return not_initialized("aclrtCreateStream");
    if (!stream) return lsg_emu::fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is NULL");
    if (t_device < 0) return no_device("aclrtCreateStream");
    Stream* s = new Stream{t_device, {}};
    r.streams.insert(s);
    *stream = s;
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (!r.initialized) return not_initialized("aclrtDestroyStream");
    Stream* s = live_stream(r, stream);
    if (!s)
        return lsg_emu::fail(ACL_ERROR_RT_INVALID_HANDLE,
                             "aclrtDestroyStream(" + hex(stream) + "): not a live stream");
    if (!s->tasks.empty())
        return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                             "aclrtDestroyStream(" + hex(stream) + "): " +
                                 std::to_string(s->tasks.size()) +
                                 " task(s) still pending; call aclrtSynchronizeStream first");
    r.streams.erase(s);
    delete s;
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
    Runtime& r = rt();
    std::unique_lock<std::mutex> lock(r.mu);
    if (!r.initialized) return not_initialized("aclrtSynchronizeStream");
    Stream* s = live_stream(r, stream);
    if (!s)
        return lsg_emu::fail(ACL_ERROR_RT_INVALID_HANDLE,
                             "aclrtSynchronizeStream(" + hex(stream) + "): not a live stream");
    const std::string failure = drain(r, s, lock);
    if (!failure.empty())
        return lsg_emu::fail(ACL_ERROR_RT_AICORE_EXCEPTION,
                             "aclrtSynchronizeStream: " + failure);
    return ACL_SUCCESS;
}

aclError aclrtCreateEvent(aclrtEvent* event) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (!r.initialized) return not_initialized("aclrtCreateEvent");
    if (!event) return lsg_emu::fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateEvent: event is NULL");
    if (t_device < 0) return no_device("aclrtCreateEvent");
    Event* e = new Event{t_device, false, false, {}};
    r.events.insert(e);
    *event = e;
    return ACL_SUCCESS;
}

aclError aclrtDestroyEvent(aclrtEvent event) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    Event* e = static_cast<Event*>(event);
    if (!r.events.count(e))
        return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                             "aclrtDestroyEvent(" + hex(event) + "): not a live event");
    for (const Stream* s : r.streams)
        for (const Pending& t : s->tasks)
            if (t.marker == e)
                return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                                     "aclrtDestroyEvent(" + hex(event) +
                                         "): still recorded on a pending stream; synchronize it "
                                         "first");
    r.events.erase(e);
    delete e;
    return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    Event* e = static_cast<Event*>(event);
    if (!r.events.count(e))
        return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                             "aclrtRecordEvent(" + hex(event) + "): not a live event");
    Stream* s = live_stream(r, stream);
    if (!s)
        return lsg_emu::fail(ACL_ERROR_RT_INVALID_HANDLE,
                             "aclrtRecordEvent: stream " + hex(stream) + " is not a live stream");
    e->recorded = true;
    e->completed = false;
    Pending marker;
    marker.what = "aclrtRecordEvent";
    marker.marker = e;
    s->tasks.push_back(std::move(marker));
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
    Runtime& r = rt();
    std::unique_lock<std::mutex> lock(r.mu);
    Event* e = static_cast<Event*>(event);
    if (!r.events.count(e))
        return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                             "aclrtSynchronizeEvent(" + hex(event) + "): not a live event");
    for (Stream* s : std::vector<Stream*>(r.streams.begin(), r.streams.end()))
        for (const Pending& t : s->tasks)
            if (t.marker == e) {
                const std::string failure = drain(r, s, lock);
                if (!failure.empty())
                    return lsg_emu::fail(ACL_ERROR_RT_AICORE_EXCEPTION,
                                         "aclrtSynchronizeEvent: " + failure);
                return ACL_SUCCESS;
            }
    return ACL_SUCCESS;
}

aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent, aclrtEvent endEvent) {
    Runtime& r = rt();
    std::lock_guard<std::mutex> g(r.mu);
    if (!ms) return lsg_emu::fail(ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime: ms is NULL");
    Event* a = static_cast<Event*>(startEvent);
    Event* b = static_cast<Event*>(endEvent);
    for (Event* e : {a, b}) {
        if (!r.events.count(e))
            return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                                 "aclrtEventElapsedTime: " + hex(e) + " is not a live event");
        if (!e->completed)
            return lsg_emu::fail(ACL_ERROR_RT_PARAM_INVALID,
                                 "aclrtEventElapsedTime: event " + hex(e) +
                                     (e->recorded ? " has not completed; synchronize its stream"
                                                  : " was never recorded (aclrtRecordEvent)"));
    }
    *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
    return ACL_SUCCESS;
}

}  // extern "C"

