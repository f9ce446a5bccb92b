"""What a run's failures share that its passing cases do not: a few ranked groups, each a
conjunction of at most two predicates over what the farm records of a case, with its counts and
the command that reruns exactly its cases.

    features(record)  -> {feature: value}   the case's own description, its planned tiling
    triage(records, run) -> Triage          ranked groups (or why there are none)
    triage_lines(store, run_id) -> [str]    what `farm triage RUN` prints

Only what a case *is* makes a predicate (family, dtype, schedule, tiling, extents, layout, special
values, value forms, the standard it asks for); what happened to it (its category, the standard
that failed) describes a group but never defines one: "category precision" covers every precision
failure and no pass, and says nothing of the cause. Broken cases are the pool's, not the
operator's: they are counted on neither side. Pure functions of the records, apart from
triage_lines, which reads them from the store.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from farm.results.store.rows import planted_bug
from farm.results.triage_words import predicate_text
from golden import layouts, soc
from golden.dtypes import numpy_dtype
from golden.inputs import SPECIAL_PLACEMENTS
from suites.tiling import SCHEDULE_IDS, expected_tiling

# The extents and tiling numbers that make "over a threshold" predicates (d1 > 64).
NUMERIC = (
    "rank",
    "numel",
    "d0",
    "d1",
    "d2",
    "row_len",
    "chunk_count",
    "tail_elems",
    "cores_used",
    "big_cores",
)
# Every feature, in the order a group names them; among groups that tell failures from passes
# equally well, the one of the earlier features is named (a schedule before the axes that imply it).
FEATURES = (
    "schedule",
    "family",
    "soc",
    "dtype",
    "narrow_dtype",
    "kind",
    "layer",
    "expected_reason",
    "standard",
    "tiling_key",
    "ragged_tail",
    "full_last_chunk",
    "chunk_count",
    "tail_elems",
    "d0",
    "d1",
    "d2",
    "row_len",
    "cores_used",
    "big_cores",
    "rank",
    "numel",
    "layout",
    "dy_layout",
    "y_layout",
    "out_layout",
    "special",
    "special_at",
    "y_dist",
    "dy_dist",
    "y_values",
    "dy_values",
    "api",
    "axes",
)
_RANK = {name: i for i, name in enumerate(FEATURES)}
TOP = 3  # how many groups a triage names: one per cause
# A group that holds every failure of a better-ranked one takes its place when it scores (F1)
# within this of it: the same cause, told whole (the group covering every failure first).
FOLD_MARGIN = 0.1
INLINE_IDS = 40  # a group of at most this many cases is rerun with -k; a larger one via a file
PAIR_CANDIDATES = 400  # the single predicates (most failures first) that pairs are made of
ALL_FAILED = "every case failed: no shared feature distinguishes them"


@dataclass(frozen=True)
class Predicate:
    feature: str
    op: str  # "=", ">" or "<="
    value: Any

    @property
    def order(self) -> tuple:
        return (_RANK.get(self.feature, len(FEATURES)), self.feature, self.op, str(self.value))

    def holds(self, features: Mapping[str, Any]) -> bool:
        have = features.get(self.feature)
        if have is None:
            return False
        if self.op == "=":
            return bool(have == self.value)
        return have > self.value if self.op == ">" else have <= self.value

    @property
    def text(self) -> str:
        """In the contract's words, the feature's name in brackets (triage_words.py)."""
        return predicate_text(self.feature, self.op, self.value)


@dataclass
class Group:
    predicates: tuple[Predicate, ...]
    failed: int  # failures in the group
    failures: int  # failures of the run (counted: failed outcomes)
    passed: int  # passing cases in the group
    passes: int  # passing cases of the run
    case_ids: list[str]  # every case of the run the group holds (any outcome), sorted
    categories: dict[str, int]  # how the group's failures failed
    rerun: str = ""

    @property
    def text(self) -> str:
        return " with ".join(p.text for p in self.predicates)

    @property
    def score(self) -> float:
        """F1 of the group as a predictor of failure: many failures covered, few passes."""
        return 2 * self.failed / (2 * self.failed + self.passed + (self.failures - self.failed))

    def line(self) -> str:
        """What the group's failures share, with its counts: "108 of 108 failures (108
        precision): <the predicates>; and 8 of 182 passing cases"."""
        how = ", ".join(f"{n} {c}" for c, n in sorted(self.categories.items(), key=_by_count))
        passes = (
            f"{self.passed:,} of {self.passes:,}" if self.passed else f"none of the {self.passes:,}"
        )
        return (
            f"{self.failed:,} of {self.failures:,} failures ({how}): {self.text}; "
            f"and {passes} passing cases"
        )

    def to_json(self) -> dict:
        return {
            "group": self.text,
            "predicates": [
                {"feature": p.feature, "op": p.op, "value": p.value} for p in self.predicates
            ],
            "failed": self.failed,
            "failures": self.failures,
            "passed": self.passed,
            "passes": self.passes,
            "score": round(self.score, 4),
            "categories": self.categories,
            "case_ids": self.case_ids,
            "rerun": self.rerun,
            "line": self.line(),
        }


