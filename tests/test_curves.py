"""core.curves: the metric@k cutoffs, and curves that pass through the computed metrics."""

from __future__ import annotations

import numpy as np

from evalret.core.curves import curve_cutoffs, metric_curves
from evalret.core.metrics import build_judgments, compute, parse_metrics


def test_curve_cutoffs_dense_then_log_spaced() -> None:
    """Every k up to 100, then about 20 log-spaced cutoffs ending at the depth."""
    assert curve_cutoffs(10) == list(range(1, 11))
    ks = curve_cutoffs(1000)
    assert ks[:100] == list(range(1, 101)) and ks[-1] == 1000 and len(ks) <= 121
    assert ks == sorted(set(ks))


def test_metric_curves_pass_through_the_computed_metrics() -> None:
    """recall@k and ndcg@k curves equal the metric functions' means at every cutoff; an empty
    slice gives None."""
    rng = np.random.default_rng(0)
    n_q, n_d, depth = 12, 40, 15
    ids = np.array([rng.permutation(n_d)[:depth] for _ in range(n_q)], dtype=np.int64)
    qi = np.repeat(np.arange(n_q), 3)
    di = np.array([d for q in range(n_q) for d in rng.choice(n_d, 3, replace=False)])
    grades = rng.integers(0, 3, len(qi))
    grades[::3] = 2  # every query has a relevant document
    judgments = build_judgments(ids, qi, di, grades, n_docs=n_d)
    masks = {"all": np.ones(n_q, bool), "odd": np.arange(n_q) % 2 == 1, "none": np.zeros(n_q, bool)}
    ks, curves = metric_curves(judgments, masks, depth, "linear")
    assert ks == list(range(1, depth + 1))
    for k in (1, 5, 15):
        per_query = compute(parse_metrics([f"recall@{k}", f"ndcg@{k}"]), judgments)
        for name, mask in (("all", masks["all"]), ("odd", masks["odd"])):
            assert curves["recall"][name][k - 1] == round(per_query[f"recall@{k}"][mask].mean(), 6)
            assert curves["ndcg"][name][k - 1] == round(per_query[f"ndcg@{k}"][mask].mean(), 6)
    assert curves["recall"]["none"] == [None] * depth
