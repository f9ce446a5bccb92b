"""pytest in this process (one worker: `--jobs 1`, or a pool of one slot, one Atlas 200I board)
with the live progress on, as a user runs `farm run` (the other end-to-end runs pass
--no-progress). The progress' xdist hook, unknown without xdist, was a pytest internal error:
every case broken, exit 2."""

from __future__ import annotations

from tests.e2e.conftest import select
from tests.inventories import local_910b_hosts

K = "910b and f32 and 2x"


def test_jobs_1_with_the_live_progress_runs_every_case(farm):
    result = farm.run("run", "--tier", "smoke", "--no-report", "--jobs", "1", "--", "-k", K)
    assert result.code == 0, result.text
    assert "internal error" not in result.text
    result.assert_one_result_per_case(select(K))


def test_a_pool_of_one_slot_runs_with_the_live_progress(farm, tmp_path):
    inventory = local_910b_hosts(tmp_path, ("board",))
    args = ("run", "--tier", "smoke", "--no-report", "--inventory", str(inventory))
    result = farm.run(*args, "--", "-k", K)
    assert result.code == 0, result.text
    result.assert_one_result_per_case(select(K))
