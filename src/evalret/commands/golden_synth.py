"""`evalret golden synth`: synthetic queries written by a chat model for documents drawn to cover
the corpus, filtered, and written as a draft (data/goldenset/draft.py).

The documents, examples and filters are pipeline/synth_filters.py's, the prompt, answers, cache
and generation pipeline/synth.py's, the judge's check pipeline/judge.py's. When CORPUS is a
draft or golden-set directory, its queries are kept first, unchanged, its manifest's steps too,
and the synthetic queries appended (ids ``syn-0001``... clashing with none of its ids). Every
synthetic query carries ``origin: synthetic``, ``generated`` {model, prompt_hash, source_docs,
style}, its ``shape:*`` tags (core/query_shapes.py) and ``too-easy`` where tagged; ``relevant``
stays ``{}`` (`evalret golden judge` writes grades). ``--n`` is the number of queries asked
for: the filters may leave fewer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalret.core.duplicates import NEAR_DUPLICATE_JACCARD
from evalret.core.query_shapes import shape_tags
from evalret.core.relevance import is_relevant
from evalret.data.atomic import check_writable_dir, sha256_file
from evalret.data.config import ChatEndpointConfig, Config, JudgeConfig, SynthConfig
from evalret.data.goldenset.draft import (
    MANIFEST,
    CorpusDoc,
    DraftQuery,
    corpus_file,
    read_corpus,
    read_draft,
    read_manifest,
    write_draft,
)
from evalret.data.overrides import Override, configured
from evalret.data.paths import Declared, Input, Output, cache_output, config_inputs, guard, unique
from evalret.data.querylog import LogFormat
from evalret.errors import ConfigError, IncompleteError, InputError
from evalret.pipeline import judge as jp
from evalret.pipeline import synth as sp
from evalret.pipeline import synth_filters as sf
from evalret.pipeline.progress import ProgressBars, no_bars

COMMAND = "golden synth"
ID_PREFIX = "syn-"


@dataclass(frozen=True, kw_only=True)
class SynthRequest:
    """What the command line asked for (``synth_command``'s one argument, every field named)."""

    corpus: Path
    n: int
    out: Path
    config: Path | None = None
    log: Path | None = None
    log_format: LogFormat = field(default_factory=LogFormat)
    dry_run: bool = False
    seed: int = 0
    overrides: Sequence[Override] = ()


@dataclass
class SynthOutcome:
    """What `evalret golden synth` did (or, with --dry-run, would do): plain values for the
    view (report/synth_view.py)."""

    out: Path
    dry_run: bool
    model: str
    endpoint: str
    prompt: str
    prompt_hash: str
    documents: int
    clusters: int
    counts: dict[str, int] = field(default_factory=dict)
    generation: dict[str, Any] = field(default_factory=dict)  # requests: asked, cached, cost
    judge: dict[str, Any] = field(default_factory=dict)
    examples_dropped_pii: int = 0
    kept: int = 0  # queries of CORPUS kept
    estimated: bool = False  # a dry run that drew no documents (an API model, not cached)


def _judge(cfg: Config, synth: SynthConfig, config: Path | None) -> JudgeConfig | None:
    if not synth.check_answerable:
        return None
    if cfg.judge is None:
        where = str(config) if config is not None else "(the built-in defaults)"
        raise ConfigError(
            f"the config {where} has no judge: section: golden synth asks the judge whether "
            "each source document answers its query (add judge: {name: MODEL, base_url: URL}, "
            "or set synth.check_answerable: false)"
        )
    return cfg.judge


def _declare(req: SynthRequest, cfg: Config, synth: SynthConfig, judge: JudgeConfig | None) -> None:
    reads = [Input("the corpus (--corpus)", req.corpus, req.corpus.is_dir())]
    if req.log is not None:
        reads.append(Input("the log (--log)", req.log))
    reads += config_inputs(cfg, req.config)
    if synth.template is not None:
        reads.append(Input("the prompt (synth.template)", synth.template))
    if judge is not None and judge.prompt != jp.UMBRELA:
        reads.append(Input("the prompt (judge.prompt)", Path(judge.prompt)))
    # the draft's files by name, so that the guard names an input among them (write_draft
    # publishes the directory whole, and refuses one that is not new or empty)
    draft = Output("--out", req.out, "dir", ("corpus.jsonl", "queries.jsonl", MANIFEST))
    writes = [draft, *cache_output(cfg)]
    guard(Declared(COMMAND, unique(reads), writes))


def _check_out(out: Path) -> None:
    """Refuse an --out that write_draft would refuse, before anything is paid for (a dry run
    says so too)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out}: the output must be a new or empty directory")
    check_writable_dir(out.parent, "draft")


def _log_texts(req: SynthRequest, kept: list[DraftQuery]) -> tuple[list[str], str | None]:
    """The log's queries (``--log``, else the draft's ``origin: log`` ones) and the log's sha256."""
    if req.log is None:
        return [q.text for q in kept if q.origin == "log"], None
    from evalret.data.querylog import read_log

    log = read_log(req.log, req.log_format)
    return [e.text for e in log.entries], log.sha256


