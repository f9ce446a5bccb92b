"""Cases per second and per-case overhead of the farm, against one fresh process per case.

Run by hand (never from the tests); see benchmarks/README.md and benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/throughput.py                      # everything, ~25 min on 2 cores
    .venv/bin/python benchmarks/throughput.py --sections compare   # the N-case comparison only

Sections (``--sections``, comma-separated):

``farm-run``
    ``farm run --tier T --no-report --no-progress [--inventory I] [--jobs J]`` as a subprocess,
    on the embedded pool and on an SSH lab (``farm.pool.lab.core.lab_up`` into a temporary
    directory),
    with
    ``FARM_RUNS`` and ``FARM_STORE`` in that directory so the developer's ``runs/`` is untouched.
    From the run's records (``<run>/records/*.jsonl``) and its ``junit.xml``: cases/s (over the
    whole command, and over the pytest session), and per case

    * ``wall - total``: orchestrator wall time of the dispatch minus the agent's own time for the
      case (transport, dispatch, leases, channel start-up when a case opens a channel);
    * ``wall - backend``: farm time minus backend time, as the issue defines the overhead (so it
      includes inputs and golden on the agent);
    * ``item - wall``: the pytest item's duration (junit) minus the dispatch (the plugin's record
      writing, Allure annotation, assertion, pytest's own per-item work).

``compare``
    The same N cases of the tier (spread over it, both families), one at a time, on the lab:

    * ``ssh-per-case``: one fresh ``ssh -i key -p port user@127.0.0.x 'cd bundle && python -m
      oneshot'`` per case (benchmarks/oneshot.py, reached through PYTHONPATH on the host), the
      way file-based ST tools work;
    * ``python-per-case``: the same one-shot process started locally (no ssh), to split the
      baseline's cost between ssh and python start-up;
    * ``channel``: the farm's persistent SSH channel to an agent (``Channel.run_case``);
    * ``dispatch``: the farm's dispatch path around it (``Dispatcher.run``: slot choice, run
      state, fcntl lease, record) plus the worker's record writer;
    * ``echo``: a ``run-case`` to an agent whose executor runs nothing (the transport floor);

    and the same channel/dispatch/echo rows on the embedded pool (local subprocess pipes).
    Channels are opened before timing; their start-up is reported apart.

``profile``
    cProfile of the dispatch loop on the lab (orchestrator side), and micro-timings of the pieces
    the dispatch adds around the channel (case encoding, run-state read, lease, record write).

Figures are medians over ``--repeat`` repetitions; everything raw goes to ``--json``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO / "benchmarks"
FARM = str(Path(sys.executable).parent / "farm")
SECTIONS = ("farm-run", "compare", "profile")


# -- small helpers ------------------------------------------------------------------------------


def stats(values: list[float]) -> dict:
    """n, median, p95 (nearest rank), mean, min, max of seconds."""
    if not values:
        return {"n": 0}
    v = sorted(values)
    p95 = v[min(len(v) - 1, max(0, int(round(0.95 * len(v) + 0.5)) - 1))]
    return {
        "n": len(v),
        "median": statistics.median(v),
        "p95": p95,
        "mean": statistics.fmean(v),
        "min": v[0],
        "max": v[-1],
    }


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:.2f}"


def load() -> tuple[float, float, float]:
    return tuple(round(x, 2) for x in os.getloadavg())


def machine() -> dict:
    info = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": load(),
    }
    try:
        model = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if "model name" in ln]
        info["cpu"] = model[0].split(":", 1)[1].strip() if model else "?"
    except OSError:
        info["cpu"] = "?"
    try:
        info["git_commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
        ).stdout.split("\n")
        info["uncommitted"] = sorted(line[3:] for line in dirty if line.strip())
    except OSError:
        info["git_commit"] = "?"
    return info


def pick_cases(tier: str, n: int) -> list:
    """n cases spread evenly over the tier (both families, every section of the matrix)."""
    from suites import matrix

    cases = matrix.expand(tier)
    if n >= len(cases):
        return cases
    step = len(cases) / n
    return [cases[int(i * step)] for i in range(n)]


def say(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


# -- section farm-run ---------------------------------------------------------------------------


def farm_run(pool: str, inventory: Path | None, tier: str, jobs: int | None, work: Path) -> dict:
    """One `farm run` as a subprocess in a private FARM_RUNS; the figures from its records."""
    runs = work / f"runs-{pool}"
    runs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, FARM_RUNS=str(runs), FARM_STORE=str(runs / "farm.sqlite"))
    argv = [FARM, "run", "--tier", tier, "--no-report", "--no-progress"]
    if inventory is not None:
        argv += ["--inventory", str(inventory)]
    if jobs:
        argv += ["--jobs", str(jobs)]
    before = {p.name for p in runs.iterdir()}
    load_before = load()
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    new = sorted(p for p in runs.iterdir() if p.name not in before and (p / "records").is_dir())
    if not new:
        raise RuntimeError(
            f"{' '.join(argv)}: no run directory (exit {proc.returncode})\n{proc.stderr[-3000:]}"
        )
    out = analyse_run(new[-1], elapsed)
    out.update(
        pool=pool,
        jobs=jobs or "default",
        exit_code=proc.returncode,
        command=" ".join(shlex.quote(a) for a in argv),
        load_before=load_before,
        load_after=load(),
    )
    return out


def junit_items(path: Path) -> tuple[float | None, dict[str, float]]:
    """The pytest session's time and each case item's duration, by case id."""
    if not path.is_file():
        return None, {}
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    items = {}
    for tc in root.iter("testcase"):
        name = tc.get("name", "")
        if "[" in name:
            items[name[name.index("[") + 1 : name.rindex("]")]] = float(tc.get("time", 0))
    return (float(suite.get("time")) if suite is not None else None), items


def analyse_run(run_dir: Path, elapsed: float) -> dict:
    records = []
    per_worker: dict[str, int] = {}
    slots_per_worker: dict[str, set] = {}
    for path in sorted((run_dir / "records").glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        records += rows
        per_worker[path.stem] = len(rows)
        slots_per_worker[path.stem] = {r.get("slot") for r in rows}
    session_s, items = junit_items(run_dir / "junit.xml")
    timed = [r for r in records if {"wall_s", "total_s", "backend_s"} <= set(r["timings"])]
    transport = [r["timings"]["wall_s"] - r["timings"]["total_s"] for r in timed]
    farm = [r["timings"]["wall_s"] - r["timings"]["backend_s"] for r in timed]
    item = [items[r["case_id"]] - r["timings"]["wall_s"] for r in timed if r["case_id"] in items]
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    n = len(records)
    return {
        "run_dir": str(run_dir),
        "cases": n,
        "outcomes": outcomes,
        "elapsed_s": elapsed,
        "session_s": session_s,
        "cases_per_s": n / elapsed,
        "cases_per_s_session": n / session_s if session_s else None,
        "workers": len(per_worker),
        "slots_touched_per_worker": {w: len(s) for w, s in sorted(slots_per_worker.items())},
        "overhead_wall_minus_total": stats(transport),
        "overhead_wall_minus_backend": stats(farm),
        "overhead_item_minus_wall": stats(item),
        "slow_dispatches_over_100ms": sum(1 for x in transport if x > 0.1),
        "agent_total": stats([r["timings"]["total_s"] for r in timed]),
        "backend": stats([r["timings"]["backend_s"] for r in timed]),
        "golden": stats([r["timings"]["golden_s"] for r in timed]),
    }


# -- section compare: the same N cases, one at a time --------------------------------------------


class Pool:
    """A prepared pool (deployed, health-checked) and how to reach its agents in-process."""

    def __init__(self, name: str, inventory: Path | None, tier: str, work: Path) -> None:
        from farm.pool import build
        from farm.run import prepare

        self.name = name
        self.inventory_path = inventory
        started = time.perf_counter()
        package = build.build_package()
        self.plan = prepare.prepare_pool(
            inventory, tier, "native", run_dir=work / f"compare-{name}", package=package
        )
        self.prepare_s = time.perf_counter() - started
        if self.plan.unhealthy:
            raise RuntimeError(f"pool {name}: unhealthy hosts {self.plan.unhealthy}")
        self.inventory = prepare.load_pool(inventory)
        self.open_channel = prepare.open_channel_factory(self.plan)
        # the first slot of each family: where the sequential comparisons run
        self.slot_of = {}
        for slot in self.plan.slot_infos():
            self.slot_of.setdefault(slot.family, slot)

    def echo_channel(self, slot):
        from farm.pool import deploy
        from farm.pool.transport import open_transport

        info = self.plan.hosts[slot.host]
        transport = open_transport(self.inventory.host(slot.host))
        channel = deploy.start_agent(
            transport, info["bundle_sha"], executor="farm.agent.stand_ins:echo_executor"
        )
        return transport, channel


def time_channel(pool: Pool, cases: list) -> dict:
    """Channel.run_case on a persistent channel per family, one case at a time."""
    opened = {}
    started = time.perf_counter()
    for family, slot in pool.slot_of.items():
        opened[family] = pool.open_channel(slot)
    open_s = time.perf_counter() - started
    for family, slot in pool.slot_of.items():  # first case per agent imports numpy & co: untimed
        first = next(c for c in cases if c.family == family)
        opened[family].run_case(first.to_dict(), "native", slot.device, 120)
    walls, over, over_backend = [], [], []
    t0 = time.perf_counter()
    for case in cases:
        slot = pool.slot_of[case.family]
        s = time.perf_counter()
        rec = opened[case.family].run_case(case.to_dict(), "native", slot.device, 120)
        wall = time.perf_counter() - s
        walls.append(wall)
        over.append(wall - rec["timings"]["total_s"])
        over_backend.append(wall - rec["timings"]["backend_s"])
    elapsed = time.perf_counter() - t0
    for ch in opened.values():
        ch.shutdown()
    return {
        "cases": len(cases),
        "elapsed_s": elapsed,
        "cases_per_s": len(cases) / elapsed,
        "channel_open_s": open_s,
        "cases_per_s_with_open": len(cases) / (elapsed + open_s),
        "wall": stats(walls),
        "overhead_wall_minus_total": stats(over),
        "overhead_wall_minus_backend": stats(over_backend),
    }


def make_dispatcher(pool: Pool, run_dir: Path):
    from farm.run.dispatch import Dispatcher
    from farm.run.leases import RunState
    from farm.run.records_file import RecordWriter

    run_dir.mkdir(parents=True, exist_ok=True)
    dispatcher = Dispatcher(
        slots=pool.plan.slot_infos(),
        open_channel=pool.open_channel,
        state=RunState(run_dir / "state.json"),
        lock_dir=run_dir / "locks",
        backend="native",
        base_timeout=60.0,
    )
    return dispatcher, RecordWriter(run_dir / "records" / "bench.jsonl")


def time_dispatch(pool: Pool, cases: list, run_dir: Path, profile: bool = False) -> dict:
    """Dispatcher.run + RecordWriter.write (what a pytest item does, minus pytest and Allure)."""
    dispatcher, writer = make_dispatcher(pool, run_dir)
    started = time.perf_counter()
    for family, slot in pool.slot_of.items():  # open + warm each agent: untimed
        first = next(c for c in cases if c.family == family)
        dispatcher.run(first, slot.id)
    warm_s = time.perf_counter() - started
    prof = cProfile.Profile() if profile else None
    walls, over, over_backend = [], [], []
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    for case in cases:
        s = time.perf_counter()
        rec = dispatcher.run(case, pool.slot_of[case.family].id)
        writer.write(rec)
        wall = time.perf_counter() - s
        if rec["outcome"] == "broken":
            raise RuntimeError(f"{case.id} broken: {rec['message']}")
        walls.append(wall)
        over.append(wall - rec["timings"]["total_s"])
        over_backend.append(wall - rec["timings"]["backend_s"])
    if prof:
        prof.disable()
    elapsed = time.perf_counter() - t0
    dispatcher.close()
    writer.close()
    out = {
        "cases": len(cases),
        "elapsed_s": elapsed,
        "cases_per_s": len(cases) / elapsed,
        "open_and_warm_s": warm_s,
        "wall": stats(walls),
        "overhead_wall_minus_total": stats(over),
        "overhead_wall_minus_backend": stats(over_backend),
    }
    if prof:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(25)
        out["profile_tottime"] = buf.getvalue()
    return out


def time_echo(pool: Pool, n: int, payload: int) -> dict:
    """run-case round trips to an agent whose executor runs nothing: the transport's floor."""
    slot = next(iter(pool.slot_of.values()))
    transport, channel = pool.echo_channel(slot)
    case = {"id": "echo", "pad": "x" * 600}
    payload_case = dict(case, payload=payload)
    for _ in range(5):
        channel.run_case(payload_case, "native", slot.device, 30)
    walls = []
    for _ in range(n):
        s = time.perf_counter()
        channel.run_case(payload_case, "native", slot.device, 30)
        walls.append(time.perf_counter() - s)
    channel.shutdown()
    transport.close()
    return {"round_trips": n, "reply_bytes": payload, "wall": stats(walls)}


