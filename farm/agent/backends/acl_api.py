"""The ACL and aclnn functions the acl backend calls, as ctypes prototypes of their genuine C
declarations (acl/acl_rt.h, acl/acl_base_rt.h of CANN as the torch-npu wheel carries them; the
aclnn tensor helpers of nnopbase; the operator's op-api, op/ascendc/op_api). Each prototype is a
line of PROTOTYPES, in the C spelling of its declaration; tests/agent/test_acl_prototypes.py
reads every declaration from the headers and requires the same types here, so an argument in the
wrong place fails in CI rather than on the first real host.

Which libraries: $LSG_ACL_LIB_DIR (every library in one directory); else, for a CPU target's
package under test (no CANN package installed by the farm), the emulated ACL runtime (op/acl_emu)
it carries, acl/lib beside its native library ($LSG_NATIVE_LIB), CANN on the host or not; else
CANN's, from its set-up script's variables ($ASCEND_HOME_PATH/lib64 and the custom operator's
op-api: where the farm installed the package under test ($LSG_PACKAGE_OPP), and only there;
without it, the first package under $ASCEND_CUSTOM_OPP_PATH or $ASCEND_OPP_PATH/vendors/* whose
library is this operator's: its ELF dynamic symbol table, read without loading it, defines every
aclnn entry of PROTOTYPES' cust_opapi, so another product's package is passed over); else the
emulated runtime of this checkout (build/ascendc-cpu/acl/lib).

Standard library only: this module ships to hosts with the agent.
"""

from __future__ import annotations

import ctypes
import os
import struct
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from farm.agent import machine
from farm.agent.home_paths import CUSTOM_OPP_ENV, PACKAGE_OPP_ENV

ROOT = Path(__file__).resolve().parents[3]
ENV_LIB_DIR = "LSG_ACL_LIB_DIR"

# ACL's constants used here (acl_base_rt.h, acl_rt.h).
ACL_SUCCESS = 0
ACL_ERROR_REPEAT_INITIALIZE = 100002  # aclInit: ACL is already initialised in this process
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_FORMAT_ND = 2
ACL_PKG_NAME_CANN = 0
ACL_PKG_VERSION_MAX_SIZE = 128
ACL_PKG_VERSION_PARTS_MAX_SIZE = 64

# The C types of the declarations, as ctypes.
C_TYPES: dict[str, object] = {
    "void": None,
    "aclError": ctypes.c_int,
    "int": ctypes.c_int,
    "aclnnStatus": ctypes.c_int32,
    "int32_t": ctypes.c_int32,
    "uint32_t": ctypes.c_uint32,
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_size_t,
    "float": ctypes.c_float,
    "const char *": ctypes.c_char_p,
    "aclrtStream": ctypes.c_void_p,
    "aclrtEvent": ctypes.c_void_p,
    "aclDataType": ctypes.c_int,
    "aclFormat": ctypes.c_int,
    "aclrtMemcpyKind": ctypes.c_int,
    "aclrtMemMallocPolicy": ctypes.c_int,
    "aclCANNPackageName": ctypes.c_int,
}
POINTER_TYPES: dict[str, Any] = {  # pointers to these are typed pointers; others void*
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
    "uint32_t": ctypes.c_uint32,
    "int32_t": ctypes.c_int32,
    "float": ctypes.c_float,
}

