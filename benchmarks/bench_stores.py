"""Every store driver on BEIR SciFact: recall@10 against exact search and the nDCG@10 change, for
a flat (exact) configuration and an approximate one, the approximate one rebuilt three times.

    .venv/bin/python benchmarks/bench_stores.py [--drivers lancedb qdrant ...] [--rebuilds 3]
        [--out benchmarks/RESULTS-stores.md]

Each figure comes from a whole `evalret run -c configs/scifact.yaml` (the 300 test queries, 5,183
documents, all-MiniLM-L6-v2 from the embedding cache) with the store added by ``--set`` in scratch
mode: evalret's own vectors loaded into a temporary collection, the index built, every query
searched, the collection dropped. A rebuild is a run of its own (a fresh collection and index),
so the spread over rebuilds is what a store's random build (HNSW levels, IVF centroids) does to
the figures. pgvector runs against a Postgres started here with pgserver (the test extra).
The figures are the run reports' ``ann.<index>.slices.all`` (recall@10, metric_deltas.ndcg@10);
nothing is timed here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "configs" / "scifact.yaml"

# driver -> [(label, settings under indexes.store, approximate)]
SETTINGS: dict[str, list[tuple[str, dict[str, Any], bool]]] = {
    "lancedb": [
        ("flat", {}, False),
        (
            "IVF_PQ 64 partitions, 48 sub-vectors, nprobes 8",
            {
                "build.index_type": "IVF_PQ",
                "build.num_partitions": 64,
                "build.num_sub_vectors": 48,
                "search.nprobes": 8,
            },
            True,
        ),
        (
            "the same, refine_factor 10",
            {
                "build.index_type": "IVF_PQ",
                "build.num_partitions": 64,
                "build.num_sub_vectors": 48,
                "search.nprobes": 8,
                "search.refine_factor": 10,
            },
            True,
        ),
    ],
    "qdrant": [("local mode (qdrant-client searches exactly)", {}, False)],
    "chroma": [
        ("build {} (ef_search at least the rows)", {}, False),
        (
            "HNSW M 16, ef_construction 100, ef_search 10",
            {
                "build.max_neighbors": 16,
                "build.ef_construction": 100,
                "build.ef_search": 10,
            },
            True,
        ),
        (
            "HNSW M 4, ef_construction 8",
            {"build.max_neighbors": 4, "build.ef_construction": 8, "build.ef_search": 1},
            True,
        ),
    ],
    "pgvector": [
        ("flat (no index: an exact scan)", {}, False),
        (
            "HNSW m 16, ef_construction 64, ef_search 40 (pgvector's defaults)",
            {"build.m": 16, "build.ef_construction": 64, "search.ef_search": 40},
            True,
        ),
    ],
    "milvus": [
        ("flat", {}, False),
        (
            "IVF_FLAT 64 lists, nprobe 8",
            {"build.index_type": "IVF_FLAT", "build.nlist": 64, "search.nprobe": 8},
            True,
        ),
        (
            "HNSW M 8, efConstruction 64, ef 128",
            {
                "build.index_type": "HNSW",
                "build.M": 8,
                "build.efConstruction": 64,
                "search.ef": 128,
            },
            True,
        ),
    ],
}


def _sets(driver: str, settings: dict[str, Any], where: Path) -> list[str]:
    base = {
        "indexes.store.type": "store",
        "indexes.store.driver": driver,
        "indexes.store.mode": "scratch",
        "indexes.hnsw.enabled": False,
        "indexes.bm25.enabled": False,
        "indexes.hybrid.enabled": False,
        "gate.ann_min_recall": None,
    }
    if driver == "pgvector":
        base["indexes.store.connect.dsn_env"] = "BENCH_PG_DSN"
    else:
        base["indexes.store.connect.path"] = str(where)
    out = []
    for key, value in {**base, **{f"indexes.store.{k}": v for k, v in settings.items()}}.items():
        out += ["--set", f"{key}={json.dumps(value)}"]
    return out


def run_once(driver: str, settings: dict[str, Any], work: Path) -> tuple[float, float]:
    """(recall@10, nDCG@10 change) of one scratch build of the store on SciFact."""
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    command = [
        str(Path(sys.executable).parent / "evalret"), "run", "-c", str(CONFIG), "--no-progress",
        "-o", str(out), *_sets(driver, settings, work / "store"),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{driver}: exit {done.returncode}\n{done.stdout[-3000:]}{done.stderr}")
    report = json.loads((out / "report.json").read_text())
    ann = report["ann"]["store"]["slices"]["all"]
    return ann["recall"]["recall@10"], ann["metric_deltas"]["ndcg@10"]


@contextmanager
def postgres() -> Iterator[None]:
    """A Postgres with the vector extension (pgserver) named by BENCH_PG_DSN."""
    import pgserver
    import psycopg

    data = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    server = pgserver.get_server(data, cleanup_mode="stop")
    try:
        uri = server.get_uri()
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        os.environ["BENCH_PG_DSN"] = uri
        yield
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)


def _spread(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.4f}"
    mean = statistics.fmean(values)
    return f"{mean:.4f} (min {min(values):.4f}, max {max(values):.4f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--drivers", nargs="+", default=list(SETTINGS))
    parser.add_argument("--rebuilds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-stores-") as tmp:
        for driver in args.drivers:
            context = postgres() if driver == "pgvector" else _nothing()
            with context:
                for label, settings, approximate in SETTINGS[driver]:
                    n = args.rebuilds if approximate else 1
                    got = [run_once(driver, settings, Path(tmp)) for _ in range(n)]
                    recall, delta = [r for r, _ in got], [d for _, d in got]
                    figures = f"{_spread(recall)} | {_spread(delta)}"
                    rows.append(f"| {driver} | {label} | {n} | {figures} |")
                    print(rows[-1], flush=True)
    table = "| store | configuration | builds | recall@10 vs exact | nDCG@10 change |\n"
    table += "|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    print(table)
    if args.out:
        args.out.write_text(table)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


if __name__ == "__main__":
    main()
