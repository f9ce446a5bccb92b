"""`farm run` with a store its role may only read is refused before anything is built or any
host touched (docs/store.md: the store is checked before any host is touched); before, the run was
refused only at its first write, after the build, the deploys and every host's canary."""

from __future__ import annotations

from farm.results.store import RunStore
from tests.postgres import fresh_schema, reader_role


def test_a_read_only_role_is_refused_before_any_host(farm):
    with fresh_schema() as url:
        with RunStore(url) as store:
            store.begin_run({"tier": "smoke"})  # a store of the farm's
        with reader_role(url) as reader:
            farm.store_url = reader
            result = farm.run_tier(k="4x1x33")
    assert result.code == 2, result.text
    errors = [line for line in result.text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "may only read it" in errors[0], result.text
    assert "GRANT INSERT, UPDATE, DELETE ON runs, results, allure_history TO" in errors[0]
    for untouched in ("package ", "host ", "canary"):
        assert untouched not in result.text, result.text
    assert not (farm.runs / "hosts").exists()