# library: [(C declaration without the trailing semicolon)]
PROTOTYPES: dict[str, tuple[str, ...]] = {
    "ascendcl": (
        "aclError aclInit(const char *configPath)",
        "aclError aclFinalize()",
        "const char *aclGetRecentErrMsg()",
        "aclError aclsysGetVersionStr(char *pkgName, char *versionStr)",
        "aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion *version)",
        "const char *aclrtGetSocName()",
        "aclError aclrtGetDeviceCount(uint32_t *count)",
        "aclError aclrtSetDevice(int32_t deviceId)",
        "aclError aclrtResetDevice(int32_t deviceId)",
        "aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)",
        "aclError aclrtFree(void *devPtr)",
        "aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, "
        "aclrtMemcpyKind kind)",
        "aclError aclrtCreateStream(aclrtStream *stream)",
        "aclError aclrtDestroyStream(aclrtStream stream)",
        "aclError aclrtSynchronizeStream(aclrtStream stream)",
        "aclError aclrtCreateEvent(aclrtEvent *event)",
        "aclError aclrtDestroyEvent(aclrtEvent event)",
        "aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream)",
        "aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent)",
    ),
    "nnopbase": (
        "aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, "
        "aclDataType dataType, const int64_t *stride, int64_t offset, aclFormat format, "
        "const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData)",
        "int aclDestroyTensor(const aclTensor *tensor)",
    ),
    "cust_opapi": (
        "aclnnStatus aclnnLogSoftmaxBackwardGetWorkspaceSize(const aclTensor *gradOutput, "
        "const aclTensor *output, int64_t dim, aclTensor *out, uint64_t *workspaceSize, "
        "aclOpExecutor **executor)",
        "aclnnStatus aclnnLogSoftmaxBackward(void *workspace, uint64_t workspaceSize, "
        "aclOpExecutor *executor, aclrtStream stream)",
        "aclnnStatus aclnnLogSoftmaxBackwardDimsGetWorkspaceSize(const aclTensor *gradOutput, "
        "const aclTensor *output, const int64_t *dims, uint64_t dimsNum, aclTensor *out, "
        "uint64_t *workspaceSize, aclOpExecutor **executor)",
        "aclnnStatus aclnnLogSoftmaxBackwardDims(void *workspace, uint64_t workspaceSize, "
        "aclOpExecutor *executor, aclrtStream stream)",
    ),
}
# Functions a CANN release may lack, bound when present (Libraries.absent names the others): the
# version queries. aclsysGetCANNVersion is absent before CANN 8.1.RC1 (where torch_npu's
# get_cann_version is unsupported) and deprecated for aclsysGetVersionStr, which older releases
# lack too. Nothing else is optional: a missing function fails load().
OPTIONAL = frozenset({"aclsysGetVersionStr", "aclsysGetCANNVersion"})
# The package of CANN whose version aclsysGetVersionStr reports (hicann/runtime's example).
VERSION_PACKAGE = b"runtime"
# The emulated runtime's own functions (op/acl_emu/include/lsg_emu_acl.h), where it is emulated.
EMULATION = {
    "ascendcl": (
        "const char *lsg_emu_acl_runtime()",
        "const char *lsg_emu_acl_buffers()",
        "void lsg_emu_acl_declare(const char *soc, int32_t devices)",
    ),
    "nnopbase": (
        "const char *lsg_emu_acl_take_tensor_log()",
        "size_t lsg_emu_acl_live_handles()",
        "uint64_t lsg_emu_acl_handle_serial()",
        "const char *lsg_emu_acl_live_handle_list()",
        "int32_t lsg_emu_acl_inject(const char *api, const char *fault)",
    ),
}
LIB_FILES = {"ascendcl": "libascendcl.so", "nnopbase": "libnnopbase.so", "opapi": "libopapi.so"}
OP_API_FILE = "libcust_opapi.so"


class AclVersion(ctypes.Structure):
    """aclCANNPackageVersion."""

    _fields_ = [
        ("version", ctypes.c_char * ACL_PKG_VERSION_MAX_SIZE),
        ("majorVersion", ctypes.c_char * ACL_PKG_VERSION_PARTS_MAX_SIZE),
        ("minorVersion", ctypes.c_char * ACL_PKG_VERSION_PARTS_MAX_SIZE),
        ("releaseVersion", ctypes.c_char * ACL_PKG_VERSION_PARTS_MAX_SIZE),
        ("patchVersion", ctypes.c_char * ACL_PKG_VERSION_PARTS_MAX_SIZE),
        ("reserved", ctypes.c_char * ACL_PKG_VERSION_MAX_SIZE),
    ]


