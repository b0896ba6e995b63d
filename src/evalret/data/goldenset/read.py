"""The golden-set readers of the three formats (native, BEIR, TREC), the format detection, and
``load_golden_set``. The formats and rules: evalret.data.goldenset."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from evalret.core.metrics import MAX_GRADE
from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL
from evalret.data.config import (
    GoldenSetConfig,
)
from evalret.data.textfile import BOM, TextProblem, decode, parse_json
from evalret.errors import GoldenSetError

if TYPE_CHECKING:
    pass
from evalret.data.goldenset.model import Format, GoldenSet
from evalret.data.goldenset.scan import (
    SOURCES_FILE,
    GoldenSetScan,
    _BeirDoc,
    _BeirQuery,
    _doc_text,
    _lines_listed,
    _NativeDoc,
    _NativeQuery,
    _SourceLine,
)

_INT_GRADE = re.compile(r"^[+-]?\d+$")
_DECIMAL_GRADE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+)$")


def scan_native(
    directory: Path, relevance_level: int = DEFAULT_RELEVANCE_LEVEL, keep_metadata: bool = False
) -> GoldenSetScan:
    b = GoldenSetScan(relevance_level, keep_metadata)
    corpus, queries = directory / "corpus.jsonl", directory / "queries.jsonl"
    for n, doc in b.jsonl(corpus, _NativeDoc):
        b.add_doc(doc.id, _doc_text(doc.title, doc.text), corpus, n)
        b.add_metadata(doc.id, doc.metadata, corpus, n)
    order: list[str] = []
    for n, q in b.jsonl(queries, _NativeQuery):
        if not b.add_query(q.id, q.text, queries, n):
            continue
        relevant = q.relevant if isinstance(q.relevant, dict) else dict.fromkeys(q.relevant, 1)
        if relevant:
            order.append(q.id)
        else:  # judged nothing: as BEIR and TREC leave out their unjudged queries (trec_eval too)
            b.warn(
                f"query {q.id!r} judges no document: it is not evaluated",
                queries,
                n,
                "unjudged-query",
            )
        b.qrels.setdefault(q.id, {})
        for doc_id, grade in relevant.items():
            b.add_judgment(q.id, doc_id, grade, queries, n)
        tags = [*q.tags, f"origin:{q.origin}"] if q.origin else q.tags
        if tags:
            b.tags[q.id] = tuple(dict.fromkeys(tags))
        if q.frequency is not None:
            b.frequency[q.id] = q.frequency
        if "filter" in q.model_fields_set:
            b.add_filter(q.id, q.filter, queries, n)
        for doc_id, source in q.sources.items():
            b.add_source(q.id, doc_id, source, queries, n)
        for doc_id, llm in q.llm_relevant.items():
            b.add_llm_grade(q.id, doc_id, llm.grade, llm.source, queries, n)
    return b.finish(str(directory), "native", order)


def _qrels_grade(text: str) -> tuple[int | None, bool]:
    """A qrels grade as trec_eval reads it: (value, truncated); value None when not a number.
    Decimals are truncated toward zero (``1.7`` -> 1, ``-0.5`` -> 0, ``2.`` -> 2)."""
    if _INT_GRADE.match(text):
        return int(text), False
    if _DECIMAL_GRADE.match(text):
        whole = text.split(".")[0]
        return (int(whole) if whole.strip("+-") else 0), True
    return None, False


def _read_qrels_rows(
    b: GoldenSetScan, path: Path, columns: int, header: bool, columnar: bool = True
) -> list[str]:
    """Judgments from a whitespace-separated qrels file; returns query ids in first-seen order.
    ``#`` comment lines are skipped; decimal grades are truncated with one warning per file.
    A plain file (``_read_plain_qrels``) is read as columns (unless not ``columnar``: the line
    reader, the reference, reads every file); any other line by line."""
    if columnar and not header and not b.qrels:
        judged = _read_plain_qrels(b, path, columns)
        if judged is not None:
            return judged
    order: dict[str, None] = {}
    truncated: list[int] = []
    for n, raw in b.lines(path):
        parts = raw.split()
        if parts[0].startswith("#"):
            continue
        value, was_decimal = _qrels_grade(parts[-1])
        if header and n == 1 and len(parts) == columns and value is None:
            continue
        if len(parts) != columns:
            b.problem(
                f"expected {columns} columns, found {len(parts)}", path, n, code="qrels-format"
            )
            continue
        if value is None:
            b.problem(f"grade {parts[-1]!r} is not a number", path, n, code="qrels-format")
            continue
        if was_decimal:
            truncated.append(n)
        b.add_judgment(parts[0], parts[-2], value, path, n)
        order.setdefault(parts[0], None)
    if truncated:
        b.warn(
            f"non-integer grades truncated toward zero, as trec_eval reads them, at lines "
            f"{_lines_listed(truncated)}",
            path,
            truncated[0],
            "non-integer-grade",
        )
    return list(order)


_PLAIN_GRADES = re.compile(r"[+-]?[0-9]+(?: [+-]?[0-9]+)*")


def _read_plain_qrels(b: GoldenSetScan, path: Path, columns: int) -> list[str] | None:
    """``_read_qrels_rows`` of a plain qrels file, read as columns, not line by line: its bytes
    (after a byte-order mark) printable ASCII, spaces, tabs, carriage returns and newlines; no
    ``#``; each line blank or of ``columns`` fields, the last an integer grade within range;
    no judgment twice. Any other file (or one that cannot be read) gives None, with nothing
    added to ``b``: the line reader then reads it and names the line of each problem."""
    import numpy as np

    try:
        data = path.read_bytes().removeprefix(BOM)
    except OSError:
        return None
    if not data or b"#" in data:
        return None
    text = np.frombuffer(data, dtype=np.uint8)
    newline = text == 10
    space = (text == 32) | (text == 9) | (text == 13)
    if not bool((((text > 32) & (text < 127)) | newline | space).all()):
        return None
    word = ~(newline | space)
    starts = word.copy()  # a field's first byte
    starts[1:] &= ~word[:-1]
    line = np.searchsorted(np.flatnonzero(newline), np.flatnonzero(starts))  # 0-based
    fields = np.bincount(line)
    if not bool(((fields == 0) | (fields == columns)).all()):
        return None
    tokens = data.decode("ascii").split()  # str.split(): the line reader's split, on ASCII
    queries, docs, grades = (
        tokens[::columns],
        tokens[columns - 2 :: columns],
        tokens[columns - 1 :: columns],
    )
    if not _PLAIN_GRADES.fullmatch(" ".join(grades)):
        return None
    values = list(map(int, grades))
    if max(map(abs, values)) > MAX_GRADE:
        return None
    qrels: dict[str, dict[str, int]] = {}
    for query_id, doc_id, grade in zip(queries, docs, values, strict=True):
        judged = qrels.get(query_id)
        if judged is None:
            judged = qrels[query_id] = {}
        judged[doc_id] = grade
    if sum(map(len, qrels.values())) != len(values):  # a judgment twice
        return None
    numbers = (np.flatnonzero(fields) + 1).tolist()
    b.qrels.update(qrels)
    b.qrel_where.extend(zip(queries, docs, [path] * len(numbers), numbers, strict=True))
    return list(qrels)


def scan_beir(
    directory: Path,
    split: str,
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL,
    keep_metadata: bool = False,
) -> GoldenSetScan:
    b = GoldenSetScan(relevance_level, keep_metadata)
    corpus, queries = directory / "corpus.jsonl", directory / "queries.jsonl"
    qrels = directory / "qrels" / f"{split}.tsv"
    if not qrels.exists():
        available = sorted(p.stem for p in (directory / "qrels").glob("*.tsv"))
        raise GoldenSetError(
            f"golden set {directory}: no qrels for split {split!r} ({qrels}); "
            f"available splits: {', '.join(available) or 'none'}"
        )
    for n, doc in b.jsonl(corpus, _BeirDoc):
        b.add_doc(doc.id, _doc_text(doc.title, doc.text), corpus, n)
        b.add_metadata(doc.id, doc.metadata, corpus, n)
    for n, q in b.jsonl(queries, _BeirQuery):
        if b.add_query(q.id, q.text, queries, n) and "filter" in q.model_fields_set:
            b.add_filter(q.id, q.filter, queries, n)
    judged = _read_qrels_rows(b, qrels, columns=3, header=True)
    read_sources_file(b, directory / SOURCES_FILE, other_splits=True)
    return b.finish(str(directory), "beir", [q for q in judged if q in b.queries])


def read_sources_file(b: GoldenSetScan, path: Path, other_splits: bool = False) -> None:
    """``judgments.sources.jsonl`` into the scan, when there is one. ``other_splits`` (BEIR):
    a line for a query judged in none of the qrels read is another split's, and skipped."""
    if not path.is_file():
        return
    for n, rec in b.jsonl(path, _SourceLine):
        if other_splits and rec.query_id not in b.qrels and rec.query_id in b.queries:
            continue
        if rec.grade is None:
            b.add_source(rec.query_id, rec.doc_id, rec.source, path, n)
        else:
            b.add_llm_grade(rec.query_id, rec.doc_id, rec.grade, rec.source, path, n)


