"""`evalret sweep` on BEIR SciFact: how single-query latency grows with HNSW's efSearch, as
ratios against the smallest efSearch of the same run (the tests assert only the deterministic
distance computations; this is where latency is compared).

    .venv/bin/python benchmarks/bench_sweep.py [--repeats 10] [--cache DIR]

The config is the one tests/test_sweep.py sweeps: SciFact's test split, the packaged model,
nDCG@10 and recall@10 (faiss asked for 26 results), a small graph (m 4, ef_construction 16), BM25
and hybrid off. The vectors come from the embedding cache (--cache, default $EVALRET_CACHE_DIR or
the user cache); a cold cache embeds SciFact first (minutes). Writes
benchmarks/RESULTS-sweep.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCIFACT = (REPO.parent / "shared" / "data" / "scifact").resolve()
EF_SEARCH = (32, 48, 96, 256)


def write_config(path: Path) -> None:
    import yaml

    cfg = {
        "golden_set": {"path": str(SCIFACT), "format": "beir", "split": "test"},
        "model": {"name": "all-MiniLM-L6-v2", "max_seq_length": 256, "batch_size": 32},
        "metrics": ["ndcg@10", "recall@10"],
        "indexes": {
            "hnsw": {"m": 4, "ef_construction": 16},
            "bm25": {"enabled": False},
            "hybrid": {"enabled": False},
        },
    }
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args()
    env = dict(os.environ)
    if args.cache is not None:
        env["EVALRET_CACHE_DIR"] = str(args.cache)
    with tempfile.TemporaryDirectory() as tmp:
        config, out = Path(tmp) / "sweep.yaml", Path(tmp) / "out"
        write_config(config)
        values = ",".join(map(str, EF_SEARCH))
        cmd = [sys.executable, "-m", "evalret", "sweep", "-c", str(config), "--no-progress"]
        cmd += ["--set", f"indexes.hnsw.ef_search={values}", "--repeats", str(args.repeats)]
        start = time.perf_counter()
        subprocess.run([*cmd, "--out", str(out)], check=True, capture_output=True, env=env)
        seconds = time.perf_counter() - start
        report = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    rows = [
        (p["settings"]["indexes.hnsw.ef_search"], p["indexes"]["hnsw"]) for p in report["points"]
    ]
    exact = report["points"][0]["indexes"]["exact"]["cost"]
    ref = rows[0][1]["cost"]
    lines = [
        "# `evalret sweep` on SciFact: latency against efSearch",
        "",
        f"`python benchmarks/bench_sweep.py --repeats {args.repeats}`: {seconds:.1f} s for the "
        f"whole sweep. Machine: {report['machine']}. Timing figures are machine-dependent; the "
        f"ratios are against efSearch {rows[0][0]} in the same run.",
        "",
        "| ef_search | ANN recall@10 | distances/q | p50 ms | p95 ms | QPS | p50 / p50(first) "
        "| distances / distances(first) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for ef, index in rows:
        c = index["cost"]
        lines.append(
            f"| {ef} | {index['ann_recall']['recall@10']:.4f} | {c['distances_per_query']:.0f} "
            f"| {c['p50_ms']:.4f} | {c['p95_ms']:.4f} | {c['qps']:,.0f} "
            f"| {c['p50_ms'] / ref['p50_ms']:.2f} "
            f"| {c['distances_per_query'] / ref['distances_per_query']:.2f} |"
        )
    lines += [
        f"| exact | 1 | {exact['distances_per_query']:.0f} | {exact['p50_ms']:.4f} "
        f"| {exact['p95_ms']:.4f} | {exact['qps']:,.0f} | {exact['p50_ms'] / ref['p50_ms']:.2f} "
        f"| {exact['distances_per_query'] / ref['distances_per_query']:.2f} |",
        "",
    ]
    (REPO / "benchmarks" / "RESULTS-sweep.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
