# The emulated ACL runtime (op/acl_emu) and the operator's op-api on it, compiled against the
# genuine ACL headers in LSG_ACL_SDK (farm/pool/acl_sdk.py fetches them).  Included by op/CMakeLists.txt
# inside the lsg_ascendc_cpu section: the custom operator's library reuses its object files of the
# real host code, kernel and emulated device.  Everything goes to ${CMAKE_BINARY_DIR}/acl:
#   lib/libascendcl.so     the runtime (acl/acl.h): devices, memory, streams, events
#   lib/libnnopbase.so     the aclnn tensor helpers and executors (aclnn/aclnn_base.h)
#   lib/libopapi.so        CANN's built-in aclnnInplaceCopy
#   lib/libcust_opapi.so   the custom operator's op-api: the generated entry (emulated) and the
#                          operator's aclnn layer (op/ascendc/op_api), over the real host code and
#                          kernel on the emulated device
#   cann-before-8.1/libascendcl.so    the runtime without the version queries a CANN release
#                          before 8.1.RC1 lacks
#   generated-only/libcust_opapi.so   the same without the aclnn layer: what a package whose
#                          build does not compile the layer into its op-api library would hold
#                          (the SSH lab's stand-in CANN build links one or the other)
#   test_aclnn_log_softmax_grad   the aclnn example (op/ascendc/examples), linked against them
# A planted bug's library gets the op-api of the same bug (its edits of the host code, kernel and
# aclnn layer); with LSG_PLANT_ALL, each bug's in planted-lib/<bug>/acl/lib (lsg_acl_planted_<bug>).
set(LSG_ACL_EMU_DIR "${CMAKE_CURRENT_SOURCE_DIR}/acl_emu")
set(LSG_ACL_OUT "${CMAKE_BINARY_DIR}/acl")
set(LSG_ACL_INCLUDES
  "${LSG_ACL_EMU_DIR}/include"
  "${CMAKE_CURRENT_SOURCE_DIR}/ascendc/op_api")

function(lsg_acl_library target name)
  add_library(${target} SHARED ${ARGN})
  target_include_directories(${target} PRIVATE ${LSG_ACL_INCLUDES} "${LSG_ACL_EMU_DIR}/src")
  # The genuine headers are not ours to keep free of warnings.
  target_include_directories(${target} SYSTEM PRIVATE "${LSG_ACL_SDK}/include")
  target_compile_options(${target} PRIVATE ${LSG_COMMON_FLAGS})
  # ACL_FUNC_VISIBILITY exports the declared API; everything else stays hidden.
  target_compile_definitions(${target} PRIVATE FUNC_VISIBILITY)
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  # Each finds the others beside itself, and nothing of the build directory is in the binary.
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${name}
    LIBRARY_OUTPUT_DIRECTORY "${LSG_ACL_OUT}/lib"
    BUILD_WITH_INSTALL_RPATH ON
    INSTALL_RPATH "$ORIGIN")
endfunction()

lsg_acl_library(lsg_acl_ascendcl ascendcl "${LSG_ACL_EMU_DIR}/src/runtime.cpp")
target_link_libraries(lsg_acl_ascendcl PRIVATE Threads::Threads)
# The runtime as a CANN release before 8.1.RC1 has it: without the version queries (tests put it
# in place of the lab's to see the backend and `farm hosts --check --deep` do without them).
lsg_acl_library(lsg_acl_ascendcl_before_8_1 ascendcl "${LSG_ACL_EMU_DIR}/src/runtime.cpp")
target_link_libraries(lsg_acl_ascendcl_before_8_1 PRIVATE Threads::Threads)
target_compile_definitions(lsg_acl_ascendcl_before_8_1 PRIVATE LSG_EMU_CANN_BEFORE_8_1)
set_target_properties(lsg_acl_ascendcl_before_8_1 PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY "${LSG_ACL_OUT}/cann-before-8.1")
lsg_acl_library(lsg_acl_nnopbase nnopbase "${LSG_ACL_EMU_DIR}/src/nnopbase.cpp")
# dladdr: which library made a live handle (older glibc keeps it in libdl).
target_link_libraries(lsg_acl_nnopbase PRIVATE lsg_acl_ascendcl ${CMAKE_DL_LIBS})
lsg_acl_library(lsg_acl_opapi opapi "${LSG_ACL_EMU_DIR}/src/builtin_ops.cpp")
target_link_libraries(lsg_acl_opapi PRIVATE lsg_acl_nnopbase lsg_acl_ascendcl)

