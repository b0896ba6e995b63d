"""Prediction-powered intervals (core/ppi.py): the ppi-python package as an oracle, the bootstrap
against the normal interval, and a seeded coverage simulation (issue #25's done-when figures)."""

from __future__ import annotations

import numpy as np
import pytest
from ppi_py import ppi_mean_ci

from evalret.core.ppi import ppi_bootstrap_ci, ppi_estimate, ppi_normal_ci
from evalret.core.stats import bootstrap_ci

NONE = np.zeros(0)


def _biased_judge(
    rng: np.random.Generator, n: int, bias: float = 0.12, noise: float = 0.1
) -> tuple[np.ndarray, np.ndarray]:
    """(Y, f): true per-query scores in [0, 1] (Beta(2, 3): mean 0.4) and an LLM view of them
    that over-grades (a systematic inflation) with noise, clipped to [0, 1]."""
    y = rng.beta(2.0, 3.0, n)
    f = np.clip(y + bias + rng.normal(0.0, noise, n), 0.0, 1.0)
    return y, f


@pytest.mark.parametrize(("n", "big_n", "m", "confidence"), [(40, 360, 1, 0.95), (7, 50, 3, 0.9)])
def test_normal_interval_equals_ppi_python(n: int, big_n: int, m: int, confidence: float) -> None:
    rng = np.random.default_rng(n)
    y = rng.beta(2.0, 3.0, (n, m))
    f = np.clip(y + 0.1 + rng.normal(0.0, 0.1, (n, m)), 0.0, 1.0)
    f_unlabelled = rng.beta(3.0, 3.0, (big_n, m))
    estimate, low, high = ppi_normal_ci(NONE, f_unlabelled, y, f, confidence)
    ref_low, ref_high = ppi_mean_ci(y, f, f_unlabelled, alpha=1 - confidence, lam=1)
    np.testing.assert_allclose(low, np.ravel(ref_low), rtol=0, atol=1e-12)
    np.testing.assert_allclose(high, np.ravel(ref_high), rtol=0, atol=1e-12)
    np.testing.assert_allclose(estimate, (np.ravel(ref_low) + np.ravel(ref_high)) / 2, atol=1e-12)


def test_bootstrap_interval_agrees_with_the_normal_one_and_is_seeded() -> None:
    rng = np.random.default_rng(1)
    y, f = _biased_judge(rng, 200)
    _, f_unlabelled = _biased_judge(rng, 2000)
    exact = rng.beta(2.0, 3.0, 500)
    est, low, high = ppi_normal_ci(exact, f_unlabelled, y, f, 0.95)
    b_est, b_low, b_high = ppi_bootstrap_ci(exact, f_unlabelled, y, f, 4000, 0.95, 7)
    np.testing.assert_allclose(b_est, est, atol=1e-12)
    width = float(high[0] - low[0])
    assert abs(b_low[0] - low[0]) < 0.05 * width and abs(b_high[0] - high[0]) < 0.05 * width
    again = ppi_bootstrap_ci(exact, f_unlabelled, y, f, 4000, 0.95, 7)
    np.testing.assert_array_equal(again[1], b_low)


def test_exact_queries_enter_with_their_share_and_carry_no_correction() -> None:
    """Queries no LLM label touched keep their own mean: the rectifier measured on the judged
    queries corrects only the judged queries' share of the slice."""
    exact = np.array([0.2, 0.4])
    predicted = np.array([0.9, 0.7, 0.8])
    y, f = np.array([0.5, 0.3]), np.array([0.7, 0.6])  # the judge over-grades by 0.25
    touched = predicted.mean() + (y - f).mean()
    expected = (2 * exact.mean() + 5 * touched) / 7
    assert ppi_estimate(exact, predicted, y, f)[0] == pytest.approx(expected, abs=1e-15)


def test_ppi_needs_a_labelled_and_a_predicted_query() -> None:
    with pytest.raises(ValueError, match="at least one predicted and one labelled"):
        ppi_normal_ci(NONE, np.array([0.5, 0.6]), NONE, NONE, 0.95)
    with pytest.raises(ValueError, match="at least one predicted and one labelled"):
        ppi_bootstrap_ci(NONE, NONE, np.array([0.5]), np.array([0.4]), 100, 0.95, 0)


