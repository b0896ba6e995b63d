"""Exact vs HNSW search with evalret's index code at growing corpus sizes: build time, search
throughput, HNSW recall@10 against exact search, and peak memory of each measurement.

    .venv/bin/python benchmarks/bench_index.py [--sizes 10000 100000 1000000] [--hnsw-max 100000]

Vectors are synthetic but embedding-like: unit vectors drawn around a few hundred cluster
centres in a lower-dimensional subspace, dimension 384, float32; 1,000 queries are perturbed
corpus vectors. Each (size, index) pair runs in its own process, so peak memory (ru_maxrss) is
that measurement's alone. HNSW is built the way evalret builds it: single-threaded, for a
deterministic graph; `--hnsw-max` skips HNSW above that size (a single-threaded build of 1M
vectors takes tens of minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

DIM = 384
N_QUERIES = 1000
K = 10


def vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((64, DIM)).astype(np.float32)
    centres = rng.standard_normal((300, 64)).astype(np.float32)
    out = np.empty((n, DIM), dtype=np.float32)
    step = 100_000
    for start in range(0, n, step):
        m = min(step, n - start)
        local = centres[rng.integers(0, len(centres), m)] + 0.6 * rng.standard_normal((m, 64))
        block = local.astype(np.float32) @ basis + 0.3 * rng.standard_normal((m, DIM)).astype(
            np.float32
        )
        out[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def measure(n: int, kind: str) -> dict[str, float]:
    """Runs inside a child process: build and search one index, return the figures."""
    from evalret.core.ranking import id_rank
    from evalret.data.config import HnswIndexConfig
    from evalret.engines.faiss_index import build_exact, build_hnsw, search

    docs = vectors(n, seed=0)
    rng = np.random.default_rng(1)
    queries = docs[rng.integers(0, n, N_QUERIES)] + 0.05 * rng.standard_normal(
        (N_QUERIES, DIM)
    ).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    rank = id_rank([f"d{i:07d}" for i in range(n)])
    start = time.perf_counter()
    if kind == "exact":
        index = build_exact(docs)
    else:
        index = build_hnsw(docs, HnswIndexConfig(m=32, ef_construction=200, ef_search=64))
    build = time.perf_counter() - start
    start = time.perf_counter()
    result = search(index, queries, K, rank)
    seconds = time.perf_counter() - start
    figures = {"build_s": build, "search_s": seconds, "qps": N_QUERIES / seconds}
    if kind == "hnsw":
        exact = search(build_exact(docs), queries, K, rank)
        hits = [len(set(a) & set(b)) / K for a, b in zip(result.ids, exact.ids, strict=True)]
        figures["recall@10"] = float(np.mean(hits))
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures["vectors_mb"] = docs.nbytes / 1e6
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--hnsw-max", type=int, default=100_000)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(int(args.child[0]), args.child[1])))
        return
    print(f"dim {DIM}, {N_QUERIES} queries, k {K}, HNSW M=32 efConstruction=200 efSearch=64")
    print(
        f"{'vectors':>10} {'index':>6} {'build s':>9} {'search s':>9} {'QPS':>9} "
        f"{'recall@10':>9} {'vectors MB':>10} {'peak MB':>8}"
    )
    for n in args.sizes:
        for kind in ("exact", "hnsw"):
            if kind == "hnsw" and n > args.hnsw_max:
                print(f"{n:>10} {kind:>6}  skipped (--hnsw-max {args.hnsw_max})")
                continue
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(n), kind],
                check=True,
                capture_output=True,
                text=True,
            )
            f = json.loads(out.stdout.strip().splitlines()[-1])
            recall = f"{f['recall@10']:.4f}" if "recall@10" in f else "-"
            print(
                f"{n:>10} {kind:>6} {f['build_s']:>9.2f} {f['search_s']:>9.3f} {f['qps']:>9.0f} "
                f"{recall:>9} {f['vectors_mb']:>10.0f} {f['peak_rss_mb']:>8.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