# The host code, kernel and device objects of `lib` (an lsg_acpu_library target: lsg_ascendc_cpu,
# or lsg_ascendc_cpu_<bug>) that its custom op-api runs, the planted ones where its bug edits them.
function(lsg_acl_objects lib out)
  set(_objects "")
  foreach(_rel ascendc/op_host/log_softmax_grad.cpp ascendc/op_api/log_softmax_backward_checks.cpp
               ascendc_cpu/host/host_tiling.cpp ascendc_cpu/host/inference.cpp
               ascendc_cpu/host/registration.cpp ascendc_cpu/host/op_def_registry.cpp
               tiling/tiling.cpp)
    list(FIND LSG_ACPU_SOURCES ${_rel} _at)
    list(APPEND _objects $<TARGET_OBJECTS:${LSG_OBJ_${lib}_${_at}}>)
  endforeach()
  list(LENGTH LSG_ACPU_SOURCES _kernel_at)
  foreach(_dtype IN LISTS LSG_ACPU_DTYPES)
    list(APPEND _objects $<TARGET_OBJECTS:${LSG_OBJ_${lib}_${_kernel_at}}_${_dtype}>)
  endforeach()
  list(APPEND _objects $<TARGET_OBJECTS:lsg_acpu_device>)
  set(${out} "${_objects}" PARENT_SCOPE)
endfunction()

# The generated entry (emulated) and the real aclnn layer, compiled once for every op-api.
function(lsg_acl_object target file)
  add_library(${target} OBJECT "${file}")
  target_include_directories(${target} PRIVATE ${LSG_ACL_INCLUDES} "${LSG_ACL_EMU_DIR}/src"
                             ${LSG_ACPU_INCLUDES})
  target_include_directories(${target} SYSTEM PRIVATE "${LSG_ACL_SDK}/include")
  target_compile_options(${target} PRIVATE ${LSG_COMMON_FLAGS})
  target_compile_definitions(${target} PRIVATE FUNC_VISIBILITY)
endfunction()
lsg_acl_object(lsg_acl_generated_obj "${LSG_ACL_EMU_DIR}/src/generated_op_api.cpp")
set(LSG_ACL_REAL_LAYER "${CMAKE_CURRENT_SOURCE_DIR}/${LSG_ACL_LAYER_SOURCE}")
lsg_acl_object(lsg_acl_layer_obj "${LSG_ACL_REAL_LAYER}")

# The custom op-api of `lib` in `outdir`: the generated entry and the aclnn layer of the same bug
# (LSG_LAYER_<lib>: the planted copy where the bug edits the layer, compiled for it alone).
function(lsg_acl_cust_opapi target lib outdir)
  lsg_acl_objects(${lib} _objects)
  set(_layer lsg_acl_layer_obj)
  if(NOT LSG_LAYER_${lib} STREQUAL LSG_ACL_REAL_LAYER)
    set(_layer ${target}_layer_obj)
    lsg_acl_object(${_layer} "${LSG_LAYER_${lib}}")
  endif()
  lsg_acl_library(${target} cust_opapi $<TARGET_OBJECTS:lsg_acl_generated_obj>
    $<TARGET_OBJECTS:${_layer}> ${_objects})
  target_include_directories(${target} PRIVATE ${LSG_ACPU_INCLUDES})
  target_link_libraries(${target} PRIVATE lsg_acl_opapi lsg_acl_nnopbase lsg_acl_ascendcl
                        Threads::Threads)
  set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${outdir}")
endfunction()

lsg_acl_cust_opapi(lsg_acl_cust_opapi lsg_ascendc_cpu "${LSG_ACL_OUT}/lib")

lsg_acl_objects(lsg_ascendc_cpu _objects)
lsg_acl_library(lsg_acl_cust_opapi_generated cust_opapi
  $<TARGET_OBJECTS:lsg_acl_generated_obj> ${_objects})