def _inputs(req: SynthRequest, synth: SynthConfig, log_sha: str | None) -> list[dict[str, Any]]:
    files: list[tuple[str, Path | None]] = [
        ("config", req.config),
        ("corpus", corpus_file(req.corpus)),
        ("template", synth.template),
    ]
    out: list[dict[str, Any]] = [
        {"role": r, "path": str(p), "sha256": sha256_file(p)} for r, p in files if p
    ]
    if req.log is not None:
        out.append({"role": "log", "path": str(req.log), "sha256": log_sha})
    return out


def synth_command(req: SynthRequest, *, progress: ProgressBars = no_bars) -> SynthOutcome:
    """`evalret golden synth` (module docstring)."""
    if req.n < 1:
        raise InputError(f"--n {req.n}: ask for at least one query")
    cfg = configured(req.config, req.overrides)
    synth = cfg.synth or SynthConfig()
    writer = sp.writer_of(cfg)
    judge = _judge(cfg, synth, req.config)
    _declare(req, cfg, synth, judge)
    prompt = sp.load_prompt(synth)
    _check_out(req.out)
    docs = read_corpus(req.corpus)
    if not docs:
        raise InputError(f"{corpus_file(req.corpus)}: the corpus holds no document")
    kept = read_draft(req.corpus) if req.corpus.is_dir() else []
    steps = read_manifest(req.corpus) if req.corpus.is_dir() else []
    log_texts, log_sha = _log_texts(req, kept)
    examples, pii = sf.few_shot(log_texts, synth.examples, req.seed)
    cache = sp.SynthCache.of(cfg)
    answers = jp.AnswerCache.of(cfg)
    try:
        cache.check()
        answers.check()
        with progress() as factory:
            choice = sf.choose(cfg, docs, req.n, req.seed, factory, req.dry_run)
        plan = sp.make_gen_plan(choice.items, prompt, writer, examples, cache)
        outcome = SynthOutcome(
            req.out,
            req.dry_run,
            writer.endpoint.name,
            writer.url,
            prompt.source,
            prompt.hash,
            len(docs),
            choice.clusters,
            examples_dropped_pii=pii,
            kept=len(kept),
        )
        outcome.counts = {"asked": len(choice.items), "two_document": choice.multi}
        outcome.estimated = choice.estimated
        if req.dry_run:
            _dry_run(outcome, plan, judge, answers)
            return outcome
        queries = _generate(cfg, plan, cache, outcome, progress)
        survivors = _filter(cfg, docs, plan, queries, kept, log_texts, outcome)
        survivors = _answerable(cfg, judge, docs, plan, survivors, answers, outcome, progress)
    finally:
        cache.close()
        answers.close()
    written = _queries(docs, plan, survivors, kept)
    outcome.counts["written"] = len(written)
    step = _step(req, cfg, synth, plan, outcome, log_sha)
    write_draft(req.out, docs, [*kept, *written], [*steps, step])
    return outcome


