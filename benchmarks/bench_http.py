"""Documents/s through the OpenAI-compatible HTTP provider (``model.provider: openai``) against
the loopback server, at concurrency 1, 4 and 16, beside local torch in the same run.

    .venv/bin/python benchmarks/bench_http.py [--docs 300] [--repeats 2]
        [--concurrency 1 4 16] [--latency-ms 0 500] [--json FILE]

Same texts for every row: the first ``--docs`` SciFact abstracts (``title + " " + text``, read
by evalret's loader from ../shared/data/scifact). The reference is evalret's local torch embedder
(``SentenceTransformerEmbedder``, the default ``ModelConfig``: packaged all-MiniLM-L6-v2, batch
32, max_seq_length 256). A second local row embeds the texts 32 at a time in input order, one
``embed`` call per chunk: the work the server does for the provider's batches (the local
embedder sorts all the texts by length before batching, so its batches pad less). A third does
the same with each chunk on a fresh thread, as the server's handler threads do: on a loaded
machine torch was measured cheaper there than on the main thread (see RESULTS-http.md).

The HTTP rows use ``OpenAIEmbedder`` directly (no cache) with ``max_batch`` 32, no key, base64
vectors, and each ``--concurrency``, against tests/openai_server.py (a ``ThreadingHTTPServer`` on
127.0.0.1 in this process that encodes with the packaged model, one request at a time under a
lock), once per ``--latency-ms``: a sleep every request takes before it is answered, outside the
encoding lock, modelling a remote API's network round trip. The server shares this machine's
cores and this process with the client, so HTTP cannot beat local torch here: the figures show
what the provider costs on top of encoding (HTTP, JSON, base64, the client) and how much of it,
and of the round trip, concurrency hides by overlapping requests with encoding.

Each repetition runs every row in turn, so that load from other processes falls on all of them
alike; the best of the repetitions is kept, as wall time and as the process's CPU time (client
and server together, since both run in this process; sleeping costs none). Every figure is also a
ratio to local torch. The HTTP vectors are compared with local torch's (cosine per document), and
the requests and retries come from the embedder's usage.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
sys.path.insert(0, str(REPO / "tests"))  # the loopback server (tests/openai_server.py)
BATCH = 32
SERVED = "minilm-served"


def documents(n: int) -> list[str]:
    from evalret.data.config import GoldenSetConfig
    from evalret.data.goldenset import load_golden_set

    golden = load_golden_set(GoldenSetConfig(path=SCIFACT, format="beir"))
    return golden.doc_texts[:n]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.asarray((a * b).sum(axis=1))


class Row:
    """One measured configuration: how it embeds, and its best times over the repetitions."""

    def __init__(
        self, name: str, embed: Callable[[list[str]], np.ndarray], latency: float = 0.0
    ) -> None:
        self.name = name
        self.embed = embed
        self.latency = latency
        self.wall = np.inf
        self.cpu = np.inf
        self.vectors: np.ndarray | None = None
        self.http: Any = None  # the OpenAIEmbedder of an HTTP row
        self.requests: list[int] = []
        self.retries = 0


def local_rows(docs: list[str]) -> list[Row]:
    from evalret.data.config import ModelConfig
    from evalret.engines.embedders import make_embedder
    from evalret.engines.st_embedder import force_offline

    force_offline()
    local = make_embedder(ModelConfig(batch_size=BATCH))
    local.embed(docs[:8], "document")  # loads the model

    def whole(items: list[str]) -> np.ndarray:
        return np.asarray(local.embed(items, "document"))

    def chunks(items: list[str]) -> np.ndarray:
        parts = [local.embed(items[i : i + BATCH], "document") for i in range(0, len(items), BATCH)]
        return np.concatenate(parts)

    def threads(items: list[str]) -> np.ndarray:
        parts: list[np.ndarray] = []
        for i in range(0, len(items), BATCH):  # each chunk on a fresh thread, as the server does
            worker = threading.Thread(
                target=lambda c: parts.append(local.embed(c, "document")),
                args=(items[i : i + BATCH],),
            )
            worker.start()
            worker.join()
        return np.concatenate(parts)

    return [
        Row("local torch (reference)", whole),
        Row(f"local torch, {BATCH} at a time in input order", chunks),
        Row(f"local torch, {BATCH} at a time, each on a fresh thread", threads),
    ]


def http_row(base_url: str, concurrency: int, latency: float, docs: list[str]) -> Row:
    from evalret.data.config import ModelConfig
    from evalret.engines.openai_api import OpenAIEmbedder

    config = ModelConfig(
        provider="openai",
        name=SERVED,
        base_url=base_url,
        api_key_env=None,
        max_batch=BATCH,
        concurrency=concurrency,
        timeout=600,  # generous: the shared machine can be slow; a timeout shows as a retry
    )
    embedder = OpenAIEmbedder(config)
    embedder.embed(docs[:8], "document")  # imports openai, opens the client

    def embed(items: list[str]) -> np.ndarray:
        return embedder.embed(items, "document")

    row = Row(f"HTTP, concurrency {concurrency}, +{latency * 1000:.0f} ms", embed, latency)
    row.http = embedder
    return row


def measure(rows: list[Row], docs: list[str], repeats: int, server: Any) -> None:
    for rep in range(repeats):
        for row in rows:
            server.state.latency = row.latency
            if row.http is not None:
                row.http.usage.clear()
            start, start_cpu = time.perf_counter(), time.process_time()
            out = row.embed(docs)
            wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
            row.wall, row.cpu = min(row.wall, wall), min(row.cpu, cpu)
            row.vectors = out
            if row.http is not None:
                use = row.http.usage["document"]
                row.requests.append(use.requests)
                row.retries += use.retries
            print(f"rep {rep + 1}: {row.name}: {wall:.2f} s (cpu {cpu:.2f} s)", file=sys.stderr)
        server.state.latency = 0.0


def figures(rows: list[Row], n: int) -> list[dict[str, Any]]:
    reference = rows[0]
    assert reference.vectors is not None
    out = []
    for row in rows:
        assert row.vectors is not None
        cos = cosines(row.vectors, reference.vectors)
        out.append(
            {
                "name": row.name,
                "latency_ms": row.latency * 1000,
                "concurrency": row.http.config.concurrency if row.http else None,
                "wall_s": row.wall,
                "cpu_s": row.cpu,
                "docs_per_s": n / row.wall,
                "ratio": reference.wall / row.wall,
                "docs_per_cpu_s": n / row.cpu,
                "cpu_ratio": reference.cpu / row.cpu,
                "mean_cosine": float(cos.mean()),
                "min_cosine": float(cos.min()),
                "requests": row.requests,
                "retries": row.retries if row.http else None,
            }
        )
    return out


def table(out: list[dict[str, Any]]) -> None:
    print(
        "| embedder | docs/s | x local torch | docs/CPU-s | x local torch "
        "| cosine to local mean / min | requests per pass | retries |"
    )
    print("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    for r in out:
        requests = ", ".join(str(q) for q in sorted(set(r["requests"])))
        retries = "" if r["retries"] is None else str(r["retries"])
        print(
            f"| {r['name']} | {r['docs_per_s']:.1f} | {r['ratio']:.2f} | "
            f"{r['docs_per_cpu_s']:.1f} | {r['cpu_ratio']:.2f} | "
            f"{r['mean_cosine']:.6f} / {r['min_cosine']:.6f} | {requests} | {retries} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument(
        "--latency-ms",
        type=float,
        nargs="+",
        default=[0.0, 500.0],
        help="server-side sleep per request, one set of HTTP rows per value",
    )
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()

    from evalret.engines.backends import usable_cores
    from openai_server import EmbeddingServer, packaged_model

    docs = documents(args.docs)
    rows = local_rows(docs)
    with EmbeddingServer(packaged_model(), SERVED) as server:
        for latency in args.latency_ms:
            for concurrency in args.concurrency:
                rows.append(http_row(server.base_url, concurrency, latency / 1000, docs))
        measure(rows, docs, args.repeats, server)
    out = figures(rows, len(docs))
    print(
        f"\n{len(docs)} SciFact abstracts, batch / max_batch {BATCH}, "
        f"{usable_cores()} usable cores, best of {args.repeats}\n"
    )
    table(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