target_include_directories(lsg_acl_cust_opapi_generated PRIVATE ${LSG_ACPU_INCLUDES})
target_link_libraries(lsg_acl_cust_opapi_generated PRIVATE lsg_acl_nnopbase lsg_acl_ascendcl
                      Threads::Threads)
set_target_properties(lsg_acl_cust_opapi_generated PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY "${LSG_ACL_OUT}/generated-only" INSTALL_RPATH "$ORIGIN/../lib")

# With LSG_PLANT_ALL, every planted bug's ACL path too: lsg_acl_planted_<bug> puts its op-api and
# the runtime's libraries (the same for every bug) in planted-lib/<bug>/acl/lib, beside its
# liblsg_ascendc_cpu.so, where the package takes them from (farm/pool/build/cmake.py acl_files).
if(LSG_PLANT_ALL)
  foreach(_bug IN LISTS LSG_ACPU_PLANT_BUGS)
    set(_dir "${CMAKE_BINARY_DIR}/planted-lib/${_bug}/acl/lib")
    lsg_acl_cust_opapi(lsg_acl_cust_opapi_${_bug} lsg_ascendc_cpu_${_bug} "${_dir}")
    add_custom_target(lsg_acl_planted_${_bug}
      COMMAND ${CMAKE_COMMAND} -E copy_if_different $<TARGET_FILE:lsg_acl_ascendcl>
              $<TARGET_FILE:lsg_acl_nnopbase> $<TARGET_FILE:lsg_acl_opapi> "${_dir}"
      DEPENDS lsg_acl_cust_opapi_${_bug} lsg_acl_ascendcl lsg_acl_nnopbase lsg_acl_opapi
      VERBATIM)
  endforeach()
endif()

# Our declarations against the genuine ones (a compile error when they differ).
add_library(lsg_acl_genuine_check OBJECT "${LSG_ACL_EMU_DIR}/src/genuine_check.cpp")
target_include_directories(lsg_acl_genuine_check PRIVATE ${LSG_ACL_INCLUDES})
target_include_directories(lsg_acl_genuine_check SYSTEM PRIVATE "${LSG_ACL_SDK}/include"
                           "${LSG_ACL_SDK}/genuine")
add_dependencies(lsg_acl_cust_opapi lsg_acl_genuine_check)

add_executable(lsg_acl_example "${CMAKE_CURRENT_SOURCE_DIR}/ascendc/examples/test_aclnn_log_softmax_grad.cpp")
target_include_directories(lsg_acl_example PRIVATE ${LSG_ACL_INCLUDES})
target_include_directories(lsg_acl_example SYSTEM PRIVATE "${LSG_ACL_SDK}/include")
target_compile_options(lsg_acl_example PRIVATE -Wall -Wextra)
target_link_libraries(lsg_acl_example PRIVATE lsg_acl_cust_opapi lsg_acl_nnopbase lsg_acl_ascendcl)
set_target_properties(lsg_acl_example PROPERTIES
  OUTPUT_NAME test_aclnn_log_softmax_grad
  RUNTIME_OUTPUT_DIRECTORY "${LSG_ACL_OUT}"
  BUILD_RPATH "${LSG_ACL_OUT}/lib")

add_custom_target(lsg_acl_emu DEPENDS lsg_acl_cust_opapi lsg_acl_cust_opapi_generated
                  lsg_acl_ascendcl_before_8_1 lsg_acl_example)

# The coverage build: the aclnn layer instrumented too, and the dump farm coverage calls per case.
if(LSG_COVERAGE)
  set_source_files_properties("${CMAKE_CURRENT_SOURCE_DIR}/ascendc/op_api/aclnn_log_softmax_backward.cpp"
    PROPERTIES COMPILE_OPTIONS "${LSG_COVERAGE_FLAGS}")
  target_sources(lsg_acl_cust_opapi PRIVATE "${LSG_ACPU_DIR}/abi/coverage_dump.cpp")
  target_include_directories(lsg_acl_cust_opapi PRIVATE "${LSG_ACPU_DIR}/abi")
  target_link_options(lsg_acl_cust_opapi PRIVATE --coverage)
  target_link_options(lsg_acl_cust_opapi_generated PRIVATE --coverage)
  target_link_options(lsg_acl_example PRIVATE --coverage)
endif()
