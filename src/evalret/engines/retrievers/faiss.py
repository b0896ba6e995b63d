"""Approximate inner-product search on any faiss index-factory string (``indexes.<name>: {type:
faiss}``): trained seeded, kept in the cache directory, searched with its parameters
(engines/faiss_factory.py)."""

from __future__ import annotations

from typing import Any

from evalret.core.ranking import SearchResult
from evalret.data.config import Config, FaissIndexConfig
from evalret.engines.faiss_factory import cached_factory_index, index_bytes
from evalret.engines.filtered import filtered_index_search
from evalret.engines.retrievers.base import BaseRetriever, SearchJob


class FaissRetriever(BaseRetriever):
    """A faiss index of the run, measured against exact search like the HNSW graph."""

    approximate = True

    def __init__(self, name: str, settings: FaissIndexConfig, config: Config) -> None:
        self.name = name
        self.settings = settings
        self.enabled = settings.enabled
        self.cache_status = "not built"
        self.size: dict[str, float] | None = None

    def params(self) -> dict[str, Any]:
        s = self.settings
        return {
            "type": "faiss.index_factory",
            "factory": s.factory,
            "metric": "inner_product",
            "params": dict(s.params),
            "train_size": s.train_size,
            "seed": s.seed,
            **({"threads": s.threads} if s.threads != 1 else {}),
        }

    def cache_notes(self) -> dict[str, str]:
        return {f"faiss.{self.name}": self.cache_status}

    def index_size(self) -> dict[str, float] | None:
        return self.size

    def retrieve(self, job: SearchJob) -> SearchResult:
        vectors = job.doc_vectors
        with job.timed(f"build_{self.name}"):
            index, self.cache_status = cached_factory_index(
                vectors,
                self.settings,
                self.name,
                job.cache_dir,
                job.progress(f"Building {self.name} (faiss {self.settings.factory})", len(vectors)),
                job.cache_warnings,
            )
        n_bytes = index_bytes(index)
        self.size = {"index_bytes": n_bytes, "bytes_per_vector": n_bytes / max(len(vectors), 1)}
        with job.timed(f"search_{self.name}"):
            return filtered_index_search(
                index, job.query_vectors, job.depth, job.rank, job.eligibility
            )
