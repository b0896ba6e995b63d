"""BM25 (bm25s) and hybrid (reciprocal rank fusion) references, judged@k, and the tie rule on
scored candidates. BM25 needs no model, so its SciFact checks run in the fast suite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalret.core.metrics import build_judgments, compute, parse_metrics
from evalret.core.ranking import SearchResult, id_rank, rrf_fuse, top_candidates
from evalret.data.config import Bm25IndexConfig, Config, GoldenSetConfig, load_config
from evalret.data.goldenset import GoldenSet, load_golden_set
from evalret.engines.lexical import bm25_search
from evalret.errors import ConfigError, InputError
from evalret.pipeline.plan import queries_to_evaluate
from test_trec_eval_conformance import trec_eval_values

# what the SciFact BM25 checks score, with a cutoff and without; each also judged-only (-J)
CUT = ["ndcg@10", "map@100", "recall@100", "mrr@10", "precision@5", "hit_rate@5", "bpref@10"]
UNCUT = ["map", "ndcg", "mrr", "recall", "precision", "hit_rate", "bpref"]


def _ranked(golden: GoldenSet, result: SearchResult) -> dict[str, list[tuple[str, float]]]:
    return {
        q: [
            (golden.doc_ids[d], float(s))
            for d, s in zip(result.ids[i], result.scores[i], strict=True)
            if d >= 0
        ]
        for i, q in enumerate(golden.query_ids)
    }


@pytest.fixture(scope="module")
def scifact_set(scifact_path: Path) -> GoldenSet:
    full = load_golden_set(GoldenSetConfig(path=scifact_path))
    return full.evaluated()


@pytest.fixture(scope="module")
def scifact_bm25(scifact_set: GoldenSet) -> SearchResult:
    g = scifact_set
    return bm25_search(g.doc_texts, g.query_texts, Bm25IndexConfig(), 100, id_rank(g.doc_ids))


def test_bm25_on_scifact_near_published_figure(
    scifact_set: GoldenSet, scifact_bm25: SearchResult
) -> None:
    """BEIR publishes BM25 nDCG@10 0.665 on SciFact (Elasticsearch); variants differ a little."""
    judgments = build_judgments(
        scifact_bm25.ids, *scifact_set.qrel_arrays(), n_docs=len(scifact_set.doc_ids)
    )
    ndcg = compute(parse_metrics(["ndcg@10"]), judgments, "linear")["ndcg@10"]
    assert len(ndcg) == 300
    assert ndcg.mean() == pytest.approx(0.665, abs=0.03)


def test_bm25_metrics_agree_with_trec_eval(
    scifact_set: GoldenSet, scifact_bm25: SearchResult
) -> None:
    """Every metric of every query on the BM25 ranking equals trec_eval's (BM25 ties are many)."""
    g = scifact_set
    metrics = parse_metrics(["ndcg@10", "map@100", "recall@100", "mrr@10", "precision@5"])
    judgments = build_judgments(scifact_bm25.ids, *g.qrel_arrays(), n_docs=len(g.doc_ids))
    ours = compute(metrics, judgments, "linear")
    ranked = _ranked(g, scifact_bm25)
    qrels = {q: g.qrels[q] for q in g.query_ids}
    for metric in metrics:
        theirs = trec_eval_values(qrels, ranked, metric)
        for i, q in enumerate(g.query_ids):
            assert ours[str(metric)][i] == pytest.approx(theirs[q], abs=1e-9), (metric, q)


def test_bm25_retrieves_only_matching_documents() -> None:
    docs = ["the cat sat on the mat", "dogs bark at night", "a cat and a dog", "nothing here"]
    rank = id_rank(["d1", "d2", "d3", "d4"])
    result = bm25_search(docs, ["cats", "the of and", "zebra"], Bm25IndexConfig(), 3, rank)
    assert sorted(result.ids[0][result.ids[0] >= 0].tolist()) == [0, 2]  # stemmed "cat"
    assert (result.ids[1] == -1).all()  # stop words only: nothing retrieved
    assert (result.ids[2] == -1).all()  # unknown term
    assert np.isneginf(result.scores[1]).all()


def test_bm25_unknown_stemmer_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown language"):
        bm25_search(["a"], ["a"], Bm25IndexConfig(stemmer="klingon"), 1, id_rank(["d"]))


