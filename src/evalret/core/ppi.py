"""Prediction-powered intervals (PPI; Angelopoulos et al., Science 2023) of a mean of per-query
scores when some of the labels behind them come from a model. Pure: arrays in, arrays out.

The queries of a slice fall in three groups (pipeline/intervals.py sorts them):

- ``exact``: no model label touches the query, its score is a human score: [h, m];
- ``predicted``: model labels no person checked; only the prediction f (the score on the model's
  labels) is known: [u, m];
- ``labelled``: every model label of the query was also graded by a person, so both the human
  score Y and the prediction f are known: ``labelled_y`` and ``labelled_f``, [n, m].

The model-touched queries (predicted and labelled) are estimated by PPI: the mean prediction over
the predicted queries plus the rectifier, the mean of Y - f over the labelled ones. The exact
queries enter with their own mean, weighted by their share of the slice (a stratified mean), so a
model's bias measured on model-touched queries is not charged to queries it never graded. With
no exact query this is the textbook PPI mean estimator (lambda = 1), and ``ppi_normal_ci`` equals
``ppi_py.ppi_mean_ci(Y, Yhat, Yhat_unlabeled, lam=1)``.

Variances use ddof=0, as ppi_py does; it is also the variance of the mean under the bootstrap,
so the normal and the bootstrap interval estimate the same spread. Columns (metrics) share the
resamples, as in core/stats.bootstrap_ci.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from evalret.core.stats import MAX_CELLS

MIN_LABELLED = 2  # labelled queries below which the rectifier has no spread to measure


def _columns(a: np.ndarray, m: int | None = None) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.shape[0] == 0 and m is not None:
        return np.zeros((0, m))
    return a


def _parts(
    exact: np.ndarray, predicted: np.ndarray, labelled_y: np.ndarray, labelled_f: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(exact [h, m], predicted [u, m], rectifier Y - f [n, m]); ValueError without a predicted
    or a labelled query (PPI needs both) or on misaligned shapes."""
    predicted = _columns(predicted)
    m = predicted.shape[1]
    y, f = _columns(labelled_y, m), _columns(labelled_f, m)
    exact = _columns(exact, m)
    if y.shape != f.shape or exact.shape[1] != m or y.shape[1] != m:
        raise ValueError("PPI parts must share their metric columns; Y and f must align")
    if len(predicted) == 0 or len(y) == 0:
        raise ValueError("PPI needs at least one predicted and one labelled query")
    return exact, predicted, y - f


def _weights(h: int, u: int, n: int) -> tuple[float, float]:
    """Shares of the slice: the exact queries, the model-touched ones."""
    total = h + u + n
    return h / total, (u + n) / total


def ppi_estimate(
    exact: np.ndarray, predicted: np.ndarray, labelled_y: np.ndarray, labelled_f: np.ndarray
) -> np.ndarray:
    """The prediction-powered estimate of the slice's mean human score, per column [m]."""
    ex, pred, rect = _parts(exact, predicted, labelled_y, labelled_f)
    w_exact, w_model = _weights(len(ex), len(pred), len(rect))
    estimate: np.ndarray = w_model * (pred.mean(axis=0) + rect.mean(axis=0))
    if len(ex):
        estimate = estimate + w_exact * ex.mean(axis=0)
    return estimate


def ppi_normal_ci(
    exact: np.ndarray,
    predicted: np.ndarray,
    labelled_y: np.ndarray,
    labelled_f: np.ndarray,
    confidence: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, low, high) [m]: the two-sided normal PPI interval; the variance of the estimate
    is the sum of the parts' variances of the mean, each weighted by its share squared."""
    ex, pred, rect = _parts(exact, predicted, labelled_y, labelled_f)
    w_exact, w_model = _weights(len(ex), len(pred), len(rect))
    var = w_model**2 * (pred.var(axis=0) / len(pred) + rect.var(axis=0) / len(rect))
    if len(ex):
        var = var + w_exact**2 * ex.var(axis=0) / len(ex)
    estimate = ppi_estimate(exact, predicted, labelled_y, labelled_f)
    half = NormalDist().inv_cdf(1 - (1 - confidence) / 2) * np.sqrt(var)
    return estimate, estimate - half, estimate + half


def ppi_bootstrap_ci(
    exact: np.ndarray,
    predicted: np.ndarray,
    labelled_y: np.ndarray,
    labelled_f: np.ndarray,
    samples: int,
    confidence: float,
    seed: int | np.random.SeedSequence | Sequence[int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, low, high) [m]: the percentile bootstrap PPI interval. Each part (exact,
    predicted, labelled) is resampled with replacement within itself, independently of the
    others, ``samples`` times; a labelled query keeps its Y and f together (its rectifier).
    Deterministic for a given seed."""
    ex, pred, rect = _parts(exact, predicted, labelled_y, labelled_f)
    w_exact, w_model = _weights(len(ex), len(pred), len(rect))
    m = pred.shape[1]
    rng = np.random.default_rng(seed)
    means = np.empty((samples, m))
    total = len(ex) + len(pred) + len(rect)
    step = max(1, MAX_CELLS // (total * m))

    def resampled(part: np.ndarray, b: int) -> np.ndarray:
        means: np.ndarray = part[rng.integers(0, len(part), size=(b, len(part)))].mean(axis=1)
        return means

    for start in range(0, samples, step):
        b = min(step, samples - start)
        touched = resampled(pred, b) + resampled(rect, b)
        means[start : start + b] = w_model * touched
        if len(ex):
            means[start : start + b] += w_exact * resampled(ex, b)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2], axis=0)
    return ppi_estimate(exact, predicted, labelled_y, labelled_f), low, high
