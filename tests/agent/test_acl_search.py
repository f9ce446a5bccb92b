"""Which op-api library the acl backend loads on a host with CANN (farm/agent/backends/acl_api.py
_search): the package under test where the farm installed it, and only there."""

from __future__ import annotations

import pytest

from farm.agent.backends import acl_api
from farm.agent.home_paths import CUSTOM_OPP_ENV, PACKAGE_OPP_ENV


def _op_api(vendor) -> None:
    lib = vendor / "op_api" / "lib"
    lib.mkdir(parents=True)
    (lib / acl_api.OP_API_FILE).write_bytes(b"")


def test_the_package_under_test_or_nothing_never_another_that_cann_has(monkeypatch, tmp_path):
    home = tmp_path / "latest"
    _op_api(home / "opp" / "vendors" / "customize")  # an older install of the operator
    installed = tmp_path / "versions" / "pkg" / "opp" / "vendors" / "customize"
    for name in (acl_api.ENV_LIB_DIR, "ASCEND_OPP_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    monkeypatch.setenv(CUSTOM_OPP_ENV, str(installed))
    monkeypatch.setenv(PACKAGE_OPP_ENV, str(installed))
    with pytest.raises(acl_api.AclLibraryError, match="the package under test has no op_api/lib"):
        acl_api._search()  # its install put nothing there: CANN's vendors' is not it
    _op_api(installed)
    assert acl_api._search() == (home / "lib64", installed / "op_api/lib" / acl_api.OP_API_FILE)
    # Without the farm's install (a package installed by hand), CANN's own order.
    monkeypatch.delenv(PACKAGE_OPP_ENV)
    monkeypatch.delenv(CUSTOM_OPP_ENV)
    assert acl_api._search()[1] == home / "opp/vendors/customize/op_api/lib" / acl_api.OP_API_FILE
