"""Metric unit tests: hand-computed cases, the worked examples of domain.md, and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalret.core.metrics import (
    DEFAULT_SEARCH_DEPTH,
    ERR_MAX_GRADE,
    FAMILIES,
    REGISTRY,
    Family,
    Metric,
    TrecEval,
    alias_table,
    at_cutoffs,
    build_judgments,
    compute,
    cutoffs,
    hit_rate,
    judged_at,
    ndcg,
    parse_metric,
    parse_metrics,
    search_depth,
)
from evalret.errors import MetricError
from helpers import case_judgments, judgments_from_lists
from strategies import retrieval_cases

ALL = [Metric(f, k) for f in REGISTRY for k in (1, 3, 5)]


def test_ndcg_worked_example_from_domain_doc() -> None:
    """Grades [2,0,1,2,0], ideal [2,2,1,0,0]: DCG 3.362, IDCG 3.762, nDCG@5 = 0.894 (linear)."""
    j = judgments_from_lists([[2, 0, 1, 2, 0]], [[2, 2, 1]])
    # DCG = 2/1 + 0 + 1/log2(4) + 2/log2(5) = 2 + 0.5 + 0.8614 = 3.3614
    # IDCG = 2/1 + 2/log2(3) + 1/log2(4) = 2 + 1.2619 + 0.5 = 3.7619
    expected = (2 + 0.5 + 2 / math.log2(5)) / (2 + 2 / math.log2(3) + 0.5)
    assert ndcg(j, 5)[0] == pytest.approx(expected, abs=1e-12)
    assert round(float(ndcg(j, 5)[0]), 3) == 0.894


def test_ndcg_exponential_gain_differs_only_for_graded() -> None:
    """Exponential gain 2^g - 1 changes graded scores but not binary ones."""
    graded = judgments_from_lists([[2, 0, 1, 2, 0]], [[2, 2, 1]])
    # exp gains [3,0,1,3,0]: DCG = 3 + 0.5 + 3/log2(5); IDCG = 3 + 3/log2(3) + 0.5
    expected = (3 + 0.5 + 3 / math.log2(5)) / (3 + 3 / math.log2(3) + 0.5)
    assert ndcg(graded, 5, "exponential")[0] == pytest.approx(expected, abs=1e-12)
    binary = judgments_from_lists([[1, 0, 1, 0]], [[1, 1, 1]])
    assert ndcg(binary, 4, "linear")[0] == ndcg(binary, 4, "exponential")[0]


def test_mrr_worked_example_from_domain_doc() -> None:
    """First relevant at ranks 1, 3, 1, 2 gives MRR = (1 + 1/3 + 1 + 1/2) / 4 = 0.708."""
    j = judgments_from_lists([[1, 0, 0], [0, 0, 1], [1, 1, 0], [0, 1, 0]], [[1], [1], [1, 1], [1]])
    values = compute([Metric("mrr", 3)], j)["mrr@3"]
    assert values.tolist() == pytest.approx([1, 1 / 3, 1, 1 / 2])
    assert round(float(values.mean()), 3) == 0.708


def test_mrr_cutoff_ignores_hits_below_k() -> None:
    """RR@2 is 0 when the first relevant document sits at rank 3."""
    j = judgments_from_lists([[0, 0, 1]], [[1]])
    assert compute([Metric("mrr", 2), Metric("mrr", 3)], j) == {
        "mrr@2": pytest.approx([0.0]),
        "mrr@3": pytest.approx([1 / 3]),
    }


def test_recall_precision_map_hit_rate_by_hand() -> None:
    """Ranked grades [0,2,0,1,0] with 3 relevant judged (one never retrieved)."""
    j = judgments_from_lists([[0, 2, 0, 1, 0]], [[2, 1, 3, 0]])
    got = compute(
        [Metric(f, k) for f in ("recall", "precision", "map", "hit_rate") for k in (1, 4)], j
    )
    assert got["recall@1"][0] == 0 and got["recall@4"][0] == pytest.approx(2 / 3)
    assert got["precision@1"][0] == 0 and got["precision@4"][0] == pytest.approx(2 / 4)
    # AP@4 = (P@2 + P@4) / R = (1/2 + 2/4) / 3  -- divided by R = 3, not min(k, R)
    assert got["map@4"][0] == pytest.approx((0.5 + 0.5) / 3)
    assert got["hit_rate@1"][0] == 0 and got["hit_rate@4"][0] == 1


def test_precision_divides_by_k_when_fewer_retrieved() -> None:
    """A corpus of 2 documents: P@5 still divides by 5, as trec_eval does."""
    j = judgments_from_lists([[1, 1]], [[1, 1]])
    padded = judgments_from_lists([[1, 1, 0, 0, 0]], [[1, 1]])
    assert compute([Metric("precision", 5)], padded)["precision@5"][0] == pytest.approx(0.4)
    assert j.depth == 2


def test_query_without_relevant_scores_zero() -> None:
    """R = 0 gives 0 everywhere (the pipeline leaves such queries out of the means)."""
    j = judgments_from_lists([[0, 0]], [[0, 0]])
    assert all(v[0] == 0 for v in compute([Metric(f, 2) for f in REGISTRY], j).values())


def test_build_judgments_lookup_and_ideal() -> None:
    """Vectorized lookup: retrieved grades, judged mask, ideal list and R per query."""
    ranked = np.array([[3, 1, 0], [2, -1, -1]])
    # query 0 judges doc1=2, doc2=3 (unretrieved), doc3=0; query 1 judges doc0=1
    j = build_judgments(
        ranked, np.array([0, 0, 0, 1]), np.array([1, 2, 3, 0]), np.array([2, 3, 0, 1]), 4
    )
    assert j.grades.tolist() == [[0, 2, 0], [0, 0, 0]]
    assert j.judged.tolist() == [[True, True, False], [False, False, False]]
    assert j.ideal.tolist() == [[3, 2, 0], [1, 0, 0]]
    assert j.n_relevant.tolist() == [2, 1]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ndcg@10", "ndcg@10"),
        ("nDCG@5", "ndcg@5"),
        ("P@3", "precision@3"),
        ("success@1", "hit_rate@1"),
        ("MRR@5", "mrr@5"),
        ("recall @ 100", "recall@100"),
        ("MAP@100", "map@100"),
    ],
)
def test_parse_metric_names(name: str, expected: str) -> None:
    """Names parse as ranx users write them, aliases included."""
    assert str(parse_metric(name)) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("map", "map"),
        ("AP", "map"),
        ("nDCG", "ndcg"),
        ("recip_rank", "mrr"),
        ("RR", "mrr"),
        (" recall ", "recall"),
        ("P", "precision"),
        ("success", "hit_rate"),
    ],
)
def test_names_without_a_cutoff_mean_the_whole_ranking(name: str, expected: str) -> None:
    """A name without @k parses to its family over the whole ranking and renders without @."""
    metric = parse_metric(name)
    assert metric.k is None and str(metric) == expected


def test_metrics_order_by_family_then_cutoff_the_whole_ranking_last() -> None:
    """Sorting puts a family's cutoffs in ascending order and its uncut metric after them."""
    names = ["ndcg", "map@10", "ndcg@100", "ndcg@5", "map"]
    got = [str(m) for m in sorted(parse_metrics(names))]
    assert got == ["map@10", "map", "ndcg@5", "ndcg@100", "ndcg"]
    assert parse_metrics(["map", "AP", "map@10"]) == [Metric("map"), Metric("map", 10)]