def oneshot_command(pool: Pool, slot, declare: bool) -> tuple[list, str]:
    """(argv to run on the host, the remote shell command) for benchmarks/oneshot.py.

    ``declare``: pass the host's declared identity in the environment (a local run has no sshd
    SetEnv to give it); over ssh the host declares itself."""
    from farm.pool.deploy import versions_dir

    spec = pool.inventory.host(slot.host)
    info = pool.plan.hosts[slot.host]
    cwd = versions_dir(spec, info["bundle_sha"])
    env = dict(spec.env_dict)
    if declare:
        env.setdefault("LSG_EMULATED_SOC", slot.soc)
        env.setdefault("LSG_EMULATED_DEVICES", str(spec.devices))
    argv = [
        "env",
        f"PYTHONPATH={BENCH_DIR}",
        f"LSG_NATIVE_LIB={info['native_lib']}",
        *[f"{k}={v}" for k, v in sorted(env.items())],
        spec.python,
        "-m",
        "oneshot",
        "--workdir",
        spec.workdir,
        "--backend",
        "native",
        "--device",
        str(slot.device),
    ]
    return argv, f"cd {shlex.quote(cwd)} && exec {shlex.join(argv)}"


def ssh_argv(spec, remote: str) -> list[str]:
    return [
        "ssh",
        "-F", "/dev/null",
        "-i", str(spec.key),
        "-p", str(spec.port),
        "-o", f"UserKnownHostsFile={spec.known_hosts}",
        "-o", "StrictHostKeyChecking=yes",
        "-o", "BatchMode=yes",
        "-o", "IdentitiesOnly=yes",
        "-o", "LogLevel=ERROR",
        f"{spec.user}@{spec.address}",
        remote,
    ]  # fmt: skip


