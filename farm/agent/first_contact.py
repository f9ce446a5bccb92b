"""First contact with CANN: every assumption the device path makes, checked on the host itself,
in the acl backend's agent environment, one line each with what was found and, where it fails,
the fix (`farm hosts --check --deep` runs it on every host and prints the lines).

    python -m farm.agent.first_contact [--accept-health H,...] [--torch-custom-opp PATHS]

prints one JSON object a line, a check each: {"check", "status" ("ok", "warn" or "fail"),
"detail", "fix"}, then exits 0 (every check ran; the statuses say what they found). A "warn" is
a difference the device path works around (an optional entry point a CANN release lacks); a
"fail" is what stops the device path, or makes it report something that is not true.

The checks, in order (each later one needs what the earlier ones found):

- ``cann``: ASCEND_HOME_PATH names a toolkit, and its version (ascend_toolkit_install.info);
- ``driver``: the NPU driver's version.info in the Ascend install root;
- ``environment``: what CANN's set_env.sh sets is in the agent's environment (the toolkit's and
  the driver's library directories on LD_LIBRARY_PATH, ASCEND_OPP_PATH);
- ``npu-smi``: npu-smi read, every chip's SoC known (by name or family) and its health usable;
- ``package``: the operator package where the agent looks for it ($LSG_PACKAGE_OPP, where the
  farm installed it);
- ``exports``: its libcust_opapi.so exports the seed's entry points, and each resolves to that
  library (dladdr), not to CANN's built-in operator of the same name;
- ``optional``: the optional entry points this CANN has (the backend works around the others);
- ``shadowing``: no package in CANN's own vendor directories defines the operator's entries or
  op type, which every process on the host would then see;
- ``torch``: the library torch_npu would take ``aclnnLogSoftmaxBackward`` from, in its order
  (each $ASCEND_CUSTOM_OPP_PATH of the torch backend's agent, the vendors config.ini loads,
  CANN's libopapi*.so), is not this package;
- ``case``: one small case through both phases on device 0, against a float64 reference;
- ``rejection``: calls the contract rejects (shapes that differ; bf16 on Atlas 200I/500 A2),
  refused with 161002 and their reasons read back from aclGetRecentErrMsg.

Standard library and numpy only: this module ships to hosts with the agent.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from farm.agent import hostops, machine
from farm.agent.backends.result import BackendResult
from farm.agent.home_paths import CUSTOM_OPP_ENV, PACKAGE_OPP_ENV

OK, WARN, FAIL = "ok", "warn", "fail"
# The seed's entry points, which the package defines and CANN's built-in operator too.
SEED_ENTRY = "aclnnLogSoftmaxBackward"
OP_TYPES = ("LogSoftmaxGradCustom",)  # the package's op types (op_host OP_ADD)
BF16_REASON = "bf16_unsupported_on_soc"


@dataclass(frozen=True)
class Check:
    check: str
    status: str
    detail: str
    fix: str = ""

    def to_wire(self) -> dict[str, str]:
        return asdict(self)


def check_cann(env: Mapping[str, str]) -> Check:
    home = env.get("ASCEND_HOME_PATH")
    if not home:
        return Check(
            "cann",
            FAIL,
            "ASCEND_HOME_PATH is not set in the agent's environment",
            "give the host set_env = <CANN>/set_env.sh in the inventory (or ASCEND_HOME_PATH in "
            "its env)",
        )
    if not Path(home).is_dir():
        return Check("cann", FAIL, f"ASCEND_HOME_PATH={home} is no directory", "install CANN there")
    version = hostops.host_platform(dict(env))["cann"]
    if not version:
        return Check(
            "cann",
            FAIL,
            f"no ascend_toolkit_install.info with a version under {home}/<arch>-linux",
            "point ASCEND_HOME_PATH at the toolkit's version directory (…/ascend-toolkit/latest)",
        )
    return Check("cann", OK, f"CANN {version} at {home}")


def check_driver(env: Mapping[str, str]) -> Check:
    info = machine.driver_info(dict(env))
    version = machine.info_value(info, "version") if info.is_file() else None
    if not version:
        return Check(
            "driver",
            FAIL,
            f"no NPU driver version in {info}",
            "install the NPU driver (Ascend-hdk driver package) in the Ascend install root",
        )
    return Check("driver", OK, f"driver {version} ({info})")


def check_environment(env: Mapping[str, str]) -> Check:
    """What set_env.sh puts in the environment the device path needs: the toolkit's libraries,
    the driver's (common and driver, where the driver has them), the operators' directory."""
    home = env.get("ASCEND_HOME_PATH", "")
    paths = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    missing = []
    wanted = [Path(home) / "lib64"] if home else []
    root = machine.ascend_root(Path(home) if home else None)
    wanted += [root / "driver" / "lib64" / part for part in ("common", "driver")]
    for directory in wanted:
        if directory.is_dir() and not any(_same(directory, p) for p in paths):
            missing.append(f"LD_LIBRARY_PATH lacks {directory}")
    if not env.get("ASCEND_OPP_PATH"):
        missing.append("ASCEND_OPP_PATH is not set")
    if missing:
        return Check(
            "environment",
            FAIL,
            "; ".join(missing),
            "source CANN's set_env.sh for the agent (set_env = <CANN>/set_env.sh for the host in "
            "the inventory) rather than listing variables by hand",
        )
    return Check("environment", OK, "the toolkit's and the driver's libraries, ASCEND_OPP_PATH")


def _same(directory: Path, entry: str) -> bool:
    try:
        return directory.resolve() == Path(entry).resolve()
    except OSError:
        return False


def check_chips(env: Mapping[str, str], accept_health: tuple[str, ...]) -> tuple[Check, str | None]:
    """npu-smi's chips, and their family (None when it cannot be told)."""
    from golden.soc import UnknownSocError, family_of

    chips, problem = machine.read_npu_smi(dict(env))
    if chips is None:
        fail = Check(
            "npu-smi", FAIL, "no npu-smi on PATH nor in /usr/local/sbin", "install the NPU driver"
        )
        return fail, None
    if problem or not chips:
        return Check("npu-smi", FAIL, problem or "npu-smi listed no chip", "check the driver"), None
    wrong, busy = [], []
    families = set()
    for chip in chips:
        soc = chip.name if chip.name.startswith("Ascend") else "Ascend" + chip.name
        try:
            families.add(family_of(soc))
        except UnknownSocError:
            wrong.append(f"chip {chip.npu}.{chip.chip} is {soc}, a SoC of no family the farm knows")
            continue
        why = machine.chip_problem(chip, accept_health)
        alone = dataclasses.replace(chip, others=())
        if why and chip.others and not machine.chip_problem(alone, accept_health):
            busy.append(why)  # another job's, for now: the farm sets the chip aside meanwhile
        elif why:
            wrong.append(why)
    names = sorted({c.name for c in chips})
    family = families.pop() if len(families) == 1 else None
    if wrong:
        return (
            Check(
                "npu-smi",
                FAIL,
                "; ".join(wrong),
                "the fix each names; a SoC of another family needs its profile in golden/soc.py",
            ),
            family,
        )
    if busy:
        return (
            Check("npu-smi", WARN, "; ".join(busy), "a run sets these chips aside; others run"),
            family,
        )
    return Check("npu-smi", OK, f"{len(chips)} chip(s): {', '.join(names)}, health usable"), family