def test_search_depth_defaults() -> None:
    """The search depth is the largest cutoff, at least 1000 with an uncut metric, or the
    configured value; cutoffs() lists only the metrics that have one."""
    assert search_depth(parse_metrics(["ndcg@10", "recall@100"])) == 100
    assert search_depth(parse_metrics(["ndcg@10", "map"])) == DEFAULT_SEARCH_DEPTH == 1000
    assert search_depth(parse_metrics(["recall@2000", "map"])) == 2000
    assert search_depth(parse_metrics(["map"]), 50) == 50
    assert cutoffs(parse_metrics(["map", "ndcg@10", "recall@10", "mrr@5"])) == [5, 10]


def test_uncut_precision_divides_by_the_documents_retrieved() -> None:
    """precision without a cutoff is relevant retrieved / retrieved (set_P): a ranking of two
    documents out of a depth of four, one relevant, scores 1/2, and an empty ranking 0."""
    ranked = np.array([[1, 0, -1, -1], [-1, -1, -1, -1]])
    j = build_judgments(ranked, np.array([0, 1]), np.array([1, 1]), np.array([1, 1]), 4)
    assert j.retrieved.tolist() == [2, 0]
    got = compute([Metric("precision"), Metric("precision", 4), Metric("recall")], j)
    assert got["precision"].tolist() == [0.5, 0.0]
    assert got["precision@4"].tolist() == [0.25, 0.0]
    assert got["recall"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize("name", ["ndcg@", "foo@10", "ndcg@0", "ndcg@x", "@10", "foo"])
def test_unknown_metric_lists_known_ones(name: str) -> None:
    """A bad name fails with the registry's list of known metrics."""
    with pytest.raises(MetricError) as e:
        parse_metrics(["ndcg@10", name])
    text = str(e.value)
    assert name in text or "at least 1" in text
    if "known metrics" in text:
        assert all(f"{f}@k" in text for f in REGISTRY)


@given(retrieval_cases())
@settings(max_examples=150, deadline=None)
def test_values_in_unit_interval(case: dict) -> None:
    """Every metric lies in [0, 1]."""
    j = case_judgments(case)
    for v in compute([m for m in ALL if m.k <= j.depth], j).values():
        assert np.all((v >= 0) & (v <= 1 + 1e-12))


@given(st.lists(st.integers(0, 3), min_size=1, max_size=12).filter(lambda g: max(g) > 0))
def test_perfect_ranking_scores_one(grades: list[int]) -> None:
    """The ideal ordering of all judged documents scores 1 on nDCG, MRR, MAP, recall@|J|."""
    ideal = sorted(grades, reverse=True)
    j = judgments_from_lists([ideal], [grades])
    k = len(grades)
    got = compute(
        [
            Metric("ndcg", k),
            Metric("mrr", k),
            Metric("map", k),
            Metric("recall", k),
            Metric("hit_rate", k),
        ],
        j,
    )
    for v in got.values():
        assert v[0] == pytest.approx(1.0)


@given(retrieval_cases(), st.data())
@settings(max_examples=150, deadline=None)
def test_inserting_non_relevant_never_raises_a_metric(case: dict, data: st.DataObject) -> None:
    """Pushing a non-relevant document into the ranking can only keep or lower every metric."""
    j = case_judgments(case)
    q = data.draw(st.integers(0, len(case["rankings"]) - 1))
    pos = data.draw(st.integers(0, j.depth - 1))
    grades = j.grades.copy()
    grades[q] = np.insert(grades[q], pos, 0)[: j.depth]
    worse = j.replace(grades=grades)
    metrics = [m for m in ALL if m.k <= j.depth]
    before, after = compute(metrics, j), compute(metrics, worse)
    for name in before:
        assert np.all(after[name] <= before[name] + 1e-12), name


def test_alias_table_of_the_registry() -> None:
    """Every family answers to its name and its aliases: 8 names + 8 aliases = 16 entries."""
    table = alias_table(FAMILIES)
    assert len(table) == 16 and table["bpref"] == "bpref"
    assert table["p"] == "precision" and table["recip_rank"] == "mrr"
    assert table["hits"] == "hit_rate" and table["ndcg"] == "ndcg"


X, Y = TrecEval("x", "x"), TrecEval("y", "y")  # any measures: the aliases are under test


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        # an alias of beta repeats an alias of alpha, in another case: names are case-insensitive
        (
            Family("alpha", hit_rate, X, ("a", "shared")),
            Family("beta", hit_rate, Y, ("SHARED",)),
            "metric name 'shared' of family 'beta' is already taken by family 'alpha'",
        ),
        # a family named like another family's alias ("r" is recall's)
        (
            Family("recall", hit_rate, X, ("r",)),
            Family("r", hit_rate, Y),
            "metric name 'r' of family 'r' is already taken by family 'recall'",
        ),
        # two families of one name
        (
            Family("mrr", hit_rate, X),
            Family("mrr", hit_rate, Y),
            "metric name 'mrr' of family 'mrr' is already taken by family 'mrr'",
        ),
    ],
)
def test_alias_table_refuses_a_clash(first: Family, second: Family, message: str) -> None:
    """A name claimed by two families is refused with an error naming it and both families,
    never silently re-pointed to the later family."""
    with pytest.raises(ValueError) as e:
        alias_table([first, second])
    assert str(e.value) == message


