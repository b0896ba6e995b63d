"""Approximate inner-product search on any faiss index-factory string (``indexes.<name>: {type:
faiss}``): trained seeded, kept in the cache directory, searched with its parameters
(engines/faiss_factory.py)."""

from __future__ import annotations

from typing import Any

from evalret.core.ranking import SearchResult
from evalret.data.config import Config, FaissIndexConfig
from evalret.engines.faiss_factory import cached_factory_index, check_trainable, size_figures
from evalret.engines.faiss_index import search
from evalret.engines.filtered import filtered_index_search
from evalret.engines.retrievers.base import BaseRetriever, SearchJob
from evalret.engines.search_cost import counted


class FaissRetriever(BaseRetriever):
    """A faiss index of the run, measured against exact search like the HNSW graph."""

    approximate = True

    def __init__(self, name: str, settings: FaissIndexConfig, config: Config) -> None:
        self.name = name
        self.settings = settings
        self.enabled = settings.enabled
        self.cache_status = "not built"

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

    def check_corpus(self, n_docs: int) -> None:
        """Before embedding: ConfigError when ``n_docs`` documents cannot train the index."""
        check_trainable(self.settings, self.name, n_docs, None)

    def cache_notes(self) -> dict[str, str]:
        return {f"faiss.{self.name}": self.cache_status}

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
        return search_measured(self, index, job)


def search_measured(r: BaseRetriever, index: Any, job: SearchJob) -> SearchResult:
    """``job``'s queries searched on the faiss ``index`` (each over its eligible documents),
    timed as ``search_<name>``; ``r``'s cost (bytes, distances counted by faiss) and probe (the
    same search of given query rows, for the latency) set from it."""
    queries, depth, rank = job.query_vectors, job.depth, job.rank
    with job.timed(f"search_{r.name}"):
        found, distances = counted(
            index,
            len(queries),
            lambda: filtered_index_search(index, queries, depth, rank, job.eligibility),
        )
    r.cost = size_figures(index, len(job.doc_vectors), distances)
    r.searcher = lambda rows: search(index, queries[rows], depth, rank)
    return found
