// lsg_version and lsg_build_info of liblsg_ascendc_cpu.so: the only translation unit that knows
// how the library was built, so that the planted variants share every other object file.
#include "build_info.h"
#include "lsg_ascendc_cpu.h"

extern "C" {

const char* lsg_version(void) { return LSG_VERSION; }

const char* lsg_build_info(void) {
    return "plant_bug=" LSG_PLANT_BUG_NAME ";sanitize=" LSG_STR(LSG_SANITIZE_BUILD)
           ";target=ascendc-cpu";
}

}  // extern "C"
