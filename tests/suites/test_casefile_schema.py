"""The case format's JSON Schema (docs/case-file.schema.json): the committed file is what the code
makes, the farm's own case files pass it, and wrong files are refused by both the schema and the
farm."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from suites import casefile, casefile_schema, matrix
from suites.importers import command as importer
from tests.requirements import need

try:
    import jsonschema
except ImportError:  # a dev dependency (pyproject's [dev]): CI has it
    jsonschema = None

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "suites" / "importers" / "samples"
HEAD = {"format": casefile.FORMAT, "version": 1}
GOOD = {"dtype": "float32", "shape": [2, 3], "axes": -1}


@pytest.fixture(autouse=True)
def _jsonschema():
    need(jsonschema is not None, "jsonschema (pip install -e '.[dev]')")


def _schema_errors(document) -> list[str]:
    validator = jsonschema.Draft202012Validator(casefile_schema.schema())
    return [e.message for e in validator.iter_errors(document)]


def test_the_committed_schema_is_the_one_the_code_makes():
    committed = casefile_schema.PATH.read_text(encoding="utf-8")
    assert committed == casefile_schema.text(), (
        "docs/case-file.schema.json is stale: run .venv/bin/python -m suites.casefile_schema "
        "--write"
    )
    jsonschema.Draft202012Validator.check_schema(json.loads(committed))
    assert json.loads(committed)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_every_field_the_farm_reads_is_in_the_schema():
    case = casefile_schema.schema()["$defs"]["case"]
    assert set(case["properties"]) == set(casefile.FIELD_TYPES)
    assert case["required"] == ["dtype", "shape", "axes"]


def _docs_example() -> dict:
    text = (ROOT / "docs" / "case-files.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```yaml\n(.*?)```", text, re.S)
    return yaml.safe_load(block)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_what_farm_cases_writes_passes_the_schema(tmp_path, suffix):
    path = casefile.dump(matrix.expand("smoke"), tmp_path / f"smoke{suffix}", source="smoke")
    read = json.loads if suffix == ".json" else yaml.safe_load  # YAML 1.1 reads 1e-05 as text
    assert _schema_errors(read(path.read_text())) == []


def test_the_docs_example_and_the_imported_samples_pass_the_schema(tmp_path, capsys):
    example = _docs_example()
    assert _schema_errors(example) == []
    (tmp_path / "example.json").write_text(json.dumps(example))
    assert casefile.load(tmp_path / "example.json")  # and the farm reads it

    for fmt, sample in [
        ("msopst", "logsoftmaxgrad_msopst.json"),
        ("atk", "logsoftmaxgrad_atk.json"),
        ("ttk", "logsoftmaxgrad_ttk.csv"),
        ("aclnn-ut", "test_aclnn_log_softmax_backward.cpp"),
    ]:
        out = tmp_path / f"{fmt}.yaml"
        assert importer.main(["--format", fmt, str(SAMPLES / sample), "-o", str(out)]) == 0
        assert _schema_errors(yaml.safe_load(out.read_text())) == [], fmt
    capsys.readouterr()


def test_hand_written_forms_the_farm_reads_pass_the_schema(tmp_path):
    cases = [
        {**GOOD, "family": "Ascend910B3"},
        {**GOOD, "family": ["310b", " ASCEND910B "], "expect": {"ascend310b": "Reject"}},
        {**GOOD, "family": "all", "expect": "reject:dtype_unsupported", "dtype": "complex64"},
        {**GOOD, "y_dist": "fill", "y_fill": "-inf", "dy_dist": "range", "dy_range": [-1, 1]},
        {**GOOD, "out_layout": {"strides": [6, 2], "storage": 12}, "standard": "benchmark-ratio"},
        {**GOOD, "level": "L1", "standard": "benchmark-ratio", "tolerance": {"rtol": 0.01}},
        {**GOOD, "axes": [0, 1], "api": "axes", "y_shape": None, "explore": ""},
    ]
    document = {**HEAD, "source": "by hand", "cases": cases}
    assert _schema_errors(document) == []
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(document))
    assert len(casefile.load(path)) > len(cases)


WRONG = {
    "unknown field": {**GOOD, "shap": [2]},
    "missing axes": {"dtype": "float32", "shape": [2]},
    "unknown dtype": {**GOOD, "dtype": "float8"},
    "shape as text": {**GOOD, "shape": "2x3"},
    "negative extent": {**GOOD, "shape": [2, -3]},
    "unknown family": {**GOOD, "family": "ascend950"},
    "unknown layout": {**GOOD, "dy_layout": "transposed"},
    "view without storage": {**GOOD, "dy_layout": {"strides": [3, 1]}},
    "tolerance key": {**GOOD, "tolerance": {"rtol": 0.1, "relative": 0.1}},
    "unknown standard": {**GOOD, "standard": "bogus"},
    "unknown level": {**GOOD, "standard": "benchmark-ratio", "level": "L9"},
    "unknown reason": {**GOOD, "expect": "reject:too_big"},
    "fill as a word": {**GOOD, "y_dist": "fill", "y_fill": "lots"},
    "bad explore": {**GOOD, "explore": "no salt"},
}


@pytest.mark.parametrize("entry", list(WRONG.values()), ids=list(WRONG))
def test_a_wrong_entry_is_refused_by_the_schema_and_by_the_farm(tmp_path, entry):
    document = {**HEAD, "cases": [GOOD, entry]}
    assert _schema_errors(document)
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(document))
    with pytest.raises(casefile.CaseFileError, match=r"wrong.json: case 1 \(line 1\): "):
        casefile.load(path)


@pytest.mark.parametrize(
    "document",
    [
        {"version": 1, "cases": [GOOD]},
        {**HEAD, "version": 2, "cases": [GOOD]},
        {**HEAD, "cases": [GOOD], "author": "me"},
        {**HEAD, "cases": []},
        [],
    ],
    ids=["no format", "newer version", "unknown top-level key", "no cases", "empty list"],
)
def test_a_wrong_document_is_refused_by_the_schema_and_by_the_farm(tmp_path, document):
    assert _schema_errors(document)
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(document))
    with pytest.raises(casefile.CaseFileError):
        casefile.load(path)


def test_an_editors_schema_key_is_read_past(tmp_path):
    document = {"$schema": "../docs/case-file.schema.json", **HEAD, "cases": [GOOD]}
    assert _schema_errors(document) == []
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(document))
    assert len(casefile.load(path)) == 2  # one per family
