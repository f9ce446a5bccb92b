"""The `farm repro` line on a case's page (farm/run/allure/repro_line.py): the command that reruns
the case alone, on the package and pool its run used, which `farm repro` takes as it is."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from types import SimpleNamespace

from farm.pool import build
from farm.run.allure import glue
from farm.run.allure.repro_line import repro_command, run_options
from farm.run.plan import Plan

from .conftest import failed, record

CASE = "910b_f32_3x17_d-1_y.uniform_dy.normal"


def _plan(**over) -> SimpleNamespace:
    fields = {
        "package": {
            "target": "ascendc-cpu",
            "file": "/w/dist/op/logsoftmaxgrad-0.1.0-ascendc-cpu-bug-fp16_sum.tar.gz",
        },
        "backend": "acl",  # the target's default
        "inventory": {"source": "embedded", "workroot": "/w/runs/hosts"},
        "selection": {"tier": "smoke", "files": []},
    }
    fields.update(over)
    return SimpleNamespace(**fields)


def test_a_tier_case_of_a_planted_run_reruns_on_the_planted_package():
    line = repro_command(failed(CASE), run_options(_plan()))
    assert line == f"farm repro {CASE} --plant-bug fp16_sum"


def test_a_case_file_case_names_its_file_and_the_runs_target_pool_and_backend():
    plan = _plan(
        package={"target": "twin", "file": "/w/dist/op/logsoftmaxgrad-0.1.0-twin.tar.gz"},
        backend="torch",
        inventory={"source": "/etc/farm/pool.toml"},
        selection={"files": ["/cases/other.json", "/cases/my cases.yaml"]},
    )
    rec = failed(CASE, origin="my cases.yaml#3")
    argv = shlex.split(repro_command(rec, run_options(plan)))
    assert argv == [
        "farm",
        "repro",
        CASE,
        "--cases",
        "/cases/my cases.yaml",
        "--target",
        "twin",
        "--inventory",
        "/etc/farm/pool.toml",
        "--backend",
        "torch",
    ]
    # Values farm repro's --target and --plant-bug accept.
    assert "twin" in build.NATIVE_TARGETS and "fp16_sum" in build.PLANT_BUGS


def test_the_options_come_from_a_real_plan(tmp_path: Path):
    plan = Plan(
        run_id="r",
        run_dir=tmp_path,
        tier="smoke",
        backend="acl",
        inventory={"source": "embedded"},
        slots=[],
        hosts={},
        package={"target": "ascendc-cpu", "file": "logsoftmaxgrad-0.1.0-ascendc-cpu.tar.gz"},
    )
    assert repro_command(failed(CASE), run_options(plan)) == f"farm repro {CASE}"
    # A backend other than the target's default is named; the twin's default is native.
    native = dataclasses.replace(plan, backend="native")
    assert repro_command(failed(CASE), run_options(native)) == f"farm repro {CASE} --backend native"
    twin = dataclasses.replace(
        native, package={"target": "twin", "file": "logsoftmaxgrad-0.1.0-twin.tar.gz"}
    )
    assert repro_command(failed(CASE), run_options(twin)) == f"farm repro {CASE} --target twin"


def test_a_failed_case_page_has_its_repro_line_and_a_pass_none():
    line = repro_command(failed(CASE), run_options(_plan()))
    bad = glue.case_annotations(failed(CASE), repro=line).description
    assert bad.endswith(f"\n\nrerun it alone: `farm repro {CASE} --plant-bug fp16_sum`")
    good = glue.case_annotations(record(CASE), repro=line).description
    assert "farm repro" not in good
