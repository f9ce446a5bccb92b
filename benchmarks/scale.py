"""What the orchestrator costs against the size of the pool: emulated pools of 5 to 512 slots.

Run by hand (never from the tests; see benchmarks/README.md):

    .venv/bin/python benchmarks/scale.py                          # 5, 64, 256, 512 slots, nightly
    .venv/bin/python benchmarks/scale.py --sizes 5,64 --tier smoke --json /tmp/scale.json

Each pool is a TOML inventory of local (emulated) hosts written in a temporary directory: 5 slots
is the embedded pool's shape (two Ascend910B1 hosts of 2 devices, one Ascend310B1 of 1), larger
ones are hosts of 8 devices, the two families alternating. Every host declares
``LSG_EMULATED_EXECUTOR=instant`` in its inventory ``env``: its agents answer each case at once
with a well-formed passing record (farm/agent/stand_ins.py instant_executor), so what is measured is
the orchestrator, not the operator. (Only an emulated host's own declaration selects that
executor; ``farm run`` has no option for it.)

For each pool, ``farm run --inventory <pool> --tier T --no-report --no-progress [--jobs J]`` runs
as a subprocess with its own ``FARM_RUNS`` and ``FARM_STORE``, twice: *cold* (fresh host work
directories: everything deployed) and *warm* (deploys skipped, as in a farm that runs every
night). Its process tree is sampled from /proc every ``--interval`` seconds: the *orchestrator*
is the ``farm run`` process and its pytest-xdist workers (every descendant that is not an agent,
``python -m farm.agent``, or a short helper command); the *agents* are the rest.

Reported per pool (the warm run; the cold run's start-up and exit code in brackets):

* cases/s and orchestrator CPU per case from the moment every host is ready (the last ``host``
  line) to the last record: pytest's collection, the workers' start and every case (records are
  written in item order while cases run in slot order, so a window inside the run would time the
  writing of records, not the work); the agents' CPU per case likewise;
* orchestrator processes (most at once), memory (RSS sum at its peak, and per slot), open file
  descriptors (sum, at its peak);
* start-up: until the package is built (the ``package`` line) and until every host is deployed
  and checked with its canary (the last ``host`` line), in wall time and in the orchestrator's
  CPU time (which a loaded machine changes less); and the first record;
* agents: most at once, and their RSS sum at its peak while cases run and during the health
  checks (whose canary makes real inputs: numpy and the generators loaded).

The operator package is built once first (``farm build``), so that the timed runs find it up to
date. Nothing in the developer's ``runs/`` is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TCK = os.sysconf("SC_CLK_TCK")
RUN_TIMEOUT = 3600
SIZES = (5, 64, 256, 512)
DEVICES = 8  # per host of the larger pools (an Atlas A2 server)
SOCS = ("Ascend910B1", "Ascend310B1")


# -- pools ----------------------------------------------------------------------------------------


def pool_hosts(slots: int) -> list[tuple[str, str, int]]:
    """(name, soc, devices) of a pool of ``slots`` slots."""
    if slots == 5:
        return [("emu-a2-01", SOCS[0], 2), ("emu-a2-02", SOCS[0], 2), ("emu-310b-01", SOCS[1], 1)]
    if slots % DEVICES:
        raise SystemExit(f"--sizes: {slots} is not 5 or a multiple of {DEVICES}")
    return [(f"emu-{i:03d}", SOCS[i % 2], DEVICES) for i in range(slots // DEVICES)]


def write_inventory(root: Path, slots: int) -> Path:
    lines = ["# benchmarks/scale.py: emulated hosts answering with the instant executor", ""]
    for name, soc, devices in pool_hosts(slots):
        env = (
            f'{{ LSG_EMULATED_SOC = "{soc}", LSG_EMULATED_DEVICES = "{devices}", '
            'LSG_EMULATED_EXECUTOR = "instant" }'
        )
        lines += [
            "[[host]]",
            f'name = "{name}"',
            'transport = "local"',
            f'soc = "{soc}"',
            f"devices = {devices}",
            f"python = {json.dumps(sys.executable)}",
            f'workdir = "hosts/{name}"',
            f"env = {env}",
            "",
        ]
    path = root / "inventory.toml"
    path.write_text("\n".join(lines))
    return path


# -- /proc ----------------------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def descendants(root: int) -> list[int]:
    kids, out, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += kids.get(pid, [])
    return out


@dataclass
class Proc:
    pid: int
    kind: str  # orchestrator | agent | helper
    role: str  # one of ROLES
    cpu: float = 0.0  # seconds, user + system
    rss: float = 0.0  # MiB
    fds: int = 0
    alive: bool = True


def read_proc(pid: int) -> tuple[str, float, float, int] | None:
    """(cmdline, cpu seconds, RSS MiB, open fds) or None if it is gone (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        if fields[0] == b"Z":
            return None
        cpu = (int(fields[11]) + int(fields[12])) / TCK
        rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, IndexError, ValueError):
        return None
    return cmd, cpu, rss, fds


