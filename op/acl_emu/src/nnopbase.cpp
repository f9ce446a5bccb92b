// libnnopbase.so of the emulated ACL runtime: aclTensor and aclIntArray (create, read, destroy)
// and the executors that phase one makes and phase two runs, as include/aclnn/aclnn_base.h
// declares them.
//
// Strict where CANN would go on with a corrupt state: a view that reaches outside its storage is
// refused at aclCreateTensor (nullptr, and aclGetRecentErrMsg says why); a destroyed tensor or
// array is remembered, so a use after destroy or a second destroy is an error naming it, not a
// read of freed memory.
//
// Executors live as CANN's do (nnopbase, include/nnopbase/aclnn/acl_meta.h and the aclnn API
// docs, "aclSetAclOpExecutorRepeatable" / "aclDestroyAclOpExecutor"): phase two runs an executor
// and releases it, unless aclSetAclOpExecutorRepeatable made it repeatable, when it may run again
// and is released by aclDestroyAclOpExecutor.  The docs pair aclDestroyAclOpExecutor with
// repeatable executors only: destroying one that is not is refused here (stricter than current
// opbase, which deletes it: an older CANN is not known to).
//
// Each live handle remembers the library whose code created it (the caller of aclCreateTensor or
// aclCreateIntArray; for an executor, the caller of the phase one that made it): the backend tells
// the handles its own code left alive from those the operator's left (lsg_emu_acl_live_handle_list).
//
// ReportErrorMessageInner is nnopbase's error channel (opdev/op_log.h: what OP_LOGE reports
// through, src/nnopbase/composite_op/log/op_error_manager.cpp): the message, cut to 1023 bytes as
// CANN's buffer cuts it, under its error code, is what aclGetRecentErrMsg returns next.
#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "lsg_emu_acl.h"

struct aclTensor {
    uint64_t magic;
    lsg_emu::TensorInfo info;
};

struct aclIntArray {
    uint64_t magic;
    std::vector<int64_t> values;
};

struct aclOpExecutor {
    uint64_t magic;
    std::string api;
    uint64_t workspace;
    lsg_emu::Launch launch;
    bool repeatable = false;  // aclSetAclOpExecutorRepeatable: runs again, freed by its destroy
};

namespace {

constexpr uint64_t kLive = 0x4c5347544e53524bULL;  // a live object of this library
constexpr uint64_t kDead = 0x4445414444454144ULL;  // destroyed
constexpr size_t kKeepDead = 65536;                // destroyed objects remembered
constexpr size_t kKeepLog = 1024;                  // tensor log entries kept

// Who made a live handle, and when.
struct Made {
    uint64_t serial;    // the how-manieth handle of the process
    const char* kind;   // "tensor", "int array", "executor"
    std::string api;    // an executor's operator
    std::string by;     // the file of the library whose code created it
};

struct Registry {
    std::mutex mu;
    std::map<const void*, Made> live;
    uint64_t serial = 0;
    // What a probe of the backend armed: the next phase one of an api fails or asks for more.
    std::map<std::string, std::string> faults;
    // Kept (with how to delete each), so that a stale pointer still reads kDead.
    std::deque<std::pair<void*, void (*)(void*)>> dead;
    std::vector<std::string> log;
    std::string taken, listed;
};

Registry& reg() {
    static Registry* r = new Registry;
    return *r;
}

// The library `address` lies in (the return address of a call: its caller's code).
std::string library_of(const void* address) {
    Dl_info info;
    if (address && dladdr(address, &info) && info.dli_fname) return info.dli_fname;
    return "?";
}

// Under r.mu; `by` is library_of the creating code's address (read before taking the lock).
void remember(Registry& r, const void* object, const char* kind, std::string api, std::string by) {
    r.live[object] = Made{++r.serial, kind, std::move(api), std::move(by)};
}

std::string json_text(const std::string& s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') o += '\\';
        o += c;
    }
    return o + '"';
}

template <typename T>
void bury(Registry& r, T* object) {
    object->magic = kDead;
    r.live.erase(object);
    r.dead.emplace_back(object, [](void* p) { delete static_cast<T*>(p); });
    if (r.dead.size() > kKeepDead) {
        r.dead.front().second(r.dead.front().first);
        r.dead.pop_front();
    }
}

