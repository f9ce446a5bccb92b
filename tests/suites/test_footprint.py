"""A case's footprint is what the agent really allocates for it, and a case over its hosts'
memory budget is refused before anything runs, in one line that names it, its size, the budget
and how to raise it."""

from __future__ import annotations

import tracemalloc

import pytest

from farm.agent.execute import run_case
from farm.agent.identity import Identity
from farm.pool.inventory import HostSpec, default_inventory
from farm.run.requests import case_request
from farm.util.sizes import size_text
from golden import workspace
from golden.layouts import View
from suites import footprint
from suites.case import Case

IDENTITY = Identity(
    host="emu-t", soc="Ascend910B1", devices=1, source="test", emulated=True, python="3"
)
BOMB = Case("ascend910b", "float16", (1_000_000, 1_000_000), (1,))


def measured_peak(case: Case) -> int:
    """The most the agent's own code held at once for the case (numpy reports every array's
    memory to tracemalloc), from a cold golden workspace."""
    workspace.workspace().clear()
    tracemalloc.start()
    try:
        record = run_case(case_request(case), "native", 0, IDENTITY)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert record["outcome"] in ("passed", "failed"), record["message"]
    return peak


@pytest.mark.parametrize(
    "case",
    [
        Case("ascend910b", "float32", (512, 1024), (1,)),
        # The golden's slab keeps a whole reduce line: 2M float64 lines, not 1M.
        Case("ascend910b", "float16", (1, 2_000_000), (1,)),
        Case("ascend910b", "float32", (1000, 1000), (0,), y_dist="normal"),
        Case(
            "ascend910b",
            "float32",
            (256, 512),
            (1,),
            dy_layout="strided",
            y_layout="strided",
            out_layout="strided",
        ),
        # A view whose storage is eight times the tensor, and an out over a larger storage.
        Case(
            "ascend910b",
            "float32",
            (256, 512),
            (1,),
            y_layout=View((4096, 8), 256 * 4096, 0),
            out_layout=View((1024, 1), 256 * 1024, 3),
        ),
        Case("ascend910b", "float16", (512, 1024), (1,), y_dtype="float32"),  # rejected
        Case("ascend910b", "float32", (512, 1024), (1,), y_shape=(512, 1000)),  # rejected
    ],
    ids=lambda c: c.id[:60],
)
def test_the_footprint_bounds_what_the_agent_allocates(case):
    peak = measured_peak(case)
    estimate = footprint.footprint(case).bytes
    assert peak <= estimate, f"{case.id}: measured {peak}, estimated {estimate}"
    assert estimate <= 4 * peak, f"{case.id}: measured {peak}, estimated {estimate}"
    assert estimate <= footprint.upper_bound(case)


def test_the_cheap_bound_that_spares_a_tier_the_full_count_is_a_bound():
    from suites import matrix

    for case in [*matrix.expand("smoke"), BOMB]:
        assert footprint.footprint(case).bytes <= footprint.upper_bound(case), case.id


def test_storages_count_what_a_layout_makes_larger_than_the_view():
    plain = Case("ascend910b", "float32", (64, 64), (1,))
    wide = Case("ascend910b", "float32", (64, 64), (1,), out_layout=View((640, 1), 64 * 640, 0))
    tensors = dict(footprint.footprint(wide).tensors)
    assert tensors["out"] == 64 * 640 * 4 and tensors["dy"] == 64 * 64 * 4
    assert "workspace" in tensors  # the operator copies a strided out through its workspace
    assert "workspace" not in dict(footprint.footprint(plain).tensors)


def test_sizes_read_as_people_write_them():
    assert size_text(300) == "300 B"
    assert size_text(8 << 30) == "8 GiB"
    assert size_text(2 * 10**12) == "1.8 TiB"
    assert footprint.footprint(BOMB).text.startswith("10.9 TiB in 3 tensors (5.5 TiB)")


