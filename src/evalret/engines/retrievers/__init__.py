"""The retrievers a run can search with, by name, in the order they run.

``RETRIEVERS`` maps an index name to a factory ``Config -> Retriever`` (see base.Retriever); a
retriever that reads other rankings (the hybrid) comes after them. Every built-in index (a fixed
key of ``indexes``, ``data.config.BUILTIN_INDEXES``) has its entry here. The pipeline asks the
registry and needs no change.

``RETRIEVER_TYPES`` maps the ``type`` of a typed index (``indexes.<name>: {type: ...}``) to a
factory ``(name, settings, config) -> Retriever``; one retriever is built per typed entry, after
the built-in ones, in the config's order. A new type is one module in this package, one line
here and one member of ``data.config.TypedIndexConfig``; from outside evalret,
``register_retriever_type`` does the last two. What a retriever must be, and the smaller
protocols that say what else it tells, are in base.py. A typed index that reads another's ranking (a
rerank stage's ``of``) is built, and so runs, after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalret.data.config import (
    BUILTIN_INDEXES,
    INDEX_CONFIGS,
    Config,
    TypedIndexBase,
    refresh_unions,
)
from evalret.data.unions import tag_of
from evalret.engines.protocols import missing_members
from evalret.engines.retrievers.base import (
    CorpusChecked,
    Costed,
    FiltersChecked,
    Probed,
    ProgressFactory,
    ReadyChecked,
    Repeated,
    Retriever,
    SearchJob,
    Staged,
    StagedSettings,
    Timed,
)
from evalret.engines.retrievers.bm25 import Bm25Retriever
from evalret.engines.retrievers.exact import ExactRetriever
from evalret.engines.retrievers.faiss import FaissRetriever
from evalret.engines.retrievers.hnsw import HnswRetriever
from evalret.engines.retrievers.hybrid import HybridRetriever
from evalret.engines.retrievers.python import PythonRetriever
from evalret.engines.retrievers.quantized import QuantizedRetriever
from evalret.engines.retrievers.rerank import RerankRetriever
from evalret.engines.retrievers.run import RunRetriever
from evalret.errors import ConfigError

__all__ = [
    "RETRIEVERS",
    "RETRIEVER_TYPES",
    "CorpusChecked",
    "Costed",
    "FiltersChecked",
    "Probed",
    "ProgressFactory",
    "ReadyChecked",
    "Repeated",
    "Retriever",
    "SearchJob",
    "Staged",
    "Timed",
    "make_retriever",
    "make_retrievers",
    "register_retriever_type",
    "unregister_retriever_type",
]

RetrieverFactory = Callable[[Config], Retriever]

RETRIEVERS: dict[str, RetrieverFactory] = {
    "exact": ExactRetriever,
    "hnsw": HnswRetriever,
    "bm25": Bm25Retriever,
    "hybrid": HybridRetriever,
}


TypedRetrieverFactory = Callable[[str, Any, Config], Retriever]


def _store(name: str, settings: Any, config: Config) -> Retriever:
    """``type: store``: its module, and the store drivers', imported when a config has one."""
    from evalret.engines.retrievers.store import StoreRetriever

    return StoreRetriever(name, settings, config)


def _pgvector(name: str, settings: Any, config: Config) -> Retriever:
    """``type: pgvector``: its module, and the pgvector driver's, imported when a config has one."""
    from evalret.engines.retrievers.pgvector import PgvectorRetriever

    return PgvectorRetriever(name, settings, config)


RETRIEVER_TYPES: dict[str, TypedRetrieverFactory] = {
    "run": RunRetriever,
    "python": PythonRetriever,
    "pgvector": _pgvector,
    "rerank": RerankRetriever,
    "faiss": FaissRetriever,
    "quantized": QuantizedRetriever,
    "store": _store,
}


def register_retriever_type(settings: type[TypedIndexBase], factory: TypedRetrieverFactory) -> str:
    """Add a typed index from outside evalret: ``settings`` (a ``TypedIndexBase`` subclass whose
    ``type`` is a ``Literal`` of its name) joins the config's typed-index union and ``factory``
    the registry. Returns the type's name. A factory that is a class must have the methods of a
    ``Retriever`` (TypeError naming the class and what it lacks); every retriever is checked
    whole when it is made."""
    name = tag_of(settings, "type")
    if name in INDEX_CONFIGS or name in RETRIEVER_TYPES:
        raise ValueError(f"index type {name!r} is registered already")
    if isinstance(factory, type):
        _check_retriever(f"index type {name!r}", factory)
    INDEX_CONFIGS[name] = settings
    RETRIEVER_TYPES[name] = factory
    refresh_unions()
    return name


def unregister_retriever_type(name: str) -> None:
    """Take out a typed index ``register_retriever_type`` added."""
    INDEX_CONFIGS.pop(name, None)
    RETRIEVER_TYPES.pop(name, None)
    refresh_unions()


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
    unbuilt = [name for name in BUILTIN_INDEXES if name not in RETRIEVERS]
    if unbuilt:
        raise ConfigError(f"indexes.{unbuilt[0]}: no retriever is registered for this index")
    builtin = [make_retriever(name, config) for name in RETRIEVERS]
    typed = config.indexes.typed
    return builtin + [_typed(name, typed[name], config) for name in _stage_order(typed)]


def _stage_order(typed: dict[str, Any]) -> list[str]:
    """The typed indexes in the config's order, except that one with a first stage (a rerank
    index's ``of``) comes after it (the config refuses a cycle)."""
    out: list[str] = []

    def place(name: str) -> None:
        if name in out:
            return
        settings = typed[name]
        first = settings.of if isinstance(settings, StagedSettings) else None
        if isinstance(first, str) and first in typed:
            place(first)
        out.append(name)

    for name in typed:
        place(name)
    return out


def _typed(name: str, settings: Any, config: Config) -> Retriever:
    """The retriever of the typed index ``name``; ConfigError naming its key when no retriever
    is registered for its type."""
    factory = RETRIEVER_TYPES.get(settings.type)
    if factory is None:
        raise ConfigError(
            f"indexes.{name}.type: no retriever is registered for type {settings.type!r} "
            f"(registered: {', '.join(RETRIEVER_TYPES)})"
        )
    retriever = factory(name, settings, config)
    _check_retriever(f"index type {settings.type!r}", retriever)
    return retriever


def _check_retriever(what: str, target: object) -> None:
    """TypeError when ``target`` (a retriever class or instance) is no ``Retriever``, naming
    ``what`` registered it, its class and the members it lacks."""
    missing = missing_members(target, Retriever)
    if missing:
        klass = target if isinstance(target, type) else type(target)
        raise TypeError(f"{what}: {klass.__name__} is no Retriever: it lacks {', '.join(missing)}")