def time_oneshot(pool: Pool, cases: list, via: str, parallel: int = 1) -> dict:
    """One fresh process per case: via "ssh" (ssh client -> sshd -> python) or "local".

    ``parallel`` > 1: that many at once, the cases spread over every slot of their family (as the
    farm spreads them), for comparison with a parallel `farm run`."""
    from farm.pool.deploy import versions_dir

    slots: dict[str, list] = {}
    for slot in pool.plan.slot_infos():
        slots.setdefault(slot.family, []).append(slot)
    turn: dict[str, int] = {}
    jobs = []
    for case in cases:
        if parallel > 1:
            family = slots[case.family]
            slot = family[turn.get(case.family, 0) % len(family)]
            turn[case.family] = turn.get(case.family, 0) + 1
        else:
            slot = pool.slot_of[case.family]
        spec = pool.inventory.host(slot.host)
        argv, remote = oneshot_command(pool, slot, declare=via != "ssh")
        if via == "ssh":
            cmd, cwd = ssh_argv(spec, remote), None
        else:
            cmd, cwd = argv, versions_dir(spec, pool.plan.hosts[slot.host]["bundle_sha"])
        jobs.append((case, cmd, cwd))

    def one(job) -> tuple[float, dict]:
        case, cmd, cwd = job
        s = time.perf_counter()
        proc = subprocess.run(
            cmd, cwd=cwd, input=json.dumps(case.to_dict()), capture_output=True, text=True
        )
        wall = time.perf_counter() - s
        if proc.returncode != 0:
            raise RuntimeError(f"{via} one-shot of {case.id} failed: {proc.stderr[-2000:]}")
        rec = json.loads(proc.stdout.strip().splitlines()[-1])
        if rec["outcome"] != "passed":
            raise RuntimeError(f"{via} one-shot of {case.id}: {rec['outcome']} {rec['message']}")
        return wall, rec

    t0 = time.perf_counter()
    if parallel > 1:
        with ThreadPoolExecutor(max_workers=parallel) as ex:
            results = list(ex.map(one, jobs))
    else:
        results = [one(job) for job in jobs]
    elapsed = time.perf_counter() - t0
    return {
        "via": via,
        "parallel": parallel,
        "cases": len(cases),
        "elapsed_s": elapsed,
        "cases_per_s": len(cases) / elapsed,
        "wall": stats([w for w, _ in results]),
        "overhead_wall_minus_total": stats([w - r["timings"]["total_s"] for w, r in results]),
        "overhead_wall_minus_backend": stats([w - r["timings"]["backend_s"] for w, r in results]),
        "in_process_s": stats([r["timings"]["process_s"] for _, r in results]),
        "imports_s": stats([r["timings"]["imports_s"] for _, r in results]),
    }


