"""What the metrics read about each query's ranking: the grades at each rank, what is judged, the
ideal orderings (``RankedJudgments``), and ``build_judgments``, which looks every ranked
document's grade up in one vectorized pass. Negative grades: see the package's docstring."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL, is_judged, is_relevant


@dataclass(frozen=True)
class Hits:
    """Some cells of a [Q, depth] table, in row-major order (query, then rank): the sparse view
    the metrics sum over. ``values``: the table's value at each cell (None when not needed)."""

    query: np.ndarray  # int64 [n], ascending
    rank: np.ndarray  # int64 [n], 0-based, ascending within a query
    values: np.ndarray | None
    n_queries: int

    @classmethod
    def of(cls, mask: np.ndarray, table: np.ndarray | None = None) -> Hits:
        flat = np.flatnonzero(mask)
        width = max(int(mask.shape[1]), 1)
        values = None if table is None else table.ravel()[flat]
        query, rank = np.divmod(flat, width)
        return cls(query, rank, values, int(mask.shape[0]))

    def cut(self, k: int | None) -> Hits:
        """The cells within the top ``k`` ranks (all of them for None); made once per k, as
        several metrics share a cutoff."""
        if k is None or k > int(self.rank.max(initial=-1)):
            return self
        cuts: dict[int, Hits] = self.__dict__.setdefault("_cuts", {})
        if k not in cuts:
            keep = np.flatnonzero(self.rank < k)  # one scan, then gathers (a mask scans each)
            values = None if self.values is None else self.values.take(keep)
            cuts[k] = Hits(self.query.take(keep), self.rank.take(keep), values, self.n_queries)
        return cuts[k]

    def count(self) -> np.ndarray:
        """float64 [Q], the cells per query (made once; read-only)."""
        if "_count" not in self.__dict__:
            count = np.bincount(self.query, minlength=self.n_queries).astype(np.float64)
            count.flags.writeable = False
            self.__dict__["_count"] = count
        out: np.ndarray = self.__dict__["_count"]
        return out

    def total(self, weights: np.ndarray) -> np.ndarray:
        """float64 [Q], the sum of ``weights`` (one per cell) per query."""
        return np.bincount(self.query, weights=weights, minlength=self.n_queries)

    def first(self) -> np.ndarray:
        """Indices of each query's first cell (its best rank)."""
        q = self.query
        return np.flatnonzero(np.concatenate(([True], q[1:] != q[:-1]))) if len(q) else q

    def order_in_query(self) -> np.ndarray:
        """int64 [n], 1 for a query's first cell, 2 for its second, ..."""
        starts = np.zeros(len(self.query), dtype=np.int64)
        first = self.first()
        starts[first] = first
        return np.arange(1, len(self.query) + 1) - np.maximum.accumulate(starts)


