"""Bootstrap confidence intervals: deterministic, sensible, and independent across slices."""

from __future__ import annotations

import numpy as np

from evalret.stats import bootstrap_ci, seed_for


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
    import evalret.stats as stats

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
