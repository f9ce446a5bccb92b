"""Paths given relative to the host user's home are made absolute there by the agent, which
runs in its bundle's directory (farm/agent/home_paths.py)."""

from __future__ import annotations

from farm.agent import home_paths


def test_relative_paths_are_the_homes_and_absolute_ones_stay(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert home_paths.from_home("lsg-farm/locks") == f"{tmp_path}/lsg-farm/locks"
    assert home_paths.from_home("/srv/lsg") == "/srv/lsg"
    env = {home_paths.CUSTOM_OPP_ENV: "lsg-farm/versions/x/opp/vendors/customize::/opt/opp"}
    home_paths.custom_opp_from_home(env)
    assert env[home_paths.CUSTOM_OPP_ENV] == (
        f"{tmp_path}/lsg-farm/versions/x/opp/vendors/customize::/opt/opp"
    )
    env = {home_paths.PACKAGE_OPP_ENV: "lsg-farm/versions/x/opp/vendors/customize"}
    home_paths.custom_opp_from_home(env)
    assert (
        env[home_paths.PACKAGE_OPP_ENV] == f"{tmp_path}/lsg-farm/versions/x/opp/vendors/customize"
    )
    empty: dict[str, str] = {}
    home_paths.custom_opp_from_home(empty)
    assert empty == {}
