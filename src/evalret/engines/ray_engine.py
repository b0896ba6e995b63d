"""The Ray engine (``embedding.engine: ray``): the texts the cache misses are embedded by Ray
Data actors instead of this process.

``ray.data.from_items`` carries each text with its row; ``map_batches`` sends batches of
``embedding.batch_size`` texts to a pool of ``embedding.workers`` actors, each of which builds
its embedder once, from the same model config through the same factory as the local engine
(``make_embedder``), so its vectors are the local engine's and land in the same cache
namespace. The answers come back in any order: they are put back by their rows, and a missing
or repeated row is an error, never a misplaced vector.

With no ``embedding.address`` a local Ray runtime is started at the first text to embed (a warm
run starts nothing) and shut down when the run is done embedding, on error too; with "auto" or
"ray://host:port" an existing cluster is used and left running. Ray is the optional extra
``evalret[ray]``, imported only here and only when the engine is chosen.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evalret.data.config import CacheConfig, EmbeddingConfig, ModelConfig
from evalret.engines.embedders import (
    OpenedEmbedder,
    cache_root,
    capabilities,
    cut_of,
    kept_model,
    make_embedder,
    open_embedder,
    with_cache,
)
from evalret.engines.protocols import Embedder, Kind, LocalModel, Progress, model_warnings
from evalret.errors import ConfigError, EvalretError, ModelError, PluginError

LOCAL_RUNTIME = "local runtime"
QUIET = logging.ERROR


def import_ray() -> Any:
    """The ray module with Ray Data; ConfigError (exit 2) naming the extra when missing."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise ConfigError(
            "embedding.engine ray needs Ray Data: pip install 'evalret[ray]'"
        ) from None
    return ray


class EmbedBatches:
    """A Ray Data actor: loads the model once, then embeds each batch it is sent (its rows
    travel with it)."""

    def __init__(self, model: ModelConfig, model_cache: str | None, kind: Kind) -> None:
        self.embedder = make_embedder(model, Path(model_cache) if model_cache else None)
        self.kind: Kind = kind

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = [str(t) for t in batch["text"]]
        return {"row": batch["row"], "vector": self.embedder.embed(texts, self.kind)}


def in_row_order(rows: np.ndarray, vectors: np.ndarray, n: int) -> np.ndarray:
    """``vectors`` put back in the order of their ``rows``; EvalretError unless the rows are
    exactly 0..n-1, each once."""
    order = np.argsort(rows, kind="stable")
    if len(rows) != n or not np.array_equal(rows[order], np.arange(n)):
        raise EvalretError(
            f"the Ray engine answered {len(rows)} rows for {n} texts, not each row once"
        )
    return np.ascontiguousarray(vectors[order], dtype=np.float32)


