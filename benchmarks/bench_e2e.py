"""End-to-end wall time of `evalret run` on BEIR SciFact: cold cache, warm cache, and one changed
document, as whole processes; plus `evalret --help` against a bare Python start-up.

    .venv/bin/python benchmarks/bench_e2e.py [--config configs/scifact.yaml]

Ratios are against references measured in the same run: warm / cold and one-changed / cold for
the run, `evalret --help` / `python -c pass` for start-up. Each run uses a fresh cache directory.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EVALRET = [sys.executable, "-m", "evalret"]


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def best_of(n: int, cmd: list[str]) -> float:
    return min(timed(cmd) for _ in range(n))


def run(config: Path, out: Path, cache: Path) -> tuple[float, dict]:
    import os

    env = {**os.environ, "EVALRET_CACHE_DIR": str(cache)}
    seconds = timed([*EVALRET, "run", "-c", str(config), "-o", str(out), "--no-progress"], env)
    report = json.loads((out / "report.json").read_text())
    return seconds, report


def changed_copy(config: Path, work: Path) -> Path:
    """A copy of the config's BEIR golden set with the start of the first document edited
    (the start, so that the change survives truncation at max_seq_length)."""
    import yaml

    data = yaml.safe_load(config.read_text())
    source = (config.parent / data["golden_set"]["path"]).resolve()
    target = work / "golden"
    shutil.copytree(source, target)
    lines = (target / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["text"] = "Edited: " + first["text"]
    lines[0] = json.dumps(first)
    (target / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    data["golden_set"]["path"] = str(target)
    data.pop("output", None)
    changed = work / "changed.yaml"
    changed.write_text(yaml.safe_dump(data))
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "scifact.yaml")
    parser.add_argument(
        "--startup-only", action="store_true", help="measure start-up only (seconds, not minutes)"
    )
    args = parser.parse_args()

    bare = best_of(5, [sys.executable, "-c", "pass"])
    help_time = best_of(5, [*EVALRET, "--help"])
    print(
        f"start-up: python -c pass {bare:.3f} s, evalret --help {help_time:.3f} s "
        f"({help_time / bare:.1f}x bare Python)"
    )
    if args.startup_only:
        return

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cache = work / "cache"
        cold, r_cold = run(args.config, work / "cold", cache)
        warm, r_warm = run(args.config, work / "warm", cache)
        changed, r_changed = run(changed_copy(args.config, work), work / "changed", cache)
    rows = [
        ("cold", cold, r_cold),
        ("warm", warm, r_warm),
        ("one document changed", changed, r_changed),
    ]
    print(
        f"\n{'run':<22}{'wall s':>9}{'/ cold':>9}  docs embedded  queries embedded  hnsw  ndcg@10"
    )
    for name, seconds, report in rows:
        c = report["embedding"]["cache"]
        ndcg = report["indexes"]["exact"]["slices"]["all"]["metrics"]["ndcg@10"]["value"]
        print(
            f"{name:<22}{seconds:>9.2f}{seconds / cold:>9.3f}  {c['document']['misses']:>13}"
            f"  {c['query']['misses']:>16}  {c['hnsw_index']:>5}  {ndcg:.5f}"
        )
    target = "met" if warm / cold <= 0.05 else "NOT met"
    print(f"\nwarm / cold = {warm / cold:.3%} (target <= 5%: {target})")


if __name__ == "__main__":
    main()
