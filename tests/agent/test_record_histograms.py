"""The histograms a record's metrics carry are typed as the record's own fields are: the
dispatcher (farm/agent/record.py parse_record) takes an agent's record with them as the judge
makes them and refuses one whose histogram has another form, in one line naming the field."""

from __future__ import annotations

import json

import numpy as np
import pytest

from farm.agent.record import parse_record
from farm.util.errors import ProtocolError
from golden.judge import judge_case


def _record() -> dict:
    rng = np.random.default_rng(2)
    dy = rng.standard_normal((2, 9)).astype(np.float32)
    y = np.log(rng.dirichlet(np.ones(9), size=2)).astype(np.float32)
    g = dy.astype(np.float64) - np.exp(y.astype(np.float64)) * dy.sum(-1, keepdims=True)
    metrics = judge_case(dy, y, g.astype(np.float32), (-1,), "float32").metrics
    return json.loads(json.dumps({"outcome": "passed", "metrics": metrics}))


def test_a_record_with_every_elements_error_over_its_bound_is_taken():
    rec = _record()
    assert sum(rec["metrics"]["bound_hist"]["counts"]) + rec["metrics"]["bound_hist"]["zeros"] == 18
    assert parse_record(rec, "the agent on h")["metrics"] == rec["metrics"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("counts", [1, "2"]), ("log2_lo", -36.5), ("zeros", None)],
)
def test_a_histogram_of_another_form_is_refused_by_name(field, value):
    rec = _record()
    rec["metrics"]["bound_hist"][field] = value
    with pytest.raises(ProtocolError, match=rf"field metrics\.bound_hist\.{field} is .*redeploy"):
        parse_record(rec, "the agent on h")
    rec = _record()
    rec["metrics"]["bound_hist"] = [1, 2]
    with pytest.raises(
        ProtocolError, match=r"field metrics\.bound_hist is \[1, 2\], not an object"
    ):
        parse_record(rec, "the agent on h")