def _tsv_pairs(b: GoldenSetScan, path: Path, id_name: str) -> Iterator[tuple[int, str, str]]:
    """(line, id, text) from ``id<TAB>text`` lines; malformed lines become problems."""
    for n, raw in b.lines(path):
        key, sep, text = raw.rstrip("\n").partition("\t")
        if not sep:
            b.problem(f"expected '{id_name}<TAB>text'", path, n, code="tsv-format")
            continue
        yield n, key.strip(), text.strip()


def _read_trec_queries(b: GoldenSetScan, path: Path) -> None:
    if path.suffix == ".jsonl":
        for n, q in b.jsonl(path, _BeirQuery):
            if b.add_query(q.id, q.text, path, n) and "filter" in q.model_fields_set:
                b.add_filter(q.id, q.filter, path, n)
    else:
        for n, query_id, text in _tsv_pairs(b, path, "query_id"):
            b.add_query(query_id, text, path, n)


def _read_trec_corpus(b: GoldenSetScan, path: Path) -> None:
    if path.suffix == ".jsonl":
        for n, doc in b.jsonl(path, _BeirDoc):
            b.add_doc(doc.id, _doc_text(doc.title, doc.text), path, n)
            b.add_metadata(doc.id, doc.metadata, path, n)
    else:
        for n, doc_id, text in _tsv_pairs(b, path, "doc_id"):
            b.add_doc(doc_id, text, path, n)


