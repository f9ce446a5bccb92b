"""How a command runs on a host: its argv (env added, CANN's set-up script sourced, quoted for a
remote shell), and what its failures say (an exit status, a refused set-up script, a work
directory the host's file system refuses), each with the fix.

Used by the transports (farm/pool/transport/base.py Transport, the agent's start-up), deploy and
the CANN build on a host.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from farm.pool.inventory import HostSpec


def env_argv(env: Sequence[tuple[str, str]], argv: Sequence[str]) -> list[str]:
    """``argv`` run in an environment with ``env`` added (POSIX env(1)): how a host's agent and
    commands get its inventory env, which an SSH session does not have."""
    return ["env", *(f"{k}={v}" for k, v in env), *argv] if env else list(argv)


# How a host's agent and commands run with CANN's set-up script sourced (bash: CANN's script is
# bash's). Its words: the number of candidate scripts, the candidates, then the command. The first
# candidate that exists is sourced with no arguments (a sourced script sees the caller's) and its
# stdout discarded (the agent's stdout is the protocol's); the command runs in what it exported.
# A missing or failing script is one marked line on stderr and exit status SET_ENV_STATUS.
SET_ENV_MARK = "lsg-farm set_env:"
SET_ENV_STATUS = 120
_SET_ENV_SCRIPT = (
    'n=$1; shift; f=""; '
    'for c in "${@:1:n}"; do if [ -f "$c" ]; then f=$c; break; fi; done; '
    'shift "$n"; '
    f'if [ -z "$f" ]; then echo "{SET_ENV_MARK} missing" >&2; exit {SET_ENV_STATUS}; fi; '
    'command=("$@"); set --; '
    f'. "$f" >/dev/null || {{ echo "{SET_ENV_MARK} failed $? $f" >&2; exit {SET_ENV_STATUS}; }}; '
    'exec "${command[@]}"'
)


def with_set_env(scripts: Sequence[str], argv: Sequence[str]) -> list[str]:
    """``argv`` run after the first of ``scripts`` that exists on the host is sourced (CANN's
    set_env.sh: HostSpec.set_env); ``argv`` itself when there are none."""
    if not scripts:
        return list(argv)
    return ["bash", "-c", _SET_ENV_SCRIPT, "lsg-farm-set-env", str(len(scripts)), *scripts, *argv]


def host_argv(
    host: HostSpec, argv: Sequence[str], env: Sequence[tuple[str, str]] = ()
) -> list[str]:
    """``argv`` as a host's commands run (the CANN build and install, the platform helper): CANN's
    set-up script sourced (the inventory's set_env), then its env and ``env`` added on top."""
    return with_set_env(host.set_env, env_argv(tuple(host.env) + tuple(env), argv))


def set_env_problem(host: HostSpec, stderr: str) -> str | None:
    """The one line that says how sourcing the host's set-up script failed (a command run by
    :func:`with_set_env` wrote its mark on ``stderr``), with the fix; None when it did not."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    marks = [i for i, line in enumerate(lines) if line.startswith(SET_ENV_MARK)]
    if not marks or not host.set_env:
        return None
    said = lines[marks[-1]].removeprefix(SET_ENV_MARK).split(maxsplit=2)
    fix = (
        'fix set_env in the inventory (the path of CANN\'s set_env.sh on the host, or "" to use '
        "its env alone)"
    )
    if said[:1] == ["failed"] and len(said) == 3:
        before = lines[: marks[-1]]
        why = f": {before[-1]}" if before else ""
        return (
            f"host {host.name}: sourcing CANN's set-up script {said[2]} failed (status "
            f"{said[1]}){why}; repair it on the host, or {fix}"
        )
    where = " nor ".join(host.set_env)
    return f"host {host.name}: CANN's set-up script is not on the host ({where}); {fix}"


def remote_command(argv: Sequence[str], cwd: str | None = None) -> str:
    """A POSIX shell command line that runs ``argv`` (in ``cwd``), every word quoted."""
    if not argv:
        raise ValueError("empty argv")
    command = "exec " + shlex.join(str(a) for a in argv)
    if cwd:
        command = f"cd {shlex.quote(str(cwd))} && {command}"
    return command


def describe_exit(status: int | None) -> str:
    if status is None:
        return "exit status unknown"
    hints = {
        126: " (not executable: check 'python' in the inventory)",
        127: " (command not found: check 'python' in the inventory)",
    }
    if status < 0:
        return f"killed by signal {-status}"
    return f"exit status {status}{hints.get(status, '')}"


# What the host's own file system said, by errno, and what to do about it in its workdir.
_WORKDIR_FIXES = {
    "[Errno 28]": "free space there",
    "[Errno 122]": "free space there (a disk quota)",
    "[Errno 13]": "let the inventory's user write there",
    "[Errno 30]": "give the host a writable workdir in the inventory",
}


def with_workdir_fix(message: str, workdir: str) -> str:
    """A host helper's failure; where the host's file system refused it (full, over quota, not
    writable), with the fix in the host's workdir."""
    fix = next((f for errno, f in _WORKDIR_FIXES.items() if errno in message), None)
    return f"{message}; the host's workdir is {workdir}: {fix}" if fix else message
