"""A rerank stage as an index (``indexes.<name>: {type: rerank, of: INDEX, k: 100,
reranker: {...}}``): the first ``k`` documents of index ``of`` (its first stage, which runs
before it, at least ``k`` deep) scored by the reranker (engines/rerankers.py) and ranked by
those scores under the tie rule. Its ranking holds those ``k`` candidates only: ranks past ``k``
are empty, as a deployed two-stage system returns no more. A candidate the corpus lacks (a run
file's or a Python retriever's unknown document) has no text to score and is left out.

The report's ``rerank`` section (pipeline/rerank_report.py) sets it beside its first stage: the
candidate ceiling, the oracle reranker and the change each stage made.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalret.core.ranking import SearchResult, empty_result, top_candidates
from evalret.data.config import Config, RerankIndexConfig
from evalret.engines.retrievers.base import BaseRetriever, SearchJob


def candidates(first: SearchResult, k: int, n_docs: int) -> list[np.ndarray]:
    """Per query, the first stage's first ``k`` documents the corpus has, in its order."""
    top = first.ids[:, :k]
    return [row[(row >= 0) & (row < n_docs)] for row in top]


class RerankRetriever(BaseRetriever):
    """Reranks the first ``k`` of its first stage (see the module docstring)."""

    needs_vectors = False

    def __init__(self, name: str, settings: RerankIndexConfig, config: Config) -> None:
        self.name = name
        self.settings = settings
        self.enabled = settings.enabled
        self.stage = (settings.of, settings.k)  # pipeline/rerank_report.py reads it
        # the rerankers' HTTP, SQLite and model code loads only when a rerank index is configured
        from evalret.engines.rerankers import ScoreCache, make_reranker

        key = f"indexes.{name}.reranker"
        self.reranker = (
            make_reranker(key, settings.reranker, config.code_dir) if settings.enabled else None
        )
        self.cache = ScoreCache.of(config.cache)
        self.note: str | None = None

    def params(self) -> dict[str, Any]:
        identity = self.reranker.identity() if self.reranker is not None else {}
        return {
            "type": "rerank",
            "of": self.settings.of,
            "k": self.settings.k,
            "reranker": identity,
        }

    def input_depth(self) -> int:
        return self.settings.k

    def cache_notes(self) -> dict[str, str]:
        return {f"rerank_{self.name}": self.note} if self.note is not None else {}

    def retrieve(self, job: SearchJob) -> SearchResult:
        assert self.reranker is not None
        first = job.earlier[self.settings.of]
        pools = candidates(first, self.settings.k, len(job.doc_ids))
        queries = [
            (text, [job.doc_texts[d] for d in pool.tolist()])
            for text, pool in zip(job.query_texts, pools, strict=True)
        ]
        from evalret.engines.rerankers import scores_for

        with job.timed(f"rerank_{self.name}"):
            scored = scores_for(self.reranker, self.cache, queries)
        if self.reranker.cached:
            where = self.cache.path if self.cache.path is not None else "off"
            self.note = (
                f"{scored.from_cache} scores from the cache, {scored.computed} computed ({where})"
            )
            if scored.unusable:
                self.note += (
                    f"; {scored.unusable} cached scores were not finite numbers, scored again"
                )
        out = empty_result(len(pools), job.depth)
        for q, (pool, scores) in enumerate(zip(pools, scored.scores, strict=True)):
            ids, values = top_candidates(pool, np.asarray(scores), job.depth, job.rank)
            out.ids[q], out.scores[q] = ids, values
        return out
