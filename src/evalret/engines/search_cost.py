"""What each faiss-backed index's search costs in a run: the vectors it compared (``counted``)
and its single-query latency (``run_latency``), for the report's ANN and latency sections;
`evalret sweep` reads them from each point's report. All of the timing depends on the machine and
on what else runs there (``machine`` says which machine).
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")
LATENCY_QUERIES = 100  # a run times this many queries, the first in the golden set's order


def latency_note(repeats: int = 1) -> str:
    """How ``run_latency`` measured, as the report's latency section says it."""
    searches = "one search per query" if repeats == 1 else f"{repeats} searches per query"
    return (
        "single-query latency of each index's search as the run searched (tie rule included, "
        f"without filters), one thread, {searches} after one warm-up, over the first "
        f"{LATENCY_QUERIES} queries; machine-dependent"
    )


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


def run_latency(
    search: Callable[[np.ndarray], object], n_queries: int, repeats: int = 1
) -> Latency | None:
    """The latency of ``search`` (the query rows given, as the run searched them) over the
    first ``LATENCY_QUERIES`` queries, each searched ``repeats`` times, after one untimed search
    (None: no query)."""
    n = min(n_queries, LATENCY_QUERIES)
    if n == 0:
        return None
    search(np.array([0]))  # warm-up
    times = _timed_alone(search, n, repeats) * 1000
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
