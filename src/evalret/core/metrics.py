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
from dataclasses import dataclass, replace
from functools import total_ordering
from typing import Literal

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
    """

    grades: np.ndarray
    judged: np.ndarray
    ideal: np.ndarray
    n_relevant: np.ndarray
    n_nonrelevant: np.ndarray
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL
    n_retrieved: np.ndarray | None = None

    @property
    def depth(self) -> int:
        return int(self.grades.shape[1])

    @property
    def retrieved(self) -> np.ndarray:
        """int [Q], the number of documents in each query's ranking."""
        if self.n_retrieved is not None:
            return self.n_retrieved
        return np.full(self.grades.shape[0], self.depth, dtype=np.int64)

    @property
    def relevant(self) -> np.ndarray:
        return is_relevant(self.grades, self.relevance_level)

    def judged_only(self) -> RankedJudgments:
        """The condensed rankings (trec_eval ``-J``): each query's judged documents moved to the
        front in their rank order, the unjudged ones dropped (the freed ranks become padding,
        so ``retrieved`` counts judged documents only). R, N and the ideal are unchanged."""
        order = np.argsort(~self.judged, axis=1, kind="stable")
        judged = np.take_along_axis(self.judged, order, axis=1)
        grades = np.where(judged, np.take_along_axis(self.grades, order, axis=1), 0)
        n_judged = self.judged.sum(axis=1).astype(np.int64)
        return replace(self, grades=grades, judged=judged, n_retrieved=n_judged)


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


def _dcg(grades: np.ndarray, k: int | None, gain: Gain) -> np.ndarray:
    g = _gain(grades[:, :k], gain)
    return np.asarray(g @ _discounts(g.shape[1]), dtype=np.float64)