def plugin_failure(error: BaseException) -> PluginError | None:
    """The PluginError an actor raised (the guard around a custom encoder, which runs in the
    actor too), found in the chain of exceptions Ray wraps it in; None when there is none."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [error]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, PluginError):  # Ray's copy whose ``cause`` is the actor's own error
            cause = getattr(e, "cause", None)
            return cause if isinstance(cause, PluginError) else e
        todo += [e.__cause__, e.__context__, getattr(e, "cause", None)]
    return None


class RayEmbedder:
    """Embeds through Ray Data; everything that decides a vector (identity, the cache's
    identity, the text as fed to the model: ``RayLocalModel``) is the local embedder's."""

    def __init__(
        self, local: Embedder, model: ModelConfig, settings: EmbeddingConfig, cache: Path | None
    ) -> None:
        if not capabilities(model).runs_under_ray:
            raise ConfigError(
                f"embedding.engine ray embeds with a local model: model.provider "
                f"{model.provider} does not run under Ray, use engine local"
            )
        self.ray = import_ray()
        self.local = local
        self.model = model
        self.settings = settings
        self.cache = cache
        self.started = False  # this run started a local runtime (and shuts it down)
        self.connected = False
        self.startup_s: float | None = None
        self.texts = 0

    def identity(self) -> dict[str, Any]:
        return self.local.identity()

    @property
    def warnings(self) -> list[str]:
        """The local embedder's (engines/protocols.KeepsFiles)."""
        return model_warnings(self.local)

    def _connect(self) -> None:
        """Join the cluster at ``address``, or start a local runtime (once per run)."""
        if self.connected:
            return
        ray = self.ray
        start = time.perf_counter()
        if not ray.is_initialized():
            options: dict[str, Any] = {
                "include_dashboard": False,
                "logging_level": QUIET,
                "log_to_driver": False,
            }
            if self.settings.address is None:
                options["num_cpus"] = self.settings.workers
            try:
                ray.init(address=self.settings.address, **options)
            except Exception as e:  # Ray raises many kinds (ConnectionError, RuntimeError, ...)
                where = self.settings.address or "a local runtime"
                raise EvalretError(f"cannot start or join Ray ({where}): {e}") from e
            self.started = self.settings.address is None
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.execution_options.verbose_progress = False
        if hasattr(context, "raise_original_map_exception"):  # an actor's own error, unwrapped
            context.raise_original_map_exception = True
        logging.getLogger("ray").setLevel(QUIET)
        logging.getLogger("ray.data").setLevel(QUIET)
        self.connected = True
        self.startup_s = round(time.perf_counter() - start, 3)

    def embed(
        self, texts: Sequence[str], kind: Kind, progress: Progress | None = None
    ) -> np.ndarray:
        """Embed ``texts`` on the actors, in input order. Longest texts first (batches of like
        lengths pad less), as the local engine does."""
        if not texts:
            return self.local.embed(texts, kind, progress)
        self._connect()
        order = np.argsort([-len(t) for t in texts], kind="stable")
        items = [{"row": int(i), "text": texts[int(i)]} for i in order]
        s = self.settings
        dataset = self.ray.data.from_items(items).map_batches(
            EmbedBatches,
            fn_constructor_args=(self.model, str(self.cache) if self.cache else None, kind),
            batch_size=s.batch_size,
            concurrency=s.workers,
            num_gpus=s.gpus_per_worker,
            batch_format="numpy",
        )
        rows: list[np.ndarray] = []
        vectors: list[np.ndarray] = []
        try:
            for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
                rows.append(np.asarray(batch["row"], dtype=np.int64))
                vectors.append(np.asarray(batch["vector"], dtype=np.float32))
                if progress is not None:
                    progress(len(rows[-1]))
        except Exception as e:  # an actor's error (a model that cannot load) comes wrapped
            plugin = plugin_failure(e)
            if plugin is not None:  # a custom encoder's failure, in its own words (exit 3)
                raise PluginError(f"{plugin.message} (in a Ray actor)") from e
            raise ModelError(f"embedding on Ray failed: {e}") from e
        self.texts += len(texts)
        return in_row_order(np.concatenate(rows), np.concatenate(vectors), len(texts))

    def close(self) -> None:
        """Shut down the runtime this run started (a cluster given by address stays up)."""
        if self.started:
            self.started = False
            self.ray.shutdown()

    def report(self) -> dict[str, Any]:
        """The report's ``embedding.engine``."""
        s = self.settings
        return {
            "name": "ray",
            "address": s.address or LOCAL_RUNTIME,
            "workers": s.workers,
            "batch_size": s.batch_size,
            "gpus_per_worker": s.gpus_per_worker,
            "texts": self.texts,
            "startup_s": self.startup_s,
        }


class RayLocalModel(RayEmbedder):
    """The Ray engine over a ``LocalModel`` (engines/protocols.py): a ``LocalModel`` too, whose
    text as fed and cache identity are the local model's, so the cache keys its vectors as the
    local engine does. Over any other embedder (a custom encoder) the Ray engine
    is a plain ``RayEmbedder``, keyed as that embedder is."""

    local: LocalModel

    def cache_identity(self) -> dict[str, Any]:
        return self.local.cache_identity()

    def fed(self, texts: Sequence[str], kind: Kind) -> list[str]:
        return self.local.fed(texts, kind)


def ray_embedder(
    local: Embedder, model: ModelConfig, settings: EmbeddingConfig, cache: Path | None
) -> RayEmbedder:
    """The Ray engine over ``local``: a ``RayLocalModel`` when ``local`` is a ``LocalModel``."""
    engine = RayLocalModel if isinstance(local, LocalModel) else RayEmbedder
    return engine(local, model, settings, cache)


def engine_report(backend: Embedder) -> dict[str, Any] | None:
    """The report's ``embedding.engine`` for a Ray run; None for the local engine."""
    return backend.report() if isinstance(backend, RayEmbedder) else None


def local_backend(backend: Embedder) -> Embedder:
    """The embedder that decides the vectors: the Ray engine's local one, or ``backend``."""
    return backend.local if isinstance(backend, RayEmbedder) else backend


@contextlib.contextmanager
def embedding_engine(
    model: ModelConfig,
    cache: CacheConfig,
    settings: EmbeddingConfig,
    backend: Embedder | None = None,
) -> Iterator[OpenedEmbedder]:
    """The embedder of a run, behind the cache, on the configured engine. A given ``backend``
    (an embedder passed in by a caller) is always local. The Ray engine's runtime, when this
    run started it, is shut down on leaving, on error too."""
    if settings.engine == "local" or backend is not None:
        yield open_embedder(model, cache, backend)
        return
    root = cache_root(cache)
    kept = kept_model(model, root)  # the full vectors, cut on read by the cache
    engine = ray_embedder(make_embedder(kept, root), kept, settings, root)
    try:
        yield with_cache(engine, root, cut_of(model, root))
    finally:
        engine.close()
