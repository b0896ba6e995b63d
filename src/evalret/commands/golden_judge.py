"""`evalret golden judge DRAFT -c CONFIG --out GOLDEN`: judged pools, so that a query's source
document is not its only relevant one.

- **the config**: CONFIG gives the model, the indexes' settings and the ``judge:`` section; the
  draft takes the place of its golden set (``golden_set: {path: DRAFT, format: native}``, as
  ``--set`` would), so the input guard sees DRAFT as an input and GOLDEN as an output.
- **the pool**: for every query of the draft, the top ``--k`` of each retriever of
  ``--retrievers`` (``dense``: the config's model with exact search; ``bm25``; ``hybrid``: their
  reciprocal rank fusion, with the settings of ``indexes.bm25`` and ``indexes.hybrid``, fused
  with exact search), plus every synthetic query's source document(s) (``generated.
  source_docs``). The rankings are a run's (pipeline/evaluate.rank_queries), for queries that
  judge nothing yet.
- **the judging** is `evalret judge`'s (pipeline/judge.py: prompt, answer cache, votes, plan,
  dry run, cost; ``--calibrate`` and ``judge.min_kappa`` as there). A pair the draft grades
  already (a person's grade, say) is kept as it is and not sent.
- **GOLDEN**: the draft with every pooled pair's grade in its query's ``relevant`` (0 included:
  judged non-relevant), ``sources`` naming the judge (``llm:<model>@<prompt hash>``) for each of
  the judge's grades, and the draft's manifest with one step appended (command ``golden judge``,
  inputs with their sha256, k, retrievers, the judge, counts). Written whole or not at all, and
  only from a complete run: a request that failed for good or an answer that could not be read
  ends with exit 3 and no GOLDEN (the answers read are in the answer cache: a rerun asks the
  rest); kappa below ``judge.min_kappa`` is exit 1 and no GOLDEN.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalret.choices import POOL_RETRIEVERS
from evalret.core.provenance import llm_source
from evalret.core.ranking import SearchResult
from evalret.core.relevance import is_judged, is_relevant
from evalret.data.atomic import check_writable_dir, sha256_file
from evalret.data.config import Config, JudgeConfig
from evalret.data.goldenset import GoldenSet
from evalret.data.goldenset.draft import (
    MANIFEST,
    CorpusDoc,
    DraftQuery,
    read_corpus,
    read_draft,
    read_manifest,
    write_draft,
)
from evalret.data.judgments import parse_scale
from evalret.data.overrides import Override, configured, raw_config
from evalret.data.paths import Declared, Input, Output, cache_output, config_inputs, guard, unique
from evalret.errors import ConfigError, ExitCode, InputError, docs_page
from evalret.pipeline import judge as jp
from evalret.pipeline.calibration import below_min, calibration, human_pairs
from evalret.pipeline.judge import JUDGE_SECTION
from evalret.pipeline.progress import ProgressBars, no_bars

COMMAND = "golden judge"
# each retriever of --retrievers, as the index of the pool's config that ranks it
INDEX_OF = {"dense": "exact", "bm25": "bm25", "hybrid": "hybrid"}
SOURCE = "source"  # the pool's label of a synthetic query's source document(s)
WRITTEN = ("corpus.jsonl", "queries.jsonl", MANIFEST)


@dataclass(frozen=True, kw_only=True)
class GoldenJudgeRequest:
    """What the command line asked for (``golden_judge_command``'s one argument)."""

    draft: Path
    out: Path
    config: Path | None = None
    k: int = 10
    retrievers: Sequence[str] = POOL_RETRIEVERS
    votes: int | None = None
    calibrate: Path | None = None
    dry_run: bool = False
    overrides: Sequence[Override] = ()


@dataclass
class GoldenJudgeOutcome:
    """What `evalret golden judge` did (or, with --dry-run, would do)."""

    plan: dict[str, Any]  # pipeline/judge.dry_run's figures
    out: Path
    dry_run: bool
    queries: int
    k: int
    pooled: dict[str, int]  # pairs in each retriever's top k, the source documents, all
    kept: int  # pooled pairs the draft grades already: kept, not sent
    to_judge: int  # pooled pairs the judge grades (cached or asked)
    asked: int = 0
    unparseable: int = 0
    failed: int = 0
    cost: float | None = None
    cost_from: str = ""
    relevant: dict[str, Any] = field(default_factory=dict)  # relevant_summary
    calibration: dict[str, Any] | None = None
    refused: str | None = None  # why GOLDEN was not written (judge.min_kappa)
    incomplete: str | None = None  # what judging left undone (pipeline/judge.shortfall)
    written: bool = False

    @property
    def exit_code(self) -> ExitCode:
        """3 when judging left work undone, 1 when judge.min_kappa refused the labels, else 0."""
        if self.incomplete is not None:
            return ExitCode.INTERNAL
        return ExitCode.REGRESSION if self.refused is not None else ExitCode.OK


@dataclass(frozen=True)
class Draft:
    """The draft as read: its documents, queries and manifest steps."""

    path: Path
    docs: list[CorpusDoc]
    queries: list[DraftQuery]
    steps: list[dict[str, Any]]

    def golden(self) -> GoldenSet:
        """Every query of the draft as a GoldenSet (judged or not), to rank."""
        return GoldenSet(
            source=str(self.path),
            format="native",
            doc_ids=[d.id for d in self.docs],
            doc_texts=[d.embedded for d in self.docs],
            query_ids=[q.id for q in self.queries],
            query_texts=[q.text for q in self.queries],
            qrels={q.id: dict(q.relevant) for q in self.queries},
        )


@dataclass
class PoolEntry:
    """One pooled (query, document): the retrievers that ranked it (label -> rank)."""

    query_id: str
    doc_id: str
    retrieved_by: dict[str, int] = field(default_factory=dict)

    @property
    def best_rank(self) -> int | None:
        ranks = [r for label, r in self.retrieved_by.items() if label != SOURCE]
        return min(ranks) if ranks else None


def parse_retrievers(text: str) -> list[str]:
    """``--retrievers dense,bm25`` -> the names, in POOL_RETRIEVERS' order; InputError for an
    unknown or no name."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in POOL_RETRIEVERS]
    if unknown or not names:
        raise InputError(
            f"--retrievers {text!r}: name one or more of {', '.join(POOL_RETRIEVERS)}, "
            "comma-separated"
        )
    return [n for n in POOL_RETRIEVERS if n in names]


def pool_config(req: GoldenJudgeRequest) -> Config:
    """The config file with DRAFT as its golden set and exactly the indexes the pool needs
    enabled (exact search always: a config has a dense index; BM25 with bm25 or hybrid; the
    hybrid fused with exact search; hnsw and the typed indexes off), without its gate and
    sample (nothing is gated or sampled here); then ``--set`` and the rest applied. The config
    as written is checked first: its own problems are refused as every command refuses them."""
    configured(req.config, req.overrides)
    data = raw_config(req.config)
    wanted = set(req.retrievers)
    indexes = {k: v for k, v in (data.get("indexes") or {}).items() if isinstance(v, dict)}
    switched = {
        "exact": True,
        "hnsw": False,
        "bm25": bool(wanted & {"bm25", "hybrid"}),
        "hybrid": "hybrid" in wanted,
    }
    for name in {*indexes, *switched}:
        indexes[name] = {**indexes.get(name, {}), "enabled": switched.get(name, False)}
    if "hybrid" in wanted:
        indexes["hybrid"]["dense"] = "exact"
    data = {k: v for k, v in data.items() if k not in ("gate", "sample")}
    data["golden_set"] = {"path": str(req.draft.resolve()), "format": "native"}
    data["indexes"] = indexes
    return configured(req.config, req.overrides, data)


def _judge_settings(cfg: Config, config: Path | None) -> JudgeConfig:
    if cfg.judge is None:
        where = str(config) if config is not None else "(the built-in defaults)"
        raise ConfigError(
            f"the config {where} has no judge: section: add one (judge: {{name: MODEL, "
            f"base_url: URL}}; see {docs_page('how-to/annotate-and-judgments', JUDGE_SECTION)})"
        )
    return cfg.judge


def _declare(req: GoldenJudgeRequest, cfg: Config, judge: JudgeConfig) -> None:
    """DRAFT (the config's golden set now), the config, its stores, the human labels and the
    prompt are read; GOLDEN is written whole, and the caches."""
    reads: list[Input] = [Input("the draft (DRAFT)", req.draft, tree=True)]
    reads += config_inputs(cfg, req.config)
    if req.calibrate is not None:
        reads.append(Input("the human labels (--calibrate)", req.calibrate, req.calibrate.is_dir()))
    if judge.prompt != jp.UMBRELA:
        reads.append(Input("the prompt (judge.prompt)", Path(judge.prompt)))
    writes = [Output("--out", req.out, "tree"), *cache_output(cfg)]
    guard(Declared(COMMAND, unique(reads), writes))


def _check_out(out: Path) -> None:
    """GOLDEN must be new (or an empty directory) in a writable place: said before any work."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"--out {out}: exists and is not an empty directory (give a new one)")
    check_writable_dir(out.parent, "the golden set (--out)")


def read_draft_dir(draft: Path) -> Draft:
    """DRAFT's documents, queries and manifest; InputError naming what is wrong (a grade or a
    source document that names no document of the corpus)."""
    if not draft.is_dir():
        raise InputError(f"DRAFT {draft}: not a directory (give a draft: a golden-set directory)")
    docs = read_corpus(draft)
    queries = read_draft(draft)
    if not queries:
        raise InputError(f"DRAFT {draft}: no query in {draft / 'queries.jsonl'}")
    known = {d.id for d in docs}
    problems = []
    for q in queries:
        for d in [*q.relevant, *_source_docs(q)]:
            if d not in known:
                problems.append(f"query {q.id!r} names document {d!r}, which the corpus lacks")
    if problems:
        shown = "; ".join(problems[:5]) + (f" (and {len(problems) - 5} more)" * (len(problems) > 5))
        raise InputError(f"{draft / 'queries.jsonl'}: {shown}")
    return Draft(draft, docs, queries, read_manifest(draft))


def _source_docs(q: DraftQuery) -> list[str]:
    docs = (q.generated or {}).get("source_docs") or []
    return [str(d) for d in docs]


def pool(
    golden: GoldenSet,
    rankings: Mapping[str, SearchResult],
    k: int,
    sources: Mapping[str, Sequence[str]],
) -> tuple[list[PoolEntry], dict[str, int]]:
    """The pool: per query (in order), the top ``k`` of each ranking (label -> ranking) and the
    query's source documents, each pair once (in the order first pooled); and how many pairs
    each label put in, ``source_outside`` the source documents in no ranking's top k, ``all``
    the pool's size."""
    entries: dict[tuple[str, str], PoolEntry] = {}
    counts = dict.fromkeys([*rankings, SOURCE, "source_outside"], 0)
    for qi, q in enumerate(golden.query_ids):
        for label, ranking in rankings.items():
            for rank, d in enumerate(ranking.names(qi, golden.doc_ids, k), start=1):
                entries.setdefault((q, d), PoolEntry(q, d)).retrieved_by[label] = rank
                counts[label] += 1
        for d in dict.fromkeys(sources.get(q, ())):
            entry = entries.setdefault((q, d), PoolEntry(q, d))
            counts["source_outside"] += not entry.retrieved_by  # in no ranking's top k
            entry.retrieved_by[SOURCE] = 0
            counts[SOURCE] += 1
    counts["all"] = len(entries)
    return list(entries.values()), counts


def _pairs(draft: Draft, golden: GoldenSet, entries: list[PoolEntry]) -> list[jp.Pair]:
    """The pooled pairs the draft does not grade yet, with their texts and label records."""
    graded = {q.id: q.relevant for q in draft.queries}
    text = dict(zip(golden.query_ids, golden.query_texts, strict=True))
    out = []
    for e in entries:
        if is_judged(graded[e.query_id].get(e.doc_id, -1)):
            continue
        document = golden.doc_texts[golden.doc_index[e.doc_id]]
        record = {
            "query_id": e.query_id,
            "doc_id": e.doc_id,
            "best_rank": e.best_rank,
            "retrieved_by": dict(e.retrieved_by),
        }
        out.append(jp.Pair(e.query_id, e.doc_id, text[e.query_id], document, record))
    return out


def golden_judge_command(
    req: GoldenJudgeRequest, *, progress: ProgressBars = no_bars
) -> GoldenJudgeOutcome:
    """`evalret golden judge` (module docstring)."""
    if req.k < 1:
        raise InputError(f"--k {req.k}: give 1 or more")
    cfg = pool_config(req)
    judge = _judge_settings(cfg, req.config)
    if judge.min_kappa is not None and req.calibrate is None:
        raise ConfigError(
            f"judge.min_kappa is {judge.min_kappa}: give --calibrate HUMAN_LABELS (the golden "
            "set is written only when the judge agrees with humans that well)"
        )
    _declare(req, cfg, judge)
    _check_out(req.out)
    draft = read_draft_dir(req.draft)
    golden = draft.golden()
    scale = parse_scale(judge.scale)
    humans = human_pairs(req.calibrate, scale) if req.calibrate is not None else []
    cache = jp.AnswerCache.of(cfg)
    try:
        cache.check()  # a file there that is not evalret's answer cache: exit 2, untouched
        with progress() as factory:
            entries, pooled = _rank_and_pool(req, cfg, draft, golden, factory)
            pairs = _pairs(draft, golden, entries)
            n_out = len(pairs)
            known = {(p.query_id, p.doc_id) for p in pairs}
            pairs += [p for p, _ in humans if (p.query_id, p.doc_id) not in known]
            plan = jp.make_plan(pairs, judge, req.votes or judge.votes, cache)
            figures = jp.dry_run(plan, judge)
            outcome = GoldenJudgeOutcome(
                figures,
                req.out,
                req.dry_run,
                len(golden.query_ids),
                req.k,
                pooled,
                kept=len(entries) - n_out,
                to_judge=n_out,
            )
            if req.dry_run:
                return outcome
            advance = factory("judging", len(plan.to_ask)) if factory is not None else None
            judged = jp.judge_plan(plan, judge, cache, advance)
    finally:
        cache.close()
    outcome.incomplete = jp.shortfall(judged, jp.cache_path(cfg) if cfg.cache.enabled else None)
    return _finish(req, cfg, draft, plan, judged, outcome, n_out, humans)


def _rank_and_pool(
    req: GoldenJudgeRequest, cfg: Config, draft: Draft, golden: GoldenSet, factory: Any
) -> tuple[list[PoolEntry], dict[str, int]]:
    """Rank every draft query with the retrievers asked for, and pool their top k with the
    synthetic queries' source documents."""
    from evalret.pipeline.evaluate import rank_queries

    needed = {INDEX_OF[r] for r in req.retrievers}
    if "hybrid" in needed:
        needed |= {"exact", "bm25"}
    rankings = rank_queries(cfg, golden, req.k, factory, needed)
    chosen = {r: rankings[INDEX_OF[r]] for r in req.retrievers}
    sources = {q.id: _source_docs(q) for q in draft.queries}
    return pool(golden, chosen, req.k, sources)


def _finish(
    req: GoldenJudgeRequest,
    cfg: Config,
    draft: Draft,
    plan: jp.Plan,
    judged: jp.Judged,
    outcome: GoldenJudgeOutcome,
    n_out: int,
    humans: list[tuple[jp.Pair, int]],
) -> GoldenJudgeOutcome:
    """The outcome's figures, the calibration, and GOLDEN written when the run is complete and
    the calibration (if any) passes."""
    judge = _judge_settings(cfg, req.config)
    labels = judged.labels(plan)
    outcome.asked, outcome.unparseable, outcome.failed = (
        judged.asked,
        judged.unparseable,
        len(judged.failed),
    )
    outcome.cost, outcome.cost_from = jp.spent(judge, judged, outcome.plan)
    position = {(p.query_id, p.doc_id): i for i, p in enumerate(plan.pairs)}
    if humans:
        by_pair = {(p.query_id, p.doc_id): jp.vote_grade(v) for p, v, _ in labels}
        human = {(p.query_id, p.doc_id): g for p, g in humans}
        outcome.calibration = calibration(human, by_pair, parse_scale(judge.scale))
        outcome.refused = below_min(judge, outcome.calibration)
    if outcome.incomplete is not None or outcome.refused is not None:
        return outcome  # a verdict (GOLDEN) only from a complete run
    grades = {
        (p.query_id, p.doc_id): jp.vote_grade(v)
        for p, v, _ in labels
        if position[(p.query_id, p.doc_id)] < n_out
    }
    source = llm_source(plan.model, plan.prompt.hash)
    queries = graded_queries(draft.queries, grades, source)
    outcome.relevant = relevant_summary(queries, cfg.relevance_level)
    step = _step(req, cfg, plan, outcome)
    write_draft(req.out, draft.docs, queries, [*draft.steps, step])
    outcome.written = True
    return outcome


def graded_queries(
    queries: Sequence[DraftQuery], grades: Mapping[tuple[str, str], int], source: str
) -> list[DraftQuery]:
    """The draft's queries with the judge's ``grades`` ((query, doc) -> grade) added to their
    ``relevant`` and ``source`` (the judge's) to their ``sources``; grades already there kept."""
    relevant: dict[str, dict[str, int]] = {q.id: dict(q.relevant) for q in queries}
    sources: dict[str, dict[str, str]] = {q.id: dict(q.sources) for q in queries}
    for (q, d), grade in grades.items():
        if not is_judged(relevant[q].get(d, -1)):
            relevant[q][d] = grade
            sources[q][d] = source
    return [replace(q, relevant=relevant[q.id], sources=sources[q.id]) for q in queries]


def relevant_summary(queries: Sequence[DraftQuery], relevance_level: int) -> dict[str, Any]:
    """How many relevant documents the graded queries have: per query (mean, median, max), the
    queries with none and with several; of the synthetic queries (those with source documents),
    the relevant source documents and the others, those whose only relevant documents are their
    sources, those with a relevant document beyond them, and those whose source is not relevant."""
    counts, source_rel, other_rel = [], 0, 0
    only_source = beyond = source_not = synthetic = 0
    for q in queries:
        rel = {d for d, g in q.relevant.items() if is_relevant(g, relevance_level)}
        counts.append(len(rel))
        src = set(_source_docs(q))
        if not src:
            continue
        synthetic += 1
        source_rel += len(rel & src)
        other_rel += len(rel - src)
        only_source += bool(rel) and rel <= src
        beyond += bool(rel - src)
        source_not += not (rel & src)
    return {
        "queries": len(counts),
        "relevant": sum(counts),
        "per_query_mean": round(statistics.fmean(counts), 4) if counts else 0.0,
        "per_query_median": statistics.median(counts) if counts else 0,
        "per_query_max": max(counts, default=0),
        "several_relevant": sum(c > 1 for c in counts),
        "without_relevant": sum(c == 0 for c in counts),
        "synthetic": {
            "queries": synthetic,
            "source_relevant": source_rel,
            "other_relevant": other_rel,
            "source_only": only_source,
            "beyond_source": beyond,
            "source_not_relevant": source_not,
        },
    }


def _inputs(req: GoldenJudgeRequest, judge: JudgeConfig) -> list[dict[str, str]]:
    """The files the step read, with their sha256."""
    files = [
        ("the draft's corpus (DRAFT)", req.draft / "corpus.jsonl"),
        ("the draft's queries (DRAFT)", req.draft / "queries.jsonl"),
    ]
    if req.config is not None:
        files.append(("the config (--config)", req.config))
    if judge.prompt != jp.UMBRELA:
        files.append(("the prompt (judge.prompt)", Path(judge.prompt)))
    if req.calibrate is not None and req.calibrate.is_file():
        files.append(("the human labels (--calibrate)", req.calibrate))
    return [{"role": r, "path": str(p), "sha256": sha256_file(p)} for r, p in files]


def _step(
    req: GoldenJudgeRequest, cfg: Config, plan: jp.Plan, outcome: GoldenJudgeOutcome
) -> dict[str, Any]:
    """The manifest step of this command (counts only: never a query's text)."""
    judge = _judge_settings(cfg, req.config)
    return {
        "command": COMMAND,
        "seed": None,
        "inputs": _inputs(req, judge),
        "k": req.k,
        "retrievers": list(req.retrievers),
        "model": cfg.model.name,
        "judge": {
            "source": llm_source(plan.model, plan.prompt.hash),
            "model": plan.model,
            "endpoint": plan.endpoint,
            "prompt": plan.prompt.source,
            "prompt_hash": plan.prompt.hash,
            "votes": plan.votes,
            "scale": str(parse_scale(judge.scale)),
        },
        "counts": {
            "queries": outcome.queries,
            "pooled": outcome.pooled,
            "kept": outcome.kept,
            "to_judge": outcome.to_judge,
            "cached": outcome.plan["cached"],
            "sent": outcome.asked,
            "failed": outcome.failed,
            "unparseable": outcome.unparseable,
            "relevant": outcome.relevant,
        },
    }


__all__ = [
    "GoldenJudgeOutcome",
    "GoldenJudgeRequest",
    "golden_judge_command",
    "graded_queries",
    "parse_retrievers",
    "pool",
    "pool_config",
    "relevant_summary",
]
