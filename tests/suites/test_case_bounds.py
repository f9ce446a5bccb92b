"""Bounds on every dimension of a case (suites/limits.py): rank, axes, int64 values, elements, the
id, the case's text, and so the run-case request line against the agent protocol's cap. A case
past one is one line at validation, in case files, importers and `farm cases` / `farm run` alike,
before any host is touched; a case within them (rank 9 or 32: rejection cases) is made as before.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from farm.agent import protocol
from golden.layouts import View
from suites import casefile, limits
from suites.case import Case, MalformedCase
from suites.casefile import CaseFileError
from suites.importers import FORMATS
from suites.importers.common import MORE, merged

REPO = Path(__file__).resolve().parents[2]
BOUND = "over the bound"


def case_file(path: Path, *entries: dict) -> Path:
    doc = {"format": casefile.FORMAT, "version": casefile.VERSION, "cases": list(entries)}
    path.write_text(json.dumps(doc))
    return path


def entry(shape, axes=-1, **fields) -> dict:
    return {"family": "ascend310b", "dtype": "float32", "shape": shape, "axes": axes, **fields}


def refusal(path: Path) -> str:
    """casefile's error for a file: one line, naming the file and its case."""
    with pytest.raises(CaseFileError) as err:
        casefile.load(path)
    lines = str(err.value).splitlines()
    assert len(lines) == 1, lines
    assert re.match(rf"{re.escape(str(path))}: case 0 \(line \d\): ", lines[0]), lines[0]
    assert len(lines[0]) < 400, lines[0]  # the value is never quoted whole
    return lines[0]


