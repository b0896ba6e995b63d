"""Statistics over per-query scores. Pure: arrays in, arrays out; randomness from explicit seeds."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from evalret.choices import Correction as Correction

MAX_CELLS = 8_000_000  # resampled values held in memory at once


def seed_for(seed: int, *labels: str) -> np.random.SeedSequence:
    """A seed sequence derived from ``seed`` and stable labels (e.g. a slice name).

    Adding or removing one slice never changes the random draws of another.
    """
    return np.random.SeedSequence([seed, *(zlib.crc32(label.encode()) for label in labels)])


def bootstrap_ci(
    values: np.ndarray,
    samples: int,
    confidence: float,
    seed: int | np.random.SeedSequence | Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of the mean of each column of ``values`` [n, m].

    Resamples the n queries (rows) with replacement ``samples`` times; every column shares the same
    resamples, so metrics of one slice are resampled together. Returns (low [m], high [m]).
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    n, m = values.shape
    if n == 0:
        nan = np.full(m, np.nan)
        return nan, nan.copy()
    if n == 1:
        return values[0].copy(), values[0].copy()
    rng = np.random.default_rng(seed)
    columns = np.ascontiguousarray(values.T)  # [m, n]: one metric's values are contiguous
    means = np.empty((m, samples))
    step = max(1, MAX_CELLS // (n * m))
    for start in range(0, samples, step):
        b = min(step, samples - start)
        idx = rng.integers(0, n, size=(b, n))  # one draw of resamples, shared by every column
        means[:, start : start + b] = _resampled_means(columns, idx)
    alpha = 1.0 - confidence
    low, high = row_quantiles(means, [alpha / 2, 1 - alpha / 2])
    return low, high


def row_quantiles(x: np.ndarray, probs: Sequence[float]) -> list[np.ndarray]:
    """``np.quantile(x, probs, axis=1)`` for a 2-D ``x`` (numpy's default, linear method), to the
    last bit, from one ``np.partition`` (np.quantile imports numpy.ma on its first call, about
    25 ms of every short `evalret score`). A row holding NaN goes to np.quantile, which
    propagates it."""
    if np.isnan(x).any():
        return list(np.quantile(x, probs, axis=1))
    n = x.shape[1]
    virtual = (n - 1) * np.asarray(probs, dtype=np.float64)  # numpy's linear virtual index
    below = np.clip(np.floor(virtual).astype(np.intp), 0, n - 1)
    above = np.minimum(below + 1, n - 1)
    gamma = virtual - below
    ordered = np.partition(x, np.unique(np.concatenate([below, above])), axis=1)
    out = []
    for lo, hi, t in zip(below.tolist(), above.tolist(), gamma.tolist(), strict=True):
        a, b = ordered[:, lo], ordered[:, hi]
        diff = b - a  # numpy's _lerp: from the nearer end, so that t = 0 and t = 1 are exact
        out.append(b - diff * (1 - t) if t >= 0.5 else a + diff * t)
    return out


def _resampled_means(columns: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """[m, b]: the mean of each column (``columns`` [m, n]) over each resample (row of ``idx``
    [b, n]). Sums run over the n draws in order, one column at a time (a gather of b x n
    values, not b x n x m), which adds in the same order as ``values[idx].mean(axis=1)`` did:
    the intervals are the same to the last bit."""
    m, n = columns.shape
    if m == 1:  # a [b, n, 1] gather was summed pairwise over n, as [b, n] is
        return np.asarray(columns[0][idx].mean(axis=1))[None, :]
    if len(idx) == 1:  # a [n, 1] sum would go pairwise: a running sum keeps the order
        return np.stack([np.cumsum(column[idx[0]])[-1:] / n for column in columns])
    draws = np.ascontiguousarray(idx.T)  # [n, b]: summing over axis 0 adds draw after draw
    return np.stack([column[draws].sum(axis=0) / n for column in columns])


# the paired test and the multiple-comparison correction, as the config and the reports name them
PairedTest = Literal["randomization", "t-test", "bootstrap"]
Alternative = Literal["two-sided", "less", "greater"]


def paired_p_value(
    a: np.ndarray,
    b: np.ndarray,
    test: PairedTest,
    *,
    alternative: Alternative = "two-sided",
    samples: int = 10_000,
    seed: int | np.random.SeedSequence | Sequence[int] = 0,
) -> float:
    """p-value of the paired test of H0 "mean(a - b) = 0" over aligned per-query scores.

    ``alternative="less"`` tests whether a is lower than b (a drop). ``randomization`` flips the
    sign of each query's difference (see randomization_p_values: exact when 2^n <= samples,
    otherwise with the +1 correction so p is never 0);
    ``t-test`` is scipy's ttest_rel; ``bootstrap`` resamples the centred differences.
    Identical scores give p = 1, and so does a single query under the t-test and the bootstrap
    (the sign-flip test is exact there: p = 1/2 one-sided). Deterministic for a given seed.
    """
    from scipy import stats as sps

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = a - b
    if len(d) == 0 or not np.any(d):
        return 1.0
    if len(d) == 1 and test != "randomization":
        return 1.0  # one query has no spread to weigh its difference against: no evidence
    if test == "t-test":
        if np.ptp(d) <= 1e-12 * max(1.0, float(np.abs(d).max())):
            shift = float(d.mean())  # no spread: the sign of the shift decides
            drop_side = {"less": shift < 0, "greater": shift > 0, "two-sided": True}[alternative]
            return 0.0 if drop_side else 1.0
        return float(sps.ttest_rel(a, b, alternative=alternative).pvalue)
    rng = np.random.default_rng(seed)
    if test == "randomization":
        return float(randomization_p_values(d[:, None], samples, rng, alternative)[0])
    observed = d.mean()
    centred = d - observed
    means = np.empty(samples)
    step = max(1, MAX_CELLS // len(d))
    for start in range(0, samples, step):
        n = min(step, samples - start)
        means[start : start + n] = centred[rng.integers(0, len(d), size=(n, len(d)))].mean(axis=1)
    if alternative == "less":
        extreme = np.count_nonzero(means <= observed)
    elif alternative == "greater":
        extreme = np.count_nonzero(means >= observed)
    else:
        extreme = np.count_nonzero(np.abs(means) >= abs(observed))
    return float((extreme + 1) / (samples + 1))


def randomization_p_values(
    diffs: np.ndarray,
    samples: int,
    seed: int | np.random.SeedSequence | Sequence[int] | np.random.Generator,
    alternative: Alternative = "two-sided",
) -> np.ndarray:
    """Paired randomization (sign-flip) test of "mean difference = 0" for each column of
    ``diffs`` [n queries, m metrics]; the columns share the same sign flips.

    Under H0 each query's difference is as likely to have the other sign, so the null
    distribution of the mean comes from flipping signs at random. When 2^n <= ``samples`` every
    assignment is enumerated (exact test); otherwise ``samples`` random assignments are drawn and
    the observed one is counted too, p = (extreme + 1) / (samples + 1), never 0. Two-sided counts
    |mean*| >= |mean|. Columns with no difference at all get p = 1.
    """
    d = np.asarray(diffs, dtype=np.float64)
    n, m = d.shape
    observed = d.mean(axis=0)
    tol = 1e-9 * np.maximum(1.0, np.abs(observed))  # equal means must compare equal
    extreme = np.zeros(m, dtype=np.int64)

    def count(signs: np.ndarray) -> None:
        means = (signs @ d) / n
        if alternative == "less":
            hit = means <= observed + tol
        elif alternative == "greater":
            hit = means >= observed - tol
        else:
            hit = np.abs(means) >= np.abs(observed) - tol
        extreme[:] += hit.sum(axis=0)

    exact = n < 63 and 2**n <= samples
    total = 2**n if exact else samples
    step = max(1, MAX_CELLS // max(n, 1))
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    for start in range(0, total, step):
        b = min(step, total - start)
        if exact:
            codes = np.arange(start, start + b, dtype=np.int64)[:, None]
            signs = ((codes >> np.arange(n, dtype=np.int64)) & 1) * 2.0 - 1.0
        else:
            signs = rng.integers(0, 2, size=(b, n), dtype=np.int8) * 2.0 - 1.0
        count(signs)
    p = extreme / total if exact else (extreme + 1) / (samples + 1)
    p = np.minimum(1.0, p)
    p[~np.any(d != 0, axis=0)] = 1.0
    return np.asarray(p, dtype=np.float64)


def resamples_for(n_tests: int, alpha: float, requested: int, two_sided: bool) -> int:
    """Randomization resamples so that a clear effect can still be significant after a
    family-wise correction over ``n_tests``: the smallest attainable p, (1 + 1) / (B + 1)
    (doubled when two-sided), times n_tests must stay ten times below alpha."""
    needed = int(np.ceil(10 * (2 if two_sided else 1) * max(n_tests, 1) / alpha))
    return max(requested, needed)


def adjust_p_values(p_values: Sequence[float], method: Correction) -> np.ndarray:
    """p-values adjusted for multiple testing: Holm or Bonferroni (family-wise error rate),
    Benjamini-Hochberg (false discovery rate, scipy's false_discovery_control), or none."""
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    if m == 0 or method == "none":
        return p.copy()
    if method == "bonferroni":
        return np.minimum(1.0, p * m)
    if method == "bh":
        from scipy import stats as sps

        return np.asarray(sps.false_discovery_control(p, method="bh"), dtype=np.float64)
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(1.0, stepped)
    return out


def minimum_detectable_effect(
    sd_diff: float, n: int, alpha: float = 0.05, power: float = 0.8, two_sided: bool = False
) -> float:
    """Smallest true mean difference a paired test on ``n`` queries detects with ``power``.

    (z_{1-alpha} + z_{power}) * sd_diff / sqrt(n), with z_{1-alpha/2} when two-sided; sd_diff is
    the standard deviation of the per-query differences. Infinite for fewer than two queries.
    Normal quantiles come from the standard library (same values as scipy's to 1e-15), so that
    `evalret validate` does not pay for importing scipy.stats.
    """
    from statistics import NormalDist

    if n < 2:
        return float("inf")
    z = NormalDist().inv_cdf
    z_alpha = z(1 - (alpha / 2 if two_sided else alpha))
    return float((z_alpha + z(power)) * sd_diff / np.sqrt(n))


# how the interval of a paired difference is drawn for a margin (non-inferiority, equivalence)
IntervalMethod = Literal["t", "bootstrap"]


def interval_method(test: PairedTest) -> IntervalMethod:
    """The interval that goes with a paired test: Student's t for the t-test, the percentile
    bootstrap of the mean difference for the bootstrap and the randomization test (which has no
    interval of its own)."""
    return "t" if test == "t-test" else "bootstrap"


@dataclass(frozen=True)
class PairedSpread:
    """What the bounds and p-values of a mean paired difference against a margin are read
    from: the mean, its standard error and n (``t``), or the sorted resampled means
    (``bootstrap``). ``usable`` False: fewer than two queries, or a value that is not finite,
    which prove nothing (bounds -inf and +inf, p-values 1)."""

    method: IntervalMethod
    mean: float
    se: float
    n: int
    means: np.ndarray | None = None  # bootstrap: the resampled means, ascending
    usable: bool = True

    def bounds(self, alpha: float) -> tuple[float, float]:
        """The one-sided (1 - alpha) lower and upper bounds of the mean (together the
        two-sided 1 - 2 alpha interval TOST reads). ``t``: mean -/+ t_{1-alpha, n-1} * se (no
        spread: the mean); ``bootstrap``: the k-th smallest and k-th largest resampled mean,
        k = ceil(alpha * samples)."""
        if not self.usable:
            return float("-inf"), float("inf")
        if self.means is not None:
            b = len(self.means)
            k = min(b, max(1, int(np.ceil(alpha * b - 1e-9))))
            return float(self.means[k - 1]), float(self.means[b - k])
        if self.se <= 1e-15 * max(1.0, abs(self.mean)):
            return self.mean, self.mean
        from scipy import stats as sps

        t = float(sps.t.ppf(1 - alpha, self.n - 1))
        return self.mean - t * self.se, self.mean + t * self.se

    def p_values(self, margin: float) -> tuple[float, float]:
        """(p_low, p_high): the p-values of H0 "mean <= -margin" and H0 "mean >= margin", each
        the inverse of its bound: p_low < alpha exactly when the lower bound at alpha is above
        -margin, p_high < alpha exactly when the upper one is below +margin. ``t``: Student's t
        with n - 1 degrees of freedom; ``bootstrap``: the share of resampled means <= -margin
        (>= +margin)."""
        if not self.usable:
            return 1.0, 1.0
        if self.means is not None:
            b = len(self.means)
            below = np.count_nonzero(self.means <= -margin) / b
            return float(below), float(np.count_nonzero(self.means >= margin) / b)
        if self.se <= 1e-15 * max(1.0, abs(self.mean)):
            return float(self.mean <= -margin), float(self.mean >= margin)
        from scipy import stats as sps

        p_low = float(sps.t.sf((self.mean + margin) / self.se, self.n - 1))
        return p_low, float(sps.t.cdf((self.mean - margin) / self.se, self.n - 1))


def paired_spread(
    diffs: np.ndarray,
    method: IntervalMethod,
    samples: int,
    seed: int | np.random.SeedSequence | Sequence[int],
) -> PairedSpread:
    """The ``PairedSpread`` of the paired differences ``diffs``: for the bootstrap, ``samples``
    resamples of the queries drawn from ``seed``."""
    d = np.asarray(diffs, dtype=np.float64)
    n = len(d)
    if n < 2 or not np.isfinite(d).all():
        return PairedSpread(method, float("nan"), float("nan"), n, usable=False)
    mean, se = float(d.mean()), float(d.std(ddof=1)) / np.sqrt(n)
    if method == "t":
        return PairedSpread(method, mean, se, n)
    rng = np.random.default_rng(seed)
    means = np.empty(samples)
    step = max(1, MAX_CELLS // n)
    for start in range(0, samples, step):
        b = min(step, samples - start)
        means[start : start + b] = d[rng.integers(0, n, size=(b, n))].mean(axis=1)
    means.sort()
    return PairedSpread(method, mean, se, n, means)


def margin_bounds(
    diffs: np.ndarray,
    margin: float,
    alpha: float,
    method: IntervalMethod,
    samples: int,
    seed: int | np.random.SeedSequence | Sequence[int],
) -> tuple[float, float, float, float]:
    """(low, high, p_low, p_high) of the mean of ``diffs`` against ``margin`` at ``alpha``
    (``PairedSpread.bounds`` and ``PairedSpread.p_values``)."""
    spread = paired_spread(diffs, method, samples, seed)
    return (*spread.bounds(alpha), *spread.p_values(margin))


def queries_to_prove(
    mean: float, sd: float, margin: float, alpha: float, equivalence: bool
) -> int | None:
    """The fewest queries whose one-sided (1 - alpha) bound would prove the margin at the
    observed mean difference and spread (normal approximation: n > (z_{1-alpha} * sd /
    distance)^2, distance from the mean to the nearer limit, -δ, or ±δ for equivalence); None
    when no number of queries would: the mean itself is at or past a limit."""
    from statistics import NormalDist

    distance = mean + margin if not equivalence else margin - abs(mean)
    if not np.isfinite(distance) or not np.isfinite(sd) or distance <= 0:
        return None
    z = NormalDist().inv_cdf(1 - alpha)
    return max(2, int(np.floor((z * sd / distance) ** 2)) + 1)
