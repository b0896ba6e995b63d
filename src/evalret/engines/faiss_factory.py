"""Any faiss index-factory string as an index of a run (``indexes.<name>: {type: faiss}``).

The index is built by ``faiss.index_factory`` over inner product, trained on a sample of the
document vectors drawn with ``seed`` (all of them when ``train_size`` is null or not smaller than
the corpus), every clustering inside it (IVF's coarse quantizer, PQ's sub-quantizers) seeded with
``seed`` as well, then filled with every document vector, on ``threads`` threads (one, the
default, builds the same index every time; an HNSW part built on more depends on thread timing).
The built index is kept in the cache directory as ``faiss-<key>.faiss``, the key a digest of the
vectors and of every setting that shapes the index (not of the search parameters), like the HNSW
graph (engines/faiss_index.py). Search parameters are set with ``faiss.ParameterSpace`` after
building or reading back; search runs under evalret's tie rule (faiss_index.search).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.digest import json_digest
from evalret.data import faiss_demand
from evalret.data.config import FAISS_CHECKS, FaissIndexConfig, faiss_error
from evalret.engines.faiss_index import ADD_BATCH, HASH_ROWS, cached_index
from evalret.errors import ConfigError

_SUBINDEXES = ("index", "storage", "quantizer", "base_index")  # where faiss nests an index


def _parts(index: Any) -> Iterator[Any]:
    """``index`` and every index nested in it (a pre-transform's, an IVF's quantizer, ...)."""
    import faiss

    part = faiss.downcast_index(index)  # a view: ``index`` (held here) owns the C++ object
    yield part
    for attr in _SUBINDEXES:
        sub = getattr(part, attr, None)
        if isinstance(sub, faiss.Index):
            yield from _parts(sub)


def _seed_clustering(index: Any, seed: int) -> None:
    """Seed every k-means faiss runs while training ``index``: IVF's and PQ's."""
    for part in _parts(index):
        for holder in (part, getattr(part, "pq", None)):
            cp = getattr(holder, "cp", None)
            if cp is not None and hasattr(cp, "seed"):
                cp.seed = seed


def training_rows(n: int, cfg: FaissIndexConfig) -> np.ndarray:
    """The document rows the index is trained on: ``train_size`` drawn with ``seed``, in order."""
    if cfg.train_size is None or cfg.train_size >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(cfg.seed).choice(n, cfg.train_size, replace=False))


def physical_memory() -> int | None:
    """The machine's memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def check_trainable(cfg: FaissIndexConfig, name: str, n_vectors: int, dim: int | None) -> None:
    """ConfigError naming ``indexes.<name>.factory`` when ``cfg``'s index cannot be trained on
    ``n_vectors`` document vectors: its training sample is smaller than one of its codebooks
    (faiss's k-means needs at least one vector per centroid), or, with the dimension ``dim``, its
    codebooks, transforms and lists alone take more than the machine's memory. Checked from the
    factory string (data/faiss_demand.py) before faiss allocates anything; before embedding too
    (``dim`` None), where the corpus is known."""
    import faiss

    parts = faiss_demand.parse(cfg.factory)
    n_train = n_vectors if cfg.train_size is None else min(cfg.train_size, n_vectors)
    top = faiss_demand.largest(parts)
    if top is not None and n_train < top.centroids:
        if cfg.train_size is None or cfg.train_size >= n_vectors:
            sample = f"the whole corpus, {n_vectors:,} documents"
        else:
            sample = f"indexes.{name}.train_size: {cfg.train_size:,}"
        well = faiss.ClusteringParameters().min_points_per_centroid
        raise ConfigError(
            f"indexes.{name}.factory: {cfg.factory!r} cannot be trained on {n_train:,} vectors "
            f"({sample}): {top.what()}, and faiss's k-means needs at least one training vector "
            f"per centroid ({top.centroids:,}; {well} per centroid, {well * top.centroids:,}, to "
            "train well). Ask for fewer centroids (a smaller IVF or nbits) or train on more."
        )
    if dim is None:
        return
    need, memory = faiss_demand.bytes_at(parts, dim, n_train), physical_memory()
    if memory is not None and need > memory:
        raise ConfigError(
            f"indexes.{name}.factory: {cfg.factory!r} over {n_vectors:,} vectors of dimension "
            f"{dim:,} takes at least {faiss_demand.size_text(need)} "
            f"({faiss_demand.describe(parts)}), more than this machine's memory "
            f"({faiss_demand.size_text(memory)})"
        )


def set_params(index: Any, cfg: FaissIndexConfig) -> None:
    """Set the search parameters with faiss.ParameterSpace."""
    import faiss

    space = faiss.ParameterSpace()
    for name, value in cfg.params.items():
        space.set_index_parameter(index, name, float(value))


def build_factory_index(
    vectors: np.ndarray,
    cfg: FaissIndexConfig,
    name: str,
    progress: Callable[[int], None] | None = None,
) -> Any:
    """The index ``cfg.factory`` of ``vectors``, trained and filled (module docstring).
    ConfigError naming ``indexes.<name>.factory`` when faiss cannot build it for these vectors
    (a PQ whose sub-vectors do not divide the dimension; too few vectors to train on, or too
    little memory, both told before faiss allocates: ``check_trainable``)."""
    import faiss

    check_trainable(cfg, name, len(vectors), vectors.shape[1])  # before faiss allocates
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(cfg.threads or max(1, threads))
    try:
        index = faiss.index_factory(vectors.shape[1], cfg.factory, faiss.METRIC_INNER_PRODUCT)
        _seed_clustering(index, cfg.seed)
        if not index.is_trained:
            index.train(vectors[training_rows(len(vectors), cfg)])
        for start in range(0, len(vectors), ADD_BATCH):
            chunk = vectors[start : start + ADD_BATCH]
            index.add(chunk)
            if progress is not None:
                progress(len(chunk))
    except RuntimeError as e:
        raise ConfigError(
            f"indexes.{name}.factory: faiss cannot build {cfg.factory!r} over "
            f"{len(vectors)} vectors of dimension {vectors.shape[1]}: {faiss_error(e)}"
        ) from None
    finally:
        faiss.omp_set_num_threads(threads)
    return index


