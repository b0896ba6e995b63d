"""Peak memory of embedding one huge document, for each local backend.

    .venv/bin/python benchmarks/bench_truncate.py [--mb 50] [--backends torch onnx openvino]
        [--src src] [--out benchmarks/RESULTS-truncate.md]

The document is the demo corpus's texts (title and text) joined and repeated up to ``--mb``
megabytes of UTF-8. Each backend runs in a child process that embeds through evalret's own
embedder (``make_embedder``, no cache): it loads the model and embeds a short text, reads the
document, resets its peak resident set to the current one (``/proc/self/clear_refs``, Linux),
embeds the document and reads the peak again (VmHWM). The figure is the growth the embedding
causes, (peak - resident set before) / document bytes: the document's own string is already
resident before, so a text that is never copied whole shows about 0.

``--src`` picks the evalret sources the children import: run it once with a checkout of the
code before the change (``git archive <commit> src | tar -x -C /tmp/before``, then
``--src /tmp/before/src``) and once with today's, on the same machine, to compare. The children
also print a hash of the document's vector: it must be the same for both sources.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "golden_sets" / "demo" / "corpus.jsonl"

CHILD = r"""
import gc, hashlib, json, sys, time
from evalret.data.config import ModelConfig
from evalret.engines.embedders import make_embedder


def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB -> MiB


backend, path = sys.argv[1], sys.argv[2]
embedder = make_embedder(ModelConfig(backend=backend), None)
embedder.embed(["a short text to load the model"], "document")
text = open(path, encoding="utf-8").read()
gc.collect()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak (VmHWM) to the current resident set
before = status("VmRSS")
start = time.perf_counter()
vector = embedder.embed([text], "document")
print(json.dumps({
    "seconds": time.perf_counter() - start,
    "vector": hashlib.sha256(vector.round(5).tobytes()).hexdigest()[:16],
    "rss_before_mib": before,
    "peak_mib": status("VmHWM"),
}))
"""


def make_document(megabytes: float, target: Path) -> int:
    """Write the demo corpus repeated up to ``megabytes`` MB to ``target``; its size in bytes."""
    lines = DEMO.read_text(encoding="utf-8").splitlines()
    texts = [json.loads(x) for x in lines if x.strip()]
    block = " ".join(f"{t.get('title', '')} {t['text']}".strip() for t in texts) + "\n"
    size = int(megabytes * 1_000_000)
    data = (block * (size // len(block.encode("utf-8")) + 1)).encode("utf-8")[:size]
    target.write_bytes(data.decode("utf-8", errors="ignore").encode("utf-8"))
    return target.stat().st_size


def child(src: Path, backend: str, document: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    args = [sys.executable, "-c", CHILD, backend, str(document)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--backends", nargs="+", default=["torch", "onnx", "openvino"])
    parser.add_argument("--src", type=Path, default=REPO / "src")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/bench-truncate"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    document = args.workdir / f"document-{args.mb:g}mb.txt"
    size = make_document(args.mb, document)
    rows = []
    for backend in args.backends:
        run = child(args.src, backend, document)
        growth = float(run["peak_mib"]) - float(run["rss_before_mib"])  # type: ignore[arg-type]
        row = {
            "backend": backend,
            "src": str(args.src),
            "document_mib": round(size / 2**20, 1),
            "rss_before_mib": round(float(run["rss_before_mib"]), 1),  # type: ignore[arg-type]
            "peak_mib": round(float(run["peak_mib"]), 1),  # type: ignore[arg-type]
            "growth_mib": round(growth, 1),
            "growth_over_document": round(growth * 2**20 / size, 2),
            "seconds": round(float(run["seconds"]), 2),  # type: ignore[arg-type]
            "vector": run["vector"],
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out is not None:
        stamp = time.strftime("%Y-%m-%d %H:%M")
        digest = hashlib.sha256(document.read_bytes()).hexdigest()[:12]
        with args.out.open("a", encoding="utf-8") as f:
            f.write(f"\n<!-- {stamp} document sha256 {digest} -->\n")
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