@dataclass(frozen=True)
class Cells:
    """The ranked cells that hold a document judged for their query, as build_judgments finds
    them: flat indices into the [Q, depth] rankings, ascending, and each one's grade (negative:
    pooled, not judged). With the ideal grades as Hits, the metrics need nothing else."""

    shape: tuple[int, int]
    index: np.ndarray  # int64 [n], ascending
    grades: np.ndarray  # int [n]
    ideal: Hits
    ideal_width: int

    def hits(self, keep: np.ndarray, with_values: bool = False) -> Hits:
        depth = max(self.shape[1], 1)
        keep = np.flatnonzero(keep)
        query, rank = np.divmod(self.index.take(keep), depth)
        values = self.grades.take(keep) if with_values else None
        return Hits(query, rank, values, self.shape[0])

    def dense(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros(self.shape[0] * self.shape[1], dtype=values.dtype)
        out[self.index] = values
        return out.reshape(self.shape)


class RankedJudgments:
    """What the metrics need to know about each query's ranking, as aligned arrays.

    grades: int [Q, depth], judged grade of the document at each rank (0 if unjudged or padding).
    judged: bool [Q, depth], whether that document is judged (``core.relevance.is_judged``: in
      the qrels with a grade >= 0).
    ideal: int [Q, width], the query's positive judged grades sorted descending, zero-padded; width
      is at least depth and holds every positive grade of the query, so nDCG@k is right for any k.
    n_relevant: int [Q], number of judged documents with grade >= relevance_level (``R``).
    n_nonrelevant: int [Q], number of judged documents with a lower grade, 0 <= grade < level
      (bpref's ``N``), retrieved or not.
    relevance_level: the grade from which a document counts as relevant (trec_eval's ``-l``).
    n_retrieved: int [Q], ranks that hold a document (trec_eval's ``num_ret``, what ``precision``
      without a cutoff divides by); None when every rank of every query holds one.

    Built from those dense arrays, or (``from_cells``, what build_judgments does) from the few
    ranked cells holding a judged document: the metrics read sparse views (``relevant_hits``,
    ``gain_hits``, ``ideal_hits``), so they cost what the judged cells cost, and the dense
    arrays are made only when something reads them. Every view is made once.
    """

    def __init__(
        self,
        grades: np.ndarray,
        judged: np.ndarray,
        ideal: np.ndarray,
        n_relevant: np.ndarray,
        n_nonrelevant: np.ndarray,
        relevance_level: int = DEFAULT_RELEVANCE_LEVEL,
        n_retrieved: np.ndarray | None = None,
    ) -> None:
        self.n_relevant = n_relevant
        self.n_nonrelevant = n_nonrelevant
        self.relevance_level = relevance_level
        self.__dict__["n_retrieved"] = n_retrieved
        self._cells: Cells | None = None
        self._ranked = np.zeros((0, 0), dtype=np.int64)
        self.__dict__.update(grades=grades, judged=judged, ideal=ideal)

    @classmethod
    def from_cells(
        cls,
        cells: Cells,
        n_relevant: np.ndarray,
        n_nonrelevant: np.ndarray,
        relevance_level: int,
        ranked: np.ndarray,
    ) -> RankedJudgments:
        """Judgments from the judged cells of ``ranked`` (document indices, -1 for none): the
        dense arrays and ``n_retrieved`` are made from them when first read."""
        self = cls.__new__(cls)
        self.n_relevant = n_relevant
        self.n_nonrelevant = n_nonrelevant
        self.relevance_level = relevance_level
        self._cells = cells
        self._ranked = ranked
        return self

    @cached_property
    def n_retrieved(self) -> np.ndarray | None:
        """Read from the rankings (built from cells): None when every rank holds a document."""
        ranked = self._ranked
        if not ranked.size or ranked.min() >= 0:
            return None
        missing = np.count_nonzero(ranked < 0, axis=1)
        return np.asarray(ranked.shape[1] - missing, dtype=np.int64)

    @cached_property
    def grades(self) -> np.ndarray:
        assert self._cells is not None
        return self._cells.dense(self._cells.grades)

    @cached_property
    def judged(self) -> np.ndarray:
        assert self._cells is not None
        return self._cells.dense(is_judged(self._cells.grades))

    @cached_property
    def ideal(self) -> np.ndarray:
        assert self._cells is not None
        hits, width = self._cells.ideal, self._cells.ideal_width
        assert hits.values is not None
        out = np.zeros(hits.n_queries * width, dtype=hits.values.dtype)
        out[hits.query * width + hits.rank] = hits.values
        return out.reshape(hits.n_queries, width)

    @property
    def depth(self) -> int:
        return int(self._cells.shape[1] if self._cells is not None else self.grades.shape[1])

    @property
    def retrieved(self) -> np.ndarray:
        """int [Q], the number of documents in each query's ranking."""
        if self.n_retrieved is not None:
            return self.n_retrieved
        return np.full(len(self.n_relevant), self.depth, dtype=np.int64)

    @cached_property
    def relevant(self) -> np.ndarray:
        """bool [Q, depth], computed once per RankedJudgments."""
        return is_relevant(self.grades, self.relevance_level)

    @cached_property
    def relevant_hits(self) -> Hits:
        """The relevant ranks, as (query, rank) in rank order: the binary metrics read only
        these, so their cost follows the number of relevant documents retrieved, not Q x depth."""
        if self.relevance_level == 1:  # an integer grade >= 1 is a grade > 0: share the cells
            return self.gain_hits
        if self._cells is not None:
            return self._cells.hits(is_relevant(self._cells.grades, self.relevance_level))
        return Hits.of(self.relevant)

    @cached_property
    def gain_hits(self) -> Hits:
        """The ranks whose grade is above 0 (the ones nDCG gains on), with their grades."""
        if self._cells is not None:
            return self._cells.hits(self._cells.grades > 0, with_values=True)
        return Hits.of(self.grades > 0, self.grades)

    @cached_property
    def ideal_hits(self) -> Hits:
        """The positive grades of ``ideal``, as ranks of the ideal ordering."""
        if self._cells is not None:
            return self._cells.ideal
        return Hits.of(self.ideal > 0, self.ideal)

    def at_level(self, level: int) -> RankedJudgments:
        """The same rankings read at relevance level ``level`` (>= 1): R and N recounted from
        the ideal (every positive grade of each query), the relevant ranks from the grades."""
        ideal = self.ideal_hits
        assert ideal.values is not None
        n_relevant = np.bincount(
            ideal.query, weights=is_relevant(ideal.values, level), minlength=len(self.n_relevant)
        ).astype(np.int64)
        n_nonrelevant = self.n_relevant + self.n_nonrelevant - n_relevant
        if self._cells is not None:
            return RankedJudgments.from_cells(
                self._cells, n_relevant, n_nonrelevant, level, self._ranked
            )
        return self.replace(
            relevance_level=level, n_relevant=n_relevant, n_nonrelevant=n_nonrelevant
        )

    def with_gains(self, gains: Sequence[tuple[int, int]]) -> RankedJudgments:
        """The same rankings with each judged grade replaced by its gain (``gains``: (grade,
        gain) pairs, gains >= 0; a grade not listed keeps itself), so that nDCG, which gains a
        grade's value, reads the mapped gains: the ideal is every judged grade of the query, 0
        included, mapped and sorted, the positive gains kept. It equals trec_eval (or
        ir_measures' ``nDCG(gains=...)``) on qrels whose grades are replaced so. Pooled
        (negative) and unjudged documents gain nothing; R and N keep the grades' meaning."""
        ideal = self.ideal_hits
        assert ideal.values is not None
        top = max(int(ideal.values.max(initial=0)), max((g for g, _ in gains), default=0))
        table = np.arange(top + 1, dtype=np.int64)
        for grade, gain in gains:
            table[grade] = gain
        # every judged grade of each query: its positive ones (the ideal) and its zeros
        zeros = self.n_relevant + self.n_nonrelevant - ideal.count().astype(np.int64)
        query = np.concatenate([ideal.query, np.repeat(np.arange(len(zeros)), zeros)])
        mapped = np.concatenate([table[ideal.values], np.full(int(zeros.sum()), table[0])])
        keep = mapped > 0
        order = np.lexsort((-mapped[keep], query[keep]))
        query, mapped = query[keep][order], mapped[keep][order]
        per_query = np.bincount(query, minlength=len(zeros))
        starts = np.cumsum(per_query) - per_query
        new_ideal = Hits(query, np.arange(len(query)) - starts[query], mapped, len(zeros))
        width = max(self.depth, int(per_query.max(initial=0)))
        if self._cells is not None:
            c = self._cells
            grades = np.where(is_judged(c.grades), table[np.clip(c.grades, 0, top)], c.grades)
            cells = Cells(c.shape, c.index, grades, new_ideal, width)
            return RankedJudgments.from_cells(
                cells, self.n_relevant, self.n_nonrelevant, self.relevance_level, self._ranked
            )
        dense = np.zeros(len(zeros) * width, dtype=np.int64)
        dense[new_ideal.query * width + new_ideal.rank] = mapped
        graded = np.where(self.judged, table[np.clip(self.grades, 0, top)], self.grades)
        return self.replace(grades=graded, ideal=dense.reshape(len(zeros), width))

    def judged_only(self) -> RankedJudgments:
        """The condensed rankings (trec_eval ``-J``): each query's judged documents moved to the
        front in their rank order, the unjudged ones dropped (the freed ranks become padding,
        so ``retrieved`` counts judged documents only). R, N and the ideal are unchanged."""
        order = np.argsort(~self.judged, axis=1, kind="stable")
        judged = np.take_along_axis(self.judged, order, axis=1)
        grades = np.where(judged, np.take_along_axis(self.grades, order, axis=1), 0)
        n_judged = self.judged.sum(axis=1).astype(np.int64)
        return self.replace(grades=grades, judged=judged, n_retrieved=n_judged)

    def replace(self, **changes: Any) -> RankedJudgments:
        """A copy with the named fields changed (dense: every array is made)."""
        fields: dict[str, Any] = {
            "grades": self.grades,
            "judged": self.judged,
            "ideal": self.ideal,
            "n_relevant": self.n_relevant,
            "n_nonrelevant": self.n_nonrelevant,
            "relevance_level": self.relevance_level,
            "n_retrieved": self.n_retrieved,
        }
        return RankedJudgments(**{**fields, **changes})


def build_judgments(
    ranked: np.ndarray,
    qrel_query: np.ndarray,
    qrel_doc: np.ndarray,
    qrel_grade: np.ndarray,
    n_docs: int,
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL,
) -> RankedJudgments:
    """Look up the grade of every retrieved document in one vectorized pass.

    ranked: int [Q, depth], document indices per query in rank order, -1 where none was retrieved.
    qrel_query, qrel_doc, qrel_grade: the judgments as parallel arrays of (query index, document
    index, grade); each (query, document) pair at most once; a negative grade is pooled, not
    judged (the package's docstring). relevance_level: the grade from which a document is relevant
    (trec_eval's ``-l``). Grades are held in the smallest integer type that fits them.
    """
    ranked = np.asarray(ranked)
    if ranked.dtype != np.int64:
        ranked = ranked.astype(np.int64)
    n_queries, depth = ranked.shape
    q = np.asarray(qrel_query, dtype=np.int64)
    d = np.asarray(qrel_doc, dtype=np.int64)
    g = np.asarray(qrel_grade, dtype=np.int64)
    grade_type = _grade_dtype(g)

    index, match = _lookup(ranked, q, d, n_docs)
    ideal, n_relevant, n_judged = _ideal(q, g, n_queries, relevance_level, grade_type)
    cells = Cells(
        shape=(n_queries, depth),
        index=index,
        grades=g[match].astype(grade_type),
        ideal=ideal,
        ideal_width=max(depth, int(ideal.rank.max(initial=-1)) + 1),
    )
    return RankedJudgments.from_cells(
        cells,
        n_relevant=n_relevant,
        n_nonrelevant=n_judged - n_relevant,
        relevance_level=relevance_level,
        ranked=ranked,
    )


def _grade_dtype(grades: np.ndarray) -> type[np.signedinteger]:
    """The smallest signed integer type holding every grade (and 0)."""
    low, high = int(grades.min(initial=0)), int(grades.max(initial=0))
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return dtype
    return np.int64


def _lookup(
    ranked: np.ndarray, q: np.ndarray, d: np.ndarray, n_docs: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ranked cells (flat indices into ``ranked``, ascending) holding a document judged for
    some query, and for each the index of its judgment for that cell's query, or -1.

    A bitmap over the documents picks those cells with one gather per ranked cell; a table over
    the documents then names each one's judgment when its document is judged for a single
    query (the usual case), a check of that judgment's query settles the cell; the cells whose
    document is judged for several queries are joined on sorted (query, document) keys.
    """
    depth = ranked.shape[1]
    judged_somewhere = np.zeros(n_docs + 1, dtype=bool)  # the last slot stands for -1: no doc
    judged_somewhere[d] = True
    flat = ranked.ravel()
    index = np.flatnonzero(judged_somewhere[flat])
    docs = flat[index]
    owner = np.empty(n_docs + 1, dtype=np.int32 if len(q) < 2**31 else np.int64)
    positions = np.arange(len(q), dtype=owner.dtype)
    owner[d] = positions  # for a document judged several times, one of its judgments wins
    shared = np.flatnonzero(owner[d] != positions)
    among = np.zeros(0, dtype=bool)
    if len(shared):
        among = np.zeros(len(q), dtype=bool)  # every judgment of a document judged several times
        among[shared] = True
        among[owner[d[shared]]] = True
        owner[d[shared]] = -1
    match = owner[docs].astype(np.int64)
    several = np.flatnonzero(match < 0) if len(shared) else shared
    cell_query = index // depth
    if len(several):
        match[several] = _join_sorted(q, d, among, cell_query[several], docs[several], n_docs)
    found = q[match] == cell_query  # match -1 (no judgment) reads q[-1]: checked below
    if len(several):
        found[several] &= match[several] >= 0
    found = np.flatnonzero(found)
    return index.take(found), match.take(found)


def _join_sorted(
    q: np.ndarray,
    d: np.ndarray,
    among: np.ndarray,
    want_query: np.ndarray,
    want_doc: np.ndarray,
    n_docs: int,
) -> np.ndarray:
    """For each wanted (query, document) pair, the index of its judgment among the judgments
    ``among`` selects, or -1: a sort-merge join on the keys query * (n_docs + 1) + document."""
    index = np.flatnonzero(among)
    keys = q[index] * (n_docs + 1) + d[index]
    order = np.argsort(keys, kind="stable")
    keys, index = keys[order], index[order]
    wanted = want_query * (n_docs + 1) + want_doc
    pos = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[pos] == wanted, index[pos], -1)


def _ideal(
    q: np.ndarray,
    g: np.ndarray,
    n_queries: int,
    level: int,
    dtype: type[np.signedinteger] = np.int64,
) -> tuple[Hits, np.ndarray, np.ndarray]:
    """Per query its positive grades sorted descending, as Hits (query, rank in the ideal
    ordering, grade); its number of grades >= ``level`` (R) and of grades >= 0 (judged).

    With few distinct grades, one count per (query, grade) gives all three (the ideal
    orderings are those counts repeated, no sort); otherwise one sort of the positive grades.
    """
    top, bottom = int(g.max(initial=0)), int(g.min(initial=0))
    span = top - bottom + 1  # column c of a query's counts: grade top - c
    if n_queries * span <= 4 * len(q) + 1024:
        counts = np.bincount(q * span + (top - g), minlength=n_queries * span)
        counts = counts.reshape(n_queries, span)
        column_grade = top - np.arange(span)
        # per query: grades >= level, grades >= 0, grades > 0 (a matrix product sums the
        # few columns far faster than three sums over a short axis)
        which = np.column_stack(
            [is_relevant(column_grade, level), is_judged(column_grade), column_grade > 0]
        )
        n_relevant, n_judged, per_query = (counts @ which.astype(np.int64)).T
        positive = counts[:, : max(top, 0)]  # grades top, top - 1, ..., 1
        width = positive.shape[1]
        packed = np.repeat(np.arange(n_queries * width, dtype=np.int64), positive.ravel())
        q, g = packed // max(width, 1), top - packed % max(width, 1)
    else:
        n_relevant = np.bincount(q[is_relevant(g, level)], minlength=n_queries)
        n_judged = np.bincount(q[is_judged(g)], minlength=n_queries)
        keep = g > 0
        packed = np.sort(q[keep] * (top + 1) + (top - g[keep]))
        q, g = packed // (top + 1), top - packed % (top + 1)
        per_query = np.bincount(q, minlength=n_queries)
    starts = np.cumsum(per_query) - per_query
    ideal = Hits(q, np.arange(len(q)) - starts[q], g.astype(dtype), n_queries)
    return ideal, n_relevant.astype(np.int64), n_judged.astype(np.int64)
