"""The statistics of `evalret golden doctor`: can a golden set catch a regression, and does it
still describe the traffic? Pure: numpy and the standard library; arrays in, plain values out.

* **Headroom.** A query is *perfect* when its nDCG@10 and its recall@k are both 1 (within float
  rounding). A slice whose share of perfect queries is at least ``NO_GAIN_SHARE`` (0.5) cannot
  show a gain: half of its queries have nowhere to go, and a better system moves its mean by at
  most what the rest allow. At least ``NO_LOSS_SHARE`` (0.9) it cannot show a loss either: a set
  that easy measures how well a system copies the queries' words, not the regressions traffic
  would feel (and the few imperfect queries give a paired test nothing to weigh).
* **Discrimination** uses the paired statistics of `evalret compare`
  (``core.comparison.paired_statistics``: randomization p-value, bootstrap interval) and the
  minimum detectable effect rule of `evalret validate` (``core.stats.minimum_detectable_effect``,
  two-sided, alpha 0.05, power 0.8). ``queries_needed`` inverts that rule: the n at which the
  observed difference equals the minimum detectable effect, ceil(((z_{1-a/2} + z_power) * sd /
  |delta|)^2).
* **Edge-case coverage**: a shape (``core.query_shapes``) is covered when at least
  ``shape_target(n)`` queries carry it: 10% of the set's queries, never more than 20 (a slice of
  20 queries is the least a per-slice figure can be read from).
* **Representativeness**: a logged query is *covered* when its nearest golden query (cosine of
  the two query embeddings) is at least the similarity level; coverage is the covered share.
  A traffic cluster is *uncovered* when most of its queries (more than half) are not covered.
* **Drift**: the energy distance (Szekely and Rizzo) between the logged and the golden query
  embeddings, E = 2 E|X - Y| - E|X - X'| - E|Y - Y'| (Euclidean distances, every pair of the two
  samples: the V-statistic), with a permutation p-value: the two samples' labels are shuffled
  ``permutations`` times (seeded), p = (count(E* >= E) + 1) / (permutations + 1), never 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

NO_GAIN_SHARE = 0.5
NO_LOSS_SHARE = 0.9
PERFECT_SLACK = 1e-9  # a score within this of 1 is 1 (float rounding of nDCG)
SHAPE_SHARE = 0.10
SHAPE_MAX_TARGET = 20
MAX_PERMUTATION_BATCH = 64  # label permutations scored at once (each a column of a matrix product)


# --- headroom ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Headroom:
    """One slice's headroom: its queries, how many are perfect, and what it cannot show."""

    slice: str
    n_queries: int
    n_perfect: int
    share_perfect: float
    can_show_gain: bool
    can_show_loss: bool


def perfect(ndcg: np.ndarray, recall: np.ndarray) -> np.ndarray:
    """bool [Q]: the queries whose nDCG@10 and recall@k are both 1."""
    ndcg, recall = np.asarray(ndcg, dtype=np.float64), np.asarray(recall, dtype=np.float64)
    return (ndcg >= 1 - PERFECT_SLACK) & (recall >= 1 - PERFECT_SLACK)


def headroom(name: str, is_perfect: np.ndarray, mask: np.ndarray) -> Headroom:
    """The headroom of the slice ``mask`` (bool [Q]) given each query's ``is_perfect``."""
    n = int(np.count_nonzero(mask))
    k = int(np.count_nonzero(is_perfect & mask))
    share = k / n if n else 0.0
    return Headroom(name, n, k, share, share < NO_GAIN_SHARE, share < NO_LOSS_SHARE)


# --- discrimination -----------------------------------------------------------------------------


