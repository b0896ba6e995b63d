"""Run files: rankings written by another system, read as trec_eval reads them, streaming.

TREC, with the tolerance of trec_eval's own reader (``get_trec_results.c``):

- A line is what ends at ``\\n``; the last one needs none. Columns are separated by runs of the
  bytes C's ``isspace`` names (space, tab, ``\\r``, ``\\v``, ``\\f``), so a CRLF file, tabs and
  ragged spacing read the same; any other byte (a non-breaking space too) belongs to a column.
- A line that is blank, or whose first column starts with ``#``, is skipped.
- Six columns ``qid Q0 docno rank score tag`` at least; columns past the sixth are ignored, and
  only qid, docno and score are used (Q0, rank and tag may be anything, in any encoding).
- The score is read as C's ``atof`` reads it: the longest leading part that is a C number
  (decimal, with or without an exponent, hexadecimal like ``0x1.8p3``, ``inf``, ``infinity``),
  and 0 when there is none, so ``1.5e3``, ``.5``, ``7.`` and ``+2`` are numbers, ``12abc`` reads
  as 12 and ``n/a`` as 0. Scores that are not wholly a number are counted (``scores_partial``),
  since such a column usually means a misplaced one.
- A query's documents are ordered by score descending, then docno descending (byte order).

Where evalret is stricter than trec_eval, it is because trec_eval's answer is undefined: a file
with no ranking line at all (0 bytes, or only blank and comment lines: trec_eval refuses the
first and reads uninitialised memory for the second), a NUL byte (trec_eval stops reading, or
crashes, there), a score of NaN (trec_eval's sort has no order for it), or a qid or docno that is
not UTF-8 (evalret compares ids as text). A document twice in one query is refused as trec_eval
refuses it, whatever the depth kept. A UTF-8 byte-order mark before the first line is dropped.

JSONL: one object per line and query, ``{"query_id": "q1", "results": [{"doc_id": "d1",
"score": 0.5}, ...]}``, ordered by the same rule (the order in the file does not matter); blank
lines are skipped. A query given on two lines, a score that is not a finite JSON number, or a
result without a one-word doc_id is refused.

Every refusal is an input error naming file and line. A line longer than ``MAX_LINE_BYTES`` of
its format is refused as soon as the bound is passed, before the line is held in memory.

A file that starts with gzip's magic bytes is read through gzip; its SHA-256 is that of the
file on disk.

Two readers give one answer. ``read_run`` tries the columnar reader (``data.runcolumns``:
pyarrow's parsers, ids interned, one sort), which answers only where it proves it reads the file
as the line reader here does; every other file, and every refusal, is the line reader's. The
line reader is the reference: it reads line by line and keeps only the best ``depth`` documents
of each query (a heap per query), never the whole file. Repeated documents are found from one
8-byte hash of (query, document) per line, sorted at the end; a hash seen twice sends the reader
through the file a second time to name the line (or to find it was a hash collision).
"""

from __future__ import annotations

import gzip
import hashlib
import heapq
import io
import math
import re
import zlib
from array import array
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from evalret.data import early_runs
from evalret.data.runcolumns import (
    CHUNK,
    GZIP_MAGIC,
    MAX_LINE_BYTES,
    read_jsonl_columns,
    read_trec_columns,
)
from evalret.data.textfile import BOM, TextProblem, decode, parse_json
from evalret.errors import InputError, Problem

RunFormat = Literal["trec", "jsonl"]


