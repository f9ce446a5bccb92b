"""The SSH lab's stand-in for CANN's operator toolchain (TEST-ONLY): ``msopgen`` and the build of
the project it generates, as op/ascendc/build.sh drives them on a host with CANN.

``msopgen gen`` makes the project as msopgen does, in layout and in what its CMake builds: the
op type's files under op_host/ and op_kernel/ (``log_softmax_grad_custom.cpp``, its tiling
header), the presets, and an ``op_host/CMakeLists.txt`` whose ``cust_opapi`` (the package's
op-api library, ``op_api/lib/libcust_opapi.so``) compiles the aclnn entry CANN generates from the
OpDef (``${ASCEND_AUTOGEN_PATH}/aclnn_*.cpp``) and nothing else, and installs only its header
(msopgen-generated projects' op_host/CMakeLists.txt; asc-devkit "单算子API调用"). Whatever else
the package's op-api must hold, the project's author adds to that target.

``build`` checks what a CANN build needs and op/ascendc/build.sh must give it — the presets
(compute units, the CANN path); the sources in the places and with the names CANN compiles them
from (the kernel in ``op_kernel/<op type>.cpp``, its entry named after the op type; OP_ADD and
the tiling data registered for the op type) — and then builds as CANN would, with these
stand-ins for what needs CANN's compilers:

- the kernel is compiled per compute unit (``__NPU_ARCH__`` 2201 for ascend910b, 3002 for
  ascend310b) against the emulated Ascend C headers, syntax only, so what a unit's compiler
  refuses fails here too (a kernel type set on 3002);
- CMake configures the project for real, and ``cust_opapi`` is "linked" from the sources CMake
  gives it: the lab host's prebuilt emulated op-api with the operator's aclnn layer when the
  target compiles the layer (and what it calls), the generated entry alone when it does not, so
  a build.sh that does not put the layer into the library makes a package without the seed's
  ``aclnnLogSoftmaxBackward`` (the acl backend then refuses to load it);
- ``cmake --install`` lays the package out, and the ``custom_opp_<os>_<arch>.run`` installer
  carries exactly what it installed under ``packages/vendors/<vendor>``.

A file ``.lsg-lab-build-fails`` in the toolkit directory makes the build fail with its text (the
lab's ``Lab.fail_cann_build``). The emulated CANN of the lab (farm/pool/lab/cann_install.py
``install_cann``) keeps what the stand-in builds from under ``tools/lsg_stand_in`` (STAND_IN).

    python -m farm.pool.lab.cann_toolchain msopgen gen -i JSON -c ai_core-<soc> -lan cpp -out DIR
    python -m farm.pool.lab.cann_toolchain build PROJECT
"""

from __future__ import annotations

import base64
import io
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

OP_TYPE = "LogSoftmaxGradCustom"
FAIL_FILE = ".lsg-lab-build-fails"
UNITS = ("ascend910b", "ascend310b")
ARCH_OF_UNIT = {"ascend910b": 2201, "ascend310b": 3002}  # __NPU_ARCH__ of each compute unit
VENDOR = "customize"
# msopgen's attribute types (its operator descriptions spell lists in camel case).
ATTR_TYPES = frozenset(
    ("int", "float", "bool", "str", "type", "listInt", "listFloat", "listBool", "listStr")
)
# In the emulated toolkit: what the stand-in compiles and links from.
STAND_IN = Path("tools") / "lsg_stand_in"
LIBRARY_WITH_LAYER = STAND_IN / "op_api_layer" / "libcust_opapi.so"
LIBRARY_GENERATED_ONLY = STAND_IN / "op_api_generated" / "libcust_opapi.so"
ASCEND_C_INCLUDE = STAND_IN / "ascendc_include"  # the emulated Ascend C headers
AUTOGEN = STAND_IN / "autogen"  # what opbuild generates from the OpDef: aclnn_<op>.{cpp,h}
SEED_ENTRY = "aclnnLogSoftmaxBackwardGetWorkspaceSize"
# What the operator's aclnn layer calls, by the source that defines it: a library that compiles
# the layer without one of them would not load.
LAYER_NEEDS = {
    "lsg::op_api::check_call (op_api/log_softmax_backward_checks.cpp)": "Verdict check_call(",
    "lsg::validate (op_host/tiling.cpp)": "Verdict validate(",
}


