"""The emulated CANN toolkit of a lab host (`farm lab up --cann emulated`,
farm/pool/lab/core.py): this checkout's emulated ACL runtime installed where CANN's would be, its
set_env.sh, and the stand-in toolchain (farm/pool/lab/cann_toolchain.py) that builds the CANN
package there. TEST-ONLY.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from farm.pool.lab import cann_toolchain as lab_cann_toolchain
from farm.pool.lab.sshd import sh_quote
from farm.util.errors import ConfigError, FarmError


def emulated_cann_libs() -> Path:
    """This checkout's emulated ACL runtime and op-api (build/ascendc-cpu/acl/lib), built now."""
    from farm.pool import acl_sdk, build

    if not acl_sdk.present():
        raise ConfigError(
            "lab: --cann emulated needs the emulated ACL runtime, built against the genuine ACL "
            "headers: run python -m farm.pool.acl_sdk first"
        )
    try:
        lib = build.build_ascendc_cpu()
    except FarmError as exc:
        raise ConfigError(f"lab: --cann emulated: {exc}") from None
    return lib.parent / build.ACL_DIR / "lib"


def install_cann(root: Path, libs: Path, python: str) -> Path:
    """An Ascend install of the emulated runtime under `root`, laid out as CANN's: the toolkit
    (``ascend-toolkit/latest``: lib64/, opp/vendors with no package, the version file of each
    architecture, the stand-in msopgen where CANN keeps its own, farm/pool/lab/cann_toolchain.py)
    beside ``driver/`` and ``firmware/`` with their version files. Returns the toolkit's
    directory (ASCEND_HOME_PATH)."""
    from farm import __version__
    from farm.agent.backends import acl_api  # the library names the backend looks for
    from farm.pool import build

    home = root / "ascend-toolkit" / "latest"
    version = f"emulated-{__version__}"
    for arch in build.ARCHES:  # a host may declare either (Lab.declare(arch=...))
        (home / f"{arch}-linux").mkdir(parents=True, exist_ok=True)
        (home / f"{arch}-linux" / "ascend_toolkit_install.info").write_text(
            f"package_name=Ascend-cann-toolkit\nversion={version}\narch={arch}\n"
        )
    for part in ("driver", "firmware"):
        (root / part).mkdir(parents=True, exist_ok=True)
        (root / part / "version.info").write_text(f"Version={version}\n")
    tools = home / "python" / "site-packages" / "bin"
    tools.mkdir(parents=True, exist_ok=True)
    (tools / "msopgen").write_text(
        "#!/bin/sh\n# msopgen of a farm lab host: the lab's stand-in CANN toolchain (TEST-ONLY)\n"
        f'exec {sh_quote(python)} -m farm.pool.lab.cann_toolchain msopgen "$@"\n'
    )
    (tools / "msopgen").chmod(0o755)
    write_set_env(set_env_script(home), home, root / "driver")
    (home / "lib64").mkdir(parents=True, exist_ok=True)
    for name in acl_api.LIB_FILES.values():
        shutil.copy2(libs / name, home / "lib64" / name)
    install_stand_in_toolchain(home, libs)
    (home / "opp" / "vendors").mkdir(parents=True, exist_ok=True)
    return home


def install_stand_in_toolchain(home: Path, libs: Path) -> None:
    """What the stand-in CANN build compiles and links from (farm/pool/lab/cann_toolchain.py):
    the emulated op-api with and without the operator's aclnn layer, the emulated Ascend C
    headers, and the aclnn entry "opbuild" generates from the OpDef."""
    from farm.pool import build

    tc = lab_cann_toolchain
    for rel, lib in (
        (tc.LIBRARY_WITH_LAYER, libs / "libcust_opapi.so"),
        (tc.LIBRARY_GENERATED_ONLY, libs.parent / "generated-only" / "libcust_opapi.so"),
    ):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(lib, home / rel)
    include = home / tc.ASCEND_C_INCLUDE
    shutil.rmtree(include, ignore_errors=True)
    shutil.copytree(build.OP_DIR / "ascendc_cpu" / "include", include)
    autogen = home / tc.AUTOGEN
    autogen.mkdir(parents=True, exist_ok=True)
    name = f"aclnn_{tc.snake(tc.OP_TYPE)}"
    shutil.copy2(build.OP_DIR / "acl_emu" / "include" / f"{name}.h", autogen / f"{name}.h")
    (autogen / f"{name}.cpp").write_text(
        "// The aclnn entry opbuild generates from the OpDef (the stand-in links the emulated)\n"
        f'#include "{name}.h"\n'
    )


def set_env_script(cann_home: str | Path) -> Path:
    """Where CANN keeps its set-up script: ascend-toolkit/set_env.sh, above ascend-toolkit/latest
    (ASCEND_HOME_PATH)."""
    return Path(cann_home).parent / "set_env.sh"


def write_set_env(path: Path, home: Path, driver: Path) -> None:
    """The emulated toolkit's set_env.sh: what CANN's exports, for this toolkit and driver (the
    paths written out, quoted; each list variable prepended to its value from before)."""
    q = sh_quote

    def prepend(name: str, *parts: Path) -> str:
        value = ":".join(str(p) for p in parts)
        return f'export {name}={q(value)}"${{{name}:+:${name}}}"'

    lines = [
        "# CANN's set-up script of a farm lab host's emulated toolkit (farm/pool/lab/core.py),",
        "# TEST-ONLY: source it, as CANN's own, to have the toolkit's environment.",
        f"export ASCEND_TOOLKIT_HOME={q(str(home))}",
        f"export ASCEND_HOME_PATH={q(str(home))}",
        f"export ASCEND_OPP_PATH={q(str(home / 'opp'))}",
        f"export ASCEND_AICPU_PATH={q(str(home))}",
        f"export TOOLCHAIN_HOME={q(str(home / 'toolkit'))}",
        prepend(
            "LD_LIBRARY_PATH",
            home / "lib64",
            home / "lib64" / "plugin" / "opskernel",
            driver / "lib64",
            driver / "lib64" / "common",
            driver / "lib64" / "driver",
        ),
        prepend(
            "PYTHONPATH",
            home / "python" / "site-packages",
            home / "opp" / "built-in" / "op_impl" / "ai_core" / "tbe",
        ),
        prepend("PATH", home / "bin", home / "compiler" / "ccec_compiler" / "bin"),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
