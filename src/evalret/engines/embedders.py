"""The embedders a run can use, what each can do, and the one place the embedding cache wraps
them.

``EMBEDDERS`` maps a registry key (``model.provider``, or for sentence-transformers its
``model.backend``: the model settings' ``embedder_key``) to an ``EmbedderEntry``: the factory
``(model settings, model cache dir) -> Embedder`` and the embedder's declared ``Capabilities``.
Every question the pipeline asks of a provider (is it an API, are its tokens counted, may it run
under Ray, is there a reference to check it against) is asked of the declaration, never of the
name; a declared capability says which protocols of engines/protocols.py the embedder must
satisfy, checked when it is registered and made. A new provider is one module holding its
Embedder, one line here and one member of ``data.config.ModelConfig``; from outside evalret,
``register_provider`` does the last two.
``open_embedder`` is how every command gets its embedder: the configured backend, wrapped by the
content-addressed cache when the cache is on; with the cache on, a ``model.truncate_dim`` is cut
on read from the model's full vectors (``kept_model``, engines/cache.Cut). Nothing heavy is
imported here: each backend loads its libraries when it first embeds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evalret.data.config import (
    MODEL_CONFIGS,
    CacheConfig,
    ModelConfig,
    ModelConfigBase,
    refresh_unions,
)
from evalret.data.unions import tag_of
from evalret.engines.backends import OnnxEmbedder, agreement
from evalret.engines.cache import CachedEmbedder, Cut, default_cache_dir
from evalret.engines.custom import CustomEmbedder
from evalret.engines.openai_api import OpenAIEmbedder
from evalret.engines.protocols import ApiEmbedder, Embedder, missing_members
from evalret.engines.st_embedder import SentenceTransformerEmbedder
from evalret.errors import ConfigError

# (the settings of the union member the entry is registered for, model cache dir) -> Embedder
EmbedderFactory = Callable[[Any, Path | None], Embedder]
CHECK_SAMPLE = 64
CHECK_SEED = 0


@dataclass(frozen=True)
class Capabilities:
    """What an embedder can do, declared beside its registry entry."""

    # texts go to a remote service: the embedder is an ``engines.protocols.ApiEmbedder`` (checked
    # by ``register_provider`` and ``make_embedder``): the dry run plans its ``requests(fed)``
    # and shows its ``endpoint``, the report records its ``report()`` (``embedding.api``)
    api: bool
    # tiktoken counts its tokens exactly (the dry run's tokens and cost); else they are estimated
    counts_tokens: bool
    # ``embedding.engine: ray`` may build it on Ray actors (a local model)
    runs_under_ray: bool
    # its identity carries a hash of the weights (an API's model can change behind its name)
    hashes_weights: bool
    # the registry entry whose vectors it should reproduce (the run's ``backend_check``)
    reference: str | None = None


@dataclass(frozen=True)
class EmbedderEntry:
    factory: EmbedderFactory
    capabilities: Capabilities


def _sentence_transformers(config: Any, _model_cache: Path | None) -> Embedder:
    return SentenceTransformerEmbedder(config)


LOCAL = Capabilities(api=False, counts_tokens=False, runs_under_ray=True, hashes_weights=True)
EXPORTED = Capabilities(
    api=False, counts_tokens=False, runs_under_ray=True, hashes_weights=True, reference="torch"
)
CUSTOM = Capabilities(api=False, counts_tokens=False, runs_under_ray=True, hashes_weights=False)
OPENAI = Capabilities(api=True, counts_tokens=True, runs_under_ray=False, hashes_weights=False)

EMBEDDERS: dict[str, EmbedderEntry] = {
    "torch": EmbedderEntry(_sentence_transformers, LOCAL),
    "onnx": EmbedderEntry(OnnxEmbedder, EXPORTED),
    "openvino": EmbedderEntry(OnnxEmbedder, EXPORTED),
    "python": EmbedderEntry(CustomEmbedder, CUSTOM),  # a custom encoder (engines/custom.py)
    "openai": EmbedderEntry(OpenAIEmbedder, OPENAI),  # an /embeddings endpoint (openai_api.py)
}


def register_provider(
    settings: type[ModelConfigBase], factory: EmbedderFactory, capabilities: Capabilities
) -> str:
    """Add a provider from outside evalret: ``settings`` (a ``ModelConfigBase`` subclass whose
    ``provider`` is a ``Literal`` of its name) joins the config's ``model`` union, and
    ``factory`` with its ``capabilities`` the registry. Returns the provider's name. A factory
    that is a class must be what its capabilities claim (``claimed``): TypeError naming the
    class and what it lacks; any other factory's embedder is checked when it is made. With the
    cache on, the factory is given the settings without ``truncate_dim`` (``kept_model``)."""
    name = tag_of(settings, "provider")
    if name in MODEL_CONFIGS or name in EMBEDDERS:
        raise ValueError(f"provider {name!r} is registered already")
    if isinstance(factory, type):
        _check_claims(name, factory, capabilities)
    MODEL_CONFIGS[name] = settings
    EMBEDDERS[name] = EmbedderEntry(factory, capabilities)
    refresh_unions()
    return name


def claimed(capabilities: Capabilities) -> list[type]:
    """The protocols (engines/protocols.py) an embedder declaring ``capabilities`` must
    satisfy: ``Embedder``, and ``ApiEmbedder`` for an API."""
    return [Embedder, *([ApiEmbedder] if capabilities.api else [])]


def _check_claims(name: str, target: object, capabilities: Capabilities) -> None:
    """TypeError when ``target`` (an embedder class or instance) lacks a member of a protocol
    its ``capabilities`` claim, naming provider ``name``, its class and the members."""
    klass = target if isinstance(target, type) else type(target)
    for protocol in claimed(capabilities):
        missing = missing_members(target, protocol)
        if missing:
            api = " (it declares api=True)" if protocol is ApiEmbedder else ""
            raise TypeError(
                f"provider {name!r}: {klass.__name__} is no {protocol.__name__}{api}: it "
                f"lacks {', '.join(missing)}"
            )


def unregister_provider(name: str) -> None:
    """Take out a provider ``register_provider`` added."""
    MODEL_CONFIGS.pop(name, None)
    EMBEDDERS.pop(name, None)
    refresh_unions()


def _entry(config: ModelConfigBase) -> EmbedderEntry:
    """The registry entry ``config`` selects; ConfigError listing the known ones for any other."""
    name = config.embedder_key
    entry = EMBEDDERS.get(name)
    if entry is None:
        raise ConfigError(
            f"model.{config.selector} {name!r} is unknown: one of {', '.join(EMBEDDERS)}"
        )
    return entry


def capabilities(config: ModelConfigBase) -> Capabilities:
    """What the embedder ``config`` selects can do."""
    return _entry(config).capabilities


def make_embedder(config: ModelConfig, model_cache: Path | None = None) -> Embedder:
    """The embedder ``config`` selects (its backend, or its provider); ``model_cache`` keeps what
    a backend prepares once (an exported model; None: a temporary directory for this run).
    ConfigError listing the known backends for any other name."""
    entry = _entry(config)
    embedder = entry.factory(config, model_cache)
    _check_claims(config.embedder_key, embedder, entry.capabilities)
    return embedder


def api_use(config: ModelConfig, backend: Embedder) -> dict[str, Any] | None:
    """What an API embedder sent and was billed for (its ``report()``, the report's
    ``embedding.api``); None for a local model."""
    if not capabilities(config).api or not isinstance(backend, ApiEmbedder):
        return None
    return backend.report()


def cache_root(cache: CacheConfig) -> Path | None:
    """The cache directory ``cache`` settles on, or None when the cache is off."""
    return (cache.dir or default_cache_dir()) if cache.enabled else None


@dataclass(frozen=True)
class OpenedEmbedder:
    """What a command embeds with, and what its report says about it."""

    embedder: Embedder  # embeds: the backend, behind the cache when there is one
    backend: Embedder  # the backend itself
    cached: CachedEmbedder | None  # the cache wrapper (None with the cache off)
    root: Path | None  # the cache directory


def kept_model(model: ModelConfig, root: Path | None) -> ModelConfig:
    """The settings the backend of a run embeds with: with the cache on (``root``), ``model`` at
    its full dimension (``truncate_dim`` null), so the cache keeps the full vectors and a
    truncated run cuts them on read (``cut_of``); without a cache, ``model`` itself."""
    if root is None or model.truncate_dim is None:
        return model
    return model.model_copy(update={"truncate_dim": None})


def cut_of(model: ModelConfig, root: Path | None) -> Cut | None:
    """What the cache at ``root`` cuts on read for ``model`` (``kept_model``); None without a
    cache or a ``truncate_dim``."""
    if root is None or model.truncate_dim is None:
        return None
    return Cut(model.truncate_dim, model.normalize)


def open_embedder(
    model: ModelConfig, cache: CacheConfig, backend: Embedder | None = None
) -> OpenedEmbedder:
    """The embedder for ``model``, wrapped by the embedding cache when ``cache`` is enabled (a
    ``truncate_dim`` then cut on read: ``kept_model``); a given ``backend`` embeds as it is."""
    root = cache_root(cache)
    return with_cache(backend, root) if backend is not None else model_embedder(model, root)


def model_embedder(model: ModelConfig, root: Path | None) -> OpenedEmbedder:
    """The embedder ``model`` selects, behind the embedding cache at ``root`` (None: no cache),
    a ``truncate_dim`` cut on read (``kept_model``)."""
    return with_cache(make_embedder(kept_model(model, root), root), root, cut_of(model, root))


def with_cache(backend: Embedder, root: Path | None, cut: Cut | None = None) -> OpenedEmbedder:
    """``backend`` behind the embedding cache at ``root`` (None: no cache), which cuts what it
    reads with ``cut``: the one place the cache wraps an embedder."""
    cached = CachedEmbedder(backend, root, cut) if root is not None else None
    return OpenedEmbedder(
        embedder=cached if cached is not None else backend,
        backend=backend,
        cached=cached,
        root=root,
    )


def backend_check(
    config: ModelConfig,
    texts: Sequence[str],
    vectors: np.ndarray,
    cache_root: Path | None,
    sample: int = CHECK_SAMPLE,
) -> dict[str, Any] | None:
    """How far the backend's document vectors are from torch's: cosine on a seeded sample.

    The reference vectors (the entry the backend declares as its ``reference``, fp32) go through
    the embedding cache, so only the first run pays for them; None for an embedder that declares
    no reference (torch itself, a custom encoder, an API).
    """
    ref = capabilities(config).reference
    if ref is None or len(texts) == 0:
        return None
    rng = np.random.default_rng(CHECK_SEED)
    n = min(sample, len(texts))
    rows = np.sort(rng.choice(len(texts), size=n, replace=False))
    reference_config = config.model_copy(update={config.selector: ref, "precision": "fp32"})
    reference = model_embedder(reference_config, cache_root).embedder
    expected = reference.embed([texts[int(i)] for i in rows], "document")
    return {
        "reference": ref,
        "sample": n,
        "seed": CHECK_SEED,
        **agreement(vectors[rows], expected),
    }
