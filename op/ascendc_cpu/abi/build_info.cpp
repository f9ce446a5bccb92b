// lsg_version and lsg_build_info of liblsg_ascendc_cpu.so: the only translation unit that knows
// how the library was built, so that the planted variants share every other object file.
#include "lsg_ascendc_cpu.h"

#ifndef LSG_VERSION
#define LSG_VERSION "0.0.0"
#endif
#ifndef LSG_PLANT_BUG_NAME
#define LSG_PLANT_BUG_NAME ""
#endif
#ifndef LSG_SANITIZE_BUILD
#define LSG_SANITIZE_BUILD 0
#endif
#define LSG_STR2(x) #x
#define LSG_STR(x) LSG_STR2(x)

extern "C" {

const char* lsg_version(void) { return LSG_VERSION; }

const char* lsg_build_info(void) {
    return "plant_bug=" LSG_PLANT_BUG_NAME ";sanitize=" LSG_STR(LSG_SANITIZE_BUILD)
           ";target=ascendc-cpu";
}

}  // extern "C"