def micro_costs(pool: Pool, cases: list, run_dir: Path, reps: int = 300) -> dict:
    """What the dispatch path adds around Channel.run_case, piece by piece (orchestrator side)."""
    from farm.agent import protocol
    from farm.run.leases import RunState, lease
    from farm.run.records_file import RecordWriter

    case = cases[len(cases) // 2]
    slot = pool.slot_of[case.family]
    channel = pool.open_channel(slot)
    record = channel.run_case(case.to_dict(), "native", slot.device, 60)
    channel.shutdown()
    state = RunState(run_dir / "micro-state.json")
    state.quarantine("nobody", "warm-up")  # so a state file exists, as in a real run
    writer = RecordWriter(run_dir / "micro-records.jsonl")
    request_line = protocol.encode(
        protocol.make_request("run-case", 7, case=case.to_dict(), backend="native", device=0)
    )
    reply_line = protocol.encode_reply(7, result=record)

    def each(fn) -> float:
        s = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - s) / reps

    def one_lease():
        with lease(run_dir / "micro-locks", slot.id, 10):
            pass

    out = {
        "request_bytes": len(request_line),
        "reply_bytes": len(reply_line),
        "case_to_dict_s": each(case.to_dict),
        "runstate_quarantined_s": each(state.quarantined),
        "lease_acquire_release_s": each(one_lease),
        "record_write_s": each(lambda: writer.write(dict(record))),
        "encode_request_s": each(lambda: protocol.encode(
            protocol.make_request("run-case", 7, case=case.to_dict(), backend="native", device=0))),
        "decode_request_s": each(lambda: protocol.decode_request(request_line)),
        "encode_reply_s": each(lambda: protocol.encode_reply(7, result=record)),
        "decode_reply_s": each(lambda: protocol.decode_reply(reply_line, 7)),
    }  # fmt: skip
    writer.close()
    try:
        from farm.run.allure import glue as allure_glue  # noqa: F401  (outside pytest annotate has no test to fill)
    except ImportError:
        pass
    return out


