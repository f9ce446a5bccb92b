"""A `farm run` a CI script reads without guessing: the last line of its stdout is run_id=<id>,
--json-summary FILE holds its summary, the store is named at the end, and its JUnit's suite is
named after the tier and the run (not pytest's "pytest")."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

K = "310b and bf16 and 3x17"


def test_farm_run_says_its_run_id_and_summary_for_a_script(farm, tmp_path):
    wanted = tmp_path / "ci" / "farm-summary.json"
    wanted.parent.mkdir()
    result = farm.run_tier("--json-summary", str(wanted), k=K)
    assert result.code == 0, result.text
    run_id = result.out.splitlines()[-1].removeprefix("run_id=")
    run_dir = farm.runs / run_id
    assert result.out.splitlines()[-1] == f"run_id={run_id}" and run_dir.is_dir()
    assert wanted.read_bytes() == (run_dir / "summary.json").read_bytes()
    assert json.loads(wanted.read_text())["run_id"] == run_id
    assert f"store    {farm.store}" in result.err
    root = ET.parse(run_dir / "junit.xml").getroot()
    assert {s.get("name") for s in root.iter("testsuite")} == {f"farm smoke run {run_id}"}