def factory_cache_key(vectors: np.ndarray, cfg: FaissIndexConfig) -> str:
    """sha256 of the settings' digest (core.digest.json_digest of every setting that shapes the
    built index) and of the vectors, hashed in row blocks (no copy of the matrix)."""
    import faiss

    h = hashlib.sha256()
    shape = {
        "factory": cfg.factory,
        "metric": "inner_product",
        "train_size": cfg.train_size,
        "seed": cfg.seed,
        "threads": cfg.threads,
        "shape": list(vectors.shape),
        "faiss": faiss.__version__,
        "add_batch": ADD_BATCH,
    }
    h.update(json_digest(shape).encode())
    for start in range(0, len(vectors), HASH_ROWS):
        block = np.ascontiguousarray(vectors[start : start + HASH_ROWS], dtype=np.float32)
        h.update(block.tobytes())
    return h.hexdigest()


def cached_factory_index(
    vectors: np.ndarray,
    cfg: FaissIndexConfig,
    name: str,
    cache_dir: Path | None,
    progress: Callable[[int], None] | None = None,
    warnings: list[str] | None = None,
) -> tuple[Any, str]:
    """The index of ``vectors`` with its search parameters set: read from ``cache_dir`` when
    built before, else built (and stored there). Returns (index, "hit" | "built" | "rebuilt" |
    "not cached"), as engines.faiss_index.cached_hnsw does."""
    path = None
    if cache_dir is not None:
        path = cache_dir / "indexes" / f"faiss-{factory_cache_key(vectors, cfg)}.faiss"
    index, status = cached_index(
        path,
        vectors,
        lambda: build_factory_index(vectors, cfg, name, progress),
        f"index {name}",
        progress,
        warnings,
    )
    set_params(index, cfg)
    return index, status


def index_bytes(index: Any) -> int:
    """The index's size: the length of faiss's serialization of it (``serialize_index``, or
    ``serialize_index_binary``), counted as faiss writes it, without a copy of the index."""
    import faiss

    written = 0

    def count(chunk: bytes) -> int:
        nonlocal written
        written += len(chunk)
        return len(chunk)

    writer = faiss.PyCallbackIOWriter(count)  # type: ignore[attr-defined]  # not in its stubs
    if isinstance(index, faiss.IndexBinary):
        faiss.write_index_binary(index, writer)
    else:
        faiss.write_index(index, writer)
    del writer  # flushes what it buffered
    return written


CHECK_DIMS = (1680, 1536)  # 2^4*3*5*7 and 2^9*3: dimensions a factory string is tried at
# their divisors, smallest first: the string is built at the first faiss takes, where its
# codebooks take the least memory (a PQ16x20's 64 MiB at 16 dimensions, 6.6 GiB at 1680)
TRY_DIMS = sorted({d for top in CHECK_DIMS for d in range(1, top + 1) if top % d == 0})


def check_factory(
    factory: str, params: dict[str, int | float]
) -> tuple[tuple[str, ...], str] | None:
    """Why faiss refuses ``factory`` (over inner product, at every one of ``TRY_DIMS`` where its
    codebooks stay within faiss_demand.CHECK_BYTES) or one of ``params`` on it, with the key below
    the index; None when it takes both. The vectors' own dimension is checked again when the
    index is built."""
    import faiss

    parts = faiss_demand.parse(factory)
    index, reasons = None, {}
    for dim in TRY_DIMS:
        if faiss_demand.bytes_at(parts, dim) > faiss_demand.CHECK_BYTES:
            break  # never allocated to see whether it parses
        try:
            index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
            break
        except RuntimeError as e:
            reasons[dim] = faiss_error(e)
    if index is None:
        reason = reasons.get(CHECK_DIMS[0]) or next(reversed(reasons.values()), "")
        if not reason:  # refused by size before faiss said anything (factory_problem says more)
            need = faiss_demand.bytes_at(parts, TRY_DIMS[0])
            reason = f"it takes {faiss_demand.size_text(need)} before any vector is added"
        return ("factory",), f"faiss cannot build index {factory!r}: {reason}"
    space = faiss.ParameterSpace()
    for name, value in params.items():
        try:
            space.set_index_parameter(index, name, float(value))
        except RuntimeError:
            return ("params", name), (
                f"faiss's ParameterSpace cannot set {name!r} on index {factory!r} (nprobe: IVF; "
                "efSearch: HNSW; quantizer_efSearch: an IVF's HNSW quantizer; ...)"
            )
    return None


if check_factory not in FAISS_CHECKS:
    FAISS_CHECKS.append(check_factory)


def size_figures(index: Any, n_vectors: int, distances: float) -> dict[str, float]:
    """What a faiss-backed retriever tells of its index (``Retriever.index_cost``): its bytes,
    those per document, and the vectors its search compared per query."""
    n_bytes = index_bytes(index)
    return {
        "index_bytes": n_bytes,
        "bytes_per_vector": n_bytes / max(n_vectors, 1),
        "distances_per_query": distances,
    }