class Refused(Exception):
    """What a CANN tool would refuse, in its words."""


def snake(op_type: str) -> str:
    """LogSoftmaxGradCustom -> log_softmax_grad_custom (msopgen's file and kernel names)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op_type).lower()


def msopgen(argv: list[str]) -> None:
    if not argv or argv[0] != "gen":
        raise Refused("msopgen: only `gen` is supported by the lab's stand-in")
    opts = dict(zip(argv[1::2], argv[2::2], strict=False))
    for flag in ("-i", "-c", "-lan", "-out"):
        if flag not in opts:
            raise Refused(f"msopgen gen: missing {flag}")
    if opts["-lan"] != "cpp":
        raise Refused(f"msopgen gen: -lan {opts['-lan']}: an Ascend C operator needs -lan cpp")
    if not opts["-c"].startswith("ai_core-"):
        raise Refused(f"msopgen gen: -c {opts['-c']}: expected ai_core-<soc>")
    try:
        ops = json.loads(Path(opts["-i"]).read_text())
    except (OSError, ValueError) as exc:
        raise Refused(f"msopgen gen: -i {opts['-i']}: not an operator description: {exc}") from None
    op = next((o for o in ops if isinstance(o, dict) and o.get("op") == OP_TYPE), None)
    if op is None:
        raise Refused(f"msopgen gen: {opts['-i']} describes no operator {OP_TYPE}")
    for key in ("input_desc", "output_desc"):
        if not op.get(key):
            raise Refused(f"msopgen gen: {OP_TYPE} in {opts['-i']} has no {key}")
    for attr in op.get("attr") or ():
        if attr.get("type") not in ATTR_TYPES:
            raise Refused(
                f"msopgen gen: attr {attr.get('name')} of {OP_TYPE} has type "
                f"{attr.get('type')!r}: one of {', '.join(sorted(ATTR_TYPES))}"
            )
    _write_project(Path(opts["-out"]), opts["-c"][8:].lower())


def _write_project(project: Path, unit: str) -> None:
    name = snake(OP_TYPE)
    stub = "// generated by the lab's stand-in msopgen\n"
    for rel in (f"op_host/{name}.cpp", f"op_host/{name}_tiling.h", f"op_kernel/{name}.cpp"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(stub)
    presets = {
        "configurePresets": [
            {
                "name": "default",
                "cacheVariables": {
                    "ASCEND_COMPUTE_UNIT": {"type": "STRING", "value": unit},
                    "ASCEND_CANN_PACKAGE_PATH": {"type": "PATH", "value": "/usr/local/Ascend"},
                    "vendor_name": {"type": "STRING", "value": VENDOR},
                },
            }
        ]
    }
    (project / "CMakePresets.json").write_text(json.dumps(presets, indent=4))
    (project / "CMakeLists.txt").write_text(
        "# generated by the lab's stand-in msopgen (TEST-ONLY): an msopgen project's targets\n"
        "cmake_minimum_required(VERSION 3.16)\n"
        "project(opp LANGUAGES CXX)\n"
        f'set(vendor_name {VENDOR} CACHE STRING "the package\'s vendor")\n'
        "set(ASCEND_AUTOGEN_PATH ${CMAKE_BINARY_DIR}/autogen)\n"
        "add_library(intf_pub INTERFACE)\n"
        "add_subdirectory(op_host)\n"
        "# What the stand-in build links the op-api library from, and where.\n"
        "file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/lsg_stand_in/cust_opapi.sources\n"
        '     CONTENT "$<JOIN:$<TARGET_PROPERTY:cust_opapi,SOURCES>,\\n>\\n")\n'
        "file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/lsg_stand_in/cust_opapi.source_dir\n"
        '     CONTENT "$<TARGET_PROPERTY:cust_opapi,SOURCE_DIR>\\n")\n'
        "file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/lsg_stand_in/cust_opapi.file\n"
        '     CONTENT "$<TARGET_FILE:cust_opapi>\\n")\n'
    )
    (project / "op_host" / "CMakeLists.txt").write_text(
        "# generated by the lab's stand-in msopgen (TEST-ONLY), as msopgen lays it out\n"
        "aux_source_directory(${CMAKE_CURRENT_SOURCE_DIR} ops_srcs)\n"
        "add_library(cust_op_proto SHARED ${ops_srcs})\n"
        "add_library(cust_optiling SHARED ${ops_srcs})\n"
        f"add_library(cust_opapi SHARED ${{ASCEND_AUTOGEN_PATH}}/aclnn_{name}.cpp)\n"
        "target_link_libraries(cust_opapi PRIVATE intf_pub ascendcl nnopbase)\n"
        "install(TARGETS cust_opapi\n"
        "        LIBRARY DESTINATION packages/vendors/${vendor_name}/op_api/lib)\n"
        f"install(FILES ${{ASCEND_AUTOGEN_PATH}}/aclnn_{name}.h\n"
        "        DESTINATION packages/vendors/${vendor_name}/op_api/include)\n"
    )
    (project / "build.sh").write_text(
        "#!/bin/bash\n# generated by the lab's stand-in msopgen (TEST-ONLY)\n"
        f'exec {shlex.quote(sys.executable)} -m farm.pool.lab.cann_toolchain build "$(pwd)"\n'
    )


def _sources_check(project: Path) -> None:
    """The sources where CANN compiles them from, and named after the op type."""
    name = snake(OP_TYPE)
    wanted = {
        "op_host/log_softmax_grad_tiling.h": f"REGISTER_TILING_DATA_CLASS({OP_TYPE},",
        "op_host/tiling.h": "validate",
        "op_host/tiling.cpp": "plan",
        "op_host/lsg_types.h": "",
        "op_host/reasons.def": "LSG_REASON(",
        "op_host/soc_profiles.inc": "",
        f"op_kernel/{name}.cpp": f"__global__ __aicore__ void {name}(",
        "op_api/aclnn_log_softmax_backward.cpp": SEED_ENTRY,
        "op_api/aclnn_log_softmax_backward.h": "aclnnLogSoftmaxBackward",
    }
    for rel, needle in wanted.items():
        path = project / rel
        if not path.is_file():
            raise Refused(f"{rel}: No such file (the project lacks a source)")
        if needle and needle not in path.read_text(errors="replace"):
            raise Refused(f"{rel}: not the operator's source (no {needle!r})")
        print(f"[stand-in CANN] checked {rel}")
    registered = "".join(p.read_text(errors="replace") for p in (project / "op_host").glob("*.cpp"))
    if f"OP_ADD({OP_TYPE})" not in registered:
        raise Refused(f"op_host: no OP_ADD({OP_TYPE}) in any source (the op type msopgen made)")


def _compile_kernel(project: Path, home: Path, units: list[str]) -> None:
    """The kernel as each compute unit's compiler sees it (syntax only, emulated headers)."""
    kernel = project / "op_kernel" / f"{snake(OP_TYPE)}.cpp"
    for unit in units:
        argv = [
            os.environ.get("CXX", "g++"),
            "-std=c++17",
            "-fsyntax-only",
            f"-D__NPU_ARCH__={ARCH_OF_UNIT[unit]}",
            "-DDTYPE_GRAD_OUTPUT=float",
            '-DEMU_TILING_HEADER="log_softmax_grad_tiling.h"',
            f"-I{home / ASCEND_C_INCLUDE}",
            f"-I{project / 'op_host'}",
            str(kernel),
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            said = [line for line in done.stderr.splitlines() if "error" in line][:3]
            raise Refused(f"[{unit}] " + " | ".join(said or done.stderr.splitlines()[-3:]))
        print(f"[stand-in CANN] compiled op_kernel/{kernel.name} for {unit}")


def _cmake(*argv: str) -> subprocess.CompletedProcess:
    exe = shutil.which("cmake") or str(Path(sys.executable).with_name("cmake"))
    done = subprocess.run([exe, *argv], capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-4:])
        raise Refused(f"cmake {' '.join(argv[:1])}: {tail}")
    return done


