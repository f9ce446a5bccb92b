// The emulated aclnn layer's registration check (see registration.h).
#include "registration.h"

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "host_tiling.h"
#include "register/op_def_registry.h"

namespace lsg::acpu {

namespace {

// One registered combination: the i-th entry of every parameter's DataType and Format lists, in
// the order aclnn passes them (grad_output, output, then grad_input).
struct Combination {
    int32_t dtype[3];
    bool nd;
};

struct Registered {
    std::string family;
    std::vector<Combination> combinations;
};

const char* const kParams[] = {"grad_output", "output", "grad_input"};
const char* const kLabels[] = {"gradOutput (dy)", "output (y)", "out (gradInput)"};

Verdict refuse(int32_t reason, std::string message) {
    Verdict v;
    v.reason = reason;
    v.status = reason == LSG_REASON_INTERNAL ? LSG_ERR_INNER : LSG_ERR_PARAM_INVALID;
    v.message = std::move(message);
    return v;
}

// The combinations of one configuration; "" or what makes its lists unreadable.
std::string read_config(const std::deque<ops::OpParamDef>& inputs,
                        const std::deque<ops::OpParamDef>& outputs, Registered* out) {
    if (inputs.size() != 2 || outputs.size() != 1)
        return "it declares " + std::to_string(inputs.size()) + " inputs and " +
               std::to_string(outputs.size()) +
               " outputs; the aclnn call passes 2 inputs (grad_output, output) and 1 output";
    const ops::OpParamDef* params[] = {&inputs[0], &inputs[1], &outputs[0]};
    const size_t n = params[0]->GetDataTypes().size();
    for (int i = 0; i < 3; ++i) {
        if (params[i]->GetDataTypes().size() != n || params[i]->GetFormats().size() != n)
            return "its dtype and format lists differ in length (" + params[i]->GetName() +
                   ": " + std::to_string(params[i]->GetDataTypes().size()) + " dtypes, " +
                   std::to_string(params[i]->GetFormats().size()) + " formats; " +
                   params[0]->GetName() + ": " + std::to_string(n) +
                   " dtypes): each combination takes one entry of every list";
    }
    for (size_t k = 0; k < n; ++k) {
        Combination c{};
        c.nd = true;
        for (int i = 0; i < 3; ++i) {
            c.dtype[i] = static_cast<int32_t>(params[i]->GetDataTypes()[k]);
            c.nd = c.nd && params[i]->GetFormats()[k] == ge::FORMAT_ND;
        }
        out->combinations.push_back(c);
    }
    return "";
}

std::string dtype_text(int32_t d) {
    const std::string name = dtype_name(d);
    return name == "unknown" ? "code " + std::to_string(d) : name;
}

// "float32, float16 or bfloat16": the distinct dy dtypes of `regs`, in registration order.
std::string dy_choices(const std::vector<const Registered*>& regs) {
    std::vector<int32_t> seen;
    for (const Registered* r : regs)
        for (const Combination& c : r->combinations)
            if (std::find(seen.begin(), seen.end(), c.dtype[0]) == seen.end())
                seen.push_back(c.dtype[0]);
    std::string s;
    for (size_t i = 0; i < seen.size(); ++i)
        s += (i == 0 ? "" : i + 1 == seen.size() ? " or " : ", ") + dtype_text(seen[i]);
    return s.empty() ? "nothing" : s;
}

bool dtypes_match(const Combination& c, const Call& call) {
    return c.dtype[0] == call.dy.dtype && c.dtype[1] == call.y.dtype &&
           c.dtype[2] == call.out.dtype;
}

bool all_same_dtype(const std::vector<const Registered*>& regs) {
    for (const Registered* r : regs)
        for (const Combination& c : r->combinations)
            if (c.dtype[1] != c.dtype[0] || c.dtype[2] != c.dtype[0]) return false;
    return true;
}

}  // namespace

Verdict check_registration(const Call& call, const SocProfile& soc) {
    const ops::OpDef* def = ops::OpDefFactory::EmuFind(kOpType);
    if (def == nullptr)
        return refuse(LSG_REASON_INTERNAL,
                      std::string("no OpDef registered as ") + kOpType + " (OP_ADD did not run)");
    std::vector<Registered> all;
    const Registered* here = nullptr;
    for (const ops::OpAICoreDef::Config& config : def->GetAICore().GetAICoreConfigs()) {
        const std::deque<ops::OpParamDef>* inputs = nullptr;
        const std::deque<ops::OpParamDef>* outputs = nullptr;
        def->EmuParamsFor(config.soc, &inputs, &outputs);
        Registered r;
        r.family = config.soc;
        const std::string wrong = read_config(*inputs, *outputs, &r);
        if (!wrong.empty())
            return refuse(LSG_REASON_INTERNAL, std::string(kOpType) +
                                                   "'s OpDef configuration for " + config.soc +
                                                   " cannot be checked: " + wrong);
        all.push_back(std::move(r));
    }
    std::vector<const Registered*> every;
    for (const Registered& r : all) {
        every.push_back(&r);
        if (r.family == soc.family) here = &r;
    }
    if (here == nullptr)
        return refuse(LSG_REASON_INTERNAL,
                      std::string(kOpType) + " registers no AI Core configuration for " +
                          soc.family + " (AICore().AddConfig), so there is no kernel for " +
                          soc.name);

    const auto registered_anywhere = [&](auto&& pred) {
        return std::any_of(every.begin(), every.end(), [&](const Registered* r) {
            return std::any_of(r->combinations.begin(), r->combinations.end(), pred);
        });
    };
    const std::string dy = dtype_text(call.dy.dtype);
    const std::string origin = std::string(" (") + kOpType + "'s OpDef registration)";

    // The contract's order: dy's dtype at all, then the three together, then on this SoC.
    if (!registered_anywhere([&](const Combination& c) { return c.dtype[0] == call.dy.dtype; }))
        return refuse(LSG_REASON_DTYPE_UNSUPPORTED, "gradOutput (dy) dtype " + dy +
                                                        " is not supported: use " +
                                                        dy_choices(every) + origin);
    if (!registered_anywhere([&](const Combination& c) { return dtypes_match(c, call); })) {
        const bool y_fits = registered_anywhere([&](const Combination& c) {
            return c.dtype[0] == call.dy.dtype && c.dtype[1] == call.y.dtype;
        });
        const int i = y_fits ? 2 : 1;
        const int32_t other = i == 1 ? call.y.dtype : call.out.dtype;
        return refuse(LSG_REASON_DTYPE_MISMATCH,
                      std::string(kLabels[i]) + " dtype " + dtype_text(other) +
                          " differs from gradOutput (dy) dtype " + dy + ": no combination of " +
                          kOpType + "'s OpDef registration takes " + kParams[i] + " " +
                          dtype_text(other) + " with grad_output " + dy +
                          (all_same_dtype(every)
                               ? "; gradOutput, output and out must have the same dtype"
                               : ""));
    }
    const auto on_this_soc = std::find_if(
        here->combinations.begin(), here->combinations.end(),
        [&](const Combination& c) { return dtypes_match(c, call); });
    if (on_this_soc == here->combinations.end()) {
        const bool bf16 = call.dy.dtype == LSG_DT_BF16;
        return refuse(bf16 ? LSG_REASON_BF16_UNSUPPORTED_ON_SOC : LSG_REASON_DTYPE_UNSUPPORTED,
                      dy + " is not supported on " + soc.name + ": " + kOpType +
                          "'s OpDef registers no " + dy + " kernel for " + soc.family +
                          "; use " + dy_choices({here}));
    }
    for (auto c = on_this_soc; c != here->combinations.end(); ++c)
        if (dtypes_match(*c, call) && c->nd) return Verdict{};
    return refuse(LSG_REASON_INVALID_ARGUMENT,
                  std::string(kOpType) + "'s OpDef registers " + dy + " for " + soc.family +
                      " only in formats other than ND, and the call's tensors are ND");
}

}  // namespace lsg::acpu
