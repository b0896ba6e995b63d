"""`evalret golden doctor`: can the config's golden set catch a regression, and is it still the
traffic we serve? One evaluation of the set, then four diagnoses (their statistics and levels are
``evalret.core.coverage``'s):

* **headroom**: per slice, the share of queries already perfect for the config's model (exact
  search over the run's vectors: nDCG@10 = 1 and recall@k = 1, k the config's largest recall
  cutoff, else 10);
* **discrimination**: a zoo of reference systems scored on the set: ``model`` (the config's
  model, exact search), ``quarter`` (the same vectors cut to a quarter of their dimension and
  renormalised: what a model truncated at encode time returns, nothing embedded anew), ``bm25``
  (the config's ``indexes.bm25`` settings) and ``random`` (a seeded random ranking). For every
  pair: mean nDCG@10 of each, the paired difference with its bootstrap interval and randomization
  p-value (`evalret compare`'s statistics, Holm-corrected over the pairs), the minimum detectable
  effect and the queries the observed difference would need. A set that cannot separate ``bm25``
  from ``model``, or ``model`` from ``quarter``, is too weak;
* **edge cases**: the shape tags of ``core.query_shapes`` (rare terms against the set's corpus)
  counted against a target, and the ``origin:`` tags when present;
* **traffic** (with a log): a seeded sample of the log's distinct queries (a query in which
  ``core.pii.find_pii`` finds personal data is dropped before anything else, counted, never
  shown), embedded with the config's model through the embedding cache; coverage at
  ``gate.coverage.similarity``, the seeded k-means clusters of the sample that the set does not
  cover (each with its size, share and the three queries nearest its centre), and the energy
  test between the logged and the golden query embeddings.

The result is one JSON document (``DOCTOR_FORMAT``): doctor.json, `--json`, and what the views
draw. Below ``gate.coverage.min`` the verdict is "fail" (exit 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.comparison import corrected, paired_statistics
from evalret.core.coverage import (
    NO_GAIN_SHARE,
    NO_LOSS_SHARE,
    SHAPE_MAX_TARGET,
    SHAPE_SHARE,
    cluster_count,
    cluster_coverage,
    covered,
    energy_test,
    headroom,
    nearest_similarity,
    perfect,
    queries_needed,
    shape_target,
    tag_counts,
    unit_rows,
)
from evalret.core.metrics import Metric, build_judgments, compute
from evalret.core.query_shapes import SHAPES, shape_tags
from evalret.core.ranking import SearchResult, id_rank, judgeable_ids
from evalret.core.stats import minimum_detectable_effect, seed_for
from evalret.data.config import Config
from evalret.data.goldenset import GoldenSet
from evalret.data.querylog import LogFormat
from evalret.errors import ConfigError, InputError
from evalret.pipeline.progress import ProgressFactory
from evalret.version import __version__

DOCTOR_FORMAT = "evalret-doctor/1"
ZOO = ("model", "quarter", "bm25", "random")
WEAK_PAIRS = (("model", "bm25"), ("model", "quarter"))  # not separated: the set is too weak
ALPHA = 0.05
POWER = 0.8
SAMPLES = 10_000  # randomization test
BOOTSTRAP_SAMPLES = 2_000
CONFIDENCE = 0.95
PERMUTATIONS = 999  # the energy test's
DEFAULT_LOG_SAMPLE = 1_000
DEFAULT_SIMILARITY = 0.5  # gate.coverage.similarity's default (data/config/gate.py)
EXAMPLES = 3  # example queries shown per uncovered cluster
NDCG = Metric("ndcg", 10)
NEEDS_MODEL = (
    "evalret golden doctor needs the config's model: enable a dense index (indexes.exact) so "
    "that the golden set is embedded"
)


@dataclass(frozen=True)
class DoctorSettings:
    """What `evalret golden doctor` is asked beyond the config."""

    log: Path | None = None
    log_sample: int = DEFAULT_LOG_SAMPLE
    seed: int = 0
    log_format: LogFormat = field(default_factory=LogFormat)  # how --log is read


@dataclass(frozen=True)
class DoctorResult:
    """The doctor's findings as the JSON document doctor.json holds, and its verdict."""

    data: dict[str, Any]

    @property
    def failed(self) -> bool:
        return bool(self.data["verdict"]["status"] == "fail")


def recall_metric(cfg: Config) -> Metric:
    """recall@k for headroom: the config's largest recall cutoff, else recall@10."""
    ks = [
        m.k for m in cfg.metric_specs if m.family == "recall" and m.k is not None and not m.judged
    ]
    return Metric("recall", max(ks) if ks else 10)