def _op_api_library(home: Path, sources: list[Path]) -> Path:
    """The library cust_opapi's sources make: with the aclnn layer only where they compile it
    and everything it calls."""
    texts = {s: s.read_text(errors="replace") for s in sources if s.is_file()}
    layer = [s for s, t in texts.items() if s.suffix != ".h" and f"{SEED_ENTRY}(" in t]
    if not layer:
        return home / LIBRARY_GENERATED_ONLY
    for what, needle in LAYER_NEEDS.items():
        if not any(needle in t for s, t in texts.items() if s.suffix != ".h"):
            raise Refused(
                f"libcust_opapi.so: undefined symbol {what}: cust_opapi compiles "
                f"{layer[0].name} but not what it calls"
            )
    return home / LIBRARY_WITH_LAYER


def build(project: Path) -> Path:
    home = Path(os.environ.get("ASCEND_HOME_PATH", ""))
    failing = home / FAIL_FILE
    if failing.is_file():
        raise Refused(f"op_kernel/log_softmax_grad.cpp:1:1: error: {failing.read_text().strip()}")
    cache = json.loads((project / "CMakePresets.json").read_text())["configurePresets"][0]
    variables = cache["cacheVariables"]
    units = variables["ASCEND_COMPUTE_UNIT"]["value"].split(";")
    if sorted(units) != sorted(UNITS):
        raise Refused(f"CMakePresets.json: ASCEND_COMPUTE_UNIT {units}, expected {list(UNITS)}")
    if Path(variables["ASCEND_CANN_PACKAGE_PATH"]["value"]) != home:
        raise Refused(
            "CMakePresets.json: ASCEND_CANN_PACKAGE_PATH "
            f"{variables['ASCEND_CANN_PACKAGE_PATH']['value']} is not this CANN, {home}"
        )
    if not (home / STAND_IN).is_dir():
        raise Refused(
            f"no stand-in toolchain at {home / STAND_IN}: start the lab with --cann emulated"
        )
    _sources_check(project)
    _compile_kernel(project, home, units)

    out = project / "build_out"
    cmake_dir = out / "cmake"
    autogen = cmake_dir / "autogen"
    autogen.mkdir(parents=True, exist_ok=True)
    for generated in (home / AUTOGEN).iterdir():  # opbuild, from the OpDef
        shutil.copy2(generated, autogen / generated.name)
    _cmake("-S", str(project), "-B", str(cmake_dir), "-DCMAKE_BUILD_TYPE=Release")
    told = cmake_dir / "lsg_stand_in"
    source_dir = Path((told / "cust_opapi.source_dir").read_text().strip())
    sources = [
        (source_dir / line).resolve()
        for line in (told / "cust_opapi.sources").read_text().splitlines()
        if line.strip()
    ]
    library = _op_api_library(home, sources)
    target = Path((told / "cust_opapi.file").read_text().strip())
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(library, target)
    print(f"[stand-in CANN] linked {target.name} from {', '.join(s.name for s in sources)}")
    staging = out / "staging"
    shutil.rmtree(staging, ignore_errors=True)
    _cmake("--install", str(cmake_dir), "--prefix", str(staging))
    installer = out / f"custom_opp_{platform.system().lower()}_{platform.machine()}.run"
    _write_installer(installer, staging / "packages" / "vendors" / VENDOR)
    print(f"[stand-in CANN] made {installer}")
    return installer


