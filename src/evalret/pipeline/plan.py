"""`evalret run --dry-run`: what a run would embed, and what it would cost, before anything is
embedded or sent. The golden set and the embedding cache are read; no model is loaded and no
request is made."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evalret.data.config import ModelConfig
from evalret.data.goldenset import load_golden_set
from evalret.data.schema import EmbeddingPlan, PlannedKind
from evalret.engines.embedders import capabilities, open_embedder
from evalret.engines.retrievers import make_retrievers
from evalret.engines.st_embedder import Embedder, Kind
from evalret.engines.tokens import ESTIMATE, TokenCounter, estimate_tokens, token_counter
from evalret.pipeline.configs import run_config
from evalret.pipeline.evaluate import queries_to_evaluate


def _fed(backend: Embedder, model: ModelConfig, texts: Sequence[str], kind: Kind) -> list[str]:
    """``texts`` as the backend would send them: after their prefix or named prompt."""
    feed = getattr(backend, "prefixed", None) or getattr(backend, "fed", None)
    if feed is not None:
        fed: list[str] = feed(texts, kind)
        return fed
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
    plan_requests = getattr(backend, "requests", None) if capabilities(model).api else None
    requests = plan_requests(fed) if plan_requests is not None else None
    return PlannedKind(
        texts=len(texts),
        cached=int(cached.sum()),
        to_embed=len(todo),
        tokens=tokens,
        requests=requests,
        cost=round(tokens * price / 1e6, 6) if price is not None else None,
    )


def dry_run(config: Path | None, no_cache: bool = False) -> EmbeddingPlan:
    """What `evalret run` on ``config`` would embed: per kind, the texts, how many the cache
    holds, the rest and their tokens and cost. Reads the golden set and the cache only."""
    cfg = run_config(config, no_cache)
    golden = queries_to_evaluate(load_golden_set(cfg.golden_set, cfg.relevance_level), cfg)
    needs_vectors = any(r.needs_vectors for r in make_retrievers(cfg) if r.enabled)
    opened = open_embedder(cfg.model, cfg.cache)
    backend = opened.backend
    exact = capabilities(cfg.model).counts_tokens  # tiktoken knows OpenAI's models only
    counter = token_counter(cfg.model.name) if exact else TokenCounter(estimate_tokens, ESTIMATE)
    kinds: dict[Kind, list[str]] = {
        "document": golden.doc_texts if needs_vectors else [],
        "query": golden.query_texts if needs_vectors else [],
    }
    planned = {}
    for kind, texts in kinds.items():
        cached = (
            opened.cached.cached(texts, kind)
            if opened.cached is not None and texts
            else np.zeros(len(texts), dtype=bool)
        )
        planned[kind] = _plan_kind(backend, cfg.model, texts, kind, cached, counter)
    return EmbeddingPlan(
        model=str(backend.identity().get("source")),
        provider=cfg.model.provider,
        endpoint=getattr(backend, "endpoint", None) if capabilities(cfg.model).api else None,
        cache=str(opened.root) if opened.root is not None else None,
        tokenizer=counter.method,
        tokenizer_note=counter.note,
        price_per_million_tokens=cfg.model.price,
        document=planned["document"],
        query=planned["query"],
    )