@dataclass
class Triage:
    run_id: str
    failures: int
    passes: int
    broken: int
    groups: list[Group] = field(default_factory=list)
    why_none: str = ""  # why there are no groups

    def lines(self) -> list[str]:
        if self.why_none:
            return [self.why_none]
        out = []
        for n, group in enumerate(self.groups, 1):
            out.append(f"{n}. {group.line()}")
            out.append(f"   rerun: {group.rerun}")
        if self.broken:
            out.append(f"({self.broken:,} broken cases left out: the pool's, not the operator's)")
        return out

    def to_json(self) -> dict:
        return {
            "run_id": self.run_id,
            "failures": self.failures,
            "passes": self.passes,
            "broken": self.broken,
            "groups": [g.to_json() for g in self.groups],
            "message": self.why_none,
        }


def _by_count(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]


# -- features --------------------------------------------------------------------------------


def features(record: Mapping[str, Any]) -> dict[str, Any]:
    """What the farm records of a case, as named values: its fields, and where the operator runs
    it, the tiling the design plans for it (suites/tiling.py)."""
    case_id = str(record["case_id"])
    expect = record.get("expect") or {}
    shape = [int(d) for d in record.get("shape") or []]
    numel = 1
    for d in shape:
        numel *= d
    out: dict[str, Any] = {
        "family": record.get("family"),
        "soc": record.get("soc"),
        "dtype": record.get("dtype"),
        "schedule": record.get("schedule"),
        "api": record.get("api"),
        "layout": record.get("layout"),
        "special": record.get("special"),
        "y_dist": record.get("y_dist"),
        "dy_dist": record.get("dy_dist"),
        "kind": expect.get("kind"),
        # The layer a case checks on its own; a whole call is "call" (None: a record from before).
        "layer": (record.get("layer") or "call") if "layer" in record else None,
        "standard": expect.get("standard"),
        "expected_reason": expect.get("reason"),
        "rank": len(shape),
        "numel": numel,
        "axes": ",".join(str(a) for a in record.get("axes") or []),
    }
    out["narrow_dtype"] = _itemsize(out["dtype"]) == 2 if out["dtype"] else None
    out.update(_id_features(case_id, str(record.get("special") or "none"), shape))
    out.update(_tiling_features(record, shape))
    return {k: v for k, v in out.items() if v is not None}


def _itemsize(dtype: str) -> int | None:
    try:
        return int(numpy_dtype(dtype).itemsize)
    except (TypeError, ValueError, KeyError):
        return None


def _id_features(case_id: str, special: str, shape: Sequence[int]) -> dict[str, Any]:
    """What only the case id says (suites/case.py Case.id): the special value's placement, the
    value forms' numbers, each tensor's layout."""
    parts = case_id.split("_")
    out: dict[str, Any] = {}
    if len(parts) >= 6:
        for name, text in (("y", parts[4]), ("dy", parts[5])):
            dist = text.removeprefix(f"{name}.")
            if dist.startswith(("range.", "fill.")):
                out[f"{name}_values"] = dist
    rest = "_".join(parts[6:])
    if special != "none":
        out["special_at"] = "random"
        for at in SPECIAL_PLACEMENTS:
            if rest.startswith(f"{special}.{at}"):
                out["special_at"] = at
        token = special + ("" if out["special_at"] == "random" else f".{out['special_at']}")
        rest = rest.removeprefix(token)
    tensors = {"dy": "contiguous", "y": "contiguous", "out": "contiguous"}
    for part in rest.split("_"):
        if part == "strided":
            tensors.update(dy="strided", y="strided")
        for name in tensors:
            if part.startswith(f"{name}."):
                tensors[name] = _layout_kind(part.removeprefix(f"{name}."), shape)
    out.update({f"{name}_layout": layout for name, layout in tensors.items()})
    return out


