"""`pytest suites/ [-n N] [--farm-inventory FILE]` is the farm as a plain pytest plugin: it runs
the same cases with the same verdicts as `farm run`, so pytest's own selection (-k) works on it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from farm.pool import build
from farm.run.plan import UNSTORED_MARK, UNSTORED_TEXT
from tests.e2e.conftest import Farm, _run_dirs, select


def junit_verdicts(path: Path) -> dict[str, str]:
    """case id -> passed | failed, from a junit file of the suites."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name")
        assert name is not None, "a testcase without a name"
        case_id = name[name.index("[") + 1 : name.rindex("]")]
        bad = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        out[case_id] = "failed" if bad else ("skipped" if skipped else "passed")
    return out


def verdict_of(record: dict) -> tuple:
    """What a verdict is made of: outcome, category, status, and the standard that judged it."""
    return (
        record["outcome"],
        record["category"],
        record["status"],
        record["reason"],
        (record.get("verdict") or {}).get("standard"),
        (record.get("verdict") or {}).get("passed"),
        record["expect"]["kind"],
    )


def run_plugin(farm: Farm, k: str, *args: str) -> tuple[dict, dict[str, dict]]:
    """`pytest suites/ -n 2 -k K ARGS`; returns (junit verdicts, the run's records by case id)."""
    junit = farm.root / "plugin-junit.xml"
    proc = farm.pytest("suites/", "-n", "2", "-k", k, f"--junitxml={junit}", *args)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # The controller's build says its start and end before pytest's own output (issue 58).
    assert proc.stderr.splitlines()[:1] == ["build: ascendc-cpu " + build.HOST_ARCH], proc.stderr
    (run_dir,) = _run_dirs(farm.runs)
    # In no store: farm runs lists it as not stored, farm runs prune --older-than removes it.
    assert (run_dir / UNSTORED_MARK).read_text() == UNSTORED_TEXT
    result = farm.result(0, "", "")
    records = result.raw_records()
    assert len(records) == len({r["case_id"] for r in records}), "a case ran twice"
    return junit_verdicts(junit), {r["case_id"]: r for r in records}


def compare(tmp_path, k: str, inventory: tuple[str, ...], plugin_inventory: tuple[str, ...]):
    cases = select(k)
    wanted = sorted(c.id for c in cases)

    via_pytest = Farm(tmp_path / "pytest")
    junit, plugin_records = run_plugin(via_pytest, k, *plugin_inventory)
    # -k selected exactly the cases whose ids match, and pytest saw every verdict.
    assert sorted(junit) == wanted
    assert sorted(plugin_records) == wanted
    assert all(junit[cid] == plugin_records[cid]["outcome"] for cid in wanted)

    via_farm = Farm(tmp_path / "farm")
    result = via_farm.run_tier("--jobs", "2", *inventory, k=k)
    assert result.code == 0, result.text
    assert "build: ascendc-cpu " + build.HOST_ARCH in result.err.splitlines(), result.err
    farm_records = result.assert_one_result_per_case(cases)
    assert junit_verdicts(result.made_dir / "junit.xml") == junit
    for cid in wanted:
        assert verdict_of(plugin_records[cid]) == verdict_of(farm_records[cid]), cid
    return plugin_records


def test_embedded_pool_same_cases_and_verdicts_as_farm_run(tmp_path):
    """No inventory: both use the embedded local pool."""
    records = compare(tmp_path, "f32 and d0", (), ())
    hosts = {r["host"] for r in records.values()}
    assert hosts <= {"emu-a2-01", "emu-a2-02", "emu-310b-01"} and "emu-310b-01" in hosts


def test_lab_same_cases_and_verdicts_as_farm_run(tmp_path, lab, lab_inventory):
    """Over the SSH lab; the subset holds bf16 cases of both families (rejected on 310B)."""
    k = "bf16 and d0"
    records = compare(
        tmp_path, k, ("--inventory", lab_inventory), ("--farm-inventory", lab_inventory)
    )
    for r in records.values():
        if r["family"] == "ascend310b":
            assert (r["status"], r["reason"], r["host"]) == (
                161002,
                "bf16_unsupported_on_soc",
                "a200-01",
            )
        else:
            assert r["status"] == 0 and r["host"] in ("a2-01", "a2-02")
