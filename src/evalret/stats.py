"""Statistics over per-query scores. Pure: arrays in, arrays out; randomness from explicit seeds."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

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
    means = np.empty((samples, m))
    step = max(1, MAX_CELLS // (n * m))
    for start in range(0, samples, step):
        b = min(step, samples - start)
        idx = rng.integers(0, n, size=(b, n))
        means[start : start + b] = values[idx].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2], axis=0)
    return low, high
