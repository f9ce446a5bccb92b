"""Allure's categories of the farm's failures, and the failure message that puts a case in one.

The farm's pytest plugin makes a case's failure message start with `failure_message(record)`'s
prefix "[<category>] " (CATEGORY_PREFIXES); Allure's categories (CATEGORIES) match on that
prefix, with or without the exception type pytest/allure-pytest put in front ("AssertionError: ",
"Failed: "). farm/run/allure/environment.py writes them into the allure-results.
"""

from __future__ import annotations

from collections.abc import Mapping

from farm.agent.outcome import CATEGORIES as OUTCOME_CATEGORIES

# The category of a failed record -> the prefix its failure message must start with.
CATEGORY_PREFIXES = {category: f"[{category}] " for category in OUTCOME_CATEGORIES}

# Allure categories (Allure 2 categories.json format; Allure 3 reads the same keys as its
# compatibility form). reports/categories.json is this list written out (a test keeps them equal).
# The regex allows an exception-type prefix such as "AssertionError: " before the category prefix;
# [\s\S]* makes it work both as Allure 2's full match and Allure 3's search.
_TYPE = r"^(?:[\w.]+: )?"


def _rx(*cats: str) -> str:
    alts = "|".join(c for c in cats)
    return _TYPE + r"\[(?:" + alts + r")\] [\s\S]*"


CATEGORIES = [
    {"name": "Precision failure", "messageRegex": _rx("precision"), "matchedStatuses": ["failed"]},
    {
        "name": "Unexpected acceptance",
        "messageRegex": _rx("unexpected_acceptance"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Unexpected rejection or wrong status",
        "messageRegex": _rx("unexpected_rejection", "wrong_status"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Rejection whose reason cannot be read (never judged by its status alone)",
        "messageRegex": _rx("reason_unreadable"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Operator crash",
        "messageRegex": _rx("crash"),
        "matchedStatuses": ["failed", "broken"],
    },
    {
        "name": "Tiling differs from the design, or another suite check",
        "messageRegex": _rx("tiling", "check"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Hang (timed out on two hosts)",
        "messageRegex": _rx("hang"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Not run (devices held by another run)",
        "messageRegex": _rx("not_run"),
        "matchedStatuses": ["broken"],
    },
    {
        "name": "Out of memory (the case needs more than its host has)",
        "messageRegex": _rx("out_of_memory"),
        "matchedStatuses": ["broken"],
    },
    {
        "name": "Write outside the output",
        "messageRegex": _rx("out_of_bounds"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Workspace differs from the aclnn layer's design",
        "messageRegex": _rx("workspace"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Resource leak (handles the operator left alive)",
        "messageRegex": _rx("resource_leak"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Tiling mismatch (host tiling function against the shared plan)",
        "messageRegex": _rx("tiling_mismatch"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Kernel fault (emulated device)",
        "messageRegex": _rx("kernel_fault"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Emulation policy (CANN accepts it, the emulation refuses it)",
        "messageRegex": _rx("emulation_policy"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "OpDef registration departs from the contract's table",
        "messageRegex": _rx("registration"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Graph inference departs from the contract's",
        "messageRegex": _rx("inference"),
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Layer not available on the host (not checked)",
        "messageRegex": _rx("not_available"),
        "matchedStatuses": ["broken"],
    },
    {
        "name": "Infrastructure",
        "messageRegex": _rx("infrastructure"),
        "matchedStatuses": ["broken", "failed"],
    },
]


def failure_message(record: Mapping) -> str:
    """The one-line failure message: the category prefix, then the record's message."""
    cat = record.get("category") or (
        "infrastructure" if record.get("outcome") == "broken" else "precision"
    )
    prefix = CATEGORY_PREFIXES.get(cat, f"[{cat}] ")
    msg = " ".join(str(record.get("message") or "").split())  # one line
    return prefix + (msg or f"{record.get('case_id', '?')} {record.get('outcome', '')}").strip()
