"""Example queries of a comparison: a query's text, its relevant documents and the top results of
both sides, read from two reports (and the golden set, when known) for the positions the core
picked (``core.comparison.example_positions``)."""

from __future__ import annotations

import numpy as np

from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL, is_relevant
from evalret.data.goldenset import GoldenSet
from evalret.data.schema import (
    TOP_KEPT,
    QueryExample,
    RankedDoc,
    RunReport,
    UnjudgedDoc,
    UnjudgedDocs,
)

SHOWN_RESULTS = 5
TEXT_CHARS = 160  # characters of a document's text shown beside its id
UNJUDGED_LISTED = 10  # B's most frequent unjudged documents kept in a comparison


def query_examples(
    a: RunReport,
    b: RunReport,
    index: str,
    metric: str,
    order: np.ndarray,
    delta: np.ndarray,
    golden: GoldenSet | None,
) -> list[QueryExample]:
    """One example per position in ``order`` (positions in A's query_ids; ``delta`` aligned with
    them): the query's text, its relevant documents and the top results of A and of B, with
    grades and texts when ``golden`` is known."""
    text = dict(zip(golden.query_ids, golden.query_texts, strict=True)) if golden else {}
    titles = dict(zip(golden.doc_ids, golden.doc_texts, strict=True)) if golden else {}
    level = golden.relevance_level if golden else DEFAULT_RELEVANCE_LEVEL
    qa, qb = a.indexes[index], b.indexes[index]
    pos_b = {q: i for i, q in enumerate(b.query_ids)}
    out = []
    for i in order:
        q = a.query_ids[i]
        judged = golden.qrels.get(q, {}) if golden else {}

        def ranked(ids: list[str], judged: dict[str, int] = judged) -> list[RankedDoc]:
            return [
                RankedDoc(id=d, grade=judged.get(d), text=titles.get(d, "")[:TEXT_CHARS])
                for d in ids[:SHOWN_RESULTS]
            ]

        relevant = sorted(
            ((g, d) for d, g in judged.items() if is_relevant(g, level)), reverse=True
        )
        out.append(
            QueryExample(
                query_id=q,
                text=text.get(q, ""),
                a=qa.per_query[metric][i],
                b=qb.per_query[metric][pos_b[q]],
                delta=float(delta[i]),
                relevant=[
                    RankedDoc(id=d, grade=g, text=titles.get(d, "")[:TEXT_CHARS])
                    for g, d in relevant
                ],
                a_top=ranked(qa.top_ids[i]),
                b_top=ranked(qb.top_ids[pos_b[q]]),
            )
        )
    return out


def unjudged_documents(
    report: RunReport, index: str, k: int, golden: GoldenSet, limit: int = UNJUDGED_LISTED
) -> UnjudgedDocs:
    """The documents of ``report``'s top ``k`` (at most the TOP_KEPT ids a report keeps) on
    ``index`` that the golden set does not judge for the query they were retrieved for, by how
    many queries' lists hold them (most first, then by id); the ``limit`` first."""
    k = min(k, TOP_KEPT)
    texts = dict(zip(golden.doc_ids, golden.doc_texts, strict=True))
    counts: dict[str, int] = {}
    for q, ids in zip(report.query_ids, report.indexes[index].top_ids, strict=True):
        for d in dict.fromkeys(ids[:k]):
            if not golden.is_judged(q, d):
                counts[d] = counts.get(d, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return UnjudgedDocs(
        index=index,
        k=k,
        n_queries=len(report.query_ids),
        documents=[
            UnjudgedDoc(id=d, lists=n, text=texts.get(d, "")[:TEXT_CHARS]) for d, n in ranked
        ],
    )
