"""Approximate inner-product search on an HNSW graph (faiss.IndexHNSWFlat), the graph kept in
the cache directory when there is one."""

from __future__ import annotations

from typing import Any

from evalret.core.ranking import SearchResult
from evalret.data.config import Config
from evalret.engines.faiss_index import cached_hnsw, hnsw_threads
from evalret.engines.retrievers.base import BaseRetriever, SearchJob
from evalret.engines.retrievers.faiss import search_measured


class HnswRetriever(BaseRetriever):
    """The ANN index whose recall the report measures against the exact one."""

    name = "hnsw"
    approximate = True

    def __init__(self, config: Config) -> None:
        self.config = config.indexes.hnsw
        self.enabled = self.config.enabled
        self.cache_status = "not built"  # then "hit", "built", "rebuilt" or "not cached"

    def params(self) -> dict[str, Any]:
        h = self.config
        return {
            "type": "faiss.IndexHNSWFlat",
            "metric": "inner_product",
            "m": h.m,
            "ef_construction": h.ef_construction,
            "ef_search": h.ef_search,
            # a multi-threaded graph differs from build to build; one thread is the default's
            # graph of old, so its settings (and fingerprints) stay as they were
            **({"threads": threads} if (threads := hnsw_threads(h)) != 1 else {}),
        }

    def cache_notes(self) -> dict[str, str]:
        return {"hnsw_index": self.cache_status}

    def retrieve(self, job: SearchJob) -> SearchResult:
        vectors = job.doc_vectors
        with job.timed("build_hnsw"):
            index, self.cache_status = cached_hnsw(
                vectors,
                self.config,
                job.cache_dir,
                job.progress("Building HNSW graph", len(vectors)),
                job.cache_warnings,
            )
        return search_measured(self, index, job)
