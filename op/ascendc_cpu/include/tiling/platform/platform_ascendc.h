// CPU emulation of platform_ascendc::PlatformAscendC, the platform information a tiling function
// reads (public Ascend C "platform information" API).  The values come from the operator's own SoC
// table (op/tiling/soc_profiles.inc through lsg::SocProfile), which the emulated platform carries:
// vector core count, Unified Buffer size, and the SoC version from its family.
#ifndef LSG_EMU_PLATFORM_ASCENDC_H
#define LSG_EMU_PLATFORM_ASCENDC_H

#include <cstdint>
#include <string_view>

#include "platform/platform_infos_def.h"

namespace platform_ascendc {

enum class CoreMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, RESERVED };

enum class SocVersion {
    ASCEND910 = 0,
    ASCEND910B,
    ASCEND310P,
    ASCEND310B,
    RESERVED_VERSION = 99999
};

class PlatformAscendC {
public:
    explicit PlatformAscendC(fe::PlatFormInfos* platform_info) : info_(platform_info) {}

    // Vector cores (AIV) of the SoC.
    uint32_t GetCoreNumAiv() const { return Soc() ? static_cast<uint32_t>(Soc()->vector_cores) : 0; }
    // The operator runs on vector cores only; the emulation reports them as its cores too.
    uint32_t GetCoreNum() const { return GetCoreNumAiv(); }
    SocVersion GetSocVersion() const {
        if (!Soc()) return SocVersion::RESERVED_VERSION;
        const std::string_view family = Soc()->family;
        if (family == "ascend910b") return SocVersion::ASCEND910B;
        if (family == "ascend310b") return SocVersion::ASCEND310B;
        return SocVersion::RESERVED_VERSION;
    }
    // Bytes of one core's memory of `type`.  The table knows the Unified Buffer only: any other
    // memory reads 0.
    void GetCoreMemSize(CoreMemType type, uint64_t& size) const {
        size = type == CoreMemType::UB && Soc() ? static_cast<uint64_t>(Soc()->ub_bytes) : 0;
    }
    // The system workspace the Ascend C library APIs need, in bytes: 16 MiB on the Atlas A2
    // (Ascend910B) family, 2 MiB elsewhere, as the public platform implementation reports.  The
    // kernel of this operator does not use it; the emulated framework allocates it all the same.
    uint32_t GetLibApiWorkSpaceSize() const {
        return GetSocVersion() == SocVersion::ASCEND910B ? 16u * 1024 * 1024 : 2u * 1024 * 1024;
    }

private:
    const lsg::SocProfile* Soc() const { return info_ ? info_->EmuSoc() : nullptr; }
    fe::PlatFormInfos* info_;
};

}  // namespace platform_ascendc

#endif  // LSG_EMU_PLATFORM_ASCENDC_H
