"""What a case's page shows under its message (Allure's statusTrace): what a person needs, not
pytest's plumbing (issue 58).

A farm case fails or breaks by the assertion every suite makes of its record
(farm/run/plugin.py assert_record: an AssertionError, or InfrastructureBroken) or by a suite's
own check of it (suites/tiling.py check_tiling); the traceback of that assertion says nothing
about the operator. For those the plugin puts this text in its place:

    [precision] FAIL error-bound float16: 37 of 8000 elements beyond ... worst at (3, 17): ...
    failing criterion: error-bound, each element's error / bound against 1: 37 of 8,000
      elements over their bound; the largest 3.2x
    rerun it alone: farm repro 910b_f16_8x1000_d-1_y.uniform_dy.normal --plant-bug trunc_narrow

Anything else raised in a test item (a farm bug) keeps its Python traceback (``replaces``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from farm.run.allure.categories import failure_message
from farm.run.allure.criterion import failing_criterion
from farm.run.allure.repro_line import repro_command


def replaces(exception: BaseException, broken: type[BaseException]) -> bool:
    """Whether a test item's exception is a farm case's verdict (its trace is replaced): the
    assertion of its record or a suite's check (an AssertionError), or its record's infrastructure
    failure (``broken``: the plugin's InfrastructureBroken). Anything else is a farm bug."""
    return isinstance(exception, (AssertionError, broken))  # suites/tiling.py TilingMismatch


def status_trace(record: Mapping, run_options: Mapping[str, Any]) -> str:
    """The text of a failed or broken farm case's statusTrace: its verdict's message, the
    criterion that failed it (farm/run/allure/criterion.py) or its category, and the command
    that reruns it (farm/run/allure/repro_line.py)."""
    lines = [failure_message(record)]
    criterion = failing_criterion(record) if record.get("outcome") == "failed" else None
    if criterion is not None:
        line = f"failing criterion: {criterion['standard']}"
        scored = criterion["max"] is not None and criterion["max"] > 0
        if criterion["measure"] and scored:
            line += f", each element's {criterion['measure']} against 1"
            if criterion["summary"]:
                line += f": {criterion['summary']}"
            line += f"; the largest {criterion['max']:.3g}x"
        metrics = record.get("metrics") or {}
        mismatch = int(metrics.get("nonfinite_mismatch") or 0)
        if mismatch:  # not compared, so in no score: golden/metrics.py counts them apart
            line += "; " if scored else ": "
            line += (
                f"NaN/inf positions differ from the golden at {mismatch:,} of "
                f"{int(metrics.get('n') or 0):,} elements"
            )
        lines.append(line)
        worst = (criterion["elements"] or [None])[0]
        if worst is not None and worst.get("index") is not None:
            where = ", ".join(str(i) for i in worst["index"])
            values = [f"{k} {worst[k]:.6g}" for k in ("actual", "golden") if k in worst]
            lines.append(
                f"worst element ({where}): {float(worst['score']):.3g}x"
                + (f" ({', '.join(values)})" if values else "")
            )
    elif record.get("category"):
        lines.append(f"category: {record['category']}")
    lines.append("rerun it alone: " + repro_command(record, run_options))
    return "\n".join(lines)
