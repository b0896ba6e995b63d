"""The columnar qrels reader (``_read_plain_qrels``, the fast path of a TREC golden set's qrels)
against the line reader it must equal: the same judgments, lines, query order, errors and
warnings on any file, and an answer of its own for the plain files that are the common case."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalret.data.goldenset import GoldenSetScan
from evalret.data.goldenset.read import _read_plain_qrels, _read_qrels_rows
from test_fuzz_readers import FUZZ


def _scan(path: Path, columnar: bool) -> object:
    """What the qrels reader makes of ``path``, as plain values."""
    b = GoldenSetScan()
    order = _read_qrels_rows(b, path, columns=4, header=False, columnar=columnar)
    return (order, b.qrels, list(b.qrels), b.qrel_where, b.problems, b.warnings)


@st.composite
def qrels_bytes(draw: st.DrawFn) -> bytes:
    """Qrels lines as tools write them (often nothing else) and as they should not: 3 or 5
    fields, ragged spacing, tabs, vertical tabs, comments, blank lines, repeated judgments,
    non-ASCII ids, grades negative, decimal, signed, out of range or not numbers; CRLF, a
    byte-order mark, a line that is not UTF-8."""
    hostile = draw(st.booleans())

    def pick(plain: list[str], odd: list[str]) -> str:
        """One of ``plain``, or now and then (in a hostile file) one of ``odd``."""
        if hostile and draw(st.integers(0, 5)) == 0:
            return draw(st.sampled_from(odd))
        return draw(st.sampled_from(plain))

    lines = []
    for _ in range(draw(st.integers(0, 8))):
        fields = [
            pick(["q1", "q2", "q10"], ["é", "#q", "q\x1f"]),
            pick(["0", "Q0"], ["x", ""]),
            pick(["d1", "d2", "D1", "d10"], ["日本", "d\x85x"]),
            pick(["0", "1", "-1", "+2", "3", "-1000"], ["1.5", "-0.5", "1001", "x", "٣", "1_0"]),
        ]
        fields = fields[: int(pick(["4"], ["3", "5"]))]
        if len(fields) == 4 and pick(["4"], ["5"]) == "5":
            fields.append("5")
        line = pick([" ", "\t"], ["  ", " \t", "\x0b", "\x0c", "\xa0"]).join(fields)
        line = pick(["", " ", "\t"], ["\r"]) + line + pick(["", " "], ["\r"])
        lines.append(pick([line, line, line, "", "   "], ["# a comment", "\x1c"]))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    data = "".join(line + end for line in lines).encode()
    if data and draw(st.booleans()):
        data = data[: -len(end)]
    if draw(st.integers(0, 5)) == 0:
        data = b"\xef\xbb\xbf" + data
    if pick(["no"], ["yes"]) == "yes":
        data += b"q1 0 d\xff 1\n"  # not UTF-8
    return data


@FUZZ
@given(data=qrels_bytes())
def test_the_columnar_qrels_reader_equals_the_line_reader(data: bytes) -> None:
    """Whatever the bytes, the qrels read as the line reader reads them."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "qrels.txt"
        path.write_bytes(data)
        assert _scan(path, columnar=True) == _scan(path, columnar=False)


@pytest.mark.parametrize(
    "data",
    [
        b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n",
        b"\xef\xbb\xbfq1 0 d1 1\r\n\r\nq2\t0\td1  -3 \r\n",  # BOM, CRLF, a blank line, ragged
        b"q1 0 d1 1\n   \nq1 0 d2 +2",  # no newline at the end
    ],
)
def test_the_columnar_qrels_reader_answers_for_plain_files(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "qrels.txt"
    path.write_bytes(data)
    assert _read_plain_qrels(GoldenSetScan(), path, 4) is not None
    assert _scan(path, columnar=True) == _scan(path, columnar=False)


@pytest.mark.parametrize(
    "data",
    [
        b"# comment\nq1 0 d1 1\n",
        b"q1 0 d1\n",  # 3 fields
        b"q1 0 d1 1 5\n",  # 5 fields
        b"q1 0 d1 1.5\n",  # a decimal grade: truncated, with a warning
        b"q1 0 d1 x\n",  # not a number
        b"q1 0 d1 1001\n",  # out of range
        b"q1 0 d1 1\nq1 0 d1 2\n",  # a judgment twice
        "q1 0 é 1\n".encode(),  # not ASCII
        b"q1 0 d1\x0b1\n",  # a vertical tab
        b"q1 0 d\xff 1\n",  # not UTF-8
        b"",
        b"\n \n",
    ],
)
def test_the_columnar_qrels_reader_declines_what_is_not_plain(tmp_path: Path, data: bytes) -> None:
    """Each feature outside the plain form is left to the line reader (which names its line)."""
    path = tmp_path / "qrels.txt"
    path.write_bytes(data)
    b = GoldenSetScan()
    assert _read_plain_qrels(b, path, 4) is None
    assert not b.qrels and not b.qrel_where and not b.problems


def test_a_missing_qrels_file_is_the_line_readers_problem(tmp_path: Path) -> None:
    path = tmp_path / "absent.txt"
    assert _scan(path, columnar=True) == _scan(path, columnar=False)
    assert _read_plain_qrels(GoldenSetScan(), path, 4) is None