def test_judged_at_k_counts_any_grade() -> None:
    """judged@k: the share of the top k ranks holding a judged document, grade 0 included; ranks
    beyond the ranking (k above its depth) count as unjudged, so the share divides by k."""
    ranked = np.array([[0, 1, 2, 3], [3, -1, -1, -1]])
    # query 0 judges doc 1 (grade 0) and doc 3 (grade 2); query 1 judges doc 0
    judgments = build_judgments(
        ranked, np.array([0, 0, 1]), np.array([1, 3, 0]), np.array([0, 2, 1]), n_docs=4
    )
    judged = judged_at(judgments, [1, 2, 4, 8])
    assert judged["judged@1"].tolist() == [0.0, 0.0]
    assert judged["judged@2"].tolist() == [0.5, 0.0]
    assert judged["judged@4"].tolist() == [0.5, 0.0]
    assert judged["judged@8"].tolist() == [0.25, 0.0]
    assert judged_at(judgments, []) == {}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ndcg@10:judged", "ndcg@10:judged"),
        ("NDCG @ 10 : Judged", "ndcg@10:judged"),
        ("AP:judged", "map:judged"),
        ("P@5:JUDGED", "precision@5:judged"),
        ("bpref", "bpref"),
        ("BPref@10", "bpref@10"),
        ("bpref:judged", "bpref:judged"),
    ],
)
def test_judged_only_and_bpref_names(name: str, expected: str) -> None:
    """``:judged`` after any metric name (with or without a cutoff) is its judged-only variant,
    normalized to lowercase; bpref takes a cutoff like every family."""
    metric = parse_metric(name)
    assert str(metric) == expected and metric.judged == expected.endswith(":judged")
    assert parse_metric(str(metric)) == metric


