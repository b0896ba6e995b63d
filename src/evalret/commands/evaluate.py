"""Orchestration: config -> golden set -> embeddings -> indexes -> per-query metrics -> report.

Everything heavy (model, faiss) happens here or below; the CLI only renders what comes back.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalret.core.curves import metric_curves
from evalret.core.metrics import (
    Metric,
    RankedJudgments,
    build_judgments,
    compute,
    parse_metrics,
)
from evalret.core.slices import Slice, reliability
from evalret.core.stats import bootstrap_ci, seed_for
from evalret.data.baseline import check_compatible, check_gate_slices, run_gate
from evalret.data.config import Config
from evalret.data.goldenset import GoldenSet, load_golden_set
from evalret.data.schema import (
    TOP_KEPT,
    AnnSection,
    AnnSlice,
    Fingerprint,
    GoldenSetInfo,
    IndexResult,
    IntrinsicSection,
    LexicalSection,
    LexicalSlice,
    MetricCurves,
    MetricValue,
    ReaderWarning,
    RunReport,
    SliceInfo,
    SliceResult,
)
from evalret.engines.backends import backend_check, describe_backend, make_embedder
from evalret.engines.cache import CachedEmbedder, default_cache_dir
from evalret.engines.embed import Embedder
from evalret.engines.faiss_index import SearchResult, build_exact, cached_hnsw, id_rank, search
from evalret.engines.lexical import bm25_search, rrf_fuse
from evalret.version import __version__

TIE_RULE = "score descending, then document id descending (trec_eval)"
# how queries without a relevant document count, as written in the fingerprint (the exclude
# wording predates the setting: baselines written before it stay comparable)
WITHOUT_RELEVANT = {"exclude": "excluded from means", "zero": "scored like trec_eval (0 if binary)"}
ProgressFactory = Callable[[str, int], Callable[[int], None]]


@dataclass(frozen=True)
class Evaluation:
    """A finished run: the report plus what the report files are written from."""

    report: RunReport
    golden_set: GoldenSet  # restricted to the evaluated queries
    rankings: dict[str, SearchResult]
    slices: list[Slice]
    baseline: RunReport | None = None  # the report gated against, when there was one


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


class _Timer:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.timings[name] = round(time.perf_counter() - start, 4)


def metric_definitions(config: Config) -> dict[str, Any]:
    """Everything that decides what a metric value means; part of the fingerprint."""
    return {
        "names": [str(m) for m in parse_metrics(config.metrics)],
        "ndcg_gain": config.ndcg_gain,
        "relevance_level": config.relevance_level,
        "tie_rule": TIE_RULE,
        "queries_without_relevant": WITHOUT_RELEVANT[config.queries_without_relevant],
    }


def queries_to_evaluate(full: GoldenSet, config: Config) -> GoldenSet:
    """The queries a run scores under ``queries_without_relevant``; GoldenSetError when none is left
    (a run would gate nothing)."""
    return full.scored(config.queries_without_relevant)


def reader_warnings(golden: GoldenSet) -> list[ReaderWarning]:
    return [
        ReaderWarning(code=p.code, file=p.file, line=p.line, message=p.message)
        for p in golden.warnings
    ]


def _no_progress(_: str, __: int) -> Callable[[int], None]:
    return lambda _n: None


def judged_at(judgments: RankedJudgments, cutoffs: list[int]) -> dict[str, np.ndarray]:
    """Per query, the share of the top k ranks holding a judged document (any grade), k for
    every cutoff: unjudged documents count as misses in every metric, so a low judged@k warns
    that the scores understate the ranking."""
    judged = judgments.judged.cumsum(axis=1)
    return {f"judged@{k}": judged[:, min(k, judged.shape[1]) - 1] / k for k in cutoffs}


def _summarize(
    per_query: dict[str, np.ndarray],
    judged: dict[str, np.ndarray],
    slices: list[Slice],
    config: Config,
) -> dict[str, SliceResult]:
    """Mean and bootstrap interval of every metric in every slice; mean judged@k."""
    names = list(per_query)
    matrix = np.column_stack([per_query[m] for m in names]) if names else np.zeros((0, 0))
    out = {}
    for s in slices:
        values = matrix[s.mask]
        b = config.bootstrap
        low, high = bootstrap_ci(values, b.samples, b.confidence, seed_for(b.seed, s.name))
        means = values.mean(axis=0) if len(values) else np.full(len(names), np.nan)
        out[s.name] = SliceResult(
            n_queries=s.n_queries,
            reliability=reliability(s.n_queries),
            judged={k: float(v[s.mask].mean()) if s.n_queries else None for k, v in judged.items()},
            metrics={
                m: MetricValue(
                    **{
                        k: (None if np.isnan(v) else float(v))
                        for k, v in (("value", means[i]), ("ci_low", low[i]), ("ci_high", high[i]))
                    }
                )
                for i, m in enumerate(names)
            },
        )
    return out


def topk_overlap(approx: np.ndarray, exact: np.ndarray, k: int) -> np.ndarray:
    """Per query |approx top-k ∩ exact top-k| / |exact top-k| (ANN recall@k against exact)."""
    a, e = approx[:, :k], exact[:, :k]
    # one key space for all rows: document index + row * width; -1 (nothing retrieved) never counts
    width = max(int(a.max(initial=0)), int(e.max(initial=0))) + 1
    offset = np.arange(len(e), dtype=np.int64)[:, None] * width
    hits = np.isin(a + offset, np.where(e >= 0, e + offset, -1)) & (a >= 0)
    denom = (e >= 0).sum(axis=1)
    out = np.zeros(len(e))
    np.divide(hits.sum(axis=1), denom, out=out, where=denom > 0)
    return out


def _ann_section(
    rankings: dict[str, SearchResult],
    per_query: dict[str, dict[str, np.ndarray]],
    metrics: list[Metric],
    slices: list[Slice],
) -> AnnSection | None:
    if not {"exact", "hnsw"} <= rankings.keys():
        return None
    cutoffs = sorted({m.k for m in metrics})
    recall = {
        f"recall@{k}": topk_overlap(rankings["hnsw"].ids, rankings["exact"].ids, k) for k in cutoffs
    }
    deltas = {m: per_query["hnsw"][m] - per_query["exact"][m] for m in per_query["exact"]}

    def mean(v: np.ndarray, mask: np.ndarray) -> float | None:
        return float(v[mask].mean()) if mask.any() else None

    return AnnSection(
        index="hnsw",
        reference="exact",
        slices={
            s.name: AnnSlice(
                n_queries=s.n_queries,
                recall={k: mean(v, s.mask) for k, v in recall.items()},
                metric_deltas={k: mean(v, s.mask) for k, v in deltas.items()},
            )
            for s in slices
        },
    )


def _intrinsic_section(
    doc_vectors: np.ndarray,
    query_vectors: np.ndarray,
    qrels: tuple[np.ndarray, np.ndarray, np.ndarray],
    config: Config,
) -> IntrinsicSection | None:
    """Health figures of the document and query vectors (None for fewer than 2 documents);
    alignment over (query, relevant document) pairs."""
    from evalret.core.health import collapse_reasons, embedding_health

    h = config.health
    seed = config.bootstrap.seed
    if len(doc_vectors) < 2:
        return None
    documents = embedding_health(doc_vectors, seed=seed, sample=h.sample, max_rows=h.max_rows)
    queries = None
    if len(query_vectors) >= 2:
        q, d, grade = qrels
        relevant = grade >= config.relevance_level
        queries = embedding_health(
            query_vectors,
            seed=seed,
            sample=h.sample,
            max_rows=h.max_rows,
            positives=(q[relevant], d[relevant]),
            partner=doc_vectors,
        )
    reasons = {"documents": collapse_reasons(documents)}
    if queries is not None:
        reasons["queries"] = collapse_reasons(queries)
    return IntrinsicSection(
        documents=documents,
        queries=queries,
        collapse_reasons=reasons,
        settings={"seed": seed, "sample": h.sample, "max_rows": h.max_rows},
    )


def _lexical_section(
    per_query: dict[str, dict[str, np.ndarray]], slices: list[Slice], dense: str
) -> LexicalSection | None:
    """Per slice and metric: the dense index against BM25, and the hybrid against the dense."""
    if not {"bm25", dense} <= per_query.keys():
        return None
    d, b = per_query[dense], per_query["bm25"]
    h = per_query.get("hybrid")

    def mean(v: np.ndarray, mask: np.ndarray) -> float | None:
        return float(v[mask].mean()) if mask.any() else None

    return LexicalSection(
        dense=dense,
        slices={
            s.name: LexicalSlice(
                n_queries=s.n_queries,
                dense_minus_bm25={m: mean(d[m] - b[m], s.mask) for m in d},
                hybrid_minus_dense=(
                    {m: mean(h[m] - d[m], s.mask) for m in d} if h is not None else {}
                ),
                dense_wins={m: int((d[m] > b[m])[s.mask].sum()) for m in d},
                bm25_wins={m: int((d[m] < b[m])[s.mask].sum()) for m in d},
            )
            for s in slices
        },
    )


def run_evaluation(
    config: Config,
    *,
    embedder: Embedder | None = None,
    progress: ProgressFactory | None = None,
    baseline: RunReport | None = None,
    baseline_source: str | None = None,
    missing_baseline: str | None = None,
) -> Evaluation:
    """Evaluate ``config`` end to end, and gate it when checks are configured.

    With a ``baseline``, its compatibility is checked as soon as the golden set is read (before
    any embedding), and drop checks compare with it. Raises EvalretError subclasses on bad input
    (IncomparableError included) or failure. ``missing_baseline`` names a baseline that does not
    exist yet because this run saves it: the gate section says only fixed bounds were checked.
    """
    progress = progress or _no_progress
    timer = _Timer()
    metrics = parse_metrics(config.metrics)
    depth = max(m.k for m in metrics)
    definitions = metric_definitions(config)

    with timer("load_golden_set"):
        full = load_golden_set(config.golden_set, config.relevance_level)
        without_relevant = full.queries_without_relevant
        golden = queries_to_evaluate(full, config)
        slices = golden.slices(config.slices)
    check_gate_slices(config, slices)
    if baseline is not None:
        check_compatible(baseline, full, definitions, baseline_source or "baseline")

    cache_root = (config.cache.dir or default_cache_dir()) if config.cache.enabled else None
    from_config = embedder is None
    embedder = embedder or make_embedder(config.model, cache_root)
    backend = embedder
    cached = None
    if cache_root is not None:
        cached = CachedEmbedder(embedder, cache_root)
        embedder = cached
    with timer("embed_documents"):
        doc_vectors = embedder.embed(
            golden.doc_texts, "document", progress("Embedding documents", len(golden.doc_texts))
        )
    with timer("embed_queries"):
        query_vectors = embedder.embed(
            golden.query_texts, "query", progress("Embedding queries", len(golden.query_texts))
        )
    agreement = None
    if from_config:  # how far a faster backend's vectors are from torch's (cached after once)
        with timer("backend_check"):
            agreement = backend_check(config.model, golden.doc_texts, doc_vectors, cache_root)

    rank = id_rank(golden.doc_ids)
    qrels = golden.qrel_arrays()
    intrinsic = None
    if config.health.enabled:
        with timer("health"):
            intrinsic = _intrinsic_section(doc_vectors, query_vectors, qrels, config)
    hybrid_cfg = config.indexes.hybrid
    # rankings cannot be longer than the corpus: metrics at a larger k see the rest as
    # non-relevant. The hybrid fuses each ranking's first `candidates`: search that deep.
    n_docs = len(golden.doc_ids)
    rank_depth = min(depth, n_docs)
    search_depth = min(max(depth, hybrid_cfg.candidates) if hybrid_cfg.enabled else depth, n_docs)
    rankings: dict[str, SearchResult] = {}
    hnsw_cache = "not built"
    per_query: dict[str, dict[str, np.ndarray]] = {}
    judged: dict[str, dict[str, np.ndarray]] = {}
    cutoffs = sorted({m.k for m in metrics})
    index_params: dict[str, dict[str, Any]] = {}
    if config.indexes.exact.enabled:
        index_params["exact"] = {"type": "faiss.IndexFlatIP"}
        with timer("build_exact"):
            exact = build_exact(doc_vectors)
        with timer("search_exact"):
            rankings["exact"] = search(exact, query_vectors, search_depth, rank)
    if config.indexes.hnsw.enabled:
        h = config.indexes.hnsw
        index_params["hnsw"] = {
            "type": "faiss.IndexHNSWFlat",
            "metric": "inner_product",
            "m": h.m,
            "ef_construction": h.ef_construction,
            "ef_search": h.ef_search,
        }
        with timer("build_hnsw"):
            hnsw, hnsw_cache = cached_hnsw(
                doc_vectors,
                h,
                cached.root if cached is not None else None,
                progress("Building HNSW graph", len(doc_vectors)),
                cached.warnings if cached is not None else None,
            )
        with timer("search_hnsw"):
            rankings["hnsw"] = search(hnsw, query_vectors, search_depth, rank)
    if config.indexes.bm25.enabled:
        b = config.indexes.bm25
        index_params["bm25"] = {"type": "bm25s", **b.model_dump(exclude={"enabled"})}
        with timer("search_bm25"):
            rankings["bm25"] = bm25_search(
                golden.doc_texts,
                golden.query_texts,
                b,
                search_depth,
                rank,
                progress("BM25 search", len(golden.query_texts)),
            )
    if hybrid_cfg.enabled:
        index_params["hybrid"] = {
            "type": "reciprocal rank fusion",
            **hybrid_cfg.model_dump(exclude={"enabled"}),
            "of": ["bm25", hybrid_cfg.dense],
        }
        with timer("fuse_hybrid"):
            rankings["hybrid"] = rrf_fuse(
                [rankings["bm25"], rankings[hybrid_cfg.dense]],
                hybrid_cfg.rrf_k,
                hybrid_cfg.candidates,
                rank_depth,
                rank,
            )
    rankings = {name: r.cut(rank_depth) for name, r in rankings.items()}

    curves: dict[str, MetricCurves] = {}
    masks = {s.name: s.mask for s in slices}
    with timer("metrics"):
        for name, ranking in rankings.items():
            judgments = build_judgments(
                ranking.ids, *qrels, n_docs=n_docs, relevance_level=config.relevance_level
            )
            per_query[name] = compute(metrics, judgments, config.ndcg_gain)
            judged[name] = judged_at(judgments, cutoffs)
            ks, curve_values = metric_curves(judgments, masks, rank_depth, config.ndcg_gain)
            curves[name] = MetricCurves(k=ks, values=curve_values)
        index_results = {
            name: IndexResult(
                kind=name,
                params=index_params[name],
                slices=_summarize(per_query[name], judged[name], slices, config),
                per_query={m: v.tolist() for m, v in per_query[name].items()},
                top_ids=[
                    [golden.doc_ids[d] for d in row if d >= 0]
                    for row in rankings[name].ids[:, :TOP_KEPT].tolist()
                ],
                curves=curves[name],
            )
            for name in rankings
        }
        ann = _ann_section(rankings, per_query, metrics, slices)
        lexical = _lexical_section(per_query, slices, hybrid_cfg.dense)

    model_identity = embedder.identity()
    parts = {
        "golden_set": full.fingerprint,
        "model": model_identity,
        "indexes": index_params,
        "metrics": definitions,
    }
    report = RunReport(
        evalret_version=__version__,
        config=config.model_dump(mode="json"),
        fingerprint=Fingerprint(
            **parts, evalret_version=__version__, digest=_digest({**parts, "v": __version__})
        ),
        golden_set=GoldenSetInfo(
            source=full.source,
            format=full.format,
            fingerprint=full.fingerprint,
            corpus_fingerprint=full.corpus_fingerprint,
            query_fingerprints=full.query_fingerprints,
            n_documents=len(full.doc_ids),
            n_queries_judged=len(full.query_ids),
            n_queries_evaluated=len(golden.query_ids),
            queries_without_relevant=without_relevant,
            n_judgments=sum(len(j) for j in full.qrels.values()),
            warnings=reader_warnings(full),
        ),
        embedding={
            "dim": int(doc_vectors.shape[1]),
            "n_documents": int(doc_vectors.shape[0]),
            "n_queries": int(query_vectors.shape[0]),
            "document_text": "title + ' ' + text, stripped, after document_prefix",
            "cache": (
                {**cached.report(), "hnsw_index": hnsw_cache} if cached is not None else None
            ),
            "backend": describe_backend(config.model, backend),
            "backend_check": agreement,
        },
        bootstrap={**config.bootstrap.model_dump(), "method": "percentile, resampling queries"},
        query_ids=golden.query_ids,
        slices={
            s.name: SliceInfo(
                kind=s.kind,
                definition=s.definition,
                n_queries=s.n_queries,
                reliability=reliability(s.n_queries),
                members=np.flatnonzero(s.mask).tolist(),
            )
            for s in slices
        },
        indexes=index_results,
        ann=ann,
        lexical=lexical,
        intrinsic=intrinsic,
        timings=timer.timings,
    )
    with timer("gate"):
        gate = run_gate(config, report, slices, baseline, baseline_source, missing_baseline)
    report = report.model_copy(update={"gate": gate, "timings": timer.timings})
    return Evaluation(
        report=report, golden_set=golden, rankings=rankings, slices=slices, baseline=baseline
    )
