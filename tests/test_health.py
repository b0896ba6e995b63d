"""Intrinsic embedding health: each figure on hand-checkable matrices, the collapse rule on real
MiniLM vectors and on synthetic collapses, determinism, and cost independent of the row count."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from conftest import DEMO
from evalret.core.health import (
    DEFAULT_COLLAPSE,
    FIGURES,
    HEALTHIER,
    alignment,
    collapse_reasons,
    dead_dims,
    effective_dim,
    effective_rank,
    embedding_health,
    pair_geometry,
    partition_isotropy,
    sample_pairs,
    sample_rows,
    spectrum,
    stable_rank,
    top_variance_share,
    uniformity,
)
from helpers import marks_its_users

GATE_NAMES = (
    "avg_cosine",
    "effective_dim_ratio",
    "effective_dim",
    "partition_isotropy",
    "top10_variance_share",
    "uniformity",
    "alignment",
    "dead_dims",
    "effective_rank",
    "stable_rank",
    "collapsed",
)
SPECTRAL = (
    "partition_isotropy",
    "effective_dim",
    "effective_dim_ratio",
    "top10_variance_share",
    "dead_dims",
    "dead_dims_share",
    "effective_rank",
    "effective_rank_ratio",
    "stable_rank",
)


def gaussian(n: int, d: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d))


def fails_gate(health: dict, name: str, threshold: float) -> bool:
    """A one-sided threshold on a figure, in the direction HEALTHIER gives (what a gate does)."""
    value = float(health[name])
    return value < threshold if HEALTHIER[name] == "higher" else value > threshold


# ----------------------------------------------------------------------------- names and directions


def test_stable_names_have_a_direction_and_a_description() -> None:
    """Every name users gate on is in FIGURES with a direction; descriptive counts have none."""
    for name in GATE_NAMES:
        assert name in HEALTHIER, name
        assert FIGURES[name].description
    assert HEALTHIER["avg_cosine"] == "lower"
    assert HEALTHIER["effective_dim_ratio"] == "higher"
    assert HEALTHIER["collapsed"] == "lower"  # False (0) is healthy
    assert FIGURES["n_vectors"].direction is None


def test_embedding_health_returns_exactly_the_declared_figures() -> None:
    """The keys of a full result are the FIGURES names, in their order."""
    x = gaussian(50, 8)
    h = embedding_health(x, seed=0, positives=(np.array([0, 1]), np.array([1, 2])), partner=x)
    assert list(h) == list(FIGURES)
    without = embedding_health(x, seed=0)
    assert set(FIGURES) - set(without) == {"alignment", "n_positive_pairs"}


# ----------------------------------------------------------------------------- spectral figures


def test_eigenvalue_figures_by_hand() -> None:
    """Participation ratio, top-k share, effective rank and stable rank of small spectra."""
    assert effective_dim(np.array([1.0, 1, 1, 1])) == pytest.approx(4)
    assert effective_dim(np.array([2.0, 0, 0])) == pytest.approx(1)
    assert effective_dim(np.array([3.0, 1])) == pytest.approx(16 / 10)  # (3+1)² / (9+1)
    assert effective_dim(np.zeros(3)) == 0.0
    assert top_variance_share(np.array([5.0, 3, 2]), k=1) == pytest.approx(0.5)
    assert top_variance_share(np.array([2.0, 3, 5]), k=2) == pytest.approx(0.8)
    assert top_variance_share(np.array([5.0, 3, 2])) == pytest.approx(1.0)  # k=10 > 3 values
    assert top_variance_share(np.zeros(4)) == 1.0
    # singular values sqrt([4, 1]) = [2, 1]: p = [2/3, 1/3]
    entropy = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    assert effective_rank(np.array([4.0, 1])) == pytest.approx(math.exp(entropy))
    assert effective_rank(np.array([1.0, 1, 1, 1, 0])) == pytest.approx(4)
    assert effective_rank(np.zeros(3)) == 0.0
    assert stable_rank(np.array([4.0, 1])) == pytest.approx(1.25)  # (4 + 1) / 4
    assert stable_rank(np.zeros(2)) == 0.0


def test_dead_dims_by_hand() -> None:
    """A dimension is dead at or below 1% of the mean per-dimension variance."""
    # mean variance (1 + 1 + 1 + 0.001) / 4 = 0.75025; 1% of it = 0.0075
    assert dead_dims(np.array([1.0, 1, 1, 0.001])) == 1
    assert dead_dims(np.array([1.0, 1, 1, 0.01])) == 0
    assert dead_dims(np.array([1.0, 1, 1, 0.01]), relative=0.02) == 1
    assert dead_dims(np.zeros(5)) == 5


def test_spectrum_of_a_small_matrix() -> None:
    """Rows (±1, 0), (0, ±2): mean 0, covariance diag(2, 8) / 3 (divided by n - 1 = 3)."""
    x = np.array([[1.0, 0], [-1, 0], [0, 2], [0, -2]])
    spec = spectrum(x)
    assert spec.covariance_eigenvalues == pytest.approx([8 / 3, 2 / 3])
    assert spec.dim_variances == pytest.approx([2 / 3, 8 / 3])
    h = embedding_health(x, seed=0)
    assert h["effective_dim"] == pytest.approx(100 / 68)  # (10/3)² / ((64 + 4) / 9)
    assert h["stable_rank"] == pytest.approx(1.25)
    assert h["effective_rank_ratio"] == pytest.approx(h["effective_rank"] / 2)  # min(d, n-1) = 2


def test_partition_isotropy_matches_its_definition() -> None:
    """k · min Z / Σ Z over ±eigenvectors of X^T X, against a direct computation."""
    x = gaussian(40, 5, seed=3) * np.array([3, 1, 1, 0.5, 0.2]) + 0.3
    _, vecs = np.linalg.eigh(x.T @ x)
    dirs = np.concatenate([vecs, -vecs], axis=1)
    z = np.exp(x @ dirs).sum(axis=0)
    expected = len(z) * z.min() / z.sum()
    assert partition_isotropy(x, vecs) == pytest.approx(expected, rel=1e-12)
    # chunked log-sum-exp agrees on a matrix larger than one chunk, and with large norms
    big = gaussian(5000, 4, seed=4) * 40
    _, vecs = np.linalg.eigh(big.T @ big)
    proj = big @ np.concatenate([vecs, -vecs], axis=1)
    log_z = np.log(np.exp(proj - proj.max(axis=0)).sum(axis=0)) + proj.max(axis=0)
    expected = 1 / np.mean(np.exp(log_z - log_z.min()))
    assert partition_isotropy(big, vecs) == pytest.approx(expected, rel=1e-9)


def test_partition_isotropy_of_identical_unit_vectors() -> None:
    """Z is n·e along v, n/e along -v and n along the 2(d-1) orthogonal directions."""
    n, d = 20, 6
    x = np.tile(np.eye(d)[2], (n, 1))
    expected = 2 * d * (n / math.e) / (n * math.e + n / math.e + (2 * d - 2) * n)
    assert embedding_health(x, seed=0)["partition_isotropy"] == pytest.approx(expected)


def test_isotropic_gaussian_is_healthy() -> None:
    """Isotropic Gaussian: isotropy near 1, effective dim near d, mean cosine near 0."""
    n, d = 20_000, 16
    h = embedding_health(gaussian(n, d), seed=0)
    assert h["partition_isotropy"] > 0.95
    assert h["effective_dim"] == pytest.approx(d, rel=0.02)
    assert h["effective_dim_ratio"] == pytest.approx(1, rel=0.02)
    assert h["top10_variance_share"] == pytest.approx(10 / d, rel=0.02)
    assert abs(h["avg_cosine"]) < 0.01
    assert h["effective_rank"] == pytest.approx(d, rel=0.01)
    assert h["stable_rank"] > 0.85 * d
    assert h["dead_dims"] == 0
    assert h["collapsed"] is False
    # far from the origin (offset 1000, spread 0.01): the spread survives removing the mean
    far = embedding_health(1000 + 0.01 * gaussian(5000, d, seed=1), seed=0)
    assert far["effective_dim"] == pytest.approx(d, rel=0.05)
    assert far["dead_dims"] == 0


def test_rank_one_data_has_effective_dim_one_and_collapses() -> None:
    """Points on one line (any offset): effective dim, effective rank and stable rank are 1."""
    rng = np.random.default_rng(1)
    d = 32
    u, offset = rng.standard_normal(d), rng.standard_normal(d)
    x = rng.standard_normal(100)[:, None] * u + offset
    h = embedding_health(x, seed=0)
    assert h["effective_dim"] == pytest.approx(1)
    assert h["effective_rank"] == pytest.approx(1)
    assert h["stable_rank"] == pytest.approx(1)
    assert h["top10_variance_share"] == pytest.approx(1)
    assert h["effective_rank_ratio"] == pytest.approx(1 / 32)  # min(d = 32, n - 1 = 99)
    assert h["collapsed"] is True
    assert any("effective rank" in r for r in collapse_reasons(h))


def test_identical_vectors_are_collapsed_for_every_reason() -> None:
    """Identical vectors (with float32 rounding): cosine 1, uniformity 0, every dim dead."""
    x = np.tile(np.linspace(0.1, 0.7, 24, dtype=np.float32), (300, 1))
    h = embedding_health(x, seed=0)
    assert h["avg_cosine"] == pytest.approx(1)
    assert h["uniformity"] == pytest.approx(0, abs=1e-9)
    assert h["dead_dims"] == 24
    assert h["effective_dim"] == 0.0
    assert h["effective_rank"] == 0.0
    assert h["top10_variance_share"] == 1.0
    assert h["collapsed"] is True
    reasons = collapse_reasons(h)
    assert len(reasons) == 3, reasons
    assert reasons[0].startswith("24 of 24 dimensions are dead")


# ----------------------------------------------------------------------------- pairwise figures


def test_pairs_are_every_pair_when_few_and_seeded_samples_otherwise() -> None:
    """Up to `sample` pairs: each unordered pair once; beyond: `sample` seeded pairs, i != j."""
    i, j = sample_pairs(6, sample=15, seed=0)
    assert sorted(zip(i.tolist(), j.tolist(), strict=True)) == list(combinations(range(6), 2))
    i, j = sample_pairs(6, sample=14, seed=0)
    assert len(i) == 14 and np.all(i != j) and i.max() < 6 and j.max() < 6
    a = sample_pairs(1000, sample=500, seed=7)
    again = sample_pairs(1000, sample=500, seed=7)
    assert np.array_equal(a[0], again[0]) and np.array_equal(a[1], again[1])
    assert not np.array_equal(a[0], sample_pairs(1000, 500, seed=8)[0])
    # sampled: every ordered pair (i, j != i) equally likely. 4 rows have 6 unordered pairs, so
    # 5 at a time is sampled; 6,000 seeds give 30,000 draws, about 2,500 per ordered pair
    parts = [sample_pairs(4, sample=5, seed=s) for s in range(6_000)]
    counts = np.zeros((4, 4))
    np.add.at(
        counts, (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])), 1
    )
    assert np.all(np.diag(counts) == 0)
    off = counts[~np.eye(4, dtype=bool)]
    assert np.all(np.abs(off - 2500) < 250), off  # sd about 48


def test_cosine_and_uniformity_by_hand() -> None:
    """Rows e1, e2, -e1 (and 3·e1 normalizes to e1): cosines 0, -1, 0; distances² 2, 4, 2."""
    x = np.array([[3.0, 0], [0, 1], [-1, 0]])
    cos, sq = pair_geometry(x, *sample_pairs(3, 100, seed=0))
    assert cos.tolist() == pytest.approx([0, -1, 0])
    assert sq.tolist() == pytest.approx([2, 4, 2])
    h = embedding_health(x, seed=0)
    assert h["avg_cosine"] == pytest.approx(-1 / 3)
    # log mean exp(-2 · [2, 4, 2]) = log((2 e^-4 + e^-8) / 3)
    assert h["uniformity"] == pytest.approx(math.log((2 * math.exp(-4) + math.exp(-8)) / 3))
    assert uniformity(np.array([0.0, 0.0])) == 0.0


def test_uniformity_against_a_direct_computation() -> None:
    """All pairs of 30 random rows: log E exp(-2 ||x̂ - ŷ||²) computed directly."""
    x = gaussian(30, 7, seed=5)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    values = [
        math.exp(-2 * float(np.sum((unit[a] - unit[b]) ** 2)))
        for a, b in combinations(range(30), 2)
    ]
    h = embedding_health(x, seed=0)
    assert h["uniformity"] == pytest.approx(math.log(np.mean(values)), rel=1e-12)
    cosines = [float(unit[a] @ unit[b]) for a, b in combinations(range(30), 2)]
    assert h["avg_cosine"] == pytest.approx(np.mean(cosines), rel=1e-12)


def test_zero_rows_stay_at_the_origin() -> None:
    """A zero vector has cosine 0 with anything and squared distance 1 to a unit vector."""
    x = np.array([[0.0, 0], [2, 0], [0, 0]])
    cos, sq = pair_geometry(x, np.array([0, 0]), np.array([1, 2]))
    assert cos.tolist() == [0, 0]
    assert sq.tolist() == [1, 0]


def test_alignment_by_hand() -> None:
    """Pairs (e1, e1), (e2, 2·e2), (e1, 2·e2): normalized squared distances 0, 0, 2."""
    q = np.array([[1.0, 0], [0, 1]])
    docs = np.array([[1.0, 0], [0, 2]])
    rows, partner_rows = np.array([0, 1, 0]), np.array([0, 1, 1])
    assert alignment(q, docs, rows, partner_rows) == pytest.approx(2 / 3)
    assert alignment(q, docs, rows, partner_rows, alpha=1) == pytest.approx(math.sqrt(2) / 3)
    h = embedding_health(q, seed=0, positives=(rows, partner_rows), partner=docs)
    assert h["alignment"] == pytest.approx(2 / 3)
    assert h["n_positive_pairs"] == 3
    empty = np.array([], dtype=np.int64)
    assert "alignment" not in embedding_health(q, seed=0, positives=(empty, empty), partner=docs)


# ----------------------------------------------------------------------------- input, determinism


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"vectors": np.zeros(5)}, "2-D"),
        ({"vectors": np.zeros((1, 4))}, "at least 2 vectors"),
        ({"vectors": np.array([[1.0, np.nan], [0, 1]])}, "non-finite"),
        ({"vectors": np.eye(3), "positives": (np.array([0]), np.array([0]))}, "partner"),
        (
            {
                "vectors": np.eye(3),
                "positives": (np.array([0]), np.array([3])),
                "partner": np.eye(3),
            },
            "out of range",
        ),
        (
            {
                "vectors": np.eye(3),
                "positives": (np.array([0]), np.array([0])),
                "partner": np.eye(2),
            },
            "dimension",
        ),
        ({"vectors": np.eye(3), "sample": 0}, "sample"),
    ],
)
def test_malformed_input_is_refused(kwargs: dict, message: str) -> None:
    """Shape, size, non-finite values and bad positives raise ValueError saying what is wrong."""
    with pytest.raises(ValueError, match=message):
        embedding_health(seed=0, **kwargs)


def test_same_seed_same_figures_other_seed_other_samples() -> None:
    """Sampled rows and pairs follow the seed: identical figures for one seed, close for two."""
    x = (gaussian(3000, 12, seed=6) * np.linspace(0.2, 2, 12)).astype(np.float32)
    a = embedding_health(x, seed=11, sample=2000, max_rows=1000)
    assert a == embedding_health(x, seed=11, sample=2000, max_rows=1000)
    b = embedding_health(x, seed=12, sample=2000, max_rows=1000)
    assert a["avg_cosine"] != b["avg_cosine"] and a["effective_dim"] != b["effective_dim"]
    assert b["effective_dim"] == pytest.approx(a["effective_dim"], rel=0.05)
    assert b["uniformity"] == pytest.approx(a["uniformity"], rel=0.05)


def test_cost_does_not_grow_with_rows() -> None:
    """On a virtual 1M x 384 matrix (rows are overlapping windows of one 4 MB buffer, so nothing
    of size 1M x 384 exists), the figures read only `max_rows` rows and `sample` pairs: the
    spectral ones equal those of the explicit row sample, so the cost is O(max_rows · d² +
    sample · d) whatever the row count."""
    n, d = 1_000_000, 384
    base = np.random.default_rng(0).standard_normal(n + d).astype(np.float32)
    x = as_strided(base, shape=(n, d), strides=(4, 4), writeable=False)
    h = embedding_health(x, seed=3, sample=4000, max_rows=2000)
    assert (h["n_vectors"], h["rows_sampled"], h["pairs_sampled"]) == (n, 2000, 4000)
    picked = sample_rows(n, 2000, seed=3)
    assert len(picked) == 2000 and np.all(np.diff(picked) > 0)
    on_sample = embedding_health(np.ascontiguousarray(x[picked]), seed=3, max_rows=2000)
    for name in SPECTRAL:
        assert h[name] == on_sample[name], name
    i, j = sample_pairs(n, 4000, seed=3)
    cos, _ = pair_geometry(x, i, j)
    assert h["avg_cosine"] == pytest.approx(float(cos.mean()), rel=1e-12)


# ----------------------------------------------------------------------------- real MiniLM vectors


@pytest.fixture(scope="module")
@marks_its_users("model")
def minilm() -> dict[str, np.ndarray]:
    """The demo golden set embedded with the packaged all-MiniLM-L6-v2 (through the session's
    embedding cache), with the (query, relevant document) pairs."""
    from evalret.data.config import GoldenSetConfig
    from evalret.data.config import SentenceTransformersModelConfig as ModelConfig
    from evalret.data.goldenset import load_golden_set
    from evalret.engines.cache import CachedEmbedder, default_cache_dir
    from evalret.engines.st_embedder import SentenceTransformerEmbedder

    gs = load_golden_set(GoldenSetConfig(path=DEMO))
    embedder = CachedEmbedder(SentenceTransformerEmbedder(ModelConfig()), default_cache_dir())
    qi, di, grade = gs.qrel_arrays()
    return {
        "documents": embedder.embed(gs.doc_texts, "document"),
        "queries": embedder.embed(gs.query_texts, "query"),
        "qi": qi[grade >= 1],
        "di": di[grade >= 1],
    }


@pytest.fixture(scope="module")
def minilm_health(minilm: dict[str, np.ndarray]) -> dict[str, dict]:
    """Health of the MiniLM documents and queries, alignment over the judged-relevant pairs."""
    docs, queries = minilm["documents"], minilm["queries"]
    return {
        "documents": embedding_health(
            docs, seed=0, positives=(minilm["di"], minilm["qi"]), partner=queries
        ),
        "queries": embedding_health(
            queries, seed=0, positives=(minilm["qi"], minilm["di"]), partner=docs
        ),
    }


@pytest.mark.parametrize("kind", ["documents", "queries"])
def test_minilm_is_healthy_with_margin(minilm_health: dict[str, dict], kind: str) -> None:
    """Real MiniLM vectors trip no collapse condition, and sit far inside each bound.

    Measured on the demo set (documents / queries): dead dims 3 / 3 (all-MiniLM-L6-v2 has three
    constant dimensions), effective rank ratio 0.59 / 0.72, mean cosine 0.19 / 0.09.
    """
    h = minilm_health[kind]
    assert h["collapsed"] is False
    assert collapse_reasons(h) == []
    assert h["dead_dims_share"] < DEFAULT_COLLAPSE.max_dead_dims_share / 10
    assert h["effective_rank_ratio"] > 3 * DEFAULT_COLLAPSE.min_effective_rank_ratio
    assert h["avg_cosine"] < DEFAULT_COLLAPSE.max_avg_cosine / 3
    assert 0.05 < h["effective_dim_ratio"] < 0.5
    assert 0.3 < h["partition_isotropy"] < 1
    assert -4 < h["uniformity"] < -2


def test_minilm_alignment_beats_random_pairs(
    minilm: dict[str, np.ndarray], minilm_health: dict[str, dict]
) -> None:
    """Queries sit closer to their relevant documents than to shuffled ones; alignment is the
    same figure from either side."""
    h = minilm_health["queries"]
    assert h["alignment"] == pytest.approx(minilm_health["documents"]["alignment"])
    shuffled = np.random.default_rng(0).permutation(minilm["di"])
    random_pairs = alignment(minilm["queries"], minilm["documents"], minilm["qi"], shuffled)
    assert h["alignment"] < random_pairs - 0.2


def _collapses(docs: np.ndarray) -> dict[str, tuple[np.ndarray, str]]:
    """Synthetic collapses of real vectors, each with the reason it must trip."""
    x = docs.astype(np.float64)
    centred = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    top = vt[:5]
    dimensional = x.mean(axis=0) + (centred @ top.T) @ top  # only 5 directions vary
    cone = x + 4 * np.random.default_rng(0).standard_normal(x.shape[1]) / math.sqrt(x.shape[1])
    dead = x.copy()
    dead[:, 96:] = 0.0  # three quarters of the dimensions carry nothing
    identical = np.tile(x[0], (len(x), 1))
    return {
        "dimensional": (dimensional, "effective rank"),
        "cone": (cone, "mean pairwise cosine"),
        "dead": (dead, "dimensions are dead"),
        "identical": (identical, "mean pairwise cosine"),
    }


def test_synthetic_collapses_trip_the_flag_and_a_gate(
    minilm: dict[str, np.ndarray], minilm_health: dict[str, dict]
) -> None:
    """Each synthetic collapse of the MiniLM documents sets `collapsed` with its reason and fails
    a gate threshold the healthy vectors pass."""
    healthy = minilm_health["documents"]
    gates = {
        "dimensional": ("effective_dim_ratio", 0.05),
        "cone": ("avg_cosine", 0.3),
        "dead": ("dead_dims_share", 0.25),
        "identical": ("avg_cosine", 0.3),
    }
    for name, (vectors, reason) in _collapses(minilm["documents"]).items():
        h = embedding_health(vectors.astype(np.float32), seed=0)
        assert h["collapsed"] is True, name
        assert any(reason in r for r in collapse_reasons(h)), (name, collapse_reasons(h))
        figure, threshold = gates[name]
        assert fails_gate(h, figure, threshold), (name, h[figure])
        assert not fails_gate(healthy, figure, threshold), (name, healthy[figure])
        assert fails_gate(h, "collapsed", 0) and not fails_gate(healthy, "collapsed", 0)
