"""The functions that score each built-in metric family per query, float64 [Q], from a
``RankedJudgments`` and a cutoff (None: the whole ranking). Each states its formula here; the
registry (``registry.FAMILIES``) names them and declares what each equals in trec_eval."""

from __future__ import annotations

import numpy as np

from evalret.core.metrics.judgments import Hits, RankedJudgments
from evalret.core.metrics.metric import Gain
from evalret.errors import MetricError


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


ERR_MAX_GRADE = 4  # gdeval.pl's MAX_JUDGMENT, the g_max of ir_measures' ERR


def check_err_grades(max_grade: int) -> None:
    """err's refusal of grades above gdeval's maximum: a MetricError naming ``max_grade`` (the
    highest grade of the judgments), checked by the run before anything is embedded and by
    ``err`` itself."""
    if max_grade > ERR_MAX_GRADE:
        raise MetricError(
            f"err follows ir_measures' ERR (gdeval.pl): grades from 0 to {ERR_MAX_GRADE}, a grade "
            f"g stopping the reader with probability (2^g - 1) / 2^{ERR_MAX_GRADE}; the judgments "
            f"hold grade {max_grade}: map the grades to 0-{ERR_MAX_GRADE} or use ndcg"
        )


def err(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """ERR@k (Chapelle et al. 2009) as ir_measures computes it (its only provider, gdeval.pl of
    the TREC Web track): sum over the top k ranks i of r_i / i * prod_{j<i} (1 - r_j), the stop
    probability r = (2^g - 1) / 2^4 for a grade g, 4 being gdeval's fixed maximum grade (not the
    query's); a grade <= 0, an unjudged or a pooled document stops nobody (r = 0). Judgments
    with a grade above 4 are refused (gdeval refuses them too): a MetricError naming the grade.
    Neither the relevance level nor ``ndcg_gain`` plays a part. Without a cutoff, over the whole
    ranking. Summed in rank order, as gdeval's loop adds.
    """
    top = j.ideal_hits.values
    assert top is not None
    check_err_grades(int(top.max()) if len(top) else 0)
    hits = j.gain_hits.cut(k)
    assert hits.values is not None
    stop = (np.exp2(hits.values.astype(np.float64)) - 1.0) / 2.0**ERR_MAX_GRADE
    order = hits.order_in_query() - 1
    # each query's stop probabilities in rank order, one row each; the reader reaches a cell
    # with the product of (1 - r) over the cells above it (the cumulative product, shifted)
    go_on = np.ones((hits.n_queries, int(order.max(initial=-1)) + 2))
    go_on[hits.query, order + 1] = 1.0 - stop
    reached = np.cumprod(go_on, axis=1)[hits.query, order]
    return hits.total(stop * reached / (hits.rank + 1.0))
