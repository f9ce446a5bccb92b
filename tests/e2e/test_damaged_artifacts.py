"""A deployed file damaged on a host is deployed again, in one line naming it, and the run is
green: before, the version directory's marker vouched for a library cut short on the host's
disk, the host failed its canary on every run from then on (quarantined for good: nothing ever
unpacked it again) and no message named the file."""

from __future__ import annotations

import os


def test_a_deployed_library_cut_short_is_deployed_again_and_the_next_run_is_green(farm):
    first = farm.run_tier(k="4x1x33")
    assert first.code == 0, first.text
    hosts = farm.runs / "hosts"
    (library,) = (hosts / "emu-a2-01" / "versions").glob("*/lib/liblsg_ascendc_cpu.so")
    size = library.stat().st_size
    os.truncate(library, size // 2)  # the local hosts share its inode: every host's copy

    again = farm.run_tier(k="4x1x33")
    assert again.code == 0, again.text
    assert again.summary["outcomes"] == first.summary["outcomes"]
    notes = [line for line in again.text.splitlines() if "did not match its sha256" in line]
    assert any(str(library) in line for line in notes), again.text
    for line in notes:
        assert line.startswith("note     host emu-"), line
        assert line.endswith("-ascendc-cpu.tar.gz deployed again"), line
    assert library.stat().st_size == size
    assert again.quarantine() == {}