@pytest.mark.parametrize("name", ["ndcg@10:judge", "ndcg:judged:judged", ":judged", "ndcg@10:"])
def test_bad_judged_suffixes_are_refused(name: str) -> None:
    """Anything but a single ``:judged`` after the name is an unknown metric, and the error says
    how to write the variant."""
    with pytest.raises(MetricError) as e:
        parse_metric(name)
    assert ":judged after either" in str(e.value)


def test_judged_only_metrics_sort_after_their_plain_version_and_read_the_whole_ranking() -> None:
    """A judged-only metric sorts right after its plain version, and it reads past its cutoff:
    the search depth is at least 1000, as for a metric without a cutoff."""
    names = ["ndcg@100", "ndcg@10:judged", "ndcg@10", "map:judged", "map"]
    got = [str(m) for m in sorted(parse_metrics(names))]
    assert got == ["map", "map:judged", "ndcg@10", "ndcg@10:judged", "ndcg@100"]
    assert parse_metrics(["ndcg@10", "ndcg@10:judged"]) == [
        Metric("ndcg", 10),
        Metric("ndcg", 10, True),
    ]
    assert search_depth(parse_metrics(["ndcg@10:judged"])) == DEFAULT_SEARCH_DEPTH
    assert search_depth(parse_metrics(["ndcg@10", "bpref@10"])) == 10
    assert search_depth(parse_metrics(["ndcg@10:judged"]), 200) == 200


