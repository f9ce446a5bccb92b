"""`farm coverage` end to end on a slice of the smoke tier: the coverage build runs the cases on
the embedded pool through both backends, gcovr's figures are real (the kernel's entry is reached,
the host code's InferShape, which no aclnn or C ABI call runs, is listed), the explanations file
decides the exit code (an unexplained line or a stale entry: 1; all explained: 0), and the run's
directory holds the coverage and its pages; the run store holds its figures.

It builds the coverage library (~1 min on 2 cores the first time) and runs the slice twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.results.store import Measure, RunStore

pytestmark = pytest.mark.build

SLICE = "910b_f32_4x1x33 or 310b_f16_3x17_d-1_y.uniform_dy.normal"
KERNEL = ("ascendc/op_kernel/log_softmax_grad.cpp", "log_softmax_grad_custom(GM_ADDR")
INFER = (
    "ascendc/op_host/log_softmax_grad.cpp",
    "static graphStatus InferShape(gert::InferShapeContext* context) {",
)
STALE = ("tiling/tiling.cpp", "return 12345;")


def _toml(entries) -> str:
    return "".join(
        f"[[unreachable]]\nfile = {json.dumps(f)}\ntext = {json.dumps(t)}\nwhy = {json.dumps(w)}\n"
        for f, t, w in entries
    )


def _coverage(farm, explanations: Path, *options: str):
    return farm.run(
        "coverage", *options, "--json", "--explanations", str(explanations), "--", "-k", SLICE
    )


def test_coverage_of_a_slice(farm, tmp_path):
    explanations = tmp_path / "unreachable.toml"
    explanations.write_text(
        _toml([(*INFER, "graph mode only: no aclnn call infers shapes"), (*STALE, "nothing")])
    )
    first = _coverage(farm, explanations, "--no-report")
    assert first.code == 1, first.text[-3000:]
    got = json.loads(first.out)
    assert set(got["runs"]) == {"acl", "native"}
    assert got["cases"] == 2
    for kind in ("lines", "branches"):
        assert 0 < got[kind]["covered"] < got[kind]["total"], got[kind]
    files = {f["file"]: f for f in got["files"]}
    assert files["ascendc/op_api/aclnn_log_softmax_backward.cpp"]["lines"]["covered"] > 0
    assert files["tiling/views.cpp"]["lines"]["covered"] > 0  # the native backend's
    uncovered = {(u["file"], u["text"]): u for u in got["uncovered"]}
    kernel_entry = [k for k in uncovered if k[0] == KERNEL[0] and KERNEL[1] in k[1]]
    assert kernel_entry == []  # every case runs the kernel's entry
    infer = uncovered[INFER]
    assert infer["line_missed"] and infer["why"].startswith("graph mode only")
    assert got["unexplained"] == sum(1 for u in got["uncovered"] if u["why"] is None) > 0
    assert got["stale"] == [
        {"file": STALE[0], "text": STALE[1], "why": "no line of its file reads so"}
    ]
    per_case = got["per_case"]
    assert per_case["branches_reached"] > 0
    # two cases: every branch they reach is reached by fewer than 3
    assert per_case["fewer"] == per_case["branches_reached"]
    assert all(b["cases"] in (1, 2) for b in per_case["branches"])
    run_dir = farm.runs / got["runs"]["acl"] / "coverage"
    assert json.loads((run_dir / "coverage.json").read_text())["lines"] == got["lines"]
    assert (run_dir / "html" / "index.html").is_file()
    assert (run_dir / "coverage.html").stat().st_size > 0
    # In the store of its runs: the figures, what is unexplained, the exit code
    measure = _stored(farm, got["runs"]["acl"])
    c = measure.coverage
    assert (c["lines"], c["branches"], c["functions"]) == (
        got["lines"],
        got["branches"],
        got["functions"],
    )
    assert (c["unexplained"], c["stale"], c["uncovered"]) == (
        got["unexplained"],
        1,
        len(got["uncovered"]),
    )
    assert c["runs"] == got["runs"] and measure.exit_code == 1 and measure.subset  # -k
    assert measure.run_dir == str(run_dir) and measure.package_sha256
    assert f"farm runs show coverage-{got['runs']['acl']}" in first.err

    # Every uncovered line explained, nothing stale: exit 0; with the report, which carries the
    # coverage page as a global attachment.
    explanations.write_text(
        _toml(sorted({(u["file"], u["text"], "the slice") for u in got["uncovered"]}))
    )
    second = _coverage(farm, explanations)
    assert second.code == 0, second.text[-3000:]
    again = json.loads(second.out)
    assert again["unexplained"] == 0 and again["stale"] == [] and again["accounted"]
    assert again["lines"] == got["lines"]
    report = farm.runs / again["runs"]["acl"] / "report"
    assert "coverage.html" in (report / "widgets" / "globals.json").read_text()
    second_measure = _stored(farm, again["runs"]["acl"])
    assert second_measure.exit_code == 0 and second_measure.coverage["unexplained"] == 0


def _stored(farm, first_run: str) -> Measure:
    with RunStore(farm.store, create=False) as store:
        measure = store.get_measure(f"coverage-{first_run}")
    assert measure is not None, f"the coverage of {first_run} is not in the store"
    return measure


def test_an_ssh_inventory_is_refused_in_one_line(farm, tmp_path):
    key = tmp_path / "key"
    key.write_text("")
    inventory = tmp_path / "pool.toml"
    inventory.write_text(
        '[[host]]\nname = "far"\naddress = "10.0.0.1"\nuser = "u"\nsoc = "Ascend910B1"\n'
        f'devices = 1\nkey = "{key}"\nhost_key_policy = "accept-new"\n'
    )
    result = farm.run("coverage", "--inventory", str(inventory))
    assert result.code == 2
    lines = [ln for ln in result.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "host far is not local" in lines[0], result.err
