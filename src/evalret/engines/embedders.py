"""The embedders a run can use, by ``model.backend`` (or ``model.provider`` when it is not
sentence-transformers), and the one place the embedding cache wraps them.

``EMBEDDERS`` maps a backend (or provider) name to a factory
``(model config, model cache dir) -> Embedder``. A new backend is one module holding its
Embedder and one line here. ``open_embedder`` is how every command gets its embedder: the
configured backend, wrapped by the content-addressed cache when the cache is on. Nothing heavy
is imported here: each backend loads its libraries when it first embeds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evalret.data.config import CacheConfig, ModelConfig
from evalret.engines.backends import OnnxEmbedder, agreement
from evalret.engines.cache import CachedEmbedder, default_cache_dir
from evalret.engines.custom import CustomEmbedder
from evalret.engines.openai_api import OpenAIEmbedder
from evalret.engines.st_embedder import Embedder, SentenceTransformerEmbedder
from evalret.errors import ConfigError

EmbedderFactory = Callable[[ModelConfig, Path | None], Embedder]
CHECK_SAMPLE = 64
CHECK_SEED = 0


def _sentence_transformers(config: ModelConfig, _model_cache: Path | None) -> Embedder:
    return SentenceTransformerEmbedder(config)


EMBEDDERS: dict[str, EmbedderFactory] = {
    "torch": _sentence_transformers,
    "onnx": OnnxEmbedder,
    "openvino": OnnxEmbedder,
    "python": CustomEmbedder,  # provider python: a custom encoder (engines/custom.py)
    "openai": OpenAIEmbedder,  # provider openai: an /embeddings endpoint (engines/openai_api.py)
}


def embedder_name(config: ModelConfig) -> str:
    """The registry entry ``config`` selects: its provider, or for sentence-transformers its
    backend."""
    return config.backend if config.provider == "sentence-transformers" else config.provider


def make_embedder(config: ModelConfig, model_cache: Path | None = None) -> Embedder:
    """The embedder ``config.backend`` (or ``config.provider``) names; ``model_cache`` keeps what
    a backend prepares once (an exported model; None: a temporary directory for this run).
    ConfigError listing the known backends for any other name."""
    name = embedder_name(config)
    factory = EMBEDDERS.get(name)
    if factory is None:
        raise ConfigError(f"model.backend {name!r} is unknown: one of {', '.join(EMBEDDERS)}")
    return factory(config, model_cache)


def api_use(backend: Embedder) -> dict[str, Any] | None:
    """What an API embedder sent and was billed for (the report's ``embedding.api``); None for
    a local model."""
    return backend.report() if isinstance(backend, OpenAIEmbedder) else None


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


def open_embedder(
    model: ModelConfig, cache: CacheConfig, backend: Embedder | None = None
) -> OpenedEmbedder:
    """The embedder for ``model`` (or the given ``backend``), wrapped by the embedding cache
    when ``cache`` is enabled."""
    root = cache_root(cache)
    return with_cache(backend if backend is not None else make_embedder(model, root), root)


def with_cache(backend: Embedder, root: Path | None) -> OpenedEmbedder:
    """``backend`` behind the embedding cache at ``root`` (None: no cache): the one place the
    cache wraps an embedder."""
    cached = CachedEmbedder(backend, root) if root is not None else None
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

    The torch vectors go through the embedding cache (same settings, backend torch), so only the
    first run pays for them; None for the torch backend itself, a custom encoder and an API.
    """
    if embedder_name(config) in ("torch", "python", "openai") or len(texts) == 0:
        return None
    rng = np.random.default_rng(CHECK_SEED)
    n = min(sample, len(texts))
    rows = np.sort(rng.choice(len(texts), size=n, replace=False))
    reference_config = config.model_copy(update={"backend": "torch", "precision": "fp32"})
    reference = with_cache(make_embedder(reference_config, cache_root), cache_root).embedder
    expected = reference.embed([texts[int(i)] for i in rows], "document")
    return {
        "reference": "torch",
        "sample": n,
        "seed": CHECK_SEED,
        **agreement(vectors[rows], expected),
    }
