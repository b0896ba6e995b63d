"""What a run embeds, stated once (``select``), and `evalret run --dry-run` (``dry_run``).

**The rule.** A run evaluates the queries scored under ``queries_without_relevant``; with a
sample (config ``sample``, whose ``queries`` `--sample N` sets) it evaluates the drawn queries and
searches the documents kept for them (pipeline/sample.py, core/sampling.py: the documents judged
for the drawn queries, then seeded distractors up to ``sample.documents``; the whole corpus
without it). When an enabled retriever needs vectors, it embeds exactly those documents and those
queries, in that order; otherwise nothing.

Every path that picks texts goes through ``select`` and ``Selection.texts``: the run's load and
embed stages (pipeline/evaluate.py), `evalret embed` (all of it or one shard) and the dry run
below. ``held`` says which of them the cache already holds, for the dry run and `embed` alike.
The shape is pip-tools' ``diff()`` beside ``sync(dry_run=...)``: one function says what would be
done, and doing it or only showing it both start from its answer.

The dry run reads the golden set and the embedding cache; no model is loaded and no request is
made.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from evalret.core.slices import Slice
from evalret.data.config import (
    Config,
    HttpRerankerConfig,
    ModelConfig,
    PythonRerankerConfig,
    RerankIndexConfig,
)
from evalret.data.goldenset import GoldenSet, load_golden_set
from evalret.data.schema import EmbeddingPlan, PlannedKind
from evalret.engines.retrievers import Retriever, make_retrievers
from evalret.pipeline.configs import run_config
from evalret.pipeline.sample import Sampled, draw_sample, with_sample

if TYPE_CHECKING:  # the embedders and the settings are imported by the dry run (not by a run)
    from evalret.data.overrides import Override
    from evalret.engines.cache import CachedEmbedder
    from evalret.engines.protocols import ApiEmbedder, Embedder, Kind
    from evalret.engines.tokens import TokenCounter

KINDS: tuple[Kind, ...] = ("document", "query")
Timed = Callable[[str], AbstractContextManager[None]]


def _untimed(_: str) -> AbstractContextManager[None]:
    return contextlib.nullcontext()


def queries_to_evaluate(full: GoldenSet, config: Config) -> GoldenSet:
    """The queries a run scores under ``queries_without_relevant``; GoldenSetError when none is left
    (a run would gate nothing)."""
    return full.scored(config.queries_without_relevant)


def needs_vectors(retrievers: Sequence[Retriever]) -> bool:
    """Whether an enabled retriever searches vectors (else a run embeds nothing)."""
    return any(r.needs_vectors for r in retrievers if r.enabled)


@dataclass(frozen=True)
class Selection:
    """The golden set as read (``full``) and what a run evaluates of it: the scored queries (of
    the sample, when sampled) and the documents searched, their slices, how the sample was
    drawn."""

    full: GoldenSet
    golden: GoldenSet
    slices: list[Slice]
    sampled: Sampled | None = None  # config ``sample``: what was drawn

    def texts(self, retrievers: Sequence[Retriever]) -> dict[Kind, list[str]]:
        """The document and query texts a run embeds (the module's rule): the evaluated ones,
        none when no enabled retriever among ``retrievers`` needs vectors."""
        if not needs_vectors(retrievers):
            return {"document": [], "query": []}
        return {"document": list(self.golden.doc_texts), "query": list(self.golden.query_texts)}


def select(config: Config, full: GoldenSet, timed: Timed = _untimed) -> Selection:
    """What a run on ``config`` evaluates of ``full``: the scored queries and their slices, then
    the configured sample drawn (timed as "sample")."""
    golden = queries_to_evaluate(full, config)
    slices = golden.slices(config.slices)
    if config.sample is None:
        return Selection(full, golden, slices)
    with timed("sample"):
        sampled = draw_sample(config.sample, golden, slices)
    return Selection(full, sampled.golden, sampled.slices, sampled)


def run_selection(config: Config, full: GoldenSet | None = None) -> Selection:
    """What `evalret run` on ``config`` evaluates of its golden set (``full``, else read)."""
    if full is None:
        full = load_golden_set(config.golden_set, config.relevance_level)
    return select(config, full.with_labels(config.gate.labels))


def texts_to_embed(config: Config, selection: Selection | None = None) -> dict[Kind, list[str]]:
    """The document and query texts `evalret run` on ``config`` embeds (its sample applied):
    the golden set read (``selection``: what run_selection gave), its retrievers set up,
    nothing embedded."""
    chosen = selection if selection is not None else run_selection(config)
    return chosen.texts(make_retrievers(config))


def held(cached: CachedEmbedder | None, texts: Sequence[str], kind: Kind) -> np.ndarray:
    """bool [n]: which ``texts`` of ``kind`` the cache holds (none with the cache off)."""
    if cached is None or not texts:
        return np.zeros(len(texts), dtype=bool)
    return cached.cached(texts, kind)


def fed_prefix(backend: Embedder, model: ModelConfig, kind: Kind) -> str:
    """What the backend puts before a text of ``kind``: its prefix, or its named prompt."""
    return _fed(backend, model, [""], kind)[0]


def _fed(backend: Embedder, model: ModelConfig, texts: Sequence[str], kind: Kind) -> list[str]:
    """``texts`` as the backend would feed them to the model: after their prefix or named
    prompt (its ``fed``, engines/protocols.FeedsText)."""
    from evalret.engines.protocols import FeedsText

    if isinstance(backend, FeedsText):
        return backend.fed(texts, kind)
    prefix = model.query_prefix if kind == "query" else model.document_prefix
    return [prefix + t for t in texts]


def _plan_kind(
    backend: Embedder,
    model: ModelConfig,
    texts: Sequence[str],
    kind: Kind,
    cached: np.ndarray,
    counter: TokenCounter,
) -> PlannedKind:
    todo = [t for t, hit in zip(texts, cached, strict=True) if not hit]
    fed = _fed(backend, model, todo, kind)
    price = model.price
    tokens = counter.total(fed)
    api = _api(backend, model)
    requests = api.requests(fed) if api is not None else None
    return PlannedKind(
        texts=len(texts),
        cached=int(cached.sum()),
        to_embed=len(todo),
        tokens=tokens,
        requests=requests,
        cost=round(tokens * price / 1e6, 6) if price is not None else None,
    )


def _api(backend: Embedder, model: ModelConfig) -> ApiEmbedder | None:
    """``backend`` when ``model`` declares an API (engines/embedders.Capabilities: it is then an
    ``ApiEmbedder``, checked when it was made), else None."""
    from evalret.engines.embedders import capabilities
    from evalret.engines.protocols import ApiEmbedder

    return backend if capabilities(model).api and isinstance(backend, ApiEmbedder) else None


def _counter(model: ModelConfig) -> TokenCounter:
    """How the dry run counts tokens: tiktoken for OpenAI's models, else the estimate."""
    from evalret.engines.embedders import capabilities
    from evalret.engines.tokens import ESTIMATE, TokenCounter, estimate_tokens, token_counter

    if capabilities(model).counts_tokens:  # tiktoken knows OpenAI's models only
        return token_counter(model.name)
    return TokenCounter(estimate_tokens, ESTIMATE)


def cold_cost(model: ModelConfig, backend: Embedder, texts: Mapping[Kind, Sequence[str]]) -> float:
    """What embedding every one of ``texts`` costs with nothing cached: tokens counted as the
    dry run counts them, times the model's price (``gate.max_cost_per_run``)."""
    counter = _counter(model)
    costs = [
        _plan_kind(backend, model, t, kind, np.zeros(len(t), dtype=bool), counter).cost or 0.0
        for kind, t in texts.items()
    ]
    return round(sum(costs), 6)


def dry_run(
    config: Path | None,
    no_cache: bool = False,
    sample: int | None = None,
    overrides: Sequence[Override] = (),
) -> EmbeddingPlan:
    """What `evalret run` on ``config`` (with `--sample` ``sample`` and the `--set` settings
    ``overrides``) would embed: per kind, the texts, how many the cache holds, the rest and their
    tokens and cost. Reads the golden set and the cache only."""
    from evalret.engines.embedders import open_embedder

    cfg = with_sample(run_config(config, no_cache, overrides), sample)
    kinds = texts_to_embed(cfg)
    opened = open_embedder(cfg.model, cfg.cache)
    backend = opened.backend
    counter = _counter(cfg.model)
    planned = {}
    for kind, texts in kinds.items():
        cached = held(opened.cached, texts, kind)
        planned[kind] = _plan_kind(backend, cfg.model, texts, kind, cached, counter)
    return EmbeddingPlan(
        model=str(backend.identity().get("source")),
        provider=cfg.model.provider,
        endpoint=api.endpoint if (api := _api(backend, cfg.model)) is not None else None,
        cache=str(opened.root) if opened.root is not None else None,
        tokenizer=counter.method,
        tokenizer_note=counter.note,
        price_per_million_tokens=cfg.model.price,
        price_key=cfg.model.price_key,
        document=planned["document"],
        query=planned["query"],
        rerank=_rerank_plan(cfg, len(kinds["query"])),
    )


def _rerank_plan(cfg: Config, n_queries: int) -> list[str]:
    """What each enabled rerank index would ask: a line each (its candidates are known only
    once its first stage has run, so the figures are upper bounds)."""
    stages = {
        n: t for n, t in cfg.indexes.typed.items() if isinstance(t, RerankIndexConfig) and t.enabled
    }
    if not stages:
        return []
    if not n_queries:  # nothing embedded: count the evaluated queries
        full = load_golden_set(cfg.golden_set, cfg.relevance_level)
        n_queries = len(select(cfg, full.with_labels(cfg.gate.labels)).golden.query_ids)
    out = []
    for name, t in stages.items():
        r = t.reranker
        pairs = f"up to {n_queries * t.k} (query, document) pairs of {n_queries} queries"
        if isinstance(r, HttpRerankerConfig):
            from evalret.engines.openai_api import endpoint_of

            what = f"{pairs}, at most {n_queries} requests to {endpoint_of(r.base_url)}/rerank"
        elif isinstance(r, PythonRerankerConfig):
            what = f"{pairs}, {n_queries} calls of {r.callable}"
        else:
            what = f"{pairs}, scored by the CrossEncoder {r.path}"
        cached = "" if r.provider == "python" else "; fewer where the score cache holds them"
        out.append(f"rerank index {name} of {t.of} (top {t.k}): {what}{cached}")
    return out
