"""Memory of exact search at 1M x 384, and HNSW build time on all cores against one thread.

    .venv/bin/python benchmarks/bench_memory.py [--docs 1000000] [--hnsw-sizes 100000 200000]
        [--skip-hnsw] [--out benchmarks/RESULTS-memory.md]

Exact search: synthetic unit vectors (dimension 384, float32) are stored once in an embedding
cache namespace (evalret's own writer, four shards), then read back and searched (1,000 queries,
depth 100) by each path in its own process, whose peak resident set (ru_maxrss) is that path's
alone:

- ``old cache``: the read path and search of before: the matched rows gathered out of the memory
  maps in one fancy-indexing step (a whole-size temporary, the mapped pages left resident), then
  an ``IndexFlatIP`` holding a copy of the matrix;
- ``new cache``: today's read path (``copy_rows``: blocks into one preallocated matrix, the
  mapped pages released behind) and ``exact_search`` over the matrix in place;
- ``old memory`` / ``new memory``: the same vectors made in the process (no cache): an
  ``IndexFlatIP`` copy against ``exact_search``.

Each figure is given as a ratio of the vector bytes: (peak RSS - the process's RSS after its
imports) / vector bytes, so the interpreter, numpy and faiss are left out (the embedding model,
not loaded here, comes on top in a real run). Every path's rankings are hashed: they must agree.

HNSW: the same kind of vectors, built with evalret's ``build_hnsw`` (M=32, efConstruction=200)
on one thread and on all cores, each in its own process; the 1M figure is extrapolated (see the
results file for the reasoning).

BM25 (``--bm25-docs N``): SciFact's abstracts (title + text) repeated up to N documents, indexed
and searched (100 SciFact queries) by evalret's ``bm25_search``; memory is the growth of the
resident set over the process with the texts already loaded. Repeated texts add no vocabulary, so
this measures the postings and the per-document arrays, which grow with the document count.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DIM = 384
N_QUERIES = 1000
DEPTH = 100
SHARDS = 4
IDENTITY = {"name": "bench-memory", "dim": DIM}


def vectors(n: int, seed: int) -> np.ndarray:
    """Unit vectors around a few hundred cluster centres (embedding-like), float32 [n, DIM]."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((64, DIM)).astype(np.float32)
    centres = rng.standard_normal((300, 64)).astype(np.float32)
    out = np.empty((n, DIM), dtype=np.float32)
    step = 10_000  # small steps: the temporaries stay small beside the matrix
    for start in range(0, n, step):
        m = min(step, n - start)
        local = centres[rng.integers(0, len(centres), m)] + 0.6 * rng.standard_normal((m, 64))
        block = local.astype(np.float32) @ basis + 0.3 * rng.standard_normal((m, DIM)).astype(
            np.float32
        )
        out[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def queries_for(n: int) -> np.ndarray:
    rng = np.random.default_rng(1)
    docs = vectors(min(n, 5_000), seed=0)  # near the corpus's clusters; small, so its peak is too
    q = docs[rng.integers(0, len(docs), N_QUERIES)] + 0.05 * rng.standard_normal(
        (N_QUERIES, DIM)
    ).astype(np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def keys(n: int) -> np.ndarray:
    from evalret.engines.cache import text_keys

    return text_keys([f"document {i}" for i in range(n)])


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def fill_cache(root: Path, n: int) -> None:
    """One namespace of ``n`` vectors in SHARDS shards, written by evalret's cache."""
    from evalret.engines.cache import Namespace

    ns = Namespace(root, IDENTITY)
    all_keys = keys(n)
    docs = vectors(n, seed=0)
    bounds = np.linspace(0, n, SHARDS + 1).astype(int)
    for lo, hi in itertools.pairwise(bounds):
        ns.store(all_keys[lo:hi], docs[lo:hi])


def old_gather(out: np.ndarray, dst: np.ndarray, source: np.ndarray, src: np.ndarray) -> None:
    """The cache's read of before: one fancy-indexing gather out of the memory map."""
    out[dst] = source[src]


def child(path: str, n: int, root: Path | None) -> dict[str, float | str]:
    """Runs in its own process: read (or make) the matrix, search it, report peak RSS."""
    import faiss  # noqa: F401  (imported before the baseline is taken)

    import evalret.engines.cache as cache
    from evalret.core.ranking import id_rank
    from evalret.engines.faiss_index import build_exact, exact_search, search

    wanted = keys(n)
    rank = id_rank([f"d{i:07d}" for i in range(n)])
    queries = queries_for(n)
    base = rss_mb()
    start = time.perf_counter()
    if root is not None:
        if path.startswith("old"):
            cache.copy_rows = old_gather  # type: ignore[assignment]
        # kept open for the run, as CachedEmbedder keeps its namespace (and its memory maps)
        namespace = cache.Namespace(root, IDENTITY)
        found, docs = namespace.lookup(wanted, cache.CacheStats())
        assert docs is not None and found.all()
    else:
        docs = vectors(n, seed=0)
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    if path.startswith("old"):
        result = search(build_exact(docs), queries, DEPTH, rank)
    else:
        result = exact_search(docs, queries, DEPTH, rank)
    search_s = time.perf_counter() - start
    if root is not None:
        del namespace
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    digest = hashlib.sha256(result.ids.tobytes() + result.scores.tobytes()).hexdigest()[:16]
    return {
        "base_mb": base,
        "peak_mb": peak,
        "vectors_mb": docs.nbytes / 2**20,
        "read_s": read_s,
        "search_s": search_s,
        "rankings": digest,
    }


def hnsw_child(n: int, threads: int | None) -> dict[str, float]:
    import faiss

    from evalret.data.config import HnswIndexConfig
    from evalret.engines.faiss_index import build_hnsw, hnsw_threads

    docs = vectors(n, seed=0)
    cfg = HnswIndexConfig(m=32, ef_construction=200, ef_search=128, threads=threads)
    base = rss_mb()
    start = time.perf_counter()
    index = build_hnsw(docs, cfg)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    graph_mb = len(faiss.serialize_index(index)) / 2**20
    return {
        "threads": hnsw_threads(cfg),
        "build_s": seconds,
        "base_mb": base,
        "peak_mb": peak,
        "index_mb": graph_mb,
        "vectors_mb": docs.nbytes / 2**20,
    }


def bm25_child(n: int, scifact: Path) -> dict[str, float]:
    from evalret.core.ranking import id_rank
    from evalret.data.config import Bm25IndexConfig
    from evalret.engines.lexical import bm25_search

    with open(scifact / "corpus.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    base_texts = [f"{r.get('title', '')} {r['text']}" for r in rows]
    texts = [base_texts[i % len(base_texts)] for i in range(n)]
    with open(scifact / "queries.jsonl", encoding="utf-8") as f:
        queries = [json.loads(line)["text"] for line in f][:100]
    rank = id_rank([f"d{i:07d}" for i in range(n)])
    base = rss_mb()
    start = time.perf_counter()
    bm25_search(texts, queries, Bm25IndexConfig(), DEPTH, rank)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "docs": n,
        "seconds": seconds,
        "texts_mb": sum(len(t.encode("utf-8")) for t in texts) / 2**20,
        "base_mb": base,
        "peak_mb": peak,
    }


def bm25_rows(n: int, scifact: Path) -> list[str]:
    f = run_child("bm25", str(scifact), str(n), "-")
    growth = float(f["peak_mb"]) - float(f["base_mb"])
    return [
        "| documents | index + search s | text MiB | RSS with texts loaded MiB | peak RSS MiB "
        "| growth MiB | growth per million documents |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {n:,} | {f['seconds']:.1f} | {f['texts_mb']:,.0f} | {f['base_mb']:,.0f} "
        f"| {f['peak_mb']:,.0f} | {growth:,.0f} | {growth * 1e6 / n / 1024:.1f} GiB |",
    ]


def run_child(*args: str) -> dict[str, float | str]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", *args], check=True, capture_output=True, text=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def exact_rows(n: int) -> list[str]:
    lines = [
        "| path | read s | search s | vectors MiB | RSS after imports MiB | peak RSS MiB "
        "| (peak - imports) / vectors | rankings |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        run_child("fill", "-", str(n), tmp)  # in a child: Linux carries a parent's peak RSS
        # into the processes it starts (fork, then exec, keep the larger maximum)
        for path in ("old cache", "new cache", "old memory", "new memory"):
            root = tmp if path.endswith("cache") else "-"
            f = run_child("exact", path, str(n), root)
            ratio = (float(f["peak_mb"]) - float(f["base_mb"])) / float(f["vectors_mb"])
            lines.append(
                f"| {path} | {f['read_s']:.2f} | {f['search_s']:.2f} | {f['vectors_mb']:,.0f} "
                f"| {f['base_mb']:,.0f} | {f['peak_mb']:,.0f} | {ratio:.2f}x | {f['rankings']} |"
            )
            print(lines[-1], flush=True)
    return lines


def hnsw_rows(sizes: list[int]) -> list[str]:
    lines = [
        "| vectors | threads | build s | vectors MiB | graph file MiB "
        "| (peak - before build) MiB |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n in sizes:
        for threads in ("1", "all"):
            f = run_child("hnsw", threads, str(n), "-")
            lines.append(
                f"| {n:,} | {int(f['threads'])} | {f['build_s']:.1f} | {f['vectors_mb']:,.0f} "
                f"| {f['index_mb']:,.0f} | {float(f['peak_mb']) - float(f['base_mb']):,.0f} |"
            )
            print(lines[-1], flush=True)
    return lines


def nlogn(n: float) -> float:
    return n * math.log(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--hnsw-sizes", type=int, nargs="+", default=[100_000, 200_000])
    parser.add_argument("--skip-exact", action="store_true")
    parser.add_argument("--skip-hnsw", action="store_true")
    parser.add_argument("--bm25-docs", type=int, default=0, help="0: no BM25 measurement")
    parser.add_argument(
        "--scifact", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/scifact"
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, path, n, root = args.child
        if kind == "fill":
            fill_cache(Path(root), int(n))
            figures = {}
        elif kind == "bm25":
            figures = bm25_child(int(n), Path(path))
        elif kind == "exact":
            figures = child(path, int(n), None if root == "-" else Path(root))
        else:
            figures = hnsw_child(int(n), None if path == "all" else int(path))
        print(json.dumps(figures))
        return
    lines = [f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.1f} at start", ""]
    if not args.skip_exact:
        lines += [f"Exact search, {args.docs:,} x {DIM}, {N_QUERIES} queries, depth {DEPTH}:", ""]
        lines += [*exact_rows(args.docs), ""]
    if not args.skip_hnsw:
        lines += ["HNSW build (M=32, efConstruction=200):", "", *hnsw_rows(args.hnsw_sizes)]
        lines += ["", f"n log n scale factor to 1M from {args.hnsw_sizes[-1]:,}: "]
        lines[-1] += f"{nlogn(1e6) / nlogn(args.hnsw_sizes[-1]):.2f}"
    if args.bm25_docs:
        lines += ["", "BM25 (SciFact abstracts repeated):", ""]
        lines += bm25_rows(args.bm25_docs, args.scifact)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
