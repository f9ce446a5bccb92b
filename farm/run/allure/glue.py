"""Allure annotations for one case: `annotate(record)` is called from inside the running pytest
test of a case (the farm's pytest plugin calls it once per case, before asserting the verdict).
It sets labels, parameters, description and attachments through allure.dynamic / allure.attach.
The parts it is made of, by job:

    farm/run/allure/categories.py    the failure message and Allure's categories it puts a case in
    farm/run/allure/description.py  the case's description
    farm/run/allure/attachments.py   the plot's data, metrics.json, worst elements.csv
    farm/run/allure/output.py        how allure-pytest writes what this module gives it
    farm/run/allure/environment.py   the run-level files of the allure-results (not per case)

Identity in Allure (ARCHITECTURE "Allure identity"): the test-case id is the case's own, the
same on both families (farm/run/allure/identity.py), so a case's Environments tab holds that case
alone; the SoC family is a *non-excluded* parameter,
so the same case on the two families never merges into one history entry; the case itself (the
suites' parametrize argument, hidden, see farm/run/allure/output.py) makes the rest of the
history id; host and seed are *excluded* parameters (shown, but not part of the history id). What
the case is (dtype, shape, axes, distributions, layout) is the description's first line
(allure_description.case_line), not parameters: Allure 3 repeats every shown parameter of every
case three times in each of its search indexes (one per environment and one for all), ~1.7 KB a
case in all. The slot, the attempts and the timings are in the description's last line
(allure_description.run_line). The `family` label selects the Allure 3 environment
(reports/allurerc.mjs).

Severity (a property of the case, not of its outcome, so that it is stable in history):
  critical  rejection cases (the parameter-check contract, wrong acceptance is silent corruption)
            and cases with NaN/inf inputs (the positions must match exactly)
  normal    every other case
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from farm.run.allure.attachments import (
    PLOT_DATA_NAME,
    PLOT_ERROR_NAME,
    PLOT_SAMPLE_ONE_IN,
    detailed,
    json_default,
    metrics_json,
    plot_data,
    plot_error_text,
    wants_metrics,
    wants_plot,
    worst_csv,
)
from farm.run.allure.description import description, host_name
from farm.run.allure.environment import ENVIRONMENT_LABEL, EPIC
from farm.run.allure.identity import allure_test_case_id
from farm.run.allure.output import Annotations, apply_annotations
from farm.run.allure.repro_line import repro_command
from suites.case import DEPARTS

_NAN_INF_WORDS = ("nan", "inf")


# --------------------------------------------------------------------------- classification


def is_rejection(record: Mapping) -> bool:
    return (record.get("expect") or {}).get("kind") == "reject"


def has_special_values(record: Mapping) -> bool:
    special = str(record.get("special") or "").lower()
    dists = f"{record.get('y_dist') or ''} {record.get('dy_dist') or ''}".lower()
    return special not in ("", "none") or any(w in dists for w in _NAN_INF_WORDS)


def handles_nan_inf(record: Mapping) -> bool:
    text = " ".join(str(record.get(k) or "") for k in ("special", "y_dist", "dy_dist")).lower()
    return any(w in text for w in _NAN_INF_WORDS) or "mask" in text


def features(record: Mapping) -> list[str]:
    """The Allure feature of a case: one, precision or rejection. The report's tree groups by
    feature, then story: a case with two features would sit in two groups, and each
    environment's header, their sum, would count it twice."""
    return ["rejection" if is_rejection(record) else "precision"]


def aspects(record: Mapping) -> list[str]:
    """What else a case exercises (tiling, special values, strided, empty): its tags, by which
    the report's tree is filtered, never grouped."""
    out: list[str] = []
    suite = str(record.get("suite") or "")
    case_id = str(record.get("case_id") or "")
    if suite == "tiling" or case_id.startswith("tiling") or record.get("feature") == "tiling":
        out.append("tiling")
    if has_special_values(record):
        out.append("special values")
    if record.get("layout") == "strided":
        out.append("strided")
    if record.get("schedule") == "EMPTY" or 0 in (record.get("shape") or []):
        out.append("empty")
    return out


def story(record: Mapping) -> str:
    if is_rejection(record):
        return str((record.get("expect") or {}).get("reason") or "rejection")
    return str(record.get("schedule") or "unknown schedule")