_VIEW_TEXT = re.compile(r"st(none|-?\d+(?:\.-?\d+)*)(?:\.off(\d+))?\.sz(\d+)")


def _layout_kind(text: str, shape: Sequence[int]) -> str:
    """A tensor's layout as the operator sees it: "contiguous" (by name, or a view with C-order
    strides, golden/layouts.py is_dense), else "strided"."""
    view = _VIEW_TEXT.fullmatch(text)
    if view is None:
        return text if text in layouts.NAMES else "strided"
    strides = () if view[1] == "none" else tuple(int(s) for s in view[1].split("."))
    if len(strides) != len(shape):
        return "strided"  # a perturbed shape (a rejection case): not a dense view of the case's
    parsed = layouts.View(strides, int(view[3]), int(view[2] or 0))
    return "contiguous" if layouts.is_dense(parsed, shape) else "strided"


def _tiling_features(record: Mapping[str, Any], shape: list[int]) -> dict[str, Any]:
    if record.get("schedule") not in SCHEDULE_IDS:
        return {}  # rejected or empty: the operator plans nothing
    soc_name = record.get("soc") or soc.representative_soc(str(record.get("family"))).name
    dtype = str(record.get("dtype"))
    case = SimpleNamespace(shape=tuple(shape), axes=tuple(record.get("axes") or ()), dtype=dtype)
    try:
        plan = expected_tiling(case, soc_name, record.get("layout") == "contiguous")
    except (soc.UnknownSocError, ValueError, ZeroDivisionError):
        return {}
    block_bytes = soc.profile(soc_name).block_bytes
    return {
        "tiling_key": plan["key"],
        "d0": plan["d0"],
        "d1": plan["d1"],
        "d2": plan["d2"],
        "row_len": plan["row_len"],
        "chunk_count": plan["chunk_count"],
        "tail_elems": plan["tail_elems"],
        "cores_used": plan["cores_used"],
        "big_cores": plan["big_cores"],
        "ragged_tail": plan["tail_elems"] * (_itemsize(dtype) or 4) % block_bytes != 0,
        "full_last_chunk": plan["tail_elems"] == plan["block_elems"],
    }


# -- predicates and groups -------------------------------------------------------------------


def _predicates(rows: Sequence[dict[str, Any]], failing: Sequence[bool]) -> dict[Predicate, int]:
    """Every predicate that holds for at least one failure, with the rows it holds for (a bit
    per row). A numeric feature's thresholds are the data's distinct values where a split can
    pay: "> v" just below a failing value, "<= v" at a failing value (any other threshold keeps
    the same failures and more passes)."""
    found: dict[Predicate, int] = {}
    names = sorted({k for r in rows for k in r}, key=lambda f: (_RANK.get(f, len(FEATURES)), f))
    for feature in names:
        where: dict[Any, list[int]] = {}
        failed: set[Any] = set()
        for i, (row, fails) in enumerate(zip(rows, failing, strict=True)):
            value = row.get(feature)
            if value is not None:
                where.setdefault(value, []).append(i)
                if fails:
                    failed.add(value)
        by_value = {value: _bits(indices, len(rows)) for value, indices in where.items()}
        if feature not in NUMERIC:
            found.update((Predicate(feature, "=", v), by_value[v]) for v in failed)
            continue
        distinct = sorted(by_value)
        at_most = list(itertools.accumulate(by_value[v] for v in distinct))
        every = at_most[-1] if at_most else 0
        for i, (below, above) in enumerate(itertools.pairwise(distinct)):
            if above in failed:
                found[Predicate(feature, ">", below)] = every & ~at_most[i]
            if below in failed:
                found[Predicate(feature, "<=", below)] = at_most[i]
    return dict(sorted(found.items(), key=lambda item: item[0].order))


