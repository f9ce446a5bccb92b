#!/usr/bin/env bash
# Build the Ascend C LogSoftmaxGrad operator package.  Needs the CANN toolkit (msopgen, the
# Ascend C compiler): it runs only where ASCEND_HOME_PATH points to one, and otherwise stops
# with one clear message.  This project's CI has no CANN; there, the SSH lab's stand-in toolchain
# (farm/pool/lab/cann_toolchain.py) plays msopgen and the project's build.
#
#   op/ascendc/build.sh [OUT_DIR]     (default: op/ascendc/build_out)
#
# Steps: msopgen generates the standard custom-operator project from log_softmax_grad.json (op
# type LogSoftmaxGradCustom: not CANN's built-in LogSoftmaxGrad, which a custom op of that name
# would replace for every process that sees the package); our op_host, the shared tiling
# (op/tiling) and the kernel (as op_kernel/log_softmax_grad_custom.cpp, the op type's name)
# replace its stubs; the operator's aclnn layer (op_api: the seed's aclnnLogSoftmaxBackward over
# the generated entry) goes into the project and into its op-api library: a generated project
# compiles only the generated aclnn_*.cpp into cust_opapi and installs only their headers, so
# the layer's sources and header are added to that target here.  The project's build.sh compiles
# for the compute units in LSG_COMPUTE_UNITS (default ascend910b;ascend310b) and makes the
# custom_opp_*.run installer, which is copied to OUT_DIR once the op-api library it built is
# seen to export the seed's entry points.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/build_out}
op_type=LogSoftmaxGradCustom
op_file=log_softmax_grad_custom
seed_entries="aclnnLogSoftmaxBackwardGetWorkspaceSize aclnnLogSoftmaxBackward aclnnLogSoftmaxBackwardDimsGetWorkspaceSize aclnnLogSoftmaxBackwardDims"

if [ -z "${ASCEND_HOME_PATH:-}" ] || [ ! -d "${ASCEND_HOME_PATH}" ]; then
  echo "op/ascendc/build.sh: needs the CANN toolkit, but ASCEND_HOME_PATH does not point to one (source <CANN>/set_env.sh first); the CPU twin builds without it: python -m farm.pool.build --target twin" >&2
  exit 2
fi
# msopgen: on PATH (set_env.sh puts it there), else where the toolkit keeps it.
msopgen=$(command -v msopgen 2>/dev/null || true)
for candidate in "$ASCEND_HOME_PATH/python/site-packages/bin/msopgen" "$ASCEND_HOME_PATH/bin/msopgen"; do
  if [ -z "$msopgen" ] && [ -x "$candidate" ]; then msopgen=$candidate; fi
done
if [ -z "$msopgen" ]; then
  echo "op/ascendc/build.sh: msopgen not found on PATH nor under ASCEND_HOME_PATH=${ASCEND_HOME_PATH} (python/site-packages/bin); source ${ASCEND_HOME_PATH}/set_env.sh" >&2
  exit 2
fi

units=${LSG_COMPUTE_UNITS:-ascend910b;ascend310b}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
project="$work/$op_type"

"$msopgen" gen -i "$here/log_softmax_grad.json" -c ai_core-Ascend910B1 -lan cpp -out "$project" >/dev/null

# Our sources over the generated stubs; the shared tiling beside op_host (it compiles *.cpp).
rm -f "$project"/op_host/*.cpp "$project"/op_host/*.h "$project"/op_kernel/*.cpp
cp "$here"/op_host/*.cpp "$here"/op_host/*.h "$project/op_host/"
cp "$here"/../tiling/tiling.h "$here"/../tiling/tiling.cpp "$here"/../tiling/lsg_types.h \
   "$here"/../tiling/reasons.def "$here"/../tiling/soc_profiles.inc "$project/op_host/"
cp "$here"/op_kernel/log_softmax_grad.cpp "$project/op_kernel/$op_file.cpp"
mkdir -p "$project/op_api"
cp "$here"/op_api/*.cpp "$here"/op_api/*.h "$project/op_api/"

# The aclnn layer in the package's op-api library, and its header installed beside the generated
# one's.  The target is the generated project's; without it the package cannot have the layer.
host_cmake="$project/op_host/CMakeLists.txt"
if ! grep -q 'cust_opapi' "$host_cmake" 2>/dev/null; then
  echo "op/ascendc/build.sh: msopgen's $host_cmake defines no cust_opapi target, where the package's aclnn layer is compiled: this msopgen lays the project out differently; add op_api/*.cpp to its op-api library" >&2
  exit 2
fi
cat >> "$host_cmake" <<'CMAKE'

# Added by op/ascendc/build.sh: the operator's aclnn layer (the seed's aclnnLogSoftmaxBackward over
# the generated entry) in the op-api library, with what it calls, and its header installed.
target_sources(cust_opapi PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/../op_api/aclnn_log_softmax_backward.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/../op_api/log_softmax_backward_checks.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/tiling.cpp)
target_include_directories(cust_opapi PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/../op_api ${ASCEND_AUTOGEN_PATH})
target_link_libraries(cust_opapi PRIVATE opapi)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/../op_api/aclnn_log_softmax_backward.h
        DESTINATION packages/vendors/${vendor_name}/op_api/include)
CMAKE

# Compute units and the CANN location are settings of the generated CMakePresets.json.
python3 - "$project/CMakePresets.json" "$units" "$ASCEND_HOME_PATH" <<'PY'
import json, sys
path, units, cann = sys.argv[1:]
presets = json.load(open(path))
for preset in presets.get("configurePresets", []):
    cache = preset.get("cacheVariables", {})
    if "ASCEND_COMPUTE_UNIT" in cache:
        cache["ASCEND_COMPUTE_UNIT"]["value"] = units
    if "ASCEND_CANN_PACKAGE_PATH" in cache:
        cache["ASCEND_CANN_PACKAGE_PATH"]["value"] = cann
json.dump(presets, open(path, "w"), indent=4)
PY

(cd "$project" && bash build.sh)

# The op-api library the build made must export the seed's entry points (the acl backend and
# torch_npu-style callers look them up by name).
libs=$(find "$project/build_out" -name libcust_opapi.so -type f 2>/dev/null)
if [ -z "$libs" ]; then
  echo "op/ascendc/build.sh: the build made no libcust_opapi.so under $project/build_out: the package would have no aclnn entry" >&2
  exit 1
fi
exports=$(python3 - $libs <<'PY'
import ctypes.util, subprocess, sys
names = set()
for lib in sys.argv[1:]:
    try:
        done = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
    except OSError:
        print("?"); sys.exit()
    names |= {line.split()[-1] for line in done.stdout.splitlines() if line.strip()}
print(" ".join(sorted(names)))
PY
)
if [ "$exports" != "?" ]; then
  for entry in $seed_entries; do
    case " $exports " in
      *" $entry "*) ;;
      *) echo "op/ascendc/build.sh: libcust_opapi.so does not export $entry: the op_api layer was not compiled into the package's op-api library (the cust_opapi lines this script adds to the generated op_host/CMakeLists.txt)" >&2; exit 1 ;;
    esac
  done
fi

mkdir -p "$out"
cp "$project"/build_out/custom_opp_*.run "$out/"
# One line per installer: a path may hold spaces (a workdir under "/home/First Last").
for installer in "$out"/custom_opp_*.run; do
  echo "op/ascendc/build.sh: $installer"
done
