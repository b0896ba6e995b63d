"""Ranking metrics, computed per query with numpy and identical to trec_eval's definitions.

Pure: takes arrays, returns arrays. A metric is a small declared value (`Metric("ndcg", 10)`),
parsed from the names ranx users write (`ndcg@10`); the functions that compute each family live in
one registry, and the error for an unknown name is built from that registry.

Conventions shared by every metric (they match trec_eval run with ``-l relevance_level``):

* A document is *relevant* when its judged grade is >= the relevance level (trec_eval's ``-l``,
  default 1; the rule is ``core.relevance.is_relevant``); a lower grade (0 or negative) means
  judged non-relevant, and an unjudged document counts as non-relevant. The binary metrics
  (recall, precision, MAP, MRR, hit rate) and ``R`` use the level.
* nDCG ignores the level, as trec_eval does: its gain is the raw grade for grade > 0 and 0 for
  grade <= 0 (or 2^grade - 1 with exponential gain), so at level 2 a grade-1 document still gains.
* The ranking is the one the index returned after evalret's tie rule (score descending, then
  document id descending, as trec_eval sorts a run); metrics never re-sort it.
* ``R`` is the number of relevant judged documents of the query, retrieved or not. A query with
  ``R = 0`` scores 0 on every binary metric; by default the pipeline leaves such queries out of
  the means (``queries_without_relevant: exclude``) and reports how many there were, with
  ``zero`` it scores them as trec_eval does.
* A ranking shorter than ``k`` (a corpus smaller than ``k``) counts as padded with non-relevant
  ranks: precision@k still divides by k, the others see no more relevant documents. A cutoff is
  at most MAX_CUTOFF; the search depth is bounded by the corpus size, never by ``k`` alone.
* A metric written without a cutoff (``map``, ``ndcg``, ...) scores the whole ranking, as
  trec_eval's uncut measures do: the function gets ``k=None``. Its value depends on how deep the
  rankings go, so evalret's own indexes search ``search_depth`` deep (``DEFAULT_SEARCH_DEPTH``,
  trec_eval's usual 1000, when a metric has no cutoff and no depth is configured).

* ``bpref`` (Buckley & Voorhees 2004, trec_eval's definition) reads judged documents only: each
  relevant document retrieved scores 1 - min(n, R) / min(N, R), n the judged non-relevant
  documents ranked above it, N the query's judged non-relevant documents (grade below the level),
  summed and divided by R. Unjudged documents play no part.
* A judged-only variant of every family (``ndcg@10:judged``, ``map:judged``; Sakai 2007's
  "condensed list", trec_eval ``-J``) drops the unjudged documents from each ranking *before*
  cutting it at k, then scores what is left as usual. It looks past rank k for judged documents,
  so its value depends on how deep the rankings go, as a metric without a cutoff does.
* A negative grade is a judgment (judged non-relevant, gain 0) everywhere in evalret. trec_eval
  reads a negative grade as "pooled but not judged", which only bpref and ``-J`` tell apart from
  grade 0: evalret equals trec_eval given the same qrels with negative grades written as 0.

Each family declares, as data, the trec_eval measure it equals with a cutoff and without one
(``Family.trec_eval``, a ``TrecEval``); ``trec_eval_reference`` turns a metric into the exact
trec_eval call (measure, ``-J``, run cut) it equals. The conformance tests read it from there and
compare every family and variant with trec_eval per query, so the mapping is written once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, total_ordering
from typing import Any, Literal

import numpy as np

from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL, is_judged, is_relevant
from evalret.errors import MetricError, Problem

Gain = Literal["linear", "exponential"]
# |grade| bound: int64 sums stay exact and exponential gain 2^g stays finite in float64 for any
# query with fewer than 2^23 judged documents (2^1000 * 2^23 < 2^1024)
MAX_GRADE = 1000
MAX_CUTOFF = 10**9  # far beyond any collection: larger cutoffs are refused as typing errors
# how deep "the whole ranking" goes when a metric has no cutoff and no search_depth is configured:
# trec_eval's runs are conventionally 1000 deep (TREC ad hoc tracks, BEIR's exported runs)
DEFAULT_SEARCH_DEPTH = 1000


JUDGED_SUFFIX = "judged"  # ndcg@10:judged, map:judged: the judged-only (condensed list) variant


@total_ordering
@dataclass(frozen=True)
class Metric:
    """A metric family at a cutoff, e.g. ``Metric("ndcg", 10)`` written ``ndcg@10``, or over the
    whole ranking, ``Metric("ndcg")`` written ``ndcg`` (``k`` is None); with ``judged`` the
    family scores each ranking with its unjudged documents removed first, written
    ``ndcg@10:judged``. Ordered by family, then cutoff (the whole ranking last), then judged."""

    family: str
    k: int | None = None
    judged: bool = False

    def __str__(self) -> str:
        name = self.family if self.k is None else f"{self.family}@{self.k}"
        return f"{name}:{JUDGED_SUFFIX}" if self.judged else name

    @property
    def depth_key(self) -> float:
        """The cutoff, or infinity for the whole ranking: sorts metrics from shallow to deep."""
        return math.inf if self.k is None else float(self.k)

    @property
    def reads_whole_ranking(self) -> bool:
        """Whether the value depends on how deep the ranking goes: no cutoff, or judged-only
        (which looks past rank k for the first k judged documents)."""
        return self.k is None or self.judged

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Metric):
            return NotImplemented
        return (self.family, self.depth_key, self.judged) < (
            other.family,
            other.depth_key,
            other.judged,
        )


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
    pooled, unjudged). With the ideal grades as Hits, the metrics need nothing else."""

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
    judged: bool [Q, depth], whether that document is judged: in the qrels with a grade >= 0 (a
      negative grade is trec_eval's "pooled but not judged").
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


def _discounts(k: int) -> np.ndarray:
    # 1 / log2(i + 1) for ranks i = 1..k
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def _safe_divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(num.shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _gain(grades: np.ndarray, gain: Gain) -> np.ndarray:
    # the raw grade whatever the relevance level (trec_eval's ndcg); grades <= 0 gain nothing
    g = np.maximum(grades, 0).astype(np.float64)
    return g if gain == "linear" else np.asarray(np.exp2(g) - 1.0, dtype=np.float64)


def _dcg(hits: Hits, k: int | None, gain: Gain) -> np.ndarray:
    # sum over the top k ranks of gain(grade) / log2(rank + 1), over the cells with a grade > 0
    cut = hits.cut(k)
    assert cut.values is not None
    rank = cut.rank
    discounts = _discounts(int(rank.max(initial=-1)) + 1)
    return cut.total(_gain(cut.values, gain) * discounts[rank])


def ndcg(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k with DCG@k = sum_{i<=k} gain(grade_i) / log2(i + 1).

    Gain ``linear`` is gain(g) = g (trec_eval, BEIR, MTEB); ``exponential`` is 2^g - 1; grades
    <= 0 gain 0, and the relevance level plays no part. IDCG@k is the DCG of the ideal ordering
    of all the query's judged grades, cut at k; trec_eval's with linear gain, at any ``-l``.
    Without a cutoff (``k=None``): DCG of the whole ranking over the IDCG of *all* the query's
    positive grades, never cut.
    """
    return _safe_divide(_dcg(j.gain_hits, k, gain), _dcg(j.ideal_hits, k, gain))


def mrr(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """RR@k = 1 / rank of the first relevant document within the top k, 0 if there is none.

    Its mean over queries is MRR@k; without a cutoff, over the whole ranking.
    """
    hits = j.relevant_hits.cut(k)
    first = hits.first()
    out = np.zeros(hits.n_queries, dtype=np.float64)
    out[hits.query[first]] = 1.0 / (hits.rank[first] + 1.0)
    return out


def recall(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """Recall@k = |relevant in top k| / R; without a cutoff, |relevant retrieved| / R over the
    whole ranking."""
    return _safe_divide(j.relevant_hits.cut(k).count(), j.n_relevant)


def precision(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """Precision@k = |relevant in top k| / k, k even when fewer are retrieved (as trec_eval).

    Without a cutoff: |relevant retrieved| / |retrieved| over the whole ranking, 0 when nothing
    was retrieved (set precision: trec_eval has no uncut ``P``).
    """
    hits = j.relevant_hits.cut(k).count()
    if k is None:
        return _safe_divide(hits, j.retrieved.astype(np.float64))
    return np.asarray(hits / float(k), dtype=np.float64)


def average_precision(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """AP@k = (1/R) * sum over ranks i <= k holding a relevant document of Precision@i.

    The denominator is R, not min(k, R), as in trec_eval; MAP@k is the mean. Without a cutoff,
    the sum runs over the whole ranking.
    """
    hits = j.relevant_hits.cut(k)
    return _safe_divide(hits.total(hits.order_in_query() / (hits.rank + 1)), j.n_relevant)


def hit_rate(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """Hit rate@k (Success@k) = 1 if a relevant document is in the top k, else 0.

    Without a cutoff: 1 if any relevant document was retrieved at all (trec_eval has no uncut
    ``success``: it equals ``success`` at the run's depth).
    """
    return np.asarray(j.relevant_hits.cut(k).count() > 0, dtype=np.float64)


def bpref(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """bpref (Buckley & Voorhees 2004) as trec_eval computes it: for each relevant document
    retrieved within the top k, 1 - min(n, R) / min(N, R), with n the judged non-relevant
    documents ranked above it (a term of 1 when n is 0), summed and divided by R. N is the
    number of the query's judged non-relevant documents (grade below the relevance level,
    retrieved or not). Unjudged documents are skipped, so bpref never counts them against a
    ranking. Without a cutoff, over the whole ranking; with one, trec_eval's bpref on the run cut
    at k (trec_eval has no ``bpref`` cutoff).
    """
    rel = j.relevant[:, :k]
    nonrel = j.judged[:, :k] & ~rel
    above = np.cumsum(nonrel, axis=1).astype(np.float64)  # at a relevant rank: those above it
    r = j.n_relevant.astype(np.float64)[:, None]
    pairs = np.minimum(j.n_nonrelevant.astype(np.float64)[:, None], r)  # min(N, R)
    wrong = _safe_divide(np.minimum(above, r), np.broadcast_to(pairs, above.shape))
    terms = np.where(above > 0, 1.0 - wrong, 1.0)
    return _safe_divide((terms * rel).sum(axis=1), j.n_relevant.astype(np.float64))


def judged_at(judgments: RankedJudgments, cutoffs: list[int]) -> dict[str, np.ndarray]:
    """Per query, the share of the top k ranks holding a judged document (any grade), k for
    every cutoff: unjudged documents count as misses in every metric, so a low judged@k warns
    that the scores understate the ranking."""
    judged = judgments.judged.cumsum(axis=1)
    return {f"judged@{k}": judged[:, min(k, judged.shape[1]) - 1] / k for k in cutoffs}


def at_cutoffs(
    j: RankedJudgments, family: str, ks: Sequence[int], gain: Gain = "linear"
) -> np.ndarray:
    """float64 [Q, len(ks)]: ``family`` at every cutoff of ``ks`` (ascending), column i equal to
    the family's function at ks[i] to the last bit. Recall and nDCG (the curves' families) come
    from one pass over the cells, with per-query running sums in rank order (the order the
    function adds in); any other family calls its function once per cutoff."""
    cutoffs = np.asarray(ks, dtype=np.int64)
    if family == "recall":
        counts = _counts_at(j.relevant_hits, cutoffs).astype(np.float64)
        return _safe_divide(counts, j.n_relevant[:, None])
    if family == "ndcg":
        return _safe_divide(
            _dcg_at(j.gain_hits, cutoffs, gain), _dcg_at(j.ideal_hits, cutoffs, gain)
        )
    fn = REGISTRY[family].fn
    return np.column_stack([fn(j, int(k), gain) for k in cutoffs]).reshape(-1, len(cutoffs))


def _counts_at(hits: Hits, ks: np.ndarray) -> np.ndarray:
    """int [Q, K]: per query, its cells ranked within each cutoff."""
    n = len(ks)
    above = np.searchsorted(ks, hits.rank, side="right")  # the cutoffs a cell misses
    counts = np.bincount(hits.query * (n + 1) + above, minlength=hits.n_queries * (n + 1))
    return np.cumsum(counts.reshape(hits.n_queries, n + 1)[:, :n], axis=1)


def _dcg_at(hits: Hits, ks: np.ndarray, gain: Gain) -> np.ndarray:
    """float64 [Q, K]: DCG at each cutoff; each query's terms are summed in rank order, running
    sums read at each cutoff's number of cells, as ``_dcg`` adds them."""
    assert hits.values is not None
    order = hits.order_in_query() - 1
    width = int(order.max(initial=-1)) + 1
    terms = np.zeros((hits.n_queries, max(width, 1)))
    discounts = _discounts(int(hits.rank.max(initial=-1)) + 1)
    terms[hits.query, order] = _gain(hits.values, gain) * discounts[hits.rank]
    running = np.cumsum(terms, axis=1)
    n = _counts_at(hits, ks)
    rows = np.arange(hits.n_queries)[:, None]
    return np.where(n > 0, running[rows, np.maximum(n - 1, 0)], 0.0)


MetricFn = Callable[[RankedJudgments, int | None, Gain], np.ndarray]  # k None: whole ranking


@dataclass(frozen=True)
class TrecEval:
    """The trec_eval measures a family equals, named as trec_eval (and pytrec_eval) take them.

    cut: the measure at cutoff k, spelled ``{cut}.{k}`` (``ndcg_cut.10``); with ``cut_run`` the
      measure takes no cutoff and trec_eval scores each run cut at depth k instead (MRR@k is
      ``recip_rank`` on the run cut at k).
    uncut: the measure over the whole ranking, the family written without a cutoff.
    positive: the family is 1 where ``uncut`` is above 0 and 0 elsewhere (hit rate is
      ``num_rel_ret > 0``: trec_eval has no uncut ``success``).
    A judged-only metric (``:judged``) is the same measure with trec_eval's ``-J``.
    """

    cut: str
    uncut: str
    cut_run: bool = False
    positive: bool = False

    def measure(self, k: int | None) -> str:
        """The measure at cutoff ``k`` (None: the whole ranking): ``ndcg_cut.10``, ``set_P``."""
        if k is None:
            return self.uncut
        return self.cut if self.cut_run else f"{self.cut}.{k}"


@dataclass(frozen=True)
class Family:
    name: str
    fn: MetricFn
    trec_eval: TrecEval  # what it equals in trec_eval, the conformance tests' reference
    aliases: tuple[str, ...] = ()
    # what a query scores, with a cutoff k and over the whole ranking, in a sentence each (the
    # metrics reference page, docs/reference/metrics.md, is generated from them)
    at_k: str = ""
    whole: str = ""


# every family scores a query in [0, 1]; a stored per-query score outside it, beyond rounding, is
# not one of ours (a forged or corrupt report)
SCORE_SLACK = 1e-6

FAMILIES = (
    Family(
        "ndcg",
        ndcg,
        TrecEval("ndcg_cut", "ndcg"),
        at_k="DCG of the top k over the DCG of the query's judged grades in ideal order, cut at k; "
        "the gain of a grade g > 0 is g (or 2^g - 1 with ndcg_gain exponential), else 0",
        whole="DCG of the whole ranking over the DCG of all the query's positive grades in "
        "ideal order (the ideal is never cut)",
    ),
    Family(
        "mrr",
        mrr,
        TrecEval("recip_rank", "recip_rank", cut_run=True),
        ("rr", "recip_rank"),
        at_k="1 / the rank of the first relevant document in the top k, 0 when there is none",
        whole="1 / the rank of the first relevant document retrieved, 0 when there is none",
    ),
    Family(
        "recall",
        recall,
        TrecEval("recall", "set_recall"),
        ("r",),
        at_k="relevant documents in the top k / R",
        whole="relevant documents retrieved / R",
    ),
    Family(
        "precision",
        precision,
        TrecEval("P", "set_P"),
        ("p",),
        at_k="relevant documents in the top k / k (k even when fewer were retrieved)",
        whole="relevant documents retrieved / documents retrieved (0 when none)",
    ),
    Family(
        "map",
        average_precision,
        TrecEval("map_cut", "map"),
        ("ap",),
        at_k="the sum of precision@i over the ranks i ≤ k holding a relevant document, / R",
        whole="the sum of precision@i over the ranks i holding a relevant document, / R",
    ),
    Family(
        "hit_rate",
        hit_rate,
        TrecEval("success", "num_rel_ret", positive=True),
        ("success", "hit", "hits"),
        at_k="1 when a relevant document is in the top k, else 0",
        whole="1 when any relevant document was retrieved, else 0",
    ),
    Family(
        "bpref",
        bpref,
        TrecEval("bpref", "bpref", cut_run=True),
        at_k="bpref of the top k only",
        whole="for each relevant document retrieved, 1 - min(n, R) / min(N, R) with n the judged "
        "non-relevant documents above it and N all the query's judged non-relevant ones; the "
        "sum / R (unjudged documents are skipped)",
    ),
)


@dataclass(frozen=True)
class TrecEvalReference:
    """The trec_eval computation one metric equals per query (what the conformance tests run).

    measure: the measure's name (``ndcg_cut.10``; pytrec_eval's result key swaps ``.`` for
      ``_``). judged_only: with trec_eval's ``-J`` (pytrec_eval ``judged_docs_only_flag``).
    run_depth: cut each run after this many documents first (judged documents only, with
      ``judged_only``); None: the whole run. positive: the metric is 1 where the measure is above
      0, else 0. Qrels go to trec_eval with negative grades written as 0 (see the module doc).
    """

    measure: str
    judged_only: bool = False
    run_depth: int | None = None
    positive: bool = False


def trec_eval_reference(metric: Metric) -> TrecEvalReference:
    """How trec_eval computes ``metric``, read from its family's ``TrecEval`` data."""
    trec = REGISTRY[metric.family].trec_eval
    return TrecEvalReference(
        measure=trec.measure(metric.k),
        judged_only=metric.judged,
        run_depth=metric.k if trec.cut_run else None,
        positive=trec.positive and metric.k is None,
    )


def alias_table(families: Iterable[Family]) -> dict[str, str]:
    """Every name a family answers to (its own name and its aliases, lowercase) -> the family's
    name. A name claimed twice, by two families or twice by one, is a ValueError naming the
    name and both claimants: a clash must never silently re-point a metric name."""
    table: dict[str, str] = {}
    for f in families:
        for alias in (f.name, *f.aliases):
            key = alias.lower()
            if key in table:
                raise ValueError(
                    f"metric name {key!r} of family {f.name!r} is already taken by family "
                    f"{table[key]!r}"
                )
            table[key] = f.name
    return table


_ALIASES = alias_table(FAMILIES)  # checked first: no family may shadow another's name
REGISTRY: Mapping[str, Family] = {f.name: f for f in FAMILIES}
_NAME_RE = re.compile(
    rf"^\s*([A-Za-z_]+)\s*(?:@\s*(\d+)\s*)?(:\s*{JUDGED_SUFFIX}\s*)?$", re.IGNORECASE
)


def known_metrics() -> str:
    """Human-readable list of the metric names the registry accepts."""
    return ", ".join(f"{name}@k" for name in REGISTRY) + (
        f" (k >= 1; without @k: the whole ranking; :{JUDGED_SUFFIX} after either: unjudged "
        "documents dropped first)"
    )


def parse_metric(name: str) -> Metric:
    """Parse ``ndcg@10`` into a Metric; case-insensitive, with aliases (``P@5``, ``success@1``).
    A name without ``@k`` (``map``, ``RR``) is the metric over the whole ranking; a trailing
    ``:judged`` (``ndcg@10:judged``, ``map:judged``) its judged-only variant."""
    m = _NAME_RE.match(name)
    family = _ALIASES.get(m.group(1).lower()) if m else None
    if m is None or family is None:
        raise MetricError(f"unknown metric {name!r}; known metrics: {known_metrics()}")
    judged = m.group(3) is not None
    if m.group(2) is None:
        return Metric(family, judged=judged)
    k = int(m.group(2))
    if k < 1:
        raise MetricError(f"metric {name!r}: the cutoff k must be at least 1")
    if k > MAX_CUTOFF:
        raise MetricError(
            f"metric {name!r}: the cutoff k must be at most {MAX_CUTOFF:,} (rankings are cut at "
            "the corpus size anyway)"
        )
    return Metric(family, k, judged)


def parse_metrics(names: Iterable[str]) -> list[Metric]:
    """Parse several names, reporting every bad one at once; duplicates are dropped, order kept."""
    out: list[Metric] = []
    problems: list[Problem] = []
    for name in names:
        try:
            metric = parse_metric(name)
        except MetricError as e:
            problems.append(Problem(e.summary))
            continue
        if metric not in out:
            out.append(metric)
    if problems:
        raise MetricError("invalid metric names", problems)
    return out


def search_depth(metrics: Iterable[Metric], configured: int | None = None) -> int:
    """How deep rankings must go for ``metrics``: ``configured`` when given, else the largest
    cutoff, or at least DEFAULT_SEARCH_DEPTH when a metric reads the whole ranking (no cutoff,
    or judged-only). Callers cap it at the corpus size (a ranking cannot be longer)."""
    metrics = list(metrics)
    if configured is not None:
        return configured
    deepest = max((m.k for m in metrics if m.k is not None), default=0)
    return max(deepest, DEFAULT_SEARCH_DEPTH) if has_uncut(metrics) else deepest


def is_plain_cut(metric: Metric, family: str) -> bool:
    """Whether ``metric`` is ``family`` at a cutoff and not judged-only (``recall@10``, not
    ``recall`` or ``recall@10:judged``): how the views pick a family's columns, by the registry's
    parse and never by the spelling of a name."""
    return metric.family == family and metric.k is not None and not metric.judged


def has_uncut(metrics: Iterable[Metric]) -> bool:
    """Whether any of ``metrics`` reads the whole ranking: has no cutoff, or is judged-only (it
    looks past rank k for judged documents), so its value depends on the search depth."""
    return any(m.reads_whole_ranking for m in metrics)


def cutoffs(metrics: Iterable[Metric]) -> list[int]:
    """The distinct cutoffs of ``metrics``, ascending (metrics without one add none)."""
    return sorted({m.k for m in metrics if m.k is not None})


def compute(
    metrics: Sequence[Metric], judgments: RankedJudgments, gain: Gain = "linear"
) -> dict[str, np.ndarray]:
    """Every metric's per-query values, float64 [Q], keyed by the metric's name.

    A cutoff beyond the rankings' depth treats the missing ranks as non-relevant: right when the
    rankings hold every document the system returns (the pipeline searches min(k, corpus size)).
    A metric without a cutoff scores all of each ranking (its ``n_retrieved`` documents). A
    judged-only metric scores the condensed rankings (``RankedJudgments.judged_only``), built
    once for all of them.
    """
    condensed = judgments.judged_only() if any(m.judged for m in metrics) else judgments
    return {
        str(m): REGISTRY[m.family].fn(condensed if m.judged else judgments, m.k, gain)
        for m in metrics
    }


def compute_condensed(
    metrics: Sequence[Metric], judgments: RankedJudgments, gain: Gain = "linear"
) -> dict[str, np.ndarray]:
    """The judged-only (condensed list) form of every metric, per query, keyed by the metric it
    stands for (``ndcg@10`` -> ``ndcg@10:judged``'s values; a judged-only metric is its own
    form): what unjudged documents cannot move, so what tells a real drop from new documents
    nobody judged (core.gate)."""
    forms = {str(m): Metric(m.family, m.k, judged=True) for m in metrics}
    values = compute(sorted(set(forms.values())), judgments, gain)
    return {name: values[str(form)] for name, form in forms.items()}


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
    index, grade); each (query, document) pair at most once. A negative grade is trec_eval's
    "pooled but not judged": non-relevant in every metric, unjudged in judged@k, bpref and the
    judged-only metrics. relevance_level: the grade from which a document is relevant
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