def test_condensed_rankings_keep_judged_documents_in_order() -> None:
    """judged_only() moves each query's judged documents (grade 0 included) to the front in rank
    order, pads the rest, and counts only them as retrieved; a negative grade is trec_eval's
    "pooled but not judged": left out like an unjudged document, and not in bpref's N."""
    ranked = np.array([[0, 1, 2, 3], [3, 2, -1, -1]])
    # query 0 judges doc 1 (grade 2), doc 3 (grade -1) and doc 0 (grade 0); query 1 doc 2 (0)
    j = build_judgments(
        ranked,
        np.array([0, 0, 0, 1]),
        np.array([1, 3, 0, 2]),
        np.array([2, -1, 0, 0]),
        n_docs=4,
    )
    c = j.judged_only()
    assert c.grades.tolist() == [[0, 2, 0, 0], [0, 0, 0, 0]]
    assert c.judged.tolist() == [[True, True, False, False], [True, False, False, False]]
    assert c.retrieved.tolist() == [2, 1] and j.retrieved.tolist() == [4, 2]
    assert j.n_nonrelevant.tolist() == [1, 1] and c.n_relevant.tolist() == [1, 0]


@given(retrieval_cases())
@settings(max_examples=150, deadline=None)
def test_a_judged_only_metric_is_never_below_its_plain_one(case: dict) -> None:
    """Removing unjudged documents only moves judged ones up: every family's judged-only value,
    with a cutoff or without, is at least its plain value (docs/explanation/metrics.md's claim)."""
    j = case_judgments(case)
    plain = [Metric(f, k) for f in REGISTRY for k in (1, 3, 5, None)]
    got = compute([*plain, *(Metric(m.family, m.k, True) for m in plain)], j)
    for m in plain:
        assert np.all(got[f"{m}:judged"] >= got[str(m)] - 1e-12), m


@st.composite
def shared_qrels(draw: st.DrawFn) -> dict:
    """Rankings (with -1 for no document and n_docs for one outside the corpus) and judgments
    in which documents are often judged for several queries, grades in a range that is narrow
    (counted) or wide (sorted)."""
    n_docs = draw(st.integers(1, 12))
    n_queries = draw(st.integers(1, 5))
    depth = draw(st.integers(1, 8))
    rankings = [
        draw(st.lists(st.integers(-1, n_docs), min_size=depth, max_size=depth))
        for _ in range(n_queries)
    ]
    top = draw(st.sampled_from([3, 1000]))
    pairs = draw(
        st.dictionaries(
            st.tuples(st.integers(0, n_queries - 1), st.integers(0, n_docs - 1)),
            st.integers(-2, top),
            max_size=30,
        )
    )
    return {"n_docs": n_docs, "rankings": rankings, "pairs": pairs}


def brute_force(case: dict, level: int) -> dict[str, list]:
    """What build_judgments must find, by dictionary lookups."""
    pairs, n_queries = case["pairs"], len(case["rankings"])
    grades = [[pairs.get((q, d), 0) for d in row] for q, row in enumerate(case["rankings"])]
    judged = [[pairs.get((q, d), -1) >= 0 for d in row] for q, row in enumerate(case["rankings"])]
    per_query = [[g for (qq, _), g in pairs.items() if qq == q] for q in range(n_queries)]
    return {
        "grades": grades,
        "judged": judged,
        "ideal": [sorted((g for g in gs if g > 0), reverse=True) for gs in per_query],
        "n_relevant": [sum(g >= level for g in gs) for gs in per_query],
        "n_nonrelevant": [sum(0 <= g < level for g in gs) for gs in per_query],
        "retrieved": [sum(d >= 0 for d in row) for row in case["rankings"]],
    }


@pytest.mark.parametrize("level", [1, 2])
@given(case=shared_qrels())
@settings(max_examples=200, deadline=None)
def test_build_judgments_equals_a_dictionary_lookup(level: int, case: dict) -> None:
    """The document table (documents judged for one query) and the sort-merge join (documents
    judged for several) find exactly the grades a dictionary lookup finds; the ideal orderings,
    by counting narrow grade ranges or sorting wide ones, are the sorted positive grades."""
    keys = list(case["pairs"])
    j = build_judgments(
        np.array(case["rankings"], dtype=np.int64),
        np.array([q for q, _ in keys], dtype=np.int64),
        np.array([d for _, d in keys], dtype=np.int64),
        np.array(list(case["pairs"].values()), dtype=np.int64),
        case["n_docs"],
        relevance_level=level,
    )
    want = brute_force(case, level)
    assert j.grades.tolist() == want["grades"] and j.judged.tolist() == want["judged"]
    assert [row[row > 0].tolist() for row in j.ideal] == want["ideal"]
    assert j.ideal.shape[1] >= j.depth
    assert j.n_relevant.tolist() == want["n_relevant"]
    assert j.n_nonrelevant.tolist() == want["n_nonrelevant"]
    assert j.retrieved.tolist() == want["retrieved"]