TRIALS, QUERIES, LABELLED, TRUE_MEAN = 200, 400, 40, 0.4


def coverage_simulation(seed: int = 2023) -> dict[str, float]:
    """Share of TRIALS whose 95% interval holds the true mean: PPI (normal and bootstrap, 40 of
    400 queries with human labels) and the naive interval on the LLM's scores alone."""
    rng = np.random.default_rng(seed)
    hits = {"ppi_normal": 0, "ppi_bootstrap": 0, "naive_normal": 0, "naive_bootstrap": 0}
    widths = {k: 0.0 for k in hits}
    for trial in range(TRIALS):
        y, f = _biased_judge(rng, QUERIES)
        labelled = rng.permutation(QUERIES)[:LABELLED]
        unlabelled = np.setdiff1d(np.arange(QUERIES), labelled)
        parts = (NONE, f[unlabelled], y[labelled], f[labelled])
        intervals = {
            "ppi_normal": ppi_normal_ci(*parts, 0.95)[1:],
            "ppi_bootstrap": ppi_bootstrap_ci(*parts, 1000, 0.95, trial)[1:],
            "naive_bootstrap": bootstrap_ci(f, 1000, 0.95, trial),
        }
        se = f.std() / np.sqrt(QUERIES)
        intervals["naive_normal"] = (f.mean() - 1.96 * se, f.mean() + 1.96 * se)
        for name, (low, high) in intervals.items():
            hits[name] += int(np.ravel(low)[0] <= TRUE_MEAN <= np.ravel(high)[0])
            widths[name] += float(np.ravel(high)[0] - np.ravel(low)[0]) / TRIALS
    return {
        **{k: v / TRIALS for k, v in hits.items()},
        **{f"width_{k}": v for k, v in widths.items()},
    }


def test_ppi_covers_the_true_mean_where_the_llm_only_interval_does_not() -> None:
    """Issue #25's done-when: at a nominal 95%, PPI covers the true mean in >= 90% of 200 seeded
    trials; the naive interval on LLM labels alone, centred on the judge's inflated mean, does
    not."""
    result = coverage_simulation()
    assert result["ppi_normal"] >= 0.90, result
    assert result["ppi_bootstrap"] >= 0.90, result
    assert result["naive_normal"] <= 0.10, result
    assert result["naive_bootstrap"] <= 0.10, result


def stratified_simulation(seed: int = 7) -> dict[str, float]:
    """Coverage over TRIALS when 30% of the queries carry no LLM label (their human scores are
    higher: Beta(5, 2)) and the judge over-grades the rest (40 of them checked by people): the
    stratified PPI of core/ppi.py, against the rectifier applied to every query's mean."""
    rng = np.random.default_rng(seed)
    exact_n, judged_n = 120, 280
    true_mean = (exact_n * 5 / 7 + judged_n * TRUE_MEAN) / (exact_n + judged_n)
    z = 1.959963984540054
    hits = {"stratified": 0, "rectifier_on_all": 0}
    for _ in range(TRIALS):
        exact = rng.beta(5.0, 2.0, exact_n)
        y, f = _biased_judge(rng, judged_n)
        labelled = rng.permutation(judged_n)[:LABELLED]
        predicted = np.setdiff1d(np.arange(judged_n), labelled)
        _, low, high = ppi_normal_ci(exact, f[predicted], y[labelled], f[labelled], 0.95)
        hits["stratified"] += int(low[0] <= true_mean <= high[0])
        every = np.concatenate([exact, f])  # f = Y where no LLM label touches the query
        rect = y[labelled] - f[labelled]
        estimate = every.mean() + rect.mean()
        se = np.sqrt(every.var() / len(every) + rect.var() / LABELLED)
        hits["rectifier_on_all"] += int(abs(estimate - true_mean) <= z * se)
    return {k: v / TRIALS for k, v in hits.items()}


def test_queries_without_llm_labels_are_not_corrected() -> None:
    """The judge's bias, measured on judged queries, corrects only their share of the mean: the
    stratified interval keeps its coverage where charging the rectifier to every query loses it."""
    result = stratified_simulation()
    assert result["stratified"] >= 0.90, result
    assert result["rectifier_on_all"] <= 0.75, result
