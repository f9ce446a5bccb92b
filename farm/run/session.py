"""A few cases on the pool, outside a pytest run: what `farm repro`, `farm shrink` and
`farm bisect` share.

    with PoolSession(inventory=None, target="ascendc-cpu") as pool:
        record = pool.run(case)

Opening builds the operator package (unless one is given), health-checks and deploys the pool
and starts a dispatcher over its healthy slots (only `host`'s, when one is named); each run()
goes to a slot of the case's family, with the dispatcher's retries.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import cast

from farm.agent.backends import BACKENDS
from farm.agent.record import ResultRecord
from farm.run import prepare
from farm.run.dispatch import Dispatcher
from farm.run.leases import RunState
from farm.run.plan import Plan
from farm.run.timeouts import case_timeout_seconds
from farm.util import paths, targets
from farm.util.errors import ConfigError
from suites.case import Case


def add_case_file_args(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """--cases FILE (repeatable): where a case of a case file is found."""
    parser.add_argument(
        "--cases",
        action="append",
        default=[],
        metavar="FILE",
        help=help or "the case file the case came from (tier and explored cases are found without)",
    )


def add_pool_args(
    parser: argparse.ArgumentParser,
    *,
    backend: bool = True,
    plant_bug: str | None = None,
    target_help: str = "the operator package to run",
    of_run: bool = False,
) -> None:
    """The options of a command that runs a few cases on the pool (repro, shrink, bisect):
    --inventory, --backend, --target, --plant-bug (with its help), --case-timeout. ``of_run``:
    --backend, --target and --plant-bug default to None, the backend and package of the run the
    case last ran in (farm/cli/case_package.py), and --plant-bug none is the real operator."""
    from farm.pool import build

    parser.add_argument("--inventory", help="TOML inventory (default: the embedded local pool)")
    if backend:
        parser.add_argument(
            "--backend",
            choices=BACKENDS,
            help=f"how the operator is called ("
            f"{'default: the backend of the run the case last ran in, else ' if of_run else ''}"
            f"{targets.backend_help()})",
        )
    default = "the target of the run the case last ran in, else " if of_run else ""
    parser.add_argument(
        "--target",
        default=None if of_run else build.DEFAULT_TARGET,
        choices=build.NATIVE_TARGETS,
        help=f"{target_help} (default {default}{build.DEFAULT_TARGET})",
    )
    if plant_bug is not None:
        parser.add_argument(
            "--plant-bug",
            default=None if of_run else "",
            choices=(*build.BUG_NAMES, "none") if of_run else build.BUG_NAMES,
            metavar="BUG",
            help=build.plant_bug_help(plant_bug)
            + (
                "; default: the bug of the run the case last ran in (none: the real operator)"
                if of_run
                else ""
            ),
        )
    parser.add_argument(
        "--case-timeout",
        type=case_timeout_seconds,
        default=60.0,
        help="seconds for a small case; grows with its size (default 60)",
    )


def judged(case: Case, record: ResultRecord) -> ResultRecord:
    """The record as `farm run` judges it: a passed record of an accepted case whose tiling
    differs from the design, or (acl) whose aclnn layer asked for another workspace than its
    design (the check suites/test_precision.py makes after the record), fails with category
    "tiling" or "workspace", as the run's plugin amends it (farm/run/plugin.py)."""
    from suites.tiling import DesignMismatch, check_tiling

    if record.get("outcome") != "passed" or not case.accepted:
        return record
    try:
        check_tiling(case, dict(record))
    except DesignMismatch as exc:
        amended = cast(ResultRecord, dict(record, outcome="failed", category=exc.category))
        amended["message"] = f"passed its standards, then failed a check of the suite: {exc}"
        return amended
    return record


class PoolSession:
    def __init__(
        self,
        inventory: str | None = None,
        *,
        backend: str | None = None,
        target: str | None = None,
        plant_bug: str = "",
        package: Path | None = None,
        host: str | None = None,
        run_dir: Path | None = None,
        case_timeout: float = 60.0,
    ):
        self.inventory, self.backend, self.host = inventory, backend, host
        self.target, self.plant_bug, self.package = target, plant_bug, package
        self.run_dir = run_dir or paths.RUNS_DIR / "session"
        self.case_timeout = case_timeout
        self.plan: Plan | None = None
        self._dispatcher: Dispatcher | None = None

    def __enter__(self) -> PoolSession:
        from farm.pool import build

        package = self.package or build.build_package(
            self.target or build.DEFAULT_TARGET, plant_bug=self.plant_bug
        )
        plan = prepare.prepare_pool(
            self.inventory,
            backend=self.backend,
            package=package,
            run_dir=self.run_dir,
            case_timeout=self.case_timeout,
            require_healthy=True,
        )
        slots = [s for s in plan.slots if not self.host or s.host == self.host]
        if not slots:
            raise ConfigError(f"no healthy host to run on: {plan.unhealthy or 'none by that name'}")
        self.plan = plan
        self._dispatcher = Dispatcher(
            slots,
            prepare.open_channel_factory(plan),
            RunState(plan.state_path),
            plan.run_dir / "locks",
            plan.backend,  # the target's default where none was named
            base_timeout=self.case_timeout,
        )
        return self

    @property
    def target_name(self) -> str:
        return "" if self.plan is None else self.plan.package.get("target", "")

    def families(self) -> set[str]:
        return set() if self.plan is None else set(self.plan.slots_by_family())

    def run(self, case: Case) -> ResultRecord:
        """The case's record as `farm run` judges it (the suite's checks included)."""
        if self._dispatcher is None:
            raise RuntimeError("PoolSession.run outside `with`")
        return judged(case, self._dispatcher.run(case))

    def close(self) -> None:
        if self._dispatcher is not None:
            self._dispatcher.close()
            self._dispatcher = None

    def __exit__(self, *exc) -> None:
        self.close()
