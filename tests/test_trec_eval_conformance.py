"""Conformance with trec_eval (pytrec-eval-terrier) on random graded runs with tied scores.

The real-data conformance tests on SciFact live in test_lexical.py (BM25, fast) and
test_scifact.py (the model); this one covers what SciFact lacks: graded judgments, grade-0 and
negative judgments, unjudged documents, exact score ties, queries without a relevant document,
relevance levels 1 and 2, and cutoffs beyond the corpus size; and every metric without a cutoff
(the whole ranking) against trec_eval's uncut measure, on runs shorter than the judgments.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings

from evalret.core.metrics import (
    REGISTRY,
    Metric,
    build_judgments,
    compute,
    parse_metric,
    search_depth,
)
from evalret.core.ranking import apply_tie_rule, id_rank
from helpers import trec_eval_values
from strategies import graded_runs

# the families trec_eval has (err is ir_measures' ERR, checked against it in test_err_and_gains)
TREC = [f for f, family in REGISTRY.items() if family.trec_eval is not None]
CUTOFFS = (1, 2, 3, 5, 10, 30, 500)  # 30 and 500 exceed every corpus drawn below
UNCUT = [Metric(f) for f in TREC]  # every family over the whole ranking
# every family judged-only (trec_eval -J), with each cutoff and without one
JUDGED = [Metric(f, k, judged=True) for f in TREC for k in (*CUTOFFS, None)]


def compare_with_trec_eval(
    doc_ids: list[str],
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    metrics: list[Metric],
    relevance_level: int = 1,
) -> None:
    """Rank ``run`` with evalret's tie rule, score it, and assert trec_eval agrees per query.
    Rankings are cut at min(search depth, corpus size), as the pipeline searches: the largest
    cutoff, or 1000 (the whole run here) when a metric has none."""
    query_ids = list(run)
    doc_index = {d: i for i, d in enumerate(doc_ids)}
    depth = min(search_depth(metrics), len(doc_ids))
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
    j = build_judgments(
        ids, np.array(qi_), np.array(di_), np.array(gr_), len(doc_ids), relevance_level
    )
    ours = compute(metrics, j)
    for metric in metrics:
        theirs = trec_eval_values(qrels, ranked, metric, relevance_level)
        for qi, q in enumerate(query_ids):
            assert ours[str(metric)][qi] == pytest.approx(theirs[q], abs=1e-9), (
                f"{metric} query {q}: evalret {ours[str(metric)][qi]} trec_eval {theirs[q]}"
            )


@given(graded_runs())
@settings(max_examples=200, deadline=None)
def test_every_metric_matches_trec_eval_with_ties_and_grades(case: tuple) -> None:
    """Every metric at several cutoffs equals trec_eval's per query to 1e-9."""
    doc_ids, qrels, run = case
    compare_with_trec_eval(doc_ids, qrels, run, [Metric(f, k) for f in TREC for k in CUTOFFS])


@pytest.mark.parametrize("level", [1, 2])
@given(case=graded_runs(min_grade=-2, max_retrieved=6))
@settings(max_examples=150, deadline=None)
def test_every_uncut_metric_matches_trec_eval(level: int, case: tuple) -> None:
    """Every metric without a cutoff equals trec_eval's measure over the whole run per query
    (map, ndcg, recip_rank, set_recall, set_P, num_rel_ret > 0) at -l 1 and 2, on graded runs
    often shorter than the judgments (so nDCG's ideal is not cut at the run's length)."""
    doc_ids, qrels, run = case
    compare_with_trec_eval(doc_ids, qrels, run, UNCUT, relevance_level=level)


@given(graded_runs(max_retrieved=4))
@settings(max_examples=50, deadline=None)
def test_uncut_and_cut_metrics_together_match_trec_eval(case: tuple) -> None:
    """Uncut metrics beside cut ones (rankings searched to the uncut depth) all match trec_eval:
    the cutoffs keep their meaning when the rankings go deeper."""
    doc_ids, qrels, run = case
    metrics = [*UNCUT, *(Metric(f, k) for f in TREC for k in (1, 3, 30))]
    compare_with_trec_eval(doc_ids, qrels, run, metrics)