class AclLibraryError(RuntimeError):
    """The ACL libraries are missing or incomplete."""


@dataclass(frozen=True)
class Declaration:
    name: str
    restype: str
    params: tuple[str, ...]  # each a C type, names dropped


def parse(declaration: str) -> Declaration:
    """'aclError aclrtFree(void *devPtr)' -> Declaration('aclrtFree', 'aclError', ('void *',))."""
    head, _, rest = declaration.partition("(")
    params = rest.rsplit(")", 1)[0].strip()
    restype, name = _split_name(head)
    types = () if params in ("", "void") else tuple(_split_name(p)[0] for p in params.split(","))
    return Declaration(name, restype, types)


def _split_name(text: str) -> tuple[str, str]:
    """'const int64_t *viewDims' -> ('const int64_t *', 'viewDims'): the type, the name."""
    text = " ".join(text.replace("*", " * ").split())
    type_part, _, name = text.rpartition(" ")
    return normalize(type_part), name


def normalize(c_type: str) -> str:
    """One spelling of a C type: 'const char*' -> 'const char *', 'void**' -> 'void * *'."""
    return " ".join(c_type.replace("*", " * ").split())


# The operator's aclnn entries: a custom operator library that defines every one is this operator's.
OP_API_ENTRIES = tuple(parse(d).name for d in PROTOTYPES["cust_opapi"])


def ctype(c_type: str):
    """The ctypes type of a C type."""
    c_type = normalize(c_type)
    if c_type in C_TYPES:
        return C_TYPES[c_type]
    if c_type.endswith("*"):
        inner = c_type[:-1].strip()
        base = inner[len("const ") :] if inner.startswith("const ") else inner
        if base in POINTER_TYPES:
            return ctypes.POINTER(POINTER_TYPES[base])
        return ctypes.c_void_p
    raise ValueError(
        f"no ctypes type for C type {c_type!r}: add it to farm/agent/backends/acl_api.py"
    )


def prototype(declaration: str) -> tuple[object, list[object]]:
    """(restype, argtypes) of a C declaration."""
    d = parse(declaration)
    return ctype(d.restype), [ctype(p) for p in d.params]


@dataclass(frozen=True)
class Libraries:
    """The ACL libraries loaded, with every prototype set."""

    ascendcl: ctypes.CDLL
    nnopbase: ctypes.CDLL
    op_api: ctypes.CDLL
    directory: str
    op_api_path: str
    emulated: bool
    absent: frozenset[str] = frozenset()  # the OPTIONAL functions this CANN does not export


def available() -> bool:
    """Whether this host has ACL libraries the backend can load (without loading them)."""
    try:
        _search()
    except AclLibraryError:
        return False
    return True


def _search() -> tuple[Path, Path]:
    """(the directory of libascendcl/libnnopbase/libopapi, the custom op-api library): the
    override, else CANN where its set-up script's variables say it is (a real host runs the NPU,
    whatever the package carries), else the emulated runtime of the package or the checkout."""
    env = os.environ.get(ENV_LIB_DIR)
    if env:
        return Path(env), Path(env) / OP_API_FILE
    home = os.environ.get("ASCEND_HOME_PATH")
    under_test = os.environ.get(PACKAGE_OPP_ENV)
    carried = _package_runtime()
    if carried is not None and not under_test:
        # A CPU target's package under test (the farm set its LSG_NATIVE_LIB and installed no
        # CANN package): it runs on the emulated runtime it carries, CANN on the host or not,
        # as the target says (farm/util/targets.py); --target ascend runs CANN's.
        return carried, carried / OP_API_FILE
    if home and under_test:
        lib = Path(under_test) / "op_api" / "lib" / OP_API_FILE
        if not lib.is_file():
            raise AclLibraryError(
                f"the package under test has no op_api/lib/{OP_API_FILE} in {under_test}, where "
                "the farm installed it: its custom_opp_*.run did not install the operator there"
            )
        return Path(home) / "lib64", lib
    if home:
        return Path(home) / "lib64", _installed_op_api(home)
    for c in (ROOT / "build" / "ascendc-cpu" / "acl" / "lib", ROOT / "package" / "acl" / "lib"):
        if (c / OP_API_FILE).is_file():
            return c, c / OP_API_FILE
    raise AclLibraryError(
        f"no ACL libraries: neither CANN (ASCEND_HOME_PATH) nor the emulated ACL runtime "
        f"({OP_API_FILE} under build/ascendc-cpu/acl/lib: `farm build` makes it where the "
        f"genuine headers are, python -m farm.pool.acl_sdk fetches them); or set {ENV_LIB_DIR}"
    )


