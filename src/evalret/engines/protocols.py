"""What an embedder is, and what else one may be: small declared protocols.

Every embedder is an ``Embedder`` (``identity()``, ``embed(texts, kind, progress)``). What else
it can do is declared by the protocols it satisfies, asked with ``isinstance`` (they are
runtime-checkable), never discovered by name:

- ``FeedsText``: it says the text as fed to the model (``fed(texts, kind)``: after the kind's
  prefix or named prompt); the dry run counts tokens and plans requests on it. Any other
  embedder's texts are taken as fed after the configured prefix.
- ``LocalModel``: a ``FeedsText`` whose vector the text as fed alone decides (the kind picks
  nothing but the prefix): the embedding cache keys each text by its fed form and names its
  namespace by ``cache_identity()``. Any other embedder's texts are keyed by kind and text (an
  API's or a custom encoder's vector may depend on the kind), its namespace named by
  ``identity()``.
- ``KeepsFiles``: it keeps files of its own in the cache directory (an exported model) and
  says what it could not keep (``warnings``); the cache's report carries them with its own.
- ``StreamingEmbedder``: it yields each batch as it is answered (``embed_batches``); the cache
  keeps every batch as it arrives.
- ``ApiEmbedder``: what a provider declaring ``Capabilities(api=True)`` must be
  (engines/embedders.py checks it): its ``endpoint``, the requests ``requests(fed)`` the dry run
  plans, and ``report()``, what it sent and was billed for (the report's ``embedding.api``).

The retrievers' protocols are in engines/retrievers/base.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

Kind = Literal["query", "document"]
Progress = Callable[[int], None]
Batch = tuple[np.ndarray, np.ndarray]  # (positions in the input, float32 vectors)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into float32 vectors [n, dim]; rows align with the input texts."""

    def identity(self) -> dict[str, Any]:
        """Everything that decides the vectors: model, weights, settings."""
        ...

    def embed(
        self, texts: Sequence[str], kind: Kind, progress: Progress | None = None
    ) -> np.ndarray: ...


@runtime_checkable
class FeedsText(Embedder, Protocol):
    """An embedder that says the text as fed to the model (see the module docstring)."""

    def fed(self, texts: Sequence[str], kind: Kind) -> list[str]:
        """The texts exactly as the model receives them: after the kind's prefix (a named
        prompt is a prefix)."""
        ...


@runtime_checkable
class LocalModel(FeedsText, Protocol):
    """A model whose vector the text as fed alone decides (see the module docstring)."""

    def cache_identity(self) -> dict[str, Any]:
        """``identity()`` plus what else can move a vector (device, library versions): the
        name of its cache namespace."""
        ...


@runtime_checkable
class KeepsFiles(Embedder, Protocol):
    """An embedder that keeps files of its own in the cache directory (an exported model)."""

    @property
    def warnings(self) -> list[str]:
        """What it could not keep there (the run went on without it)."""
        ...


@runtime_checkable
class StreamingEmbedder(Embedder, Protocol):
    """An embedder that yields each batch as soon as it is answered."""

    def embed_batches(self, texts: Sequence[str], kind: Kind) -> Iterator[Batch]:
        """(positions in ``texts``, finished vectors) per answered batch, in answer order."""
        ...


@runtime_checkable
class ApiEmbedder(Embedder, Protocol):
    """An embedder that sends texts to a remote service (``Capabilities(api=True)``)."""

    endpoint: str  # where the texts go (the dry run shows it)

    def requests(self, fed: Sequence[str]) -> int:
        """How many requests the texts ``fed`` (as ``FeedsText.fed`` gives them) take."""
        ...

    def report(self) -> dict[str, Any]:
        """What it sent and was billed for: the report's ``embedding.api``."""
        ...


def key_texts(embedder: Embedder, texts: Sequence[str], kind: Kind) -> list[str]:
    """What the embedding cache keys ``texts`` of ``kind`` by: for a ``LocalModel`` the texts
    as fed (a query and a document fed alike share one vector), for any other the kind and the
    text."""
    if isinstance(embedder, LocalModel):
        return embedder.fed(texts, kind)
    return [f"{kind}\0{t}" for t in texts]


def cache_identity(embedder: Embedder) -> dict[str, Any]:
    """What names ``embedder``'s cache namespace: a ``LocalModel``'s ``cache_identity()``, any
    other's ``identity()``."""
    if isinstance(embedder, LocalModel):
        return embedder.cache_identity()
    return embedder.identity()


def model_warnings(embedder: Embedder) -> list[str]:
    """What ``embedder`` could not keep in the cache directory (a ``KeepsFiles``'s
    ``warnings``; none for any other)."""
    return list(embedder.warnings) if isinstance(embedder, KeepsFiles) else []


def missing_members(target: object, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``target`` lacks. On an instance every member counts; on
    a class its methods and properties only (a data member such as ``endpoint`` may be set in
    ``__init__``: it is checked on the instance)."""
    on_class = isinstance(target, type)
    return [
        name
        for name, data in _members(protocol)
        if not (on_class and data) and not hasattr(target, name)
    ]


def _members(protocol: type) -> list[tuple[str, bool]]:
    """(name, whether it is a data member) of what a protocol and the protocols it extends
    declare, in declaration order."""
    out: dict[str, bool] = {}
    for klass in reversed(protocol.__mro__):
        if not getattr(klass, "_is_protocol", False) or klass is Protocol:
            continue
        for name in getattr(klass, "__annotations__", {}):
            out.setdefault(name, True)
        for name in vars(klass):
            if not name.startswith("_"):
                out.setdefault(name, False)
    return list(out.items())