def test_uncut_ndcg_keeps_the_whole_ideal_unlike_ndcg_at_the_depth() -> None:
    """A run of one document among three relevant ones: uncut nDCG divides by the ideal of all
    three (trec_eval ndcg), nDCG@1 by the ideal cut at 1; set_P divides by the one retrieved."""
    doc_ids = ["a", "b", "c", "d"]
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    run = {"q": {"a": 0.5}}
    compare_with_trec_eval(doc_ids, qrels, run, [*UNCUT, Metric("ndcg", 1)])
    j = build_judgments(np.array([[0]]), np.zeros(3), np.arange(3), np.ones(3), 4)
    got = compute([Metric("ndcg"), Metric("ndcg", 1), Metric("precision")], j)
    assert got["ndcg@1"][0] == 1.0
    assert got["ndcg"][0] == pytest.approx(1.0 / (1.0 + 1.0 / np.log2(3) + 0.5))
    assert got["precision"][0] == 1.0


def evaluated(qrels: dict[str, dict[str, int]], level: int, mode: str) -> list[str]:
    """The queries a run scores: those with a grade >= level (exclude), or all of them (zero)."""
    return [q for q, j in qrels.items() if mode == "zero" or max(j.values()) >= level]


@pytest.mark.parametrize("mode", ["exclude", "zero"])
@pytest.mark.parametrize("level", [1, 2])
@given(case=graded_runs(min_grade=-2, without_relevant=True))
@settings(max_examples=100, deadline=None)
def test_relevance_levels_negative_grades_and_modes_match_trec_eval(
    level: int, mode: str, case: tuple
) -> None:
    """At trec_eval -l 1 and -l 2, with grades -2..3 and queries without any relevant document,
    every query a mode scores equals trec_eval's value for it (zero mode: every qrels query)."""
    doc_ids, qrels, run = case
    keep = evaluated(qrels, level, mode)
    if not keep:
        return  # nothing to evaluate: the pipeline refuses it (test_cli)
    compare_with_trec_eval(
        doc_ids,
        {q: qrels[q] for q in keep},
        {q: run[q] for q in keep},
        [Metric(f, k) for f in TREC for k in CUTOFFS],
        relevance_level=level,
    )


def test_ndcg_ignores_the_relevance_level_like_trec_eval() -> None:
    """At -l 2 a grade-1 document still gains in nDCG, and a query whose best grade is 1 has
    nDCG 1 for a perfect ranking while every binary metric is 0 (pytrec_eval agrees)."""
    doc_ids = ["a", "b", "c", "d"]
    qrels = {"q": {"a": 1, "b": 2, "c": -1, "d": -2}, "z": {"a": 1, "c": -2}}
    run = {"q": {"a": 0.9, "c": 0.8, "b": 0.5}, "z": {"a": 0.3}}
    metrics = [Metric(f, k) for f in TREC for k in (1, 3, 10)]
    compare_with_trec_eval(doc_ids, qrels, run, metrics, relevance_level=2)
    j = build_judgments(
        np.array([[0, 2, 1], [0, -1, -1]]),
        np.array([0, 0, 0, 0, 1, 1]),
        np.array([0, 1, 2, 3, 0, 2]),
        np.array([1, 2, -1, -2, 1, -2]),
        4,
        relevance_level=2,
    )
    got = compute(metrics, j)
    assert got["ndcg@10"][1] == 1.0 and got["recall@10"][1] == 0.0 and got["mrr@10"][1] == 0.0
    assert j.n_relevant.tolist() == [1, 0]


@pytest.mark.parametrize("mode", ["exclude", "zero"])
@pytest.mark.parametrize("level", [1, 2])
@given(case=graded_runs(min_grade=-2, without_relevant=True))
@settings(max_examples=100, deadline=None)
def test_every_judged_only_metric_matches_trec_eval_minus_j(
    level: int, mode: str, case: tuple
) -> None:
    """Every family's judged-only variant, with every cutoff and without one, equals trec_eval
    -J per query at -l 1 and 2, in both query-set modes, on graded runs with ties, grade-0 and
    negative judgments and unjudged documents (their plain versions beside them)."""
    doc_ids, qrels, run = case
    keep = evaluated(qrels, level, mode)
    if not keep:
        return  # nothing to evaluate: the pipeline refuses it (test_cli)
    compare_with_trec_eval(
        doc_ids,
        {q: qrels[q] for q in keep},
        {q: run[q] for q in keep},
        [*JUDGED, *UNCUT, Metric("ndcg", 3), Metric("bpref", 3)],
        relevance_level=level,
    )


