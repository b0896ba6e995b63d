"""A query log: the queries users typed, read for `evalret golden from-logs`.

Formats (``LogFormat.format``; ``auto`` picks by the name's suffix, a ``.gz`` dropped first:
``.jsonl`` JSONL, ``.csv`` CSV, anything else text):

* ``text``: one query a line, the line's surrounding whitespace dropped; blank lines skipped.
* ``jsonl``: one JSON object a line holding the query field (``query`` by default); blank lines
  skipped.
* ``csv``: a header row naming the columns, then one record a row (a quoted field may span
  lines; a record's line is its first line); the named columns must be in the header.

Optional fields (JSONL keys or CSV columns): ``count_field`` (how many times the query was typed:
a positive integer, or a string of digits; missing, null or an empty cell: 1), ``timestamp_field``
(kept as text), ``keep_fields`` (kept as text on the entry). A file starting with gzip's magic
bytes is read through gzip, line by line (never decompressed whole); its SHA-256 is that of the
bytes on disk.

A line that cannot be read (not UTF-8, not JSON or not an object, the query field missing, empty
or not a string, a count that is not a positive integer, longer than MAX_LINE_BYTES) is an
InputError naming file and line, every bad line listed; with ``skip_bad_lines`` such lines are
skipped and their numbers kept in ``QueryLog.skipped``. A log may hold personal data: no message
here quotes a line's content, only where and what kind of thing is wrong.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evalret.data.atomic import sha256_file
from evalret.data.textfile import BOM
from evalret.errors import InputError, Problem

MAX_LINE_BYTES = 1 << 20  # a logged query is short: a longer line is refused before held whole
GZIP_MAGIC = b"\x1f\x8b"
_READ = 1 << 20


@dataclass(frozen=True)
class LogFormat:
    """How to read a log (the module doc)."""

    format: Literal["auto", "text", "jsonl", "csv"] = "auto"
    query_field: str = "query"
    count_field: str | None = None
    timestamp_field: str | None = None
    keep_fields: tuple[str, ...] = ()
    skip_bad_lines: bool = False


@dataclass(frozen=True)
class LogEntry:
    """One logged query."""

    text: str
    count: int  # 1 unless the count field says otherwise
    line: int  # 1-based line (CSV: the record's first line)
    timestamp: str | None = None
    fields: Mapping[str, str] = field(default_factory=dict)  # the keep_fields


@dataclass(frozen=True)
class QueryLog:
    """A log read: its entries in file order, and the bad lines skipped."""

    path: Path
    sha256: str  # of the file's bytes as stored (gzip: the compressed bytes)
    entries: list[LogEntry]
    skipped: list[int]  # line numbers of bad lines skipped under skip_bad_lines


class _Bad(ValueError):
    """What is wrong with one line (a message that quotes none of its content)."""


def resolved_format(path: Path, fmt: LogFormat) -> str:
    """The format a log is read as: the one given, or by suffix for ``auto``."""
    if fmt.format != "auto":
        return fmt.format
    name = path.name.lower().removesuffix(".gz")
    return {".jsonl": "jsonl", ".csv": "csv"}.get(Path(name).suffix, "text")


def _raw_lines(f: io.BufferedIOBase) -> Iterator[tuple[int, bytes | None]]:
    """(1-based line, its bytes) of an open file; None for a line over MAX_LINE_BYTES, whose
    rest is read past in blocks, never held."""
    number = 0
    while data := f.readline(MAX_LINE_BYTES + 1):
        number += 1
        if number == 1:
            data = data.removeprefix(BOM)
        if len(data) > MAX_LINE_BYTES and not data.endswith(b"\n"):
            while (rest := f.readline(_READ)) and not rest.endswith(b"\n"):
                pass
            yield number, None
            continue
        yield number, data


def _count(value: Any, name: str) -> int:
    if value is None or value == "":
        return 1
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _Bad(f"count field {name!r} is not a positive integer")
    return value


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _entry(record: Mapping[str, Any], line: int, fmt: LogFormat) -> LogEntry:
    """A JSONL object or CSV row as an entry; _Bad when it cannot be one."""
    query = record.get(fmt.query_field)
    if query is None:
        raise _Bad(f"no query field {fmt.query_field!r}")
    if not isinstance(query, str):
        raise _Bad(f"query field {fmt.query_field!r} is not a string")
    if not query.strip():
        raise _Bad(f"query field {fmt.query_field!r} is empty")
    count = _count(record.get(fmt.count_field), fmt.count_field) if fmt.count_field else 1
    stamp = _as_text(record.get(fmt.timestamp_field)) if fmt.timestamp_field else None
    kept = {k: t for k in fmt.keep_fields if (t := _as_text(record.get(k))) is not None}
    return LogEntry(query.strip(), count, line, stamp, kept)


def _decoded(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _Bad(f"not valid UTF-8 ({e.reason})") from None


def _json_object(text: str) -> dict[str, Any]:
    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            raise _Bad("a key given twice in one JSON object")
        return obj

    try:
        obj = json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as e:
        raise _Bad(f"invalid JSON: {e.msg} (column {e.colno})") from None
    except (RecursionError, ValueError) as e:
        raise _Bad(str(e) if isinstance(e, _Bad) else "invalid JSON") from None
    if not isinstance(obj, dict):
        raise _Bad("not a JSON object")
    return obj


class _Reader:
    """One log being read: its entries so far and its problems."""

    def __init__(self, path: Path, fmt: LogFormat) -> None:
        self.path, self.fmt = path, fmt
        self.entries: list[LogEntry] = []
        self.bad: list[Problem] = []

    def add(self, make: Any, line: int) -> None:
        """The entry ``make()`` gives, or a bad line."""
        try:
            entry = make()
        except _Bad as e:
            self.bad.append(Problem(str(e), str(self.path), line, "bad-log-line"))
            return
        if entry is not None:
            self.entries.append(entry)

    def text(self, lines: Iterator[tuple[int, bytes | None]]) -> None:
        for number, data in lines:
            if data is None:
                self.bad.append(self._too_long(number))
                continue
            self.add(lambda data=data, number=number: self._text_line(data, number), number)

    def _text_line(self, data: bytes, number: int) -> LogEntry | None:
        text = _decoded(data).strip()
        return LogEntry(text, 1, number) if text else None

    def jsonl(self, lines: Iterator[tuple[int, bytes | None]]) -> None:
        for number, data in lines:
            if data is None:
                self.bad.append(self._too_long(number))
                continue
            self.add(lambda data=data, number=number: self._jsonl_line(data, number), number)

    def _jsonl_line(self, data: bytes, number: int) -> LogEntry | None:
        text = _decoded(data)
        if not text.strip():
            return None
        return _entry(_json_object(text), number, self.fmt)

    def csv(self, lines: Iterator[tuple[int, bytes | None]]) -> None:
        """Records of a CSV log; a physical line that is not UTF-8 or too long spoils the
        record it belongs to."""
        spoiled: dict[int, str] = {}

        def texts() -> Iterator[str]:
            for number, data in lines:
                if data is None:
                    spoiled[number] = f"line longer than {MAX_LINE_BYTES} bytes"
                    yield "\n"
                    continue
                try:
                    yield _decoded(data)
                except _Bad as e:
                    spoiled[number] = str(e)
                    yield data.decode("utf-8", "replace")

        reader = csv.reader(texts(), strict=True)
        header = self._header(reader, spoiled)
        if header is None:
            return
        while True:
            first = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                self.bad.append(self._problem(f"not valid CSV ({_csv_reason(e)})", first))
                continue
            reason = next(
                (spoiled[n] for n in range(first, reader.line_num + 1) if n in spoiled), None
            )
            if reason is not None:
                self.bad.append(self._problem(reason, first))
            elif row and any(cell.strip() for cell in row):
                record = dict(zip(header, row, strict=False))
                self.add(lambda record=record, first=first: _entry(record, first, self.fmt), first)

    def _header(self, reader: Any, spoiled: dict[int, str]) -> list[str] | None:
        try:
            header: list[str] | None = next(reader, None)
        except csv.Error as e:
            raise InputError(
                f"cannot read query log {self.path}",
                [self._problem(f"header row is not valid CSV ({_csv_reason(e)})", 1)],
            ) from None
        if header is None:
            return None
        if 1 in spoiled:
            raise InputError(f"cannot read query log {self.path}", [self._problem(spoiled[1], 1)])
        named = [self.fmt.query_field, self.fmt.count_field, self.fmt.timestamp_field]
        missing = [c for c in (*named, *self.fmt.keep_fields) if c is not None and c not in header]
        if missing:
            columns = ", ".join(repr(c) for c in missing)
            raise InputError(
                f"cannot read query log {self.path}",
                [self._problem(f"the header row has no column {columns}", 1, "log-columns")],
            )
        return header

    def _problem(self, message: str, line: int, code: str = "bad-log-line") -> Problem:
        return Problem(message, str(self.path), line, code)

    def _too_long(self, line: int) -> Problem:
        return self._problem(f"line longer than {MAX_LINE_BYTES} bytes", line)


def _csv_reason(e: csv.Error) -> str:
    """csv's message, which never quotes the data."""
    return str(e).split("\n")[0][:120]


def read_log(path: Path, fmt: LogFormat = LogFormat()) -> QueryLog:
    """The log at ``path`` read in format ``fmt`` (the module doc)."""
    reader = _Reader(path, fmt)
    kind = resolved_format(path, fmt)
    try:
        sha = sha256_file(path)
        with path.open("rb") as raw:
            gz = raw.peek(2)[:2] == GZIP_MAGIC
            f: io.BufferedIOBase = gzip.GzipFile(fileobj=raw) if gz else raw
            getattr(reader, kind)(_raw_lines(f))
    except (OSError, EOFError, zlib.error) as e:
        reason = getattr(e, "strerror", None) or e
        raise InputError(f"cannot read query log {path}: {reason}") from None
    if reader.bad and not fmt.skip_bad_lines:
        n = len(reader.bad)
        raise InputError(
            f"query log {path}: {n} line{'s' * (n != 1)} cannot be read "
            "(--skip-bad-lines skips them)",
            reader.bad,
        )
    skipped = sorted(p.line for p in reader.bad if p.line is not None)
    return QueryLog(path, sha, reader.entries, skipped)
