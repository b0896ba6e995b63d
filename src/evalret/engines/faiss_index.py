"""Vector search with faiss behind one function, under evalret's tie rule (core.ranking).

Search fetches a little past the depth and widens the fetch while a tie straddles the cut, so the
documents kept at the cut are the ones trec_eval would keep (score descending, then document id
descending).

Exact search (``exact_search``) scores the document matrix in place, in row blocks, with faiss's
flat inner-product kernel (the one ``IndexFlatIP.search`` runs), and merges each block's top
documents into a running top ``depth`` under the tie rule: no index holds a second copy of the
vectors. Blocks start at multiples of faiss's own 1024-row BLAS block, so every score is computed
by the same kernel call as with an ``IndexFlatIP`` over the whole matrix, and the rankings are the
same.

faiss is imported lazily. HNSW graphs are built on ``indexes.hnsw.threads`` threads (all cores
when null). One thread gives the same graph every build; faiss's parallel insertion makes the
graph depend on thread timing, so a gate on hnsw metrics wants one thread or a cached graph.
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
FAISS_BLAS_ROWS = 1024  # faiss's distance_compute_blas_database_bs: its row block for sgemm
EXACT_BLOCK = 128 * FAISS_BLAS_ROWS  # document rows scored per block by exact_search
HASH_ROWS = 65_536  # rows hashed at a time by hnsw_cache_key

# (queries, k) -> (ids int64 [Q, k], scores float32 [Q, k]): the top k of one searched set
Finder = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]


def build_exact(vectors: np.ndarray) -> Any:
    """An ``IndexFlatIP`` holding a copy of ``vectors``: the reference that ``exact_search``
    reproduces without the copy (kept for tests and benchmarks)."""
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return index


def hnsw_threads(cfg: HnswIndexConfig) -> int:
    """The threads an HNSW build uses: ``cfg.threads``, or all that faiss's OpenMP may use."""
    import faiss

    return cfg.threads if cfg.threads is not None else max(1, faiss.omp_get_max_threads())


def build_hnsw(
    vectors: np.ndarray, cfg: HnswIndexConfig, progress: Callable[[int], None] | None = None
) -> Any:
    """The graph of ``vectors``, built on ``hnsw_threads(cfg)`` threads; faiss's thread count
    is restored afterwards."""
    import faiss

    index = faiss.IndexHNSWFlat(vectors.shape[1], cfg.m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = cfg.ef_construction
    index.hnsw.efSearch = cfg.ef_search
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(hnsw_threads(cfg))
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
    """sha256 of the vectors and of everything that shapes the graph. The thread count is one of
    them: a graph built on one thread keeps the key it always had ("threads": 1); a
    multi-threaded one is keyed by its thread count. The vectors are hashed in row blocks (no
    copy of the matrix)."""
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
                "threads": hnsw_threads(cfg),
            }
        ).encode()
    )
    for start in range(0, len(vectors), HASH_ROWS):
        block = np.ascontiguousarray(vectors[start : start + HASH_ROWS], dtype=np.float32)
        h.update(block.tobytes())  # one block at a time
    return h.hexdigest()


def _read_cached(path: Path, vectors: np.ndarray) -> Any | None:
    """The cached index at ``path`` when it reads back whole and fits ``vectors``, else None."""
    import faiss

    try:
        index: Any = faiss.read_index(str(path))  # already its subclass (HNSW, IVF, ...)
    except RuntimeError:
        return None
    if index.ntotal != len(vectors) or index.d != vectors.shape[1]:
        return None
    return index


def _save(index: Any, path: Path) -> None:
    import faiss

    def write(f: BinaryIO) -> None:
        """faiss's own file format, through the handle atomic_write gives (and fsyncs)."""
        writer = faiss.PyCallbackIOWriter(f.write)  # type: ignore[attr-defined]  # not in its stubs
        faiss.write_index(index, writer)

    atomic_write(path, write)


def cached_index(
    path: Path | None,
    vectors: np.ndarray,
    build: Callable[[], Any],
    what: str,
    progress: Callable[[int], None] | None = None,
    warnings: list[str] | None = None,
) -> tuple[Any, str]:
    """The faiss index of ``vectors`` kept at ``path``: read back when it was built before, else
    ``build()`` and stored there. Returns (index, "hit" | "built" | "rebuilt" | "not cached"):
    "rebuilt" when a cached index was unreadable or did not fit, "not cached" without a
    ``path``. An index that cannot be stored is used all the same, with a line naming ``what``
    in ``warnings``."""
    if path is None:
        return build(), "not cached"
    found = path.is_file()
    index = _read_cached(path, vectors) if found else None
    if index is not None:
        if progress is not None:
            progress(len(vectors))
        return index, "hit"
    index = build()
    try:
        _save(index, path)
    except (OSError, RuntimeError) as e:  # faiss reports its I/O errors as RuntimeError
        if warnings is not None:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e).strip()
            warnings.append(f"cannot store {what} in the cache ({path}): {reason}")
    return index, "rebuilt" if found else "built"


