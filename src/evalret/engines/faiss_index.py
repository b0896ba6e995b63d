"""Vector search with faiss behind one function, under evalret's tie rule (core.ranking).

Search fetches a little past the depth and widens the fetch while a tie straddles the cut, so the
documents kept at the cut are the ones trec_eval would keep (score descending, then document id
descending).

faiss is imported lazily. HNSW graphs are built single-threaded: faiss's parallel insertion makes
the graph depend on thread timing, and a gate must not flake.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from evalret.core.ranking import SearchResult, apply_tie_rule, empty_result
from evalret.data.atomic import atomic_write
from evalret.data.config import HnswIndexConfig

QUERY_BATCH = 4096
ADD_BATCH = 20_000
TIE_MARGIN = 16


def build_exact(vectors: np.ndarray) -> Any:
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return index


def build_hnsw(
    vectors: np.ndarray, cfg: HnswIndexConfig, progress: Callable[[int], None] | None = None
) -> Any:
    import faiss

    index = faiss.IndexHNSWFlat(vectors.shape[1], cfg.m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = cfg.ef_construction
    index.hnsw.efSearch = cfg.ef_search
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        for start in range(0, len(vectors), ADD_BATCH):
            chunk = vectors[start : start + ADD_BATCH]
            index.add(chunk)
            if progress is not None:
                progress(len(chunk))
    finally:
        faiss.omp_set_num_threads(threads)
    return index


def hnsw_cache_key(vectors: np.ndarray, cfg: HnswIndexConfig) -> str:
    """sha256 of the vectors and of everything that shapes the graph."""
    import faiss

    h = hashlib.sha256()
    h.update(
        json.dumps(
            {
                "m": cfg.m,
                "ef_construction": cfg.ef_construction,
                "shape": list(vectors.shape),
                "faiss": faiss.__version__,
                "add_batch": ADD_BATCH,
                "threads": 1,
            }
        ).encode()
    )
    h.update(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
    return h.hexdigest()


def _read_cached_hnsw(path: Path, vectors: np.ndarray, cfg: HnswIndexConfig) -> Any | None:
    """The cached graph at ``path`` when it reads back whole and fits ``vectors``, else None."""
    import faiss

    try:
        index: Any = faiss.read_index(str(path))  # already the HNSW subclass
    except RuntimeError:
        return None
    if index.ntotal != len(vectors) or index.d != vectors.shape[1]:
        return None
    index.hnsw.efSearch = cfg.ef_search
    return index


def _save_hnsw(index: Any, path: Path) -> None:
    import faiss

    def write(f: BinaryIO) -> None:
        """faiss's own file format, through the handle atomic_write gives (and fsyncs)."""
        writer = faiss.PyCallbackIOWriter(f.write)  # type: ignore[attr-defined]  # not in its stubs
        faiss.write_index(index, writer)

    atomic_write(path, write)


def cached_hnsw(
    vectors: np.ndarray,
    cfg: HnswIndexConfig,
    cache_dir: Path | None,
    progress: Callable[[int], None] | None = None,
    warnings: list[str] | None = None,
) -> tuple[Any, str]:
    """The HNSW index of ``vectors``: read from ``cache_dir`` when this exact graph was built
    before, else built (and stored there). Returns (index, "hit" | "built" | "rebuilt" |
    "not cached"): "rebuilt" when a cached graph was unreadable or did not fit. A graph that
    cannot be stored is used all the same, with a line in ``warnings``."""
    if cache_dir is None:
        return build_hnsw(vectors, cfg, progress), "not cached"
    path = cache_dir / "indexes" / f"hnsw-{hnsw_cache_key(vectors, cfg)}.faiss"
    found = path.is_file()
    index = _read_cached_hnsw(path, vectors, cfg) if found else None
    if index is not None:
        if progress is not None:
            progress(len(vectors))
        return index, "hit"
    index = build_hnsw(vectors, cfg, progress)
    try:
        _save_hnsw(index, path)
    except (OSError, RuntimeError) as e:  # faiss reports its I/O errors as RuntimeError
        if warnings is not None:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e).strip()
            warnings.append(f"cannot store the HNSW graph in the cache ({path}): {reason}")
    return index, "rebuilt" if found else "built"


def _raw_search(index: Any, queries: np.ndarray, fetch: int) -> tuple[np.ndarray, np.ndarray]:
    ef = getattr(getattr(index, "hnsw", None), "efSearch", None)
    if ef is not None and ef < fetch:
        index.hnsw.efSearch = fetch  # faiss would return fewer than `fetch` results otherwise
    try:
        scores, ids = index.search(queries, fetch)
    finally:
        if ef is not None:
            index.hnsw.efSearch = ef
    return ids.astype(np.int64), scores


def search(index: Any, queries: np.ndarray, depth: int, rank: np.ndarray) -> SearchResult:
    """Top ``depth`` documents per query under the tie rule, searched in query batches."""
    n_docs = int(index.ntotal)
    out = empty_result(len(queries), depth)
    keep = min(depth, n_docs)
    for start in range(0, len(queries), QUERY_BATCH):
        batch = queries[start : start + QUERY_BATCH]
        fetch = min(n_docs, depth + TIE_MARGIN)
        ids, scores = _raw_search(index, batch, fetch)
        rows = np.arange(len(batch))
        # widen the fetch for rows whose score at the cut is still tied at the fetch's end
        while fetch < n_docs:
            straddle = (ids[rows, -1] >= 0) & (scores[rows, keep - 1] == scores[rows, -1])
            rows = rows[straddle]
            if len(rows) == 0:
                break
            fetch = min(n_docs, fetch * 2)
            wide_ids, wide_scores = _raw_search(index, batch[rows], fetch)
            ids = np.pad(ids, ((0, 0), (0, fetch - ids.shape[1])), constant_values=-1)
            scores = np.pad(scores, ((0, 0), (0, fetch - scores.shape[1])), constant_values=-np.inf)
            ids[rows], scores[rows] = wide_ids, wide_scores
        ids, scores = apply_tie_rule(ids, scores, rank)
        out.ids[start : start + len(batch), :keep] = ids[:, :keep]
        out.scores[start : start + len(batch), :keep] = scores[:, :keep]
    return out
