"""A pool whose hosts have no PyTorch: the benchmark-ratio cases cannot be judged there (PyTorch
is their benchmark, an optional dependency of a host). They are broken before they are sent,
saying so once before the run and in each record, and no host is blamed: before, each failed on
every host of its family, which quarantined them all, and the cases of every other standard
that came after were broken with them. The same where PyTorch is installed but cannot be
imported (the hosts say they have it): the cases are tried on each host once."""

from __future__ import annotations

from farm.run.leases import without_torch

from .conftest import select
from .outcome_sets import disagreements

# Installed ahead of every import in the farm's processes and its agents: `import torch` and
# the agents' look-up of it (importlib.util.find_spec) fail as on a host without it.
NO_TORCH = """
import sys

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTorch())
"""


def test_benchmark_ratio_cases_are_broken_by_name_and_no_host_is_quarantined(
    farm, tmp_path, monkeypatch
):
    blocker = tmp_path / "no-torch"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(NO_TORCH)
    monkeypatch.setenv("PYTHONPATH", str(blocker))
    monkeypatch.setenv("LSG_BENCHMARK_CACHE", "off")  # no results kept from an earlier run
    cases = select("8x129")
    bench = {c.id for c in cases if c.standard == "benchmark-ratio"}
    assert len(bench) == 2 and len(cases) == 10
    result = farm.run_tier(k="8x129")
    assert result.code == 2, result.text[-3000:]
    assert f"benchmark-ratio cases will be broken: {without_torch('ascend910b')}" in result.err
    by_id = result.assert_one_result_per_case(cases)
    for case_id, record in by_id.items():
        if case_id in bench:
            assert record["outcome"] == "broken", record
            assert record["message"] == without_torch("ascend910b")
            assert record["attempts"] == 0 and not record["infra_errors"]
        else:
            assert record["outcome"] == "passed", record
    assert result.quarantine() == {}
    # JUnit, Allure and the summary say broken too (JUnit: an error, not a product failure).
    assert disagreements(result.run_dir, result.store) == []
    # farm repro says it as farm run does: infrastructure, exit 2 (it said 1, a product failure).
    case_id = sorted(bench)[0]
    repro = farm.run("repro", case_id)
    assert repro.code == 2, repro.text[-2000:]
    assert "install it on one" in repro.out.replace("\n", " ")


def test_pytorch_that_cannot_be_imported_breaks_its_cases_alone(farm, tmp_path, monkeypatch):
    shadow = tmp_path / "broken-torch"
    (shadow / "torch").mkdir(parents=True)
    (shadow / "torch" / "__init__.py").write_text(
        'raise ImportError("libgomp.so.1: cannot open shared object file")\n'
    )
    monkeypatch.setenv("PYTHONPATH", str(shadow))
    monkeypatch.setenv("LSG_BENCHMARK_CACHE", "off")
    cases = select("8x129")
    bench = {c.id for c in cases if c.standard == "benchmark-ratio"}
    result = farm.run_tier(k="8x129")
    assert result.code == 2, result.text[-3000:]
    by_id = result.assert_one_result_per_case(cases)
    for case_id, record in by_id.items():
        if case_id in bench:
            assert record["outcome"] == "broken", record
            assert record["message"].startswith(without_torch("ascend910b") + ": ")
            assert "libgomp.so.1" in record["message"]
        else:
            assert record["outcome"] == "passed", record
    assert result.quarantine() == {}
    assert disagreements(result.run_dir, result.store) == []