def cached_hnsw(
    vectors: np.ndarray,
    cfg: HnswIndexConfig,
    cache_dir: Path | None,
    progress: Callable[[int], None] | None = None,
    warnings: list[str] | None = None,
) -> tuple[Any, str]:
    """The HNSW index of ``vectors``: read from ``cache_dir`` when this exact graph was built
    before, else built (and stored there); its efSearch set from ``cfg`` (``cached_index``)."""
    path = None
    if cache_dir is not None:
        path = cache_dir / "indexes" / f"hnsw-{hnsw_cache_key(vectors, cfg)}.faiss"
    index, status = cached_index(
        path,
        vectors,
        lambda: build_hnsw(vectors, cfg, progress),
        "the HNSW graph",
        progress,
        warnings,
    )
    index.hnsw.efSearch = cfg.ef_search
    return index, status


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


def _top_with_ties(
    find: Finder, batch: np.ndarray, n_docs: int, depth: int
) -> tuple[np.ndarray, np.ndarray]:
    """The top documents of ``batch``'s queries among ``n_docs`` (``find`` searches them),
    holding, per query, every document that scores at least the ``depth``-th best score: the
    fetch is widened for the rows whose score at the cut is still tied at the fetch's end."""
    keep = min(depth, n_docs)
    fetch = min(n_docs, depth + TIE_MARGIN)
    ids, scores = find(batch, fetch)
    rows = np.arange(len(batch))
    while fetch < n_docs:
        straddle = (ids[rows, -1] >= 0) & (scores[rows, keep - 1] == scores[rows, -1])
        rows = rows[straddle]
        if len(rows) == 0:
            break
        fetch = min(n_docs, fetch * 2)
        wide_ids, wide_scores = find(batch[rows], fetch)
        ids = np.pad(ids, ((0, 0), (0, fetch - ids.shape[1])), constant_values=-1)
        scores = np.pad(scores, ((0, 0), (0, fetch - scores.shape[1])), constant_values=-np.inf)
        ids[rows], scores[rows] = wide_ids, wide_scores
    return ids, scores


def search(index: Any, queries: np.ndarray, depth: int, rank: np.ndarray) -> SearchResult:
    """Top ``depth`` documents per query under the tie rule, searched in query batches."""
    n_docs = int(index.ntotal)
    out = empty_result(len(queries), depth)
    keep = min(depth, n_docs)
    for start in range(0, len(queries), QUERY_BATCH):
        batch = queries[start : start + QUERY_BATCH]
        ids, scores = _top_with_ties(lambda q, k: _raw_search(index, q, k), batch, n_docs, depth)
        ids, scores = apply_tie_rule(ids, scores, rank)
        out.ids[start : start + len(batch), :keep] = ids[:, :keep]
        out.scores[start : start + len(batch), :keep] = scores[:, :keep]
    return out


def _block_finder(block: np.ndarray, first: int) -> Finder:
    """Search ``block`` (document rows from ``first`` on) with faiss's flat inner-product kernel,
    answering document indices of the whole matrix."""
    import faiss

    def find(queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        scores, ids = faiss.knn(queries, block, k, metric=faiss.METRIC_INNER_PRODUCT)
        return np.where(ids >= 0, ids + first, -1).astype(np.int64), scores

    return find


def exact_search(
    vectors: np.ndarray,
    queries: np.ndarray,
    depth: int,
    rank: np.ndarray,
    block_rows: int = EXACT_BLOCK,
) -> SearchResult:
    """Top ``depth`` documents per query under the tie rule, every document scored: the same
    rankings as ``search(build_exact(vectors), ...)``, read from ``vectors`` in place (a float32
    C-contiguous matrix, or any array: a block that is not one is copied, block by block).

    Each block of ``block_rows`` rows yields every document scoring at least its ``depth``-th
    best score; the running top ``depth`` is merged with it under the tie rule, a total order, so
    the merged top ``depth`` is the top ``depth`` of all. ``block_rows`` a multiple of 1024 (the
    default) keeps every score's kernel call that of the whole-matrix search."""
    n_docs = len(vectors)
    out = empty_result(len(queries), depth)
    keep = min(depth, n_docs)
    if keep == 0:
        return out
    for start in range(0, len(queries), QUERY_BATCH):
        batch = np.ascontiguousarray(queries[start : start + QUERY_BATCH], dtype=np.float32)
        best: tuple[np.ndarray, np.ndarray] | None = None
        for first in range(0, n_docs, block_rows):
            block = np.ascontiguousarray(vectors[first : first + block_rows], dtype=np.float32)
            find = _block_finder(block, first)
            ids, scores = _top_with_ties(find, batch, len(block), depth)
            if best is not None:
                ids = np.concatenate([best[0], ids], axis=1)
                scores = np.concatenate([best[1], scores], axis=1)
            ids, scores = apply_tie_rule(ids, scores, rank)
            best = ids[:, :keep], scores[:, :keep]
        assert best is not None  # n_docs > 0
        out.ids[start : start + len(batch), :keep] = best[0]
        out.scores[start : start + len(batch), :keep] = best[1]
    return out
