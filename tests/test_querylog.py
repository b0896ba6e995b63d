"""data/querylog.py: text, JSONL, CSV and gzipped logs; counts, timestamps and kept fields; every
bad line named by file and line without quoting it, or skipped and counted."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from evalret.data.querylog import MAX_LINE_BYTES, LogFormat, read_log
from evalret.errors import InputError


def _texts(path: Path, fmt: LogFormat | None = None) -> list[tuple[str, int, int]]:
    return [(e.text, e.count, e.line) for e in read_log(path, fmt or LogFormat()).entries]


def test_text_log_one_query_a_line_blank_lines_skipped(tmp_path: Path) -> None:
    log = tmp_path / "q.txt"
    log.write_bytes(b"\xef\xbb\xbfreset password\r\n\n   \n  sso pricing  \nreset password\n")
    assert _texts(log) == [
        ("reset password", 1, 1),
        ("sso pricing", 1, 4),
        ("reset password", 1, 5),
    ]
    assert read_log(log).sha256 == hashlib.sha256(log.read_bytes()).hexdigest()


def test_jsonl_with_count_timestamp_and_kept_fields(tmp_path: Path) -> None:
    log = tmp_path / "q.jsonl"
    rows = [
        {"q": "reset password", "n": 5, "ts": "2026-01-01", "user_agent": "x", "lang": "en"},
        {"q": "sso", "n": "3", "ts": 1700000000},
        {"q": "pricing", "n": None},
    ]
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    fmt = LogFormat(query_field="q", count_field="n", timestamp_field="ts", keep_fields=("lang",))
    entries = read_log(log, fmt).entries
    assert [(e.text, e.count, e.timestamp, dict(e.fields)) for e in entries] == [
        ("reset password", 5, "2026-01-01", {"lang": "en"}),
        ("sso", 3, "1700000000", {}),
        ("pricing", 1, None, {}),
    ]


def test_csv_with_a_quoted_record_over_two_lines(tmp_path: Path) -> None:
    log = tmp_path / "q.csv"
    log.write_text('query,count\n"reset\npassword",4\nsso,\n\npricing,2\n')
    assert _texts(log, LogFormat(count_field="count")) == [
        ("reset\npassword", 4, 2),
        ("sso", 1, 4),
        ("pricing", 2, 6),
    ]


def test_csv_without_the_named_column_is_refused_at_the_header(tmp_path: Path) -> None:
    log = tmp_path / "q.csv"
    log.write_text("text,count\nsso,1\n")
    with pytest.raises(InputError) as e:
        read_log(log, LogFormat(count_field="hits"))
    assert "q.csv:1: the header row has no column 'query', 'hits'" in str(e.value)


def test_gzip_by_magic_bytes_and_format_by_suffix(tmp_path: Path) -> None:
    log = tmp_path / "q.jsonl.gz"
    log.write_bytes(gzip.compress(b'{"query": "sso"}\n{"query": "pricing", "count": 2}\n'))
    assert _texts(log, LogFormat(count_field="count")) == [("sso", 1, 1), ("pricing", 2, 2)]
    assert read_log(log).sha256 == hashlib.sha256(log.read_bytes()).hexdigest()
    # a gzipped text log under a plain name is read through gzip too
    plain = tmp_path / "log"
    plain.write_bytes(gzip.compress(b"a\nb\n"))
    assert _texts(plain) == [("a", 1, 1), ("b", 1, 2)]
    # a truncated gzip file is an input error naming the file
    cut = tmp_path / "cut.gz"
    cut.write_bytes(log.read_bytes()[:-12])
    with pytest.raises(InputError, match=r"cannot read query log .*cut\.gz"):
        read_log(cut)


SECRET = "alice@example.com"


def test_every_bad_line_is_named_without_quoting_it(tmp_path: Path) -> None:
    log = tmp_path / "q.jsonl"
    lines = [
        json.dumps({"query": "fine"}).encode(),
        b'{"query": "' + SECRET.encode() + b'"',  # not JSON
        json.dumps({"text": SECRET}).encode(),  # no query field
        json.dumps({"query": 42}).encode(),  # not a string
        json.dumps({"query": "  "}).encode(),  # empty
        json.dumps({"query": SECRET, "count": 0}).encode(),  # not a positive count
        json.dumps({"query": SECRET, "count": "many"}).encode(),
        json.dumps([SECRET]).encode(),  # not an object
        b'{"query": "\xff' + SECRET.encode() + b'"}',  # not UTF-8
        b'{"query": "a", "query": "' + SECRET.encode() + b'"}',  # a key twice
    ]
    log.write_bytes(b"\n".join(lines) + b"\n")
    fmt = LogFormat(count_field="count")
    with pytest.raises(InputError) as e:
        read_log(log, fmt)
    message = str(e.value)
    assert "9 lines cannot be read" in message
    for n in range(2, 11):
        assert f"q.jsonl:{n}: " in message
    assert SECRET not in message and "alice" not in message
    read = read_log(log, LogFormat(count_field="count", skip_bad_lines=True))
    assert [x.text for x in read.entries] == ["fine"]
    assert read.skipped == list(range(2, 11))


def test_text_log_bad_utf8_and_an_overlong_line(tmp_path: Path) -> None:
    log = tmp_path / "q.txt"
    log.write_bytes(b"ok\n\xc3(bad\n" + b"x" * (MAX_LINE_BYTES + 10) + b"\nlast\n")
    with pytest.raises(InputError) as e:
        read_log(log)
    assert "q.txt:2: not valid UTF-8" in str(e.value)
    assert f"q.txt:3: line longer than {MAX_LINE_BYTES} bytes" in str(e.value)
    read = read_log(log, LogFormat(skip_bad_lines=True))
    assert [(x.text, x.line) for x in read.entries] == [("ok", 1), ("last", 4)]
    assert read.skipped == [2, 3]


def test_csv_bad_records_are_named_at_their_first_line(tmp_path: Path) -> None:
    log = tmp_path / "q.csv"
    log.write_bytes(b'query,count\nok,1\n"bad"x,2\nneg,-1\n"a\n\xff",1\nlast,3\n')
    with pytest.raises(InputError) as e:
        read_log(log, LogFormat(count_field="count"))
    for where in ("q.csv:3: not valid CSV", "q.csv:4: count field", "q.csv:5: not valid UTF-8"):
        assert where in str(e.value)
    read = read_log(log, LogFormat(count_field="count", skip_bad_lines=True))
    assert [(x.text, x.count, x.line) for x in read.entries] == [("ok", 1, 2), ("last", 3, 7)]
    assert read.skipped == [3, 4, 5]


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read query log"):
        read_log(tmp_path / "none.txt")
