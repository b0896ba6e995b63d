"""Exact inner-product search over every (eligible) document vector: faiss's flat
inner-product kernel (what faiss.IndexFlatIP runs) over the document matrix in place, in row
blocks (no second copy)."""

from __future__ import annotations

from typing import Any

from evalret.core.ranking import SearchResult
from evalret.data.config import Config
from evalret.engines.filtered import filtered_exact
from evalret.engines.retrievers.base import BaseRetriever, SearchJob


class ExactRetriever(BaseRetriever):
    """The reference dense ranking: every document scored."""

    name = "exact"

    def __init__(self, config: Config) -> None:
        self.enabled = config.indexes.exact.enabled

    def params(self) -> dict[str, Any]:
        return {"type": "faiss.IndexFlatIP"}

    def retrieve(self, job: SearchJob) -> SearchResult:
        docs, queries, depth, rank = job.doc_vectors, job.query_vectors, job.depth, job.rank
        self.searcher = lambda rows: filtered_exact(docs, queries[rows], depth, rank, None)
        with job.timed("search_exact"):
            return filtered_exact(docs, queries, depth, rank, job.eligibility)
