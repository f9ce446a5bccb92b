"""dist/op's packages are checked against their own manifest before they are used again: one
that does not match (cut short on the disk) is said in one line and built again."""

from __future__ import annotations

import json

import pytest

from farm.pool import build
from farm.pool.deploy import package_problem
from farm.util.errors import ConfigError


def _files(payload: bytes) -> dict[str, bytes]:
    files = {"lib/liblsg_twin.so": payload, "include/lsg_twin.h": b"/* h */\n"}
    manifest = {"name": "logsoftmaxgrad", "target": "twin", "files": build.file_entries(files)}
    files["manifest.json"] = json.dumps(manifest).encode()
    return files


def test_a_cached_package_cut_short_is_said_in_one_line_and_written_again(tmp_path, capsys):
    path = tmp_path / "logsoftmaxgrad-0.1.0-twin.tar.gz"
    files = _files(b"\x7fELF" + bytes(range(256)) * 256)
    build.write_archive(path, files)
    assert package_problem(path) is None
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert package_problem(path) is not None
    capsys.readouterr()
    build.write_archive(path, files)
    assert path.read_bytes() == data and package_problem(path) is None
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"note: {path}: it does not read whole (")
    assert line.endswith("; the cached package is built again")
    # An older build of other sources is replaced without a word: nothing was wrong with it.
    build.write_archive(path, _files(b"\x7fELF other"))
    assert capsys.readouterr().err == ""


def test_a_package_whose_file_does_not_match_its_manifest_is_named(tmp_path):
    files = _files(b"\x7fELF real")
    files["lib/liblsg_twin.so"] = b"\x7fELF changed"
    path = build.write_archive(tmp_path / "p.tar.gz", files)
    assert package_problem(path) == ("lib/liblsg_twin.so does not match its sha256 in the manifest")


def test_a_run_given_a_damaged_package_stops_before_any_host(tmp_path):
    from farm.run import prepare

    path = build.write_archive(tmp_path / "p.tar.gz", _files(b"\x7fELF real"))
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ConfigError) as caught:
        prepare.prepare_pool(run_dir=tmp_path / "run", state_dir=tmp_path / "state", package=path)
    message = str(caught.value)
    assert message.startswith(f"operator package {path}: it does not read whole (")
    assert message.endswith("; delete it and build it again (farm build)")
    assert "\n" not in message
    assert not (tmp_path / "state" / "quarantine.json").exists()