# -- where a whole `farm run` spends its time (orchestrator side) --------------------------------

# (label, path suffix of the file, function name): cumulative times read from the profile.
PROFILE_POINTS = (
    ("whole command", "farm/cli/__init__.py", "cmd_run"),
    ("build package", "farm/pool/build/package.py", "build_package"),
    ("prepare pool (health, deploy, canaries)", "farm/run/prepare.py", "prepare_pool"),
    ("pytest session", "_pytest/main.py", "wrap_session"),
    ("pytest item protocol (all items)", "_pytest/runner.py", "runtestprotocol"),
    ("pytest_runtest_setup", "_pytest/runner.py", "pytest_runtest_setup"),
    ("test call (all items)", "_pytest/runner.py", "pytest_runtest_call"),
    ("pytest_runtest_teardown", "_pytest/runner.py", "pytest_runtest_teardown"),
    ("farm_run fixture (dispatch + record + allure)", "farm/run/plugin.py", "run"),
    ("Dispatcher.run", "farm/run/dispatch.py", "run"),
    ("Dispatcher._attempt (channel open + request)", "farm/run/dispatch.py", "_attempt"),
    ("Channel.request (send, wait, receive, decode)", "farm/pool/transport/channel.py", "request"),
    ("SSH channel open (agent start + hello)", "farm/pool/transport/ssh.py", "open_channel"),
    ("local channel open (agent start + hello)", "farm/pool/transport/local.py", "open_channel"),
    ("Dispatcher._candidates (run-state read)", "farm/run/dispatch.py", "_candidates"),
    ("leases.lease_any", "farm/run/leases.py", "lease_any"),
    ("leases.lease", "farm/run/leases.py", "lease"),
    ("RunState.read", "farm/run/leases.py", "read"),
    ("Case.to_dict", "suites/case.py", "to_dict"),
    ("RecordWriter.write", "farm/run/records_file.py", "write"),
    ("allure annotate", "farm/run/allure/glue.py", "annotate"),
    ("allure plots (PNG)", "farm/run/plots.py", "error_histogram_png"),
    ("allure-pytest logfinish (result file)", "allure_pytest/listener.py",
     "pytest_runtest_logfinish"),
    ("allure-pytest fixture finalizers", "allure_pytest/listener.py",
     "pytest_fixture_post_finalizer"),
    ("run store add_results", "farm/results/store.py", "add_results"),
)  # fmt: skip


def profile_points(path: Path) -> dict[str, dict]:
    """{label: {"calls", "cum_s"}} for PROFILE_POINTS (largest match per label)."""
    st = pstats.Stats(str(path))
    out = {}
    for label, suffix, func in PROFILE_POINTS:
        best = None
        for (filename, _line, name), (_cc, nc, _tt, ct, _callers) in st.stats.items():
            if name == func and filename.replace("\\", "/").endswith(suffix):
                if best is None or ct > best["cum_s"]:
                    best = {"calls": nc, "cum_s": ct}
        if best is not None:
            out[label] = best
    return out