def _package_runtime() -> Path | None:
    """The emulated ACL runtime of the CPU package whose library is $LSG_NATIVE_LIB (acl/lib
    beside its lib/), where it carries one."""
    native = os.environ.get("LSG_NATIVE_LIB")
    lib_dir = Path(native).parent.parent / "acl" / "lib" if native else None
    return lib_dir if lib_dir is not None and (lib_dir / OP_API_FILE).is_file() else None


def _installed_op_api(home: str) -> Path:
    """This operator's op-api library among the custom operator packages CANN would look at, in
    its order: each $ASCEND_CUSTOM_OPP_PATH entry, then $ASCEND_OPP_PATH/vendors/*. Another
    product's package (its libcust_opapi.so lacks this operator's entries) is passed over; when
    none is this operator's, the error says why each was."""
    custom = [Path(p) for p in os.environ.get(CUSTOM_OPP_ENV, "").split(":") if p]
    vendors = Path(os.environ.get("ASCEND_OPP_PATH") or Path(home) / "opp") / "vendors"
    skipped: list[str] = []
    for root in dict.fromkeys(custom + sorted(p for p in vendors.glob("*") if p.is_dir())):
        lib = root / "op_api" / "lib" / OP_API_FILE
        why = not_this_operator(lib)
        if why is None:
            return lib
        skipped.append(f"{root}: {why}")
    looked = "; ".join(skipped) or f"no package under $ASCEND_CUSTOM_OPP_PATH or {vendors}"
    raise AclLibraryError(
        f"ASCEND_HOME_PATH={home} is set but no custom operator package is LogSoftmaxGrad's "
        f"(op_api/lib/{OP_API_FILE} defining {', '.join(OP_API_ENTRIES)}): {looked}; install "
        "the LogSoftmaxGrad package (custom_opp_*.run) first"
    )


def not_this_operator(lib: Path) -> str | None:
    """Why ``lib`` is not this operator's op-api library (None when it is): missing, not a
    readable ELF library, or one that does not define every entry of OP_API_ENTRIES. Read from
    the file: nothing of it is loaded or run."""
    if not lib.is_file():
        return f"no op_api/lib/{OP_API_FILE}"
    try:
        defined = dynamic_functions(lib)
    except (OSError, ValueError) as exc:
        return f"{OP_API_FILE} cannot be read ({exc})"
    missing = [name for name in OP_API_ENTRIES if name not in defined]
    if missing:
        more = f" (and {len(missing) - 1} more of its entries)" if len(missing) > 1 else ""
        return f"{OP_API_FILE} does not define {missing[0]}{more}: another operator's"
    return None


# ELF constants (the System V ABI): the dynamic symbol table and what a defined function is.
_SHT_DYNSYM = 11
_STT_FUNC, _STT_GNU_IFUNC = 2, 10
_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE = 1, 2, 10
_STV_HIDDEN, _STV_INTERNAL = 2, 1