# every family at its own relevance level, beside the run's (P@5(rel=2) with -l 1)
OWN_LEVEL = [
    Metric(f, k, judged, rel)
    for f in TREC
    for k in (3, None)
    for judged in (False, True)
    for rel in (1, 2, 3)
]


@pytest.mark.parametrize("level", [1, 2])
@given(case=graded_runs(min_grade=-2))
@settings(max_examples=100, deadline=None)
def test_a_metric_at_its_own_level_matches_trec_eval_at_that_level(level: int, case: tuple) -> None:
    """``precision@3(rel=2)`` beside ``precision@3`` in one computation: each equals trec_eval
    at its own -l (the metric's, else the run's), plain and judged-only, every family."""
    doc_ids, qrels, run = case
    metrics = [*OWN_LEVEL, Metric("precision", 3), Metric("map")]
    compare_with_trec_eval(doc_ids, qrels, run, metrics, relevance_level=level)


# nDCG with its own gains: a grade mapped up, down, to 0, and grade 0 to a positive gain
GAINS = [((0, 0), (1, 1), (2, 3), (3, 7)), ((1, 5), (2, 0)), ((0, 2), (3, 1)), ((2, 2),)]


@pytest.mark.parametrize("level", [1, 2])
@given(case=graded_runs(min_grade=-2))
@settings(max_examples=100, deadline=None)
def test_ndcg_with_its_own_gains_matches_trec_eval_on_remapped_qrels(
    level: int, case: tuple
) -> None:
    """``ndcg@3(gains=...)`` beside ``ndcg@3`` and ``ndcg@3(rel=2)`` in one computation, cut and
    uncut, plain and judged-only: each equals trec_eval's ndcg_cut / ndcg on the qrels with the
    grades replaced by their gains (ir_measures' nDCG(gains=...)), the others on the qrels as
    they are."""
    doc_ids, qrels, run = case
    metrics = [
        Metric("ndcg", k, judged, rel, gains)
        for k in (1, 3, None)
        for judged in (False, True)
        for rel, gains in ((None, None), (2, None), *((None, g) for g in GAINS), (2, GAINS[0]))
    ]
    compare_with_trec_eval(doc_ids, qrels, run, metrics, relevance_level=level)