def ndcg(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k with DCG@k = sum_{i<=k} gain(grade_i) / log2(i + 1).

    Gain ``linear`` is gain(g) = g (trec_eval, BEIR, MTEB); ``exponential`` is 2^g - 1; grades
    <= 0 gain 0, and the relevance level plays no part. IDCG@k is the DCG of the ideal ordering
    of all the query's judged grades, cut at k; trec_eval's with linear gain, at any ``-l``.
    Without a cutoff (``k=None``): DCG of the whole ranking over the IDCG of *all* the query's
    positive grades, never cut.
    """
    return _safe_divide(_dcg(j.grades, k, gain), _dcg(j.ideal, k, gain))


def mrr(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """RR@k = 1 / rank of the first relevant document within the top k, 0 if there is none.

    Its mean over queries is MRR@k; without a cutoff, over the whole ranking.
    """
    rel = j.relevant[:, :k]
    first = rel.argmax(axis=1)
    return np.where(rel.any(axis=1), 1.0 / (first + 1.0), 0.0)


def recall(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """Recall@k = |relevant in top k| / R; without a cutoff, |relevant retrieved| / R over the
    whole ranking."""
    return _safe_divide(j.relevant[:, :k].sum(axis=1).astype(np.float64), j.n_relevant)


def precision(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """Precision@k = |relevant in top k| / k, k even when fewer are retrieved (as trec_eval).

    Without a cutoff: |relevant retrieved| / |retrieved| over the whole ranking, 0 when nothing
    was retrieved (set precision: trec_eval has no uncut ``P``).
    """
    hits = j.relevant[:, :k].sum(axis=1).astype(np.float64)
    if k is None:
        return _safe_divide(hits, j.retrieved.astype(np.float64))
    return np.asarray(hits / float(k), dtype=np.float64)


def average_precision(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """AP@k = (1/R) * sum over ranks i <= k holding a relevant document of Precision@i.

    The denominator is R, not min(k, R), as in trec_eval; MAP@k is the mean. Without a cutoff,
    the sum runs over the whole ranking.
    """
    rel = j.relevant[:, :k]
    prec_at_i = np.cumsum(rel, axis=1) / np.arange(1, rel.shape[1] + 1)
    return _safe_divide((prec_at_i * rel).sum(axis=1), j.n_relevant)


def hit_rate(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """Hit rate@k (Success@k) = 1 if a relevant document is in the top k, else 0.

    Without a cutoff: 1 if any relevant document was retrieved at all (trec_eval has no uncut
    ``success``: it equals ``success`` at the run's depth).
    """
    return np.asarray(j.relevant[:, :k].any(axis=1), dtype=np.float64)


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


# every family scores a query in [0, 1]; a stored per-query score outside it, beyond rounding, is
# not one of ours (a forged or corrupt report)
SCORE_SLACK = 1e-6

FAMILIES = (
    Family("ndcg", ndcg, TrecEval("ndcg_cut", "ndcg")),
    Family("mrr", mrr, TrecEval("recip_rank", "recip_rank", cut_run=True), ("rr", "recip_rank")),
    Family("recall", recall, TrecEval("recall", "set_recall"), ("r",)),
    Family("precision", precision, TrecEval("P", "set_P"), ("p",)),
    Family("map", average_precision, TrecEval("map_cut", "map"), ("ap",)),
    Family(
        "hit_rate",
        hit_rate,
        TrecEval("success", "num_rel_ret", positive=True),
        ("success", "hit", "hits"),
    ),
    Family("bpref", bpref, TrecEval("bpref", "bpref", cut_run=True)),
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
    (trec_eval's ``-l``).
    """
    ranked = np.asarray(ranked, dtype=np.int64)
    n_queries, depth = ranked.shape
    keys = qrel_query.astype(np.int64) * n_docs + qrel_doc.astype(np.int64)
    order = np.argsort(keys, kind="stable")
    keys, grades_sorted = keys[order], qrel_grade.astype(np.int64)[order]

    # only ranked documents judged for some query can match: search just those entries
    judged_somewhere = np.zeros(n_docs + 1, dtype=bool)
    judged_somewhere[qrel_doc.astype(np.int64)] = True
    flat = ranked.ravel()
    candidates = np.flatnonzero(judged_somewhere[flat])  # -1 maps to the last (False) slot
    wanted = candidates // depth * n_docs + flat[candidates]
    pos = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
    hit = keys[pos] == wanted if len(keys) else np.zeros(len(wanted), dtype=bool)
    judged = np.zeros(n_queries * depth, dtype=bool)
    grades = np.zeros(n_queries * depth, dtype=np.int64)
    judged[candidates[hit]] = is_judged(grades_sorted[pos[hit]])  # negative: pooled, unjudged
    grades[candidates[hit]] = grades_sorted[pos[hit]]
    judged, grades = judged.reshape(n_queries, depth), grades.reshape(n_queries, depth)

    ideal, n_relevant = _ideal(qrel_query, qrel_grade, n_queries, depth, relevance_level)
    judged_per_query = np.bincount(
        qrel_query.astype(np.int64)[is_judged(qrel_grade)], minlength=n_queries
    )
    return RankedJudgments(
        grades=grades,
        judged=judged,
        ideal=ideal,
        n_relevant=n_relevant,
        n_nonrelevant=judged_per_query[:n_queries].astype(np.int64) - n_relevant,
        relevance_level=relevance_level,
        n_retrieved=(ranked >= 0).sum(axis=1).astype(np.int64),
    )


def _ideal(
    qrel_query: np.ndarray, qrel_grade: np.ndarray, n_queries: int, depth: int, level: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per query its positive grades sorted descending (at least ``depth`` wide, zero-padded),
    and its number of grades >= ``level``."""
    q = qrel_query.astype(np.int64)
    g = qrel_grade.astype(np.int64)
    n_relevant = np.bincount(q[is_relevant(g, level)], minlength=n_queries).astype(np.int64)
    positive = g > 0
    q, g = q[positive], g[positive]
    width = max(depth, int(np.bincount(q, minlength=1).max(initial=0)))
    ideal = np.zeros((n_queries, width), dtype=np.int64)
    # sort (query asc, grade desc), then scatter each query's grades from column 0
    order = np.lexsort((-g, q))
    q, g = q[order], g[order]
    rank_in_query = np.arange(len(q)) - np.searchsorted(q, q, side="left")
    ideal[q, rank_in_query] = g
    return ideal, n_relevant
