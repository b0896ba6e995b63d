"""Rankings made outside evalret (a run file, a Python function) as a ``SearchResult``.

Documents are named by strings; a name the corpus does not have gets an id past the corpus end
(``core.ranking``: ``extra_docs``), numbered in the order they are first met (the evaluated
queries in order, each from its best rank down). What did not line up with the golden set is
counted: queries of the golden set the ranking does not have (they score 0: an empty ranking),
queries it has that the evaluated golden set does not (ignored, a warning), and retrieved
documents the corpus does not have (unjudged).

The rankings come as columns (``RankedColumns``: a run file's ``data.runfile.RunFile`` is one):
each distinct document name is looked up in the corpus once (in pyarrow when the run carries its
names as a pyarrow array), queries are aligned by a dict, and the ``[queries, depth]`` arrays
are filled by numpy, never row by row in Python.

Code that returns rankings (a Python retriever, a store driver) passes the checks of
engines/ranking_checks.py, which make its silent mistakes loud.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Protocol

import numpy as np

from evalret.core.ranking import SearchResult, empty_result
from evalret.core.treceval.ranking import RunColumns
from evalret.data.runcolumns import ArrowNames, arrow_numbers
from evalret.data.runfile import columns


@dataclass(frozen=True)
class Alignment:
    """What an external ranking did not share with the golden set, counted."""

    queries_missing: int  # evaluated queries the ranking lacks (scored on an empty ranking)
    queries_unknown: int  # ranked queries that are not evaluated (ignored)
    documents_unknown: int  # (query, document) pairs kept whose document the corpus lacks

    def params(self) -> dict[str, int]:
        """The counts as the report's index params show them."""
        return {
            "queries_missing": self.queries_missing,
            "queries_unknown": self.queries_unknown,
            "documents_unknown": self.documents_unknown,
        }

    def warnings(self, name: str) -> list[str]:
        """One line per nonzero count, for the terminal and the Markdown report."""
        out = []
        if self.queries_missing:
            out.append(f"{name}: {self.queries_missing} queries not in the ranking (scored 0)")
        if self.queries_unknown:
            out.append(f"{name}: {self.queries_unknown} ranked queries not evaluated (ignored)")
        if self.documents_unknown:
            out.append(
                f"{name}: {self.documents_unknown} retrieved documents not in the corpus (unjudged)"
            )
        return out


class RankedColumns(RunColumns, Protocol):
    """Rankings as columns: query ``query_ids[i]`` holds rows ``offsets[i]`` to
    ``offsets[i + 1]`` of ``docs`` (indices into ``doc_ids``) and ``scores``, best first."""

    @property
    def scores(self) -> np.ndarray: ...


@dataclass(frozen=True)
class Columns:
    """``RankedColumns`` made here (from a mapping: ``to_search_result``)."""

    query_ids: list[str]
    doc_ids: list[str]
    offsets: np.ndarray
    docs: np.ndarray
    scores: np.ndarray


def to_search_result(
    ranked: Mapping[str, Sequence[tuple[str, float]]],
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    depth: int,
) -> tuple[SearchResult, Alignment]:
    """``ranked`` (query id -> (document name, score) pairs, already in tie-rule order) as one
    row per query of ``query_ids``, the first ``depth`` ranks; unknown documents as extra ids."""
    names, offsets, docs, scores = columns({q: list(row) for q, row in ranked.items()})
    return columns_search_result(
        Columns(list(ranked), names, offsets, docs, scores), query_ids, doc_ids, depth
    )


@dataclass(frozen=True)
class _Kept:
    """Where the kept (query, rank) pairs come from: ``run``'s rows ``starts[i]`` to
    ``starts[i] + lengths[i]`` for result row ``present[i]`` (the evaluated queries in order,
    each its first ``depth`` ranks); and how many evaluated queries ``run`` lacks."""

    present: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    missing: int

    @property
    def source(self) -> slice | np.ndarray:
        """Each kept pair's row in ``run``'s columns: a slice when they are its rows from the
        first on, in order (a run of exactly the evaluated queries, none cut: no index array
        is made), else their indices."""
        first = self._first()  # (each query's start in the kept order: where the one before ends)
        total = int(self.lengths.sum())
        if not len(self.starts) or bool((self.starts == first).all()):
            return slice(0, total)
        return np.repeat(self.starts - first, self.lengths) + np.arange(total)

    def placement(self) -> tuple[np.ndarray, np.ndarray]:
        """Each kept pair's result row and rank (0-based)."""
        rank = np.arange(int(self.lengths.sum()), dtype=np.int64)
        rank -= np.repeat(self._first(), self.lengths)
        return np.repeat(self.present, self.lengths), rank

    def _first(self) -> np.ndarray:
        """Where each query's pairs begin in the kept order."""
        first: np.ndarray = np.cumsum(self.lengths) - self.lengths
        return first


