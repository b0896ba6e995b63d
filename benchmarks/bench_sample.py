"""Cold `evalret run` on BEIR SciFact, whole set against a seeded sample (config ``sample``:
``--queries`` queries and a corpus of ``--documents`` documents), as whole processes.

    .venv/bin/python benchmarks/bench_sample.py [--config configs/scifact.yaml]
        [--queries 100] [--documents 1000] [--markdown benchmarks/RESULTS-sample.md]

Every run is cold: a fresh, empty cache directory (EVALRET_CACHE_DIR). The sampled run goes twice
(each cold) to show that a rerun draws the same sample and gives the same figures. Figures are
ratios against the whole-set cold run measured in the same invocation.
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
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
EVALRET = [sys.executable, "-m", "evalret"]


def cold_run(config: Path, work: Path, name: str) -> dict[str, Any]:
    """One `evalret run` with an empty cache directory: wall seconds and the report."""
    slug = "".join(c if c.isalnum() else "-" for c in name)
    cache, out = work / f"cache-{slug}", work / f"out-{slug}"
    env = {**os.environ, "EVALRET_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    subprocess.run(
        [*EVALRET, "run", "-c", str(config), "-o", str(out), "--no-progress"],
        check=True,
        capture_output=True,
        env=env,
    )
    seconds = time.perf_counter() - start
    report = json.loads((out / "report.json").read_text())
    return {"name": name, "seconds": seconds, "report": report}


def configs(base: Path, work: Path, queries: int, documents: int) -> tuple[Path, Path]:
    """The whole-set config (``base`` with absolute paths) and its sampled twin."""
    data = yaml.safe_load(base.read_text())
    data["golden_set"]["path"] = str((base.parent / data["golden_set"]["path"]).resolve())
    data.pop("output", None)
    full = work / "full.yaml"
    full.write_text(yaml.safe_dump(data))
    sampled = work / "sampled.yaml"
    data["sample"] = {"queries": queries, "documents": documents, "seed": 0}
    sampled.write_text(yaml.safe_dump(data))
    return full, sampled


def row(run: dict[str, Any], reference: float) -> str:
    r = run["report"]
    cache = r["embedding"]["cache"]
    ndcg = r["indexes"]["exact"]["slices"]["all"]["metrics"]["ndcg@10"]
    return (
        f"| {run['name']} | {run['seconds']:.2f} | {run['seconds'] / reference:.3f} | "
        f"{reference / run['seconds']:.2f} | {cache['document']['misses']} | "
        f"{cache['query']['misses']} | {ndcg['value']:.5f} "
        f"[{ndcg['ci_low']:.3f}, {ndcg['ci_high']:.3f}] |"
    )


def same_sample(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two sampled runs drew the same queries and documents and scored them the same."""
    sa, sb = a["report"]["sample"], b["report"]["sample"]
    keys = ("query_digest", "document_digest")
    return all(sa[k] == sb[k] for k in keys) and (
        a["report"]["indexes"]["exact"]["per_query"] == b["report"]["indexes"]["exact"]["per_query"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "scifact.yaml")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalret-bench-sample-") as tmp:
        work = Path(tmp)
        full_cfg, sampled_cfg = configs(args.config, work, args.queries, args.documents)
        runs = [
            cold_run(full_cfg, work, "whole set"),
            cold_run(sampled_cfg, work, f"sample {args.queries} q / {args.documents} docs"),
            cold_run(sampled_cfg, work, "same sample, rerun"),
        ]
    reference = runs[0]["seconds"]
    sample = runs[1]["report"]["sample"]
    lines = [
        "| cold run | wall s (whole process) | / whole set | speed-up | documents embedded "
        "| queries embedded | nDCG@10 exact [95% CI] |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
        *(row(r, reference) for r in runs),
        "",
        f"Sample: {sample['n_queries']} of {sample['n_queries_total']} queries, "
        f"{sample['n_documents']} of {sample['n_documents_total']} documents "
        f"({sample['n_documents_judged']} judged for the sampled queries). "
        f"Rerun drew the same sample and scored it identically: {same_sample(runs[1], runs[2])}.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")


if __name__ == "__main__":
    main()
