"""Bootstrap confidence intervals: deterministic, sensible, and independent across slices."""

from __future__ import annotations

import numpy as np
import pytest

from evalret.core.stats import (
    adjust_p_values,
    bootstrap_ci,
    minimum_detectable_effect,
    paired_p_value,
    resamples_for,
    row_quantiles,
    seed_for,
)


def test_bootstrap_is_deterministic_and_brackets_the_mean() -> None:
    """Same seed, same interval; the interval contains the sample mean."""
    values = np.random.default_rng(1).random((300, 3))
    a = bootstrap_ci(values, 1000, 0.95, seed_for(0, "all"))
    b = bootstrap_ci(values, 1000, 0.95, seed_for(0, "all"))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    mean = values.mean(axis=0)
    assert np.all(a[0] < mean) and np.all(mean < a[1])


def test_bootstrap_width_matches_normal_theory() -> None:
    """For 400 uniform values the 95% interval is about 2 * 1.96 * sd / sqrt(n) wide."""
    values = np.random.default_rng(2).random(400)
    low, high = bootstrap_ci(values, 4000, 0.95, 7)
    expected = 2 * 1.96 * values.std(ddof=1) / np.sqrt(len(values))
    assert abs((high[0] - low[0]) - expected) / expected < 0.1


def test_bootstrap_chunking_does_not_change_results(monkeypatch: object) -> None:
    """Resampling in memory-bounded chunks gives the same draws as one block."""
    import evalret.core.stats as stats

    values = np.random.default_rng(3).random((50, 2))
    whole = bootstrap_ci(values, 500, 0.9, 11)
    monkeypatch.setattr(stats, "MAX_CELLS", 100)  # type: ignore[attr-defined]
    chunked = bootstrap_ci(values, 500, 0.9, 11)
    assert np.array_equal(whole[0], chunked[0]) and np.array_equal(whole[1], chunked[1])


def test_degenerate_sizes() -> None:
    """No queries gives NaN; one query gives a zero-width interval."""
    low, high = bootstrap_ci(np.zeros((0, 2)), 100, 0.95, 0)
    assert np.isnan(low).all() and np.isnan(high).all()
    low, high = bootstrap_ci(np.array([[0.3, 0.7]]), 100, 0.95, 0)
    assert low.tolist() == [0.3, 0.7] == high.tolist()


def test_slice_seeds_differ_by_label() -> None:
    """Seeds derived from different slice names give different draws."""
    a = np.random.default_rng(seed_for(0, "head")).integers(0, 1000, 5)
    b = np.random.default_rng(seed_for(0, "tail")).integers(0, 1000, 5)
    assert not np.array_equal(a, b)


def _exhaustive_sign_flip_p(d: np.ndarray, alternative: str) -> float:
    """Exact paired randomization p-value: every one of the 2^n sign assignments."""
    n = len(d)
    signs = np.array([[1 if (mask >> i) & 1 else -1 for i in range(n)] for mask in range(2**n)])
    means = (signs * d).mean(axis=1)
    observed = d.mean()
    if alternative == "less":
        return float(np.mean(means <= observed + 1e-15))
    return float(np.mean(np.abs(means) >= abs(observed) - 1e-15))


def test_randomization_equals_exhaustive_permutation_on_a_tiny_case() -> None:
    """n = 8 (256 sign flips): the randomization test is exact and equals brute force."""
    a = np.array([0.9, 0.7, 0.8, 0.65, 1.0, 0.5, 0.75, 0.6])
    b = np.array([0.6, 0.72, 0.5, 0.6, 0.8, 0.55, 0.3, 0.62])
    for alternative in ("two-sided", "less"):
        ours = paired_p_value(b, a, "randomization", alternative=alternative, samples=1000, seed=1)
        assert ours == pytest.approx(_exhaustive_sign_flip_p(b - a, alternative), abs=1e-12)


def test_randomization_sampled_is_deterministic_close_and_never_zero() -> None:
    """n = 40: sampled p is the same for a seed, near the t-test's, and > 0 (+1 correction)."""
    rng = np.random.default_rng(5)
    a = rng.random(40)
    b = a + 0.05 + 0.1 * rng.standard_normal(40)
    p1 = paired_p_value(a, b, "randomization", samples=5000, seed=3)
    assert p1 == paired_p_value(a, b, "randomization", samples=5000, seed=3)
    assert abs(p1 - paired_p_value(a, b, "t-test")) < 0.02
    higher = a + 1.0 + 0.01 * rng.random(40)
    huge = paired_p_value(a, higher, "randomization", alternative="less", samples=999, seed=0)
    assert huge == pytest.approx(1 / 1000)  # no resample as extreme: (0 + 1) / (999 + 1)


def test_t_test_is_scipys_ttest_rel() -> None:
    """The t-test p-value is scipy.stats.ttest_rel's, two-sided and one-sided."""
    from scipy import stats as sps

    rng = np.random.default_rng(9)
    a, b = rng.random(30), rng.random(30)
    assert paired_p_value(a, b, "t-test") == sps.ttest_rel(a, b).pvalue
    assert paired_p_value(a, b, "t-test", alternative="less") == pytest.approx(
        sps.ttest_rel(a, b, alternative="less").pvalue
    )


def test_identical_scores_give_p_one() -> None:
    """No difference at all: p = 1 for every test."""
    a = np.random.default_rng(0).random(20)
    for test in ("randomization", "t-test", "bootstrap"):
        assert paired_p_value(a, a.copy(), test) == 1.0  # type: ignore[arg-type]