def profile_farm_run(pool: str, inventory: Path | None, tier: str, work: Path) -> dict:
    """`farm run --jobs 1` (pytest in the farm's own process) under cProfile."""
    runs = work / f"runs-profile-{pool}"
    runs.mkdir(parents=True, exist_ok=True)
    prof = runs / "farm-run.prof"
    env = dict(os.environ, FARM_RUNS=str(runs), FARM_STORE=str(runs / "farm.sqlite"))
    argv = [sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "farm.cli", "run"]
    argv += ["--tier", tier, "--jobs", "1", "--no-report", "--no-progress"]
    if inventory is not None:
        argv += ["--inventory", str(inventory)]
    load_before = load()
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    run_dirs = sorted(p for p in runs.iterdir() if (p / "records").is_dir())
    if not run_dirs or not prof.is_file():
        raise RuntimeError(
            f"profiled farm run failed (exit {proc.returncode}): {proc.stderr[-3000:]}"
        )
    figures = analyse_run(run_dirs[-1], elapsed)
    points = profile_points(prof)
    buf = io.StringIO()
    pstats.Stats(str(prof), stream=buf).sort_stats("tottime").print_stats(30)
    return {
        "pool": pool,
        "command": " ".join(shlex.quote(a) for a in argv),
        "exit_code": proc.returncode,
        "elapsed_s": elapsed,
        "cases": figures["cases"],
        "figures": figures,
        "points": points,
        "tottime_top": buf.getvalue(),
        "load_before": load_before,
        "load_after": load(),
    }


def table_profile(p: dict) -> str:
    n = p["cases"] or 1
    lines = [
        f"`{p['command']}`: {p['cases']} cases, {p['elapsed_s']:.1f} s under cProfile, "
        f"load {p['load_before'][0]}→{p['load_after'][0]}",
        "",
        "| where (cumulative, orchestrator process) | calls | total s | per case ms |",
        "|---|---|---|---|",
    ]
    for label, v in p["points"].items():
        lines.append(f"| {label} | {v['calls']} | {v['cum_s']:.2f} | {v['cum_s'] / n * 1000:.2f} |")
    pts = p["points"]

    def cum(label: str) -> float:
        return pts.get(label, {}).get("cum_s", 0.0)

    derived = {
        "pytest per-item work outside the test call": cum("pytest item protocol (all items)")
        - cum("test call (all items)"),
        "allure annotate without plots": cum("allure annotate") - cum("allure plots (PNG)"),
        "dispatch around the request (slot choice, lease, record fields)": cum("Dispatcher.run")
        - cum("Dispatcher._attempt (channel open + request)"),
    }
    for label, v in derived.items():
        lines.append(f"| *{label}* | | {v:.2f} | {v / n * 1000:.2f} |")
    return "\n".join(lines)


# -- orchestration ------------------------------------------------------------------------------


@contextlib.contextmanager
def lab(work: Path, hosts: int):
    from farm.pool.lab.core import lab_down, lab_up

    root = work / "lab"
    say(f"lab up: {hosts} sshd hosts under {root}")
    lab_up(root, hosts=hosts)
    try:
        yield root / "inventory.toml"
    finally:
        lab_down(root)


def median_of(runs: list[dict], *path: str) -> float | None:
    values = []
    for r in runs:
        v = r
        for p in path:
            v = v.get(p) if isinstance(v, dict) else None
        if isinstance(v, (int, float)):
            values.append(float(v))
    return statistics.median(values) if values else None