@settings(max_examples=200, deadline=None)
@given(
    scores=st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0]), min_size=1, max_size=40),
    depth=st.integers(1, 12),
)
def test_top_candidates_cuts_ties_like_trec_eval(scores: list[float], depth: int) -> None:
    """Score descending, then document id descending (string order), whatever straddles the cut."""
    doc_ids = [f"d{i}" for i in range(len(scores))]  # "d10" < "d9" as strings
    ids, got_scores = top_candidates(
        np.arange(len(scores)), np.array(scores, dtype=np.float32), depth, id_rank(doc_ids)
    )
    expected = sorted(range(len(scores)), key=lambda i: (scores[i], doc_ids[i]), reverse=True)
    n = min(depth, len(scores))
    assert ids[:n].tolist() == expected[:n]
    assert (ids[n:] == -1).all() and np.isneginf(got_scores[n:]).all()


def test_rrf_fuse_by_hand() -> None:
    """1/(k + rank) summed over the rankings; ties broken by document id descending."""
    a = SearchResult(ids=np.array([[0, 1, 2]]), scores=np.zeros((1, 3), np.float32))
    b = SearchResult(ids=np.array([[1, 3, -1]]), scores=np.zeros((1, 3), np.float32))
    rank = id_rank(["a", "b", "c", "d"])
    fused = rrf_fuse([a, b], k=1, candidates=3, depth=4, rank=rank)
    # doc1: 1/3 + 1/2; doc0: 1/2; doc3: 1/3; doc2: 1/4
    assert fused.ids[0].tolist() == [1, 0, 3, 2]
    assert fused.scores[0].tolist() == pytest.approx([1 / 3 + 1 / 2, 1 / 2, 1 / 3, 1 / 4])
    only_first = rrf_fuse([a, b], k=1, candidates=1, depth=4, rank=rank)
    # doc0 and doc1 both 1/2: the tie goes to the larger id ("b")
    assert only_first.ids[0].tolist() == [1, 0, -1, -1]