def _dry_run(
    outcome: SynthOutcome, plan: sp.GenPlan, judge: JudgeConfig | None, answers: jp.AnswerCache
) -> None:
    """The requests and cost a run would take: every generation answer the cache lacks, and at
    most one judge check per (query, source document) and vote."""
    from evalret.engines.tokens import token_counter

    todo, cached = sp.to_ask(plan)
    counter = token_counter(plan.writer.endpoint.name)
    tokens_in = counter.total([a.prompt for a in todo])
    tokens_out = counter.count(sp.ASSUMED_ANSWER) * len(todo)
    outcome.generation = {
        "requests": len(todo),
        "cached": cached,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost": _price(plan.writer.endpoint, tokens_in, tokens_out),
        "token_count": counter.method,
    }
    if judge is None:
        return
    pairs = [
        jp.Pair("?", d, sp.ASSUMED_ANSWER, text, {})
        for it in plan.items
        for d, text in zip(it.doc_ids, it.documents, strict=True)
    ]
    jplan = jp.make_plan(pairs, judge, judge.votes, answers)
    figures = jp.dry_run(jplan, judge)
    outcome.judge = {
        "requests": figures["requests"],
        "input_tokens": figures["input_tokens"],
        "output_tokens": figures["output_tokens"],
        "cost": figures["cost"],
        "at_most": True,
    }


def _price(endpoint: ChatEndpointConfig, tokens_in: int, tokens_out: int) -> float | None:
    """What ``tokens_in`` and ``tokens_out`` cost at the endpoint's prices (None without both)."""
    pin, pout = endpoint.price_per_million_input_tokens, endpoint.price_per_million_output_tokens
    if pin is None or pout is None:
        return None
    return round((tokens_in * pin + tokens_out * pout) / 1e6, 6)


def _usage_cost(endpoint: ChatEndpointConfig, usage: Any) -> float | None:
    """The cost from the API's token counts, when every answer had them."""
    if usage is None or not usage.tokens_reported:
        return None
    return _price(endpoint, usage.input_tokens, usage.output_tokens)


def _generate(
    cfg: Config,
    plan: sp.GenPlan,
    cache: sp.SynthCache,
    outcome: SynthOutcome,
    progress: ProgressBars,
) -> list[str | None]:
    todo, _ = sp.to_ask(plan)
    with progress() as factory:
        advance = factory("writing queries", len(todo)) if factory is not None else None
        gen = sp.generate(plan, cache, advance)
    outcome.generation = {
        "requests": gen.asked,
        "cached": gen.cached,
        "failed": len(gen.failed),
        "cost": _usage_cost(plan.writer.endpoint, gen.usage),
    }
    why = sp.shortfall(gen, sp.synth_cache_path(cfg) if cfg.cache.enabled else None)
    if why is not None:
        raise IncompleteError(f"golden synth: {why}; no draft was written")
    outcome.counts["unreadable"] = gen.unreadable
    return gen.queries


@dataclass(frozen=True)
class Survivor:
    """A written query that passed the filters so far: its item, its text, its tags."""

    item: int
    text: str
    too_easy: bool


def _filter(
    cfg: Config,
    docs: Sequence[CorpusDoc],
    plan: sp.GenPlan,
    queries: list[str | None],
    kept: list[DraftQuery],
    log_texts: list[str],
    outcome: SynthOutcome,
) -> list[Survivor]:
    """Duplicates dropped, too-easy queries tagged or dropped (counted in ``outcome``)."""
    synth = cfg.synth or SynthConfig()
    read = [(i, q) for i, q in enumerate(queries) if q is not None]
    dup = sf.duplicates([q for _, q in read], [*(k.text for k in kept), *log_texts])
    read = [x for j, x in enumerate(read) if j not in dup]
    index = {d.id: i for i, d in enumerate(docs)}
    sources = [[index[d] for d in plan.items[i].doc_ids] for i, _ in read]
    easy = sf.too_easy(cfg, [q for _, q in read], sources, docs)
    n_easy = sum(easy)
    outcome.counts |= {
        "duplicates": len(dup),
        "too_easy": n_easy,
        "too_easy_dropped": n_easy if synth.too_easy == "drop" else 0,
    }
    return [
        Survivor(i, q, e)
        for (i, q), e in zip(read, easy, strict=True)
        if not (e and synth.too_easy == "drop")
    ]