# what C's strtod takes as a number at the start of a text (case-insensitive): hexadecimal,
# decimal, inf / infinity, nan with an optional (chars) tail
_C_NUMBER = re.compile(
    rb"[+-]?(?:0x(?:[0-9a-f]+(?:\.[0-9a-f]*)?|\.[0-9a-f]+)(?:p[+-]?[0-9]+)?"
    rb"|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?"
    rb"|inf(?:inity)?|nan(?:\([0-9a-z_]*\))?)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RunFile:
    """What a run file holds, as columns: per query (``query_ids``, in the order the file first
    names them) its best ``depth`` documents under the tie rule, rows ``offsets[i]`` to
    ``offsets[i + 1]`` of ``docs`` (indices into ``doc_ids``) and ``scores``, best first; the
    file's SHA-256 and line count; and how many TREC scores were not wholly a number (read by
    their leading number, as ``atof`` does). ``doc_ids`` holds each document once, in no
    particular order; ``doc_names`` is the same names as a pyarrow string array when the
    columnar reader read the file (None from the line reader), for lookups done in pyarrow."""

    query_ids: list[str]
    doc_ids: Sequence[str]  # a list, or the columnar reader's ArrowNames (made when read)
    offsets: np.ndarray  # int64 [len(query_ids) + 1]
    docs: np.ndarray  # int32 or int64 [rows]
    scores: np.ndarray  # float64 [rows]
    sha256: str
    n_lines: int
    scores_partial: int = 0
    doc_names: Any = field(default=None, compare=False, repr=False)

    @property
    def rankings(self) -> dict[str, list[tuple[str, float]]]:
        """Query id -> its (docno, score) pairs, best first: the columns as Python objects (for
        tests and small runs; the pipeline reads the columns)."""
        docs, scores = self.docs.tolist(), self.scores.tolist()
        names = list(self.doc_ids)
        return {
            qid: [(names[d], s) for d, s in zip(docs[a:b], scores[a:b], strict=True)]
            for qid, a, b in zip(
                self.query_ids, self.offsets[:-1].tolist(), self.offsets[1:].tolist(), strict=True
            )
        }


def columns(
    rankings: dict[str, list[tuple[str, float]]],
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """``rankings`` (query id -> (docno, score) pairs, best first) as RunFile's columns:
    doc_ids, offsets, docs and scores."""
    index: dict[str, int] = {}
    docs = [index.setdefault(d, len(index)) for row in rankings.values() for d, _ in row]
    scores = [s for row in rankings.values() for _, s in row]
    sizes = [len(row) for row in rankings.values()]
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return (
        list(index),
        offsets,
        np.asarray(docs, dtype=np.int64),
        np.asarray(scores, dtype=np.float64),
    )


_Record = tuple[str, str, float, int]  # one (query, document, score) of the file, at its line


def c_atof(text: bytes) -> tuple[float, bool]:
    """``text`` read as C's ``atof`` reads it (its longest leading number, else 0.0), and whether
    the whole of ``text`` was that number."""
    if b"_" not in text:  # the common case: Python's float takes what strtod takes whole
        try:
            return float(text), True
        except ValueError:
            pass
    match = _C_NUMBER.match(text)
    if match is None:
        return 0.0, False
    number = match.group().decode("ascii").lower()
    unsigned = number.lstrip("+-")
    if unsigned.startswith("0x"):
        try:
            value = float.fromhex(number)
        except OverflowError:  # strtod answers HUGE_VAL, an infinity
            value = -math.inf if number.startswith("-") else math.inf
    elif unsigned.startswith("nan"):
        value = math.nan
    else:
        value = float(number)
    return value, match.end() == len(text)


class _Hashed(io.RawIOBase):
    """A binary file whose every byte read also goes into a digest."""

    def __init__(self, raw: io.BufferedReader, digest: Any) -> None:
        self.raw, self.digest = raw, digest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n: int = self.raw.readinto(buffer)
        if n:
            self.digest.update(memoryview(buffer)[:n])
        return n


@dataclass(frozen=True)
class _Reader:
    """An open run file: ``file`` gives its (decompressed) bytes, and
    ``plain_unhashed`` says they are the file's own bytes, not yet in the digest."""

    file: Any
    plain_unhashed: bool


class _File:
    """A run file being read: its path, format and digest, and where problems are."""

    def __init__(self, path: Path, fmt: RunFormat) -> None:
        self.path, self.fmt = path, fmt
        self.limit = MAX_LINE_BYTES[fmt]
        self.digest = hashlib.sha256()
        self.n_lines = 0
        self.scores_partial = 0
        self.queries: dict[str, None] = {}  # JSONL: the queries given so far, in order

    def problem(self, message: str, line: int | None = None, code: str | None = None) -> InputError:
        """An InputError at ``line`` of the run file."""
        return InputError(
            f"invalid run file {self.path}", [Problem(message, str(self.path), line, code)]
        )

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """(1-based line number, the line's bytes) of the file; a line over the bound is refused
        before it is read whole."""
        with self.reading() as f:
            number, readline = 0, f.file.readline
            while data := readline(self.limit + 1):
                number += 1
                if len(data) > self.limit:
                    raise self.problem(
                        f"line longer than {self.limit} bytes (the bound for a "
                        f"{self.fmt} run file)",
                        number,
                    )
                self.n_lines = number
                yield number, data.removeprefix(BOM) if number == 1 else data

    def chunks(self) -> Iterator[bytes]:
        """The file's bytes (decompressed, the byte-order mark dropped) in blocks of CHUNK. An
        uncompressed file's blocks are hashed in a thread while the caller parses them
        (hashlib lets go of the GIL), each block after the one before."""
        with self.reading(hash_plain=False) as f, ThreadPoolExecutor(1) as hashing:
            first, hashed = True, None
            while data := f.file.read(CHUNK):
                if f.plain_unhashed:
                    if hashed is not None:
                        hashed.result()
                    hashed = hashing.submit(self.digest.update, data)
                yield data.removeprefix(BOM) if first else data
                first = False
            if hashed is not None:
                hashed.result()

    @contextmanager
    def reading(self, hash_plain: bool = True) -> Iterator[_Reader]:
        """The file opened for reading, gunzipped when it starts as gzip does, every byte read
        from disk hashed into the digest (an uncompressed file's only with ``hash_plain``: the
        caller hashes what it reads, ``plain_unhashed``); InputError when it cannot be read."""
        try:
            with self.path.open("rb") as raw:
                gz = raw.peek(2)[:2] == GZIP_MAGIC
                hashed = _Hashed(raw, self.digest)
                if gz:
                    yield _Reader(gzip.GzipFile(fileobj=hashed), plain_unhashed=False)
                elif hash_plain:
                    yield _Reader(io.BufferedReader(hashed), plain_unhashed=False)
                else:
                    yield _Reader(raw, plain_unhashed=True)
        except (OSError, EOFError, zlib.error) as e:
            reason = getattr(e, "strerror", None) or e
            raise InputError(f"cannot read run file {self.path}: {reason}") from None

    def records(self) -> Iterator[_Record]:
        """Every (query, document, score) of the file, in the file's order."""
        if self.fmt == "jsonl":
            for number, data in self.lines():
                yield from self._jsonl_line(data, number)
            return
        for number, data in self.lines():
            record = self._trec_line(data, number)
            if record is not None:
                yield record

    def _trec_line(self, data: bytes, number: int) -> _Record | None:
        """One TREC line's record (None for a blank or comment line); the hot loop of a big run,
        so the common case (a plain decimal score, UTF-8 ids) takes no extra call."""
        if b"\0" in data:
            raise self.problem("a NUL byte (trec_eval's reader takes none)", number)
        columns = data.split(None, 6)  # bytes.split(): exactly C's isspace, as trec_eval splits
        if not columns or columns[0].startswith(b"#"):
            return None
        if len(columns) < 6:
            raise self.problem(
                f"expected 6 columns (qid Q0 docno rank score tag), found {len(columns)}", number
            )
        text = columns[4]
        try:  # Python's float takes what strtod takes whole, but for "_" between digits
            score = float(b"_" if b"_" in text else text)
        except ValueError:
            score, whole = c_atof(text)
            self.scores_partial += not whole
        if score != score:  # NaN
            shown = text.decode("utf-8", "replace")
            message = f"score {shown!r} is not a number (trec_eval's order is undefined for NaN)"
            raise self.problem(message, number)
        try:
            return columns[0].decode("utf-8"), columns[2].decode("utf-8"), score, number
        except UnicodeDecodeError as e:
            what = "qid" if e.object == columns[0] else "docno"
            raise self.problem(
                f"{what} is not valid UTF-8 ({e.reason}): evalret compares ids as text",
                number,
                "unreadable-file",
            ) from None

    def _jsonl_line(self, data: bytes, number: int) -> list[_Record]:
        try:
            text = decode(data, 2)  # the BOM is already dropped
        except TextProblem as e:
            raise self.problem(e.message, number, e.code) from None
        if not text.strip():
            return []
        try:
            obj = parse_json(text, finite=True)
        except TextProblem as e:
            raise self.problem(e.message, number) from None
        results = obj.get("results") if isinstance(obj, dict) else None
        qid = obj.get("query_id") if isinstance(obj, dict) else None
        if not isinstance(qid, str) or qid.split() != [qid] or not isinstance(results, list):
            raise self.problem(
                'expected {"query_id": "...", "results": [{"doc_id": "...", "score": 0.5}, ...]}',
                number,
            )
        if qid in self.queries:
            raise self.problem(f"query {qid!r} is given on an earlier line too", number)
        self.queries[qid] = None
        out = []
        for i, r in enumerate(results):
            doc, score = _result(r)
            if doc is None or score is None:
                raise self.problem(
                    f"results[{i}]: expected a doc_id (one word) and a finite score", number
                )
            out.append((qid, doc, score, number))
        return out


def _result(r: Any) -> tuple[str | None, float | None]:
    """The (doc_id, score) of one JSONL result; None for what is not a usable one."""
    doc = r.get("doc_id") if isinstance(r, dict) else None
    score = r.get("score") if isinstance(r, dict) else None
    if not isinstance(doc, str) or not doc or doc.split() != [doc]:
        doc = None
    if not isinstance(score, int | float) or isinstance(score, bool):
        return doc, None
    try:
        value = float(score)
    except OverflowError:  # an integer past float range
        return doc, None
    return doc, value if math.isfinite(value) else None


class _Top:
    """The best ``depth`` documents of every query, and one hash per (query, document) read."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.heaps: dict[str, list[tuple[float, str]]] = {}
        self.keys = array("q")

    def add(self, qid: str, doc: str, score: float) -> None:
        """Keep ``doc`` if it is among the best ``depth`` of ``qid`` so far."""
        self.keys.append(hash((qid, doc)))
        heap = self.heaps.get(qid)
        if heap is None:
            heap = self.heaps[qid] = []
        entry = (score, doc)  # the heap's smallest is the worst: lowest score, lowest docno
        if len(heap) < self.depth:
            heapq.heappush(heap, entry)
        elif entry > heap[0]:
            heapq.heapreplace(heap, entry)

    def repeated_keys(self) -> set[int]:
        """The hashes read more than once (a repeated document, or a collision)."""
        keys = np.sort(np.frombuffer(self.keys, dtype=np.int64))
        return set(keys[1:][keys[1:] == keys[:-1]].tolist())

    def rankings(self) -> dict[str, list[tuple[str, float]]]:
        """Every query's kept documents, best first (score descending, then docno descending)."""
        return {
            qid: [(doc, score) for score, doc in sorted(heap, reverse=True)]
            for qid, heap in self.heaps.items()
        }


def _refuse_repeats(source: _File, suspects: set[int]) -> None:
    """Read the file again and refuse the first (query, document) that repeats an earlier line,
    among those whose hash is in ``suspects``; a file that reads differently the second time (a
    pipe, a file being written) is refused too, since its repeats cannot be named."""
    first: dict[tuple[str, str], int] = {}
    again = _File(source.path, source.fmt)
    for qid, doc, _, line in again.records():
        if hash((qid, doc)) not in suspects:
            continue
        earlier = first.get((qid, doc))
        if earlier is None:
            first[qid, doc] = line
        else:  # (in JSONL both may be on one line)
            raise again.problem(
                f"document {doc!r} appears twice for query {qid!r} (first at line {earlier})", line
            )
    if again.digest.digest() != source.digest.digest():
        raise source.problem(
            "a document may appear twice for one query, and the file read differently the "
            "second time it was read to find the line (a pipe, or a file being written): give "
            "a regular file that is not changing",
            code="unstable-file",
        )


def read_run(path: Path, fmt: RunFormat, depth: int) -> RunFile:
    """The run file at ``path`` (gzipped or not), each query's best ``depth`` documents kept;
    InputError naming file and line for anything trec_eval would not read (see the module
    docstring). The columnar readers (``data.runcolumns``) read the file first, and answer only
    where they read it as the line reader does; the line reader here is the reference, and
    reads every other file (and names the line of any problem)."""
    source = _File(path, fmt)
    early = early_runs.take(path) if fmt == "trec" else None
    if early is not None:  # read while the command's modules imported
        fast = read_trec_columns((), depth, source.limit, early)
        sha256 = early.sha256
    else:
        read_columns = read_trec_columns if fmt == "trec" else read_jsonl_columns
        fast = read_columns(source.chunks(), depth, source.limit)
        sha256 = source.digest.hexdigest()
    if fast is not None:
        return RunFile(
            query_ids=fast.query_ids,
            doc_ids=fast.doc_ids,
            offsets=fast.offsets,
            docs=fast.docs,
            scores=fast.scores,
            sha256=sha256,
            n_lines=fast.n_lines,
            doc_names=fast.doc_names,
        )
    return read_run_lines(path, fmt, depth)


def read_run_lines(path: Path, fmt: RunFormat, depth: int) -> RunFile:
    """``read_run`` by the line reader alone: the reference the columnar reader must equal."""
    source = _File(path, fmt)
    top = _Top(depth)
    add = top.add
    for qid, doc, score, _ in source.records():
        add(qid, doc, score)
    if not top.heaps and not source.queries:
        raise source.problem(
            "no ranking line (the file is empty, or holds only blank and comment lines)",
            code="empty-run",
        )
    suspects = top.repeated_keys()
    if suspects:
        _refuse_repeats(source, suspects)
    rankings = top.rankings()
    if fmt == "jsonl":  # every query given, in the file's order, one with no results too
        rankings = {qid: rankings.get(qid, []) for qid in source.queries}
    doc_ids, offsets, docs, scores = columns(rankings)
    return RunFile(
        query_ids=list(rankings),
        doc_ids=doc_ids,
        offsets=offsets,
        docs=docs,
        scores=scores,
        sha256=source.digest.hexdigest(),
        n_lines=source.n_lines,
        scores_partial=source.scores_partial,
    )


def run_tag(path: Path) -> str:
    """The tag (sixth column) of a TREC run file's last ranking line: the run id trec_eval
    prints. Read after ``read_run`` has accepted the file, so every line is well-formed; an
    uncompressed file is read from its end, a block at a time, until a ranking line."""
    tail = _last_tag(path)
    if tail is not None:
        return tail.decode("utf-8", "backslashreplace")
    tag = b""
    for _, data in _File(path, "trec").lines():
        columns = data.split(None, 6)
        if len(columns) >= 6 and not columns[0].startswith(b"#"):
            tag = columns[5]
    return tag.decode("utf-8", "backslashreplace")


def _last_tag(path: Path, block: int = 1 << 16) -> bytes | None:
    """The tag of the last ranking line of an uncompressed file, read backwards from its end;
    None for a gzipped file, or where the search reaches the first line (``run_tag`` reads
    those forwards, the byte-order mark dropped)."""
    with path.open("rb") as f:
        if f.read(2) == GZIP_MAGIC:
            return None
        end = f.seek(0, 2)
        start = end
        while start > 0:
            start = max(0, start - block)
            f.seek(start)
            data = f.read(end - start)
            lines = data.split(b"\n")
            for line in reversed(lines[1:]):  # lines[0] may begin before the block
                columns = line.split(None, 6)
                if len(columns) >= 6 and not columns[0].startswith(b"#"):
                    return columns[5]
            block *= 2
    return None
