"""Rankings made outside evalret (a run file, a Python function) as a ``SearchResult``.

Documents are named by strings; a name the corpus does not have gets an id past the corpus end
(``core.ranking``: ``extra_docs``), numbered in the order they are first met (the evaluated
queries in order, each from its best rank down). What did not line up with the golden set is
counted: queries of the golden set the ranking does not have (they score 0: an empty ranking),
queries it has that the evaluated golden set does not (ignored, a warning), and retrieved
documents the corpus does not have (unjudged).

The rankings come as columns (``RankedColumns``: a run file's ``data.runfile.RunFile`` is one):
each distinct document name is looked up in the corpus once, queries are aligned by a dict, and
the ``[queries, depth]`` arrays are filled by numpy, never row by row in Python.

Code that returns rankings (a Python retriever; the store drivers to come) passes two checks here
that make its silent mistakes loud: ``check_score_direction`` refuses scores that rise along the
returned lists (a distance passed as a similarity), and ``RankingCounts`` counts short rankings
and documents returned outside a query's filter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Protocol

import numpy as np

from evalret.core.ranking import SearchResult, empty_result
from evalret.data.runfile import columns
from evalret.errors import ConfigError, Problem

# a distance passed as a similarity (check_score_direction): refused when at least this share of
# the queries that can tell have scores rising along the returned list, and at least this many can
RISING_SHARE = 0.9
RISING_MIN_QUERIES = 5
EXAMPLES_SHOWN = 3  # query ids kept as examples of a count (report params and notes)


def rising_queries(returned: Iterable[Sequence[float]]) -> tuple[int, int]:
    """(queries whose scores rise along their returned list, queries that can tell). A query
    can tell when its list holds at least two distinct scores; its scores rise when they never
    fall from one pair to the next (so they rise strictly somewhere)."""
    rising = telling = 0
    for scores in returned:
        values = np.asarray(scores, dtype=np.float64)
        if values.size < 2 or values.min() == values.max():
            continue
        telling += 1
        rising += bool((np.diff(values) >= 0).all())
    return rising, telling


def check_score_direction(label: str, returned: Iterable[Sequence[float]]) -> None:
    """ConfigError (exit 2) naming ``label`` when the scores, each query's list in the order the
    code returned it, rise along the lists: the code returns its best document first with the
    lowest score, a distance, which evalret's score-descending order would turn upside down.

    The rule: among the queries whose list holds at least two distinct scores, at least
    ``RISING_SHARE`` have scores that never fall along the list, and there are at least
    ``RISING_MIN_QUERIES`` such queries. A list returned best-first with similarities falls; one
    in no particular order (a dict's, a set's) rises for a query by chance only (1 in n! for n
    distinct scores), so is accepted; scores all equal, or too few queries, tell nothing and are
    accepted. Similarities returned worst-first are refused like distances (return them
    best-first, or in any other order)."""
    rising, telling = rising_queries(returned)
    if telling < RISING_MIN_QUERIES or rising < RISING_SHARE * telling:
        return
    raise ConfigError(
        f"{label} returned scores that rise along the returned list in {rising} of {telling} "
        "queries: these look like distances (smaller is nearer), which evalret's "
        "higher-is-better order would turn upside down",
        [
            Problem(
                "fix: return a similarity (higher is better), e.g. -distance or 1 - cosine "
                "distance; similarities returned worst-first: return them best-first"
            )
        ],
    )


@dataclass
class RankingCounts:
    """What code returning rankings did that evalret corrected silently before, counted over
    one index's queries: rankings shorter than the depth while the corpus had more eligible
    documents, and documents returned outside the query's filter (dropped), with the first few
    query ids of each as examples."""

    queries_short: int = 0
    documents_outside_filter: int = 0
    short_examples: list[str] = field(default_factory=list)
    outside_examples: list[str] = field(default_factory=list)

    def add(self, qid: str, kept: int, wanted: int, outside: int) -> None:
        """Count one query: ``kept`` ranks kept of the ``wanted`` (the depth, or fewer when
        fewer documents are eligible), ``outside`` documents dropped as outside its filter."""
        if kept < wanted:
            self.queries_short += 1
            if len(self.short_examples) < EXAMPLES_SHOWN:
                self.short_examples.append(qid)
        if outside:
            self.documents_outside_filter += outside
            if len(self.outside_examples) < EXAMPLES_SHOWN:
                self.outside_examples.append(qid)

    def params(self) -> dict[str, Any]:
        """The nonzero counts (and their examples) as the index's params: an index that did
        nothing wrong keeps the params, and so the fingerprint, it had."""
        out: dict[str, Any] = {}
        if self.queries_short:
            out["queries_short"] = self.queries_short
            out["queries_short_examples"] = list(self.short_examples)
        if self.documents_outside_filter:
            out["documents_outside_filter"] = self.documents_outside_filter
            out["documents_outside_filter_examples"] = list(self.outside_examples)
        return out


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


class RankedColumns(Protocol):
    """Rankings as columns: query ``query_ids[i]`` holds rows ``offsets[i]`` to
    ``offsets[i + 1]`` of ``docs`` (indices into ``doc_ids``) and ``scores``, best first."""

    @property
    def query_ids(self) -> list[str]: ...
    @property
    def doc_ids(self) -> list[str]: ...
    @property
    def offsets(self) -> np.ndarray: ...
    @property
    def docs(self) -> np.ndarray: ...
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


def _rows(
    run: RankedColumns, query_ids: Sequence[str], depth: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Where each kept (query, rank) comes from: its row in the result, its rank and its row in
    ``run``'s columns (the evaluated queries in order, each its first ``depth`` ranks); and how
    many evaluated queries ``run`` lacks."""
    position = {q: i for i, q in enumerate(run.query_ids)}
    source = np.fromiter(map(position.get, query_ids, repeat(-1)), np.int64, len(query_ids))
    present = np.flatnonzero(source >= 0)
    offsets = np.asarray(run.offsets, dtype=np.int64)
    starts = offsets[source[present]]
    lengths = np.minimum(offsets[source[present] + 1] - starts, depth)
    total = int(lengths.sum())
    first = np.cumsum(lengths) - lengths  # where each query's ranks begin in the flat order
    rank = np.arange(total, dtype=np.int64) - np.repeat(first, lengths)
    return (
        np.repeat(present, lengths),
        rank,
        np.repeat(starts, lengths) + rank,
        len(query_ids) - len(present),
    )