def test_build_judgments_a_document_judged_for_one_query_and_one_for_two() -> None:
    """Document 1 is judged for query 0 only (the table names its judgment; query 1 ranking it
    finds none), document 2 for both queries (the join tells the two apart)."""
    j = build_judgments(
        np.array([[1, 2, 3], [2, 1, -1]]),
        np.array([0, 0, 1]),
        np.array([1, 2, 2]),
        np.array([3, 1, 2]),
        4,
    )
    assert j.grades.tolist() == [[3, 1, 0], [2, 0, 0]]
    assert j.judged.tolist() == [[True, True, False], [True, False, False]]
    assert j.retrieved.tolist() == [3, 2]


@pytest.mark.parametrize("level", [1, 2])
@given(case=shared_qrels())
@settings(max_examples=100, deadline=None)
def test_metrics_read_the_same_from_judged_cells_and_from_dense_arrays(
    level: int, case: dict
) -> None:
    """build_judgments keeps only the judged cells; the same judgments given as dense arrays
    (as a caller may build them) score the same on every family, cut and uncut, judged-only."""
    keys = list(case["pairs"])
    j = build_judgments(
        np.array(case["rankings"], dtype=np.int64),
        np.array([q for q, _ in keys], dtype=np.int64),
        np.array([d for _, d in keys], dtype=np.int64),
        np.array(list(case["pairs"].values()), dtype=np.int64),
        case["n_docs"],
        relevance_level=level,
    )
    dense = j.replace()
    # err reads grades up to 4 only (gdeval's maximum; test_err_and_gains), so wide grades skip it
    wide = max(case["pairs"].values(), default=0) > ERR_MAX_GRADE
    metrics = [
        Metric(f, k, judged)
        for f in REGISTRY
        if not (wide and f == "err")
        for k in (1, 3, 20, None)
        for judged in (False, True)
    ]
    metrics += [
        Metric("ndcg", k, judged, gains=((0, 2), (1, 5), (3, 1)))
        for k, judged in ((3, False), (None, True))
    ]
    for gain in ("linear", "exponential"):
        sparse_values, dense_values = compute(metrics, j, gain), compute(metrics, dense, gain)
        for name, v in sparse_values.items():
            np.testing.assert_allclose(v, dense_values[name], rtol=0, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("level", [1, 2])
@given(case=shared_qrels(), ks=st.lists(st.integers(1, 12), min_size=1, max_size=6, unique=True))
@settings(max_examples=100, deadline=None)
def test_at_cutoffs_equals_each_cutoff_to_the_last_bit(
    level: int, case: dict, ks: list[int]
) -> None:
    """The curves' one-pass recall and nDCG at many cutoffs equal the metric functions called
    at each cutoff exactly (same sums in the same order), on sparse and on dense judgments."""
    keys = list(case["pairs"])
    j = build_judgments(
        np.array(case["rankings"], dtype=np.int64),
        np.array([q for q, _ in keys], dtype=np.int64),
        np.array([d for _, d in keys], dtype=np.int64),
        np.array(list(case["pairs"].values()), dtype=np.int64),
        case["n_docs"],
        relevance_level=level,
    )
    ks = sorted(ks)
    for judgments in (j, j.replace()):
        for family in ("recall", "ndcg", "map"):
            for gain in ("linear", "exponential"):
                got = at_cutoffs(judgments, family, ks, gain)
                fn = REGISTRY[family].fn
                want = np.column_stack([fn(judgments, k, gain) for k in ks])
                assert np.array_equal(got, want), (family, gain)
