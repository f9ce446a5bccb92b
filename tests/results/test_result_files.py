"""An allure-results directory's result files, listed and read (farm/run/result_files.py)."""

from __future__ import annotations

from farm.run.result_files import read_file, result_files


def test_result_files_are_the_results_in_name_order(tmp_path):
    for name in ("b-result.json", "a-result.json", "c-attachment.json", "d-result.json.tmp"):
        (tmp_path / name).write_bytes(b"{}")
    (tmp_path / "e-container.json").write_bytes(b"{}")
    assert result_files(tmp_path) == [
        str(tmp_path / "a-result.json"),
        str(tmp_path / "b-result.json"),
    ]
    assert result_files(tmp_path / "missing") == []
    assert result_files(tmp_path / "a-result.json") == []  # not a directory


def test_read_file_reads_the_whole_file(tmp_path):
    path = tmp_path / "big-result.json"
    data = bytes(range(256)) * 1000  # more than one read of the operating system
    path.write_bytes(data)
    assert read_file(path) == data
    assert read_file(str(path)) == data
    (tmp_path / "empty").touch()
    assert read_file(tmp_path / "empty") == b""
