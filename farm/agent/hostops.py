"""What the farm does on a host outside the agent: deploy's file commands, and process groups.

**A program and a module.** ``main(argv)`` is the host-side helper of farm/pool/transport: deploy
and the reaping of a broken channel's agent run its commands on a host. Each prints one JSON
object on stdout and exits 0; a command that cannot be done prints a one-line message on stderr
and exits 1 (an unexpected OSError: its traceback, the last line naming it):

    sha256 FILE                 {"sha256": of FILE, or null when it does not exist}
    status FILE DIR             {"sha256" of FILE, "unpacked": the sha256 in DIR's marker}; a
        complete version directory (its marker holds its own name, the sha256) vouches for FILE
        when every file it was installed with is still as it was (its contents list, CONTENTS:
        each file's sha256); one that is not is no longer complete: {"sha256", "unpacked": null,
        "damaged": [the paths of its files that changed or went]}
    install TMP DEST NAME SHA ARCHIVE REUSE
        verify TMP/NAME (first linked or copied from REUSE when that is not "-"), unpack it
        there when ARCHIVE is "1", check every file of an archive against the archive (a file
        linked from a directory damaged since is extracted afresh), write the contents list and
        the marker, rename TMP to DEST. DEST is never written into: a complete DEST (its marker
        holds SHA, its files as installed) wins and TMP is discarded; an incomplete or damaged
        one is moved aside first.
        {"sha256" of the file, "installed": "renamed" | "exists" | null}
    reap PGID PID GRACE         SIGCONT, SIGTERM, GRACE s, SIGKILL to process group PGID (only
        if PID, its leader, is gone or is a farm agent), then check that no member is left
        (kill -0; zombies do not count). {"gone", "left": [pid], "sent": [signal]} (+ "refused")
    platform                    what deploy picks the host's package by: {"arch": its CPU
        architecture as the farm names them, "declared": whether an emulated host declared it,
        "cann": the version of the CANN its ASCEND_HOME_PATH names, or null}

**How it reaches a host.** Deploy asks ``status`` and runs ``install`` *before* the bundle (which
holds this file) is on the host, so the SSH transport never imports it there: it sends the text of
this file and of the one module it stands on, farm/util/proc.py (the farm's one reader of /proc:
liveness, start times, group members, command lines), ``python -c <text> <command> args...``
(farm/pool/transport/base.py ``helper_source`` makes the text: it puts proc's source in
``sys.modules`` first, then runs this one as ``__main__``, which runs ``main``). The local transport
imports the module and calls :func:`command` in its own process (no interpreter per command).
Hence the rules for this file:

* **Self-contained.** The standard library and farm/util/proc.py only (itself standard library
  only), nothing else of the farm, not even a sibling in farm/agent: ``-c`` text cannot import a
  module that is not on the host yet. The process-group work (killing a group, whether a process
  is a farm agent) lives here; farm/pool/transport/local.py, farm/pool/lab/core.py and the
  transports use it from here. The failures are :class:`HostOpError` (not a FarmError, which
  lives in the ground floor's errors); the local transport turns them into DeployError.
* **Old interpreters.** The text runs under whatever ``python`` the inventory names, before
  anything has checked its version (the agent itself needs 3.10). It is written for Python 3.7
  and later: ``from __future__ import annotations`` keeps the annotations unevaluated, and there is
  no walrus, no ``match``, no positional-only parameter, no ``str.removeprefix``, no
  ``zip(strict=...)``, no parenthesised ``with``; ``tarfile``'s ``data`` filter only where it
  exists. (The string in farm/pool/transport/base.py it replaced also ran on 3.6; on 3.6 and
  older this text fails with a SyntaxError on the ``__future__`` import, which deploy reports as
  the helper's failure.) tests/agent/test_hostops.py parses it as 3.7.
* **Light to import.** The agent imports it (devicelock) at start: hashlib, tarfile, shutil and
  uuid are imported by the commands that use them.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from farm.util import proc as procfs

MARKER = ".lsg-unpacked"  # a complete version directory's marker: the sha256 of its file
# A complete version directory's files as installed, each with its sha256 (JSON {path: sha256}):
# the file it is named by and, for an archive, every file of the archive.
CONTENTS = ".lsg-contents"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")  # farm/pool/deploy.py's
STALE_AFTER_S = 86400.0  # .incoming-*/.stale-* directories older than this are a dead deploy's
KILL_WAIT = 5.0  # seconds to wait for a process group to go after SIGKILL
POLL_S = 0.02
AGENT_MODULE = "farm.agent"  # an agent runs as `python -m farm.agent ...`
# An emulated host declares its SoC (and may declare a CPU architecture other than the machine's)
# in its environment: an SSH lab host through sshd's SetEnv, a local one through its inventory env.
ENV_EMULATED_SOC = "LSG_EMULATED_SOC"
ENV_EMULATED_ARCH = "LSG_EMULATED_ARCH"
# The names other tools give the farm's architectures.
ARCH_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "armv8l": "aarch64"}


class HostOpError(Exception):
    """A command that cannot be done; ``main`` prints the message on stderr and exits 1."""


# -- files ------------------------------------------------------------------------------------


def sha256(path: str) -> str | None:
    """The sha256 of a file; None when it does not exist."""
    import hashlib

    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except FileNotFoundError:
        return None
    return h.hexdigest()


def marker(directory: str) -> str | None:
    """What a version directory's marker holds (its sha256); None without one."""
    try:
        with open(os.path.join(directory, MARKER)) as f:
            return f.read().strip()
    except OSError:
        return None


