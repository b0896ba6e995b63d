"""What a store driver is: the small protocol each vector database implements, everything else
(id mapping, folding, widening, the tie rule, counts, filters' eligibility) being shared
(engines/stores/search.py, engines/retrievers/store.py).

A driver (``StoreDriver``) is stateless: it checks, before anything is embedded, that the
driver's package is installed and that every filter of the golden set is one it can express
(``check_filter``: an operator it cannot express is a ConfigError naming it, never a silently
different answer), turns the store's raw value into a similarity for the collection's metric,
and opens a session. A session (``StoreSession``) is one connection, opened as a context: in
scratch mode opening creates a temporary collection, loads evalret's vectors (and each
document's metadata) into it and builds the configured index, and leaving the context drops it,
after an error or Ctrl-C too. A session describes what it searches (``describe``: the store's
version, its index as the store reports it, the row count), translates a filter into the
store's own (``where``) and searches a batch of query vectors (``search``). A scratch session in
a local store may say how many leftovers of killed runs it dropped on opening (``swept``, read
when present: engines/stores/common.py's rule).

Filter semantics are core/filters.py's; each driver's translation is held to them by
``test_filter_conformance`` in tests/test_stores.py (one fixture, every driver). A new store is
one module in this package exposing ``DRIVER`` and one line in ``DRIVERS``
(engines/stores/__init__.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from evalret.core.filters import Filter
from evalret.data.config import StoreIndexConfig

Hit = tuple[Any, float]  # (the document id as stored, the store's raw value)


@dataclass(frozen=True)
class ScratchRows:
    """What scratch mode loads: one row per document, its id, vector and metadata (``()`` when
    no query filters: no metadata is loaded)."""

    ids: Sequence[str]
    vectors: np.ndarray  # float32 [n_docs, dim]
    metadata: Sequence[Mapping[str, Any] | None] = ()
    seed: int = 0  # for a store whose build takes a seed (the repeat's number under stability)


class StoreSession(Protocol):
    """One open connection to the store, searching one collection."""

    limit: int  # the most rows one search may return per query (the store's own bound)

    def describe(self) -> dict[str, Any]:
        """The store as it reports itself: ``version``, ``index`` (type and parameters),
        ``rows``; JSON values only. It goes into the report and the run's fingerprint, so a
        rebuilt index is a visible change."""
        ...

    def where(self, f: Filter) -> Any:
        """``f`` in the store's own filter language, with core/filters.py's semantics."""
        ...

    def search(self, vectors: np.ndarray, limit: int, where: Any | None) -> list[list[Hit]]:
        """The nearest ``limit`` rows of each query vector (float32 [n, dim]) under the native
        filter ``where`` (None: none), as the store orders them."""
        ...


class StoreDriver(Protocol):
    """One vector database."""

    name: str  # the config's ``driver``
    extra: str  # the optional extra that installs its package: evalret[<name>]

    def check(self, settings: StoreIndexConfig, index: str) -> None:
        """ConfigError when the store's package is missing (naming the extra) or the settings
        do not suit the store."""
        ...

    def check_store(self, settings: StoreIndexConfig, index: str) -> None:
        """ConfigError when the store the settings point at is not there (a local store's
        directory), checked before a search's embedding; never when only vectors are wanted
        (`evalret embed`), so a store can be loaded from an export made with its config."""
        ...

    def check_filter(self, f: Filter, index: str) -> None:
        """ConfigError naming the operator when the store cannot express ``f`` exactly."""
        ...

    def similarity(self, metric: str, raw: np.ndarray) -> np.ndarray:
        """The store's raw values for ``metric`` (ip, cosine, l2) as float64 similarities,
        higher is better."""
        ...

    def open(
        self,
        settings: StoreIndexConfig,
        index: str,
        scratch: ScratchRows | None,
        tick: Callable[[int], None],
    ) -> AbstractContextManager[StoreSession]:
        """A session on the configured collection; with ``scratch``, on a temporary one loaded
        with those rows (``tick`` per batch loaded), dropped when the context is left."""
        ...
