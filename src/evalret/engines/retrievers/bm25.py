"""The lexical reference: BM25 over the document texts (bm25s)."""

from __future__ import annotations

from typing import Any

from evalret.core.ranking import SearchResult
from evalret.data.config import Config
from evalret.engines.lexical import bm25_search
from evalret.engines.retrievers.base import BaseRetriever, SearchJob


class Bm25Retriever(BaseRetriever):
    """BM25 with the configured variant, stemmer and stop words."""

    name = "bm25"
    needs_vectors = False

    def __init__(self, config: Config) -> None:
        self.config = config.indexes.bm25
        self.enabled = self.config.enabled

    def params(self) -> dict[str, Any]:
        return {"type": "bm25s", **self.config.model_dump(exclude={"enabled"})}

    def retrieve(self, job: SearchJob) -> SearchResult:
        with job.timed("search_bm25"):
            return bm25_search(
                job.doc_texts,
                job.query_texts,
                self.config,
                job.depth,
                job.rank,
                job.progress("BM25 search", len(job.query_texts)),
                job.eligibility,
            )