def unpack(archive: str, dest: str, only: Sequence[str] | None = None) -> None:
    """Extract a tar archive into ``dest`` (``only``: just those members); refuse it whole if any
    member is not a plain file or directory inside ``dest``."""
    import tarfile

    with tarfile.open(archive, "r:*") as t:
        members = t.getmembers()
        for x in members:
            parts = x.name.split("/")
            if x.name.startswith("/") or ".." in parts or not (x.isfile() or x.isdir()):
                raise HostOpError(f"refusing unsafe archive member {x.name!r} in {archive}")
        if only is not None:
            members = [x for x in members if x.name in only]
        if hasattr(tarfile, "data_filter"):
            t.extractall(dest, members, filter="data")
        else:
            t.extractall(dest, members)


def archive_contents(archive: str) -> dict[str, str]:
    """Every regular file of a tar archive with the sha256 of its bytes."""
    import hashlib
    import tarfile

    found = {}
    with tarfile.open(archive, "r:*") as t:
        for member in t:
            if not member.isfile():
                continue
            data = t.extractfile(member)
            h = hashlib.sha256()
            while data is not None:
                block = data.read(1 << 20)
                if not block:
                    break
                h.update(block)
            found[member.name] = h.hexdigest()
    return found


def damaged(directory: str, name: str | None = None) -> list[str]:
    """The files of complete version directory ``directory`` that are no longer as installed
    (changed, cut short or gone), by their path inside it; [] when every one is. What was
    installed is the directory's contents list (CONTENTS); a directory an older farm installed
    has none: its file ``name`` (the sha256 the directory is named by) and, for an archive, the
    archive's files stand for it. Files added since (an agent's __pycache__) do not count."""
    import tarfile

    own = os.path.basename(os.path.normpath(directory))
    try:
        with open(os.path.join(directory, CONTENTS)) as f:
            listed = json.load(f)
    except FileNotFoundError:
        listed = None
    except (OSError, ValueError):
        return [CONTENTS]
    if listed is None:
        if not name:
            return []
        path = os.path.join(directory, name)
        if sha256(path) != own:
            return [name]
        listed = {name: own}
        if name.endswith(ARCHIVE_SUFFIXES):
            try:
                listed.update(archive_contents(path))
            except (tarfile.TarError, OSError, EOFError):
                return [name]
    if not isinstance(listed, dict):
        return [CONTENTS]
    return sorted(
        str(p) for p, digest in listed.items() if sha256(os.path.join(directory, str(p))) != digest
    )


def _remove_dead_deploys(parent: str) -> None:
    import shutil

    now = time.time()
    for old in os.listdir(parent) if os.path.isdir(parent) else []:
        p = os.path.join(parent, old)
        try:
            if old.startswith((".incoming-", ".stale-")) and now - os.path.getmtime(p) > (
                STALE_AFTER_S
            ):
                shutil.rmtree(p, ignore_errors=True)  # left by a deploy that died a day ago
        except OSError:
            pass