def table_farm_run(results: list[dict]) -> str:
    lines = [
        "| pool | jobs | runs | cases | cases/s (command) | cases/s (pytest session) | "
        "wall−total median / p95 ms | wall−backend median / p95 ms | item−wall median / p95 ms "
        "| dispatches >100 ms | load before→after |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple, list] = {}
    for r in results:
        groups.setdefault((r["pool"], str(r["jobs"])), []).append(r)
    for (pool, jobs), runs in groups.items():

        def m(*p, runs=runs):
            return median_of(runs, *p)

        loads = ", ".join(f"{r['load_before'][0]}→{r['load_after'][0]}" for r in runs)
        lines.append(
            f"| {pool} | {jobs} | {len(runs)} | {runs[0]['cases']} | "
            f"{m('cases_per_s'):.2f} | {m('cases_per_s_session'):.2f} | "
            f"{ms(m('overhead_wall_minus_total', 'median'))} / "
            f"{ms(m('overhead_wall_minus_total', 'p95'))} | "
            f"{ms(m('overhead_wall_minus_backend', 'median'))} / "
            f"{ms(m('overhead_wall_minus_backend', 'p95'))} | "
            f"{ms(m('overhead_item_minus_wall', 'median'))} / "
            f"{ms(m('overhead_item_minus_wall', 'p95'))} | "
            f"{m('slow_dispatches_over_100ms'):.0f} | {loads} |"
        )
    return "\n".join(lines)


def table_compare(rows: dict[str, list[dict]]) -> str:
    lines = [
        "| path | repeats | cases | cases/s | wall median / p95 ms | "
        "wall−total median / p95 ms | wall−backend median / p95 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, runs in rows.items():
        if not runs:
            continue

        def m(*p, runs=runs):
            return median_of(runs, *p)

        lines.append(
            f"| {name} | {len(runs)} | {runs[0].get('cases', runs[0].get('round_trips'))} | "
            + (f"{m('cases_per_s'):.1f}" if m("cases_per_s") else "-")
            + f" | {ms(m('wall', 'median'))} / {ms(m('wall', 'p95'))} | "
            f"{ms(m('overhead_wall_minus_total', 'median'))} / "
            f"{ms(m('overhead_wall_minus_total', 'p95'))} | "
            f"{ms(m('overhead_wall_minus_backend', 'median'))} / "
            f"{ms(m('overhead_wall_minus_backend', 'p95'))} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default=",".join(SECTIONS), help=",".join(SECTIONS))
    parser.add_argument("--pools", default="embedded,lab", help="embedded,lab")
    parser.add_argument("--tier", default="smoke", help="tier for farm-run (default smoke)")
    parser.add_argument(
        "--jobs",
        default="default,1",
        help="farm-run worker counts: 'default' (one per core, at most one per slot), N",
    )
    parser.add_argument("--cases", type=int, default=100, help="N for the compare section")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (medians reported)")
    parser.add_argument("--echo", type=int, default=300, help="echo round trips per repeat")
    parser.add_argument(
        "--baseline-parallel",
        type=int,
        default=0,
        help="concurrency of the parallel ssh-per-case baseline (default: the lab's slot count)",
    )
    parser.add_argument(
        "--paths",
        default="",
        help="compare only the rows whose label contains one of these (comma-separated)",
    )
    parser.add_argument("--lab-hosts", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write every raw figure here")
    parser.add_argument("--work", type=Path, help="work directory (default: a new temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    sections = [s for s in args.sections.split(",") if s]
    pools = [p for p in args.pools.split(",") if p]
    paths = [p for p in args.paths.split(",") if p]
    for s in sections:
        if s not in SECTIONS:
            parser.error(f"unknown section {s!r}")

    work = args.work or Path(tempfile.mkdtemp(prefix="farm-bench-"))
    work = work.absolute()
    work.mkdir(parents=True, exist_ok=True)
    # Everything the farm writes goes under work/, never the developer's runs/.
    os.environ["FARM_RUNS"] = str(work / "runs-inprocess")
    os.environ["FARM_STORE"] = str(work / "runs-inprocess" / "farm.sqlite")
    sys.path.insert(0, str(REPO))

    out: dict = {"machine": machine(), "args": vars(args) | {"json": str(args.json)}}
    say(f"work directory {work}; machine {out['machine']}")
    cm = lab(work, args.lab_hosts) if "lab" in pools else contextlib.nullcontext(None)
    try:
        with cm as lab_inventory:
            inventories = {"embedded": None, "lab": lab_inventory}
            if "farm-run" in sections:
                results = []
                for rep in range(args.repeat):
                    for pool in pools:
                        for jobs in args.jobs.split(","):
                            j = None if jobs == "default" else int(jobs)
                            say(f"farm run {pool} jobs={jobs} (repeat {rep + 1}/{args.repeat})")
                            r = farm_run(pool, inventories[pool], args.tier, j, work)
                            say(
                                f"  {r['cases']} cases in {r['elapsed_s']:.1f}s "
                                f"({r['cases_per_s']:.2f}/s), exit {r['exit_code']}, "
                                f"wall-total median "
                                f"{ms(r['overhead_wall_minus_total']['median'])} ms"
                            )
                            results.append(r)
                out["farm_run"] = results
                print(f"\n## farm run --tier {args.tier}\n")
                print(table_farm_run(results))

            if "compare" in sections or "profile" in sections:
                cases = pick_cases(args.tier, args.cases)
                out["compare_cases"] = [c.id for c in cases]
                prepared = {p: Pool(p, inventories[p], args.tier, work) for p in pools}
                rows: dict[str, list[dict]] = {}
                if "compare" in sections:
                    for rep in range(args.repeat):
                        for pname, pool in prepared.items():
                            say(f"compare on {pname} (repeat {rep + 1}/{args.repeat})")
                            par = args.baseline_parallel or len(pool.plan.slots)
                            todo = []
                            if pname == "lab":
                                todo += [
                                    (
                                        "lab: ssh-per-case",
                                        partial(time_oneshot, pool, cases, "ssh"),
                                    ),
                                    (
                                        f"lab: ssh-per-case, {par} in parallel",
                                        partial(time_oneshot, pool, cases, "ssh", par),
                                    ),
                                    (
                                        "lab: python-per-case (no ssh)",
                                        partial(time_oneshot, pool, cases, "local"),
                                    ),
                                ]
                            run_dir = work / f"dispatch-{pname}-{rep}"
                            todo += [
                                (f"{pname}: channel", partial(time_channel, pool, cases)),
                                (
                                    f"{pname}: dispatch",
                                    partial(time_dispatch, pool, cases, run_dir),
                                ),
                                (
                                    f"{pname}: echo (no executor)",
                                    partial(time_echo, pool, args.echo, 4000),
                                ),
                            ]
                            for label, fn in todo:
                                if paths and not any(p in label for p in paths):
                                    continue
                                rows.setdefault(label, []).append(fn())
                    out["compare"] = rows
                    print(f"\n## {len(cases)} cases of {args.tier}, one at a time\n")
                    print(table_compare(rows))
                    base = median_of(rows.get("lab: ssh-per-case", []), "cases_per_s")
                    for path in ("lab: channel", "lab: dispatch"):
                        farm = median_of(rows.get(path, []), "cases_per_s")
                        if base and farm:
                            print(f"\n{path} / ssh-per-case: {farm / base:.1f}x")
                            out.setdefault("ratios", {})[path] = farm / base
                    # The whole `farm run` (other cases: the full tier, and in parallel) against
                    # the sequential and the parallel baselines, for scale.
                    pbase = [k for k in rows if k.startswith("lab: ssh-per-case, ")]
                    bases = {"ssh-per-case": base}
                    if pbase:
                        bases[pbase[0][5:]] = median_of(rows[pbase[0]], "cases_per_s")
                    for r_jobs in ("default", "1"):
                        runs = [
                            r
                            for r in out.get("farm_run", [])
                            if r["pool"] == "lab" and str(r["jobs"]) == r_jobs
                        ]
                        for key, what in (
                            ("cases_per_s", "whole command"),
                            ("cases_per_s_session", "pytest session"),
                        ):
                            farm = median_of(runs, key)
                            for bname, bvalue in bases.items():
                                if bvalue and farm:
                                    label = f"lab: farm run --jobs {r_jobs} ({what}) / {bname}"
                                    print(f"\n{label}: {farm / bvalue:.1f}x")
                                    out.setdefault("ratios", {})[label] = farm / bvalue
                if "profile" in sections:
                    prof = {}
                    for pname in pools:
                        say(f"farm run --jobs 1 under cProfile on {pname}")
                        p = profile_farm_run(pname, inventories[pname], args.tier, work)
                        prof[f"{pname}: farm run"] = p
                        print(f"\n## {pname}: where `farm run --jobs 1` spends its time\n")
                        print(table_profile(p))
                    for pname, pool in prepared.items():
                        say(f"profile on {pname}")
                        prof[pname] = {
                            "micro": micro_costs(pool, cases, work / f"micro-{pname}"),
                            "dispatch": time_dispatch(
                                pool, cases, work / f"profile-{pname}", profile=True
                            ),
                        }
                        print(f"\n## {pname}: pieces of the dispatch path (µs per call)\n")
                        for k, v in prof[pname]["micro"].items():
                            shown = f"{v * 1e6:.1f}" if k.endswith("_s") else v
                            print(f"- {k}: {shown}")
                        print(f"\n## {pname}: cProfile of the dispatch loop (tottime)\n")
                        print("```\n" + prof[pname]["dispatch"]["profile_tottime"] + "```")
                    out["profile"] = prof
    finally:
        out["machine"]["loadavg_at_end"] = load()
        if args.json:
            args.json.write_text(json.dumps(out, indent=1, default=str))
            say(f"raw figures: {args.json}")
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