def _find(directory: Path, names: tuple[str, ...]) -> Path | None:
    return next((directory / n for n in names if (directory / n).is_file()), None)


TREC_QRELS_NAMES = ("qrels.txt", "qrels.trec", "qrels.tsv", "qrels")
TREC_QUERIES_NAMES = ("queries.tsv", "topics.tsv", "queries.jsonl", "queries.txt")
TREC_CORPUS_NAMES = ("corpus.jsonl", "corpus.tsv", "collection.tsv")


def _scan_qrels_only(qrels: Path, relevance_level: int) -> GoldenSetScan:
    """A golden set of a qrels file alone: its documents and queries are the judged ones, in
    first-seen order, without text (``evalret score``: nothing is embedded)."""
    b = GoldenSetScan(relevance_level)
    judged = _read_qrels_rows(b, qrels, columns=4, header=False)
    for query_id, doc_id, path, line in b.qrel_where:
        if query_id not in b.queries:
            b.queries[query_id], b.query_where[query_id] = "", (path, line)
        if doc_id not in b.docs:
            b.docs[doc_id], b.doc_where[doc_id] = "", (path, line)
    ids = "".join(b.queries) + "".join(b.docs)
    if not (ids.isascii() and ids.isprintable() and " " not in ids):  # else none check_id refuses
        for query_id, doc_id, path, line in b.qrel_where:  # each id where first met, in order
            if b.query_where[query_id] == (path, line):
                b.check_id("query", query_id, path, line)
            if b.doc_where[doc_id] == (path, line):
                b.check_id("document", doc_id, path, line)
    read_sources_file(b, qrels.parent / SOURCES_FILE)
    return b.finish(str(qrels), "trec", judged)


