"""What the farm prints of cases, records and hosts is text: brackets in it are not rich's markup.

A message such as "install the dev extra (pip install -e '.[dev]')" or "[[host]] or [defaults]"
lost its brackets (rich read `[dev]` as a style) in the run's summary and in `farm repro`."""

from __future__ import annotations

import dataclasses
import io

from rich.console import Console

from farm.run import repro
from farm.run.plan import Plan
from farm.run.runner import print_summary
from suites import matrix

BRACKETED = "needs PyTorch: pip install -e '.[dev]'; raise it in [[host]] or [defaults]"


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=400, color_system=None), out


def test_the_runs_summary_prints_messages_as_they_are(tmp_path):
    console, out = _console()
    plan = Plan("r1", tmp_path / "[x]", "smoke", "native", {}, [], {})
    record = {
        "case_id": "c[odd]",
        "family": "ascend910b",
        "dtype": "float32",
        "outcome": "broken",
        "message": BRACKETED,
    }
    print_summary(console, [record], plan, 2, tmp_path / "[x]" / "summary.json")
    text = out.getvalue()
    assert f"broken c[odd]: {BRACKETED}" in text
    assert f"summary  {tmp_path / '[x]' / 'summary.json'}" in text


def test_repro_prints_what_the_case_and_its_record_say_as_they_are():
    case = dataclasses.replace(matrix.expand("smoke")[0], note="found in [issue-12]")
    record = {
        "case_id": case.id,
        "slot": "h:0",
        "soc": "Ascend910B1",
        "status": 161002,
        "reason": "bad_axes",
        "op_message": "axes [dims] out of range",
        "tiling": {"schedule": "[blocked]"},
        "metrics": {"worst": [{"where": "[b]", "got": 1.0}]},
        "standards": {"mixed-tolerance": {"reason": "FAIL [strict]"}},
        "outcome": "failed",
        "message": BRACKETED,
    }
    console, out = _console()
    repro.show(console, case, {"dy": "normal [clipped]"}, record)  # type: ignore[arg-type]
    text = out.getvalue()
    for said in (
        "note     found in [issue-12]",
        "dy       normal [clipped]",
        "axes [dims] out of range",
        "[blocked]",
        "[b]",
        "mixed-tolerance    FAIL [strict]",
        f"failed {BRACKETED}",
    ):
        assert said in text, said


def test_control_characters_are_shown_escaped_never_sent():
    """What a host said (a stderr tail, an rc file's colours) or an outside name reaches the
    terminal only as text: ESC [2J would clear it."""
    from farm.util.visible import visible

    assert visible("stderr: \x1b[2Jcleared\x07\x00 and\ttab\nline") == (
        "stderr: \\x1b[2Jcleared\\x07\\x00 and\ttab\nline"
    )
    assert visible("plain ü 😀") == "plain ü 😀"


def test_the_live_progress_ends_its_last_frame_with_a_line_end_in_a_log():
    """Piped or logged, rich prints the progress' last frame once, without a line end: the run's
    next line ("run 2026...") was written onto its last row."""
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from farm.run.progress import LiveProgress

    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=100)
    live = LiveProgress(console=console, title="smoke")
    live.pytest_collection_finish(SimpleNamespace(items=[1]))
    live.pytest_sessionstart(None)
    report = SimpleNamespace(
        when="call", passed=True, outcome="passed", nodeid="test_precision[c1]",
        user_properties=[("farm_outcome", "passed"), ("farm_host", "emu-a2-01")],
    )  # fmt: skip
    live.pytest_runtest_logreport(report)
    live.pytest_sessionfinish(None)
    console.print("run 20261205-000000-smoke-abcd")
    lines = out.getvalue().splitlines()
    assert lines[-1] == "run 20261205-000000-smoke-abcd"
    assert lines[-2].split()[:2] == ["emu-a2-01", "1"]