def dynamic_functions(path: Path) -> frozenset[str]:
    """The functions an ELF shared library defines for others (its .dynsym: global or weak,
    visible, not undefined), read from the file, 32- or 64-bit, either byte order. ValueError
    when it is no ELF file or has no dynamic symbol table."""
    with open(path, "rb") as f:

        def read(offset: int, size: int) -> bytes:
            f.seek(offset)
            data = f.read(size)
            if len(data) != size:
                raise ValueError(f"truncated ELF file ({size} bytes at {offset})")
            return data

        ident = f.read(16)
        if len(ident) < 16 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2):
            raise ValueError("not an ELF file")
        wide = ident[4] == 2
        order = "<" if ident[5] == 1 else ">"
        header = struct.Struct(order + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH"))
        fields = header.unpack(read(16, header.size))
        shoff, shentsize, shnum = fields[5], fields[10], fields[11]
        section = struct.Struct(order + ("IIQQQQIIQQ" if wide else "IIIIIIIIII"))
        if not shoff or shentsize < section.size:
            raise ValueError("no section headers")
        sections = [section.unpack(read(shoff + i * shentsize, section.size)) for i in range(shnum)]
        dynsym = next((s for s in sections if s[1] == _SHT_DYNSYM), None)
        if dynsym is None or dynsym[6] >= len(sections):
            raise ValueError("no dynamic symbol table")
        strtab = sections[dynsym[6]]
        names = read(strtab[4], strtab[5])
        symbol = struct.Struct(order + ("IBBHQQ" if wide else "IIIBBH"))
        entsize = dynsym[9] or symbol.size
        table = read(dynsym[4], dynsym[5])
    found = set()
    for offset in range(0, len(table) - symbol.size + 1, entsize):
        entry = symbol.unpack_from(table, offset)
        name, info, other, shndx = (
            (entry[0], entry[1], entry[2], entry[3])
            if wide
            else (entry[0], entry[3], entry[4], entry[5])
        )
        if (
            shndx != 0
            and info & 0xF in (_STT_FUNC, _STT_GNU_IFUNC)
            and info >> 4 in (_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE)
            and other & 3 not in (_STV_HIDDEN, _STV_INTERNAL)
        ):
            end = names.find(b"\0", name)
            found.add(names[name : end if end >= 0 else len(names)].decode(errors="replace"))
    return frozenset(found)


@cache
def load() -> Libraries:
    directory, op_api = _search()
    mode = ctypes.RTLD_GLOBAL  # the op-api libraries resolve the runtime's symbols
    try:
        ascendcl = ctypes.CDLL(str(directory / LIB_FILES["ascendcl"]), mode=mode)
        nnopbase = ctypes.CDLL(str(directory / LIB_FILES["nnopbase"]), mode=mode)
        opapi_path = directory / LIB_FILES["opapi"]
        if opapi_path.is_file():
            ctypes.CDLL(str(opapi_path), mode=mode)
        lib = ctypes.CDLL(str(op_api), mode=mode)
    except OSError as exc:
        foreign = machine.foreign_library(str(directory / LIB_FILES["ascendcl"]))
        if foreign:
            raise AclLibraryError(foreign) from None
        raise AclLibraryError(f"loading the ACL libraries of {directory}: {exc}") from None
    by_name = {"ascendcl": ascendcl, "nnopbase": nnopbase, "cust_opapi": lib}
    absent = set()
    for name, declarations in PROTOTYPES.items():
        for declaration in declarations:
            function = parse(declaration).name
            if not _bind(by_name[name], declaration, required=function not in OPTIONAL):
                absent.add(function)
    emulated = hasattr(ascendcl, "lsg_emu_acl_runtime")
    if emulated:
        for name, declarations in EMULATION.items():
            for declaration in declarations:
                _bind(by_name[name], declaration, required=True)
    return Libraries(
        ascendcl, nnopbase, lib, str(directory), str(op_api), emulated, frozenset(absent)
    )


def _bind(lib: ctypes.CDLL, declaration: str, *, required: bool) -> bool:
    """Set the prototype of the declared function of ``lib``; whether it exports it (one it
    must export and does not: AclLibraryError)."""
    name = parse(declaration).name
    if not hasattr(lib, name):
        if required:
            raise AclLibraryError(f"{lib._name} does not export {name}")
        return False
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = prototype(declaration)
    return True
