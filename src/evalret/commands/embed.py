"""`evalret embed [--shard I/N]`: fill the embedding cache with what `evalret run` would embed
(the texts pipeline/plan.py selects for the run: its sample too), all of it or one of N
deterministic slices, and stop (no search, no report).

The slices are cut over the distinct cache keys of every text the run embeds (documents and
queries, as fed to the model: after their prefixes), sorted and dealt out round-robin
(core/sharding.py): N jobs with shards 1/N .. N/N embed disjoint sets that together cover
everything, whatever the cache already holds. Each job embeds only the keys of its shard still
missing from the cache; after the N jobs (sharing, or merging, the cache directory) a run on the
same config embeds nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.sharding import distinct_keys, first_rows_in, parse_shard, shard_keys
from evalret.data.config import Config
from evalret.data.overrides import Override
from evalret.data.paths import (
    Declared,
    cache_output,
    config_inputs,
    guard,
    store_inputs,
    unique,
)
from evalret.data.stores import cache_root
from evalret.engines.cache import CachedEmbedder, check_cache_writable
from evalret.engines.embedders import open_embedder
from evalret.engines.st_embedder import Kind
from evalret.errors import ConfigError, InputError
from evalret.pipeline.configs import run_config
from evalret.pipeline.plan import KINDS, held, texts_to_embed
from evalret.pipeline.progress import ProgressBars, ProgressFactory, no_bars


@dataclass(frozen=True)
class KindCount:
    """One kind's part of a shard: distinct texts, how many the cache held, how many embedded."""

    texts: int
    cached: int
    embedded: int


@dataclass(frozen=True)
class EmbedOutcome:
    """What one `evalret embed` job did."""

    shard: tuple[int, int] | None  # (I, N), None: every key
    total_keys: int  # distinct keys of everything the run embeds
    keys: int  # distinct keys in this shard
    embedded: int  # texts embedded by this job
    seconds: float
    cache_dir: str
    namespace: str | None
    kinds: dict[str, KindCount] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def cached(self) -> int:
        """Keys of the shard the cache held before this job."""
        return self.keys - self.embedded

    def summary(self) -> dict[str, Any]:
        """The outcome as plain values (what report/embed_view.py draws)."""
        return {
            "shard": f"{self.shard[0]}/{self.shard[1]}" if self.shard else "all",
            "total_keys": self.total_keys,
            "keys": self.keys,
            "cached": self.cached,
            "embedded": self.embedded,
            "seconds": round(self.seconds, 3),
            "cache_dir": self.cache_dir,
            "namespace": self.namespace,
            "kinds": {k: vars(c) for k, c in self.kinds.items()},
            "warnings": list(self.warnings),
        }


def _embed_kind(
    cached: CachedEmbedder, texts: Sequence[str], kind: Kind, progress: ProgressFactory | None
) -> KindCount:
    """Embed the ``texts`` of one kind the cache lacks (each distinct key once)."""
    if not texts:
        return KindCount(0, 0, 0)
    todo = [t for t, hit in zip(texts, held(cached, texts, kind), strict=True) if not hit]
    before = cached.stats[kind].misses if kind in cached.stats else 0
    if todo:
        label = f"Embedding {kind}s"
        cached.embed(todo, kind, progress(label, len(todo)) if progress is not None else None)
    embedded = cached.stats[kind].misses - before if kind in cached.stats else 0
    return KindCount(texts=len(texts), cached=len(texts) - len(todo), embedded=embedded)


def _config(
    config: Path | None, cache_dir: Path | None, no_cache: bool, overrides: Sequence[Override]
) -> Config:
    """The run's config with ``--dir`` applied; ConfigError when there is no cache to fill."""
    if no_cache:
        raise InputError("--no-cache: `evalret embed` only fills the embedding cache; drop it")
    cfg = run_config(config, overrides=overrides)
    if cache_dir is not None:
        cfg = cfg.model_copy(update={"cache": cfg.cache.model_copy(update={"dir": cache_dir})})
    if not cfg.cache.enabled:
        raise ConfigError(
            "cache.enabled is false: `evalret embed` fills the embedding cache, which this "
            "config turns off"
        )
    return cfg


def _check_written(cached: CachedEmbedder, embedded: int) -> None:
    """InputError (exit 2, a write error) when vectors were embedded but the cache could not
    keep them."""
    lost = [w for w in cached.warnings if w.startswith("cannot write")]
    if embedded and lost:
        raise InputError(f"{lost[0]}: the {embedded} vector(s) embedded are lost")


def embed_command(
    *,
    config: Path | None = None,
    shard: str | None = None,
    cache_dir: Path | None = None,
    no_cache: bool = False,
    progress: ProgressBars = no_bars,
    on_keys: Callable[[np.ndarray], None] | None = None,
    overrides: Sequence[Override] = (),
) -> EmbedOutcome:
    """Embed shard ``shard`` ("I/N"; None: all) of what `evalret run` on ``config`` embeds into
    the cache (``cache_dir`` overrides cache.dir). The spec is checked first (InputError, exit 2).
    ``on_keys`` (tests) receives the shard's distinct keys."""
    spec = parse_shard(shard) if shard is not None else None
    cfg = _config(config, cache_dir, no_cache, overrides)
    role = "--dir" if cache_dir is not None else "cache.dir"
    reads = config_inputs(cfg, config, cache_key=role)
    if cache_dir is not None:  # the config's own cache is a store too: --dir is not inside it
        reads += store_inputs(cache_root(run_config(config, overrides=overrides).cache))
    guard(Declared("embed", unique(reads), cache_output(cfg, role)))
    texts = texts_to_embed(cfg)
    opened = open_embedder(cfg.model, cfg.cache)
    cached = opened.cached
    assert cached is not None  # the cache is on (checked above)
    assert opened.root is not None
    keys = {kind: cached.keys(texts[kind], kind) for kind in KINDS}
    every = distinct_keys(np.concatenate([keys[k] for k in KINDS]))
    if len(every):
        check_cache_writable(cached.namespace.path)  # before any text is embedded
    chosen = shard_keys(every, *spec) if spec is not None else every
    if on_keys is not None:
        on_keys(chosen)
    start = time.perf_counter()
    counts: dict[str, KindCount] = {}
    with progress() as factory:
        for kind in KINDS:
            rows = first_rows_in(keys[kind], chosen)
            counts[kind] = _embed_kind(cached, [texts[kind][int(i)] for i in rows], kind, factory)
    seconds = time.perf_counter() - start
    embedded = sum(c.embedded for c in counts.values())
    _check_written(cached, embedded)
    return EmbedOutcome(
        shard=spec,
        total_keys=len(every),
        keys=len(chosen),
        embedded=embedded,
        seconds=seconds,
        cache_dir=str(opened.root),
        namespace=cached.namespace.digest[:32] if len(every) else None,
        kinds=counts,
        warnings=list(cached.warnings),
    )
