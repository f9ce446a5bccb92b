"""`farm run` with a run store whose header and schema read well and whose pages do not: the
whole read runs while the package is built and the hosts are checked, and the run is refused
before it begins: one error line naming the store and the fix, exit 2, no run directory left,
nothing written into the store."""

from __future__ import annotations

from tests.e2e.conftest import Farm
from tests.results.conftest import DEEP_INSIDE, garble, store_with_results


def test_a_corrupt_store_refuses_the_run_before_it_begins(farm: Farm):
    store_with_results(farm.store, 3000)
    garble(farm.store, DEEP_INSIDE)
    before = farm.store.read_bytes()

    result = farm.run_tier(k="f32 and 910b")

    assert result.code == 2, result.text
    errors = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(farm.store) in errors[0], result.err
    assert "failed its integrity check" in errors[0] and "restore it" in errors[0]
    assert result.run_dir is None, "the run never began: no run directory"
    assert farm.store.read_bytes() == before
