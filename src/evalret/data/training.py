"""Training queries for `evalret leakage`: JSON Lines (a ``text`` or ``query`` string per line)
or plain text (one query per line), every bad line reported with its number."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from evalret.choices import TrainFormat as TrainFormat
from evalret.core.leakage import TrainQuery
from evalret.data.textfile import TextProblem, decode, parse_json
from evalret.errors import InputError, Problem

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")


def _train_format(path: Path, fmt: TrainFormat, first: bytes | None) -> Literal["jsonl", "text"]:
    """The format to read ``path`` as: ``fmt`` unless ``auto``, else by suffix or first line."""
    if fmt != "auto":
        return fmt
    if path.suffix.lower() in JSONL_SUFFIXES:
        return "jsonl"
    return "jsonl" if first is not None and first.lstrip().startswith(b"{") else "text"


def read_training_queries(path: Path, fmt: TrainFormat = "auto") -> list[TrainQuery]:
    """Training queries from JSON Lines (a ``text`` or ``query`` string per line) or plain text
    (one query per line). Blank lines are skipped; every bad line is reported with its number.

    ``auto`` reads ``.jsonl``, ``.ndjson`` and ``.json`` files, and files whose first non-blank
    line starts with ``{``, as JSON Lines; anything else as plain text.
    """
    try:
        raw_lines = path.read_bytes().split(b"\n")
    except OSError as e:
        raise InputError(f"cannot read training file {path}: {e.strerror or e}") from None
    first = next((r for r in raw_lines if r.strip()), None)
    kind = _train_format(path, fmt, first)
    out: list[TrainQuery] = []
    problems: list[Problem] = []
    where = str(path)
    for n, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        try:
            line = decode(raw, n)
            obj = parse_json(line) if kind == "jsonl" else None
        except TextProblem as e:
            problems.append(e.at(path, n))
            continue
        if kind == "text":
            out.append(TrainQuery(n, line.strip()))
            continue
        if not isinstance(obj, dict):
            problems.append(Problem("each line must be a JSON object", where, n))
            continue
        key = "text" if "text" in obj else "query"
        text = obj.get(key)
        if not isinstance(text, str):
            problems.append(
                Problem(
                    "needs a 'text' or 'query' string"
                    + (f" ({key} is {type(text).__name__})" if key in obj else ""),
                    where,
                    n,
                )
            )
            continue
        if not text.strip():
            problems.append(Problem(f"empty {key}", where, n))
            continue
        out.append(TrainQuery(n, text.strip()))
    if problems:
        raise InputError(f"training file {path}: {len(problems)} bad line(s)", problems)
    if not out:
        raise InputError(f"training file {path} holds no query")
    return out
