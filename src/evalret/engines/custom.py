"""A custom encoder as an embedder (``model: {provider: python, callable: "pkg.module:factory"}``).

The factory is called once, with ``model.options`` as keyword arguments, and returns an object
with two methods::

    encode(texts: list[str], kind: "query" | "document") -> numpy.ndarray  # float32 [n, dim]
    identity() -> dict  # JSON: what decides the vectors (weights, version, pooling, ...)

evalret feeds it ``model.batch_size`` texts at a time, each after ``query_prefix`` /
``document_prefix``, then applies ``truncate_dim`` and ``normalize`` as for any model. The
embedding cache, the health figures and the fingerprint work as with sentence-transformers: the
model's identity is the callable, its options and the encoder's ``identity()`` (``model.name`` is
a label and not part of it).

A ``callable`` that cannot be imported is a config error (exit 2). The import, the factory,
``identity()`` and ``encode()`` run inside evalret's plug-in guard (``engines/plugins.py``): an
exception inside any of them, a ``sys.exit`` with any code, or an answer of the wrong type,
shape, dtype or row count, or with non-finite values, is a failure of that callable (exit 3),
with its traceback under EVALRET_DEBUG=1; what they print goes to stderr, marked
``[plugin pkg.module:factory encode()]`` and so on. The same holds inside the Ray engine's
actors, which build the encoder through this class.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from evalret.data.config import PythonModelConfig
from evalret.engines.plugins import import_callable, plugin_call
from evalret.engines.st_embedder import Kind, Progress, finish_vectors
from evalret.errors import PluginError


class CustomEmbedder:
    """Embeds with the encoder the configured factory returns (see the module docstring)."""

    def __init__(self, config: PythonModelConfig, _model_cache: Path | None = None) -> None:
        self.config = config
        self.spec = config.callable
        # a bad one fails fast; its module looked for beside the config file first
        self.factory = import_callable("model.callable", self.spec, config.code_dir)
        self.dim: int | None = None

    @cached_property
    def encoder(self) -> Any:
        with plugin_call(self.spec):
            encoder = self.factory(**(self.config.options or {}))
            methods = {m: callable(getattr(encoder, m, None)) for m in ("encode", "identity")}
        for method, present in methods.items():
            if not present:
                raise PluginError(
                    f"{self.spec} returned {type(encoder).__name__}, which has no {method}() "
                    "method (an encoder needs encode(texts, kind) and identity())"
                )
        return encoder

    @cached_property
    def encoder_identity(self) -> dict[str, Any]:
        """The encoder's identity(), checked to be a JSON object."""
        encoder = self.encoder
        with plugin_call(f"{self.spec} identity()"):
            value = encoder.identity()
        try:
            if not isinstance(value, dict):
                raise TypeError(f"a {type(value).__name__}, not a dict")
            text = json.dumps(value, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise PluginError(f"{self.spec} identity() is not a JSON object: {e}") from e
        decoded: dict[str, Any] = json.loads(text)
        return decoded

    def identity(self) -> dict[str, Any]:
        c = self.config
        return {
            "provider": "python",
            "callable": self.spec,
            "source": f"{self.spec} (python)",
            "options": c.options or {},
            "encoder": self.encoder_identity,
            "normalize": c.normalize,
            "query_prefix": c.query_prefix,
            "document_prefix": c.document_prefix,
            "truncate_dim": c.truncate_dim,
        }

    def _encode(self, batch: list[str], kind: Kind) -> np.ndarray:
        """One batch through the encoder, checked: float32 [len(batch), dim], finite."""
        encoder = self.encoder
        with plugin_call(f"{self.spec} encode()"):
            out = encoder.encode(batch, kind)
            if isinstance(out, np.ndarray):  # a subclass's methods are its code: take the array
                out = np.array(out, copy=True, subok=False)
        expected = f"a float32 array [{len(batch)}, {self.dim or 'dim'}]"
        if not isinstance(out, np.ndarray):
            raise PluginError(f"{self.spec} encode() returned {type(out).__name__}: {expected}")
        if out.dtype != np.float32 or out.ndim != 2 or out.shape[0] != len(batch):
            raise PluginError(
                f"{self.spec} encode() returned a {out.dtype} array of shape {out.shape} for "
                f"{len(batch)} {kind} texts: {expected}"
            )
        if self.dim is not None and out.shape[1] != self.dim:
            raise PluginError(
                f"{self.spec} encode() returned dimension {out.shape[1]} after {self.dim}"
            )
        if out.shape[1] == 0 or not np.isfinite(out).all():
            raise PluginError(f"{self.spec} encode() returned empty or non-finite vectors")
        self.dim = int(out.shape[1])
        return out

    def embed(
        self, texts: Sequence[str], kind: Kind, progress: Progress | None = None
    ) -> np.ndarray:
        """``texts`` after their prefix, ``batch_size`` at a time, in input order."""
        prefix = self.config.query_prefix if kind == "query" else self.config.document_prefix
        inputs = [prefix + t for t in texts]
        size = self.config.batch_size
        chunks: list[np.ndarray] = []
        for start in range(0, len(inputs), size):
            batch = inputs[start : start + size]
            chunks.append(self._encode(batch, kind))
            if progress is not None:
                progress(len(batch))
        vectors = np.concatenate(chunks) if chunks else np.zeros((0, self.dim or 0), np.float32)
        return finish_vectors(vectors, self.config.truncate_dim, self.config.normalize)