def install(
    tmp: str, dest: str, name: str, expect: str, archive: bool, reuse: str | None
) -> dict[str, Any]:
    """The ``install`` command (see the module's docstring)."""
    import shutil
    import uuid

    parent = os.path.dirname(dest)
    _remove_dead_deploys(parent)
    os.makedirs(tmp, exist_ok=True)
    f = os.path.join(tmp, name)
    if reuse is not None and not os.path.exists(f):
        try:
            os.link(reuse, f)
        except OSError:
            shutil.copyfile(reuse, f)
    got = sha256(f)
    if got != expect:
        shutil.rmtree(tmp, ignore_errors=True)
        return {"sha256": got, "installed": None}
    if archive:
        unpack(f, tmp)
    contents = {name: expect}
    if name.endswith(ARCHIVE_SUFFIXES):
        members = archive_contents(f)
        wrong = [p for p, digest in members.items() if sha256(os.path.join(tmp, p)) != digest]
        if wrong:  # linked from a directory damaged since: those files afresh, not through it
            for p in wrong:
                try:
                    os.remove(os.path.join(tmp, p))
                except FileNotFoundError:
                    pass
            unpack(f, tmp, only=wrong)
            still = [p for p in wrong if sha256(os.path.join(tmp, p)) != members[p]]
            if still:
                raise HostOpError(f"cannot install {name}: {still[0]} does not unpack as archived")
        contents.update(members)
    with open(os.path.join(tmp, CONTENTS + ".tmp"), "w") as c:
        json.dump(contents, c, sort_keys=True)
    os.replace(os.path.join(tmp, CONTENTS + ".tmp"), os.path.join(tmp, CONTENTS))
    with open(os.path.join(tmp, MARKER + ".tmp"), "w") as m:
        m.write(expect + "\n")
    os.replace(os.path.join(tmp, MARKER + ".tmp"), os.path.join(tmp, MARKER))
    for _attempt in (1, 2):
        try:
            os.rename(tmp, dest)  # atomic; fails on a non-empty DEST
            return {"sha256": got, "installed": "renamed"}
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.EISDIR, errno.ENOTDIR):
                raise
        if marker(dest) == expect and not damaged(dest, name):  # another deploy won the rename
            shutil.rmtree(tmp, ignore_errors=True)
            return {"sha256": got, "installed": "exists"}
        aside = os.path.join(parent, f".stale-{os.path.basename(dest)}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(dest, aside)
        except FileNotFoundError:
            pass
        shutil.rmtree(aside, ignore_errors=True)
    raise HostOpError(f"cannot install {name}: {dest} stays incomplete")


def status(archive: str, dest: str) -> dict[str, Any]:
    """The ``status`` command (see the module's docstring)."""
    unpacked = marker(dest)
    if unpacked is not None and unpacked == os.path.basename(os.path.normpath(dest)):
        bad = damaged(dest, os.path.basename(archive))
        if not bad:
            return {"sha256": unpacked, "unpacked": unpacked}
        return {"sha256": sha256(archive), "unpacked": None, "damaged": bad}
    return {"sha256": sha256(archive), "unpacked": unpacked}


# -- processes and process groups ---------------------------------------------------------------


def is_agent(argv: Sequence[str], workdir: str | None = None) -> bool:
    """Whether a command line is a farm agent's (``python -m farm.agent ...``), and, with
    ``workdir`` (an absolute path), one of that work directory (``--workdir``)."""
    if AGENT_MODULE not in argv:
        return False
    if workdir is None:
        return True
    for i in range(len(argv) - 1):  # no zip(strict=...) before 3.10
        if argv[i] == "--workdir" and os.path.abspath(argv[i + 1]) == workdir:
            return True
    return f"--workdir={workdir}" in argv


def leader_is_agent(pid: int) -> bool:
    """Whether ``pid`` may be treated as a farm agent: it is one, or it is gone (what is left of
    its group is the agent's), or its command line cannot be read."""
    argv = procfs.cmdline(pid)
    return argv is None or is_agent(argv)


def kill_group(
    pgid: int,
    grace: float | None,
    kill_wait: float = KILL_WAIT,
    poll: Callable[[], object] | None = None,
) -> dict[str, Any]:
    """Kill process group ``pgid`` and check that no live member is left.

    SIGCONT (a stopped member must be able to die), SIGTERM and up to ``grace`` s for the group
    to go (no SIGTERM when ``grace`` is None), then SIGKILL and up to ``kill_wait`` s. A signal
    is sent only while the group has members. ``poll`` is called before every look at the group
    (a parent collects its dead child there, so that it does not stay a zombie: zombies do not
    count anyway). ``{"gone", "left": [pid], "sent": [signal name]}``, plus ``"refused"`` (the
    reason) when a signal may not be sent."""
    steps: list[tuple[signal.Signals, float]] = [(signal.SIGCONT, 0.0)]
    if grace is not None:
        steps.append((signal.SIGTERM, grace))
    steps.append((signal.SIGKILL, kill_wait))

    def left() -> list[int]:
        if poll is not None:
            poll()
        return procfs.members(pgid)

    sent: list[str] = []
    for sig, wait in steps:
        if not left():
            break
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        except PermissionError as e:
            return {"gone": False, "left": left(), "sent": sent, "refused": str(e)}
        sent.append(signal.Signals(sig).name)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and left():
            time.sleep(POLL_S)
    remaining = left()
    return {"gone": not remaining, "left": remaining, "sent": sent}


def reap(pgid: int, pid: int, grace: float) -> dict[str, Any]:
    """The ``reap`` command: :func:`kill_group` with SIGTERM, unless ``pid``, the group's
    leader, is alive in it and not a farm agent (its number was reused)."""
    found = procfs.members(pgid)
    if found and pid in found and not leader_is_agent(pid):
        return {
            "gone": False,
            "left": procfs.members(pgid),
            "sent": [],
            "refused": "not a farm agent",
        }
    return kill_group(pgid, grace)


# -- the architecture -------------------------------------------------------------------------


def normalise_arch(name: str) -> str:
    """A CPU architecture as the farm names it: x86_64, aarch64 (others as the kernel says)."""
    name = name.strip().lower()
    return ARCH_ALIASES.get(name, name)


def host_arch(environ: Any = None) -> dict[str, Any]:
    """This host's architecture: the kernel's, or the one an emulated host declares (test-only:
    an x86_64 lab host standing for an aarch64 board)."""
    import platform

    env = os.environ if environ is None else environ
    if env.get(ENV_EMULATED_SOC) and env.get(ENV_EMULATED_ARCH):
        return {"arch": normalise_arch(env[ENV_EMULATED_ARCH]), "declared": True}
    return {"arch": normalise_arch(platform.machine()), "declared": False}


def info_value(path: str, key: str) -> str | None:
    """The value of ``key=value`` (the key in any case) in a CANN or driver info file, or None."""
    import re

    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"^\s*" + re.escape(key) + r"\s*=\s*(\S+)", text, re.MULTILINE | re.IGNORECASE)
    return m.group(1) if m else None