std::string list(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

std::string hex(const void* p) {
    char b[32];
    std::snprintf(b, sizeof b, "%p", p);
    return b;
}

// "" when every element of the view lies in the storage, else why not.
std::string view_problem(const lsg_emu::TensorInfo& t) {
    for (int64_t d : t.dims)
        if (d < 0) return "view " + list(t.dims) + " has a negative extent";
    for (int64_t d : t.dims)
        if (d == 0) return "";  // an empty view reaches nothing
    int64_t storage = 1;
    for (int64_t d : t.storage) {
        if (d < 0) return "storage " + list(t.storage) + " has a negative extent";
        storage *= d;
    }
    int64_t low = t.offset, high = t.offset;
    for (size_t i = 0; i < t.dims.size(); ++i) {
        const int64_t reach = (t.dims[i] - 1) * t.strides[i];
        (reach < 0 ? low : high) += reach;
    }
    if (low < 0 || high >= storage)
        return "view " + list(t.dims) + " with strides " + list(t.strides) + " from offset " +
               std::to_string(t.offset) + " reaches elements " + std::to_string(low) + ".." +
               std::to_string(high) + ", but the storage " + list(t.storage) + " holds " +
               std::to_string(storage);
    return "";
}

std::string log_entry(const lsg_emu::TensorInfo& t) {
    return "{\"dims\": " + list(t.dims) + ", \"strides\": " + list(t.strides) +
           ", \"offset\": " + std::to_string(t.offset) + ", \"storage\": " + list(t.storage) +
           ", \"dtype\": " + std::to_string(t.dtype) + ", \"format\": " +
           std::to_string(t.format) + ", \"device\": " +
           std::to_string(lsg_emu::current_device()) + "}";
}

template <typename T>
const T* live(const T* object, const char* api, const char* what, std::string* why) {
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    if (r.live.count(object) && object->magic == kLive) return object;
    bool dead = false;
    for (const auto& d : r.dead) dead = dead || d.first == object;
    *why = std::string(api) + ": " + what + " " + hex(object) +
           (dead ? " was destroyed: it cannot be used after its destroy call"
                 : " is not one this runtime created");
    return nullptr;
}

aclnnStatus copy_out(const std::vector<int64_t>& v, int64_t** out, uint64_t* n) {
    *n = v.size();
    *out = new (std::nothrow) int64_t[v.empty() ? 1 : v.size()];
    if (!*out) return ACLNN_ERR_INNER;
    for (size_t i = 0; i < v.size(); ++i) (*out)[i] = v[i];
    return ACLNN_SUCCESS;
}

const lsg_emu::TensorInfo* getter(const aclTensor* tensor, const char* api, aclnnStatus* status) {
    if (!tensor) {
        *status = lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, std::string(api) + ": tensor is NULL");
        return nullptr;
    }
    std::string why;
    const auto* info = lsg_emu::tensor_info(tensor, api, "tensor", &why);
    *status = info ? ACLNN_SUCCESS : lsg_emu::fail(ACLNN_ERR_PARAM_INVALID, why);
    return info;
}

}  // namespace