def check_package(env: Mapping[str, str]) -> tuple[Check, Path | None]:
    from farm.agent.backends import acl_api

    where = env.get(PACKAGE_OPP_ENV)
    if not where:
        return (
            Check(
                "package",
                FAIL,
                f"{PACKAGE_OPP_ENV} is not set: the farm installed no package for this agent",
                "run it as `farm hosts --check --deep`, which builds and installs the package",
            ),
            None,
        )
    lib = Path(where) / "op_api" / "lib" / acl_api.OP_API_FILE
    if not lib.is_file():
        return (
            Check(
                "package",
                FAIL,
                f"no {lib}: the package's installer did not install its op-api library there",
                "see the CANN build's log in dist/op (the installer it made)",
            ),
            None,
        )
    return Check("package", OK, f"installed at {where}"), lib


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def defining_file(function: ctypes._CFuncPtr) -> str | None:  # type: ignore[name-defined]
    """The shared object that defines a loaded function (dladdr), or None."""
    for name in (None, ctypes.util.find_library("dl")):
        try:
            dladdr = ctypes.CDLL(name).dladdr
        except (OSError, AttributeError):
            continue
        dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        dladdr.restype = ctypes.c_int
        info = _DlInfo()
        if dladdr(ctypes.cast(function, ctypes.c_void_p), ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(info.dli_fname.decode(errors="replace"))
    return None


def check_exports(libs, lib: Path) -> Check:
    from farm.agent.backends import acl_api

    wrong = []
    for entry in acl_api.OP_API_ENTRIES:
        function = getattr(libs.op_api, entry, None)
        if function is None:
            wrong.append(f"{entry} is not exported")
            continue
        found = defining_file(function)
        if found != os.path.realpath(lib):
            wrong.append(f"{entry} resolves to {found or 'an unknown object'}")
    if wrong:
        return Check(
            "exports",
            FAIL,
            f"{lib}: " + "; ".join(wrong),
            "build the package with op/ascendc/build.sh, which compiles the aclnn layer into "
            "cust_opapi (a generated project alone compiles only the generated entry)",
        )
    return Check("exports", OK, f"{len(acl_api.OP_API_ENTRIES)} entries, from {lib}")


def check_optional(libs) -> Check:
    from farm.agent.backends import acl_api

    if libs.absent:
        return Check(
            "optional",
            WARN,
            f"this CANN lacks {', '.join(sorted(libs.absent))}: the CANN version is read from "
            "ascend_toolkit_install.info instead",
            "none needed",
        )
    return Check("optional", OK, f"{', '.join(sorted(acl_api.OPTIONAL))} present")


def _vendors_dir(env: Mapping[str, str]) -> Path:
    home = env.get("ASCEND_HOME_PATH", "")
    return Path(env.get("ASCEND_OPP_PATH") or Path(home) / "opp") / "vendors"


def _vendors(env: Mapping[str, str]) -> list[Path]:
    """CANN's vendor directories, config.ini's load_priority order first, then the rest."""
    opp = _vendors_dir(env)
    loaded = _load_priority(opp)
    rest = sorted(p for p in opp.glob("*") if p.is_dir() and p not in loaded)
    return loaded + rest


def _load_priority(vendors: Path) -> list[Path]:
    """The vendors torch_npu and CANN load by default: config.ini's load_priority."""
    try:
        lines = (vendors / "config.ini").read_text(errors="replace").splitlines()
    except OSError:
        return []
    for line in lines:
        if line.startswith("load_priority="):
            names = [n.strip() for n in line.split("=", 1)[1].split(",") if n.strip()]
            return [vendors / n for n in names if (vendors / n).is_dir()]
    return []


def _defines(lib: Path) -> frozenset[str]:
    from farm.agent.backends import acl_api

    try:
        return acl_api.dynamic_functions(lib)
    except (OSError, ValueError):
        return frozenset()


def check_shadowing(env: Mapping[str, str], package: Path | None) -> Check:
    """No package in CANN's vendor directories is this operator (entries or op type): those are
    every process's."""
    found = []
    for vendor in _vendors(env):
        lib = vendor / "op_api" / "lib" / "libcust_opapi.so"
        if package is not None and lib.is_file() and _same(lib, str(package)):
            continue
        defined = _defines(lib) if lib.is_file() else frozenset()
        ours = sorted(e for e in defined if e.startswith(SEED_ENTRY) or "LogSoftmaxGrad" in e)
        if ours:
            found.append(f"{vendor} defines {', '.join(ours)}")
        types = [t for t in OP_TYPES if _mentions(vendor / "op_impl", t)]
        if types:
            found.append(f"{vendor} registers op type {', '.join(types)}")
    if found:
        return Check(
            "shadowing",
            FAIL,
            "; ".join(found) + ": every process on the host sees it, torch_npu's included",
            "remove it from CANN's vendors (and config.ini's load_priority); the farm installs "
            "the package per version under its work directory",
        )
    return Check("shadowing", OK, "no vendor package of CANN's is this operator")


def _mentions(directory: Path, op_type: str) -> bool:
    """Whether an operator-info JSON under ``directory`` names ``op_type``."""
    needle = f'"{op_type}"'.encode()
    for path in directory.rglob("*.json") if directory.is_dir() else ():
        try:
            if needle in path.read_bytes():
                return True
        except OSError:
            continue
    return False


def torch_lookup(env: Mapping[str, str], torch_custom_opp: str) -> tuple[Path | None, list[Path]]:
    """Where torch_npu would take aclnnLogSoftmaxBackward from (op-plugin's GetOpApiFuncAddr):
    each $ASCEND_CUSTOM_OPP_PATH entry's libcust_opapi.so, then the vendors config.ini loads,
    then CANN's libopapi_*.so and libopapi.so. (None, every library looked at) when none."""
    home = Path(env.get("ASCEND_HOME_PATH", ""))
    custom = [Path(p) / "op_api" / "lib" for p in torch_custom_opp.split(":") if p]
    vendors = [v / "op_api" / "lib" for v in _load_priority(_vendors_dir(env))]
    libs = [d / "libcust_opapi.so" for d in custom + vendors]
    libs += sorted((home / "lib64").glob("libopapi_*.so")) + [home / "lib64" / "libopapi.so"]
    looked = [lib for lib in libs if lib.is_file()]
    for lib in looked:
        if SEED_ENTRY in _defines(lib):
            return lib, looked
    return None, looked


def check_torch(env: Mapping[str, str], torch_custom_opp: str, package: Path | None) -> Check:
    found, _ = torch_lookup(env, torch_custom_opp)
    if found is not None and package is not None and _same(found, str(package)):
        return Check(
            "torch",
            FAIL,
            f"torch_npu would take {SEED_ENTRY} from this package ({found}), not CANN's",
            "keep the package off the torch backend's ASCEND_CUSTOM_OPP_PATH and out of CANN's "
            "vendors",
        )
    if found is not None and found.name == "libcust_opapi.so":  # torch_lookup: it defines it
        return Check(
            "torch",
            FAIL,
            f"torch_npu would take {SEED_ENTRY} from {found}, a custom package, not CANN's",
            "remove that package from CANN's vendors or the torch agent's ASCEND_CUSTOM_OPP_PATH",
        )
    where = found or "nowhere (this CANN's libopapi has no built-in one)"
    return Check("torch", OK, f"torch_npu would take {SEED_ENTRY} from {where}")


def check_case(run: Callable[..., BackendResult]) -> Check:
    """A (2, 8) float32 call over the last axis, against the formula in float64."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-3.0, 3.0, (2, 8))
    y = (x - np.log(np.exp(x).sum(-1, keepdims=True))).astype(np.float32)
    dy = rng.standard_normal((2, 8)).astype(np.float32)
    got = run(dy, y, (-1,), out_dtype=np.float32)
    if got.status != 0 or got.out is None:
        return Check(
            "case",
            FAIL,
            f"a valid call returned {got.status}: {got.message}",
            "see the status in CANN's error codes; run `farm repro` of a smoke case for more",
        )
    y64, dy64 = y.astype(np.float64), dy.astype(np.float64)
    want = dy64 - np.exp(y64) * dy64.sum(-1, keepdims=True)
    error = float(np.max(np.abs(got.out.astype(np.float64) - want) / (np.abs(want) + 1e-7)))
    if not error < 2.0**-10:
        return Check(
            "case",
            FAIL,
            f"a (2, 8) float32 call computed a largest relative error of {error:.3g}",
            "run the smoke tier on this host to see which cases fail",
        )
    return Check("case", OK, f"(2, 8) float32 over -1: both phases ran, error {error:.2g}")


def check_rejection(run: Callable[..., BackendResult], family: str | None) -> Check:
    """Calls the contract rejects: shapes that differ (and bf16 on Atlas 200I/500 A2): 161002,
    and the reason read back from the error channel."""
    import ml_dtypes

    calls = [
        ("shapes (2, 8) and (2, 9)", np.float32, (2, 9), "shape_mismatch"),
    ]
    if family == "ascend310b":
        calls.append(("bf16 on Atlas 200I/500 A2", ml_dtypes.bfloat16, (2, 8), BF16_REASON))
    said = []
    for what, dtype, y_shape, want in calls:
        dy = np.zeros((2, 8), dtype)
        got = run(dy, np.zeros(y_shape, dtype), (-1,), out_dtype=dtype, out_shape=(2, 8))
        if got.status != 161002:
            return Check(
                "rejection",
                FAIL,
                f"a call of {what} returned {got.status} ({got.message}), not 161002",
                "the package's aclnn layer must refuse it with ACLNN_ERR_PARAM_INVALID",
            )
        if got.reason != want:
            return Check(
                "rejection",
                FAIL,
                f"a call of {what}: 161002 arrived, but not its reason {want}: "
                f"aclGetRecentErrMsg said {got.message!r}",
                "the aclnn layer reports through nnopbase (ReportErrorMessageInner): rebuild the "
                "package from this checkout",
            )
        said.append(f"{what}: {want}")
    return Check(
        "rejection", OK, "161002 with its reason, from aclGetRecentErrMsg (" + "; ".join(said) + ")"
    )


def checks(
    env: Mapping[str, str], accept_health: tuple[str, ...] = (), torch_custom_opp: str = ""
) -> Iterator[Check]:
    yield check_cann(env)
    yield check_driver(env)
    yield check_environment(env)
    chips, family = check_chips(env, accept_health)
    yield chips
    package_check, package = check_package(env)
    yield package_check
    yield check_shadowing(env, package)
    yield check_torch(env, torch_custom_opp, package)
    if package is None:
        return
    from farm.agent.backends import acl, acl_api

    try:
        libs = acl_api.load()
    except acl_api.AclLibraryError as exc:
        yield Check("exports", FAIL, str(exc), "install a package built by op/ascendc/build.sh")
        return
    yield check_exports(libs, package)
    yield check_optional(libs)
    try:
        yield check_case(acl.run)
        yield check_rejection(acl.run, family)
    except Exception as exc:  # the device path's own failure is the finding
        yield Check("case", FAIL, f"{type(exc).__name__}: {exc}", "see the message")
    finally:
        acl.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m farm.agent.first_contact")
    parser.add_argument("--accept-health", default="", help="chip healths the inventory accepts")
    parser.add_argument(
        "--torch-custom-opp",
        default=None,
        help=f"the torch backend agent's {CUSTOM_OPP_ENV} (default: this environment's, less "
        "the package's)",
    )
    args = parser.parse_args(argv)
    env = dict(os.environ)
    torch_custom = args.torch_custom_opp
    if torch_custom is None:  # what a torch agent gets: the host's, not the package's
        package = env.get(PACKAGE_OPP_ENV, "")
        torch_custom = ":".join(
            p for p in env.get(CUSTOM_OPP_ENV, "").split(":") if p and p != package
        )
    accept = tuple(h for h in args.accept_health.split(",") if h)
    for check in checks(env, accept, torch_custom):
        print(json.dumps(check.to_wire()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