def test_the_memory_bomb_is_refused_in_one_line_with_the_way_to_raise_the_budget():
    budgets = footprint.pool_budgets(default_inventory("/nonexistent").hosts, machine=64 << 30)
    with pytest.raises(footprint.CaseTooLarge) as caught:
        footprint.refuse_oversized([Case("ascend910b", "float32", (4, 8), (1,)), BOMB], budgets)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"case {BOMB.id} needs 10.9 TiB in 3 tensors")
    assert "3,000,000,000,000 elements" in message
    assert "over the 8 GiB one case may take on the ascend910b hosts" in message
    assert 'memory_budget (e.g. memory_budget = "64GiB")' in message
    assert caught.value.exit_code == 2


def test_the_budget_is_the_smallest_of_the_family_and_a_local_host_keeps_to_its_machine():
    def host(name, soc="Ascend910B1", transport="ssh", budget=None):
        return HostSpec(name, soc, 1, transport=transport, memory_budget=budget)

    budgets = footprint.pool_budgets(
        [host("big", budget=64 << 30), host("small", budget=2 << 30), host("b", "Ascend310B1")],
        machine=1 << 40,
    )
    assert budgets["ascend910b"] == (2 << 30, "memory_budget of host small")
    assert budgets["ascend310b"][0] == footprint.DEFAULT_MEMORY_BUDGET
    tiny = footprint.host_budget(host("emu", transport="local"), machine=4 << 30)
    assert tiny == (2 << 30, "50% of this machine's 4 GiB, host emu")
    case = Case("ascend910b", "float32", (4096, 4096), (1,))  # about 400 MiB
    footprint.refuse_oversized([case], budgets)  # fits: nothing raised
    with pytest.raises(footprint.CaseTooLarge, match="memory_budget of host small"):
        footprint.refuse_oversized(
            [case], {"ascend910b": (256 << 20, "memory_budget of host small")}
        )


MEMINFO = """\
MemTotal:        3956812 kB
MemFree:          402112 kB
MemAvailable:    1873304 kB
Buffers:           61536 kB
"""


def test_a_host_without_a_budget_keeps_to_the_memory_it_reports(tmp_path):
    """An SSH host that declares no memory_budget may give one case at most half the memory its
    agent reports (MemTotal of its /proc/meminfo), when that is below the default: an Atlas
    200I/500 A2 board with 4 GB gets 2 GB, not 8 GiB."""
    from farm.agent import machine
    from farm.run.prepare import reported_memory

    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO)
    assert machine.read_meminfo(str(meminfo)) == (3956812 * 1024, 1873304 * 1024)
    board = machine.gather({machine.ENV_NPU_SMI: str(tmp_path / "none")}, meminfo=str(meminfo))
    total = reported_memory({"machine": board.to_wire()})
    assert total == 3956812 * 1024 and board.memory_available == 1873304 * 1024

    def host(name, soc="Ascend310B4", budget=None):
        return HostSpec(name, soc, 1, memory_budget=budget)

    budgets = footprint.pool_budgets(
        [host("orange-01"), host("a2-01", "Ascend910B1")],
        reported={"orange-01": total, "a2-01": 1 << 40},
    )
    assert budgets["ascend310b"] == (
        total // 2,
        "50% of the 3.8 GiB host orange-01 has (MemTotal); it declares no memory_budget",
    )
    assert budgets["ascend910b"][0] == footprint.DEFAULT_MEMORY_BUDGET  # never above the default
    # The inventory's memory_budget wins; a host that says nothing gets the default.
    assert footprint.host_budget(host("o2", budget=3 << 30), reported=total)[0] == 3 << 30
    assert footprint.host_budget(host("o3"), reported=None)[0] == footprint.DEFAULT_MEMORY_BUDGET
    assert reported_memory({}) is None and reported_memory({"machine": {}}) is None
    case = Case("ascend310b", "float32", (8192, 16384), (1,))  # about 3 GiB
    with pytest.raises(footprint.CaseTooLarge, match="host orange-01 has .MemTotal."):
        footprint.refuse_oversized([case], budgets)