def queries_needed(
    sd_diff: float, delta: float, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """The queries at which a true difference ``delta`` (with per-query differences of standard
    deviation ``sd_diff``) equals the two-sided minimum detectable effect; None when ``delta`` is
    0 (no number of queries shows it) or there is no spread (any two queries show it: 2)."""
    if delta == 0 or not math.isfinite(delta):
        return None
    if sd_diff <= 0:
        return 2
    z = NormalDist().inv_cdf
    factor = z(1 - alpha / 2) + z(power)
    return max(2, math.ceil((factor * sd_diff / abs(delta)) ** 2))


# --- edge-case coverage ---------------------------------------------------------------------------


def shape_target(n_queries: int) -> int:
    """The queries a shape needs to count as covered: 10% of the set, at most 20 (at least 1)."""
    return max(1, min(SHAPE_MAX_TARGET, math.ceil(SHAPE_SHARE * n_queries)))


def tag_counts(tags: Sequence[Sequence[str]], prefix: str) -> dict[str, int]:
    """How many queries carry each tag starting with ``prefix`` (``shape:``, ``origin:``), by the
    tag's value, sorted by value."""
    counts = Counter(t[len(prefix) :] for ts in tags for t in set(ts) if t.startswith(prefix))
    return dict(sorted(counts.items()))


# --- representativeness ------------------------------------------------------------------------


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """float64 rows scaled to length 1 (a zero row stays zero)."""
    x = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.asarray(np.divide(x, norms, out=np.zeros_like(x), where=norms > 0))


def nearest_similarity(log: np.ndarray, golden: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per logged query (a row of ``log``), the cosine of its nearest golden query and that
    query's row (ties: the first row); -1 and -1 when there is no golden query."""
    if len(golden) == 0 or len(log) == 0:
        return np.full(len(log), -1.0), np.full(len(log), -1, dtype=np.int64)
    sims = unit_rows(log) @ unit_rows(golden).T
    best = np.argmax(sims, axis=1)
    return sims[np.arange(len(log)), best], best.astype(np.int64)


def covered(nearest: np.ndarray, similarity: float) -> np.ndarray:
    """bool [N]: the logged queries whose nearest golden query has cosine >= ``similarity``."""
    return np.asarray(nearest, dtype=np.float64) >= similarity


@dataclass(frozen=True)
class ClusterCoverage:
    """One traffic cluster: its rows (in row order), how many are covered, and whether the
    cluster as a whole is (more than half of its rows not covered: uncovered)."""

    cluster: int
    rows: np.ndarray
    n_covered: int

    @property
    def size(self) -> int:
        return len(self.rows)

    @property
    def uncovered(self) -> bool:
        return self.size > 0 and self.n_covered * 2 < self.size


def cluster_coverage(assignment: np.ndarray, is_covered: np.ndarray) -> list[ClusterCoverage]:
    """Every non-empty cluster of ``assignment`` (int [N]) with its coverage, largest first (ties:
    the lower cluster number)."""
    out = []
    for c in np.unique(assignment).tolist():
        rows = np.flatnonzero(assignment == c)
        out.append(ClusterCoverage(int(c), rows, int(np.count_nonzero(is_covered[rows]))))
    return sorted(out, key=lambda c: (-c.size, c.cluster))


def cluster_count(n: int) -> int:
    """The k of the traffic's k-means: sqrt(n / 2) rounded, from 2 to 50 (a rule of thumb that
    gives clusters of a few tens of queries), at most n."""
    return max(1, min(n, max(2, min(50, round(math.sqrt(n / 2))))))


# --- drift: the energy distance and its permutation test --------------------------------------


@dataclass(frozen=True)
class TwoSampleTest:
    statistic: float  # the energy distance
    p_value: float
    permutations: int
    n_x: int
    n_y: int


def _pairwise(z: np.ndarray) -> np.ndarray:
    """Euclidean distances between every two rows of ``z``."""
    sq = np.einsum("ij,ij->i", z, z)
    d2 = sq[:, None] + sq[None, :] - 2.0 * (z @ z.T)
    np.maximum(d2, 0.0, out=d2)
    np.fill_diagonal(d2, 0.0)
    return np.asarray(np.sqrt(d2))


def _energy(dist: np.ndarray, row_sums: np.ndarray, total: float, s: np.ndarray) -> np.ndarray:
    """The energy distance for each labelling (a column of ``s`` [N, b], 1 for X, 0 for Y) from
    the pooled distances: with A = s'Ds, B = s'r (r the row sums), the sums of the X-X, X-Y and
    Y-Y blocks are A, B - A and T - 2B + A."""
    n_x = s[:, 0].sum()
    n_y = len(s) - n_x
    a = np.einsum("ib,ib->b", s, dist @ s)
    b = s.T @ row_sums
    xx, xy, yy = a, b - a, total - 2 * b + a
    return np.asarray(2 * xy / (n_x * n_y) - xx / n_x**2 - yy / n_y**2)


def energy_test(x: np.ndarray, y: np.ndarray, permutations: int, seed: int) -> TwoSampleTest:
    """The energy distance between the rows of ``x`` and ``y`` and its permutation p-value (see
    the module); both samples need a row."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) == 0 or len(y) == 0:
        raise ValueError("the energy test needs a row in each sample")
    dist = _pairwise(np.vstack([x, y]))
    row_sums = dist.sum(axis=1)
    total = float(row_sums.sum())
    labels = np.concatenate([np.ones(len(x)), np.zeros(len(y))])
    observed = float(_energy(dist, row_sums, total, labels[:, None])[0])
    rng = np.random.default_rng(seed)
    extreme = 0
    tol = 1e-12 * max(1.0, abs(observed))
    for start in range(0, permutations, MAX_PERMUTATION_BATCH):
        b = min(MAX_PERMUTATION_BATCH, permutations - start)
        s = np.stack([rng.permutation(labels) for _ in range(b)], axis=1)
        extreme += int(np.count_nonzero(_energy(dist, row_sums, total, s) >= observed - tol))
    p = (extreme + 1) / (permutations + 1)
    return TwoSampleTest(observed, p, permutations, len(x), len(y))
