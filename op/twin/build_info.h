// How a library of the C ABI was built, for lsg_version and lsg_build_info: the version, the
// planted bug and whether it is a sanitizer build (compile definitions from op/CMakeLists.txt;
// the defaults here are what a build without them is).
#ifndef LSG_BUILD_INFO_H
#define LSG_BUILD_INFO_H

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

#endif  // LSG_BUILD_INFO_H
