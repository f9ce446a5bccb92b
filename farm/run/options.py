"""The options of a run, declared once: `farm run --<name>` (farm/cli) and, for those a plain
pytest run takes, `pytest suites/ --farm-<name>` (farm/run/plugin.py) are built from ``OPTIONS``.

Each surface keeps its own words where they differ (``pytest_help``, ``pytest_metavar``): pytest's
name its --farm- spellings. The name, type, default and choices are one for both, so a value that
one accepts the other accepts too.

Imported by the pytest plugin on every pytest run: it imports nothing heavy.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from farm.agent.backends import BACKENDS
from farm.run.timeouts import case_timeout_seconds
from farm.util import targets

PYTEST_PREFIX = "farm-"


@dataclass(frozen=True)
class RunOption:
    """One option: ``name`` is `farm run --<name>`; pytest's is `--farm-<name>` when ``pytest``.
    ``cli`` False: pytest's alone (how `farm run` hands a worker its plan and run directory)."""

    name: str
    help: str | None = None
    type: Callable[[str], Any] | None = None
    default: Any = None
    choices: tuple[str, ...] | None = None
    action: str | None = None
    nargs: str | None = None
    const: Any = None
    metavar: str | None = None
    cli: bool = True
    pytest: bool = True
    pytest_help: str | None = None  # None: ``help``
    pytest_metavar: str | None = None  # None: ``metavar``

    def keywords(self, *, for_pytest: bool) -> dict[str, Any]:
        """add_argument's / addoption's keywords (the ones given; argparse's defaults else)."""
        help_text = self.pytest_help if for_pytest and self.pytest_help is not None else self.help
        metavar = self.pytest_metavar if for_pytest and self.pytest_metavar else self.metavar
        given = {
            "help": help_text,
            "type": self.type,
            "choices": self.choices,
            "action": self.action,
            "nargs": self.nargs,
            "const": self.const,
            "metavar": metavar,
        }
        out = {key: value for key, value in given.items() if value is not None}
        if self.default is not None or self.action == "append":
            # append's default is a fresh list each parse: argparse copies it before appending
            out["default"] = list(self.default or []) if self.action == "append" else self.default
        return out


_TARGETS_HELP = " | ".join(targets.describe(t) for t in targets.TARGETS)

# What a run picks: the cases (`farm cases` takes these too), the pool, the operator, the limits.
SELECTION = (
    RunOption(
        "tier",
        help="smoke | nightly | full (default smoke; with --cases, only the files unless given)",
        pytest_help="smoke | nightly | full (default smoke; none with --farm-cases unless given)",
    ),
    RunOption(
        "cases",
        action="append",
        metavar="FILE",
        help="run the cases of a case file: JSON, YAML or CSV (repeatable; docs/case-files.md)",
        pytest_help="run the cases of a case file (JSON, YAML, CSV; repeatable; "
        "docs/case-files.md)",
    ),
    RunOption(
        "explore",
        nargs="?",
        const="",
        metavar="SALT",
        help="add cases drawn afresh from SALT on top of the tier (default salt: today's date, "
        "or the --run-group of a shard; recorded in the run, and in each explored case's id)",
        pytest_help="add cases drawn from SALT on top of the tier (default salt: today's date)",
    ),
)
POOL = (
    RunOption(
        "inventory",
        help="TOML inventory (default: the embedded local pool)",
        pytest_help="TOML inventory (default: embedded pool)",
        pytest_metavar="FILE",
    ),
    # Checked here: an unknown value would reach every agent and fail its canary, which
    # quarantines hosts for the command line's mistake.
    # No fixed default: each target's (targets.DEFAULT_BACKENDS), so a run goes through every
    # layer its package ships unless told otherwise.
    RunOption(
        "backend",
        default=None,
        choices=BACKENDS,
        help=f"how an agent calls the operator: acl through the package's aclnn layer, native "
        f"its C ABI, torch PyTorch's operator ({targets.backend_help()})",
        pytest_help=f"how an agent calls the operator: {' | '.join(BACKENDS)} "
        f"({targets.backend_help()})",
    ),
    RunOption(
        "target",
        default=targets.DEFAULT_TARGET,
        choices=targets.TARGETS,
        help="the operator package to build and deploy: "
        + "; ".join(targets.describe(t) for t in targets.TARGETS)
        + f" (default {targets.DEFAULT_TARGET}; ascend is built on the pool's hosts with CANN "
        "and runs with --backend acl)",
        pytest_help=f"the operator package to build: {_TARGETS_HELP} "
        f"(default {targets.DEFAULT_TARGET})",
    ),
)
LIMITS = (
    RunOption(
        "case-timeout",
        type=case_timeout_seconds,
        default=60.0,
        help="seconds for a small case; grows with its size (default 60)",
        pytest_help="seconds an agent may take for a small case (grows with size; default 60)",
    ),
)
# How `farm run` hands its pytest session (and its workers) what it prepared.
HANDOVER = (
    RunOption("run-dir", metavar="DIR", help="where this run's records go", cli=False),
    RunOption("plan", metavar="FILE", help="a pool plan prepared by `farm run`", cli=False),
)
OPTIONS = SELECTION + POOL + LIMITS + HANDOVER
# The order `pytest --help` has always listed them in.
PYTEST_ORDER = (
    "inventory",
    "tier",
    "cases",
    "explore",
    "backend",
    "target",
    "run-dir",
    "plan",
    "case-timeout",
)


def add_to_parser(parser: argparse.ArgumentParser, options: Iterable[RunOption]) -> None:
    """`farm run`'s (or `farm cases`') spellings of ``options``."""
    for option in options:
        if option.cli:
            parser.add_argument(f"--{option.name}", **option.keywords(for_pytest=False))


def add_to_pytest(group) -> None:
    """pytest's spellings of the options (--farm-<name>) into an option group of its parser."""
    by_name = {option.name: option for option in OPTIONS}
    for option in (by_name[name] for name in PYTEST_ORDER):
        if option.pytest:
            group.addoption(f"--{PYTEST_PREFIX}{option.name}", **option.keywords(for_pytest=True))


def pytest_dest(name: str) -> str:
    """The name pytest's config.getoption knows an option by: "case-timeout" ->
    "farm_case_timeout"."""
    return (PYTEST_PREFIX + name).replace("-", "_")