def _answerable(
    cfg: Config,
    judge: JudgeConfig | None,
    docs: Sequence[CorpusDoc],
    plan: sp.GenPlan,
    survivors: list[Survivor],
    answers: jp.AnswerCache,
    outcome: SynthOutcome,
    progress: ProgressBars,
) -> list[Survivor]:
    """The survivors whose every source document the judge grades relevant."""
    if judge is None:
        outcome.counts["unanswerable"] = 0
        return survivors
    pairs = [
        jp.Pair(str(s.item), d, s.text, text, {})
        for s in survivors
        for d, text in zip(plan.items[s.item].doc_ids, plan.items[s.item].documents, strict=True)
    ]
    jplan = jp.make_plan(pairs, judge, judge.votes, answers)
    with progress() as factory:
        advance = factory("checking answers", len(jplan.to_ask)) if factory is not None else None
        judged = jp.judge_plan(jplan, judge, answers, advance)
    outcome.judge = {
        "requests": judged.asked,
        "cached": len(jplan.asks) - len(jplan.to_ask),
        "failed": len(judged.failed),
        "unparseable": judged.unparseable,
        "cost": _usage_cost(judge, judged.usage),
    }
    why = jp.shortfall(judged, jp.cache_path(cfg) if cfg.cache.enabled else None)
    if why is not None:
        raise IncompleteError(f"golden synth: {why}; no draft was written")
    relevant: dict[str, list[bool]] = {}
    for pair, votes, _ in judged.labels(jplan):
        ok = is_relevant(jp.vote_grade(votes), cfg.relevance_level)
        relevant.setdefault(pair.query_id, []).append(ok)
    kept = [
        s
        for s in survivors
        if relevant.get(str(s.item), []).count(True) == len(plan.items[s.item].doc_ids)
    ]
    outcome.counts["unanswerable"] = len(survivors) - len(kept)
    return kept


def _queries(
    docs: Sequence[CorpusDoc], plan: sp.GenPlan, survivors: list[Survivor], kept: list[DraftQuery]
) -> list[DraftQuery]:
    """The synthetic queries, with ids clashing with none of ``kept``."""
    taken = {q.id for q in kept}
    tags = shape_tags([s.text for s in survivors], [d.embedded for d in docs])
    out, number = [], 0
    for s, shapes in zip(survivors, tags, strict=True):
        number += 1
        while f"{ID_PREFIX}{number:04d}" in taken:
            number += 1
        item = plan.items[s.item]
        generated = {
            "model": plan.writer.endpoint.name,
            "prompt_hash": plan.prompt.hash,
            "source_docs": list(item.doc_ids),
            "style": item.style,
        }
        extra = ("too-easy",) if s.too_easy else ()
        out.append(
            DraftQuery(
                f"{ID_PREFIX}{number:04d}",
                s.text,
                tags=(*shapes, *extra),
                origin="synthetic",
                generated=generated,
            )
        )
    return out


def _step(
    req: SynthRequest,
    cfg: Config,
    synth: SynthConfig,
    plan: sp.GenPlan,
    outcome: SynthOutcome,
    log_sha: str | None,
) -> dict[str, Any]:
    """The manifest step of this run (counts and settings; never a query's text)."""
    judge = cfg.judge if synth.check_answerable else None
    return {
        "command": COMMAND,
        "seed": req.seed,
        "n": req.n,
        "inputs": _inputs(req, synth, log_sha),
        "counts": {"documents": outcome.documents, "clusters": outcome.clusters}
        | outcome.counts
        | {"examples": len(plan.examples), "examples_dropped_pii": outcome.examples_dropped_pii},
        "model": plan.writer.endpoint.name,
        "embedding_model": cfg.model.name,
        "prompt": plan.prompt.source,
        "prompt_hash": plan.prompt.hash,
        "styles": dict(synth.styles),
        "rules": {
            "clusters": synth.clusters,
            "allocation": synth.allocation,
            "multi_document": synth.multi_document,
            "answer_format": synth.answer_format,
            "temperature": synth.temperature,
            "max_overlap": synth.max_overlap,
            "bm25_margin": synth.bm25_margin,
            "too_easy": synth.too_easy,
            "near_duplicate_jaccard": NEAR_DUPLICATE_JACCARD,
            "judge": None
            if judge is None
            else {
                "model": judge.name,
                "prompt_hash": jp.load_prompt(judge).hash,
                "votes": judge.votes,
                "relevance_level": cfg.relevance_level,
            },
        },
    }
