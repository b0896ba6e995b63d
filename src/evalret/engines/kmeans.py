"""k-means over embeddings (faiss), seeded: the clusters `evalret golden synth` draws documents
from and `evalret golden doctor` groups traffic into.

``kmeans(vectors, k, seed)`` returns the centroids and each row's cluster; the same vectors, k and
seed give the same clusters on every run (faiss's k-means is seeded, and its threads are kept to
one here so that the order of floating-point sums cannot change a close assignment). k is capped
at the number of distinct rows; a cluster that ends empty is kept (its centroid is faiss's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ITERATIONS = 25


@dataclass(frozen=True)
class Clusters:
    centroids: np.ndarray  # float32 [k, d]
    assignment: np.ndarray  # int64 [n]: each row's cluster (its nearest centroid by L2)

    @property
    def k(self) -> int:
        return int(self.centroids.shape[0])

    def members(self, cluster: int) -> np.ndarray:
        """The rows of ``cluster``, in row order."""
        return np.flatnonzero(self.assignment == cluster)


def kmeans(vectors: np.ndarray, k: int, seed: int, iterations: int = ITERATIONS) -> Clusters:
    """Seeded k-means of the rows of ``vectors`` into at most ``k`` clusters (see the module)."""
    import faiss

    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n = x.shape[0]
    if n == 0:
        raise ValueError("k-means of no vectors")
    k = max(1, min(k, len(np.unique(x, axis=0))))
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        km = faiss.Kmeans(x.shape[1], k, niter=iterations, seed=seed, verbose=False)
        km.cp.min_points_per_centroid = 1  # no warning on small inputs
        km.cp.max_points_per_centroid = max(256, -(-n // k))  # no sub-sampling: every row counts
        km.train(x)
        _, assignment = km.index.search(x, 1)
    finally:
        faiss.omp_set_num_threads(threads)
    centroids = np.array(km.centroids, dtype=np.float32)
    return Clusters(centroids, assignment[:, 0].astype(np.int64))
