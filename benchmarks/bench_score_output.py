"""Benchmark the two per-row stages of `evalret score` around the reader and the metrics: a run's
columns turned into the [queries, depth] ranking (``engines.retrievers.external``) and the ranking
written back as run.<index>.trec (``report.trec``), each against the row-by-row code it replaced
(kept below as the reference), measured in the same process on the same data.

The data is synthetic and deterministic (a seeded numpy generator): ``--queries`` queries of
``--depth`` documents drawn from ``--n-docs`` ids, of which ``--judged`` are the corpus (the rest
are documents the corpus lacks, as in `evalret score` on a qrels file). Scores are either rounded
to 2 decimals (many ties, as bench_runfile.py writes them) or float32 values promoted to float64
(mostly distinct, 17 significant digits: what a dense index gives). Times are the best of
``--repeat`` runs (``time.perf_counter``); the outputs are checked equal to the reference's.

Run: ``.venv/bin/python benchmarks/bench_score_output.py [--queries Q --depth D]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from evalret.core.ranking import SearchResult, empty_result
from evalret.data.goldenset import GoldenSet
from evalret.data.runfile import RunFile
from evalret.engines.retrievers.external import Alignment, columns_search_result
from evalret.report.trec import trec_run


def reference_search_result(
    ranked: Mapping[str, Sequence[tuple[str, float]]],
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    depth: int,
) -> tuple[SearchResult, Alignment]:
    """The row-by-row mapping path (before #26); it read ``RunFile.rankings``, timed with it."""
    index = {d: i for i, d in enumerate(doc_ids)}
    extra: dict[str, int] = {}
    out = empty_result(len(query_ids), depth)
    missing = unknown_docs = 0
    for qi, qid in enumerate(query_ids):
        row = ranked.get(qid)
        if row is None:
            missing += 1
            continue
        for r, (doc, score) in enumerate(row[:depth]):
            di = index.get(doc)
            if di is None:
                unknown_docs += 1
                di = extra.setdefault(doc, len(doc_ids) + len(extra))
            out.ids[qi, r], out.scores[qi, r] = di, score
    evaluated = set(query_ids)
    alignment = Alignment(missing, sum(1 for q in ranked if q not in evaluated), unknown_docs)
    return SearchResult(ids=out.ids, scores=out.scores, extra_docs=tuple(extra)), alignment


def reference_trec_run(golden: GoldenSet, ranking: SearchResult, tag: str) -> str:
    """The f-string writer (before #26)."""
    lines = []
    for qi, query_id in enumerate(golden.query_ids):
        for rank, (di, score) in enumerate(zip(ranking.ids[qi], ranking.scores[qi], strict=True)):
            if di < 0:
                break
            name = ranking.doc_name(di, golden.doc_ids)
            lines.append(f"{query_id} Q0 {name} {rank + 1} {float(score)!r} {tag}")
    return "\n".join(lines) + "\n"


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _run_file(args: argparse.Namespace, scores: str, rng: np.random.Generator) -> RunFile:
    q, d = args.queries, args.depth
    docs = np.stack([rng.choice(args.n_docs, size=d, replace=False) for _ in range(q)])
    values = rng.normal(size=(q, d))
    values = np.round(values, 2) if scores == "rounded" else values.astype(np.float32)
    values = -np.sort(-values.astype(np.float64), axis=1)  # best first
    named, codes = np.unique(docs.reshape(-1), return_inverse=True)  # the file's documents
    return RunFile(
        query_ids=[f"q{i}" for i in range(q)],
        doc_ids=[f"d{i}" for i in named.tolist()],
        offsets=np.arange(q + 1, dtype=np.int64) * d,
        docs=codes.reshape(-1).astype(np.int64),
        scores=values.reshape(-1),
        sha256="",
        n_lines=q * d,
    )


def _measure(
    args: argparse.Namespace, scores: str, rng: np.random.Generator, corpus: list[str]
) -> str:
    """One line of figures for one kind of scores."""
    run = _run_file(args, scores, rng)
    queries, depth = run.query_ids, args.depth
    t_ref, (want, _) = _best(
        partial(reference_search_result, run.rankings, queries, corpus, depth), args.repeat
    )
    t_new, (got, _) = _best(
        partial(columns_search_result, run, queries, corpus, depth), args.repeat
    )
    assert np.array_equal(got.ids, want.ids) and got.extra_docs == want.extra_docs
    golden = GoldenSet("", "trec", corpus, [], queries, [], {})
    t_wref, text = _best(partial(reference_trec_run, golden, got, "evalret-run"), args.repeat)
    t_wnew, new_text = _best(partial(trec_run, golden, got, "evalret-run"), args.repeat)
    assert new_text == text
    return (
        f"{scores:8s} columns -> ranking: {t_new:.3f} s (row by row {t_ref:.3f} s, "
        f"{t_ref / t_new:.1f}x); run file: {t_wnew:.3f} s (line by line {t_wref:.3f} s, "
        f"{t_wref / t_wnew:.1f}x)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--depth", type=int, default=1000)
    p.add_argument("--n-docs", type=int, default=200_000)
    p.add_argument("--judged", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    rng = np.random.default_rng(args.seed)
    corpus = [f"d{i}" for i in rng.choice(args.n_docs, size=args.judged, replace=False)]
    print(f"{args.queries} queries x {args.depth}, {args.judged} of {args.n_docs} ids judged")
    for scores in ("rounded", "float32"):
        print(_measure(args, scores, rng, corpus))


if __name__ == "__main__":
    main()
