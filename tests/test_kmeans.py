"""engines/kmeans.py: seeded, capped at the distinct rows, every row assigned to its nearest
centroid."""

from __future__ import annotations

import numpy as np
import pytest

from evalret.engines.kmeans import kmeans


def _blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=10, size=(4, 8))
    labels = np.repeat(np.arange(4), 50)
    return (centres[labels] + rng.normal(size=(200, 8))).astype(np.float32), labels


def test_same_seed_same_clusters_and_well_separated_blobs_are_found() -> None:
    x, labels = _blobs()
    a, b = kmeans(x, 4, seed=3), kmeans(x, 4, seed=3)
    assert np.array_equal(a.assignment, b.assignment)
    assert np.array_equal(a.centroids, b.centroids)
    # each true blob lands in one cluster, and the four clusters are the four blobs
    mapping = {int(t): set(a.assignment[labels == t].tolist()) for t in range(4)}
    assert all(len(m) == 1 for m in mapping.values())
    assert len({next(iter(m)) for m in mapping.values()}) == 4
    assert sorted(len(a.members(c)) for c in range(a.k)) == [50, 50, 50, 50]


def test_rows_are_assigned_to_their_nearest_centroid() -> None:
    x, _ = _blobs(1)
    c = kmeans(x, 6, seed=0)
    distances = ((x[:, None, :] - c.centroids[None, :, :]) ** 2).sum(-1)
    assert np.array_equal(c.assignment, distances.argmin(1))


def test_k_is_capped_at_the_distinct_rows_and_no_rows_is_refused() -> None:
    x = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
    c = kmeans(x, 10, seed=0)
    assert c.k == 2
    assert c.assignment[0] == c.assignment[1] != c.assignment[2]
    with pytest.raises(ValueError, match="no vectors"):
        kmeans(np.zeros((0, 4), dtype=np.float32), 3, seed=0)
