"""Run files: rankings written by another system, read as trec_eval reads them, streaming.

TREC: ``qid Q0 docno rank score tag`` per line, whitespace-separated; the rank column (and Q0 and
the tag) is ignored, and a query's documents are ordered by score descending, then docno
descending (plain string order), scores parsed as float64. Blank lines and lines starting with
``#`` are skipped.

JSONL: one object per line and query, ``{"query_id": "q1", "results": [{"doc_id": "d1",
"score": 0.5}, ...]}``, ordered by the same rule (the order in the file does not matter).

A document twice within one query is an input error naming file and line (trec_eval refuses such
runs), as is a query given on two JSONL lines, a score that is not a finite number, or a line
with other than six TREC columns.

Memory is bounded: the file is read line by line and only the best ``depth`` documents of each
query are kept (a heap per query), never the whole file. The duplicate check keeps the documents
of the query being read; when a TREC query's lines are split across the file (rare: run writers
group by query), its later lines are checked against the documents it keeps.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evalret.data.textfile import TextProblem, decode, parse_json
from evalret.errors import InputError, Problem

RunFormat = Literal["trec", "jsonl"]


@dataclass
class RunFile:
    """What a run file holds: per query (in the file's order) its best ``depth`` documents
    under the tie rule, as (docno, score) pairs; and the file's SHA-256 and line count."""

    rankings: dict[str, list[tuple[str, float]]]
    sha256: str
    n_lines: int


@dataclass
class _Query:
    """One query while its file is read: the kept heap (worst first) and the documents seen."""

    heap: list[tuple[float, str]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)


class _Reader:
    """The top-``depth`` state of every query, fed one (query, docno, score) at a time."""

    def __init__(self, path: Path, depth: int) -> None:
        self.path, self.depth = path, depth
        self.queries: dict[str, _Query] = {}
        self.current: _Query | None = None

    def problem(self, message: str, line: int) -> InputError:
        """An InputError at ``line`` of the run file."""
        return InputError(f"invalid run file {self.path}", [Problem(message, str(self.path), line)])

    def add(self, qid: str, doc: str, score: float, line: int) -> None:
        """Keep ``doc`` if it is among the best ``depth`` of ``qid`` so far; refuse a repeat."""
        query = self.queries.get(qid)
        if query is None:
            query = self.queries[qid] = _Query()
        if query is not self.current:  # a new block of lines: forget the previous one's docs
            if self.current is not None:
                self.current.seen = set()
            query.seen = {d for _, d in query.heap}
            self.current = query
        if doc in query.seen:
            raise self.problem(f"document {doc!r} appears twice for query {qid!r}", line)
        query.seen.add(doc)
        entry = (score, doc)  # the heap's smallest is the worst: lowest score, then lowest docno
        if len(query.heap) < self.depth:
            heapq.heappush(query.heap, entry)
        elif entry > query.heap[0]:
            heapq.heapreplace(query.heap, entry)

    def rankings(self) -> dict[str, list[tuple[str, float]]]:
        """Every query's kept documents, best first (score descending, then docno descending)."""
        return {
            qid: [(doc, score) for score, doc in sorted(q.heap, reverse=True)]
            for qid, q in self.queries.items()
        }


def _lines(path: Path, digest: Any) -> Iterator[tuple[int, str]]:
    """(1-based line number, decoded line) of the file, hashing its bytes into ``digest``."""
    try:
        with path.open("rb") as f:
            for number, data in enumerate(f, start=1):
                digest.update(data)
                try:
                    yield number, decode(data, number)
                except TextProblem as e:
                    raise InputError(f"invalid run file {path}", [e.at(path, number)]) from None
    except OSError as e:
        raise InputError(f"cannot read run file {path}: {e.strerror or e}") from None


def _score(text: str) -> float:
    """A finite float64 score; ValueError otherwise."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _read_trec_line(reader: _Reader, text: str, number: int) -> None:
    """One TREC line: skipped when blank or a comment, else six columns added to ``reader``."""
    parts = text.split()
    if not parts or parts[0].startswith("#"):
        return
    if len(parts) != 6:
        raise reader.problem(
            f"expected 6 columns (qid Q0 docno rank score tag), found {len(parts)}", number
        )
    try:
        score = _score(parts[4])
    except ValueError:
        raise reader.problem(f"score {parts[4]!r} is not a finite number", number) from None
    reader.add(parts[0], parts[2], score, number)


def _result(r: Any) -> tuple[str | None, float | None]:
    """The (doc_id, score) of one JSONL result; None for what is not a usable one."""
    doc = r.get("doc_id") if isinstance(r, dict) else None
    score = r.get("score") if isinstance(r, dict) else None
    if not isinstance(doc, str) or not doc or doc.split() != [doc]:
        doc = None
    if not isinstance(score, int | float) or isinstance(score, bool):
        return doc, None
    try:
        return doc, _score(str(float(score)))
    except (ValueError, OverflowError):
        return doc, None


def _read_jsonl_line(reader: _Reader, text: str, number: int) -> None:
    """One JSONL line: one query and its results, added to ``reader``."""
    if not text.strip():
        return
    try:
        obj = parse_json(text, finite=True)
    except TextProblem as e:
        raise reader.problem(e.message, number) from None
    results = obj.get("results") if isinstance(obj, dict) else None
    qid = obj.get("query_id") if isinstance(obj, dict) else None
    if not isinstance(qid, str) or qid.split() != [qid] or not isinstance(results, list):
        raise reader.problem(
            'expected {"query_id": "...", "results": [{"doc_id": "...", "score": 0.5}, ...]}',
            number,
        )
    if qid in reader.queries:
        raise reader.problem(f"query {qid!r} is given on an earlier line too", number)
    for i, r in enumerate(results):
        doc, score = _result(r)
        if doc is None or score is None:
            raise reader.problem(
                f"results[{i}]: expected a doc_id (one word) and a finite score", number
            )
        reader.add(qid, doc, score, number)
    reader.queries.setdefault(qid, _Query())  # a query with no results is still given


def read_run(path: Path, fmt: RunFormat, depth: int) -> RunFile:
    """The run file at ``path``, each query's best ``depth`` documents kept; InputError naming
    file and line for anything trec_eval would not read (see the module docstring)."""
    digest = hashlib.sha256()
    reader = _Reader(path, depth)
    read_line = _read_trec_line if fmt == "trec" else _read_jsonl_line
    n_lines = 0
    for number, text in _lines(path, digest):
        read_line(reader, text, number)
        n_lines = number
    return RunFile(rankings=reader.rankings(), sha256=digest.hexdigest(), n_lines=n_lines)
