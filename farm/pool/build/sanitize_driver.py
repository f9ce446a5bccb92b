"""The subprocess side of the sanitizer check (`python -m farm.pool.build --drive`, started by
farm/pool/build/sanitize.py): a fixed representative set of calls to the sanitized library, and
every case of a tier when asked; it prints one line a call and their count.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

from farm.agent.request import CaseRequest
from golden.soc import FAMILIES, representative_soc


def _driver_calls() -> Iterator[tuple[str, dict]]:
    """(label, keyword arguments of farm.agent.backends.native.run) over schedules, dtypes,
    chunking, ranks, strided views, empty tensors, threads and every rejection, on both
    families."""
    shapes = [
        ((3, 1, 70), (1,)),  # NO_REDUCE
        ((2, 20000), (-1,)),  # REDUCE_TAIL, 3 chunks with a tail
        ((50, 37), (-1,)),  # REDUCE_TAIL, more rows than cores
        ((2, 7, 33), (1,)),  # REDUCE_MID
        ((1, 3, 20001), (1,)),  # REDUCE_MID, chunked columns with a tail
        ((3, 9000), (0,)),  # REDUCE_MID, d0 = 1
        ((), (-1,)),  # rank 0
        ((2, 1, 2, 1, 3, 1, 2, 2), (2, 3, 4)),  # rank 8, an axis list
        ((0, 5), (-1,)),
        ((4, 0, 3), (1,)),  # empty
    ]
    for soc in (representative_soc(family).name for family in FAMILIES):
        for dtype in ("float32", "float16", "bfloat16"):
            for shape, axes in shapes:
                for strided in (False, True):
                    yield (
                        f"{soc} {dtype} {shape} {axes} strided={strided}",
                        dict(
                            shape=shape, dtype=dtype, axes=axes, soc=soc, strided=strided, threads=2
                        ),
                    )
        bad = dict(shape=(4, 6), dtype="float32", axes=(-1,), soc=soc)
        yield f"{soc} missing", {**bad, "missing": "out"}
        yield f"{soc} int32", {**bad, "dtype": "int32"}
        yield f"{soc} dtype mismatch", {**bad, "out_dtype": "float16"}
        yield f"{soc} rank 9", {**bad, "shape": (1,) * 9}
        yield f"{soc} shape mismatch", {**bad, "out_shape": (6, 4)}
        yield f"{soc} axes empty", {**bad, "axes": ()}
        yield f"{soc} dim out of range", {**bad, "axes": (2,)}
        yield f"{soc} axes not consecutive", {**bad, "shape": (2, 3, 4), "axes": (0, 2)}
        yield f"{soc} bf16 empty", {**bad, "dtype": "bfloat16", "shape": (0, 3)}


def _plan_only_calls() -> Iterator[tuple[str, tuple]]:
    """Descriptors numpy cannot make, or that never get as far as running: plan() arguments."""
    from farm.agent.backends.native import Spec

    huge_empty = Spec((1 << 40, 1 << 40, 0), "float32")
    negative = Spec((2, -3), "float32")
    ok = Spec((2, 3), "float32")
    yield (
        "empty, merged extent past int64",
        (huge_empty, huge_empty, (2,), huge_empty, "Ascend910B1"),
    )
    yield "negative extent", (negative, negative, (-1,), negative, "Ascend910B1")
    yield "unknown SoC", (ok, ok, (-1,), ok, "Ascend999")
    yield "all missing", (None, None, (), None, "Ascend310B1")


def _run_matrix(tier: str) -> int:
    """Every case of a suites.matrix tier, with the inputs the agent makes and its backend call."""
    from farm.agent.backends import native
    from farm.agent.execute import make_call_inputs
    from golden.soc import representative_soc
    from suites import matrix

    cases = matrix.expand(tier)
    for case in cases:
        c = cast(CaseRequest, case.to_dict())  # the agent's request (farm/run/requests.py)
        dy, y = make_call_inputs(c)
        result = native.run_call(
            dy,
            y,
            case.axes,
            representative_soc(case.family).name,
            out_dtype=case.out_dtype or case.dtype,
            out_shape=case.out_shape,
            missing=case.missing,
            api=case.api,
        )
        print(f"{case.id}: {result.status} {result.reason}", flush=True)
    return len(cases)


def _overflow_probe() -> None:
    """Run the library on a tensor that claims 2000 elements of a 1000-element buffer."""
    import numpy as np

    from farm.agent.backends import native

    buf = np.zeros(1000, dtype=np.float32)  # 4000 bytes: its own malloc, which ASan guards
    lie = np.lib.stride_tricks.as_strided(buf, shape=(2000,), strides=(4,))
    native.run(lie, lie, (-1,), "Ascend910B1", threads=1)


def drive(tier: str | None, overflow_probe: bool = False) -> int:
    """The subprocess side of sanitize_check: make each call's inputs and run it."""
    from farm.agent.backends import native
    from golden.dtypes import numpy_dtype
    from golden.inputs import make_inputs

    plans = list(_plan_only_calls())
    for label, args in plans:
        print(f"{label}: {native.plan(*args).reason}", flush=True)
    calls = list(_driver_calls())
    for label, kw in calls:
        dy, y = make_inputs(kw["shape"], kw["dtype"], kw["axes"], "uniform", "normal", seed=1)
        out_dtype = numpy_dtype(kw["out_dtype"]) if kw.get("out_dtype") else None
        result = native.run(
            dy,
            y,
            kw["axes"],
            kw["soc"],
            out_dtype=out_dtype,
            out_shape=kw.get("out_shape"),
            missing=kw.get("missing"),
            strided=kw.get("strided", False),
            threads=kw.get("threads", 0),
        )
        print(f"{label}: {result.status} {result.reason}", flush=True)
    count = len(plans) + len(calls) + (_run_matrix(tier) if tier else 0)
    if overflow_probe:
        _overflow_probe()
    print(f"sanitize driver: {count} calls", flush=True)
    return 0
