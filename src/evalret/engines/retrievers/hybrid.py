"""The hybrid: reciprocal-rank fusion of the BM25 ranking with a dense one."""

from __future__ import annotations

from typing import Any

from evalret.core.ranking import SearchResult, rrf_fuse
from evalret.data.config import Config
from evalret.engines.retrievers.base import BaseRetriever, SearchJob


class HybridRetriever(BaseRetriever):
    """Fuses the first ``candidates`` of the bm25 ranking and of the configured dense one (both
    run before it)."""

    name = "hybrid"
    needs_vectors = False

    def __init__(self, config: Config) -> None:
        self.config = config.indexes.hybrid
        self.enabled = self.config.enabled
        self.parts = ["bm25", self.config.dense]

    def params(self) -> dict[str, Any]:
        return {
            "type": "reciprocal rank fusion",
            **self.config.model_dump(exclude={"enabled"}),
            "of": list(self.parts),
        }

    def input_depth(self) -> int:
        return self.config.candidates

    def retrieve(self, job: SearchJob) -> SearchResult:
        with job.timed("fuse_hybrid"):
            return rrf_fuse(
                [job.earlier[part] for part in self.parts],
                self.config.rrf_k,
                self.config.candidates,
                job.depth,
                job.rank,
            )
