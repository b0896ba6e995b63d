"""`evalret compare`: rank drift, diagnosis, verdict and examples (the pure core) on hand-made
values, and compare_reports on small hand-made reports."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalret.core.comparison import (
    RBO_P,
    CompareVerdict,
    Criteria,
    MetricChange,
    diagnose,
    example_positions,
    rank_drift,
    verdict,
)
from evalret.data.schema import RunReport
from evalret.errors import InputError
from evalret.pipeline.compare import CompareSettings, compare_reports


def _rbo_by_hand(a: list[str], b: list[str], k: int) -> float:
    total = sum(len(set(a[:d]) & set(b[:d])) / d * RBO_P**d for d in range(1, k + 1))
    return (1 - RBO_P) / RBO_P * total + len(set(a[:k]) & set(b[:k])) / k * RBO_P**k


def test_rank_drift_identical_disjoint_and_partial() -> None:
    full = [f"d{i}" for i in range(10)]
    other = [f"x{i}" for i in range(10)]
    swapped = [full[1], full[0], *full[2:9], "x"]
    jac, rbo = rank_drift([full, full, full], [full, other, swapped])
    assert jac.tolist() == pytest.approx([1.0, 0.0, 9 / 11])
    assert rbo[0] == pytest.approx(1.0) and rbo[1] == pytest.approx(0.0)
    assert rbo[2] == pytest.approx(_rbo_by_hand(full, swapped, 10))


def test_rank_drift_of_short_rankings() -> None:
    """Rankings shorter than k (a lexical index matching few documents): identical is 1."""
    short = ["a", "b", "c"]
    jac, rbo = rank_drift([short, [], short], [short, [], ["c", "b", "a"]])
    assert jac.tolist() == [1.0, 1.0, 1.0]
    assert rbo[0] == pytest.approx(1.0) and rbo[1] == 1.0
    assert rbo[2] == pytest.approx(_rbo_by_hand(short, ["c", "b", "a"], 3))
    assert rbo[2] < 1.0


# --- diagnose and the verdict on hand-made changes ---------------------------------------------

CRITERIA = Criteria(primary="ndcg@10", min_gain=0.01, alpha=0.05)


def change(delta: float, p: float = 0.001) -> MetricChange:
    """A change of ``delta`` (A = 0.5) whose randomization p (raw and adjusted) is ``p``;
    significant as the core defines it: adjusted p < 0.05 and a nonzero delta."""
    return MetricChange(
        a=0.5,
        b=0.5 + delta,
        delta=delta,
        ci_low=delta,
        ci_high=delta,
        p_randomization=p,
        p_t_test=p,
        p_randomization_adjusted=p,
        p_t_test_adjusted=p,
        significant=p < 0.05 and delta != 0,
        wins=0,
        ties=0,
        losses=0,
    )


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [
        # mrr +0.05 (p 0.001) is up; recall +0.005 is below min_gain 0.01: flat
        (
            {"ndcg@10": change(0.03), "mrr@10": change(0.05), "recall@10": change(0.005)},
            "ndcg@10 up, mrr@10 up, recall@10 flat: better first hit, coverage unchanged",
        ),
        # recall -0.04 but p 0.2 >= alpha 0.05: flat; mrr -0.02 significant: down
        (
            {"ndcg@10": change(-0.02), "mrr@10": change(-0.02), "recall@10": change(-0.04, 0.2)},
            "ndcg@10 down, mrr@10 down, recall@10 flat: first hit worse, coverage unchanged",
        ),
        # mrr and recall flat: nDCG alone reads as ordering
        (
            {"ndcg@10": change(0.02), "mrr@10": change(0.0), "recall@10": change(0.0)},
            "ndcg@10 up, mrr@10 flat, recall@10 flat: better ordering of the same documents",
        ),
        (
            {"mrr@10": change(0.02), "recall@10": change(-0.02)},
            "mrr@10 up, recall@10 down: sharper top, thinner coverage",
        ),
        # the shallowest cutoff of at least 10 is read (recall@20, not recall@5 or @100)
        (
            {"recall@5": change(-0.1), "recall@100": change(-0.1), "recall@20": change(0.1)},
            "recall@20 up: more complete result sets, first hit unchanged",
        ),
        # with no cutoff of 10 or more, the shallowest one (ndcg@3)
        (
            {"ndcg@5": change(0.1), "ndcg@3": change(-0.1)},
            "ndcg@3 down: worse ordering of the same documents",
        ),
        ({"precision@10": change(0.3)}, ": no meaningful change"),
    ],
)
def test_diagnose_reads_directions(metrics: dict[str, MetricChange], expected: str) -> None:
    """A change is up or down only when at least min_gain and significant; the pattern of mrr
    and recall (nDCG alone when both are flat) names the reading."""
    assert diagnose(metrics, CRITERIA) == expected


def test_verdict_no_difference_wins_over_everything() -> None:
    """Identical per-query scores give 'no difference' whatever the changes say."""
    changes = {"exact": {"all": {"ndcg@10": change(-0.5)}}}
    assert verdict(True, changes, "exact", CRITERIA) == CompareVerdict(
        "no difference", "A and B score every query identically", (), ()
    )


def test_verdict_candidate() -> None:
    """Every slice of the primary index gains >= min_gain (0.02 and 0.01, the bound included)
    and nothing regresses significantly anywhere (hnsw's -0.3 has p 0.5): a candidate."""
    changes = {
        "exact": {"all": {"ndcg@10": change(0.02)}, "tail": {"ndcg@10": change(0.01)}},
        "hnsw": {"all": {"ndcg@10": change(-0.3, 0.5)}},
    }
    assert verdict(False, changes, "exact", CRITERIA) == CompareVerdict(
        "candidate",
        "B gains at least 0.01 ndcg@10 in every slice of exact and no slice regresses "
        "significantly",
        (),
        (),
    )


def test_verdict_blocked_by_primary_slices_then_regressions() -> None:
    """Blocking reasons come per slice of the primary index in slice order; regressions come
    from every index, sorted; the reason names the first blocking one, else the first
    regression."""
    changes = {
        "exact": {
            "all": {"ndcg@10": change(0.005), "recall@10": change(0.0)},
            "tail": {"ndcg@10": change(0.02), "recall@10": change(-0.03, 0.01)},
        },
        "hnsw": {"all": {"ndcg@10": change(-0.02, 0.001), "recall@10": change(0.0)}},
    }
    expected_regressions = (
        "exact/tail/recall@10 -0.0300 (p adj. 0.01)",
        "hnsw/all/ndcg@10 -0.0200 (p adj. 0.001)",
    )
    assert verdict(False, changes, "exact", CRITERIA) == CompareVerdict(
        "not a candidate",
        "blocked by all: ndcg@10 +0.0050 < min_gain 0.01",
        (
            "all: ndcg@10 +0.0050 < min_gain 0.01",
            "tail: significant regression in recall@10",
        ),
        expected_regressions,
    )
    # without a blocking reason in exact, hnsw's regression blocks (sorted: exact/... first)
    only_hnsw = {"exact": {"all": {"ndcg@10": change(0.05)}}, "hnsw": changes["hnsw"]}
    blocked = verdict(False, only_hnsw, "exact", CRITERIA)
    assert blocked.status == "not a candidate" and blocked.blocking == ()
    assert blocked.reason == "blocked by hnsw/all/ndcg@10 -0.0200 (p adj. 0.001)"


def test_example_positions_break_ties_by_query_order() -> None:
    """Deltas [0, -0.25, 0.25, -0.25, 0.125, -0.125, 0.25], n = 2: losers are the two -0.25s in
    query order (1, 3); gainers the two +0.25s from the last (6, 2); zeros are neither."""
    delta = np.array([0, -0.25, 0.25, -0.25, 0.125, -0.125, 0.25])
    losers, gainers = example_positions(delta, 2)
    assert losers.tolist() == [1, 3] and gainers.tolist() == [6, 2]
    losers, gainers = example_positions(np.zeros(3))
    assert losers.tolist() == [] and gainers.tolist() == []


# --- compare_reports on two small hand-made reports --------------------------------------------

N = 40  # queries q0..q39: head = q0..q19, tail = q20..q39
METRICS = ["ndcg@10", "mrr@10", "recall@10"]
STEPS = [0.125, 0.25] * 10  # exact in binary: means and sums below are exact


def run_report(ndcg: list[float], order: list[int] | None = None) -> RunReport:
    """A report of index exact over N queries (listed in ``order``, default q0..q39) with the
    given nDCG@10 per query (in q0..q39 order), mrr@10 = recall@10 = 1 everywhere and the same
    top-3 ids per query; slices all, head and tail."""
    order = order if order is not None else list(range(N))
    ids = [f"q{i}" for i in order]
    members = {"all": list(range(N))}
    members["head"] = [p for p, i in enumerate(order) if i < 20]
    members["tail"] = [p for p, i in enumerate(order) if i >= 20]
    per_query = {"ndcg@10": [ndcg[i] for i in order], "mrr@10": [1.0] * N, "recall@10": [1.0] * N}
    names = {"names": METRICS, "ndcg_gain": "linear", "relevance_level": 1}
    return RunReport.model_validate(
        {
            "evalret_version": "test",
            "config": {},
            "fingerprint": {
                "golden_set": "g",
                "model": {"name": "m"},
                "indexes": {"exact": {}},
                "metrics": names,
                "evalret_version": "test",
                "digest": "d",
            },
            "golden_set": {
                "source": "hand-made",
                "format": "native",
                "fingerprint": "g",
                "corpus_fingerprint": "c",
                "query_fingerprints": {},
                "n_documents": 3,
                "n_queries_judged": N,
                "n_queries_evaluated": N,
                "queries_without_relevant": [],
                "n_judgments": N,
            },
            "embedding": {"dim": 4, "n_documents": 3, "n_queries": N, "document_text": "text"},
            "bootstrap": {"samples": 1000, "seed": 0, "confidence": 0.95, "method": "percentile"},
            "query_ids": ids,
            "slices": {
                name: {
                    "kind": "all" if name == "all" else "frequency",
                    "definition": name,
                    "n_queries": len(m),
                    "reliability": "unreliable",
                    "members": m,
                }
                for name, m in members.items()
            },
            "indexes": {
                "exact": {
                    "kind": "exact",
                    "params": {},
                    "slices": {},
                    "per_query": per_query,
                    "top_ids": [[f"d{i}", "x", "y"] for i in order],
                }
            },
            "ann": {},
            "timings": {},
        }
    )


def test_compare_reports_by_hand() -> None:
    """A: nDCG 0.5 on every query. B: 0.5 + 0.125 / 0.25 alternately on the head, 0.5 - the same
    on the tail, read in reverse query order (B's positions are realigned to A's).

    head: delta = mean(0.125, 0.25) = +0.1875, 20 wins; tail: -0.1875, 20 losses; all: the two
    cancel, delta 0 exactly (not significant: a zero change never is). mrr and recall are
    identical (p = 1). head and tail are significant: only the all-same-sign flips reach
    |mean| 0.1875, so no flip of the 10,000 drawn does (p = 1 / 10,001 each), and Holm over
    the 9 tests multiplies the smallest by 9 and the next by 8 (monotone: both 9 / 10,001)."""
    a = run_report([0.5] * N)
    ndcg_b = [0.5 + s for s in STEPS] + [0.5 - s for s in STEPS]
    b = run_report(ndcg_b, order=list(reversed(range(N))))
    report = compare_reports(a, b, CompareSettings())
    exact = report.indexes["exact"]
    head, tail, every = exact["head"].metrics, exact["tail"].metrics, exact["all"].metrics
    assert (head["ndcg@10"].a, head["ndcg@10"].b, head["ndcg@10"].delta) == (0.5, 0.6875, 0.1875)
    assert (head["ndcg@10"].wins, head["ndcg@10"].ties, head["ndcg@10"].losses) == (20, 0, 0)
    assert tail["ndcg@10"].delta == -0.1875 and tail["ndcg@10"].losses == 20
    assert every["ndcg@10"].delta == 0.0 and not every["ndcg@10"].significant
    assert every["ndcg@10"].p_randomization == 1.0  # |mean| >= 0 under every flip
    for m in (head["ndcg@10"], tail["ndcg@10"]):
        assert m.p_randomization == pytest.approx(1 / 10_001)
        assert m.p_randomization_adjusted == pytest.approx(9 / 10_001)
        assert m.significant
        # a bootstrap mean of 20 deltas of size 0.125 or 0.25 lies between the two, around 0.1875
        near, far = sorted((abs(m.ci_low), abs(m.ci_high)))
        assert 0.125 <= near <= 0.1875 <= far <= 0.25
    assert all(m.p_randomization == 1.0 and m.ties == 20 for m in (head["mrr@10"], tail["mrr@10"]))
    # drift: both runs list the same ids for each query
    assert exact["tail"].drift == {"jaccard@10": 1.0, "rbo@10": pytest.approx(1.0)}
    assert exact["head"].diagnosis == "ndcg@10 up, mrr@10 flat, recall@10 flat: " + (
        "better ordering of the same documents"
    )
    assert report.notes == ["head up, tail down: over-fitted to frequent queries"]
    assert report.verdict.status == "not a candidate"
    assert report.verdict.blocking == [
        "all: ndcg@10 +0.0000 < min_gain 0.01",
        "tail: ndcg@10 -0.1875 < min_gain 0.01",
        "tail: significant regression in ndcg@10",
    ]
    assert report.verdict.regressions == ["exact/tail/ndcg@10 -0.1875 (p adj. 0.0009)"]
    # losers: the -0.25 tail queries (odd ones) in query order; gainers: the +0.25 head
    # queries from the last; without a golden set, no texts
    assert [e.query_id for e in report.losers] == ["q21", "q23", "q25", "q27", "q29"]
    assert [e.query_id for e in report.gainers] == ["q19", "q17", "q15", "q13", "q11"]
    assert report.losers[0].delta == -0.25 and report.losers[0].text == ""
    assert [d.id for d in report.losers[0].b_top] == ["d21", "x", "y"]
    assert report.settings.samples_drawn == 10_000  # resamples_for(9 tests) = 3600 < 10,000


def test_compare_reports_identical_and_candidate() -> None:
    """B equal to A is 'no difference'; B = A + 0.125 on every query is a candidate (every
    slice gains 0.125 >= min_gain 0.01, nothing drops)."""
    a = run_report([0.5] * N)
    same = compare_reports(a, run_report([0.5] * N), CompareSettings())
    assert same.verdict.status == "no difference" and same.losers == same.gainers == []
    better = compare_reports(a, run_report([0.625] * N), CompareSettings())
    assert better.verdict.status == "candidate"
    assert {s: c.metrics["ndcg@10"].delta for s, c in better.indexes["exact"].items()} == {
        "all": 0.125,
        "head": 0.125,
        "tail": 0.125,
    }
    assert better.notes == []


def test_compare_reports_refuses_an_uncomputed_primary() -> None:
    """--primary naming a metric the runs did not compute is an input error listing them."""
    a = run_report([0.5] * N)
    with pytest.raises(InputError, match="--primary map@10 is not computed; computed: ndcg@10"):
        compare_reports(a, a, CompareSettings(primary="map@10"))


def test_diagnose_reads_a_cutoff_before_the_whole_ranking() -> None:
    """A metric without a cutoff counts as the deepest: ndcg@10 is read before ndcg, and ndcg
    alone is read when it is the family's only metric."""
    both = {"ndcg@10": change(0.1), "ndcg": change(-0.1)}
    assert diagnose(both, CRITERIA) == "ndcg@10 up: better ordering of the same documents"
    alone = {"ndcg": change(-0.1), "mrr": change(0.2)}
    assert diagnose(alone, CRITERIA).startswith("ndcg down, mrr up")


def test_diagnose_reads_the_plain_metric_before_its_judged_only_variant() -> None:
    """ndcg@10:judged sorts before ndcg@100 but the diagnosis reads ndcg@100, the family's plain
    metric; a judged-only metric is read only when the family has nothing else."""
    both = {"ndcg@10:judged": change(0.1), "ndcg@100": change(-0.1)}
    assert diagnose(both, CRITERIA).startswith("ndcg@100 down")
    alone = {"ndcg@10:judged": change(-0.1), "mrr:judged": change(0.2)}
    assert diagnose(alone, CRITERIA).startswith("ndcg@10:judged down, mrr:judged up")


@pytest.mark.parametrize(("level", "relevant"), [(1, ["x", "d0"]), (2, ["x"])])
def test_examples_show_as_relevant_what_the_relevance_level_counts(
    level: int, relevant: list[str]
) -> None:
    """A query's example lists as relevant the documents its metrics count, at the golden set's
    relevance level: at level 2 a grade-1 document is neither listed nor marked relevant on the
    page (it was, by a hard-coded grade >= 1)."""
    from evalret.data.examples import query_examples
    from evalret.data.goldenset import GoldenSet
    from evalret.report.html.figures import query_card

    a = run_report([0.5] * N)
    golden = GoldenSet(
        source="hand-made",
        format="native",
        doc_ids=["d0", "x", "y"],
        doc_texts=["zero", "ex", "why"],
        query_ids=["q0"],
        query_texts=["query zero"],
        qrels={"q0": {"d0": 1, "x": 2, "y": 0}},
        relevance_level=level,
    )
    [example] = query_examples(a, a, "exact", "ndcg@10", np.array([0]), np.zeros(N), golden)
    assert [d.id for d in example.relevant] == relevant
    top = query_card(example, None).split("Top results", 1)[1]
    d0_class = "rel" if level == 1 else "non"
    assert f'<span class="grade {d0_class}">grade 1</span><code>d0</code>' in top
    assert '<span class="grade rel">grade 2</span><code>x</code>' in top


def test_float_noise_is_no_change() -> None:
    """Per-query changes of float rounding (1e-15: a metric summed in another order by another
    evalret version) are ties: no win, no loss, no test evidence; in the statistics of compare
    and in report.html's spread against a baseline."""
    import copy

    from evalret.core.comparison import changes, paired_statistics
    from evalret.data.schema import RunReport
    from evalret.pipeline.pages import delta_spread

    before = np.array([[0.5, 0.25], [0.75, 0.0], [1.0, 0.125]])
    after = before + np.array([[1e-15, -3e-16], [0.0, 0.0], [-2e-15, 0.25]])
    assert changes(after, before).tolist() == [[0.0, 0.0], [0.0, 0.0], [0.0, 0.25]]
    seed = np.random.SeedSequence(1)
    [first, second] = paired_statistics(before, after, 200, 200, 0.95, seed, 0.05, 0.8)
    assert (first.wins, first.ties, first.losses) == (0, 3, 0) and first.p_randomization == 1.0
    assert (second.wins, second.ties, second.losses) == (1, 2, 0)

    demo = Path(__file__).parents[1] / "baselines" / "demo.json"
    base = RunReport.model_validate_json(demo.read_text())
    noisy = copy.deepcopy(base)
    values = noisy.indexes["exact"].per_query["ndcg@10"]
    noisy.indexes["exact"].per_query["ndcg@10"] = [v + 1e-15 if v else v for v in values]
    spread = delta_spread(base, noisy, "exact", "ndcg@10")
    assert (spread.wins, spread.losses, spread.changed) == (0, 0, [])