def columns_search_result(
    run: RankedColumns,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    depth: int,
) -> tuple[SearchResult, Alignment]:
    """``run``'s rankings as one row per query of ``query_ids``, the first ``depth`` ranks; the
    documents the corpus lacks as extra ids, numbered in the order they are first met."""
    index = {d: i for i, d in enumerate(doc_ids)}
    n_run = len(run.doc_ids)
    corpus = np.fromiter(map(index.get, run.doc_ids, repeat(-1)), np.int64, n_run)
    row, rank, source, missing = _rows(run, query_ids, depth)
    docs = np.asarray(run.docs, dtype=np.int64)[source]
    ids = corpus[docs]
    unknown = ids < 0
    codes = docs[unknown]  # the run's index of each unknown document kept, in the order met
    first = np.full(n_run, len(codes), dtype=np.int64)  # where each is first met
    np.minimum.at(first, codes, np.arange(len(codes), dtype=np.int64))
    met = np.flatnonzero(first < len(codes))
    order = met[np.argsort(first[met])]  # the distinct unknown documents, in the order first met
    number = np.zeros(n_run, dtype=np.int64)
    number[order] = np.arange(len(order), dtype=np.int64)
    ids[unknown] = len(doc_ids) + number[codes]
    out = empty_result(len(query_ids), depth)
    out.ids[row, rank] = ids
    out.scores[row, rank] = np.asarray(run.scores, dtype=np.float64)[source]
    evaluated = set(query_ids)
    alignment = Alignment(
        queries_missing=missing,
        queries_unknown=sum(1 for q in run.query_ids if q not in evaluated),
        documents_unknown=int(unknown.sum()),
    )
    extra = tuple(map(run.doc_ids.__getitem__, order.tolist()))
    return SearchResult(ids=out.ids, scores=out.scores, extra_docs=extra), alignment
