"""Orchestration of a run, in named stages: load (golden set, slices, the baseline's
compatibility) -> embed (the configured backend through the cache) -> health -> retrieve (every
enabled retriever of engines.retrievers, in registry order) -> score (per-query metrics, curves,
slice summaries) -> assemble (the report) -> gate.

Embedding and retrieval go through the registries; the report's sections are shaped from what the
stages made in pipeline/sections.py (only its ANN and lexical sections name an index themselves).
Everything heavy (model, faiss) happens here or below; the CLI only renders what comes back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from evalret.core.curves import metric_curves
from evalret.core.digest import json_digest
from evalret.core.filters import Eligibility
from evalret.core.metrics import (
    Metric,
    RankedJudgments,
    build_judgments,
    check_err_grades,
    compute,
    cutoffs,
    has_uncut,
    judged_at,
    parse_metrics,
)
from evalret.core.provenance import is_llm
from evalret.core.ranking import (
    PRIMARY_INDEX,
    TIE_RULE,
    SearchResult,
    id_rank,
    judgeable_ids,
)
from evalret.core.slices import Slice
from evalret.data.baseline import LABEL_SOURCES, check_compatible
from evalret.data.config import Config, PythonRerankerConfig, RerankIndexConfig
from evalret.data.goldenset import GoldenSet, load_golden_set
from evalret.data.schema import (
    TOP_KEPT,
    AnnSection,
    Fingerprint,
    IndexResult,
    IntrinsicSection,
    LexicalSection,
    MetricCurves,
    RerankSection,
    RunReport,
)
from evalret.engines.retrievers import (
    CorpusChecked,
    Costed,
    FiltersChecked,
    Probed,
    ProgressFactory,
    ReadyChecked,
    Repeated,
    Retriever,
    SearchJob,
    Timed,
    make_retrievers,
)
from evalret.engines.search_cost import Latency, run_latency
from evalret.pipeline.beyond import add_beyond
from evalret.pipeline.gate import check_gate_slices, run_gate
from evalret.pipeline.intervals import label_scores
from evalret.pipeline.plan import Selection, cold_cost, needs_vectors, select
from evalret.pipeline.rerank_report import Stage, rerank_section, rerank_stages
from evalret.pipeline.sample import Sampled, check_sample_baseline
from evalret.pipeline.sections import (
    NOT_EMBEDDED,
    Embedded,
    ann_cutoffs,
    ann_section,
    condensed,
    embedding_section,
    golden_set_info,
    intrinsic_section,
    label_sources_section,
    labels_section,
    latency_section,
    lexical_section,
    slice_infos,
    stability_section,
    summarize_slices,
)
from evalret.version import __version__

if TYPE_CHECKING:  # the embedding engines and the judge are imported when a run uses them
    from evalret.engines.st_embedder import Embedder
    from evalret.pipeline.judge import RunJudging

# how queries without a relevant document count, as written in the fingerprint (the exclude
# wording predates the setting: baselines written before it stay comparable)
WITHOUT_RELEVANT = {"exclude": "excluded from means", "zero": "scored like trec_eval (0 if binary)"}


@dataclass(frozen=True)
class Evaluation:
    """A finished run: the report plus what the report files are written from."""

    report: RunReport
    golden_set: GoldenSet  # restricted to the evaluated queries
    rankings: dict[str, SearchResult]
    slices: list[Slice]
    baseline: RunReport | None = None  # the report gated against, when there was one
    # the document and query vectors searched ([n, 0] when nothing was embedded)
    doc_vectors: np.ndarray | None = None
    query_vectors: np.ndarray | None = None


class _Timer:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.timings[name] = round(time.perf_counter() - start, 4)


def metric_definitions(config: Config) -> dict[str, Any]:
    """Everything that decides what a metric value means; part of the fingerprint. The search
    depth is in it when configured or when a metric scores the whole ranking (and so depends on
    it); otherwise the largest cutoff decides it, and the names already say that."""
    metrics = config.metric_specs
    depth = (
        {"search_depth": config.depth}
        if config.search_depth is not None or has_uncut(metrics)
        else {}
    )
    return {
        "names": [str(m) for m in metrics],
        "ndcg_gain": config.ndcg_gain,
        "relevance_level": config.relevance_level,
        "tie_rule": TIE_RULE,
        "queries_without_relevant": WITHOUT_RELEVANT[config.queries_without_relevant],
        **depth,
        # only when not the default: a run on all labels keeps the digest it always had
        **({"labels": config.gate.labels} if config.gate.labels != "all" else {}),
    }


def _no_progress(_: str, __: int) -> Callable[[int], None]:
    return lambda _n: None


@dataclass(frozen=True)
class _Loaded:
    """What the run evaluates (pipeline/plan.py selects it) and the metric definitions."""

    selection: Selection
    definitions: dict[str, Any]
    read: GoldenSet  # the golden set as read (its fingerprint); ``full`` is it under gate.labels

    @property
    def full(self) -> GoldenSet:
        return self.selection.full

    @property
    def golden(self) -> GoldenSet:  # the scored queries (of the sample, when sampled)
        return self.selection.golden

    @property
    def slices(self) -> list[Slice]:
        return self.selection.slices

    @property
    def sampled(self) -> Sampled | None:  # config ``sample``: what was drawn
        return self.selection.sampled


@dataclass(frozen=True)
class _Retrieved:
    """Every enabled retriever's ranking, cut to ``depth``, with its described parameters."""

    rankings: dict[str, SearchResult]
    params: dict[str, dict[str, Any]]
    cache_notes: dict[str, str]
    depth: int
    stages: list[Stage]  # the rerank indexes' first stages
    approximate: list[str]  # the approximate indexes, measured against exact search
    costs: dict[str, dict[str, float]]  # index -> its bytes, bytes per vector, distances
    latency: dict[str, Latency]  # index -> its single-query latency (machine-dependent)
    latency_repeats: int = 1  # the searches of each timed query
    eligibility: Eligibility | None = None  # with filtered queries: what each may retrieve
    # index -> every repeat's ranking (stability.repeats above 1; the first is ``rankings``')
    repeats: dict[str, list[SearchResult]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Scored:
    """Per index its results; the ANN and lexical comparisons."""

    indexes: dict[str, IndexResult]
    ann: dict[str, AnnSection]  # approximate index -> its comparison with exact search
    lexical: LexicalSection | None
    rerank: dict[str, RerankSection] = field(default_factory=dict)


def _load(
    config: Config,
    timer: _Timer,
    baseline: RunReport | None,
    baseline_source: str | None,
    judge: str | None = None,
) -> _Loaded:
    """Read the golden set and select what the run evaluates (its slices, the configured sample:
    pipeline/plan.py); check the gate's slices and, with a ``baseline``, that it is comparable
    (before anything is embedded or sent to a judge): golden set, metric definitions and label
    sources, the judge's (``judge``: `run --judge`'s source, when its labels join the metrics)
    included."""
    definitions = metric_definitions(config)
    with timer("load_golden_set"):
        full = load_golden_set(config.golden_set, config.relevance_level)
    labelled = full.with_labels(config.gate.labels)
    selection = select(config, labelled, timer)
    planned: dict[str, int | None] = dict(label_sources_section(selection.golden, judge))
    if judge is not None:
        planned[judge] = None  # counted once judged
    if any(is_llm(name) for name in planned):  # only then: a run on human labels keeps its digest
        definitions[LABEL_SOURCES] = sorted(planned)
    loaded = _Loaded(selection, definitions, full)
    check_gate_slices(config, loaded.slices)
    if any(m.family == "err" for m in parse_metrics(config.metrics)):
        grades = (g for judged in selection.golden.qrels.values() for g in judged.values())
        check_err_grades(max(grades, default=0))
    if baseline is not None:
        source = baseline_source or "baseline"
        check_compatible(baseline, full, definitions, source, planned)
        check_sample_baseline(baseline, loaded.sampled, loaded.golden.query_ids, source)
    return loaded


def _embed(
    config: Config,
    selection: Selection,
    embedder: Embedder | None,
    progress: ProgressFactory,
    timer: _Timer,
    retrievers: list[Retriever],
) -> Embedded:
    """Embed the texts the plan selects (pipeline/plan.py) through the cache; check a non-torch
    backend's vectors against torch's when the embedder comes from the config. Nothing is
    embedded (no model is opened) when no enabled retriever needs vectors."""
    if not needs_vectors(retrievers):
        golden = selection.golden
        empty = np.zeros((len(golden.doc_ids), 0), dtype=np.float32)
        queries = np.zeros((len(golden.query_ids), 0), dtype=np.float32)
        return Embedded(docs=empty, queries=queries, opened=None, agreement=None)
    from evalret.engines.embedders import backend_check
    from evalret.engines.ray_engine import embedding_engine

    texts = selection.texts(retrievers)
    documents, query_texts = texts["document"], texts["query"]
    # the engine (a Ray runtime this run started) is let go once both kinds are embedded
    with embedding_engine(config.model, config.cache, config.embedding, embedder) as opened:
        with timer("embed_documents"):
            docs = opened.embedder.embed(
                documents, "document", progress("Embedding documents", len(documents))
            )
        with timer("embed_queries"):
            queries = opened.embedder.embed(
                query_texts, "query", progress("Embedding queries", len(query_texts))
            )
    agreement = None
    if embedder is None:  # how far a faster backend's vectors are from torch's (cached after once)
        with timer("backend_check"):
            agreement = backend_check(config.model, documents, docs, opened.root)
    cold = None
    if config.gate.max_cost_per_run is not None and config.model.price is not None:
        cold = cold_cost(config.model, opened.backend, texts)
    return Embedded(docs, queries, opened, agreement, cold)


def _health(
    config: Config, golden: GoldenSet, e: Embedded, timer: _Timer
) -> IntrinsicSection | None:
    """The intrinsic health section, when ``health`` is enabled and there are vectors."""
    if not config.health.enabled or e.opened is None:
        return None
    with timer("health"):
        return intrinsic_section(e.docs, e.queries, golden.qrel_arrays(), config)


def _retrieve(
    config: Config,
    golden: GoldenSet,
    e: Embedded,
    depth: int,
    progress: ProgressFactory,
    timer: _Timer,
    retrievers: list[Retriever],
    latency_repeats: int = 1,
) -> _Retrieved:
    """Run every enabled retriever of the registry, in its order, ``depth`` deep.

    Rankings cannot be longer than the corpus (metrics at a larger k see the rest as
    non-relevant), except an external one that may rank documents the corpus lacks: then every
    ranking is ``depth`` long, the shorter ones padded with empty ranks. A retriever that reads
    earlier rankings (the hybrid) says how deep they must go: they are searched that deep, then
    every ranking is cut to ``depth``. Each index's latency: every timed query searched
    ``latency_repeats`` times."""
    enabled = [r for r in retrievers if r.enabled]
    n_docs = len(golden.doc_ids)
    wanted = max([depth, *(r.input_depth() for r in enabled)])
    cached = e.opened.cached if e.opened is not None else None
    job = SearchJob(
        doc_ids=golden.doc_ids,
        doc_texts=golden.doc_texts,
        query_texts=golden.query_texts,
        doc_vectors=e.docs,
        query_vectors=e.queries,
        rank=id_rank(golden.doc_ids),
        depth=min(wanted, n_docs),
        earlier={},
        progress=progress,
        timed=timer,
        cache_dir=cached.root if cached is not None else None,
        cache_warnings=cached.warnings if cached is not None else None,
        query_ids=golden.query_ids,
        has_vectors=e.opened is not None,
        latency_repeats=latency_repeats,
        eligibility=(eligible := golden.eligibility()),
        filters=[golden.filters.get(q) for q in golden.query_ids] if eligible is not None else (),
        doc_metadata=(
            [golden.doc_metadata.get(d) for d in golden.doc_ids] if eligible is not None else ()
        ),
    )
    rankings: dict[str, SearchResult] = {}
    latency: dict[str, Latency] = {}
    for r in enabled:  # a ranking that may hold documents the corpus lacks may go past its size
        own_depth = job.depth if r.corpus_bound else wanted
        rankings[r.name] = r.retrieve(replace(job, earlier=dict(rankings), depth=own_depth))
        # timed at once: the probe holds the index, which goes before the next one is built
        probe = r.probe() if isinstance(r, Probed) else None
        if probe is not None:
            with timer(f"latency_{r.name}"):
                timed = run_latency(probe, len(golden.query_ids), latency_repeats)
            if timed is not None:
                latency[r.name] = timed
        elif isinstance(r, Timed) and (own := r.latency()) is not None:
            latency[r.name] = own
    rank_depth = min(depth, n_docs) if all(r.corpus_bound for r in enabled) else depth
    return _Retrieved(
        rankings={name: ranking.padded(rank_depth) for name, ranking in rankings.items()},
        params={r.name: r.params() for r in enabled},
        cache_notes={k: v for r in retrievers for k, v in r.cache_notes().items()},
        stages=rerank_stages(enabled, rankings, n_docs),
        depth=rank_depth,
        approximate=[r.name for r in enabled if r.approximate],
        eligibility=eligible,
        costs={
            r.name: c
            for r in enabled
            if isinstance(r, Costed) and (c := r.index_cost()) is not None
        },
        latency=latency,
        latency_repeats=latency_repeats,
        repeats=_repeats(enabled, rank_depth),
    )


def _repeats(enabled: list[Retriever], depth: int) -> dict[str, list[SearchResult]]:
    """Every repeat's ranking of each index searched several times, padded like the others."""
    return {
        r.name: [ranking.padded(depth) for ranking in got]
        for r in enabled
        if isinstance(r, Repeated) and (got := r.repeat_rankings())
    }


def _score(
    config: Config, loaded: _Loaded, retrieved: _Retrieved, metrics: list[Metric], timer: _Timer
) -> _Scored:
    """Per-query metrics, judged@k, curves and slice summaries of every ranking."""
    golden, slices, rankings = loaded.golden, loaded.slices, retrieved.rankings
    qrels = golden.qrel_arrays()
    masks = {s.name: s.mask for s in slices}
    per_query: dict[str, dict[str, np.ndarray]] = {}
    indexes: dict[str, IndexResult] = {}

    def judged(ranking: SearchResult) -> RankedJudgments:
        return build_judgments(
            judgeable_ids(ranking.ids, len(golden.doc_ids)),
            *qrels,
            n_docs=len(golden.doc_ids),
            relevance_level=config.relevance_level,
        )

    with timer("metrics"):
        for name, ranking in rankings.items():
            judgments = judged(ranking)
            per_query[name] = compute(metrics, judgments, config.ndcg_gain)
            labels = label_scores(golden, ranking.ids, metrics, config)
            ks, curve_values = metric_curves(judgments, masks, retrieved.depth, config.ndcg_gain)
            indexes[name] = IndexResult(
                kind=name,
                params=retrieved.params[name],
                slices=summarize_slices(
                    per_query[name], judged_at(judgments, cutoffs(metrics)), slices, config, labels
                ),
                per_query={m: v.tolist() for m, v in per_query[name].items()},
                condensed=condensed(metrics, judgments, config),
                top_ids=ranking.names_by_row(golden.doc_ids, TOP_KEPT),
                curves=MetricCurves(k=ks, values=curve_values),
            )
        n_docs, k = len(golden.doc_ids), config.beyond_accuracy.k
        indexes = add_beyond(indexes, rankings, slices, n_docs=n_docs, k=k, depth=retrieved.depth)
        ks = ann_cutoffs(metrics, config.gate.ann_k, retrieved.depth)
        ann = {
            name: ann_section(
                name, rankings, per_query, ks, slices, retrieved.eligibility
            ).model_copy(update=retrieved.costs.get(name, {}))
            for name in retrieved.approximate
            if PRIMARY_INDEX in rankings
        }
        for name, repeated in retrieved.repeats.items():
            if name in ann:  # each repeat scored as the index's own ranking is
                scores = [(r, compute(metrics, judged(r), config.ndcg_gain)) for r in repeated]
                exact = rankings[PRIMARY_INDEX], per_query[PRIMARY_INDEX]
                stability = stability_section(*exact, scores, ks, slices)
                ann[name] = ann[name].model_copy(update={"stability": stability})
        lexical = lexical_section(per_query, slices, config.indexes.hybrid.dense)
        rerank = {
            st.index: rerank_section(st, per_query, golden, slices, config, retrieved.depth)
            for st in retrieved.stages
        }
    return _Scored(indexes=indexes, ann=ann, lexical=lexical, rerank=rerank)


def _assemble(
    config: Config,
    loaded: _Loaded,
    e: Embedded,
    intrinsic: IntrinsicSection | None,
    retrieved: _Retrieved,
    scored: _Scored,
) -> RunReport:
    """The run's report (its gate still to come)."""
    parts = {
        "golden_set": loaded.read.fingerprint,
        "model": e.opened.embedder.identity() if e.opened else {"source": NOT_EMBEDDED},
        "indexes": retrieved.params,
        "metrics": loaded.definitions,
    }
    if loaded.sampled is not None:  # only then: the digest of a full run stays as it was
        parts["sample"] = loaded.sampled.fingerprint
    return RunReport(
        evalret_version=__version__,
        config=config.model_dump(mode="json"),
        fingerprint=Fingerprint(
            **parts, evalret_version=__version__, digest=json_digest({**parts, "v": __version__})
        ),
        golden_set=golden_set_info(loaded.read, loaded.full, loaded.golden),
        embedding=embedding_section(config, e, retrieved.cache_notes),
        bootstrap={**config.bootstrap.model_dump(), "method": "percentile, resampling queries"},
        query_ids=loaded.golden.query_ids,
        slices=slice_infos(loaded.slices),
        indexes=scored.indexes,
        ann=scored.ann,
        lexical=scored.lexical,
        rerank=scored.rerank,
        latency=latency_section(retrieved.latency, retrieved.latency_repeats),
        intrinsic=intrinsic,
        timings={},
        sample=loaded.sampled.section if loaded.sampled is not None else None,
        overrides=config.overrides or None,
    )


def check_caches(cfg: Config, judging: RunJudging | None) -> None:
    """The SQLite stores a run writes (the judge's answer cache with ``judging``, the
    reranker's score cache with a cached reranker), checked before any work: a file at one's
    path that is not evalret's is refused (exit 2) untouched, not after the retrieval.
    run_evaluation checks them for every command that evaluates (run, compare, sweep, pool)."""
    if not cfg.cache.enabled:
        return
    if judging is not None:
        from evalret.pipeline.judge import AnswerCache

        answers = AnswerCache.of(cfg)
        try:
            answers.check()
        finally:
            answers.close()
    reranked = [
        index
        for index in cfg.indexes.typed.values()
        if isinstance(index, RerankIndexConfig)
        and index.enabled
        and not isinstance(index.reranker, PythonRerankerConfig)  # never cached
    ]
    if reranked:
        from evalret.engines.rerankers import ScoreCache

        scores = ScoreCache.of(cfg.cache)
        try:
            scores.check()
        finally:
            scores.close()


def check_before_embedding(retrievers: list[Retriever], golden: GoldenSet) -> None:
    """What the enabled retrievers can tell before anything is embedded: an index the corpus
    cannot train (a faiss PQ16x20 over 338 documents), a filter a store cannot express, a store
    that is not there."""
    filters = list(golden.filters.values())
    for r in retrievers:
        if r.enabled and isinstance(r, CorpusChecked):
            r.check_corpus(len(golden.doc_ids))
        if r.enabled and filters and isinstance(r, FiltersChecked):
            r.check_filters(filters)
        if r.enabled and isinstance(r, ReadyChecked):
            r.check_ready()


def rank_queries(
    config: Config,
    golden: GoldenSet,
    depth: int,
    progress: ProgressFactory | None = None,
    names: Collection[str] | None = None,
) -> dict[str, SearchResult]:
    """Every enabled index's ranking (of those ``names``, all by default: a hybrid needs its
    parts named too) of every query of ``golden``, ``depth`` deep, judged or not: a run's embed
    and retrieve stages alone (nothing scored, gated or reported; nothing embedded when no
    index named needs vectors), for a set whose queries may judge nothing yet (`evalret golden
    judge` pools a draft's rankings)."""
    progress = progress or _no_progress
    timer = _Timer()
    retrievers = [r for r in make_retrievers(config) if names is None or r.name in names]
    check_before_embedding(retrievers, golden)
    embedded = _embed(config, Selection(golden, golden, []), None, progress, timer, retrievers)
    return _retrieve(config, golden, embedded, depth, progress, timer, retrievers).rankings


def run_evaluation(
    config: Config,
    *,
    embedder: Embedder | None = None,
    progress: ProgressFactory | None = None,
    baseline: RunReport | None = None,
    baseline_source: str | None = None,
    missing_baseline: str | None = None,
    judging: RunJudging | None = None,
    latency_repeats: int = 1,
) -> Evaluation:
    """Evaluate ``config`` end to end, and gate it when checks are configured.

    With a ``baseline``, its compatibility is checked as soon as the golden set is read (before
    any embedding or judging: golden set, metric definitions, label sources), and drop checks
    compare with it. Raises EvalretError subclasses on bad input
    (IncomparableError included) or failure. ``missing_baseline`` names a baseline that does not
    exist yet because this run saves it: the gate section says only fixed bounds were checked.
    ``judging`` (`run --judge`): the unjudged documents of the gated indexes' top k are graded by
    the config's judge (pipeline/judge.py) and scored with those labels added (source
    ``llm:<model>@<prompt hash>``), as the report's ``judge`` section says; a judge request
    that failed for good or an answer that could not be read ends the run (IncompleteError, exit
    3) before any verdict. The report's ``label_sources`` counts the judgments its metrics used
    by source. ``latency_repeats``: how often each timed query is searched for the latency
    section (`evalret sweep --repeats`).
    """
    progress = progress or _no_progress
    timer = _Timer()
    metrics = config.metric_specs
    judge = None  # the source of `run --judge`'s labels, when they join the metrics
    if judging is not None and config.gate.labels == "all":
        from evalret.pipeline.judge import run_source

        judge = run_source(config)
    loaded = _load(config, timer, baseline, baseline_source, judge)
    check_caches(config, judging)
    retrievers = make_retrievers(config)  # before embedding: a bad callable fails fast
    check_before_embedding(retrievers, loaded.golden)
    embedded = _embed(config, loaded.selection, embedder, progress, timer, retrievers)
    intrinsic = _health(config, loaded.golden, embedded, timer)
    retrieved = _retrieve(
        config, loaded.golden, embedded, config.depth, progress, timer, retrievers, latency_repeats
    )
    judged, labelled = None, loaded.read
    if judging is not None:
        from evalret.pipeline.judge import judge_run

        with timer("judge"):
            add, judged = judge_run(config, loaded.golden, retrieved.rankings, judging, progress)
        labelled = add(loaded.read)  # the judge's labels beside the files' (fingerprint: read)
        if config.gate.labels == "all":  # under human, the judge's labels stay out of the metrics
            loaded = replace(loaded, selection=replace(loaded.selection, golden=add(loaded.golden)))
    scored = _score(config, loaded, retrieved, metrics, timer)
    report = _assemble(config, loaded, embedded, intrinsic, retrieved, scored)
    labels = labels_section(config, labelled, loaded.golden, retrieved.rankings, scored.indexes)
    if labels is not None:
        report = report.model_copy(update={"labels": labels})
    if judged is not None:
        report = report.model_copy(update={"judge": judged})
    sources = label_sources_section(loaded.golden, judge)
    report = report.model_copy(update={"label_sources": sources})
    with timer("gate"):
        gate = run_gate(config, report, loaded.slices, baseline, baseline_source, missing_baseline)
    report = report.model_copy(update={"gate": gate, "timings": timer.timings})
    return Evaluation(
        report=report,
        golden_set=loaded.golden,
        rankings=retrieved.rankings,
        slices=loaded.slices,
        baseline=baseline,
        doc_vectors=embedded.docs,
        query_vectors=embedded.queries,
    )
