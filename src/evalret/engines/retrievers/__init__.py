"""The retrievers a run can search with, by name, in the order they run.

``RETRIEVERS`` maps an index name to a factory ``Config -> Retriever`` (see base.Retriever); a
retriever that reads other rankings (the hybrid) comes after them. A new retriever is one module
in this package and one line here; the pipeline asks the registry and needs no change.

``RETRIEVER_TYPES`` maps the ``type`` of a typed index (``indexes.<name>: {type: ...}``) to a
factory ``(name, settings, config) -> Retriever``; one retriever is built per typed entry, after
the built-in ones, in the config's order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalret.data.config import Config
from evalret.engines.retrievers.base import ProgressFactory, Retriever, SearchJob
from evalret.engines.retrievers.bm25 import Bm25Retriever
from evalret.engines.retrievers.exact import ExactRetriever
from evalret.engines.retrievers.hnsw import HnswRetriever
from evalret.engines.retrievers.hybrid import HybridRetriever
from evalret.engines.retrievers.pgvector import PgvectorRetriever
from evalret.engines.retrievers.python import PythonRetriever
from evalret.engines.retrievers.run import RunRetriever
from evalret.errors import ConfigError

__all__ = [
    "RETRIEVERS",
    "RETRIEVER_TYPES",
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


TypedRetrieverFactory = Callable[[str, Any, Config], Retriever]

RETRIEVER_TYPES: dict[str, TypedRetrieverFactory] = {
    "run": RunRetriever,
    "python": PythonRetriever,
    "pgvector": PgvectorRetriever,
}


def make_retriever(name: str, config: Config) -> Retriever:
    """The retriever registered as ``name``, set up from ``config``; ConfigError listing the
    known names for any other."""
    factory = RETRIEVERS.get(name)
    if factory is None:
        raise ConfigError(f"index {name!r} is unknown: one of {', '.join(RETRIEVERS)}")
    return factory(config)


def make_retrievers(config: Config) -> list[Retriever]:
    """Every registered retriever set up from ``config``, enabled or not, in registry order, then
    one per typed index of the config, in its order."""
    builtin = [make_retriever(name, config) for name in RETRIEVERS]
    typed = [
        RETRIEVER_TYPES[settings.type](name, settings, config)
        for name, settings in config.indexes.typed.items()
    ]
    return builtin + typed