def farm(*args: str, runs: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "farm.cli", *args],
        cwd=REPO,
        env={**os.environ, "FARM_RUNS": str(runs), "COLUMNS": "300"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_rank_bomb_is_one_line_at_farm_cases_and_farm_run_before_any_host(tmp_path):
    bomb = case_file(tmp_path / "bomb.json", entry([1] * 100_000))
    assert bomb.stat().st_size > 300_000
    assert refusal(bomb).endswith(
        "shape has 100,000 dimensions, over the bound of 32 (the contract allows 0 to 8, a "
        "rejection case needs no more than 32: use fewer dimensions)"
    )
    runs = tmp_path / "runs"
    for command in (("cases",), ("run", "--no-report", "--no-progress")):
        out = farm(*command, "--cases", str(bomb), runs=runs)
        assert out.returncode == 2, (command, out.stdout[-500:], out.stderr[-2000:])
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and BOUND in lines[0], (command, lines[:5])
        assert "Traceback" not in out.stderr
    # Nothing was started: no run directory, no store, no deployed agent.
    assert not runs.exists() or not any(runs.iterdir()), sorted(runs.iterdir())


def test_a_rank_bomb_in_csv_and_yaml_is_one_line(tmp_path):
    csv = tmp_path / "bomb.csv"
    extents = "x".join(["1"] * 50_000)
    csv.write_text(f"family,dtype,shape,axes\nascend310b,float32,{extents},-1\n")
    assert "shape has 50,000 dimensions" in refusal(csv)
    yaml = tmp_path / "bomb.yaml"
    yaml.write_text(
        "format: logsoftmaxgrad-cases\nversion: 1\ncases:\n"
        "  - {family: ascend310b, dtype: float32, axes: -1, shape: ["
        + ", ".join(["2"] * 40)
        + "]}\n"
    )
    assert "shape has 40 dimensions, over the bound of 32" in refusal(yaml)


@pytest.mark.parametrize("rank", [9, 10, limits.MAX_RANK])
def test_a_rejection_case_of_rank_past_the_contract_is_still_a_case(rank):
    case = Case(family="ascend910b", dtype="float32", shape=(2,) * rank, axes=(-1,))
    assert not case.accepted and case.expected.reason == "rank_too_large"
    axes = Case(family="ascend910b", dtype="float32", shape=(2,) * 8, axes=(0,) * rank, api="axes")
    assert axes.expected.reason == "axes_not_consecutive"


@pytest.mark.parametrize(
    "fields, named",
    [
        ({"shape": (1,) * 33, "axes": (-1,)}, "shape has 33 dimensions, over the bound of 32"),
        ({"y_shape": (1,) * 40}, "y_shape has 40 dimensions"),
        ({"out_shape": (1,) * 1000}, "out_shape has 1,000 dimensions"),
        ({"axes": (0,) * 33, "api": "axes"}, "axes has 33 entries, over the bound of 32"),
        ({"shape": (2**63, 0)}, "shape [9223372036854775808, 0] holds a value past int64"),
        ({"axes": (2**63,)}, "axes [9223372036854775808] holds a value past int64"),
        ({"axes": (-(2**63) - 1,)}, "holds a value past int64"),
        # An empty tensor: no memory, but numpy refuses to make it (extents past 2^63 bytes).
        ({"shape": (2**40, 2**40, 0)}, "spans about 10^24 elements (zero extents left out)"),
        ({"y_shape": (2**31, 2**31, 2**31)}, "y_shape 2147483648x2147483648x2147483648 spans"),
        ({"y_layout": View(strides=(2**64, 1), storage=4)}, "y_layout st18446744073709551616"),
        ({"dy_layout": View(strides=(1,) * 40, storage=4)}, "dy_layout has 40 strides"),
        ({"out_layout": View(strides=(2, 1), storage=2**63)}, "holds a value past int64"),
        ({"note": "n" * 9000}, "note is 9,000 characters, over the bound of 8,192"),
        ({"origin": "o" * 9000}, "origin is 9,000 characters"),
    ],
)
def test_a_case_past_a_bound_is_one_problem_naming_it(fields, named):
    given = {"family": "ascend910b", "dtype": "float32", "shape": (2, 2), "axes": (-1,), **fields}
    with pytest.raises(MalformedCase) as err:
        Case(**given)
    assert len(err.value.problems) == 1, err.value.problems
    problem = err.value.problems[0]
    assert named in problem and (BOUND in problem or "past int64" in problem), problem
    assert len(problem) < 300, problem


def test_an_id_past_its_bound_is_refused():
    big = limits.MAX_INT64  # each value within its bounds, the id they make past its own
    with pytest.raises(MalformedCase) as err:
        Case(
            family="ascend910b",
            dtype="float32",
            shape=(1,) * 31 + (0,),
            axes=(-(2**63),) * 32,
            api="axes",
            dy_layout=View(strides=(big,) * 32, storage=big),
        )
    (problem,) = err.value.problems
    assert "the case's id is 1," in problem and "over the bound of 1,024" in problem, problem
    assert len(problem) < 300


def test_long_text_in_a_case_file_is_one_line(tmp_path):
    path = case_file(tmp_path / "long.json", entry([2, 3], name="n" * 5000))
    assert refusal(path).endswith(
        "field 'name': 5,000 characters, over the bound of 4,096 (it is shown in reports and "
        "sent with the case); shorten it"
    )
    path = case_file(tmp_path / "note.json", entry([2, 3], note="x" * 4097))
    assert "field 'note': 4,097 characters" in refusal(path)


def test_an_import_past_a_bound_is_skipped_with_the_bound_named():
    source = [
        {
            "id": 0,
            "name": "torch._log_softmax_backward_data",
            "inputs": [
                {"name": "grad_output", "type": "tensor", "dtype": "fp32", "shape": [1] * 500},
                {"name": "output", "type": "tensor", "dtype": "fp32", "shape": [1] * 500},
                {"name": "dim", "type": "attr", "dtype": "int", "range_values": -1},
            ],
        }
    ]
    conversion = FORMATS["atk"](json.dumps(source), "bomb.json").convert("bomb.json")
    assert conversion.cases == []
    ((name, reason),) = conversion.all_skipped
    assert "shape has 500 dimensions, over the bound of 32" in reason, reason


def test_thousands_of_source_cases_of_one_farm_case_keep_origins_within_the_bound():
    case = Case(family="ascend910b", dtype="float32", shape=(2, 3), axes=(-1,), origin="s:0")
    for i in range(1, 5000):
        twin = Case(
            family="ascend910b",
            dtype="float32",
            shape=(2, 3),
            axes=(-1,),
            origin=f"suite.json:case number {i}",
            note=f"the source says {i}",
        )
        case = merged(case, twin)
    assert case.origin.startswith("s:0; suite.json:case number 1; ")
    assert case.origin.endswith(MORE) and case.note.endswith(MORE)
    assert len(case.origin) <= limits.MAX_TEXT_CHARS + len(MORE)
    assert len(case.note) <= limits.MAX_TEXT_CHARS + len(MORE)


def test_the_largest_case_within_the_bounds_travels_well_under_the_line_cap():
    """Every field at its bound: the run-case request stays under limits.MAX_REQUEST_BYTES, a
    quarter of the protocol's cap."""
    rank, big = limits.MAX_RANK, limits.MAX_INT64
    astral = "\U0001f600"  # JSON (ASCII) writes it as two escapes: 12 bytes a character
    shape = (1,) * (rank - 1) + (0,)  # an empty tensor: any extents, no memory
    # The id holds every list: the longest values that keep it within its bound.
    view = View(strides=(1,) * rank, storage=big, offset=big)
    case = Case(
        family="ascend910b",
        dtype="float32",
        shape=shape,
        y_shape=(1,) * rank,
        out_shape=(1,) * (rank - 1) + (2,),
        axes=(-(2**63),) * 29,
        api="axes",
        dy_layout=view,
        # the JSON form, which Case parses into a Tolerance
        tolerance={"rtol": 1e-300, "atol": 1e-300, "max_fail_fraction": 1e-300},  # type: ignore[arg-type]
        y_dist="fill",
        y_fill=-1e-300,
        note=astral * limits.MAX_CASE_TEXT_CHARS,
        origin=astral * limits.MAX_CASE_TEXT_CHARS,
    )
    assert limits.MAX_ID_CHARS - 40 < len(case.id) <= limits.MAX_ID_CHARS, len(case.id)
    line = protocol.encode_request(
        "run-case",
        2**62,
        case=case.to_dict(),
        backend="native",
        device=2**31,
        run="r" * 64,
        owner="o" * 64,
        lock_wait=1e300,
    )
    assert len(line) < limits.MAX_REQUEST_BYTES <= protocol.MAX_LINE_BYTES // 4, len(line)
