"""Synthetic measurements for the store's and `farm runs`' tests: a mutation.json and a
coverage.json as farm/cli/mutate_command.py and coverage_command.py write them, and the two runs
a coverage is measured over."""

from __future__ import annotations

from typing import Any

from farm.results.store import RunStore
from tests.results.conftest import RUN_META

SURVIVOR = "tiling/tiling.cpp:102:arithmetic.0"
UNREACHED = "tiling/tiling.cpp:110:relational.0"
WEAK = "ascendc/op_api/aclnn_log_softmax_backward.cpp:330:constant.0"
POLICY = "ascendc/op_kernel/log_softmax_grad.cpp:88:sync.0"
STRONG = "ascendc/op_api/aclnn_log_softmax_backward.cpp:249:arithmetic.0"
EQUIVALENT = "tiling/tiling.cpp:72:constant.1"


def outcome(mutant_id: str, status: str, **over: Any) -> dict[str, Any]:
    file, line, rule = mutant_id.rsplit(":", 2)
    o = {
        "id": mutant_id,
        "file": file,
        "line": int(line),
        "col": 4,
        "rule": rule,
        "old": "+",
        "new": "-",
        "status": status,
        "weak": False,
        "failing": 0,
        "complete": True,
        "failing_cases": [],
        "policy_only": False,
        "policy_failing": 0,
        "policy_cases": [],
        "caught_by": None,
        "closest": [],
        "build_error": "",
        "seconds": 4.2,
        "build_seconds": 1.5,
        "source_line": "    x = a + b;",
    }
    o.update(over)
    return o


def _failing(case_id: str, category: str = "precision") -> dict[str, Any]:
    return {
        "case_id": case_id,
        "outcome": "failed",
        "category": category,
        "message": f"{category}: MERE 3e-3 > T\nthe second line is not kept",
        "closeness": None,
    }


CLOSEST = [
    {"case_id": "910b_f32_3x33_d-1", "closeness": 0.93, "baseline": 0.41},
    {"case_id": "910b_f16_2x9_d0", "closeness": 0.5, "baseline": 0.5},
]


def mutation_doc(mutate_id: str = "mutate-20261207-101500-4242", **over: Any) -> dict[str, Any]:
    """A mutation.json as farm mutate writes it: one mutant of each kind a person looks at or
    not."""
    mutants = [
        outcome(STRONG, "killed", failing=5, failing_cases=[_failing(f"c{i}") for i in range(5)]),
        outcome(WEAK, "killed", weak=True, failing=1, failing_cases=[_failing("c_out_strided")]),
        outcome(
            POLICY,
            "killed",
            policy_only=True,
            failing=4,
            policy_failing=4,
            failing_cases=[_failing(f"p{i}", "emulation_policy") for i in range(4)],
        ),
        outcome(SURVIVOR, "survived", closest=CLOSEST),
        outcome(
            UNREACHED,
            "survived",
            explained="only tests list the SoC table",
            explained_kind="unreached",
        ),
        outcome(EQUIVALENT, "equivalent"),
    ]
    doc: dict[str, Any] = {
        "mutate_id": mutate_id,
        "tier": "smoke",
        "k": None,
        "backend": "acl",
        "cases": 120,
        "cases_judged": 118,
        "baseline_failing": ["a", "b"],
        "weak_kill": 3,
        "stop_after": None,
        "jobs": 2,
        "seconds": 95.4,
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "selection": {"only": [], "files": [], "rules": None, "limit": None},
        "min_score": None,
        "summary": {
            "mutants": 6,
            "killed": 3,
            "survived": 2,
            "equivalent": 1,
            "stillborn": 0,
            "weak": 1,
            "policy_only": 1,
            "judged": 5,
            "score": 0.6,
            "strong_score": 0.4,
            "explained": 1,
            "reviewed_equivalent": 0,
            "killable_score": 0.75,
            "results_score": 0.4,
        },
        "errors": [],
        "mutants": mutants,
    }
    doc.update(over)
    return doc


def coverage_result(runs: dict[str, str], **over: Any) -> dict[str, Any]:
    """coverage.json as farm coverage writes it (the figures; uncovered lines and stale entries
    as lists)."""
    result = {
        "tier": "smoke",
        "runs": runs,
        "cases": 61,
        "lines": {"covered": 930, "total": 1000, "percent": 93.0},
        "branches": {"covered": 700, "total": 1000, "percent": 70.0},
        "functions": {"covered": 99, "total": 100, "percent": 99.0},
        "files": [],
        "uncovered": [
            {"file": "tiling/tiling.cpp", "line": 5, "text": "x", "why": None},
            {"file": "tiling/tiling.cpp", "line": 9, "text": "y", "why": "graph mode only"},
        ],
        "unexplained": 1,
        "stale": [{"file": "tiling/views.cpp", "text": "z", "why": "no line reads so"}],
        "accounted": False,
        "per_case": {"min_cases": 3, "branches_reached": 700, "fewer": 12, "branches": []},
        "seconds": 300.0,
    }
    result.update(over)
    return result


def coverage_runs(
    store: RunStore, started: str = "2026-12-07T10:00:00+00:00", **meta: Any
) -> dict[str, str]:
    """The two runs (acl, native) a coverage is measured over, finished."""
    runs = {}
    for backend in ("acl", "native"):
        run_id = store.begin_run(
            {**RUN_META, "backend": backend, "started_at": started, "tier": "smoke", **meta}
        )
        store.finish_run(run_id, 0, subset=bool(meta.get("subset")))
        runs[backend] = run_id
    return runs