# --- the zoo ----------------------------------------------------------------------------------


def _random_ranking(n_queries: int, n_docs: int, depth: int, seed: int, g: GoldenSet) -> Any:
    rng = np.random.default_rng(seed_for(seed, "random"))
    scores = rng.random((n_queries, n_docs))
    eligible = g.eligibility()
    if eligible is not None:
        for qi in range(n_queries):
            mask = eligible.mask(qi)
            if mask is not None:
                scores[qi, ~mask] = -np.inf
    ids = np.argsort(-scores, axis=1, kind="stable")[:, :depth].astype(np.int64)
    top = np.take_along_axis(scores, ids, axis=1)
    ids[~np.isfinite(top)] = -1
    return SearchResult(ids=ids, scores=np.where(ids >= 0, top, -np.inf))


def zoo_rankings(
    cfg: Config, g: GoldenSet, docs: np.ndarray, queries: np.ndarray, depth: int, seed: int
) -> dict[str, SearchResult]:
    """The reference systems' rankings, ``depth`` deep (see the module)."""
    from evalret.engines.filtered import filtered_exact
    from evalret.engines.lexical import bm25_search

    rank = id_rank(g.doc_ids)
    eligible = g.eligibility()
    quarter = max(1, docs.shape[1] // 4)

    def cut(x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(unit_rows(x[:, :quarter]), dtype=np.float32)

    d32 = np.ascontiguousarray(docs, dtype=np.float32)
    q32 = np.ascontiguousarray(queries, dtype=np.float32)
    return {
        "model": filtered_exact(d32, q32, depth, rank, eligible),
        "quarter": filtered_exact(cut(docs), cut(queries), depth, rank, eligible),
        "bm25": bm25_search(
            g.doc_texts, g.query_texts, cfg.indexes.bm25, depth, rank, eligible=eligible
        ),
        "random": _random_ranking(len(g.query_ids), len(g.doc_ids), depth, seed, g),
    }


def zoo_scores(
    cfg: Config, g: GoldenSet, rankings: dict[str, SearchResult], metrics: list[Metric]
) -> dict[str, dict[str, np.ndarray]]:
    """Per system, per metric, the per-query values over the set's evaluated queries."""
    qrels = g.qrel_arrays()
    n_docs = len(g.doc_ids)
    out = {}
    for name, ranking in rankings.items():
        judgments = build_judgments(
            judgeable_ids(ranking.ids, n_docs),
            *qrels,
            n_docs=n_docs,
            relevance_level=cfg.relevance_level,
        )
        out[name] = compute(metrics, judgments, cfg.ndcg_gain)
    return out


# --- the sections ---------------------------------------------------------------------------


def headroom_section(
    masks: dict[str, np.ndarray], ndcg: np.ndarray, recall: np.ndarray, recall_name: str
) -> dict[str, Any]:
    is_perfect = perfect(ndcg, recall)
    rows = [headroom(name, is_perfect, mask) for name, mask in masks.items()]
    return {
        "system": "model",
        "perfect": f"ndcg@10 = 1 and {recall_name} = 1",
        "no_gain_share": NO_GAIN_SHARE,
        "no_loss_share": NO_LOSS_SHARE,
        "slices": [
            {
                "slice": h.slice,
                "n_queries": h.n_queries,
                "n_perfect": h.n_perfect,
                "share_perfect": round(h.share_perfect, 4),
                "can_show_gain": h.can_show_gain,
                "can_show_loss": h.can_show_loss,
            }
            for h in rows
        ],
    }


def discrimination_section(ndcg: dict[str, np.ndarray], seed: int) -> dict[str, Any]:
    pairs = [(a, b) for i, a in enumerate(ZOO) for b in ZOO[i + 1 :]]
    tested = [
        paired_statistics(
            ndcg[a][:, None],
            ndcg[b][:, None],
            SAMPLES,
            BOOTSTRAP_SAMPLES,
            CONFIDENCE,
            seed_for(seed, "zoo", a, b),
            ALPHA,
            POWER,
        )[0]
        for a, b in pairs
    ]
    changes = corrected(tested, "holm", ALPHA)
    rows = []
    for (a, b), t, c in zip(pairs, tested, changes, strict=True):
        d = ndcg[b] - ndcg[a]
        sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
        rows.append(
            {
                "a": a,
                "b": b,
                "mean_a": round(t.a, 4),
                "mean_b": round(t.b, 4),
                "delta": round(t.delta, 4),
                "ci_low": round(t.ci_low, 4),
                "ci_high": round(t.ci_high, 4),
                "p_value": t.p_randomization,
                "p_adjusted": c.p_randomization_adjusted,
                "separated": c.significant,
                "sd_diff": round(sd, 4),
                "mde": round(minimum_detectable_effect(sd, len(d), ALPHA, POWER, True), 4)
                if len(d) >= 2
                else None,
                "queries_needed": queries_needed(sd, t.delta, ALPHA, POWER),
            }
        )
    weak = [r for r in rows if (r["a"], r["b"]) in WEAK_PAIRS and not r["separated"]]
    return {
        "metric": str(NDCG),
        "systems": {name: round(float(ndcg[name].mean()), 4) for name in ZOO},
        "test": "paired randomization (sign flip), Holm-corrected over the pairs",
        "alpha": ALPHA,
        "power": POWER,
        "samples": SAMPLES,
        "n_queries": len(ndcg["model"]),
        "pairs": rows,
        "too_weak": bool(weak),
        "not_separated": [f"{r['a']} vs {r['b']}" for r in weak],
    }


def shapes_section(g: GoldenSet) -> dict[str, Any]:
    n = len(g.query_ids)
    counts = tag_counts(shape_tags(g.query_texts, g.doc_texts), "shape:")
    target = shape_target(n)
    origins = tag_counts([g.tags.get(q, ()) for q in g.query_ids], "origin:")
    return {
        "n_queries": n,
        "target": target,
        "target_rule": f"{SHAPE_SHARE:.0%} of the queries, at most {SHAPE_MAX_TARGET}",
        "shapes": [
            {"shape": s, "n_queries": counts.get(s, 0), "met": counts.get(s, 0) >= target}
            for s in SHAPES
        ],
        "origins": origins,
    }


# --- the log --------------------------------------------------------------------------------


def _log_texts(
    path: Path, fmt: LogFormat, size: int, seed: int
) -> tuple[dict[str, Any], list[str], list[int]]:
    """The log's counts, and a seeded sample of its distinct queries without personal data
    (texts, traffic counts)."""
    from evalret.core.pii import find_pii
    from evalret.data.querylog import read_log

    log = read_log(path, fmt)
    counts: dict[str, int] = {}
    with_pii = 0
    for entry in log.entries:
        if find_pii(entry.text):
            with_pii += 1
            continue
        text = entry.text.strip()
        if text:
            counts[text] = counts.get(text, 0) + entry.count
    texts = list(counts)
    rng = np.random.default_rng(seed_for(seed, "log-sample"))
    drawn = sorted(rng.choice(len(texts), size=min(size, len(texts)), replace=False).tolist())
    sample = [texts[i] for i in drawn]
    info = {
        "path": str(path),
        "sha256": log.sha256,
        "n_entries": len(log.entries),
        "n_with_personal_data": with_pii,
        "n_distinct": len(texts),
        "n_sampled": len(sample),
    }
    return info, sample, [counts[t] for t in sample]


@dataclass(frozen=True)
class LogSample:
    """What the doctor took from a log: its counts, the sampled texts and their traffic."""

    info: dict[str, Any]
    texts: list[str]
    weights: list[int]


def read_log_sample(settings: DoctorSettings) -> LogSample:
    """The log's seeded sample (read before anything is evaluated: a bad log fails fast)."""
    assert settings.log is not None
    info, texts, weights = _log_texts(
        settings.log, settings.log_format, settings.log_sample, settings.seed
    )
    if not texts:
        raise InputError(f"{settings.log}: no query left to sample (empty, or all personal data)")
    return LogSample(info, texts, weights)


def traffic_section(
    cfg: Config,
    sample: LogSample,
    seed: int,
    golden_vectors: np.ndarray,
    progress: ProgressFactory | None,
) -> dict[str, Any]:
    from evalret.engines.embedders import open_embedder
    from evalret.engines.kmeans import kmeans

    similarity = (
        cfg.gate.coverage.similarity if cfg.gate.coverage is not None else DEFAULT_SIMILARITY
    )
    info, texts, weights = sample.info, sample.texts, sample.weights
    embedder = open_embedder(cfg.model, cfg.cache).embedder
    tick = progress("Embedding logged queries", len(texts)) if progress else None
    vectors = unit_rows(embedder.embed(texts, "query", tick))
    golden = unit_rows(golden_vectors)
    nearest, _ = nearest_similarity(vectors, golden)
    is_covered = covered(nearest, similarity)
    w = np.asarray(weights, dtype=np.float64)
    clusters = kmeans(vectors, cluster_count(len(texts)), seed)
    uncovered = []
    for c in cluster_coverage(clusters.assignment, is_covered):
        if not c.uncovered:
            continue
        centre = unit_rows(clusters.centroids[c.cluster : c.cluster + 1])[0]
        closest = c.rows[np.argsort(-(vectors[c.rows] @ centre), kind="stable")[:EXAMPLES]]
        uncovered.append(
            {
                "cluster": c.cluster,
                "size": c.size,
                "share": round(c.size / len(texts), 4),
                "n_covered": c.n_covered,
                "examples": [texts[i] for i in closest.tolist()],
            }
        )
    test = energy_test(vectors, golden, PERMUTATIONS, seed)
    gate = cfg.gate.coverage
    return {
        "log": info,
        "similarity": similarity,
        "coverage": round(float(is_covered.mean()), 4),
        "coverage_by_traffic": round(float(w[is_covered].sum() / w.sum()), 4),
        "min": gate.min if gate is not None else None,
        "nearest_similarity": [round(float(v), 4) for v in nearest],
        "clusters": {"k": clusters.k, "seed": seed, "uncovered": uncovered},
        "drift": {
            "test": "energy distance, permutation p-value",
            "statistic": round(test.statistic, 6),
            "p_value": test.p_value,
            "permutations": test.permutations,
            "n_log": test.n_x,
            "n_golden": test.n_y,
        },
    }


def verdict(traffic: dict[str, Any] | None) -> dict[str, Any]:
    """fail below gate.coverage.min; pass at or above it; "not gated" otherwise."""
    if traffic is None:
        return {"status": "not gated", "reason": "no --log: coverage not measured"}
    low, got = traffic["min"], traffic["coverage"]
    if low is None:
        return {"status": "not gated", "reason": f"coverage {got:.4f}; gate.coverage.min not set"}
    if got < low:
        return {"status": "fail", "reason": f"coverage {got:.4f} below gate.coverage.min {low}"}
    return {"status": "pass", "reason": f"coverage {got:.4f} at or above gate.coverage.min {low}"}


# --- the run ---------------------------------------------------------------------------------


def run_doctor(
    cfg: Config, settings: DoctorSettings, progress: ProgressFactory | None = None
) -> DoctorResult:
    """Evaluate the config's golden set once and diagnose it (see the module)."""
    from evalret.engines.retrievers import make_retrievers
    from evalret.pipeline.evaluate import run_evaluation
    from evalret.pipeline.plan import needs_vectors

    if settings.log_sample < 1:
        raise InputError(f"--log-sample {settings.log_sample}: at least 1")
    if not needs_vectors(make_retrievers(cfg)):
        raise ConfigError(NEEDS_MODEL)
    sample = read_log_sample(settings) if settings.log is not None else None
    evaluation = run_evaluation(cfg, progress=progress)
    g = evaluation.golden_set
    docs, queries = evaluation.doc_vectors, evaluation.query_vectors
    if docs is None or queries is None or docs.shape[1] == 0:
        raise ConfigError(NEEDS_MODEL)
    recall = recall_metric(cfg)
    depth = min(max(10, recall.k or 10), len(g.doc_ids))
    rankings = zoo_rankings(cfg, g, docs, queries, depth, settings.seed)
    scores = zoo_scores(cfg, g, rankings, [NDCG, recall])
    masks = {s.name: s.mask for s in evaluation.slices}
    ndcg = {name: scores[name][str(NDCG)] for name in ZOO}
    traffic = None
    if sample is not None:
        traffic = traffic_section(cfg, sample, settings.seed, queries, progress)
    data = {
        "format": DOCTOR_FORMAT,
        "evalret_version": __version__,
        "golden_set": g.source,
        "model": cfg.model.name,
        "dimension": int(docs.shape[1]),
        "quarter_dimension": max(1, int(docs.shape[1]) // 4),
        "seed": settings.seed,
        "n_queries": len(g.query_ids),
        "n_documents": len(g.doc_ids),
        "headroom": headroom_section(
            masks, ndcg["model"], scores["model"][str(recall)], str(recall)
        ),
        "discrimination": discrimination_section(ndcg, settings.seed),
        "edge_cases": shapes_section(g),
        "traffic": traffic,
        "verdict": verdict(traffic),
    }
    return DoctorResult(data)
