"""What a faiss index costs to search: single-query latency, batch throughput, distance
computations, and bytes (`evalret sweep`); and, in every run, what each faiss-backed index's own
search costs (``counted``, ``run_latency``: the report's ANN and latency sections).

Timed is faiss's own ``index.search`` for the fetch evalret's search makes (``depth`` plus the tie
margin, capped at the corpus), with HNSW's efSearch raised to that fetch as evalret's search
raises it; evalret's tie handling, which runs after faiss, is not timed. Single-query latency:
each query searched alone, one OpenMP thread, every query ``repeats`` times (p50 and p95 over all
those searches). Throughput: the whole query set searched as one batch with faiss's default
threads, ``repeats`` times, queries per second of the median batch. One untimed batch search
warms the caches first. All of it depends on the machine and on what else runs there.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from evalret.engines.faiss_index import TIE_MARGIN

T = TypeVar("T")
LATENCY_QUERIES = 100  # a run times this many queries, the first in the golden set's order
LATENCY_NOTE = (
    "single-query latency of each index's search as the run searched (tie rule included, "
    "without filters), one thread, one search per query after one warm-up, over the first "
    f"{LATENCY_QUERIES} queries; machine-dependent"
)


@dataclass(frozen=True)
class SearchCost:
    """One index's measured search cost and size."""

    p50_ms: float  # single-query latency, median
    p95_ms: float
    qps: float  # batch throughput: queries per second
    repeats: int
    n_queries: int
    fetch: int  # results asked of faiss per query
    ef_search: int | None  # the efSearch searched with (HNSW), after raising it to the fetch
    distances_per_query: float  # vectors compared per query (faiss hnsw_stats.ndis; all for flat)
    index_bytes: int  # len(faiss.serialize_index(index))
    batch_threads: int


def machine() -> dict[str, Any]:
    """What the timing figures depend on: the machine and its load."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "load_average_1m": round(load[0], 2) if load else None,
    }


def _distances(index: Any, queries: np.ndarray, fetch: int) -> float:
    """Vectors compared per query (``counted``)."""
    return counted(index, len(queries), lambda: index.search(queries, fetch))[1]


def _single(index: Any, queries: np.ndarray, fetch: int, repeats: int) -> np.ndarray:
    """Seconds of every single-query search, one thread."""
    return _timed_alone(lambda rows: index.search(queries[rows], fetch), len(queries), repeats)


def _timed_alone(search: Callable[[np.ndarray], object], n: int, repeats: int) -> np.ndarray:
    """Seconds of ``search`` on each of the rows ``0..n-1`` alone, ``repeats`` times, faiss on
    one OpenMP thread."""
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    times = np.empty(repeats * n)
    try:
        k = 0
        for _ in range(repeats):
            for i in range(n):
                row = np.array([i])
                start = time.perf_counter()
                search(row)
                times[k] = time.perf_counter() - start
                k += 1
    finally:
        faiss.omp_set_num_threads(threads)
    return times


@dataclass(frozen=True)
class Latency:
    """One index's single-query latency in a run (``run_latency``)."""

    p50_ms: float
    p95_ms: float
    n_queries: int  # the queries timed


def run_latency(search: Callable[[np.ndarray], object], n_queries: int) -> Latency | None:
    """The latency of ``search`` (the query rows given, as the run searched them) over the
    first ``LATENCY_QUERIES`` queries, after one untimed search (None: no query)."""
    n = min(n_queries, LATENCY_QUERIES)
    if n == 0:
        return None
    search(np.array([0]))  # warm-up
    times = _timed_alone(search, n, 1) * 1000
    return Latency(
        p50_ms=round(float(np.percentile(times, 50)), 4),
        p95_ms=round(float(np.percentile(times, 95)), 4),
        n_queries=n,
    )


def counted(index: Any, n_queries: int, search: Callable[[], T]) -> tuple[T, float]:
    """``search()``'s result and the vectors it compared per query on ``index``: faiss's HNSW
    or IVF statistics (reset first), else every vector the index holds (a flat or binary scan;
    with a filter, an upper bound)."""
    import faiss

    lib: Any = faiss  # its stubs lack the statistics
    inner = lib.downcast_index(index) if isinstance(index, lib.Index) else index
    stats = None
    if getattr(inner, "hnsw", None) is not None:
        stats = lib.cvar.hnsw_stats
    elif isinstance(inner, lib.Index) and lib.try_extract_index_ivf(inner) is not None:
        stats = lib.cvar.indexIVF_stats
    if stats is not None:
        stats.reset()
    out = search()
    if stats is None:
        return out, float(index.ntotal)
    return out, float(stats.ndis) / max(n_queries, 1)


def _batch(index: Any, queries: np.ndarray, fetch: int, repeats: int) -> float:
    """Median seconds of a whole-batch search."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        index.search(queries, fetch)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def measure(index: Any, queries: np.ndarray, depth: int, repeats: int) -> SearchCost:
    """Search ``queries`` on ``index`` as described in the module docstring."""
    import faiss

    fetch = min(int(index.ntotal), depth + TIE_MARGIN)
    hnsw = getattr(index, "hnsw", None)
    ef = None
    if hnsw is not None:
        ef = max(int(hnsw.efSearch), fetch)
        hnsw.efSearch = ef
    binary = isinstance(index, faiss.IndexBinary)  # queries: packed bits (engines/quantize.py)
    queries = np.ascontiguousarray(queries, dtype=np.uint8 if binary else np.float32)
    index.search(queries, fetch)  # warm-up
    single = _single(index, queries, fetch, repeats)
    batch = _batch(index, queries, fetch, repeats)
    return SearchCost(
        p50_ms=float(np.percentile(single, 50) * 1000),
        p95_ms=float(np.percentile(single, 95) * 1000),
        qps=len(queries) / batch if batch > 0 else float("inf"),
        repeats=repeats,
        n_queries=len(queries),
        fetch=fetch,
        ef_search=ef,
        distances_per_query=_distances(index, queries, fetch),
        index_bytes=len(
            faiss.serialize_index_binary(index) if binary else faiss.serialize_index(index)
        ),
        batch_threads=faiss.omp_get_max_threads(),
    )
