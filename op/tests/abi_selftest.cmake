# The C ABI self-test (abi_selftest.cpp), one executable per library, built only on request
# (EXCLUDE_FROM_ALL; farm/pool/build/selftest.py cross_selftest builds it for the build's architecture):
#   lsg_abi_selftest_twin          <build>/tests/lsg_abi_selftest_twin
#   lsg_abi_selftest_ascendc_cpu   <build>/tests/lsg_abi_selftest_ascendc_cpu
# Each links its library as a C caller does (lsg_twin.h, -l), with the build directory in its
# RUNPATH; LD_LIBRARY_PATH runs it on another copy of the library. Not in sanitizer builds.
function(lsg_abi_selftest lib name)
  if(NOT TARGET ${lib} OR LSG_SANITIZE)
    return()
  endif()
  set(_t lsg_abi_selftest_${name})
  add_executable(${_t} EXCLUDE_FROM_ALL "${CMAKE_CURRENT_SOURCE_DIR}/tests/abi_selftest.cpp")
  target_include_directories(${_t} PRIVATE
    "${CMAKE_CURRENT_SOURCE_DIR}/tiling" "${CMAKE_CURRENT_SOURCE_DIR}/twin")
  target_compile_options(${_t} PRIVATE ${LSG_COMMON_FLAGS})
  target_compile_definitions(${_t} PRIVATE LSG_SELFTEST_LIB="${lib}")
  target_link_libraries(${_t} PRIVATE ${lib} ${CMAKE_DL_LIBS})
  set_target_properties(${_t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests")
endfunction()

lsg_abi_selftest(lsg_twin twin)
lsg_abi_selftest(lsg_ascendc_cpu ascendc_cpu)