namespace lsg_emu {

size_t dtype_bytes(int32_t dtype) {
    switch (dtype) {
        case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
        case ACL_FLOAT16: case ACL_INT16: case ACL_UINT16: case ACL_BF16: return 2;
        case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
        case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
        case ACL_COMPLEX128: return 16;
        default: return 0;
    }
}

bool contiguous(const TensorInfo& t) {
    for (int64_t d : t.dims)
        if (d == 0) return true;  // an empty view reaches nothing
    int64_t expect = 1;
    for (size_t i = t.dims.size(); i-- > 0;) {
        if (t.dims[i] != 1 && t.strides[i] != expect) return false;
        expect *= t.dims[i];
    }
    return true;
}

const TensorInfo* tensor_info(const aclTensor* tensor, const char* api, const char* name,
                              std::string* why) {
    const aclTensor* t = live(tensor, api, name, why);
    return t ? &t->info : nullptr;
}

const std::vector<int64_t>* int_array_values(const aclIntArray* array, const char* api,
                                             std::string* why) {
    const aclIntArray* a = live(array, api, "int array", why);
    return a ? &a->values : nullptr;
}

aclOpExecutor* make_executor(const std::string& api, uint64_t workspace_size, Launch launch,
                             const void* caller) {
    auto* e = new aclOpExecutor{kLive, api, workspace_size, std::move(launch), false};
    std::string by = library_of(caller);
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    remember(r, e, "executor", api, std::move(by));
    return e;
}

std::string take_fault(const std::string& api) {
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    const auto it = r.faults.find(api);
    if (it == r.faults.end()) return "";
    const std::string fault = it->second;
    r.faults.erase(it);
    return fault;
}

int32_t run_executor(const std::string& api, aclOpExecutor* executor, void* workspace,
                     uint64_t workspace_size, aclrtStream stream) {
    if (!executor) return fail(ACLNN_ERR_PARAM_NULLPTR, api + ": executor is NULL");
    std::string why;
    if (!live(executor, api.c_str(), "executor", &why))
        return fail(ACLNN_ERR_PARAM_INVALID,
                    why + " (phase two runs an executor of phase one once)");
    if (executor->api != api)
        return fail(ACLNN_ERR_PARAM_INVALID, api + ": the executor is one of " + executor->api +
                                                 "'s phase one; pass it to " + executor->api);
    if (workspace_size < executor->workspace)
        return fail(ACLNN_ERR_PARAM_INVALID,
                    api + ": workspace of " + std::to_string(workspace_size) +
                        " bytes, phase one asked for " + std::to_string(executor->workspace));
    if (executor->workspace > 0) {
        const std::string where = device_range(workspace, executor->workspace);
        if (!where.empty())
            return fail(ACLNN_ERR_PARAM_INVALID, api + ": workspace " + where);
    }
    if (executor->repeatable) return executor->launch(workspace, workspace_size, stream);
    const Launch launch = std::move(executor->launch);
    {
        Registry& r = reg();
        std::lock_guard<std::mutex> g(r.mu);
        bury(r, executor);
    }
    return launch(workspace, workspace_size, stream);
}

}  // namespace lsg_emu

extern "C" {

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t* stride, int64_t offset, aclFormat format,
                           const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData) {
    if ((!viewDims && viewDimsNum) || (!storageDims && storageDimsNum)) {
        lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR,
                      "aclCreateTensor: viewDims or storageDims is NULL with a count above 0");
        return nullptr;
    }
    lsg_emu::TensorInfo t;
    t.dims.assign(viewDims, viewDims + viewDimsNum);
    if (stride) {
        t.strides.assign(stride, stride + viewDimsNum);
    } else {  // contiguous
        t.strides.assign(viewDimsNum, 1);
        for (size_t i = viewDimsNum; i-- > 1;) t.strides[i - 1] = t.strides[i] * t.dims[i];
    }
    t.offset = offset;
    t.storage.assign(storageDims, storageDims + storageDimsNum);
    t.dtype = dataType;
    t.format = format;
    t.data = tensorData;
    const std::string wrong = view_problem(t);
    if (!wrong.empty()) {
        lsg_emu::fail(ACLNN_ERR_PARAM_INVALID, "aclCreateTensor: " + wrong);
        return nullptr;
    }
    auto* tensor = new (std::nothrow) aclTensor{kLive, std::move(t)};
    if (!tensor) return nullptr;
    std::string by = library_of(__builtin_return_address(0));
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    remember(r, tensor, "tensor", "", std::move(by));
    r.log.push_back(log_entry(tensor->info));
    if (r.log.size() > kKeepLog) r.log.erase(r.log.begin());
    return tensor;
}

int aclDestroyTensor(const aclTensor* tensor) {
    if (!tensor) return ACLNN_SUCCESS;
    std::string why;
    if (!live(tensor, "aclDestroyTensor", "tensor", &why))
        return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID, why);
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    bury(r, const_cast<aclTensor*>(tensor));
    return ACLNN_SUCCESS;
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
    if (!value && size) {
        lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, "aclCreateIntArray: value is NULL with size above 0");
        return nullptr;
    }
    auto* a = new (std::nothrow) aclIntArray{kLive, std::vector<int64_t>(value, value + size)};
    if (!a) return nullptr;
    std::string by = library_of(__builtin_return_address(0));
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    remember(r, a, "int array", "", std::move(by));
    return a;
}

int aclDestroyIntArray(const aclIntArray* array) {
    if (!array) return ACLNN_SUCCESS;
    std::string why;
    if (!live(array, "aclDestroyIntArray", "int array", &why))
        return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID, why);
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    bury(r, const_cast<aclIntArray*>(array));
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum) {
    aclnnStatus s;
    const auto* t = getter(tensor, "aclGetViewShape", &s);
    if (!t) return s;
    if (!viewDims || !viewDimsNum)
        return lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewShape: an output is NULL");
    return copy_out(t->dims, viewDims, viewDimsNum);
}

aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum) {
    aclnnStatus s;
    const auto* t = getter(tensor, "aclGetViewStrides", &s);
    if (!t) return s;
    if (!stridesValue || !stridesNum)
        return lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewStrides: an output is NULL");
    return copy_out(t->strides, stridesValue, stridesNum);
}

aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset) {
    aclnnStatus s;
    const auto* t = getter(tensor, "aclGetViewOffset", &s);
    if (!t) return s;
    if (!offset) return lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewOffset: offset is NULL");
    *offset = t->offset;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims,
                               uint64_t* storageDimsNum) {
    aclnnStatus s;
    const auto* t = getter(tensor, "aclGetStorageShape", &s);
    if (!t) return s;
    if (!storageDims || !storageDimsNum)
        return lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetStorageShape: an output is NULL");
    return copy_out(t->storage, storageDims, storageDimsNum);
}

aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
    aclnnStatus s;
    const auto* t = getter(tensor, "aclGetDataType", &s);
    if (!t) return s;
    if (!dataType) return lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetDataType: dataType is NULL");
    *dataType = static_cast<aclDataType>(t->dtype);
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
    aclnnStatus s;
    const auto* t = getter(tensor, "aclGetFormat", &s);
    if (!t) return s;
    if (!format) return lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat: format is NULL");
    *format = static_cast<aclFormat>(t->format);
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size) {
    if (!array || !size)
        return lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetIntArraySize: array or size is NULL");
    std::string why;
    const auto* v = lsg_emu::int_array_values(array, "aclGetIntArraySize", &why);
    if (!v) return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID, why);
    *size = v->size();
    return ACLNN_SUCCESS;
}

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
    if (!executor)
        return lsg_emu::fail(ACLNN_ERR_PARAM_NULLPTR, "aclSetAclOpExecutorRepeatable: executor is NULL");
    std::string why;
    if (!live(executor, "aclSetAclOpExecutorRepeatable", "executor", &why))
        return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID, why);
    executor->repeatable = true;
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
    if (!executor) return ACLNN_SUCCESS;
    std::string why;
    if (!live(executor, "aclDestroyAclOpExecutor", "executor", &why))
        return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID, why);
    if (!executor->repeatable)
        return lsg_emu::fail(ACLNN_ERR_PARAM_INVALID,
                             "aclDestroyAclOpExecutor: executor " + hex(executor) + " of " +
                                 executor->api +
                                 " is not repeatable: phase two releases it; destroy only an "
                                 "executor made repeatable (aclSetAclOpExecutorRepeatable)");
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    bury(r, executor);
    return ACLNN_SUCCESS;
}

}  // extern "C"

// Declared by CANN's opdev/op_log.h (C++ linkage); exported by libnnopbase.
LSG_EMU_API void ReportErrorMessageInner(const std::string& code, const char* fmt, ...) {
    char buf[1024];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    lsg_emu::report(code + ": " + buf);
}

extern "C" {

const char* lsg_emu_acl_take_tensor_log(void) {
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    r.taken = "[";
    for (size_t i = 0; i < r.log.size(); ++i) r.taken += (i ? ", " : "") + r.log[i];
    r.taken += "]";
    r.log.clear();
    return r.taken.c_str();
}

// Live tensors, int arrays and executors: a backend that destroys every handle leaves it where
// it found it.
size_t lsg_emu_acl_live_handles(void) {
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    return r.live.size();
}

uint64_t lsg_emu_acl_handle_serial(void) {
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    return r.serial;
}

const char* lsg_emu_acl_live_handle_list(void) {
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    r.listed = "[";
    bool first = true;
    for (const auto& [object, made] : r.live) {
        r.listed += std::string(first ? "" : ", ") + "{\"serial\": " + std::to_string(made.serial) +
                   ", \"kind\": " + json_text(made.kind) + ", \"api\": " + json_text(made.api) +
                   ", \"by\": " + json_text(made.by) + "}";
        first = false;
    }
    r.listed += "]";
    return r.listed.c_str();
}

int32_t lsg_emu_acl_inject(const char* api, const char* fault) {
    if (!api || !fault) return -1;
    const std::string f = fault;
    if (!f.empty() && f != "refuse" && f != "grow") return -1;
    Registry& r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    const bool armed = r.faults.erase(api) > 0;
    if (!f.empty()) r.faults[api] = f;
    return armed ? 1 : 0;
}

}  // extern "C"