def _bits(indices: Iterable[int], n: int) -> int:
    """The set of row indices as an int, bit i for row i."""
    buffer = bytearray((n + 7) // 8)
    for i in indices:
        buffer[i >> 3] |= 1 << (i & 7)
    return int.from_bytes(buffer, "little")


def triage(records: Iterable[Mapping[str, Any]], run: Mapping[str, Any] | None = None) -> Triage:
    """Rank the conjunctions of at most two predicates by how well they tell the run's failures
    from its passes (F1); ties go to the simpler group, then to the one with fewer passes, then
    by name. One group per cause (_place): a group whose failures are all a better one's is
    folded into it, and one that holds all of a better one's failures, scoring nearly as well,
    takes its place."""
    run = run or {}
    records = list(records)
    judged = [r for r in records if r.get("outcome") in ("passed", "failed")]
    failing = [r["outcome"] == "failed" for r in judged]
    n_fail = sum(failing)
    result = Triage(
        run_id=str(run.get("run_id", "")),
        failures=n_fail,
        passes=len(judged) - n_fail,
        broken=len(records) - len(judged),
    )
    if not n_fail:
        result.why_none = f"no failures{_of(result.run_id)}: nothing to triage"
        return result
    if not result.passes:
        result.why_none = ALL_FAILED
        return result
    # A run without failures (most nightlies) is told so without working out any case's features.
    every = [features(r) for r in records]
    rows = [every[i] for i, r in enumerate(records) if r.get("outcome") in ("passed", "failed")]

    fail_bits = _bits((i for i, f in enumerate(failing) if f), len(failing))
    masks = _predicates(rows, failing)
    order = {p: p.order for p in masks}
    covers = {p: (m & fail_bits).bit_count() for p, m in masks.items()}

    def key(preds: tuple[Predicate, ...], tp: int, n: int) -> tuple:
        fp = n - tp
        return (-2 * tp / (2 * tp + fp + n_fail - tp), len(preds), fp, [order[p] for p in preds])

    ranked: list[tuple[tuple, tuple[Predicate, ...], int]] = [
        (key((p,), covers[p], m.bit_count()), (p,), m) for p, m in masks.items()
    ]
    by_cover = sorted(masks, key=lambda p: (-covers[p], order[p]))
    for a, b in itertools.combinations(by_cover[:PAIR_CANDIDATES], 2):
        if a.feature != b.feature:
            both = masks[a] & masks[b]
            tp = (both & fail_bits).bit_count()
            if tp:
                pair = (a, b) if order[a] < order[b] else (b, a)
                ranked.append((key(pair, tp, both.bit_count()), pair, both))
    ranked.sort(key=lambda item: item[0])

    causes: list[_Cause] = []
    for k, preds, bits in ranked:
        score = -k[0]
        if len(causes) == TOP and score <= min(c.best for c in causes) - FOLD_MARGIN:
            break  # nothing further down can take a cause's place or be one
        _place(causes, _Cause(preds, bits, score, score), fail_bits)
    for cause in causes:
        group = _group(cause.preds, cause.bits, fail_bits, judged, records, every, result, run)
        result.groups.append(group)
    return result


@dataclass
class _Cause:
    """One cause's group as the ranking goes: its predicates, its cases (a bit per judged case),
    its score, and the best score of the groups folded into it."""

    preds: tuple[Predicate, ...]
    bits: int
    score: float
    best: float


def _place(causes: list[_Cause], group: _Cause, fail_bits: int) -> None:
    """Fold a group (ranked below every one in `causes`) into the causes: a group whose failures
    are all a cause's says nothing more of it (a part of the same failures, however few passes
    it has); a group that holds all of a cause's failures and scores within FOLD_MARGIN of the
    cause's best tells it whole and takes its place (several such causes are one); any other
    group is a cause of its own while there are fewer than TOP."""
    failed = group.bits & fail_bits
    if any(failed & ~c.bits == 0 for c in causes):
        return
    whole = [
        i
        for i, c in enumerate(causes)
        if c.bits & fail_bits & ~failed == 0 and group.score > c.best - FOLD_MARGIN
    ]
    if whole:
        group.best = max(causes[i].best for i in whole)
        causes[whole[0]] = group
        for i in reversed(whole[1:]):
            del causes[i]
    elif len(causes) < TOP:
        causes.append(group)


def _group(preds, bits, fail_bits, judged, records, every, result: Triage, run) -> Group:
    members = [judged[i] for i in range(len(judged)) if bits >> i & 1]
    tp = (bits & fail_bits).bit_count()
    ids = sorted(
        str(r["case_id"])
        for r, f in zip(records, every, strict=True)
        if all(p.holds(f) for p in preds)
    )
    group = Group(
        predicates=tuple(preds),
        failed=tp,
        failures=result.failures,
        passed=len(members) - tp,
        passes=result.passes,
        case_ids=ids,
        categories=dict(
            Counter(str(r.get("category")) for r in members if r["outcome"] == "failed")
        ),
    )
    group.rerun = rerun_command(run, ids, len(result.groups) + 1)
    return group


def _of(run_id: str) -> str:
    return f" in run {run_id}" if run_id else ""


# -- rerunning a group -----------------------------------------------------------------------


def keyword_expression(case_ids: Iterable[str]) -> str:
    """The pytest -k expression that selects exactly these cases: a suite item is named
    ``test_x[<case id>]`` (farm/run/plugin.py), and -k matches a word as a substring of the
    item's name, so the bracketed id matches its own item and no other."""
    return " or ".join(f"[{cid}]" for cid in case_ids)


def selection_arguments(run: Mapping[str, Any]) -> list[str]:
    """`farm run`'s arguments for the run's selection: its tier, case files, exploration."""
    selection = run.get("selection") or {"tier": run.get("tier")}
    args: list[str] = []
    if selection.get("tier"):
        args += ["--tier", str(selection["tier"])]
    for path in selection.get("files") or ():
        args += ["--cases", str(path)]
    if selection.get("explore") is not None:
        args += ["--explore", str(selection["explore"])]
        args += ["--explore-count", str(selection.get("explore_count"))]
    return args


def operator_arguments(run: Mapping[str, Any]) -> list[str]:
    """`farm run`'s arguments for the run's operator, where they differ from the defaults."""
    from farm.pool import build
    from farm.util import targets

    args: list[str] = []
    target = run.get("target") or build.DEFAULT_TARGET
    if target != build.DEFAULT_TARGET:
        args += ["--target", str(target)]
    if run.get("backend") and run["backend"] != targets.default_backend(str(target)):
        args += ["--backend", str(run["backend"])]
    bug = planted_bug(run)
    if bug:
        args += ["--plant-bug", bug]
    return args


def group_file(run_id: str, number: int) -> str:
    return f"triage-{run_id}-{number}.json"


def rerun_command(run: Mapping[str, Any], case_ids: Sequence[str], number: int) -> str:
    """One command line that reruns exactly the group's cases: -k over their ids, or for a large
    group its cases written to a case file first (`farm triage RUN --group N -o FILE`)."""
    if len(case_ids) <= INLINE_IDS:
        argv = ["farm", "run", *selection_arguments(run), *operator_arguments(run)]
        return shlex.join([*argv, "--", "-k", keyword_expression(case_ids)])
    run_id = str(run.get("run_id") or "RUN")
    path = group_file(run_id, number)
    write = ["farm", "triage", run_id, "--group", str(number), "-o", path]
    rerun = ["farm", "run", "--cases", path, *operator_arguments(run)]
    return shlex.join(write) + " && " + shlex.join(rerun)


# -- from the store --------------------------------------------------------------------------


def triage_run(store: Any, run_id: str) -> Triage:
    """The triage of a stored run (farm/results/store.py RunStore)."""
    run = store.get_run(run_id)
    if run is None:
        from farm.util.errors import UsageError

        raise UsageError(f"no run {run_id!r} in the store (list them with `farm runs`)")
    return triage(store.results(run_id), run)


def triage_lines(store: Any, run_id: str) -> list[str]:
    """What `farm triage RUN` prints: the ranked groups with their rerun commands, or one line
    saying why there are none. (For `farm run`'s end, summary.json and the report.)"""
    return triage_run(store, run_id).lines()
