"""The lines and notes a run's report shows beside its metrics, shared by the terminal, Markdown
and HTML renderers: intervals, intrinsic health, alignment, the embedding cache, API and
backend, reader warnings, a sampled run, the label sources, and what an index costs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalret.core.ppi import MIN_LABELLED
from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL
from evalret.data.schema import (
    AnnSection,
    ApiUse,
    EmbeddingInfo,
    GoldenSetInfo,
    LatencySection,
    MetricValue,
    RunReport,
    SliceResult,
    Spread,
)
from evalret.report.numbers import PLAIN, Medium, number

WARNINGS_SHOWN = 10  # reader warnings listed in the terminal and Markdown; all are in report.json


def shown_judged(slices: Mapping[str, SliceResult]) -> str | None:
    """The judged@k shown beside the metrics: judged@10 when computed, else the smallest k."""
    keys = list(next(iter(slices.values())).judged) if slices else []
    if not keys:
        return None
    return "judged@10" if "judged@10" in keys else min(keys, key=lambda k: int(k.split("@")[1]))


def interval_mark(v: MetricValue) -> str:
    """A short mark beside an interval that is not today's bootstrap on human labels: ``PPI``
    for a prediction-powered one, ``uncal.`` for a bootstrap over LLM labels no person checked;
    empty otherwise."""
    if v.interval == "ppi":
        return "PPI"
    return "uncal." if v.interval == "bootstrap" and v.n_predicted else ""


def interval_lines(report: RunReport, index: str, only: str | None = None) -> list[str]:
    """How each slice's intervals (or the slice ``only``'s) were computed, when the golden set
    holds LLM labels (none otherwise); plain text, the renderers escape it. The method is per
    slice: every metric of a slice shares its labelled queries."""
    lines = []
    for name, s in report.indexes[index].slices.items():
        if only is not None and name != only:
            continue
        v = next(iter(s.metrics.values()), None)
        if v is None or v.interval is None:
            continue
        counts = f"{v.n_labelled} labelled, {v.n_predicted} with LLM labels nobody checked"
        if v.interval == "ppi":
            estimates = ", ".join(
                f"{m} {number(mv.estimate, medium=PLAIN)}" for m, mv in s.metrics.items()
            )
            lines.append(
                f"slice {name}: prediction-powered (PPI) interval ({counts}), around the "
                f"estimate corrected by the labelled queries: {estimates}"
            )
        elif v.n_predicted:
            lines.append(
                f"slice {name}: bootstrap interval, LLM labels uncalibrated ({counts}; PPI needs "
                f"{MIN_LABELLED} queries whose LLM labels a person also graded)"
            )
        else:
            lines.append(f"slice {name}: bootstrap interval (every LLM label checked: {counts})")
    return lines


def intrinsic_rows(report: RunReport) -> list[tuple[str, str, str, str]]:
    """(figure, documents, queries, healthier) for the health figures worth reading."""
    section = report.intrinsic
    if section is None:
        return []
    from evalret.core.health import FIGURES

    def shown(values: dict[str, float | int | bool] | None, name: str) -> str:
        if values is None or name not in values:
            return "-"
        v = values[name]
        if isinstance(v, bool):
            return "yes" if v else "no"
        return str(v) if isinstance(v, int) else f"{v:.4f}"

    rows = []
    for name, figure in FIGURES.items():
        if figure.direction is None or name == "dead_dims_share":
            continue
        if name not in section.documents and (
            section.queries is None or name not in section.queries
        ):
            continue
        rows.append(
            (
                name,
                shown(section.documents, name),
                shown(section.queries, name),
                f"{figure.direction} is healthier",
            )
        )
    return rows


# what an external ranking (a run file, a Python retriever) did not share with the golden set:
# the count its index params carry, and how the note reads
ALIGNMENT_NOTES = {
    "queries_missing": "queries of the golden set not in the ranking (scored 0)",
    "queries_unknown": "ranked queries not evaluated (ignored)",
    "documents_unknown": "retrieved documents not in the corpus (unjudged)",
    "scores_partial": "TREC scores not wholly a number, read by their leading number as "
    "trec_eval reads them (0 when none)",
    # a pgvector table (engines.retrievers.pgvector.TABLE_COUNTS)
    "rows_null_vector": "table rows with a NULL vector (never searched)",
    "rows_null_id": "table rows with a NULL id (skipped when retrieved)",
    "ranks_unknown_id": "ranks held by rows whose id is NULL or not in the corpus (skipped)",
    # a store (engines.stores.search.StoreCounts): of ranks_unknown_id, those of a NULL id
    "ranks_null_id": "of those skipped ranks held by rows whose id is NULL",
    "rows_folded": "rows folded into a better row of the same document (one rank per document)",
    # (pgvector returns at most 1000 rows: engines.stores.pgvector)
    "queries_short": "queries ranked fewer documents than the depth while the corpus had more "
    "eligible",
    # code returning rankings (engines.ranking_checks.RankingCounts)
    "documents_outside_filter": "returned documents outside the query's filter (dropped)",
}


# whose ids a count's examples are (``<key>_examples`` in the params; default: query ids)
EXAMPLES_OF = {"ranks_unknown_id": "stored ids"}


def index_notes(report: RunReport, index: str) -> list[str]:
    """One line per nonzero count of ALIGNMENT_NOTES in ``index``'s params, naming the index,
    with the examples its params keep beside it (``<key>_examples``: query ids, or the stored
    ids a store holds and the corpus lacks); untrusted text, escaped where shown."""
    params = report.indexes[index].params
    return [
        f"{index}: {count} {text}"
        + _examples(params.get(f"{key}_examples"), EXAMPLES_OF.get(key, "queries"))
        for key, text in ALIGNMENT_NOTES.items()
        if isinstance(count := params.get(key), int) and count
    ]


def alignment_notes(report: RunReport) -> list[str]:
    """``index_notes`` of every index (terminal, report.md and report.html)."""
    return [line for index in report.indexes for line in index_notes(report, index)]


def _examples(ids: Any, what: str) -> str:
    """``ids`` (a list of ids) as a note's tail: " (e.g. queries q1, q2)"."""
    if not isinstance(ids, list) or not ids:
        return ""
    return f" (e.g. {what} {', '.join(str(i) for i in ids)})"


