"""Which op-api library the acl backend loads on a host with CANN (farm/agent/backends/acl_api.py
_search): the package under test where the farm installed it, and only there; without it, the
first package CANN would look at that is this operator's, never another product's."""

from __future__ import annotations

import pytest

from farm.agent.backends import acl_api
from farm.agent.home_paths import CUSTOM_OPP_ENV, PACKAGE_OPP_ENV
from tests.agent.fake_acl import op_api_library, shared_library


def _op_api(vendor, *, without: tuple[str, ...] = ()) -> None:
    op_api_library(vendor / "op_api" / "lib" / acl_api.OP_API_FILE, without=without)


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


def test_another_products_package_is_passed_over_and_each_one_looked_at_is_named(
    monkeypatch, tmp_path
):
    home = tmp_path / "latest"
    vendors = home / "opp" / "vendors"
    mdc = tmp_path / "mdc opp"  # another product's, first on $ASCEND_CUSTOM_OPP_PATH
    shared_library(mdc / "op_api" / "lib" / acl_api.OP_API_FILE, {"aclnnMdcThing": ""})
    _op_api(vendors / "aaa", without=("aclnnLogSoftmaxBackwardDimsGetWorkspaceSize",))  # seed's
    (vendors / "bbb" / "op_api" / "lib").mkdir(parents=True)
    (vendors / "bbb" / "op_api" / "lib" / acl_api.OP_API_FILE).write_text("not a library")
    (vendors / "ccc").mkdir(parents=True)  # a package with no op-api at all
    (vendors / "config.ini").write_text("load_priority=customize\n")  # a file, not a package
    for name in (acl_api.ENV_LIB_DIR, "ASCEND_OPP_PATH", PACKAGE_OPP_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    monkeypatch.setenv(CUSTOM_OPP_ENV, f"{mdc}::{vendors / 'aaa'}")
    with pytest.raises(acl_api.AclLibraryError) as info:
        acl_api._search()
    said = str(info.value)
    assert "\n" not in said
    for why in (
        f"{mdc}: libcust_opapi.so does not define aclnnLogSoftmaxBackwardGetWorkspaceSize (and 3 "
        "more of its entries): another operator's; ",
        f"{vendors / 'aaa'}: libcust_opapi.so does not define "
        "aclnnLogSoftmaxBackwardDimsGetWorkspaceSize: another operator's; ",
        f"{vendors / 'bbb'}: libcust_opapi.so cannot be read (not an ELF file); ",
        f"{vendors / 'ccc'}: no op_api/lib/libcust_opapi.so; install the LogSoftmaxGrad package",
    ):
        assert why in said, (why, said)
    assert said.count(str(vendors / "aaa")) == 1  # on both lists, looked at once
    _op_api(vendors / "customize")  # ours, last in CANN's order: still the one taken
    assert acl_api._search()[1] == vendors / "customize/op_api/lib" / acl_api.OP_API_FILE


def test_the_dynamic_symbols_are_read_from_the_file(tmp_path):
    lib = shared_library(
        tmp_path / "libx.so",
        {
            "visible": "",
            "hidden": '__attribute__((visibility("hidden"))) long hidden() { return 1; }',
            "weak": "__attribute__((weak)) long weak() { return 2; }",
            "data": "long data = 3;",
            "calls_out": "extern long elsewhere(void); long calls_out() { return elsewhere(); }",
        },
    )
    found = acl_api.dynamic_functions(lib)
    assert {"visible", "weak", "calls_out"} <= found
    assert not {"hidden", "data", "elsewhere"} & found  # hidden, not a function, undefined