def test_hybrid_needs_its_parts(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("indexes:\n  bm25:\n    enabled: false\n")
    with pytest.raises(ConfigError, match="hybrid fuses BM25"):
        load_config(path)
    path.write_text("indexes:\n  exact:\n    enabled: false\n")
    with pytest.raises(ConfigError, match=r"hybrid\.dense"):
        load_config(path)
    path.write_text("indexes:\n  exact:\n    enabled: false\n  hybrid:\n    dense: hnsw\n")
    assert load_config(path).indexes.hybrid.dense == "hnsw"
    assert Config().gate.indexes is None  # gated by default: the dense indexes only


@pytest.mark.parametrize(("level", "mode"), [(1, "exclude"), (1, "zero"), (2, "zero")])
def test_bm25_scifact_levels_and_modes_agree_with_trec_eval(
    scifact_path: Path, scifact_bm25: SearchResult, level: int, mode: str
) -> None:
    """Per query, every metric (bpref and every judged-only variant included: trec_eval -J)
    equals trec_eval -l level over the queries the mode scores (zero: every qrels query).
    SciFact's grades are all 1: at level 2 every binary metric is 0 and nDCG is that of level 1,
    as in trec_eval."""
    config = Config.model_validate({"relevance_level": level, "queries_without_relevant": mode})
    full = load_golden_set(GoldenSetConfig(path=scifact_path), level)
    g = queries_to_evaluate(full, config)
    assert g.query_ids == full.query_ids and len(g.query_ids) == 300  # BM25 ran on these
    metrics = parse_metrics([*CUT, *(f"{m}:judged" for m in CUT)])
    judgments = build_judgments(
        scifact_bm25.ids, *g.qrel_arrays(), n_docs=len(g.doc_ids), relevance_level=level
    )
    ours = compute(metrics, judgments, "linear")
    ranked = _ranked(g, scifact_bm25)
    qrels = {q: g.qrels[q] for q in g.query_ids}
    for metric in metrics:
        theirs = trec_eval_values(qrels, ranked, metric, relevance_level=level)
        assert len(theirs) == 300
        for i, q in enumerate(g.query_ids):
            assert ours[str(metric)][i] == pytest.approx(theirs[q], abs=1e-9), (metric, q)
    if level == 2:
        assert all(not ours[m].any() for m in ours if not m.startswith("ndcg"))
        assert ours["ndcg@10"].mean() == pytest.approx(0.665, abs=0.03)


@pytest.mark.parametrize("level", [1, 2])
def test_bm25_scifact_metrics_without_a_cutoff_agree_with_trec_eval(
    scifact_path: Path, scifact_bm25: SearchResult, level: int
) -> None:
    """On SciFact's 100-deep BM25 run, every metric without a cutoff equals trec_eval's uncut
    measure (map, ndcg, recip_rank, set_recall, set_P, num_rel_ret > 0, bpref; and each with
    -J) per query at -l level, every qrels query scored."""
    g = load_golden_set(GoldenSetConfig(path=scifact_path), level)
    metrics = parse_metrics([*UNCUT, *(f"{m}:judged" for m in UNCUT)])
    judgments = build_judgments(
        scifact_bm25.ids, *g.qrel_arrays(), n_docs=len(g.doc_ids), relevance_level=level
    )
    assert judgments.retrieved.max() == 100
    ours = compute(metrics, judgments, "linear")
    ranked = _ranked(g, scifact_bm25)
    qrels = {q: g.qrels[q] for q in g.query_ids}
    for metric in metrics:
        theirs = trec_eval_values(qrels, ranked, metric, relevance_level=level)
        for i, q in enumerate(g.query_ids):
            assert ours[str(metric)][i] == pytest.approx(theirs[q], abs=1e-9), (metric, q)
    # SciFact's grades are all 1: at level 2 nothing is relevant, but nDCG keeps its gains
    assert ours["ndcg"].mean() > 0.6 and (ours["map"].mean() > 0) == (level == 1)


def test_scifact_level_2_excluding_is_nothing_to_evaluate(scifact_path: Path) -> None:
    """Level 2 with queries_without_relevant: exclude leaves no query: an InputError (exit 2)
    that says how to fix it."""
    full = load_golden_set(GoldenSetConfig(path=scifact_path), 2)
    assert len(full.queries_without_relevant) == 300
    with pytest.raises(InputError, match="nothing to evaluate") as e:
        queries_to_evaluate(full, Config(relevance_level=2))
    assert "queries_without_relevant: zero" in str(e.value)


def test_top_candidates_orders_scores_1e_11_apart_by_score() -> None:
    """Two float64 scores 1e-11 apart are not a tie: the higher one ranks first even when the
    id rule would put it last, and its score comes back exactly."""
    high = 0.5 + 1e-11
    ids, scores = top_candidates(np.array([0, 1]), np.array([0.5, high]), 2, id_rank(["b", "a"]))
    assert ids.tolist() == [1, 0]
    assert scores.tolist() == [high, 0.5]


def _two_docs_rrf() -> tuple[SearchResult, int, int, float, float]:
    """Two rankings of 399 documents where doc 2 sits at ranks 14 and 303 and doc 1 at ranks
    19 and 217: with k = 60 their fused scores differ by 1.7e-9, below float32's resolution;
    returns (fused, doc 2, doc 1, their sums)."""
    a_order = list(range(3, 400))
    b_order = list(a_order)
    for order, x_rank, y_rank in ((a_order, 14, 19), (b_order, 303, 217)):
        for doc, r in sorted(((2, x_rank), (1, y_rank)), key=lambda p: p[1]):
            order.insert(r - 1, doc)
    a = SearchResult(ids=np.array([a_order]), scores=np.zeros((1, 399)))
    b = SearchResult(ids=np.array([b_order]), scores=np.zeros((1, 399)))
    x = 1 / (60 + 14) + 1 / (60 + 303)
    y = 1 / (60 + 19) + 1 / (60 + 217)
    assert np.float32(x) == np.float32(y) and x < y
    rank = id_rank([f"d{i:03d}" for i in range(400)])
    return rrf_fuse([a, b], k=60, candidates=399, depth=399, rank=rank), 2, 1, x, y


def test_rrf_ranks_by_the_float64_sum() -> None:
    """Where float32 rounding would tie two fused scores (and the id rule would put doc 2
    first), the float64 sums decide: doc 1 first, each with its exact sum."""
    fused, x_doc, y_doc, x, y = _two_docs_rrf()
    order = fused.ids[0].tolist()
    assert order.index(y_doc) < order.index(x_doc)
    assert fused.scores[0][order.index(y_doc)] == y
    assert fused.scores[0][order.index(x_doc)] == x


def test_run_file_reads_back_the_float64_scores() -> None:
    """run.<index>.trec prints each score so that it reads back to the identical float64."""
    from evalret.report.trec import trec_run

    fused, *_ = _two_docs_rrf()
    doc_ids = [f"d{i:03d}" for i in range(400)]
    golden = GoldenSet("t", "native", doc_ids, doc_ids, ["q"], ["q"], {"q": {"d001": 1}})
    lines = trec_run(golden, fused, "t").splitlines()
    read = {line.split()[2]: float(line.split()[4]) for line in lines}
    expected = {doc_ids[d]: s for d, s in zip(fused.ids[0], fused.scores[0], strict=True)}
    assert read == expected and len(read) == 399
    assert read["d001"] != read["d002"]