def cann_version(home: str, arch: str) -> str | None:
    """The CANN toolkit's version at ``home`` (ASCEND_HOME_PATH): the ``version=`` line of
    ``<arch>-linux/ascend_toolkit_install.info``, else of the one ``*-linux`` directory there."""
    import glob

    info = "ascend_toolkit_install.info"
    found = info_value(os.path.join(home, arch + "-linux", info), "version")
    if found is None:
        others = sorted(glob.glob(os.path.join(glob.escape(home), "*-linux", info)))
        found = info_value(others[0], "version") if len(others) == 1 else None
    return found


def host_platform(environ: Any = None) -> dict[str, Any]:
    """host_arch, and the version of the host's CANN (None without ASCEND_HOME_PATH)."""
    env = os.environ if environ is None else environ
    found = host_arch(env)
    home = env.get("ASCEND_HOME_PATH")
    found["cann"] = cann_version(home, found["arch"]) if home else None
    return found


# -- the program ------------------------------------------------------------------------------


def command(argv: Sequence[str]) -> dict[str, Any]:
    """Run one command (``argv``: its name, then its arguments as strings); its JSON reply."""
    if not argv:
        raise HostOpError("no helper command given (sha256, status, install, reap, platform)")
    cmd, args = argv[0], list(argv[1:])
    if cmd == "sha256":
        return {"sha256": sha256(args[0])}
    if cmd == "status":
        return status(args[0], args[1])
    if cmd == "install":
        tmp, dest, name, expect, archive, reuse = args
        return install(tmp, dest, name, expect, archive == "1", None if reuse == "-" else reuse)
    if cmd == "reap":
        return reap(int(args[0]), int(args[1]), float(args[2]))
    if cmd == "platform":
        return host_platform()
    raise HostOpError(f"unknown helper command {cmd!r}")


def main(argv: Sequence[str]) -> int:
    """Run one command, print its JSON reply; exit status 0, or 1 and a message on stderr."""
    try:
        reply = command(argv)
    except HostOpError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(json.dumps(reply))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