def _hand_case() -> tuple[list[str], dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """One query ranking u1 (unjudged), r1 (grade 1), n1 (grade 0), u2 (unjudged), r2 (grade
    2); r3 (grade 1) and n2 (grade 0) are judged but not retrieved: R = 3, N = 2."""
    doc_ids = ["u1", "r1", "n1", "u2", "r2", "r3", "n2"]
    qrels = {"q": {"r1": 1, "n1": 0, "r2": 2, "r3": 1, "n2": 0}}
    run = {"q": {"u1": 0.9, "r1": 0.8, "n1": 0.7, "u2": 0.6, "r2": 0.5}}
    return doc_ids, qrels, run


def test_judged_only_differs_from_the_plain_metric_by_hand() -> None:
    """On the hand case the judged-only metrics score the condensed ranking r1, n1, r2 and
    differ from the plain ones (which count u1 and u2 as misses); bpref, which skips unjudged
    documents by definition, is the same either way. trec_eval (-J) agrees with every value."""
    doc_ids, qrels, run = _hand_case()
    ranked = np.array([[0, 1, 2, 3, 4]])
    j = build_judgments(
        ranked, np.zeros(5), np.array([1, 2, 4, 5, 6]), np.array([1, 0, 2, 1, 0]), 7
    )
    names = ["ndcg@2", "map", "mrr@1", "precision", "precision@2", "bpref", "bpref@2"]
    metrics = [m for n in names for m in (parse_metric(n), parse_metric(f"{n}:judged"))]
    got = {name: float(v[0]) for name, v in compute(metrics, j).items()}
    idcg2 = 2 + 1 / np.log2(3)  # ideal grades 2, 1, 1 cut at 2
    expected = {
        "ndcg@2": (1 / np.log2(3)) / idcg2,  # r1 at rank 2
        "ndcg@2:judged": 1 / idcg2,  # r1 at rank 1
        "map": (1 / 2 + 2 / 5) / 3,  # r1 at 2, r2 at 5
        "map:judged": (1 + 2 / 3) / 3,  # r1 at 1, r2 at 3
        "mrr@1": 0.0,
        "mrr@1:judged": 1.0,
        "precision": 2 / 5,
        "precision:judged": 2 / 3,
        "precision@2": 1 / 2,
        "precision@2:judged": 1 / 2,
        # r1: no judged non-relevant above, 1; r2: one above, 1 - min(1, 3) / min(2, 3)
        "bpref": (1 + (1 - 1 / 2)) / 3,
        "bpref:judged": (1 + (1 - 1 / 2)) / 3,
        "bpref@2": 1 / 3,  # u1, r1: r1 only
        "bpref@2:judged": 1 / 3,  # r1, n1: r1 only
    }
    assert got == pytest.approx(expected, abs=1e-12)
    assert got["ndcg@2:judged"] > got["ndcg@2"] and got["map:judged"] > got["map"]
    compare_with_trec_eval(doc_ids, qrels, run, metrics)


def test_judged_only_equals_plain_when_everything_retrieved_is_judged() -> None:
    """Without an unjudged document in the rankings, a judged-only metric is its plain one."""
    doc_ids, qrels, run = _hand_case()
    run = {"q": {d: s for d, s in run["q"].items() if d in qrels["q"]}}
    metrics = [Metric(f, k, judged) for f in TREC for k in (1, 3, None) for judged in (False, True)]
    ranked = np.array([[1, 2, 4]])
    j = build_judgments(
        ranked, np.zeros(5), np.array([1, 2, 4, 5, 6]), np.array([1, 0, 2, 1, 0]), 7
    )
    got = compute(metrics, j)
    for m in metrics:
        assert got[str(m)] == pytest.approx(got[str(Metric(m.family, m.k))]), m
    compare_with_trec_eval(doc_ids, qrels, run, metrics)


def test_a_query_with_no_judged_document_retrieved_scores_zero_judged_only() -> None:
    """A ranking of unjudged documents only is empty once condensed: every judged-only metric
    is 0 for it, as trec_eval -J gives (num_ret 0)."""
    doc_ids, qrels, run = _hand_case()
    run = {"q": {"u1": 0.9, "u2": 0.5}}
    j = build_judgments(
        np.array([[0, 3]]), np.zeros(5), np.array([1, 2, 4, 5, 6]), np.array([1, 0, 2, 1, 0]), 7
    )
    got = compute(JUDGED, j)
    assert all(v[0] == 0.0 for v in got.values()) and j.judged_only().retrieved.tolist() == [0]
    compare_with_trec_eval(doc_ids, qrels, run, JUDGED)


def _reference_metric_rows() -> dict[str, str]:
    """The metrics reference page's table (docs/reference/metrics.md, generated from the registry
    and kept fresh by tests/test_docs_generated.py): metric name (``ndcg@k``, ``ndcg``) -> its
    trec_eval column. The page's later sections (trec_eval's own measures) are not this table."""
    page = Path(__file__).parents[1] / "docs" / "reference" / "metrics.md"
    lines = page.read_text(encoding="utf-8").split("\n## ")[0].splitlines()
    cells = [re.split(r"(?<!\\)\|", line) for line in lines if line.startswith("| `")]
    return {row[1].strip().strip("`"): row[2].strip() for row in cells}


def test_every_family_declares_trec_eval_measures_the_reference_names() -> None:
    """Each family's ``trec_eval`` data names measures pytrec_eval knows, and the metrics
    reference gives the same measure in the family's rows, with a cutoff and without one; a
    family trec_eval lacks (err) says what it equals instead, in its rows too."""
    rows = _reference_metric_rows()
    assert set(rows) == {n for f in REGISTRY for n in (f"{f}@k", f)} | {"<metric>:judged"}
    assert rows["<metric>:judged"].startswith("the metric's measure with `-J`")
    assert set(REGISTRY) - set(TREC) == {"err"}
    assert rows["err@k"].startswith("none: ir_measures' ERR@k") and rows["err"].startswith("none")
    for name, family in REGISTRY.items():
        trec = family.trec_eval
        if trec is None:
            continue
        assert {trec.cut, trec.uncut} <= pytrec_eval.supported_measures, name
        cut = f"`{trec.cut}` on the run cut at k" if trec.cut_run else f"`{trec.cut}.k`"
        assert rows[f"{name}@k"].startswith(cut), (name, rows[f"{name}@k"])
        uncut = f"`{trec.uncut}` > 0" if trec.positive else f"`{trec.uncut}`"
        assert rows[name] == uncut, (name, rows[name])