def scan_trec(
    qrels: Path,
    queries: Path | None,
    corpus: Path | None,
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL,
    qrels_only: bool = False,
    keep_metadata: bool = False,
) -> GoldenSetScan:
    """A TREC golden set: qrels, queries and corpus (found beside the qrels when not given);
    with ``qrels_only``, the qrels alone when no queries or corpus file is there."""
    base = qrels.parent
    queries = queries or _find(base, TREC_QUERIES_NAMES)
    corpus = corpus or _find(base, TREC_CORPUS_NAMES)
    if qrels_only and (queries is None or corpus is None):
        return _scan_qrels_only(qrels, relevance_level)
    missing = [
        f"{what} (set golden_set.{what} or add one of {', '.join(names)} beside the qrels)"
        for what, found, names in (
            ("queries", queries, TREC_QUERIES_NAMES),
            ("corpus", corpus, TREC_CORPUS_NAMES),
        )
        if found is None
    ]
    if queries is None or corpus is None:
        raise GoldenSetError(f"TREC golden set {qrels}: missing " + "; ".join(missing))
    b = GoldenSetScan(relevance_level, keep_metadata)
    _read_trec_corpus(b, corpus)
    _read_trec_queries(b, queries)
    judged = _read_qrels_rows(b, qrels, columns=4, header=False)
    read_sources_file(b, qrels.parent / SOURCES_FILE)
    return b.finish(str(qrels), "trec", [q for q in judged if q in b.queries])


def _first_record_keys(path: Path) -> set[str]:
    """The keys of the first JSON object in a JSONL file; empty when there is none to read (the
    reader then says what is wrong)."""
    try:
        with path.open("rb") as f:
            first = next((line for line in f if line.strip()), b"")
        record = parse_json(decode(first))
    except (OSError, TextProblem):
        return set()
    return set(record) if isinstance(record, dict) else set()


def detect_format(cfg: GoldenSetConfig) -> Format:
    """Which reader fits ``cfg.path``; an explicit ``format`` wins."""
    if cfg.format != "auto":
        return cfg.format
    path = cfg.path
    if cfg.qrels is not None or path.is_file():
        return "trec"
    if not path.is_dir():
        raise GoldenSetError(
            f"golden set not found: {path} (set golden_set.path in the config; relative paths "
            "in the file are resolved against its folder, those given by --set or without a "
            "config file against the current directory)"
        )
    if (path / "qrels").is_dir():
        return "beir"
    if _find(path, TREC_QRELS_NAMES):
        return "trec"
    if (path / "corpus.jsonl").is_file() and (path / "queries.jsonl").is_file():
        if _first_record_keys(path / "corpus.jsonl") & {"_id", "id"} == {"_id"}:
            raise GoldenSetError(
                f"golden set {path}: BEIR layout without qrels/ directory: corpus.jsonl records "
                "use '_id' (BEIR style) but there is no qrels/<split>.tsv; add the qrels, or "
                "write native records (id, text, relevant) and set golden_set.format: native"
            )
        return "native"
    raise GoldenSetError(
        f"cannot tell the format of golden set {path}: expected corpus.jsonl + queries.jsonl "
        "(native), a qrels/ directory (BEIR) or a qrels file (TREC); set golden_set.format"
    )


def scan_golden_set(
    cfg: GoldenSetConfig,
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL,
    keep_metadata: bool = False,
) -> GoldenSetScan:
    """Read the files of the golden set the config points at, collecting every problem;
    ``relevance_level`` decides which queries have a relevant document.

    Raises GoldenSetError only when the files cannot be located (unknown format, missing split
    or TREC companion files); problems inside the files are in the scan's errors and warnings.
    ``keep_metadata``: the scan's ``raw_metadata`` holds each document's metadata as written
    (`evalret embed --export`).
    """
    fmt = detect_format(cfg)
    if fmt == "native":
        return scan_native(cfg.path, relevance_level, keep_metadata)
    if fmt == "beir":
        return scan_beir(cfg.path, cfg.split, relevance_level, keep_metadata)
    qrels = cfg.qrels or (cfg.path if cfg.path.is_file() else _find(cfg.path, TREC_QRELS_NAMES))
    if qrels is None:
        raise GoldenSetError(f"TREC golden set {cfg.path}: no qrels file (set golden_set.qrels)")
    return scan_trec(qrels, cfg.queries, cfg.corpus, relevance_level, cfg.qrels_only, keep_metadata)


def load_golden_set(
    cfg: GoldenSetConfig, relevance_level: int = DEFAULT_RELEVANCE_LEVEL
) -> GoldenSet:
    """Read the golden set the config points at, auto-detecting its format; raises
    GoldenSetError listing every error (warnings do not stop a run: the GoldenSet keeps them)."""
    return scan_golden_set(cfg, relevance_level).golden_set()
