"""Pooling for annotators: the top-ranked documents that carry no judgment, gathered from one or
several runs (configs x indexes), one JSONL line per (query, document) to be labelled.

Unjudged documents count as misses in every metric, so a model that finds relevant documents the
golden set never judged is under-scored. Pooling the unjudged top-k of every system being compared
and labelling them is how TREC builds fair judgments.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evalret.choices import PoolFormat
from evalret.core.ranking import SearchResult
from evalret.data.atomic import atomic_write_text, check_writable_file
from evalret.data.goldenset import GoldenSet
from evalret.data.judgments import label_studio_tasks
from evalret.data.overrides import Override, configured
from evalret.data.paths import Declared, Input, Output, cache_output, config_inputs, guard, unique
from evalret.pipeline.progress import ProgressBars, no_bars


@dataclass
class PoolItem:
    """One unjudged document of one query, and which runs put it in their top k, where."""

    query_id: str
    doc_id: str
    sources: dict[str, int] = field(default_factory=dict)  # run label -> rank (1-based)

    @property
    def best_rank(self) -> int:
        return min(self.sources.values())


def pool_unjudged(golden: GoldenSet, runs: Mapping[str, SearchResult], k: int) -> list[PoolItem]:
    """Every (query, document) in some run's top ``k`` that the golden set does not judge, in
    query order, then by how many runs retrieved it (more first), then best rank, then id.
    ``runs`` maps a label (e.g. "config.yaml:exact") to a ranking over ``golden``'s queries."""
    items: dict[tuple[str, str], PoolItem] = {}
    for label, ranking in runs.items():
        for qi, query_id in enumerate(golden.query_ids):
            judged = golden.qrels.get(query_id, {})
            for rank, doc_id in enumerate(ranking.names(qi, golden.doc_ids, k), start=1):
                if doc_id in judged:
                    continue
                item = items.setdefault((query_id, doc_id), PoolItem(query_id, doc_id))
                item.sources.setdefault(label, rank)
    position = {q: i for i, q in enumerate(golden.query_ids)}
    return sorted(
        items.values(),
        key=lambda it: (position[it.query_id], -len(it.sources), it.best_rank, it.doc_id),
    )


def pool_records(golden: GoldenSet, items: Sequence[PoolItem]) -> list[dict[str, object]]:
    """JSONL-ready records: ids, texts for the annotator, and ``grade: null`` to fill in."""
    query_position = {q: i for i, q in enumerate(golden.query_ids)}
    return [
        {
            "query_id": it.query_id,
            "doc_id": it.doc_id,
            "grade": None,
            "query": golden.query_texts[query_position[it.query_id]],
            "document": (  # None: a document of a run that the corpus does not have
                golden.doc_texts[golden.doc_index[it.doc_id]]
                if it.doc_id in golden.doc_index
                else None
            ),
            "best_rank": it.best_rank,
            "retrieved_by": dict(sorted(it.sources.items())),
        }
        for it in items
    ]


def gold_records(
    golden: GoldenSet, n_pool: int, fraction: float, seed: int
) -> list[dict[str, object]]:
    """``round(fraction * n_pool)`` gold lines (fewer when the golden set judges fewer pairs):
    pairs the golden set judges already, drawn with ``seed`` from its evaluated queries' judged
    documents in the corpus, each with its known grade as ``gold_grade``, in golden-set order."""
    position = {q: i for i, q in enumerate(golden.query_ids)}
    judged = [
        (q, d, g)
        for q in golden.query_ids
        for d, g in sorted(golden.qrels.get(q, {}).items())
        if d in golden.doc_index
    ]
    want = min(round(fraction * n_pool), len(judged))
    if want <= 0:
        return []
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(judged), size=want, replace=False).tolist())
    return [
        {
            "query_id": q,
            "doc_id": d,
            "grade": None,
            "query": golden.query_texts[position[q]],
            "document": golden.doc_texts[golden.doc_index[d]],
            "best_rank": None,
            "retrieved_by": {},
            "gold_grade": g,
        }
        for q, d, g in (judged[i] for i in chosen)
    ]


