// CPU emulation of fe::PlatFormInfos, the platform description a tiling context carries.  Here it
// is one entry of the operator's own SoC table (op/tiling/soc_profiles.inc, lsg::SocProfile): the
// emulated platform has no second table.
#ifndef LSG_EMU_PLATFORM_INFOS_DEF_H
#define LSG_EMU_PLATFORM_INFOS_DEF_H

#include "tiling.h"  // lsg::SocProfile (op/tiling)

namespace fe {

class PlatFormInfos {
public:
    // -- emulation only: the SoC this platform is (an entry of lsg::soc_at / lsg::find_soc).
    explicit PlatFormInfos(const lsg::SocProfile* soc) : soc_(soc) {}
    const lsg::SocProfile* EmuSoc() const { return soc_; }

private:
    const lsg::SocProfile* soc_;
};

}  // namespace fe

#endif  // LSG_EMU_PLATFORM_INFOS_DEF_H
