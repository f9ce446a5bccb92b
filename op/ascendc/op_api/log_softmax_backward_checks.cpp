#include "log_softmax_backward_checks.h"

namespace lsg::op_api {

namespace {

constexpr const char kLogLine[] = "LogSoftmaxGrad: status ";

// `said` without the "LogSoftmaxGrad: status S (reason R): " of the operator's own log line.
std::string words(const std::string& said) {
    if (said.rfind(kLogLine, 0) != 0) return said;
    const size_t at = said.find("): ");
    return at == std::string::npos ? said : said.substr(at + 3);
}

}  // namespace

Verdict check_call(const Call& call) {
    const Verdict descriptors = check_descriptors(call);
    if (!descriptors.ok()) return descriptors;
    return check_present(call);
}

Verdict after_refusal(const Call& call, const SocProfile* soc, int32_t status,
                      const std::string& said) {
    Verdict v;
    v.status = LSG_ERR_INNER;
    v.reason = LSG_REASON_INTERNAL;
    if (!soc) {
        v.reason = LSG_REASON_UNKNOWN_SOC;
        v.message = "internal error: the SoC is neither in the operator's SoC table nor of a family "
                    "it knows (Ascend910B<n>, Ascend310B<n>); the generated "
                    "entry said (status " + std::to_string(status) + "): " + said;
        return v;
    }
    Verdict contract = validate(call, *soc);
    if (!contract.ok()) {
        // The refusing layer's own words where they say more than the contract's (the OpDef
        // registration names itself; the tiling function says what the contract says).
        const std::string own = words(said);
        if (own.find(contract.message) != std::string::npos)
            contract.message = own;
        else if (!own.empty())
            contract.message += "; the generated entry said: " + own;
        if (status == LSG_ERR_PARAM_INVALID)
            contract.message += "; refused by the OpDef registration";
        else if (status == kTilingRefused)
            contract.message += "; refused by the tiling function";
        return contract;
    }
    v.message = "internal error: the generated entry refused a call the contract accepts (status " +
                std::to_string(status) + "): " + said;
    return v;
}

std::string message(const char* api, const Verdict& v) {
    return lsg::reason_line(v) + " [" + api + "]";
}

}  // namespace lsg::op_api