def _kept(run: RankedColumns, query_ids: Sequence[str], depth: int) -> _Kept:
    """``_Kept`` of ``run`` for the evaluated ``query_ids``, each to ``depth`` ranks."""
    position = {q: i for i, q in enumerate(run.query_ids)}
    source = np.fromiter(map(position.get, query_ids, repeat(-1)), np.int64, len(query_ids))
    present = np.flatnonzero(source >= 0)
    offsets = np.asarray(run.offsets, dtype=np.int64)
    starts = offsets[source[present]]
    lengths = np.minimum(offsets[source[present] + 1] - starts, depth)
    return _Kept(present, starts, lengths, len(query_ids) - len(present))


def _corpus_ids(run: RankedColumns, doc_ids: Sequence[str]) -> np.ndarray:
    """Each of ``run``'s documents' index in ``doc_ids`` (whose names are distinct), -1 for
    those it lacks: looked up in pyarrow when the run carries its names as a pyarrow array
    (``data.runfile.RunFile.doc_names``), else in a dict."""
    names = getattr(run, "doc_names", None)
    corpus = None if names is None else _arrow_strings(doc_ids)
    if corpus is not None:
        from evalret.data import arrow_kernels as pc

        found = pc.index_in(names, value_set=corpus)  # null where absent
        ids = arrow_numbers(found).astype(np.int64)
        if found.null_count:  # (pyarrow's fill_null imports pandas)
            bits = np.frombuffer(found.buffers()[0], dtype=np.uint8)
            valid = np.unpackbits(bits, count=found.offset + len(found), bitorder="little")
            ids[valid[found.offset :] == 0] = -1
        return ids
    index = {d: i for i, d in enumerate(doc_ids)}
    return np.fromiter(map(index.get, run.doc_ids, repeat(-1)), np.int64, len(run.doc_ids))


def _arrow_strings(texts: Sequence[str]) -> Any:
    """``texts`` as a pyarrow string array, built from its buffers (``pyarrow.array`` on a
    list imports pandas, a good part of a second); None for a text UTF-8 cannot hold (a lone
    surrogate)."""
    import pyarrow as pa

    try:
        encoded = [t.encode("utf-8") for t in texts]
    except UnicodeEncodeError:
        return None
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
    data = pa.py_buffer(b"".join(encoded))
    return pa.LargeStringArray.from_buffers(len(encoded), pa.py_buffer(offsets), data)


def columns_search_result(
    run: RankedColumns,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    depth: int,
) -> tuple[SearchResult, Alignment]:
    """``run``'s rankings as one row per query of ``query_ids``, the first ``depth`` ranks; the
    documents the corpus lacks as extra ids, numbered in the order they are first met."""
    n_run = len(run.doc_ids)
    corpus = _corpus_ids(run, doc_ids)
    kept = _kept(run, query_ids, depth)
    source = kept.source
    docs = np.asarray(run.docs)[source]  # (a slice: a view, not a copy)
    ids = corpus[docs]
    unknown = ids < 0
    codes = docs[unknown]  # the run's index of each unknown document kept, in the order met
    count = np.dtype(np.int32 if len(codes) < 1 << 31 else np.int64)
    first: np.ndarray = np.full(n_run, len(codes), dtype=count)  # where each is first met
    np.minimum.at(first, codes, np.arange(len(codes), dtype=count))
    met = np.flatnonzero(first < len(codes))
    order = met[np.argsort(first[met])]  # the distinct unknown documents, in the order first met
    del first, met
    number = np.zeros(n_run, dtype=np.int64)
    number[order] = np.arange(len(doc_ids), len(doc_ids) + len(order), dtype=np.int64)
    ids[unknown] = number[codes]
    del number, codes
    scores = np.asarray(run.scores)[source]  # (a view when source is a slice: copied below)
    scores = scores.astype(np.float64, copy=isinstance(source, slice))
    if depth and len(ids) == len(query_ids) * depth:  # every row full: the ranks kept, row by row
        out = SearchResult(ids.reshape(-1, depth), scores.reshape(-1, depth))
    else:
        out = empty_result(len(query_ids), depth)
        row, rank = kept.placement()
        out.ids[row, rank] = ids
        out.scores[row, rank] = scores
    evaluated = set(query_ids)
    alignment = Alignment(
        queries_missing=kept.missing,
        queries_unknown=sum(1 for q in run.query_ids if q not in evaluated),
        documents_unknown=int(unknown.sum()),
    )
    extra: Sequence[str] = (
        run.doc_ids.rows(order)  # (named only when something shows them)
        if isinstance(run.doc_ids, ArrowNames)
        else tuple(np.asarray(run.doc_ids, dtype=object)[order])
    )
    return SearchResult(ids=out.ids, scores=out.scores, extra_docs=extra), alignment
