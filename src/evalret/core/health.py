"""Intrinsic embedding health: label-free figures of how a set of vectors uses its space.

Pure numpy: functions take arrays and return numbers; no files, no models, no faiss. Everything
random comes from an explicit seed, so a rerun gives identical figures.

Two kinds of figures, computed by ``embedding_health`` for one matrix (rows = vectors):

* spectral figures, from the covariance of the rows (float64): partition isotropy, effective
  dimensionality and its ratio to the dimension, top-10 variance share, dead dimensions, effective
  rank, stable rank. Above ``max_rows`` rows (default 50,000) they use a seeded sample of
  ``max_rows`` rows drawn without replacement, so their cost is O(max_rows · d²), whatever the
  number of rows;
* pairwise figures, on L2-normalized rows: mean pairwise cosine and uniformity over pairs of
  distinct rows (every pair when there are at most ``sample`` of them, else ``sample`` seeded
  random pairs), and alignment over given positive pairs (query ↔ relevant document).

``FIGURES`` names each figure, says which direction is healthier (what a gate needs) and what it
means; ``collapse_reasons`` states the collapse rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

Direction = Literal["higher", "lower"]
Health = dict[str, float | int | bool]

DEFAULT_SAMPLE = 100_000  # pairs for avg_cosine and uniformity
DEFAULT_MAX_ROWS = 50_000  # rows for the covariance / spectrum
UNIFORMITY_T = 2.0  # t in log E[exp(-t ||x - y||^2)] (Wang & Isola 2020)
ALIGNMENT_ALPHA = 2.0  # alpha in E ||x - y||^alpha
TOP_K_VARIANCE = 10
DEAD_DIM_RELATIVE_VARIANCE = 0.01  # dead: variance below 1% of the mean per-dimension variance
# eigenvalues / variances below this fraction of the mean squared row norm are numerical zeros
# (rounding noise of float64 sums); an embedding whose whole spread is below it has no spread
NUMERICAL_ZERO = 1e-12
_CHUNK = 8192  # rows (or pairs) processed at once


@dataclass(frozen=True)
class HealthFigure:
    """One reported figure: its stable name, which way is healthier, and what it measures."""

    name: str
    direction: Direction | None  # None: descriptive (a count), not something to gate on
    description: str


FIGURES: dict[str, HealthFigure] = {
    f.name: f
    for f in (
        HealthFigure("n_vectors", None, "rows in the matrix"),
        HealthFigure("dim", None, "dimension of the vectors"),
        HealthFigure(
            "rows_sampled", None, "rows behind the spectral figures (all, or a seeded sample)"
        ),
        HealthFigure("pairs_sampled", None, "pairs behind avg_cosine and uniformity"),
        HealthFigure(
            "partition_isotropy",
            "higher",
            "k · min Z(c) / Σ Z(c), Z(c) = Σ_x exp(c·x), over the k = 2·dim directions ±c along "
            "the eigenvectors of XᵀX: 1 when no direction is favoured",
        ),
        HealthFigure(
            "effective_dim",
            "higher",
            "participation ratio (Σλ)² / Σλ² of the covariance eigenvalues",
        ),
        HealthFigure("effective_dim_ratio", "higher", "effective_dim / dim"),
        HealthFigure(
            "top10_variance_share",
            "lower",
            "share of the total variance along the 10 largest principal directions",
        ),
        HealthFigure(
            "avg_cosine", "lower", "mean cosine between distinct rows (near 0 is healthy)"
        ),
        HealthFigure(
            "uniformity",
            "lower",
            "log E exp(-2 ||x - y||²) over pairs of distinct normalized rows",
        ),
        HealthFigure(
            "alignment",
            "lower",
            "E ||x - y||² over positive pairs of normalized rows (query ↔ relevant document)",
        ),
        HealthFigure("n_positive_pairs", None, "positive pairs behind alignment"),
        HealthFigure(
            "dead_dims",
            "lower",
            "dimensions whose variance is below 1% of the mean per-dimension variance",
        ),
        HealthFigure("dead_dims_share", "lower", "dead_dims / dim"),
        HealthFigure(
            "effective_rank",
            "higher",
            "exp of the entropy of the normalized singular values of the centred matrix",
        ),
        HealthFigure(
            "effective_rank_ratio",
            "higher",
            "effective_rank / min(dim, rows_sampled - 1), the largest rank the rows allow",
        ),
        HealthFigure(
            "stable_rank",
            "higher",
            "||A||_F² / ||A||_2² of the centred matrix (total over largest variance)",
        ),
        HealthFigure("collapsed", "lower", "the collapse rule fired (false is healthy)"),
    )
}
HEALTHIER: dict[str, Direction] = {
    name: f.direction for name, f in FIGURES.items() if f.direction is not None
}


@dataclass(frozen=True)
class CollapseRule:
    """When an embedding counts as collapsed: any one condition suffices.

    Chosen by measuring the packaged all-MiniLM-L6-v2 (demo set and SciFact, documents and
    queries): its worst values sit far inside every bound (see ``tests/test_health.py``).
    """

    max_dead_dims_share: float = 0.5  # at least half of the dimensions are dead
    min_effective_rank_ratio: float = 0.1  # effective rank below 10% of the attainable rank
    max_avg_cosine: float = 0.9  # every vector points nearly the same way


DEFAULT_COLLAPSE = CollapseRule()


# ----------------------------------------------------------------------------- input and sampling


def _check_matrix(vectors: np.ndarray, name: str = "vectors") -> np.ndarray:
    if not isinstance(vectors, np.ndarray):
        vectors = np.asarray(vectors)
    if vectors.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array [n, dim], got shape {vectors.shape}")
    if vectors.shape[1] < 1:
        raise ValueError(f"{name} has no dimensions")
    if not np.issubdtype(vectors.dtype, np.number) or np.issubdtype(
        vectors.dtype, np.complexfloating
    ):
        raise ValueError(f"{name} must hold real numbers, got dtype {vectors.dtype}")
    return vectors


def _finite(block: np.ndarray, name: str) -> np.ndarray:
    if not np.isfinite(block).all():
        raise ValueError(f"{name} contain non-finite values (NaN or infinity)")
    return block


def _rng(seed: int, stream: int) -> np.random.Generator:
    """Independent generators per use, so changing one sample size never moves another."""
    return np.random.default_rng(np.random.SeedSequence([seed, stream]))


def sample_rows(n: int, max_rows: int, seed: int) -> np.ndarray:
    """Sorted row indices behind the spectral figures: all rows, or ``max_rows`` drawn without
    replacement from a generator seeded by ``seed``."""
    if n <= max_rows:
        return np.arange(n, dtype=np.int64)
    return np.sort(_rng(seed, 0).choice(n, size=max_rows, replace=False)).astype(np.int64)


def sample_pairs(n: int, sample: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays (i, j), i ≠ j, of the pairs behind avg_cosine and uniformity.

    Every unordered pair once when there are at most ``sample`` of them; otherwise ``sample``
    ordered pairs drawn uniformly (with replacement) from a generator seeded by ``seed``.
    """
    if n < 2:
        raise ValueError(f"pairwise figures need at least 2 vectors, got {n}")
    if n * (n - 1) // 2 <= sample:
        i, j = np.triu_indices(n, k=1)
        return i.astype(np.int64), j.astype(np.int64)
    rng = _rng(seed, 1)
    i = rng.integers(0, n, size=sample, dtype=np.int64)
    j = (i + rng.integers(1, n, size=sample, dtype=np.int64)) % n  # uniform over j != i
    return i, j


