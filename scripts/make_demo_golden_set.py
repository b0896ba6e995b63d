#!/usr/bin/env python3
"""Generate the evalret demo golden set (src/evalret/demo/: package data, so that the installed
wheel runs the demo; golden_sets/demo links to it) from its data in scripts/demo_data/.

The corpus describes an imagined product, Loomwell: a managed object-storage
and data-pipeline SaaS. Storage buckets are called "spools", pipelines are
called "weaves", the CLI is `loom`, error codes look like `LMW-4031`.
Everything here is invented; no real product documentation was used.

The data:
  demo_data/corpus.json   the passages, in blocks by section: [{section, passages: [{key, title,
                          text}, ...]}, ...] (a section may come back in a later block)
  demo_data/queries.json  the queries by group: {group: [[text, judgments, tags, pop], ...]}
    judgments: "doc-key:grade ..." (3 answers fully, 2 highly relevant,
               1 partially relevant, 0 judged non-relevant confuser)
    tags:      intent tag (exact-match | semantic) plus optional extra tags;
               "short"/"long"/"question" are added automatically.
    pop:       popularity band used to derive frequency: H1, H2, ... head (in
               that order), T torso, M middle, "" long tail.
Documents and queries are numbered in file order (doc-0001, q-001, ...).

Usage:  python scripts/make_demo_golden_set.py [--out src/evalret/demo]

The output is deterministic: running the script twice gives identical files.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

DATA = Path(__file__).resolve().parent / "demo_data"


def load_docs() -> list[dict]:
    """The passages in file order, each with its section."""
    corpus = json.loads((DATA / "corpus.json").read_text(encoding="utf-8"))
    return [{**d, "section": block["section"]} for block in corpus for d in block["passages"]]


def Q(text: str, judgments: str, tags: str, pop: str = "") -> dict:
    if not re.fullmatch(r"H[0-9]+|T|M|", pop):
        raise ValueError(f"bad popularity band {pop!r} for {text!r}")
    rel = {}
    for item in judgments.split():
        key, grade = item.rsplit(":", 1)
        if key in rel:
            raise ValueError(f"duplicate judgment {key} in {text!r}")
        rel[key] = int(grade)
    return {"text": text, "rel": rel, "tags": tags.split(), "pop": pop}


def load_queries() -> list[dict]:
    """The queries in file order, their judgments and tags read as ``Q`` reads them."""
    groups = json.loads((DATA / "queries.json").read_text(encoding="utf-8"))
    return [Q(*row) for rows in groups.values() for row in rows]


# ---------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------

_QUESTION_WORDS = {
    "how",
    "what",
    "what's",
    "why",
    "when",
    "where",
    "which",
    "who",
    "can",
    "could",
    "do",
    "does",
    "is",
    "are",
    "should",
    "will",
}


def auto_tags(text: str, tags: list[str]) -> list[str]:
    words = text.split()
    out = list(tags)
    if len(words) <= 3 and "short" not in out:
        out.append("short")
    if len(words) >= 10 and "long" not in out:
        out.append("long")
    if (text.endswith("?") or words[0].lower() in _QUESTION_WORDS) and "question" not in out:
        out.append("question")
    return out


def assign_frequencies(queries: list[dict], seed: int = 7) -> list[int]:
    """Zipf-like frequencies; popularity bands decide the rank order.

    Values are strictly decreasing around the head (top 5%) and tail (bottom
    50%) cut points so that slicing by frequency is unambiguous.
    """
    rng = random.Random(seed)
    band_order = {"H": 0, "T": 1, "M": 2, "": 3}

    def band(i: int) -> tuple[int, int]:
        pop = queries[i]["pop"]  # "H1", "H2", ... keep their explicit order
        return band_order[pop[:1]], int(pop[1:] or 0)

    idx = list(range(len(queries)))
    rng.shuffle(idx)
    idx.sort(key=band)
    n = len(queries)
    values = sorted(
        (max(1, round(12000.0 / r**1.45 * rng.uniform(0.85, 1.15))) for r in range(1, n + 1)),
        reverse=True,
    )
    cuts = {max(1, int(n * 0.05)), max(1, -(-n * 5 // 100)), n // 2, -(-n // 2)}
    for k in sorted(cuts):  # make values[k-1] > values[k] at each cut
        if k < n and values[k - 1] <= values[k]:
            for j in range(k):
                values[j] += 1
    freq = [0] * n
    for rank, i in enumerate(idx):
        freq[i] = values[rank]
    return freq


def build() -> tuple[list[dict], list[dict]]:
    docs = load_docs()
    key_to_id = {}
    corpus = []
    for n, d in enumerate(docs, start=1):
        if d["key"] in key_to_id:
            raise ValueError(f"duplicate doc key {d['key']}")
        doc_id = f"doc-{n:04d}"
        key_to_id[d["key"]] = doc_id
        corpus.append(
            {
                "id": doc_id,
                "title": d["title"],
                "text": d["text"],
                "metadata": {"section": d["section"]},
            }
        )
    queries_in = load_queries()
    freqs = assign_frequencies(queries_in)
    queries = []
    seen_text = set()
    for n, (q, f) in enumerate(zip(queries_in, freqs, strict=True), start=1):
        if q["text"].lower() in seen_text:
            raise ValueError(f"duplicate query {q['text']!r}")
        seen_text.add(q["text"].lower())
        missing = [k for k in q["rel"] if k not in key_to_id]
        if missing:
            raise ValueError(f"unknown doc keys {missing} in {q['text']!r}")
        if not any(g >= 1 for g in q["rel"].values()):
            raise ValueError(f"no relevant doc for {q['text']!r}")
        rel = {key_to_id[k]: g for k, g in sorted(q["rel"].items(), key=lambda kv: (-kv[1], kv[0]))}
        queries.append(
            {
                "id": f"q-{n:03d}",
                "text": q["text"],
                "relevant": rel,
                "tags": auto_tags(q["text"], q["tags"]),
                "frequency": f,
            }
        )
    return corpus, queries


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_out = Path(__file__).resolve().parent.parent / "src" / "evalret" / "demo"
    ap.add_argument("--out", type=Path, default=default_out)
    args = ap.parse_args()
    corpus, queries = build()
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "corpus.jsonl", corpus)
    write_jsonl(args.out / "queries.jsonl", queries)
    n_judg = sum(len(q["relevant"]) for q in queries)
    print(f"wrote {len(corpus)} docs, {len(queries)} queries, {n_judg} judgments to {args.out}")


if __name__ == "__main__":
    main()