def kind_of(cmd: str) -> str:
    """agent (python -m farm.agent), orchestrator (farm run itself, and pytest-xdist's workers:
    execnet starts them as ``python -c "import sys;exec(eval(sys.stdin.readline()))"``) or
    helper (the deploy helper of a remote host, git rev-parse, ...)."""
    if "-m farm.agent" in cmd:
        return "agent"
    if "-m farm.cli" in cmd or "exec(eval(sys.stdin.readline()))" in cmd:
        return "orchestrator"
    return "helper"


# Who spends a run's CPU, finer than kind_of (benchmarks/floor.py and tier_time.py report it).
ROLES = ("agents", "controller", "xdist workers", "plots", "allure", "other")


def role_of(pid: int, cmd: str, root: int) -> str:
    """The process's part in a run whose `farm run` is ``root``: its agents, the controller (farm
    run itself: pytest's session, xdist's scheduling, the store, the report's steps), pytest-xdist's
    workers (the cases' dispatch, records and Allure results), the plots (farm run's forked
    drawing processes), Allure's report (node), or other (git, a deploy helper, ...)."""
    if pid == root:
        return "controller"
    if "-m farm.agent" in cmd:
        return "agents"
    if "exec(eval(sys.stdin.readline()))" in cmd:
        return "xdist workers"
    if "-m farm.cli" in cmd:
        return "plots"
    if "generate.mjs" in cmd:
        return "allure"
    return "other"


@dataclass
class Sample:
    t: float
    records: int
    orch_procs: int
    orch_rss: float
    orch_fds: int
    orch_cpu: float  # cumulative, every orchestrator process seen so far
    controller_cpu: float  # cumulative: of it, farm run itself (see role_of)
    agents: int
    agent_rss: float
    agent_cpu: float


class Monitor:
    """Samples a process tree and the run's record files."""

    def __init__(self, root_pid: int, runs: Path, interval: float):
        self.root_pid, self.runs, self.interval = root_pid, runs, interval
        self.procs: dict[int, Proc] = {}
        self.samples: list[Sample] = []
        self._offsets: dict[Path, tuple[int, int]] = {}  # file -> (bytes read, lines)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.start = time.monotonic()
        self._before = set(self._dirs())  # earlier runs of this pool
        self._run: Path | None = None

    def _dirs(self) -> list[Path]:
        return [p for p in self.runs.glob("[0-9]*") if p.is_dir()] if self.runs.is_dir() else []

    def run_dir(self) -> Path | None:
        """This run's directory (runs/<run id>), once prepare has made it."""
        if self._run is None:
            new = [p for p in self._dirs() if p not in self._before]
            self._run = new[0] if new else None
        return self._run

    def _records(self) -> int:
        run = self.run_dir()
        if run is None:
            return 0
        total = 0
        for path in (run / "records").glob("*.jsonl"):
            done, lines = self._offsets.get(path, (0, 0))
            with open(path, "rb") as f:
                f.seek(done)
                chunk = f.read()
            cut = chunk.rfind(b"\n") + 1
            lines += chunk[:cut].count(b"\n")
            self._offsets[path] = (done + cut, lines)
            total += lines
        return total

    def sample(self) -> None:
        pids = descendants(self.root_pid)
        for proc in self.procs.values():
            proc.alive = False
        for pid in pids:
            got = read_proc(pid)
            if got is None:
                continue
            cmd, cpu, rss, fds = got
            proc = self.procs.get(pid)
            if proc is None:
                proc = self.procs[pid] = Proc(pid, kind_of(cmd), role_of(pid, cmd, self.root_pid))
            proc.cpu, proc.rss, proc.fds, proc.alive = max(proc.cpu, cpu), rss, fds, True
        live = [p for p in self.procs.values() if p.alive]
        orch = [p for p in live if p.kind == "orchestrator"]
        agents = [p for p in live if p.kind == "agent"]
        self.samples.append(
            Sample(
                t=time.monotonic() - self.start,
                records=self._records(),
                orch_procs=len(orch),
                orch_rss=sum(p.rss for p in orch),
                orch_fds=sum(p.fds for p in orch),
                orch_cpu=sum(p.cpu for p in self.procs.values() if p.kind == "orchestrator"),
                controller_cpu=sum(p.cpu for p in self.procs.values() if p.role == "controller"),
                agents=len(agents),
                agent_rss=sum(p.rss for p in agents),
                agent_cpu=sum(p.cpu for p in self.procs.values() if p.kind == "agent"),
            )
        )

    def cpu_by_role(self) -> dict[str, float]:
        """CPU seconds of every process seen, by role (a process is read while it lives: what it
        spends after its last sample, and processes shorter than the interval, are missed)."""
        spent = dict.fromkeys(ROLES, 0.0)
        for proc in self.procs.values():
            spent[proc.role] += proc.cpu
        return spent

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> Monitor:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


