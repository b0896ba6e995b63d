"""core.ranking: the tie rule on float64 scores, the cut at a tie, reciprocal-rank fusion, the
top-k overlap of two rankings, and the primary index of a report."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalret.core.ranking import (
    SearchResult,
    apply_tie_rule,
    empty_result,
    id_rank,
    primary_index,
    rrf_fuse,
    top_candidates,
    topk_overlap,
)


def test_id_rank_orders_ids_as_strings() -> None:
    """Plain string order, as trec_eval compares document ids: d10 sorts before d9."""
    assert id_rank(["d9", "d10", "a"]).tolist() == [2, 1, 0]


def test_ties_break_by_document_id_descending_and_empty_ranks_go_last() -> None:
    """Equal scores rank by document id descending (trec_eval), and unfilled ranks come last."""
    rank = id_rank(["a", "b", "c"])
    ids = np.array([[-1, 0, 2, 1]])
    scores = np.array([[9.0, 0.5, 0.5, 0.7]])
    ranked_ids, ranked_scores = apply_tie_rule(ids, scores, rank)
    assert ranked_ids.tolist() == [[1, 2, 0, -1]]
    assert ranked_scores.tolist() == [[0.7, 0.5, 0.5, 9.0]]


def test_scores_are_compared_in_float64() -> None:
    """Two scores 1e-12 apart are not a tie: the higher one ranks first whatever its id."""
    rank = id_rank(["a", "b"])
    ids, scores = top_candidates(np.array([0, 1]), np.array([1.0 + 1e-12, 1.0]), 2, rank)
    assert ids.tolist() == [0, 1] and scores[0] > scores[1]


def test_top_candidates_keeps_the_tied_documents_trec_eval_keeps_and_pads() -> None:
    """The cut at depth keeps the tied documents trec_eval would keep, padding short rankings."""
    rank = id_rank([f"d{i}" for i in range(5)])
    ids, _ = top_candidates(np.arange(5), np.array([1.0, 2.0, 1.0, 1.0, 0.5]), 3, rank)
    assert ids.tolist() == [1, 3, 2]  # 2.0, then the 1.0 tie by id descending
    short_ids, short_scores = top_candidates(np.array([4]), np.array([0.5]), 3, rank)
    assert short_ids.tolist() == [4, -1, -1] and short_scores[1:].tolist() == [-np.inf] * 2


def test_rrf_sums_reciprocal_ranks_within_the_candidates() -> None:
    """Reciprocal-rank fusion sums 1/(k + rank) over the fused rankings' candidates."""
    rank = id_rank(["a", "b", "c", "d"])
    one = SearchResult(ids=np.array([[0, 1, 2]]), scores=np.zeros((1, 3)))
    two = SearchResult(ids=np.array([[1, 3, -1]]), scores=np.zeros((1, 3)))
    fused = rrf_fuse([one, two], k=60, candidates=2, depth=4, rank=rank)
    assert fused.ids.tolist() == [[1, 0, 3, -1]]  # c is past the candidates of the first ranking
    assert fused.scores[0, :3] == pytest.approx([1 / 62 + 1 / 61, 1 / 61, 1 / 62])


def test_empty_result_and_cut() -> None:
    """An empty result has the right shape, and cutting a result keeps its first ranks."""
    result = empty_result(2, 3)
    assert result.ids.dtype == np.int64 and result.scores.dtype == np.float64
    assert (result.ids == -1).all() and np.isneginf(result.scores).all()
    assert result.cut(1).ids.shape == (2, 1)


def test_primary_index_is_exact_when_present_else_the_first() -> None:
    """The single-index views show exact when it ran, else the first index."""
    assert primary_index(["hnsw", "bm25", "exact"]) == "exact"
    assert primary_index({"hnsw": 1, "bm25": 2}) == "hnsw"


def test_topk_overlap() -> None:
    """ANN recall@k: shared documents among the exact top-k, padding ignored."""
    approx = np.array([[1, 2, 3], [4, -1, -1]])
    exact = np.array([[3, 2, 9], [4, 5, -1]])
    assert topk_overlap(approx, exact, 3).tolist() == pytest.approx([2 / 3, 1 / 2])
    assert topk_overlap(approx, exact, 1).tolist() == [0.0, 1.0]


def test_topk_overlap_of_empty_rows_and_cutoffs_beyond_the_rankings() -> None:
    """An exact ranking with nothing retrieved scores 0 (never a division by zero); padding in
    one row never matches a document of another row; a k beyond the width takes every rank."""
    approx = np.array([[-1, -1], [-1, 3], [0, 1]])
    exact = np.array([[-1, -1], [3, -1], [1, 0]])
    assert topk_overlap(approx, exact, 10).tolist() == [0.0, 1.0, 1.0]
    assert topk_overlap(approx, exact, 1).tolist() == [0.0, 0.0, 0.0]
    assert topk_overlap(np.zeros((0, 3), np.int64), np.zeros((0, 3), np.int64), 3).shape == (0,)


@st.composite
def _ranking_pairs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    n_docs = draw(st.integers(1, 12))
    width = draw(st.integers(1, 6))

    def ranking() -> list[int]:
        ids = draw(st.lists(st.integers(0, n_docs - 1), max_size=width, unique=True))
        return ids + [-1] * (width - len(ids))

    rows = draw(st.integers(1, 5))
    approx = np.array([ranking() for _ in range(rows)], dtype=np.int64)
    exact = np.array([ranking() for _ in range(rows)], dtype=np.int64)
    return approx, exact, draw(st.integers(1, width + 2))


@given(_ranking_pairs())
@settings(max_examples=200, deadline=None)
def test_topk_overlap_is_the_set_overlap_per_query(
    case: tuple[np.ndarray, np.ndarray, int],
) -> None:
    """Per query |approx top-k ∩ exact top-k| / |exact top-k| (0 when the exact one is empty),
    counted with sets, one query at a time."""
    approx, exact, k = case
    got = topk_overlap(approx, exact, k)
    for i, (a, e) in enumerate(zip(approx, exact, strict=True)):
        top_a = {d for d in a[:k].tolist() if d >= 0}
        top_e = {d for d in e[:k].tolist() if d >= 0}
        assert got[i] == (len(top_a & top_e) / len(top_e) if top_e else 0.0)