def _described(value: Any) -> str:
    """A value of a store's description in words: a mapping as ``key=value`` pairs, a list
    item after item."""
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_described(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(_described(v) for v in value)
    return str(value)


def store_line(report: RunReport, index: str) -> str | None:
    """A store index's description as its driver reported it ('store lancedb 0.40.0, index
    name=vector_idx, index_type=IVF_PQ, columns=vector; 338 rows'); None for any other index.
    Untrusted text (the store names its own index), escaped where shown."""
    params = report.indexes[index].params
    described = params.get("store")
    if not isinstance(described, Mapping):
        return None
    driver = str(params.get("type", "store")).removeprefix("store.")
    head = f"store {driver}" + (f" {described['version']}" if "version" in described else "")
    parts = [f"index {_described(described['index'])}"] if "index" in described else []
    parts += [
        f"{k} {_described(v)}"
        for k, v in described.items()
        if k not in ("version", "index", "rows")
    ]
    rows = f"; {described['rows']} rows" if "rows" in described else ""
    return head + (f", {', '.join(parts)}" if parts else "") + rows


def store_lines(report: RunReport) -> list[str]:
    """``store_line`` of every store index, naming it."""
    return [f"{i}: {line}" for i in report.indexes if (line := store_line(report, i)) is not None]


def cache_notes(embedding: EmbeddingInfo) -> list[str]:
    """One line each for what the embedding cache repaired or could not do: corrupt shards set
    aside, an HNSW graph rebuilt, and the cache's warnings (terminal and report.md)."""
    cache = embedding.cache
    if cache is None:
        return []
    notes = []
    corrupt = sum(len(c.corrupt_shards) for c in (cache.document, cache.query) if c is not None)
    if corrupt:
        notes.append(
            f"embedding cache: {corrupt} corrupt shard(s) set aside as *.corrupt, "
            "their texts embedded again"
        )
    if cache.hnsw_index == "rebuilt":
        notes.append(
            "embedding cache: the cached HNSW graph was unreadable or did not fit, rebuilt"
        )
    notes += [f"embedding cache warning: {w}" for w in cache.warnings]
    return notes


def truncation_line(embedding: EmbeddingInfo) -> str | None:
    """What the run's vectors were cut from: ``model.truncate_dim`` read from the cached
    full-dimension vectors (engines/cache.Cut); None when nothing was cut on read."""
    cache = embedding.cache
    if cache is None or cache.truncated_from is None:
        return None
    return (
        f"vectors cut to {embedding.dim} of the model's {cache.truncated_from} dimensions "
        "cached (model.truncate_dim)"
    )


def api_notes(embedding: EmbeddingInfo) -> list[str]:
    """A line when the embedding API's answers named another model than the config's (a
    server serving one model answers to any name); untrusted text, escaped where shown."""
    api = embedding.api
    if api is None or api.served_model is None:
        return []
    return [
        f"embedding API: the answers named model {api.served_model}, not {api.model} "
        "(model.name): the server may serve another model than the one configured"
    ]


def warning_lines(g: GoldenSetInfo, limit: int = WARNINGS_SHOWN) -> list[str]:
    """The golden-set readers' warnings as ``file:line: message`` (the first ``limit``), then
    ``... and N more``; untrusted text: renderers escape it for their medium."""
    lines = []
    for w in g.warnings[:limit]:
        where = f"{w.file}:{w.line}" if w.file and w.line is not None else (w.file or "")
        lines.append(f"{where}: {w.message}" if where else w.message)
    if len(g.warnings) > limit:
        lines.append(f"... and {len(g.warnings) - limit} more (report.json golden_set.warnings)")
    return lines


def without_relevant_note(report: RunReport) -> str | None:
    """What happened to the judged queries without a relevant document, or None if there are
    none."""
    n = len(report.golden_set.queries_without_relevant)
    if not n:
        return None
    level = report.fingerprint.metrics.get("relevance_level", DEFAULT_RELEVANCE_LEVEL)
    scored = report.fingerprint.metrics.get("queries_without_relevant") != "excluded from means"
    fate = "are scored like trec_eval (0 on binary metrics)" if scored else "are left out of means"
    return f"{n} judged queries have no relevant document (grade >= {level}) and {fate}"


def sample_summary(report: RunReport) -> str | None:
    """What a sampled run evaluated, in one line (terminal, report.md, report.html); None for a
    run on the whole golden set. Plain text: renderers escape it."""
    s = report.sample
    if s is None:
        return None
    corpus = (
        f"{s.n_documents} of {s.n_documents_total} documents (sampled corpus: absolute figures "
        "are optimistic, comparable only with the same sample)"
        if s.documents is not None
        else f"all {s.n_documents} documents"
    )
    return (
        f"sample of {s.n_queries} of {s.n_queries_total} queries (seed {s.seed}, stratified over "
        f"the slices, at least {s.min_per_slice} per slice), {corpus}"
    )


def labels_note(report: RunReport) -> str | None:
    """One sentence on an LLM judge's labels in the golden set and which labels the gate uses;
    None when the judge graded nothing (the report has no ``labels``)."""
    lab = report.labels
    if lab is None:
        return None
    used = "all labels" if lab.gate == "all" else "human labels only (gate.labels: human)"
    return (
        f"LLM-judged labels: {lab.n_llm_judgments} of {lab.n_judgments} judgments are an LLM "
        f"judge's, {lab.n_llm_beside_human} more of its grades sit beside a person's; metrics "
        f"and gate use {used}"
    )


def labels_rows(report: RunReport, metrics: list[str]) -> list[tuple[str, str, int, list[str]]]:
    """(index, labels, queries, values) per index: the headline ``metrics`` on human labels
    alone, then on all labels (three decimals, ``-`` where undefined)."""
    lab = report.labels
    if lab is None:
        return []
    rows = []
    for index in report.indexes:
        for name, view in (("human only", lab.human), ("all", lab.all)):
            values = view.indexes.get(index, {})
            cells = [
                "-" if (v := values.get(m)) is None or v.value is None else f"{v.value:.3f}"
                for m in metrics
            ]
            rows.append((index, name, view.n_queries, cells))
    return rows


# --- the embedding -----------------------------------------------------------------------------


def api_line(api: ApiUse) -> str:
    """The embedding API's endpoint and what each kind of text used there."""
    parts = []
    for label, use in (("documents", api.document), ("queries", api.query)):
        if use is None:
            continue
        tokens = "tokens not reported" if use.tokens is None else f"{use.tokens} tokens"
        cost = f", cost {use.cost:.4f}" if use.cost is not None else ""
        retries = f", {use.retries} retried" if use.retries else ""
        texts = f"{use.texts} text{'s' if use.texts != 1 else ''}"
        requests = f"{use.requests} request{'s' if use.requests != 1 else ''}"
        parts.append(f"{label} {texts} in {requests}, {tokens}{cost}{retries}")
    used = "; ".join(parts) if parts else "nothing sent (all cached)"
    return f"API {api.model} at {api.endpoint}: {used}"


def engine_line(embedding: EmbeddingInfo) -> str | None:
    """One line on the Ray engine that embedded the cache misses (configured text, to be
    escaped where shown); None for the local engine."""
    engine = embedding.engine
    if engine is None:
        return None
    gpus = f", {engine.gpus_per_worker:g} GPU each" if engine.gpus_per_worker else ""
    where = engine.address if engine.address != "local runtime" else "a local Ray runtime"
    return (
        f"embedded on Ray ({where}): {engine.workers} workers{gpus}, batches of "
        f"{engine.batch_size}, {engine.texts} texts"
    )


def backend_line(embedding: EmbeddingInfo) -> str | None:
    """One line on a non-torch backend and its agreement with torch, or on the embedding API
    (the terminal and report.md; it holds configured text, to be escaped where shown), or on
    torch running on another device than the CPU; None for torch on the CPU or a report that does
    not say."""
    backend, check = embedding.backend, embedding.backend_check
    if embedding.api is not None:
        return api_line(embedding.api)
    if backend is not None and backend.name == "torch" and backend.device not in (None, "cpu"):
        return f"backend torch {backend.precision} on {backend.device}"
    if backend is None or backend.name == "torch":
        return None
    line = f"backend {backend.name} {backend.precision}"
    if backend.threads:
        line += f", {backend.threads} threads"
    if backend.model in ("read", "exported"):
        line += ", model " + ("read from cache" if backend.model == "read" else "exported")
    if check is not None:
        line += (
            f": cosine to {check.reference} on {check.sample} sampled documents "
            f"mean {check.mean_cosine:.5f}, min {check.min_cosine:.5f}"
        )
    return line


# --- what an index costs -----------------------------------------------------------------------


def cost_text(ann: AnnSection) -> str:
    """What an approximate index told of its cost ('index 0.58 MiB (1,807 bytes a vector),
    334 distances a query'); empty when it told nothing."""
    parts = []
    if ann.index_bytes is not None and ann.bytes_per_vector is not None:
        parts.append(
            f"index {ann.index_bytes / 2**20:.2f} MiB ({ann.bytes_per_vector:,.0f} bytes a vector)"
        )
    if ann.distances_per_query is not None:
        parts.append(f"{ann.distances_per_query:,.0f} distances a query")
    return ", ".join(parts)


def machine_text(latency: LatencySection) -> str:
    """The machine latency was measured on, in a few words ('2 CPUs, x86_64, load 0.98')."""
    m = latency.machine
    load = m.get("load_average_1m")
    return f"{m.get('cpu_count')} CPUs, {m.get('processor')}" + (
        f", load {load}" if load is not None else ""
    )


def latency_text(report: RunReport) -> str | None:
    """One line: every timed index's single-query latency and the machine ('latency
    (machine-dependent; 2 CPUs, x86_64, load 0.98): exact p50 0.17 ms, p95 0.22 ms; ...');
    None when nothing was timed."""
    lat = report.latency
    if lat is None or not lat.indexes:
        return None
    each = "; ".join(
        f"{name} p50 {t.p50_ms:.3g} ms, p95 {t.p95_ms:.3g} ms" for name, t in lat.indexes.items()
    )
    return f"latency (machine-dependent; {machine_text(lat)}): {each}"


# --- an index searched several times -----------------------------------------------------------


def repeats_word(report: RunReport, index: str) -> str:
    """What each repeat of ``index`` was: a build (a scratch store loads and builds its index
    each time) or a search of the same index."""
    result = report.indexes.get(index)
    return "builds" if result is not None and result.params.get("mode") == "scratch" else "searches"


def stability_rows(ann: AnnSection, medium: Medium) -> list[tuple[str, str, str, str]]:
    """(figure, mean, worst, best) over the repeats on slice ``all``: each recall@k, then each
    metric's change (``Δndcg@10``); empty for an index searched once."""
    s = ann.stability.slices.get("all") if ann.stability is not None else None
    if s is None:
        return []
    rows = []
    for figures, signed, mark in ((s.recall, False, ""), (s.metric_deltas, True, "Δ")):
        for name, sp in figures.items():
            mean, worst, best = (number(v, signed=signed, medium=medium) for v in _trio(sp))
            rows.append((f"{mark}{name}", mean, worst, best))
    return rows


def _trio(sp: Spread) -> tuple[float | None, float | None, float | None]:
    """A spread's (mean, worst, best)."""
    return sp.mean, sp.min, sp.max


def stability_text(report: RunReport, ann: AnnSection) -> str | None:
    """One line on the spread over an index's repeats: each recall@k and the first metric's
    change ('lance: recall@10 mean 0.9100 (worst 0.8900, best 0.9300 over 3 builds); Δndcg@10
    mean -0.0120 (worst -0.0200, best -0.0050)'); None for an index searched once."""
    rows = stability_rows(ann, PLAIN)
    if not rows or ann.stability is None:
        return None
    over = f" over {ann.stability.repeats} {repeats_word(report, ann.index)}"
    recall = [r for r in rows if not r[0].startswith("Δ")]
    shown = [*recall, *[r for r in rows if r[0].startswith("Δ")][:1]]
    parts = [
        f"{name} mean {mean} (worst {worst}, best {best}{over if i == 0 else ''})"
        for i, (name, mean, worst, best) in enumerate(shown)
    ]
    return f"{ann.index}: " + "; ".join(parts)
