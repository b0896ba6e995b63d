"""What a faiss index costs to search: single-query latency, batch throughput, distance
computations, and bytes (`evalret sweep`).

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
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalret.engines.faiss_index import TIE_MARGIN


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
    """Vectors compared per query: HNSW counts them (faiss.cvar.hnsw_stats), a flat index
    compares every vector."""
    import faiss

    if getattr(index, "hnsw", None) is None:
        return float(index.ntotal)  # a flat index; for an IVF, an upper bound
    stats = faiss.cvar.hnsw_stats  # type: ignore[attr-defined]  # not in its stubs
    stats.reset()
    index.search(queries, fetch)
    return float(stats.ndis) / max(len(queries), 1)


def _single(index: Any, queries: np.ndarray, fetch: int, repeats: int) -> np.ndarray:
    """Seconds of every single-query search, one thread."""
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    times = np.empty(repeats * len(queries))
    try:
        n = 0
        for _ in range(repeats):
            for i in range(len(queries)):
                q = queries[i : i + 1]
                start = time.perf_counter()
                index.search(q, fetch)
                times[n] = time.perf_counter() - start
                n += 1
    finally:
        faiss.omp_set_num_threads(threads)
    return times


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
