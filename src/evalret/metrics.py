"""Ranking metrics, computed per query with numpy and identical to trec_eval's definitions.

Pure: takes arrays, returns arrays. A metric is a small declared value (`Metric("ndcg", 10)`),
parsed from the names ranx users write (`ndcg@10`); the functions that compute each family live in
one registry, and the error for an unknown name is built from that registry.

Conventions shared by every metric (they match trec_eval with its default relevance level 1):

* A document is *relevant* when its judged grade is >= 1; grade 0 means judged non-relevant and
  an unjudged document counts as non-relevant.
* The ranking is the one the index returned after evalret's tie rule (score descending, then
  document id descending, as trec_eval sorts a run); metrics never re-sort it.
* ``R`` is the number of relevant judged documents of the query, retrieved or not. A query with
  ``R = 0`` scores 0 on every metric here; the pipeline leaves such queries out of the means and
  reports how many there were.
* A ranking shorter than ``k`` (a corpus smaller than ``k``) is padded with non-relevant ranks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from evalret.errors import MetricError, Problem

Gain = Literal["linear", "exponential"]
RELEVANCE_LEVEL = 1


@dataclass(frozen=True, order=True)
class Metric:
    """A metric family at a cutoff, e.g. ``Metric("ndcg", 10)`` written ``ndcg@10``."""

    family: str
    k: int

    def __str__(self) -> str:
        return f"{self.family}@{self.k}"


@dataclass(frozen=True)
class RankedJudgments:
    """What the metrics need to know about each query's ranking, as aligned arrays.

    grades: int [Q, depth], judged grade of the document at each rank (0 if unjudged or padding).
    judged: bool [Q, depth], whether that document carries any judgment (grade 0 included).
    ideal: int [Q, depth], the query's judged grades sorted descending, cut or zero-padded to depth.
    n_relevant: int [Q], number of judged documents with grade >= 1 (``R``).
    """

    grades: np.ndarray
    judged: np.ndarray
    ideal: np.ndarray
    n_relevant: np.ndarray

    @property
    def depth(self) -> int:
        return int(self.grades.shape[1])

    @property
    def relevant(self) -> np.ndarray:
        return self.grades >= RELEVANCE_LEVEL


def _discounts(k: int) -> np.ndarray:
    # 1 / log2(i + 1) for ranks i = 1..k
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def _safe_divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(num.shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _gain(grades: np.ndarray, gain: Gain) -> np.ndarray:
    g = np.where(grades >= RELEVANCE_LEVEL, grades, 0).astype(np.float64)
    return g if gain == "linear" else np.exp2(g) - 1.0


def ndcg(j: RankedJudgments, k: int, gain: Gain = "linear") -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k with DCG@k = sum_{i<=k} gain(grade_i) / log2(i + 1).

    Gain ``linear`` is gain(g) = g (trec_eval's ndcg_cut, BEIR, MTEB); ``exponential`` is
    2^g - 1. IDCG@k is the DCG of the ideal ordering of all the query's judged grades, cut at k.
    Equal to trec_eval ``ndcg_cut.k`` with linear gain.
    """
    d = _discounts(k)
    dcg = _gain(j.grades[:, :k], gain) @ d
    idcg = _gain(j.ideal[:, :k], gain) @ d
    return _safe_divide(dcg, idcg)


def mrr(j: RankedJudgments, k: int, gain: Gain = "linear") -> np.ndarray:
    """RR@k = 1 / rank of the first relevant document within the top k, 0 if there is none.

    Its mean over queries is MRR@k. Equal to trec_eval ``recip_rank`` on the run cut at depth k.
    """
    rel = j.relevant[:, :k]
    first = rel.argmax(axis=1)
    return np.where(rel.any(axis=1), 1.0 / (first + 1.0), 0.0)


def recall(j: RankedJudgments, k: int, gain: Gain = "linear") -> np.ndarray:
    """Recall@k = |relevant in top k| / R. Equal to trec_eval ``recall.k``."""
    return _safe_divide(j.relevant[:, :k].sum(axis=1).astype(np.float64), j.n_relevant)


def precision(j: RankedJudgments, k: int, gain: Gain = "linear") -> np.ndarray:
    """Precision@k = |relevant in top k| / k, k even when fewer are retrieved (trec_eval P.k)."""
    return np.asarray(j.relevant[:, :k].sum(axis=1) / float(k), dtype=np.float64)


