"""The report's sections, each built from what a stage of the run (pipeline/evaluate.py) made:
per index its slice summaries and judged-only forms, the ANN comparison with exact search (and
recall by selectivity), the lexical comparison, the intrinsic health of the vectors, the labels
section (human labels beside all labels), the golden set, embedding, slice, latency and label
sources sections. The stages decide what is computed; these only shape it into the report.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from evalret.core.filters import BUCKETS, Eligibility, selectivity_bucket
from evalret.core.metrics import (
    Metric,
    RankedJudgments,
    build_judgments,
    compute,
    compute_condensed,
    cutoffs,
    has_uncut,
)
from evalret.core.provenance import has_llm_labels, human_view, is_llm, label_sources
from evalret.core.ranking import (
    PRIMARY_INDEX,
    SearchResult,
    judgeable_ids,
    topk_overlap,
)
from evalret.core.relevance import is_relevant
from evalret.core.slices import Slice, reliability
from evalret.core.stats import bootstrap_ci, seed_for
from evalret.data.config import Config, Labels
from evalret.data.goldenset import GoldenSet, scored_query_ids
from evalret.data.schema import (
    AnnSection,
    AnnSlice,
    AnnStability,
    AnnStabilitySlice,
    GoldenSetInfo,
    IndexLatency,
    IndexResult,
    IntrinsicSection,
    LabelsSection,
    LabelView,
    LatencySection,
    LexicalSection,
    LexicalSlice,
    MetricValue,
    ReaderWarning,
    SelectivityBucket,
    SliceInfo,
    SliceResult,
    Spread,
)
from evalret.engines.search_cost import Latency, latency_note, machine
from evalret.pipeline.intervals import LabelScores, slice_interval

if TYPE_CHECKING:  # the embedding engines and the judge are imported when a run uses them
    from evalret.engines.embedders import OpenedEmbedder


def reader_warnings(golden: GoldenSet) -> list[ReaderWarning]:
    return [
        ReaderWarning(code=p.code, file=p.file, line=p.line, message=p.message)
        for p in golden.warnings
    ]


def summarize_slices(
    per_query: dict[str, np.ndarray],
    judged: dict[str, np.ndarray],
    slices: list[Slice],
    config: Config,
    labels: LabelScores | None = None,
) -> dict[str, SliceResult]:
    """Mean and interval of every metric in every slice (the bootstrap, or with LLM labels the
    prediction-powered one: pipeline/intervals.py); mean judged@k."""
    names = list(per_query)
    matrix = np.column_stack([per_query[m] for m in names]) if names else np.zeros((0, 0))
    out = {}
    for s in slices:
        values = matrix[s.mask]
        ci = slice_interval(names, values, s.mask, s.name, labels, config)
        means = values.mean(axis=0) if len(values) else np.full(len(names), np.nan)
        out[s.name] = SliceResult(
            n_queries=s.n_queries,
            reliability=reliability(s.n_queries),
            judged={k: float(v[s.mask].mean()) if s.n_queries else None for k, v in judged.items()},
            metrics={
                m: MetricValue(
                    **{
                        k: (None if np.isnan(v) else float(v))
                        for k, v in (
                            ("value", means[i]),
                            ("ci_low", ci.low[i]),
                            ("ci_high", ci.high[i]),
                        )
                    },
                    **ci.notes[i],
                )
                for i, m in enumerate(names)
            },
        )
    return out


def ann_cutoffs(metrics: list[Metric], ann_k: int, depth: int) -> list[int]:
    """The k of the ANN recall@k figures: every metric cutoff and the gate's ``ann_k`` (the
    recall its floor reads, whether a metric has that cutoff or not); with a metric over the
    whole ranking also the search ``depth`` (its whole ranking)."""
    ks = set(cutoffs(metrics)) | {min(ann_k, depth)}
    if has_uncut(metrics):
        ks.add(depth)
    return sorted(ks)


def ann_section(
    name: str,
    rankings: dict[str, SearchResult],
    per_query: dict[str, dict[str, np.ndarray]],
    ks: list[int],
    slices: list[Slice],
    eligible: Eligibility | None = None,
) -> AnnSection:
    """The approximate index ``name`` against exact search: recall of the exact top k and the
    change in every metric, per slice; with filtered queries, recall by selectivity bucket
    (against filtered exact search: both searched the eligible documents)."""
    exact = PRIMARY_INDEX
    recall = {f"recall@{k}": topk_overlap(rankings[name].ids, rankings[exact].ids, k) for k in ks}
    deltas = {m: per_query[name][m] - per_query[exact][m] for m in per_query[exact]}

    def mean(v: np.ndarray, mask: np.ndarray) -> float | None:
        return float(v[mask].mean()) if mask.any() else None

    return AnnSection(
        index=name,
        reference=exact,
        slices={
            s.name: AnnSlice(
                n_queries=s.n_queries,
                recall={k: mean(v, s.mask) for k, v in recall.items()},
                metric_deltas={k: mean(v, s.mask) for k, v in deltas.items()},
            )
            for s in slices
        },
        **({"selectivity": selectivity_section(recall, eligible)} if eligible is not None else {}),
    )


def stability_section(
    exact: SearchResult,
    exact_scores: dict[str, np.ndarray],
    repeats: list[tuple[SearchResult, dict[str, np.ndarray]]],
    ks: list[int],
    slices: list[Slice],
) -> AnnStability:
    """An approximate index searched (built) several times: per slice, each repeat's recall of
    the exact top k and change of every metric (``repeats``: each repeat's ranking and per-query
    metrics, the first the index's own), and their mean, worst and best over the repeats. A
    repeat whose figure is not a number makes the mean and the extremes not a number: no
    repeat is left out of what the gate reads."""
    figures = [
        (
            {f"recall@{k}": topk_overlap(ranking.ids, exact.ids, k) for k in ks},
            {m: scores[m] - exact_scores[m] for m in exact_scores},
        )
        for ranking, scores in repeats
    ]

    def spread(values: list[float | None]) -> Spread:
        if any(v is None for v in values):
            return Spread(mean=None, min=None, max=None, values=values)
        arr = np.array(values, dtype=np.float64)
        return Spread(
            mean=float(arr.mean()), min=float(arr.min()), max=float(arr.max()), values=values
        )

    def over(which: int, key: str, mask: np.ndarray) -> Spread:
        return spread([float(f[which][key][mask].mean()) if mask.any() else None for f in figures])

    return AnnStability(
        repeats=len(repeats),
        slices={
            s.name: AnnStabilitySlice(
                n_queries=s.n_queries,
                recall={k: over(0, k, s.mask) for k in figures[0][0]},
                metric_deltas={m: over(1, m, s.mask) for m in figures[0][1]},
            )
            for s in slices
        },
    )


def selectivity_section(
    recall: dict[str, np.ndarray], eligible: Eligibility
) -> dict[str, SelectivityBucket]:
    """Mean recall@k per selectivity bucket (core.filters.BUCKETS), every bucket listed."""
    names = np.array([selectivity_bucket(f) for f in eligible.selectivity()])
    out = {}
    for bucket, _, _ in BUCKETS:
        mask = names == bucket
        out[bucket] = SelectivityBucket(
            n_queries=int(mask.sum()),
            recall={k: float(v[mask].mean()) if mask.any() else None for k, v in recall.items()},
        )
    return out


def intrinsic_section(
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
        relevant = is_relevant(grade, config.relevance_level)
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


def lexical_section(
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


@dataclass(frozen=True)
class Embedded:
    """The document and query vectors, and what embedded them."""

    docs: np.ndarray  # [n_docs, 0] when nothing was embedded
    queries: np.ndarray
    opened: OpenedEmbedder | None  # None: no enabled index needs vectors, nothing was embedded
    agreement: dict[str, Any] | None  # the backend against torch (None for torch)
    cold_cost: float | None = None  # gate.max_cost_per_run: every text's cost, nothing cached


NOT_EMBEDDED = "not embedded: no index needs vectors"


def label_sources_section(golden: GoldenSet, judge: str | None) -> dict[str, int]:
    """How many of the scored queries' judgments each label source gave
    (core.provenance.label_sources), and ``judge``, `run --judge`'s source when its labels join
    the metrics, listed even when it labelled nothing (0): what the run admits is what compares."""
    scored = {q: golden.qrels.get(q, {}) for q in golden.query_ids}
    found = label_sources(scored, golden.sources)
    if judge is not None:
        found.setdefault(judge, 0)
    return found


def condensed(
    metrics: list[Metric], judgments: RankedJudgments, config: Config
) -> dict[str, list[float]]:
    """The judged-only form of every metric whose cutoff the rankings reach past (a ranking no
    deeper than k cannot show where its judged documents went: its judged-only form would read
    a document pushed below rank k by unjudged ones as lost, and the gate would call a drop
    that unjudged documents made a regression)."""
    retrieved = judgments.n_retrieved  # None: every rank of the table holds a document
    depth = int(retrieved.max(initial=0)) if retrieved is not None else judgments.judged.shape[1]
    deep = [m for m in metrics if m.k is None or m.k < depth]
    return {m: v.tolist() for m, v in compute_condensed(deep, judgments, config.ndcg_gain).items()}


def labels_section(
    config: Config,
    read: GoldenSet,
    golden: GoldenSet,
    rankings: dict[str, SearchResult],
    scored: dict[str, IndexResult],
) -> LabelsSection | None:
    """The headline on human labels alone beside all labels, when an LLM judge graded part of
    the golden set: the run's metrics are on gate.labels' labels; the other labelling is scored
    here by the same metric code, on the run's queries it scores (under
    queries_without_relevant). ``read``: the golden set's labels (with `run --judge`'s added),
    ``golden``: the scored queries; ``scored``: the run's results per index."""
    if not has_llm_labels(read.sources, read.llm_qrels):
        return None
    gate = config.gate.labels
    other: Labels = "human" if gate == "all" else "all"
    other_qrels = read.qrels if other == "all" else human_view(read.qrels, read.sources)
    judged = [q for q in golden.query_ids if other_qrels.get(q)]
    keep = set(
        scored_query_ids(
            judged, other_qrels, config.relevance_level, config.queries_without_relevant
        )
    )
    mask = np.array([q in keep for q in golden.query_ids], dtype=bool)
    arrays = replace(
        golden, qrels={q: dict(other_qrels.get(q, {})) for q in golden.query_ids}
    ).qrel_arrays()
    metrics, b = config.metric_specs, config.bootstrap
    indexes: dict[str, dict[str, MetricValue]] = {}
    for name, ranking in rankings.items():
        judgments = build_judgments(
            judgeable_ids(ranking.ids, len(golden.doc_ids)),
            *arrays,
            n_docs=len(golden.doc_ids),
            relevance_level=config.relevance_level,
        )
        values = compute(metrics, judgments, config.ndcg_gain)
        indexes[name] = headline(values, mask, b.samples, b.confidence, seed_for(b.seed, other))
    views = {
        gate: LabelView(
            n_queries=len(golden.query_ids),
            indexes={n: dict(next(iter(r.slices.values())).metrics) for n, r in scored.items()},
        ),
        other: LabelView(n_queries=int(mask.sum()), indexes=indexes),
    }
    return LabelsSection(
        gate=gate,
        n_judgments=sum(len(m) for m in read.qrels.values()),
        n_llm_judgments=sum(is_llm(s) for m in read.sources.values() for s in m.values()),
        n_llm_beside_human=sum(
            not is_llm(read.sources.get(q, {}).get(d)) for q, m in read.llm_qrels.items() for d in m
        ),
        **views,
    )