def run_pool(
    configs: Sequence[Path | None],
    k: int,
    indexes: Sequence[str] | None = None,
    progress: Any = None,
    overrides: Sequence[Override] = (),
) -> tuple[GoldenSet, list[dict[str, object]], list[str]]:
    """Evaluate each config (embeddings come from the cache when warm) and pool the unjudged
    top ``k`` of the chosen indexes (default: every index of each run). All configs must use the
    same golden set. Returns the golden set, the records and the run labels pooled."""
    from evalret.errors import IncomparableError, InputError
    from evalret.pipeline.evaluate import run_evaluation

    names = [str(c) if c is not None else "default" for c in configs]
    short = [Path(n).stem for n in names]
    labels = short if len(set(short)) == len(short) else names
    runs: dict[str, tuple[list[str], SearchResult]] = {}  # label -> its queries, its ranking
    golden: GoldenSet | None = None
    fingerprint = None
    for config, label in zip(configs, labels, strict=True):
        evaluation = run_evaluation(configured(config, overrides), progress=progress)
        report = evaluation.report
        if fingerprint is None:
            fingerprint = report.golden_set.fingerprint
        elif report.golden_set.fingerprint != fingerprint:
            raise IncomparableError(
                f"pooling needs one golden set: {label} uses {report.golden_set.source}, "
                f"which differs from the first config's"
            )
        # the queries a run scores depend on its relevance_level and queries_without_relevant,
        # and are nested (all judged ones, or those with a grade >= some level): keep the most
        if golden is None or len(evaluation.golden_set.query_ids) > len(golden.query_ids):
            golden = evaluation.golden_set
        chosen = list(evaluation.rankings) if indexes is None else list(indexes)
        unknown = [i for i in chosen if i not in evaluation.rankings]
        if unknown:
            raise InputError(
                f"--index {', '.join(unknown)}: {label} has {', '.join(evaluation.rankings)}"
            )
        for index in chosen:
            runs[f"{label}:{index}"] = (evaluation.golden_set.query_ids, evaluation.rankings[index])
    assert golden is not None
    aligned = {label: _onto(r, q, golden.query_ids) for label, (q, r) in runs.items()}
    return golden, pool_records(golden, pool_unjudged(golden, aligned, k)), list(runs)


def _onto(ranking: SearchResult, query_ids: list[str], onto: list[str]) -> SearchResult:
    """``ranking`` (one row per query of ``query_ids``) with one row per query of ``onto``, in
    that order; a query the run did not score gets an empty row (-1: no document)."""
    row = {q: i for i, q in enumerate(query_ids)}
    ids = np.full((len(onto), ranking.ids.shape[1]), -1, dtype=ranking.ids.dtype)
    scores = np.full((len(onto), ranking.ids.shape[1]), -np.inf, dtype=ranking.scores.dtype)
    for i, q in enumerate(onto):
        if q in row:
            ids[i], scores[i] = ranking.ids[row[q]], ranking.scores[row[q]]
    return SearchResult(ids=ids, scores=scores, extra_docs=ranking.extra_docs)


@dataclass(frozen=True)
class PoolOutcome:
    """What `evalret pool` wrote: how many documents, for how many of the queries, from which
    runs."""

    n_documents: int
    n_queries: int  # queries with at least one document to label
    n_total_queries: int
    labels: list[str]
    n_gold: int = 0  # gold lines added (--gold-fraction)


@dataclass(frozen=True, kw_only=True)
class PoolRequest:
    """What `evalret pool` is asked for (``pool_command``'s one argument, every field named)."""

    configs: Sequence[Path | None]  # none: the built-in defaults
    k: int
    out: Path
    indexes: Sequence[str] | None = None  # None: every index
    gold_fraction: float = 0.0
    seed: int = 0
    fmt: PoolFormat = "jsonl"
    overrides: Sequence[Override] = ()


def pool_command(request: PoolRequest, *, progress: ProgressBars = no_bars) -> PoolOutcome:
    """`evalret pool`: pool the unjudged top ``k`` of every config's runs and write them to
    ``out`` as JSON Lines, or as Label Studio tasks (checked writable before anything runs);
    ``gold_fraction`` adds that share of gold lines after them (seeded by ``seed``); ``overrides``
    (``--set``, ``--model``, ``--dimension``) apply to every config."""
    configs, k, out, overrides = request.configs, request.k, request.out, request.overrides
    reads: list[Input] = []
    writes = [Output("--out", out)]
    for config in configs or [None]:
        cfg = configured(config, overrides)
        reads += config_inputs(cfg, config, "CONFIGS")
        writes += [c for c in cache_output(cfg) if c not in writes]
    guard(Declared("pool", unique(reads), writes))
    check_writable_file(out, "pool file")
    with progress() as factory:
        golden, records, labels = run_pool(
            configs or [None], k, request.indexes, factory, overrides
        )
    gold = gold_records(golden, len(records), request.gold_fraction, request.seed)
    lines = records + gold
    if request.fmt == "label-studio":
        text = label_studio_tasks(lines)
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines)
    atomic_write_text(out, text, "pool file")
    queries = len({r["query_id"] for r in records})
    return PoolOutcome(len(records), queries, len(golden.query_ids), labels, len(gold))
