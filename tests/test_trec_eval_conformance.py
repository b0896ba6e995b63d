"""Conformance with trec_eval (pytrec-eval-terrier) on random graded runs with tied scores.

The real-data conformance test on SciFact lives in test_scifact.py; this one covers what SciFact
lacks: graded judgments, grade-0 judgments, unjudged documents and exact score ties.
"""

from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from evalret.index import apply_tie_rule, id_rank
from evalret.metrics import REGISTRY, Metric, build_judgments, compute

CUTOFFS = (1, 2, 3, 5, 10)


def trec_eval_values(
    qrels: dict[str, dict[str, int]], ranked: dict[str, list[tuple[str, float]]], metric: Metric
) -> dict[str, float]:
    """trec_eval's per-query value of ``metric`` for runs given in rank order.

    MRR@k is trec_eval's ``recip_rank`` on each run cut at depth k (recip_rank itself is uncut).
    """
    name = {
        "ndcg": "ndcg_cut",
        "recall": "recall",
        "precision": "P",
        "map": "map_cut",
        "hit_rate": "success",
        "mrr": "recip_rank",
    }[metric.family]
    if metric.family == "mrr":
        measure, key = name, name
        ranked = {q: r[: metric.k] for q, r in ranked.items()}
    else:
        measure, key = f"{name}.{metric.k}", f"{name}_{metric.k}"
    run = {q: (dict(r) or {"__none__": 0.0}) for q, r in ranked.items()}
    got = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    return {q: got[q][key] for q in ranked}


def compare_with_trec_eval(
    doc_ids: list[str],
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    metrics: list[Metric],
) -> None:
    """Rank ``run`` with evalret's tie rule, score it, and assert trec_eval agrees per query."""
    query_ids = list(run)
    doc_index = {d: i for i, d in enumerate(doc_ids)}
    depth = max(m.k for m in metrics)
    width = max(len(r) for r in run.values())
    ids = np.full((len(query_ids), width), -1, dtype=np.int64)
    scores = np.full((len(query_ids), width), -np.inf)
    for qi, q in enumerate(query_ids):
        for j, (d, s) in enumerate(run[q].items()):
            ids[qi, j], scores[qi, j] = doc_index[d], s
    ids, scores = apply_tie_rule(ids, scores, id_rank(doc_ids))
    ranked = {
        q: [(doc_ids[d], float(s)) for d, s in zip(ids[qi], scores[qi], strict=True) if d >= 0]
        for qi, q in enumerate(query_ids)
    }
    ids = np.pad(ids, ((0, 0), (0, max(0, depth - width))), constant_values=-1)[:, :depth]
    qi_, di_, gr_ = zip(
        *[(qi, doc_index[d], g) for qi, q in enumerate(query_ids) for d, g in qrels[q].items()],
        strict=True,
    )
    j = build_judgments(ids, np.array(qi_), np.array(di_), np.array(gr_), len(doc_ids))
    ours = compute(metrics, j)
    for metric in metrics:
        theirs = trec_eval_values(qrels, ranked, metric)
        for qi, q in enumerate(query_ids):
            assert ours[str(metric)][qi] == pytest.approx(theirs[q], abs=1e-9), (
                f"{metric} query {q}: evalret {ours[str(metric)][qi]} trec_eval {theirs[q]}"
            )


@st.composite
def graded_runs(draw: st.DrawFn) -> tuple[list[str], dict, dict]:
    n_docs = draw(st.integers(3, 25))
    # ids whose string order differs from numeric order ("d10" < "d9")
    doc_ids = [f"d{i}" for i in draw(st.permutations(range(n_docs)))]
    qrels, run = {}, {}
    for q in range(draw(st.integers(1, 5))):
        judged = draw(st.lists(st.sampled_from(doc_ids), min_size=1, max_size=n_docs, unique=True))
        grades = draw(st.lists(st.integers(0, 3), min_size=len(judged), max_size=len(judged)))
        if max(grades) == 0:
            grades[0] = 1
        retrieved = draw(
            st.lists(st.sampled_from(doc_ids), min_size=1, max_size=n_docs, unique=True)
        )
        # few distinct score values, so ties are frequent
        scores = draw(
            st.lists(
                st.sampled_from([0.1, 0.25, 0.5, 0.75, 0.9]),
                min_size=len(retrieved),
                max_size=len(retrieved),
            )
        )
        qrels[f"q{q}"] = dict(zip(judged, grades, strict=True))
        run[f"q{q}"] = dict(zip(retrieved, scores, strict=True))
    return doc_ids, qrels, run


@given(graded_runs())
@settings(max_examples=200, deadline=None)
def test_every_metric_matches_trec_eval_with_ties_and_grades(case: tuple) -> None:
    """Every metric at several cutoffs equals trec_eval's per query to 1e-9."""
    doc_ids, qrels, run = case
    compare_with_trec_eval(doc_ids, qrels, run, [Metric(f, k) for f in REGISTRY for k in CUTOFFS])
