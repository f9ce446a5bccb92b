"""The one skip-or-fail rule for tests that need a real component.

Without the component a test skips on a developer's machine; when the environment variable that
CI sets is on (FARM_REQUIRE_ALL for node/Allure/Chromium, FARM_REQUIRE_SSH or FARM_REQUIRE_ALL for
sshd) a missing component fails the test instead, so CI can never pass by skipping.
"""

from __future__ import annotations

import os
import shutil

import pytest


def _on(name: str) -> bool:
    return os.environ.get(name, "").strip() not in ("", "0", "false", "no")


def need(condition: bool, what: str, *, required_by: tuple[str, ...] = ("FARM_REQUIRE_ALL",)):
    if condition:
        return
    on = [name for name in required_by if _on(name)]
    if on:
        pytest.fail(f"{what} is required ({on[0]} is set: these tests must run)", pytrace=False)
    pytest.skip(f"{what} is not available")


def need_sshd() -> None:
    from farm.pool.lab.core import sshd_path

    where = os.environ.get("FARM_SSHD") or "/usr/sbin/sshd"
    need(
        sshd_path() is not None,
        f"OpenSSH server ({where}): apt-get install openssh-server",
        required_by=("FARM_REQUIRE_SSH", "FARM_REQUIRE_ALL"),
    )


def need_allure() -> None:
    from farm.run.allure.process import REPORTS_DIR, allure_available

    need(
        allure_available(REPORTS_DIR),
        f"node and {REPORTS_DIR / 'node_modules'} (run `npm ci` in reports/)",
    )


def need_chromium() -> str:
    names = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
    path = next(filter(None, map(shutil.which, names)), None)
    need(path is not None, "chromium (apt-get install chromium)")
    assert path is not None  # need() has failed or skipped the test otherwise
    return path
