"""Scoring a list of metrics on judged rankings: every metric per query (``compute``), the
judged-only forms (``compute_condensed``), judged@k and one family at many cutoffs
(``at_cutoffs``, what the curves read)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from evalret.core.metrics.families import _discounts, _gain, _safe_divide
from evalret.core.metrics.judgments import Hits, RankedJudgments
from evalret.core.metrics.metric import Gain, GainMap, Metric
from evalret.core.metrics.registry import REGISTRY


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


def compute(
    metrics: Sequence[Metric], judgments: RankedJudgments, gain: Gain = "linear"
) -> dict[str, np.ndarray]:
    """Every metric's per-query values, float64 [Q], keyed by the metric's name.

    A cutoff beyond the rankings' depth treats the missing ranks as non-relevant: right when the
    rankings hold every document the system returns (the pipeline searches min(k, corpus size)).
    A metric without a cutoff scores all of each ranking (its ``n_retrieved`` documents). A
    judged-only metric scores the condensed rankings (``RankedJudgments.judged_only``), built
    once for all of them; a metric with its own level (``P@5(rel=2)``) scores them read at
    that level (``RankedJudgments.at_level``), one with its own gains (``ndcg@10(gains=1:1,2:3)``)
    with its grades mapped (``RankedJudgments.with_gains``, gains taken as they are, never
    exponentiated), each view made once.
    """
    condensed = judgments.judged_only() if any(m.judged for m in metrics) else judgments
    views: dict[tuple[bool, int | None, GainMap | None], RankedJudgments] = {}

    def read(m: Metric) -> RankedJudgments:
        j = condensed if m.judged else judgments
        if m.rel is None and m.gains is None:
            return j
        key = (m.judged, m.rel, m.gains)
        if key not in views:
            j = j if m.rel is None else j.at_level(m.rel)
            views[key] = j if m.gains is None else j.with_gains(m.gains)
        return views[key]

    # a metric's own gains are final: the run's gain (exponential) does not map them again
    return {
        str(m): REGISTRY[m.family].fn(read(m), m.k, gain if m.gains is None else "linear")
        for m in metrics
    }


def compute_condensed(
    metrics: Sequence[Metric], judgments: RankedJudgments, gain: Gain = "linear"
) -> dict[str, np.ndarray]:
    """The judged-only (condensed list) form of every metric, per query, keyed by the metric it
    stands for (``ndcg@10`` -> ``ndcg@10:judged``'s values; a judged-only metric is its own
    form): what unjudged documents cannot move, so what tells a real drop from new documents
    nobody judged (core.gate)."""
    forms = {str(m): replace(m, judged=True) for m in metrics}
    values = compute(sorted(set(forms.values())), judgments, gain)
    return {name: values[str(form)] for name, form in forms.items()}
