"""The retrievers a run can search with, by name, in the order they run.

``RETRIEVERS`` maps an index name to a factory ``Config -> Retriever`` (see base.Retriever); a
retriever that reads other rankings (the hybrid) comes after them. A new retriever is one module
in this package and one line here; the pipeline asks the registry and needs no change.
"""

from __future__ import annotations

from collections.abc import Callable

from evalret.data.config import Config
from evalret.engines.retrievers.base import ProgressFactory, Retriever, SearchJob
from evalret.engines.retrievers.bm25 import Bm25Retriever
from evalret.engines.retrievers.exact import ExactRetriever
from evalret.engines.retrievers.hnsw import HnswRetriever
from evalret.engines.retrievers.hybrid import HybridRetriever
from evalret.errors import ConfigError

__all__ = [
    "RETRIEVERS",
    "ProgressFactory",
    "Retriever",
    "SearchJob",
    "make_retriever",
    "make_retrievers",
]

RetrieverFactory = Callable[[Config], Retriever]

RETRIEVERS: dict[str, RetrieverFactory] = {
    "exact": ExactRetriever,
    "hnsw": HnswRetriever,
    "bm25": Bm25Retriever,
    "hybrid": HybridRetriever,
}


def make_retriever(name: str, config: Config) -> Retriever:
    """The retriever registered as ``name``, set up from ``config``; ConfigError listing the
    known names for any other."""
    factory = RETRIEVERS.get(name)
    if factory is None:
        raise ConfigError(f"index {name!r} is unknown: one of {', '.join(RETRIEVERS)}")
    return factory(config)


def make_retrievers(config: Config) -> list[Retriever]:
    """Every registered retriever set up from ``config``, enabled or not, in registry order."""
    return [make_retriever(name, config) for name in RETRIEVERS]
