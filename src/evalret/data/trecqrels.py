"""A TREC qrels file read as trec_eval reads it, every grade kept (negative ones too): what
``evalret trec_eval`` scores. Four whitespace-separated columns ``qid iter docno grade``; a line
whose first byte is ``#`` is a comment; a grade is read as C's ``atol`` reads an integer or a
decimal (``1.7`` -> 1). Stricter than trec_eval where its answer would be undefined or a
crash: a line of another width, a grade that is not a number, a document judged twice for one
query, a name that is not UTF-8 are each an input error naming file and line."""

from __future__ import annotations

import re
from pathlib import Path

from evalret.errors import InputError, Problem

_GRADE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


def read_trec_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Query id -> document id -> grade, from the qrels file at ``path``."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read qrels file {path}: {e.strerror or e}") from None
    qrels: dict[str, dict[str, int]] = {}
    problems: list[Problem] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.startswith(b"#"):
            continue
        columns = line.split()
        if not columns:
            continue
        try:
            if len(columns) != 4:
                raise ValueError
            qid, _, docno, grade = (c.decode("utf-8") for c in columns)
        except (ValueError, UnicodeDecodeError):
            problems.append(
                Problem("expected 4 UTF-8 columns (qid iter docno grade)", str(path), number)
            )
            continue
        if not _GRADE.fullmatch(grade):
            problems.append(Problem(f"grade {grade!r} is not a number", str(path), number))
            continue
        judged = qrels.setdefault(qid, {})
        if docno in judged:
            problems.append(
                Problem(f"document {docno!r} judged twice for query {qid!r}", str(path), number)
            )
            continue
        whole = grade.split(".")[0].strip("+")
        judged[docno] = int(whole) if whole not in ("", "-") else 0
        if len(problems) > 50:
            break
    if problems:
        raise InputError(f"invalid qrels file {path}", problems)
    if not qrels:
        raise InputError(f"invalid qrels file {path}: no judgment line")
    return qrels
