"""One deciding layer of the operator on its own (suites/matrix_layers.py): its OpDef registration
judged whole against the contract's table, and its host tiling function alone, the registration
out of the way, refusing what the contract refuses."""

import pytest

pytestmark = pytest.mark.farm_cases(layers=True)  # the farm plugin's cases of this module


def test_layer(case, farm_run, check_record):
    check_record(farm_run(case))
