"""`evalret embed [--shard I/N]`: fill the embedding cache with what `evalret run` would embed
(the texts pipeline/plan.py selects for the run: its sample too), all of it or one of N
deterministic slices, and stop (no search, no report).

The slices are cut over the distinct cache keys of every text the run embeds (documents and
queries, as fed to the model: after their prefixes), sorted and dealt out round-robin
(core/sharding.py): N jobs with shards 1/N .. N/N embed disjoint sets that together cover
everything, whatever the cache already holds. Each job embeds only the keys of its shard still
missing from the cache; after the N jobs (sharing, or merging, the cache directory) a run on the
same config embeds nothing.

``--export FILE`` also writes the documents' vectors, as the run searches them, to a Parquet or
``.npz`` file (data/vector_export.py) with the model identity (``model_identity``): the documents
of the run (its sample applied) are embedded whatever its indexes, so a store can be loaded with
evalret's vectors. It takes every document, so it is refused with ``--shard`` (a shard holds a
part of them): export with a job of its own after the shards, which then embeds nothing.
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
from evalret.data.goldenset import scan_golden_set
from evalret.data.overrides import Override
from evalret.data.paths import (
    Declared,
    Output,
    cache_output,
    config_inputs,
    guard,
    store_inputs,
    unique,
)
from evalret.data.stores import cache_root
from evalret.data.vector_export import (
    ExportRows,
    check_export_target,
    export_format,
    metadata_json,
    text_sha256,
    write_export,
)
from evalret.engines.cache import CachedEmbedder, check_cache_writable
from evalret.engines.embedders import OpenedEmbedder, open_embedder
from evalret.engines.st_embedder import Kind
from evalret.errors import ConfigError, InputError
from evalret.pipeline.configs import run_config
from evalret.pipeline.plan import (
    KINDS,
    Selection,
    fed_prefix,
    held,
    run_selection,
    texts_to_embed,
)
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
    # --export: {"path", "format", "rows", "dimension"} of the file written
    export: dict[str, Any] | None = None

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
            **({"export": dict(self.export)} if self.export is not None else {}),
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


def model_identity(cfg: Config, opened: OpenedEmbedder, dimension: int) -> dict[str, Any]:
    """The model identity an export carries (data/vector_export.py): name, dimension,
    normalisation, the prefixes as fed (a named prompt's text), the metric of the exact index,
    the fingerprint of the vectors (engines/cache.CachedEmbedder.digest), the cache namespace
    they were read from (its folder) and the embedder's whole identity."""
    assert opened.cached is not None
    model = cfg.model
    return {
        "name": model.name,
        "provider": model.provider,
        "dimension": dimension,
        "normalize": model.normalize,
        "truncate_dim": model.truncate_dim,
        "query_prefix": fed_prefix(opened.backend, model, "query"),
        "document_prefix": fed_prefix(opened.backend, model, "document"),
        "metric": "ip",  # the exact index ranks by inner product (cosine when normalised)
        "fingerprint": opened.cached.digest,
        # the cache's embedding set they were read from (with truncate_dim: the full vectors')
        "namespace": opened.cached.namespace.digest[:32],
        "identity": opened.embedder.identity(),  # truncate_dim named when cut on read
    }


def _export_rows(
    cfg: Config,
    selection: Selection,
    metadata: dict[str, Any],
    opened: OpenedEmbedder,
) -> ExportRows:
    """The rows of ``--export``: the run's documents with their vectors from the cache (all
    there once embedded), text hashes and metadata as written."""
    assert opened.cached is not None
    golden = selection.golden
    vectors = opened.cached.embed(golden.doc_texts, "document")
    return ExportRows(
        ids=list(golden.doc_ids),
        vectors=vectors,
        text_sha256=[text_sha256(t) for t in golden.doc_texts],
        metadata=[metadata_json(metadata.get(d)) for d in golden.doc_ids],
        model=model_identity(cfg, opened, int(vectors.shape[1])),
    )


def _selection(cfg: Config, export: Path | None) -> tuple[Selection, dict[str, Any]]:
    """The run's selection, and with ``export`` every document's metadata as written."""
    if export is None:
        return run_selection(cfg), {}
    scan = scan_golden_set(cfg.golden_set, cfg.relevance_level, keep_metadata=True)
    return run_selection(cfg, scan.golden_set()), scan.raw_metadata or {}


def _check_export(export: Path | None, shard: str | None) -> None:
    """InputError (exit 2) for an ``export`` with a shard or of an unknown suffix."""
    if export is None:
        return
    if shard is not None:
        raise InputError(
            f"--export with --shard {shard}: a shard embeds a part of the documents and the "
            "export holds all of them; export in a job of its own, after the shards "
            "(it then embeds nothing)"
        )
    export_format(export)


def _write(export: Path, table: ExportRows, factory: ProgressFactory | None) -> dict[str, Any]:
    """Write ``table`` to ``export`` (a progress bar over its rows); what the summary says."""
    bar = factory("Exporting vectors", len(table.ids)) if factory is not None else None
    write_export(export, table, bar)
    return {
        "path": str(export),
        "format": export_format(export),
        "rows": len(table.ids),
        "dimension": int(table.vectors.shape[1]),
    }


def embed_command(
    *,
    config: Path | None = None,
    shard: str | None = None,
    cache_dir: Path | None = None,
    no_cache: bool = False,
    progress: ProgressBars = no_bars,
    on_keys: Callable[[np.ndarray], None] | None = None,
    overrides: Sequence[Override] = (),
    export: Path | None = None,
) -> EmbedOutcome:
    """Embed shard ``shard`` ("I/N"; None: all) of what `evalret run` on ``config`` embeds into
    the cache (``cache_dir`` overrides cache.dir); with ``export``, write the documents' vectors
    there (the module docstring). The spec and the export's suffix are checked first
    (InputError, exit 2). ``on_keys`` (tests) receives the shard's distinct keys."""
    spec = parse_shard(shard) if shard is not None else None
    _check_export(export, shard)
    cfg = _config(config, cache_dir, no_cache, overrides)
    role = "--dir" if cache_dir is not None else "cache.dir"
    reads = config_inputs(cfg, config, cache_key=role)
    if cache_dir is not None:  # the config's own cache is a store too: --dir is not inside it
        reads += store_inputs(cache_root(run_config(config, overrides=overrides).cache))
    writes = cache_output(cfg, role)
    if export is not None:
        writes.append(Output("--export", export))
    guard(Declared("embed", unique(reads), writes))
    if export is not None:
        check_export_target(export)
    selection, metadata = _selection(cfg, export)
    texts = texts_to_embed(cfg, selection)
    if export is not None and not texts["document"]:  # no index of the run needs vectors
        texts["document"] = list(selection.golden.doc_texts)
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
        seconds = time.perf_counter() - start  # the embedding's (the export is not timed)
        embedded = sum(c.embedded for c in counts.values())
        _check_written(cached, embedded)
        exported = None
        if export is not None:
            exported = _write(export, _export_rows(cfg, selection, metadata, opened), factory)
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
        export=exported,
    )