# -- one run --------------------------------------------------------------------------------------


@dataclass
class Result:
    slots: int
    hosts: int
    phase: str  # cold | warm
    exit_code: int
    cases: int
    wall_s: float
    build_s: float | None
    prepare_s: float | None  # deploy + health checks + canary (the "host" lines)
    first_record_s: float | None
    cases_per_s: float | None
    orch_cpu_ms_per_case: float | None
    controller_cpu_ms_per_case: float | None  # of it, farm run itself; the rest its xdist workers
    agent_cpu_ms_per_case: float | None
    startup_cpu_s: float | None  # the orchestrator's CPU until the health checks are done
    orch_procs: int
    orch_rss_mib: float
    orch_rss_mib_per_slot: float
    orch_fds: int
    agents: int
    agent_rss_mib: float  # at its peak while cases run
    agent_rss_mib_prepare: float  # at its peak during the health checks
    lines: list[str] = field(default_factory=list, repr=False)


def _when(lines: list[tuple[float, str]], prefix: str, last: bool = False) -> float | None:
    hits = [t for t, line in lines if line.startswith(prefix)]
    return (hits[-1] if last else hits[0]) if hits else None


def run_once(
    root: Path,
    slots: int,
    phase: str,
    tier: str,
    jobs: int | None,
    interval: float,
) -> Result:
    inventory = root / "inventory.toml"
    env = dict(os.environ, FARM_RUNS=str(root / "runs"), FARM_STORE=str(root / "farm.sqlite"))
    argv = [sys.executable, "-m", "farm.cli", "run", "--tier", tier, "--inventory", str(inventory)]
    argv += ["--no-report", "--no-progress"] + (["--jobs", str(jobs)] if jobs else [])
    lines: list[tuple[float, str]] = []
    started = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.monotonic() - started, line.rstrip()))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    with Monitor(proc.pid, root / "runs", interval) as monitor:
        monitor.start = started
        try:
            code = proc.wait(RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
    reader.join(10)
    wall = time.monotonic() - started
    samples = monitor.samples
    cases = max((s.records for s in samples), default=0)
    run = monitor.run_dir()
    if run is not None:  # the last word: what the files hold once the run is over
        cases = max(cases, monitor._records())
    first = next((s.t for s in samples if s.records > 0), None)
    prepared = _when(lines, "host ", last=True)
    # From the end of the health checks to the last record: pytest's collection, the workers'
    # start and every case. (Records are written in item order while the cases run in slot
    # order, so a window inside the run would time the writing of records, not their making.)
    start = next((s for s in samples if prepared is not None and s.t >= prepared), None)
    end = next((s for s in samples if cases and s.records >= cases), None)
    rate = orch = controller = agent = startup_cpu = None
    if start is not None and end is not None and end.t > start.t:
        rate = cases / (end.t - start.t)
        orch = 1000 * (end.orch_cpu - start.orch_cpu) / cases
        controller = 1000 * (end.controller_cpu - start.controller_cpu) / cases
        agent = 1000 * (end.agent_cpu - start.agent_cpu) / cases
        startup_cpu = start.orch_cpu
    peak = max(samples, key=lambda s: s.orch_rss) if samples else None
    running = [s for s in samples if s.records > 0]
    return Result(
        slots=slots,
        hosts=len(pool_hosts(slots)),
        phase=phase,
        exit_code=code,
        cases=cases,
        wall_s=wall,
        build_s=_when(lines, "package"),
        prepare_s=prepared,
        first_record_s=first,
        cases_per_s=rate,
        orch_cpu_ms_per_case=orch,
        controller_cpu_ms_per_case=controller,
        agent_cpu_ms_per_case=agent,
        startup_cpu_s=startup_cpu,
        orch_procs=max((s.orch_procs for s in samples), default=0),
        orch_rss_mib=peak.orch_rss if peak else 0.0,
        orch_rss_mib_per_slot=(peak.orch_rss if peak else 0.0) / slots,
        orch_fds=max((s.orch_fds for s in samples), default=0),
        agents=max((s.agents for s in samples), default=0),
        agent_rss_mib=max((s.agent_rss for s in running), default=0.0),
        agent_rss_mib_prepare=max((s.agent_rss for s in samples if s.records == 0), default=0.0),
        lines=[line for _, line in lines],
    )


# -- the table ------------------------------------------------------------------------------------


def _f(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def _workers(r: Result) -> float | None:
    """The xdist workers' CPU a case: the orchestrator's less the controller's."""
    if r.orch_cpu_ms_per_case is None or r.controller_cpu_ms_per_case is None:
        return None
    return r.orch_cpu_ms_per_case - r.controller_cpu_ms_per_case


def table(results: list[Result]) -> str:
    warm = [r for r in results if r.phase == "warm"]
    cold = {r.slots: r for r in results if r.phase == "cold"}
    head = (
        "| slots (hosts) | cases/s | orch. CPU ms/case (controller + workers) "
        "| agents' CPU ms/case | orch. processes "
        "| orch. RSS MiB (per slot) | orch. fds | start-up s: package built / hosts ready "
        "(cold) | start-up orch. CPU s | first record s | agents: most at once (RSS MiB: run, "
        "health checks) | exit |"
    )
    rows = [head, "|" + "---|" * 11]
    for r in warm:
        c = cold.get(r.slots)
        ready = _f(r.prepare_s, ".1f") + (f" ({_f(c.prepare_s, '.1f')})" if c else "")
        rows.append(
            f"| {r.slots} ({r.hosts}) | {_f(r.cases_per_s, '.0f')} "
            f"| {_f(r.orch_cpu_ms_per_case, '.2f')} ({_f(r.controller_cpu_ms_per_case, '.2f')} "
            f"+ {_f(_workers(r), '.2f')}) | {_f(r.agent_cpu_ms_per_case, '.2f')} "
            f"| {r.orch_procs} | {r.orch_rss_mib:.0f} ({r.orch_rss_mib_per_slot:.2f}) "
            f"| {r.orch_fds} | {_f(r.build_s, '.1f')} / {ready} | {_f(r.startup_cpu_s, '.1f')} "
            f"| {_f(r.first_record_s, '.1f')} "
            f"| {r.agents} ({r.agent_rss_mib:.0f}, {r.agent_rss_mib_prepare:.0f}) "
            f"| {r.exit_code}{'' if c is None else f' ({c.exit_code})'} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="slots per pool")
    parser.add_argument("--tier", default="nightly")
    parser.add_argument("--jobs", type=int, default=None, help="--jobs of farm run (default)")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--work", type=Path, default=None, help="keep the pools here")
    parser.add_argument("--json", type=Path, default=None, help="write every result here")
    parser.add_argument("--warm-only", action="store_true", help="skip the cold run")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]

    from farm.pool import build

    print("building the operator package (untimed) ...", flush=True)
    build.build_package()
    temporary = None if args.work else tempfile.TemporaryDirectory(prefix="lsg-scale-")
    work = args.work or Path(temporary.name)
    results: list[Result] = []
    for slots in sizes:
        root = work / f"pool-{slots}"
        root.mkdir(parents=True, exist_ok=True)
        write_inventory(root, slots)
        for phase in ("cold", "warm"):
            if phase == "cold" and args.warm_only:
                continue
            result = run_once(root, slots, phase, args.tier, args.jobs, args.interval)
            results.append(result)
            print(
                f"{slots:4d} slots {phase}: exit {result.exit_code}, {result.cases} cases in "
                f"{result.wall_s:.1f} s, {_f(result.cases_per_s, '.0f')} cases/s, orchestrator "
                f"{_f(result.orch_cpu_ms_per_case, '.2f')} ms CPU/case (controller "
                f"{_f(result.controller_cpu_ms_per_case, '.2f')}), {result.orch_procs} "
                f"processes, {result.orch_rss_mib:.0f} MiB, {result.agents} agents",
                flush=True,
            )
            if result.exit_code != 0:
                print("\n".join(result.lines[-15:]), flush=True)
    print()
    print(table(results))
    if temporary is None:
        print(f"\npools in {work}")
    else:
        temporary.cleanup()  # ~90 MiB of host work directories and stores
    if args.json:
        args.json.write_text(
            json.dumps([{k: v for k, v in asdict(r).items() if k != "lines"} for r in results])
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
