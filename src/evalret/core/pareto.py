"""The Pareto front of quality against a cost: the points no other point beats on both.

A point is dominated when another has quality at least as high and cost at most as high, and is
strictly better on one of them. Points with a missing (NaN) quality or cost are never on the
front and dominate nothing. Equal points do not dominate each other: both are on the front.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pareto_front(quality: Sequence[float], cost: Sequence[float]) -> np.ndarray:
    """A bool mask: True where the point is on the front (higher quality, lower cost wins)."""
    q = np.asarray(quality, dtype=np.float64)
    c = np.asarray(cost, dtype=np.float64)
    if q.shape != c.shape or q.ndim != 1:
        raise ValueError("quality and cost must be 1-d and of one length")
    valid = ~(np.isnan(q) | np.isnan(c))
    qj, cj = q[None, :], c[None, :]
    qi, ci = q[:, None], c[:, None]
    dominates = (qj >= qi) & (cj <= ci) & ((qj > qi) | (cj < ci)) & valid[None, :]
    return np.asarray(valid & ~dominates.any(axis=1))