def headline(
    values: dict[str, np.ndarray],
    mask: np.ndarray,
    samples: int,
    confidence: float,
    seed: np.random.SeedSequence,
) -> dict[str, MetricValue]:
    """Each metric's mean over the ``mask``ed queries, with its bootstrap interval."""
    names = list(values)
    matrix = np.column_stack([values[m][mask] for m in names]) if names else np.zeros((0, 0))
    low, high = bootstrap_ci(matrix, samples, confidence, seed)
    means = matrix.mean(axis=0) if len(matrix) else np.full(len(names), np.nan)
    return {
        m: MetricValue(
            **{
                k: (None if np.isnan(v) else float(v))
                for k, v in (("value", means[i]), ("ci_low", low[i]), ("ci_high", high[i]))
            }
        )
        for i, m in enumerate(names)
    }


def golden_set_info(read: GoldenSet, full: GoldenSet, golden: GoldenSet) -> GoldenSetInfo:
    """The report's golden_set section: where it came from, its fingerprints (of the set as
    read) and sizes (under gate.labels: ``full``)."""
    return GoldenSetInfo(
        source=full.source,
        format=full.format,
        fingerprint=read.fingerprint,
        corpus_fingerprint=read.corpus_fingerprint,
        query_fingerprints=read.query_fingerprints,
        n_documents=len(full.doc_ids),
        n_queries_judged=len(full.query_ids),
        n_queries_evaluated=len(golden.query_ids),
        queries_without_relevant=full.queries_without_relevant,
        n_judgments=sum(len(j) for j in full.qrels.values()),
        warnings=reader_warnings(full),
    )


