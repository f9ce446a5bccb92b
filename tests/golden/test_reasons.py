"""The one table of reasons (op/tiling/reasons.def): the operator's C side and the judge read the
same file, so an id, a name, a status or the reason line cannot drift between them; and the line
is read strictly (golden/reasons.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from golden import contract, reasons
from tests.requirements import need

REPO = Path(__file__).resolve().parents[2]
TILING = REPO / "op" / "tiling"


@pytest.fixture(scope="module")
def c_side(tmp_path_factory: pytest.TempPathFactory) -> str:
    """What tests/golden/reasons_driver.cpp prints: the table as the operator compiles it."""
    cxx = shutil.which("c++") or shutil.which("g++")
    need(cxx is not None, "a C++ compiler")
    assert cxx is not None
    out = tmp_path_factory.mktemp("reasons") / "reasons_driver"
    subprocess.run(
        [cxx, "-std=c++17", "-I", str(TILING), "-o", str(out)]
        + [str(Path(__file__).with_name("reasons_driver.cpp")), str(TILING / "tiling.cpp")],
        check=True,
        timeout=300,
    )
    return subprocess.run([str(out)], capture_output=True, text=True, check=True).stdout


def test_the_c_side_compiles_the_table_the_judge_reads(c_side: str) -> None:
    rows = re.findall(r"^row (\d+) (\w+) (\d+)\|(.*)$", c_side, flags=re.M)
    assert {int(i): (name, int(status)) for i, name, status, _ in rows} == {
        r.id: (r.name, r.status) for r in reasons.TABLE.values()
    }
    # Every enum name the code uses is a reason of the table, and no reason lacks one.
    named = sorted(int(i) for i in re.findall(r"^named (\d+)$", c_side, flags=re.M))
    assert named == sorted(reasons.TABLE)
    # An id outside the table has no name, and is an inner error.
    assert "unknown '' 561000" in c_side
    # The line the operator writes is the one the judge reads, for every reason.
    for rid, _, _, line in rows:
        said = reasons.read_line(f"EZ1001: {line} [aclnnLogSoftmaxBackward]")
        assert said is not None and said.reason.id == int(rid) and said.message == "why", line


def test_the_contract_s_reasons_are_the_table_s_first_hundred() -> None:
    assert contract.REASONS == {
        r.name: (r.id, r.status) for r in reasons.TABLE.values() if r.id < reasons.OWN_FROM
    }
    assert contract.REASONS["null_tensor"] == (1, contract.ACLNN_ERR_PARAM_NULLPTR)
    assert {s for n, (_, s) in contract.REASONS.items() if n not in ("ok", "null_tensor")} == {
        contract.ACLNN_ERR_PARAM_INVALID
    }
    # The ENUM column is the name in capitals (lsg_types.h: LSG_REASON_<ENUM>).
    rows = re.findall(r"^LSG_REASON\(\d+, (\w+), (\w+),", reasons.TABLE_FILE.read_text(), re.M)
    assert rows and all(enum == name.upper() for enum, name in rows)


LINE = "LogSoftmaxGrad: status 161002 (reason 9 bf16_unsupported_on_soc): bf16 on 310B [aclnnX]"


@pytest.mark.parametrize(
    "message",
    [
        LINE.replace("(reason 9 ", "(why 9 "),  # other words
        LINE.replace(" bf16_unsupported_on_soc)", ")"),  # no name: the old line
        LINE.replace("reason 9 ", "reason 8 "),  # the id of another name
        LINE.replace("161002", "161001"),  # a status that is not the reason's
        LINE.replace("reason 9 bf16_unsupported_on_soc", "reason 42 whatever"),  # no such id
        LINE.removesuffix(" [aclnnX]"),  # not the whole line
        LINE + "\nEZ9999: an error after it",  # not the call's own last line
        "",
    ],
)
def test_a_line_out_of_the_format_or_the_table_has_no_reason(message: str) -> None:
    assert reasons.read_line(message) is None


def test_the_last_line_names_the_reason() -> None:
    said = reasons.read_line(
        "EZ1001: " + LINE.replace("9 bf16_unsupported_on_soc", "4 x") + "\n" + LINE
    )
    assert said is not None
    assert (said.status, said.reason.name, said.message, said.api) == (
        161002,
        "bf16_unsupported_on_soc",
        "bf16 on 310B",
        "aclnnX",
    )
    assert reasons.format_line("null_tensor", "m", "aclnnY") == (
        "LogSoftmaxGrad: status 161001 (reason 1 null_tensor): m [aclnnY]"
    )


def test_a_table_row_out_of_form_is_refused_naming_the_line(tmp_path: Path) -> None:
    table = tmp_path / "reasons.def"
    table.write_text('/* c */\nLSG_REASON(0, OK, ok, 0, "accepted")\nLSG_REASON(1, X)\n')
    with pytest.raises(RuntimeError, match=r"reasons.def line 3: 'LSG_REASON\(1, X\)' is not"):
        reasons._read(table)
    with pytest.raises(RuntimeError, match="cannot be read .* deploy the whole agent bundle"):
        reasons._read(tmp_path / "absent.def")