def average_precision(j: RankedJudgments, k: int, gain: Gain = "linear") -> np.ndarray:
    """AP@k = (1/R) * sum over ranks i <= k holding a relevant document of Precision@i.

    The denominator is R, not min(k, R), as in trec_eval ``map_cut.k``; MAP@k is the mean.
    """
    rel = j.relevant[:, :k]
    prec_at_i = np.cumsum(rel, axis=1) / np.arange(1, rel.shape[1] + 1)
    return _safe_divide((prec_at_i * rel).sum(axis=1), j.n_relevant)


def hit_rate(j: RankedJudgments, k: int, gain: Gain = "linear") -> np.ndarray:
    """Hit rate@k (Success@k) = 1 if a relevant document is in the top k, else 0 (``success.k``)."""
    return np.asarray(j.relevant[:, :k].any(axis=1), dtype=np.float64)


MetricFn = Callable[[RankedJudgments, int, Gain], np.ndarray]


@dataclass(frozen=True)
class Family:
    name: str
    fn: MetricFn
    trec_eval: str  # the trec_eval measure it equals (for conformance and documentation)
    aliases: tuple[str, ...] = ()


REGISTRY: Mapping[str, Family] = {
    f.name: f
    for f in (
        Family("ndcg", ndcg, "ndcg_cut.k"),
        Family("mrr", mrr, "recip_rank (run cut at k)", ("rr", "recip_rank")),
        Family("recall", recall, "recall.k", ("r",)),
        Family("precision", precision, "P.k", ("p",)),
        Family("map", average_precision, "map_cut.k", ("ap",)),
        Family("hit_rate", hit_rate, "success.k", ("success", "hit", "hits")),
    )
}
_ALIASES = {alias: f.name for f in REGISTRY.values() for alias in (f.name, *f.aliases)}
_NAME_RE = re.compile(r"^\s*([A-Za-z_]+)\s*@\s*(\d+)\s*$")


def known_metrics() -> str:
    """Human-readable list of the metric names the registry accepts."""
    return ", ".join(f"{name}@k" for name in REGISTRY)


def parse_metric(name: str) -> Metric:
    """Parse ``ndcg@10`` into a Metric; case-insensitive, with aliases (``P@5``, ``success@1``)."""
    m = _NAME_RE.match(name)
    family = _ALIASES.get(m.group(1).lower()) if m else None
    if m is None or family is None:
        raise MetricError(f"unknown metric {name!r}; known metrics: {known_metrics()} (k >= 1)")
    k = int(m.group(2))
    if k < 1:
        raise MetricError(f"metric {name!r}: the cutoff k must be at least 1")
    return Metric(family, k)


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


def compute(
    metrics: Sequence[Metric], judgments: RankedJudgments, gain: Gain = "linear"
) -> dict[str, np.ndarray]:
    """Every metric's per-query values, float64 [Q], keyed by the metric's name."""
    out: dict[str, np.ndarray] = {}
    for metric in metrics:
        if metric.k > judgments.depth:
            raise ValueError(f"{metric} needs rankings of depth {metric.k}, got {judgments.depth}")
        out[str(metric)] = REGISTRY[metric.family].fn(judgments, metric.k, gain)
    return out


def build_judgments(
    ranked: np.ndarray,
    qrel_query: np.ndarray,
    qrel_doc: np.ndarray,
    qrel_grade: np.ndarray,
    n_docs: int,
) -> RankedJudgments:
    """Look up the grade of every retrieved document in one vectorized pass.

    ranked: int [Q, depth], document indices per query in rank order, -1 where none was retrieved.
    qrel_query, qrel_doc, qrel_grade: the judgments as parallel arrays of (query index, document
    index, grade >= 0); each (query, document) pair at most once.
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
    judged[candidates[hit]] = True
    grades[candidates[hit]] = grades_sorted[pos[hit]]
    judged, grades = judged.reshape(n_queries, depth), grades.reshape(n_queries, depth)

    # ideal grades per query: sort (query asc, grade desc), then scatter the first `depth` of each
    ideal = np.zeros((n_queries, depth), dtype=np.int64)
    n_relevant = np.zeros(n_queries, dtype=np.int64)
    if len(qrel_query):
        q = qrel_query.astype(np.int64)
        g = qrel_grade.astype(np.int64)
        order = np.lexsort((-g, q))
        q, g = q[order], g[order]
        starts = np.searchsorted(q, q, side="left")
        rank_in_query = np.arange(len(q)) - starts
        keep = rank_in_query < depth
        ideal[q[keep], rank_in_query[keep]] = np.maximum(g[keep], 0)
        np.add.at(n_relevant, q, (g >= RELEVANCE_LEVEL).astype(np.int64))
    return RankedJudgments(grades=grades, judged=judged, ideal=ideal, n_relevant=n_relevant)