def _write_installer(installer: Path, vendor_tree: Path) -> None:
    """A custom_opp_*.run that installs ``vendor_tree`` as ``<install-path>/vendors/<vendor>``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(vendor_tree, arcname=".")
    payload = base64.encodebytes(buffer.getvalue()).decode()
    installer.write_text(
        "#!/bin/sh\n"
        "# custom_opp installer made by the farm lab's stand-in CANN toolchain (TEST-ONLY)\n"
        "set -e\n"
        'dest=""\n'
        'for a in "$@"; do\n'
        '  case "$a" in --install-path=*) dest="${a#--install-path=}";; esac\n'
        "done\n"
        '[ -n "$dest" ] || { echo "usage: $0 --install-path=DIR" >&2; exit 2; }\n'
        'self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")\n'
        "# As a makeself installer (CANN's .run) does: it runs from its extraction directory.\n"
        'cd "$(mktemp -d)"\n'
        f'vendor="$dest/vendors/{VENDOR}"\n'
        'mkdir -p "$vendor"\n'
        'sed \'1,/^__PAYLOAD__$/d\' "$self" | base64 -d | tar -xzf - -C "$vendor"\n'
        'echo "installed the custom operator into $vendor"\n'
        "exit 0\n"
        "__PAYLOAD__\n" + payload
    )
    installer.chmod(0o755)


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["msopgen"]:
            msopgen(argv[1:])
        elif argv[:1] == ["build"] and len(argv) == 2:
            build(Path(argv[1]))
        else:
            raise Refused(
                "usage: python -m farm.pool.lab.cann_toolchain msopgen gen ... | build DIR"
            )
    except Refused as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