def _chunks(n: int, size: int = _CHUNK) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def _unit(block: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, in float64; zero rows stay zero."""
    b = np.asarray(block, dtype=np.float64)
    norms = np.linalg.norm(b, axis=1, keepdims=True)
    return b / np.where(norms > 0, norms, 1.0)


# ----------------------------------------------------------------------------- spectral figures


@dataclass(frozen=True)
class Spectrum:
    """Second moments of a set of rows (float64), from which every spectral figure follows."""

    n_rows: int
    covariance_eigenvalues: np.ndarray  # descending, numerical zeros set to 0
    dim_variances: np.ndarray  # per-dimension variance (diagonal of the covariance)
    moment_eigenvectors: np.ndarray  # [dim, dim] eigenvectors of X^T X (uncentred), as columns
    zero_level: float  # variances at or below this are numerical zeros


def spectrum(rows: np.ndarray) -> Spectrum:
    """Covariance eigenvalues (unbiased, divided by n - 1), per-dimension variances and the
    eigenvectors of the uncentred second moment of ``rows`` [n, dim], in float64."""
    rows = _check_matrix(rows, "rows")
    n, d = rows.shape
    if n < 2:
        raise ValueError(f"spectral figures need at least 2 vectors, got {n}")
    # sums of y = x - shift, with shift the mean of the first chunk: near the mean, so that
    # removing the mean afterwards cancels little (identical rows give exactly zero)
    shift = _finite(np.asarray(rows[:_CHUNK], dtype=np.float64), "vectors").mean(axis=0)
    shifted = np.zeros((d, d))
    total = np.zeros(d)
    for s in _chunks(n):
        block = _finite(np.asarray(rows[s], dtype=np.float64), "vectors") - shift
        shifted += block.T @ block
        total += block.sum(axis=0)
    offset = total / n  # mean(x) - shift
    cov = (shifted - n * np.outer(offset, offset)) / (n - 1)
    cov = (cov + cov.T) / 2
    # X^T X = Y^T Y + s shift^T + shift s^T + n shift shift^T, with s the sum of the rows of Y
    cross = np.outer(total, shift)
    moment = shifted + cross + cross.T + n * np.outer(shift, shift)
    zero_level = NUMERICAL_ZERO * float(np.trace(moment)) / n
    eigenvalues = np.linalg.eigvalsh(cov)[::-1].copy()
    eigenvalues[eigenvalues <= zero_level] = 0.0
    variances = np.clip(np.diag(cov).copy(), 0.0, None)
    _, vectors = np.linalg.eigh((moment + moment.T) / 2)
    return Spectrum(n, eigenvalues, variances, vectors[:, ::-1].copy(), zero_level)


def effective_dim(eigenvalues: np.ndarray) -> float:
    """Participation ratio (Σλ)² / Σλ² of covariance eigenvalues: d for isotropic data, 1 for data
    along one line; 0 when there is no variance at all."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    square = float(np.sum(lam**2))
    return float(np.sum(lam) ** 2 / square) if square > 0 else 0.0


def top_variance_share(eigenvalues: np.ndarray, k: int = TOP_K_VARIANCE) -> float:
    """Share of the total variance along the ``k`` largest eigenvalues; 1 without variance."""
    lam = np.sort(np.asarray(eigenvalues, dtype=np.float64))[::-1]
    total = float(lam.sum())
    return float(lam[:k].sum() / total) if total > 0 else 1.0


def effective_rank(eigenvalues: np.ndarray) -> float:
    """exp of the Shannon entropy of the normalized singular values (Roy & Vetterli 2007).

    The singular values of the centred matrix are the square roots of the covariance eigenvalues
    up to one common factor, which the normalization removes. 0 without variance.
    """
    sigma = np.sqrt(np.clip(np.asarray(eigenvalues, dtype=np.float64), 0.0, None))
    total = float(sigma.sum())
    if total <= 0:
        return 0.0
    p = sigma[sigma > 0] / total
    return float(np.exp(-np.sum(p * np.log(p))))


def stable_rank(eigenvalues: np.ndarray) -> float:
    """||A||_F² / ||A||_2² of the centred matrix A = Σλ / max λ; 0 without variance."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    top = float(lam.max()) if lam.size else 0.0
    return float(lam.sum() / top) if top > 0 else 0.0


def dead_dims(
    variances: np.ndarray,
    relative: float = DEAD_DIM_RELATIVE_VARIANCE,
    zero_level: float = 0.0,
) -> int:
    """Dimensions whose variance is at most ``relative`` times the mean per-dimension variance
    (or at most ``zero_level``, the numerical zero); every dimension when there is no variance."""
    var = np.asarray(variances, dtype=np.float64)
    floor = max(relative * float(var.mean()), zero_level)
    return int(np.count_nonzero(var <= floor))


def partition_isotropy(rows: np.ndarray, directions: np.ndarray) -> float:
    """k · min_c Z(c) / Σ_c Z(c), with Z(c) = Σ_rows exp(c·x), over the k = 2·dim directions ±c.

    The partition function of Mu & Viswanath (2018, "All-but-the-top"), evaluated along the
    eigenvectors of X^T X (``directions``, columns) and their opposites: eigenvector signs are
    arbitrary, so taking both keeps the figure deterministic. 1 when every direction has the same
    Z (isotropic); small when some direction is nearly empty. Computed with log-sum-exp.
    """
    rows = _check_matrix(rows, "rows")
    c = np.asarray(directions, dtype=np.float64)
    k = c.shape[1]
    peak = np.full(2 * k, -np.inf)  # running log-sum-exp: max exponent and scaled sum
    acc = np.zeros(2 * k)
    for s in _chunks(rows.shape[0], 2048):
        half = np.asarray(rows[s], dtype=np.float64) @ c
        proj = np.empty((half.shape[0], 2 * k))
        proj[:, :k] = half
        np.negative(half, out=proj[:, k:])
        new_peak = np.maximum(peak, proj.max(axis=0))
        proj -= new_peak
        np.exp(proj, out=proj)
        acc = acc * np.exp(peak - new_peak) + proj.sum(axis=0)
        peak = new_peak
    log_z = peak + np.log(acc)
    # k · min / sum = exp(log k + log min - log sum), the sum taken as a log-sum-exp
    top = float(log_z.max())
    log_sum = top + float(np.log(np.sum(np.exp(log_z - top))))
    return float(np.exp(np.log(len(log_z)) + float(log_z.min()) - log_sum))


# ----------------------------------------------------------------------------- pairwise figures


def pair_geometry(
    vectors: np.ndarray, i: np.ndarray, j: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(cosine, squared distance of the normalized rows) of each pair (``i[p]``, ``j[p]``), in
    float64. A zero row stays at the origin: its cosine with anything is 0."""
    cos = np.empty(len(i))
    sq = np.empty(len(i))
    for s in _chunks(len(i)):
        a = _unit(_finite(np.asarray(vectors[i[s]]), "vectors"))
        b = _unit(_finite(np.asarray(vectors[j[s]]), "vectors"))
        cos[s] = np.einsum("ij,ij->i", a, b)
        sq[s] = np.einsum("ij,ij->i", a - b, a - b)
    return cos, sq


def avg_cosine(cosines: np.ndarray) -> float:
    """Mean of pairwise cosines."""
    return float(np.mean(cosines))


def uniformity(sq_distances: np.ndarray, t: float = UNIFORMITY_T) -> float:
    """log E[exp(-t ||x - y||²)] over pairs of normalized rows (Wang & Isola 2020).

    Lower is more uniform: about -2t for well spread vectors in many dimensions, 0 when every
    vector is the same.
    """
    a = -t * np.asarray(sq_distances, dtype=np.float64)
    top = float(a.max())
    return float(top + np.log(np.mean(np.exp(a - top))))


def alignment(
    vectors: np.ndarray,
    partner: np.ndarray,
    rows: np.ndarray,
    partner_rows: np.ndarray,
    alpha: float = ALIGNMENT_ALPHA,
) -> float:
    """E ||x - y||^alpha over positive pairs x = vectors[rows[p]], y = partner[partner_rows[p]],
    both L2-normalized (Wang & Isola 2020). Lower is better: 0 when each pair coincides."""
    total = 0.0
    for s in _chunks(len(rows)):
        a = _unit(_finite(np.asarray(vectors[rows[s]]), "vectors"))
        b = _unit(_finite(np.asarray(partner[partner_rows[s]]), "partner vectors"))
        total += float(np.sum(np.linalg.norm(a - b, axis=1) ** alpha))
    return total / len(rows)


def _check_positives(
    positives: tuple[np.ndarray, np.ndarray], n: int, partner: np.ndarray, dim: int
) -> tuple[np.ndarray, np.ndarray]:
    rows, partner_rows = (np.asarray(p) for p in positives)
    if rows.shape != partner_rows.shape or rows.ndim != 1:
        raise ValueError("positives must be two 1-D index arrays of the same length")
    if partner.shape[1] != dim:
        raise ValueError(f"partner vectors have dimension {partner.shape[1]}, vectors {dim}")
    for name, idx, size in (("rows", rows, n), ("partner rows", partner_rows, len(partner))):
        if idx.size and not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"positive {name} must be integer indices, got dtype {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= size):
            raise ValueError(f"positive {name} index out of range [0, {size})")
    return rows.astype(np.int64), partner_rows.astype(np.int64)


# ----------------------------------------------------------------------------- all of them


def collapse_reasons(health: Health, rule: CollapseRule = DEFAULT_COLLAPSE) -> list[str]:
    """Why ``health`` (the figures of ``embedding_health``) counts as collapsed; empty if not."""
    reasons = []
    dead_share = float(health["dead_dims_share"])
    if dead_share >= rule.max_dead_dims_share:
        reasons.append(
            f"{health['dead_dims']} of {health['dim']} dimensions are dead "
            f"({dead_share:.0%} >= {rule.max_dead_dims_share:.0%})"
        )
    rank_ratio = float(health["effective_rank_ratio"])
    if rank_ratio < rule.min_effective_rank_ratio:
        reasons.append(
            f"effective rank {float(health['effective_rank']):.2f} is "
            f"{rank_ratio:.1%} of the attainable rank (< {rule.min_effective_rank_ratio:.0%})"
        )
    cosine = float(health["avg_cosine"])
    if cosine >= rule.max_avg_cosine:
        reasons.append(f"mean pairwise cosine {cosine:.3f} >= {rule.max_avg_cosine}")
    return reasons


def embedding_health(
    vectors: np.ndarray,
    *,
    seed: int,
    sample: int = DEFAULT_SAMPLE,
    max_rows: int = DEFAULT_MAX_ROWS,
    positives: tuple[np.ndarray, np.ndarray] | None = None,
    partner: np.ndarray | None = None,
    collapse: CollapseRule = DEFAULT_COLLAPSE,
) -> Health:
    """Every health figure of ``vectors`` [n, dim] (n >= 2), keyed by the names in ``FIGURES``.

    ``positives`` = (rows into ``vectors``, rows into ``partner``) lists the positive pairs for
    alignment, e.g. (query index, relevant document index) with ``partner`` the document vectors;
    without them (or with none) ``alignment`` and ``n_positive_pairs`` are left out. Spectral
    figures use at most ``max_rows`` seeded rows, pairwise ones at most ``sample`` seeded pairs:
    the same inputs and seed give the same figures. Raises ValueError for malformed input or
    non-finite values in the rows it reads.
    """
    vectors = _check_matrix(vectors)
    n, d = vectors.shape
    if n < 2:
        raise ValueError(f"embedding health needs at least 2 vectors, got {n}")
    if sample < 1 or max_rows < 2:
        raise ValueError("sample must be >= 1 and max_rows >= 2")

    picked = sample_rows(n, max_rows, seed)
    rows = vectors if len(picked) == n else vectors[picked]
    spec = spectrum(rows)
    lam = spec.covariance_eigenvalues
    eff_dim = effective_dim(lam)
    eff_rank = effective_rank(lam)
    dead = dead_dims(spec.dim_variances, zero_level=spec.zero_level)
    i, j = sample_pairs(n, sample, seed)
    cos, sq = pair_geometry(vectors, i, j)
    health: Health = {
        "n_vectors": n,
        "dim": d,
        "rows_sampled": spec.n_rows,
        "pairs_sampled": len(i),
        "partition_isotropy": partition_isotropy(rows, spec.moment_eigenvectors),
        "effective_dim": eff_dim,
        "effective_dim_ratio": eff_dim / d,
        "top10_variance_share": top_variance_share(lam),
        "avg_cosine": avg_cosine(cos),
        "uniformity": uniformity(sq),
    }
    if positives is not None:
        if partner is None:
            raise ValueError("positives need the partner matrix their second indices point into")
        partner = _check_matrix(partner, "partner")
        p_rows, p_partner = _check_positives(positives, n, partner, d)
        if len(p_rows):
            health["alignment"] = alignment(vectors, partner, p_rows, p_partner)
            health["n_positive_pairs"] = len(p_rows)
    health |= {
        "dead_dims": dead,
        "dead_dims_share": dead / d,
        "effective_rank": eff_rank,
        "effective_rank_ratio": eff_rank / min(d, spec.n_rows - 1),
        "stable_rank": stable_rank(lam),
    }
    health["collapsed"] = bool(collapse_reasons(health, collapse))
    return health
