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


def trec_measures(metric: Metric) -> tuple[str, str]:
    """(measure to request, key in pytrec_eval's answer) for a metric; MRR is cut via the run."""
    name = {"ndcg": "ndcg_cut", "recall": "recall", "precision": "P", "map": "map_cut",
            "hit_rate": "success", "mrr": "recip_rank"}[metric.family]
    if metric.family == "mrr":
        return name, name
    return f"{name}.{metric.k}", f"{name}_{metric.k}"


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
    ids = np.pad(ids, ((0, 0), (0, max(0, depth - width))), constant_values=-1)[:, :depth]
    qi_, di_, gr_ = zip(
        *[(qi, doc_index[d], g) for qi, q in enumerate(query_ids) for d, g in qrels[q].items()],
        strict=True,
    )
    j = build_judgments(ids, np.array(qi_), np.array(di_), np.array(gr_), len(doc_ids))
    ours = compute(metrics, j)

    for metric in metrics:
        measure, key = trec_measures(metric)
        if metric.family == "mrr":  # recip_rank is uncut: give trec_eval the run cut at k
            kept = {
                q: {doc_ids[d]: float(s) for d, s in zip(ids[qi, : metric.k], scores[qi, : metric.k], strict=False) if d >= 0}
                for qi, q in enumerate(query_ids)
            }
            evaluated_run = {q: (r or {"__none__": 0.0}) for q, r in kept.items()}
        else:
            evaluated_run = run
        theirs = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(evaluated_run)
        for qi, q in enumerate(query_ids):
            assert ours[str(metric)][qi] == pytest.approx(theirs[q][key], abs=1e-9), (
                f"{metric} query {q}: evalret {ours[str(metric)][qi]} trec_eval {theirs[q][key]}"
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
        retrieved = draw(st.lists(st.sampled_from(doc_ids), min_size=1, max_size=n_docs, unique=True))
        # few distinct score values, so ties are frequent
        scores = draw(st.lists(st.sampled_from([0.1, 0.25, 0.5, 0.75, 0.9]), min_size=len(retrieved),
                               max_size=len(retrieved)))
        qrels[f"q{q}"] = dict(zip(judged, grades, strict=True))
        run[f"q{q}"] = dict(zip(retrieved, scores, strict=True))
    return doc_ids, qrels, run


@given(graded_runs())
@settings(max_examples=200, deadline=None)
def test_every_metric_matches_trec_eval_with_ties_and_grades(case: tuple) -> None:
    """Every metric at several cutoffs equals trec_eval's per query to 1e-9."""
    doc_ids, qrels, run = case
    compare_with_trec_eval(doc_ids, qrels, run, [Metric(f, k) for f in REGISTRY for k in CUTOFFS])