def api_use_section(config: Config, e: Embedded) -> dict[str, Any] | None:
    """The report's ``embedding.api`` (None for a local model), with the cold cost when the
    gate holds a budget on it."""
    from evalret.engines.embedders import api_use

    assert e.opened is not None
    api = api_use(config.model, e.opened.backend)
    if api is not None and e.cold_cost is not None:
        api["cold_cost"] = e.cold_cost
    return api


def embedding_section(config: Config, e: Embedded, cache_notes: dict[str, str]) -> dict[str, Any]:
    """The report's embedding section: shapes, the cache's report, the backend and its check."""
    if e.opened is None:
        return {
            "dim": 0,
            "n_documents": int(e.docs.shape[0]),
            "n_queries": int(e.queries.shape[0]),
            "document_text": NOT_EMBEDDED,
        }
    from evalret.engines.backends import describe_backend
    from evalret.engines.ray_engine import engine_report, local_backend

    cached = e.opened.cached
    return {
        "dim": int(e.docs.shape[1]),
        "n_documents": int(e.docs.shape[0]),
        "n_queries": int(e.queries.shape[0]),
        "document_text": "title + ' ' + text, stripped, after document_prefix",
        "cache": {**cached.report(), **cache_notes} if cached is not None else None,
        "backend": describe_backend(config.model, local_backend(e.opened.backend)),
        "backend_check": e.agreement,
        **({"api": api} if (api := api_use_section(config, e)) is not None else {}),
        **({"engine": eng} if (eng := engine_report(e.opened.backend)) is not None else {}),
    }


def slice_infos(slices: list[Slice]) -> dict[str, SliceInfo]:
    return {
        s.name: SliceInfo(
            kind=s.kind,
            definition=s.definition,
            n_queries=s.n_queries,
            reliability=reliability(s.n_queries),
            members=np.flatnonzero(s.mask).tolist(),
        )
        for s in slices
    }


def latency_section(latency: dict[str, Latency], repeats: int = 1) -> LatencySection | None:
    """The report's latency section (None: no index was timed); ``repeats``: the searches of
    each timed query."""
    if not latency:
        return None
    return LatencySection(
        note=latency_note(repeats),
        machine=machine(),
        indexes={name: IndexLatency(**asdict(t)) for name, t in latency.items()},
    )