def test_bootstrap_test_detects_a_clear_drop() -> None:
    """A consistent drop gives a small one-sided bootstrap p; a tiny noisy one does not."""
    rng = np.random.default_rng(2)
    base = rng.random(100)
    assert paired_p_value(base - 0.2, base, "bootstrap", alternative="less", seed=1) < 0.01
    slight = base - 0.01 + 0.3 * rng.standard_normal(100)
    assert paired_p_value(slight, base, "bootstrap", alternative="less", seed=1) > 0.05


def test_corrections_by_hand() -> None:
    """Holm, Bonferroni and Benjamini-Hochberg on p = (0.01, 0.04, 0.03, 0.5)."""
    p = [0.01, 0.04, 0.03, 0.5]
    # Holm: sorted 0.01*4, 0.03*3, 0.04*2, 0.5*1 -> 0.04, 0.09, max(0.09, 0.08), 0.5
    assert adjust_p_values(p, "holm").tolist() == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert adjust_p_values(p, "bonferroni").tolist() == pytest.approx([0.04, 0.16, 0.12, 1.0])
    # BH: p_(i) * m / i, then running minimum from the top: 0.04, 0.0533, 0.0533, 0.5
    assert adjust_p_values(p, "bh").tolist() == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5])
    assert adjust_p_values(p, "none").tolist() == p


def test_minimum_detectable_effect_formula() -> None:
    """(z_0.95 + z_0.8) * sd / sqrt(n): 2.486 * 0.15 / sqrt(1000) = 0.0118."""
    assert minimum_detectable_effect(0.15, 1000) == pytest.approx(0.011794, abs=1e-5)
    assert minimum_detectable_effect(0.15, 1000, two_sided=True) == pytest.approx(
        0.013289, abs=1e-5
    )
    assert minimum_detectable_effect(0.3, 1) == float("inf")


def test_randomization_agrees_with_scipy_permutation_test_exactly() -> None:
    """On n = 10 both enumerate all 1,024 sign assignments: the p-values are equal."""
    from scipy import stats as sps

    rng = np.random.default_rng(11)
    a, b = rng.random(10), rng.random(10)
    theirs = sps.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=5000,
        alternative="less",
    ).pvalue
    assert paired_p_value(a, b, "randomization", alternative="less", samples=5000) == pytest.approx(
        theirs, abs=1e-12
    )


def test_resamples_grow_with_the_number_of_tests() -> None:
    """154 two-sided tests at alpha 0.05 need 61,600 resamples for p_min * m <= alpha / 10."""
    assert resamples_for(154, 0.05, 10_000, two_sided=True) == 61_600
    assert resamples_for(3, 0.05, 10_000, two_sided=False) == 10_000


def test_one_query_is_never_significant() -> None:
    """A single query's drop is no evidence of a systematic one: the t-test said p = 0 (the
    "no spread" rule) and the bootstrap p = 1 / (samples + 1), so a gate with significance
    failed a one-query slice as a significant drop. The sign-flip test is exact: p = 1/2."""
    a, b = np.array([0.14]), np.array([0.5])
    for test in ("t-test", "bootstrap"):
        assert paired_p_value(a, b, test, alternative="less", samples=1000) == 1.0  # type: ignore[arg-type]
    assert paired_p_value(a, b, "randomization", alternative="less", samples=1000) == 0.5
    # two queries shifted alike: no spread, the shift's sign decides (unchanged)
    assert (
        paired_p_value(np.array([0.1, 0.2]), np.array([0.5, 0.6]), "t-test", alternative="less")
        == 0.0
    )


def gathered_bootstrap(
    values: np.ndarray, samples: int, confidence: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The bootstrap as first written: one [b, n, m] gather per chunk, np.quantile."""
    import evalret.core.stats as stats

    n, m = values.shape
    rng = np.random.default_rng(seed)
    means = np.empty((samples, m))
    step = max(1, stats.MAX_CELLS // (n * m))
    for start in range(0, samples, step):
        b = min(step, samples - start)
        means[start : start + b] = values[rng.integers(0, n, size=(b, n))].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2], axis=0)
    return low, high


@pytest.mark.parametrize(
    ("n", "m", "cells"),
    [(2, 1, None), (50, 1, None), (50, 2, None), (50, 2, 100), (300, 4, None), (300, 4, 1500)],
)
def test_bootstrap_equals_the_gathered_means_to_the_last_bit(
    monkeypatch: pytest.MonkeyPatch, n: int, m: int, cells: int | None
) -> None:
    """The column-at-a-time sums and the partition quantiles give the intervals of the plain
    [b, n, m] gather and np.quantile exactly (whole, in chunks, in chunks of one resample)."""
    import evalret.core.stats as stats

    if cells is not None:
        monkeypatch.setattr(stats, "MAX_CELLS", cells)
    values = np.random.default_rng(n + m).random((n, m))
    for seed, confidence in ((0, 0.95), (5, 0.9), (9, 0.5)):
        got = bootstrap_ci(values, 700, confidence, seed)
        want = gathered_bootstrap(values, 700, confidence, seed)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_row_quantiles_equal_numpy_quantile_to_the_last_bit() -> None:
    """np.quantile's linear method, ties, exact order statistics (p 0 and 1) and NaN included."""
    rng = np.random.default_rng(4)
    probs = [0.0, 0.025, 0.3, 0.5, 0.975, 1.0]
    for n in (1, 2, 3, 10, 999, 1000):
        for x in (rng.random((3, n)), np.round(rng.random((2, n)), 1)):
            want = np.quantile(x, probs, axis=1)
            got = row_quantiles(x, probs)
            assert all(np.array_equal(w, g) for w, g in zip(want, got, strict=True))
    x = np.array([[0.5, np.nan, 0.1], [0.2, 0.3, 0.4]])
    got = row_quantiles(x, [0.1, 0.9])
    assert np.isnan(got[0][0]) and np.array_equal(got[1][1:], np.quantile(x, 0.9, axis=1)[1:])