def severity(record: Mapping) -> str:
    if is_rejection(record) or handles_nan_inf(record):
        return "critical"
    return "normal"


DEPARTS_TAG = "departs from its source"


def departs(record: Mapping) -> bool:
    """Whether an outside source expected other than the contract: its note says so. A note that
    only says what the farm could not express (an importer's) is shown, not tagged."""
    return DEPARTS in str(record.get("note") or "")


def case_annotations(
    record: Mapping, *, plot_one_in: int = PLOT_SAMPLE_ONE_IN, repro: str = ""
) -> Annotations:
    """The title, labels, parameters and description of one case's Allure result; ``repro``:
    the `farm repro` line of the case (farm/run/allure/repro_line.py), shown when it did not
    pass."""
    case_id = str(record.get("case_id", ""))
    family = str(record.get("family", ""))
    labels = [("epic", EPIC)] + [("feature", f) for f in features(record)]
    labels += [("story", story(record)), ("severity", severity(record))]
    labels.append((ENVIRONMENT_LABEL, family))
    if record.get("soc"):
        labels.append(("soc", str(record["soc"])))
    # The tags are what else the case exercises (aspects). No tag repeats the family (the
    # environment), the dtype (the case id and the description) or the schedule (the story):
    # the report repeats every tag of every case in its trees and search indexes.
    labels += [("tag", aspect) for aspect in aspects(record)]
    if departs(record):
        labels.append(("tag", DEPARTS_TAG))

    # Identity: the family and the case (below) make the history id.
    parameters = [("family", family, False)]
    # The suites parametrize on the Case object: allure-pytest adds it as a non-excluded "case"
    # parameter showing the Case repr, and the history id takes its original value. Show the case
    # id instead: allure-pytest then changes only the displayed value, never the history id nor
    # `excluded`. (A test without that argument gets "case" as a new, excluded parameter.)
    # It is hidden as it is written (farm/run/allure/output.py): the case id is the title.
    parameters.append(("case", case_id, True))
    # Shown, but not identity.
    parameters.append(("host", host_name(record), True))
    hostname = record.get("hostname") or record.get("host")
    if hostname and str(hostname) != host_name(record):
        parameters.append(("hostname", str(hostname), True))
    parameters.append(("seed", str(record.get("seed", "")), True))
    # The slot, the attempts and the timings are in the description's last line (run_line), not
    # parameters: the report repeats every parameter of every case in its search indexes.
    description_text = description(record, detailed=detailed(record, plot_one_in), repro=repro)
    return Annotations(
        case_id, labels, parameters, description_text, allure_test_case_id(case_id, family)
    )


def annotate(
    record: Mapping,
    *,
    plot_one_in: int = PLOT_SAMPLE_ONE_IN,
    run_options: Mapping[str, Any] | None = None,
) -> None:
    """Label, parametrise and attach one case's result in the running Allure test.
    ``run_options``: the run's package and pool as `farm repro` takes them
    (farm/run/allure/repro_line.py run_options); with them, a case that did not pass has its
    `farm repro` line."""
    import allure

    repro = repro_command(record, run_options) if run_options is not None else ""
    apply_annotations(case_annotations(record, plot_one_in=plot_one_in, repro=repro))

    if wants_metrics(record, plot_one_in):
        text = metrics_json(record)
        if text:
            allure.attach(text, name="metrics.json", attachment_type=allure.attachment_type.JSON)
    if record.get("outcome") != "passed":
        table = worst_csv(record)
        if table:
            allure.attach(
                table, name="worst elements.csv", attachment_type=allure.attachment_type.CSV
            )
    if wants_plot(record, plot_one_in):
        # The PNG is drawn by the report step (farm/run/case_plots.py), not here.
        try:
            data = json.dumps(plot_data(record), separators=(",", ":"), default=json_default)
        except Exception as exc:  # noqa: BLE001 - a plot must never change a case's verdict
            allure.attach(
                plot_error_text(exc),
                name=PLOT_ERROR_NAME,
                attachment_type=allure.attachment_type.TEXT,
            )
        else:
            allure.attach(data, name=PLOT_DATA_NAME, attachment_type=allure.attachment_type.JSON)
