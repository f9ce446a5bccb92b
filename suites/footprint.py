"""How much memory a case takes on an agent, and the budget it must fit before anything runs.

A case's footprint is what farm/agent/execute.py really allocates for it, at its peak:

* resident while the operator runs and is judged: the storages of dy, y and out (a "strided"
  layout or an explicit view's storage is larger than the view; out's storage is the guard the
  agent checks for writes outside the view), and the workspace the operator copies every
  non-contiguous tensor through (op/tiling: one contiguous copy of each);
* the largest of the transient phases on top of it: generating the inputs (the contiguous dy and y
  first, y's float64 log-softmax slab by slab), placing them in their layouts (int64 storage
  positions of every element), the golden's float64 work (golden/judge.py: about twenty float64
  arrays of one slab, and a slab always holds a whole reduce line), the inputs' digest (a copy of
  each) and the check of out's guard.

The constants below were measured with tracemalloc on the agent's own code
(tests/suites/test_footprint.py keeps the estimate above what is measured). A case over its
family's budget is refused before the run starts (:func:`refuse_oversized`): no agent ever tries
to allocate it, and no host is blamed for what the case asks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from farm.util import proc
from farm.util.errors import UsageError
from farm.util.sizes import size_text
from golden import dtypes, inputs, layouts, reference
from golden.contract import axes_consecutive, axes_in_range, merge_shape, normalize_axes
from suites.case import Case

# What one case may take on a host that declares no memory_budget in the inventory, at most.
DEFAULT_MEMORY_BUDGET = 8 << 30
# The share of its memory (the MemTotal its agent reports) one case may take on a host that
# declares no budget, where that is below the default: an Atlas 200I/500 A2 board has 4-8 GB for
# its OS, the NPU and the agent together.
HOST_MEMORY_SHARE = 0.5
# The share of this machine's memory one case may take on a local (emulated) host that declares
# no budget: its agents share the machine with each other and with the orchestrator.
LOCAL_MEMORY_SHARE = 0.5
# float64 arrays of one slab the golden holds at once (golden/workspace.py's workspace and the
# metrics' scratch; measured: 17-18).
GOLDEN_SLAB_ARRAYS = 20
# float64 arrays of one slab generating y holds at once (x, its max, t, exp(t), the sums, t - lse).
GENERATION_SLAB_ARRAYS = 8
# int64 arrays of a view's elements that placing it (element_offsets, np.unique's sort and
# index) or checking out's guard holds at once.
OFFSET_ARRAYS = 6
# Bytes per element of a case's largest tensor or slab that bound its footprint (upper_bound).
UPPER_BOUND_BYTES = 512


@dataclass(frozen=True)
class Footprint:
    """A case's peak memory on an agent: ``bytes`` in all, ``tensors`` (name -> bytes of its
    storage, the workspace among them when there is one), ``elements`` (of dy, y and out)."""

    bytes: int
    tensors: tuple[tuple[str, int], ...]
    elements: int

    @property
    def text(self) -> str:
        """ "1.8 TiB in 4 tensors" (the tensors' storages, then the work beyond them)."""
        held = sum(b for _, b in self.tensors)
        work = self.bytes - held
        parts = f"{size_text(self.bytes)} in {len(self.tensors)} tensors"
        if work > 0:
            parts += f" ({size_text(held)}) and their working arrays ({size_text(work)})"
        return parts


def _itemsize(dtype: str) -> int:
    if dtype in dtypes.DESCRIPTOR_ONLY:
        return np.dtype(dtype).itemsize
    return dtypes.numpy_dtype(dtype).itemsize


def _storage(layout: layouts.Layout, shape: tuple[int, ...]) -> int:
    """Elements of the storage the agent allocates for a tensor of `shape` in `layout`."""
    if layout == "contiguous":
        return math.prod(shape)
    return max(layouts.resolve(layout, shape).storage, 1)


def footprint(case: Case) -> Footprint:
    """The peak memory `case` takes on an agent, from its fields alone:
    nothing is allocated here."""
    shapes = {name: tuple(case.tensor_shape(name)) for name in ("dy", "y", "out")}
    sizes = {
        "dy": _itemsize(case.dtype),
        "y": _itemsize(case.y_dtype or case.dtype),
        "out": _itemsize(case.out_dtype or case.dtype),
    }
    n = {name: math.prod(shape) for name, shape in shapes.items()}
    chosen = {name: getattr(case, f"{name}_layout") for name in shapes}
    storages = {name: _storage(chosen[name], shapes[name]) * sizes[name] for name in shapes}
    strided = [
        name for name in shapes if n[name] and not layouts.is_dense(chosen[name], shapes[name])
    ]
    tensors = list(storages.items())
    if strided:  # the operator's contiguous copies (op/tiling workspace_layout)
        tensors.append(("workspace", len(strided) * n["dy"] * sizes["dy"]))
    resident = sum(b for _, b in tensors)

    made = n["dy"] * sizes["dy"] + n["y"] * sizes["y"]  # the inputs before they are placed
    f64 = 8
    slab = _generation_slab(shapes["y"], case.axes)
    generating = made + n["y"] * sizes["dy"] + GENERATION_SLAB_ARRAYS * f64 * slab
    if case.y_dtype:  # y rounded into its own dtype through float64
        generating += n["y"] * f64
    placing = made + sum(
        OFFSET_ARRAYS * f64 * n[name] for name in ("dy", "y") if chosen[name] != "contiguous"
    )
    phases = [generating, placing, 2 * max(n["dy"] * sizes["dy"], n["y"] * sizes["y"])]
    if case.accepted:
        judging = GOLDEN_SLAB_ARRAYS * f64 * _golden_slab(shapes["dy"], case.axes)
        judging += sum(n[name] * sizes[name] for name in strided)  # reshaped views are copies
        phases.append(judging)
        if chosen["out"] != "contiguous":
            phases.append(storages["out"] // sizes["out"] + OFFSET_ARRAYS * f64 * n["out"])
    return Footprint(resident + max(phases), tuple(tensors), sum(n.values()))


def upper_bound(case: Case) -> int:
    """A bound of footprint(case) from its largest tensor or storage alone, cheap enough for a
    whole tier: every term of the footprint is at most a few dozen bytes (16 at most an element,
    20 float64 slab arrays) per element of the largest of them or of a slab."""
    largest = 1
    for name in ("dy", "y", "out"):
        n = math.prod(case.tensor_shape(name))
        layout = getattr(case, f"{name}_layout")
        storage = layout.storage if isinstance(layout, layouts.View) else 2 * n
        largest = max(largest, n, storage)
    return UPPER_BOUND_BYTES * max(largest, reference.SLAB_ELEMENTS, inputs.GEN_SLAB)


def _golden_slab(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    """Elements of the golden's largest slab (golden/reference.py slabs: a whole reduce line)."""
    n = math.prod(shape)
    if not n:
        return 0
    d0, d1, d2 = merge_shape(shape, axes)
    return min(n, max(reference.SLAB_ELEMENTS, d1))


def _generation_slab(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    """Elements of the largest slab y is generated in (golden/inputs.py: whole rows of d1 x d2)."""
    n = math.prod(shape)
    if not n:
        return 0
    rank = len(shape)
    if not (axes and axes_in_range(axes, rank) and axes_consecutive(normalize_axes(axes, rank))):
        axes = (-1,)  # what the generators fall back to for a rejection case's axes
    d0, d1, d2 = merge_shape(shape, axes)
    return min(n, max(inputs.GEN_SLAB, d1 * d2))


def oversized(
    cases: Iterable[Case], budgets: Mapping[str, tuple[int, str]], default: tuple[int, str]
) -> list[tuple[Case, Footprint, int, str]]:
    """(case, footprint, budget, where the budget comes from) of each case over its family's
    budget (`budgets`: family -> (bytes, source); families not in it get `default`)."""
    over = []
    for case in cases:
        budget, source = budgets.get(case.family, default)
        if upper_bound(case) <= budget:
            continue  # most cases, at no cost
        size = footprint(case)
        if size.bytes > budget:
            over.append((case, size, budget, source))
    return over


def machine_memory(meminfo: str = proc.MEMINFO) -> int | None:
    """This machine's MemTotal in bytes (None where /proc/meminfo does not say)."""
    return proc.meminfo(meminfo)[0]


def host_budget(host, machine: int | None = None, reported: int | None = None) -> tuple[int, str]:
    """(bytes one case may take on `host`, where that comes from): its inventory memory_budget;
    else, for a local (emulated) host, LOCAL_MEMORY_SHARE of this machine's memory when that is
    below the default; for another, HOST_MEMORY_SHARE of the memory it ``reported`` (its
    agent's MemTotal, farm/agent/machine.py) when that is below the default; else
    DEFAULT_MEMORY_BUDGET."""
    if host.memory_budget is not None:
        return host.memory_budget, f"memory_budget of host {host.name}"
    if host.transport == "local":
        total = machine_memory() if machine is None else machine
        if total is not None and total * LOCAL_MEMORY_SHARE < DEFAULT_MEMORY_BUDGET:
            share = int(total * LOCAL_MEMORY_SHARE)
            return (
                share,
                f"{LOCAL_MEMORY_SHARE:.0%} of this machine's {size_text(total)}, host {host.name}",
            )
    elif reported is not None and reported * HOST_MEMORY_SHARE < DEFAULT_MEMORY_BUDGET:
        return (
            int(reported * HOST_MEMORY_SHARE),
            f"{HOST_MEMORY_SHARE:.0%} of the {size_text(reported)} host {host.name} has "
            "(MemTotal); it declares no memory_budget",
        )
    return DEFAULT_MEMORY_BUDGET, f"the default; host {host.name} declares no memory_budget"


def pool_budgets(
    hosts: Iterable,
    machine: int | None = None,
    reported: Mapping[str, int | None] | None = None,
) -> dict[str, tuple[int, str]]:
    """family -> the smallest budget of its hosts (a case may be sent to any of them);
    ``reported``: host name -> the memory (bytes) its agent reported, where known."""
    budgets: dict[str, tuple[int, str]] = {}
    for host in hosts:
        budget = host_budget(host, machine, (reported or {}).get(host.name))
        if host.family not in budgets or budget[0] < budgets[host.family][0]:
            budgets[host.family] = budget
    return budgets


class CaseTooLarge(UsageError):
    """A case needs more memory than a host of its family may give it: refused before the run."""


def refuse_oversized(
    cases: Iterable[Case],
    budgets: Mapping[str, tuple[int, str]] | None = None,
    default: tuple[int, str] = (DEFAULT_MEMORY_BUDGET, "the default"),
) -> None:
    """Raise CaseTooLarge, one line naming the first case over its budget, its size, the budget
    and how to raise it, when any case is over; nothing else happens."""
    over = oversized(cases, budgets or {}, default)
    if not over:
        return
    case, size, budget, source = over[0]
    more = f" (and {len(over) - 1} more case(s) over it)" if len(over) > 1 else ""
    raise CaseTooLarge(
        f"case {case.id} needs {size.text}, {size.elements:,} elements, over the "
        f"{size_text(budget)} one case may take on the {case.family} hosts ({source}){more}; "
        "make the case smaller, or, where hosts really have the memory, raise memory_budget "
        '(e.g. memory_budget = "64GiB") for them in the inventory ([[host]] or [defaults])'
    )
