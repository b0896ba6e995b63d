"""Input files as UTF-8 text and JSON, with where a problem is: the line (and column) of the first
byte that is not UTF-8, the line of a JSON syntax error, a duplicate key in one JSON object.

``read_text`` and ``read_json`` raise an InputError (exit 2) naming the file; ``decode`` and
``parse_json`` raise a TextProblem that line-by-line readers place at their line. Nothing here
lets a UnicodeDecodeError, RecursionError or int-conversion ValueError out as an internal failure.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalret.errors import InputError, Problem

BOM = b"\xef\xbb\xbf"


class TextProblem(ValueError):
    """What is wrong with a piece of text, with its 1-based line when known."""

    def __init__(self, message: str, line: int | None = None, code: str = "invalid-json") -> None:
        super().__init__(message)
        self.message, self.line, self.code = message, line, code

    def at(self, path: Path, line: int | None = None) -> Problem:
        """This problem in file ``path`` (at ``line`` when the text is one line of the file)."""
        return Problem(self.message, str(path), line or self.line, self.code)


def decode(data: bytes, line: int = 1) -> str:
    """``data`` as UTF-8, ``data`` starting at 1-based ``line`` of its file (on line 1 a
    byte-order mark is dropped); raises TextProblem with the line and column of the first byte
    that is not UTF-8."""
    if line == 1:
        data = data.removeprefix(BOM)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line_start = data.rfind(b"\n", 0, e.start) + 1
        column = len(data[line_start : e.start].decode("utf-8")) + 1
        where = line + data.count(b"\n", 0, e.start)
        message = f"not valid UTF-8 ({e.reason}) at column {column}"
        raise TextProblem(message, where, "unreadable-file") from None


class _Refused(ValueError):
    """A JSON value the document may not hold: a key twice in one object, a non-finite number."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"duplicate key {key!r} in one JSON object")
            seen.add(key)
    return obj


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text} is out of range")
    return value


def _no_constant(name: str) -> float:
    raise _Refused(f"{name} is not a JSON number")


# a \\uXXXX escape of half a surrogate pair without its other half: no character, not UTF-8
_LONE_SURROGATE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _refuse_lone_surrogates(text: str, obj: Any) -> None:
    """A string holding a lone surrogate cannot be written as UTF-8 later (a report, a cache
    key): refused here, at the line of its escape."""
    match = _LONE_SURROGATE.search(text)
    if match is None:
        return
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        line = text.count("\n", 0, match.start()) + 1
        raise _Refused(f"{match.group()} is half a surrogate pair, not a character", line) from None


def parse_json(text: str, finite: bool = False) -> Any:
    """``text`` parsed as JSON, refusing a key twice in one object (and with ``finite``, NaN,
    Infinity and numbers beyond float range); raises TextProblem (with the line for a syntax
    error)."""
    hooks: dict[str, Any] = {"parse_float": _finite, "parse_constant": _no_constant}
    try:
        obj = json.loads(text, object_pairs_hook=_unique_keys, **(hooks if finite else {}))
        _refuse_lone_surrogates(text, obj)
        return obj
    except json.JSONDecodeError as e:
        raise TextProblem(f"invalid JSON: {e.msg} (column {e.colno})", e.lineno) from None
    except _Refused as e:
        raise TextProblem(e.args[0], e.args[1] if len(e.args) > 1 else None) from None
    except RecursionError:
        raise TextProblem("invalid JSON: nested too deeply", None) from None
    except ValueError as e:  # e.g. an integer with more digits than Python converts
        raise TextProblem(f"invalid JSON: {str(e).split(';')[0]}", None) from None


def read_text(path: Path, what: str, error: type[InputError] = InputError) -> str:
    """The UTF-8 text of the file at ``path`` (``what`` names it in messages: "baseline")."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise error(f"cannot read {what} {path}: {e.strerror or e}") from None
    try:
        return decode(data)
    except TextProblem as e:
        raise error(f"{what} {path} is not valid UTF-8", [e.at(path)]) from None


def read_json(path: Path, what: str) -> Any:
    """The JSON document in the file at ``path`` (a report: evalret writes a non-finite number as
    null, so NaN or Infinity is refused); every failure an InputError naming the file."""
    text = read_text(path, what)
    try:
        return parse_json(text, finite=True)
    except TextProblem as e:
        raise InputError(f"{what} {path} is not valid JSON", [e.at(path)]) from None


def schema_problems(e: ValidationError, path: Path) -> list[Problem]:
    """A pydantic error on a JSON document as problems naming the file and each field's path."""
    problems = []
    for err in e.errors()[:20]:
        where = ".".join(str(p) for p in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        problems.append(Problem(f"{where}: {message}" if where else message, str(path)))
    return problems
