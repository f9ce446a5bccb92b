#!/usr/bin/env bash
# Build the Ascend C LogSoftmaxGrad operator package.  Needs the CANN toolkit (msopgen, the
# Ascend C compiler): it runs only where ASCEND_HOME_PATH points to one, and otherwise stops
# with one clear message.  This project's CI has no CANN; there, only the CPU twin (op/) builds.
#
#   op/ascendc/build.sh [OUT_DIR]     (default: op/ascendc/build_out)
#
# Steps: msopgen generates the standard custom-operator project from log_softmax_grad.json; our
# op_host, op_kernel and the shared tiling (op/tiling) replace its stubs; the operator's aclnn
# layer (op_api: the seed's aclnnLogSoftmaxBackward over the generated entry) goes beside them;
# its build.sh compiles for the compute units in LSG_COMPUTE_UNITS (default ascend910b;ascend310b)
# and makes the custom_opp_*.run installer, which is copied to OUT_DIR.  Linking op_api into the
# package's libcust_opapi.so is the part of this script that has not met a CANN build yet
# (docs/first-run-on-atlas.md).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/build_out}

if [ -z "${ASCEND_HOME_PATH:-}" ] || [ ! -d "${ASCEND_HOME_PATH}" ]; then
  echo "op/ascendc/build.sh: needs the CANN toolkit, but ASCEND_HOME_PATH does not point to one (source <CANN>/set_env.sh first); the CPU twin builds without it: python -m farm.build --target twin" >&2
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
project="$work/LogSoftmaxGrad"

"$msopgen" gen -i "$here/log_softmax_grad.json" -c ai_core-Ascend910B1 -lan cpp -out "$project" >/dev/null

# Our sources over the generated stubs; the shared tiling beside op_host (it compiles *.cpp).
rm -f "$project"/op_host/*.cpp "$project"/op_host/*.h "$project"/op_kernel/*.cpp
cp "$here"/op_host/*.cpp "$here"/op_host/*.h "$project/op_host/"
cp "$here"/../tiling/tiling.h "$here"/../tiling/tiling.cpp "$here"/../tiling/lsg_types.h \
   "$here"/../tiling/soc_profiles.inc "$project/op_host/"
cp "$here"/op_kernel/*.cpp "$project/op_kernel/"
mkdir -p "$project/op_api"
cp "$here"/op_api/*.cpp "$here"/op_api/*.h "$project/op_api/"

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

mkdir -p "$out"
cp "$project"/build_out/custom_opp_*.run "$out/"
# One line per installer: a path may hold spaces (a workdir under "/home/First Last").
for installer in "$out"/custom_opp_*.run; do
  echo "op/ascendc/build.sh: $installer"
done
