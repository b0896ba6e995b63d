"""core.beyond: corpus coverage@k and the Gini coefficient of retrieval counts, against a
textbook example, brute-force definitions, and Hypothesis invariants."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalret.core.beyond import gini, popularity, retrieval_counts
from strategies import top_k_rankings


def brute_gini(counts: list[int]) -> float:
    """The mean-difference definition: sum over all ordered pairs |x_i - x_j| / (2 n^2 mean)."""
    n = len(counts)
    mean = sum(counts) / n
    return sum(abs(a - b) for a, b in itertools.product(counts, repeat=2)) / (2 * n * n * mean)


def brute_coverage(rows: list[list[int]], n_docs: int, k: int) -> float:
    """Distinct corpus documents in any row's first k entries, over the corpus size."""
    seen = {d for row in rows for d in row[:k] if 0 <= d < n_docs}
    return len(seen) / n_docs


def test_gini_of_the_textbook_incomes_1_to_5() -> None:
    """Incomes 1, 2, 3, 4, 5: mean absolute difference 1.6 over twice the mean 3 gives 4/15."""
    assert gini(np.array([3, 1, 5, 2, 4])) == pytest.approx(4 / 15, abs=1e-12)


def test_gini_is_zero_when_even_and_most_when_one_document_takes_all() -> None:
    """Equal counts give 0; one document holding every retrieval gives (n - 1) / n."""
    assert gini(np.array([2, 2, 2, 2])) == 0.0
    assert gini(np.array([0, 0, 0, 7])) == pytest.approx(3 / 4)
    assert math.isnan(gini(np.zeros(5))) and math.isnan(gini(np.array([])))


def test_popularity_of_a_small_case_by_hand() -> None:
    """Two queries over five documents: coverage 3/5, counts (2, 1, 1, 0, 0)."""
    ids = np.array([[0, 1, 4], [0, 2, 3], [4, 4, 4]])
    mask = np.array([True, True, False])
    p = popularity(ids, mask, n_docs=5, k=2)
    assert (p.k, p.retrieved, p.outside) == (2, 3, 0)
    assert p.coverage == pytest.approx(0.6)
    assert retrieval_counts(ids, mask, 5, 2).tolist() == [2, 1, 1, 0, 0]
    assert p.gini == pytest.approx(brute_gini([2, 1, 1, 0, 0]))


def test_empty_ranks_are_no_documents_and_ids_past_the_corpus_count_outside() -> None:
    """-1 is skipped; ids >= n_docs are distinct outside documents, left out of coverage and
    of the Gini counts (which stay over the corpus's documents)."""
    ids = np.array([[0, 7, -1], [7, 9, 1]])
    p = popularity(ids, np.array([True, True]), n_docs=4, k=3)
    assert (p.retrieved, p.outside) == (2, 2)
    assert p.coverage == pytest.approx(2 / 4)
    assert p.gini == pytest.approx(brute_gini([1, 1, 0, 0]))


def test_undefined_figures_are_nan() -> None:
    """An empty slice has neither figure; a slice retrieving nothing has coverage 0, no Gini."""
    ids = np.array([[-1, -1], [0, 1]])
    empty = popularity(ids, np.array([False, False]), n_docs=3, k=2)
    assert math.isnan(empty.coverage) and math.isnan(empty.gini)
    nothing = popularity(ids, np.array([True, False]), n_docs=3, k=2)
    assert nothing.coverage == 0.0 and math.isnan(nothing.gini)
    with pytest.raises(ValueError, match="k must be at least 1"):
        popularity(ids, np.array([True, True]), n_docs=3, k=0)


@given(st.lists(st.integers(0, 50), min_size=1, max_size=30))
def test_gini_equals_the_mean_difference_definition_and_is_bounded(counts: list[int]) -> None:
    """The sorted-weights formula equals the brute-force pair sum, lies in [0, (n-1)/n], and
    does not change when the documents are reordered or every count is scaled."""
    if sum(counts) == 0:
        assert math.isnan(gini(np.array(counts)))
        return
    g = gini(np.array(counts))
    n = len(counts)
    assert g == pytest.approx(brute_gini(counts), abs=1e-12)
    assert -1e-12 <= g <= (n - 1) / n + 1e-12
    assert gini(np.array(counts[::-1])) == pytest.approx(g, abs=1e-12)
    assert gini(np.array(counts) * 3) == pytest.approx(g, abs=1e-12)


@given(top_k_rankings(), st.data())
def test_popularity_matches_brute_force_and_its_invariants(
    case: tuple[np.ndarray, int], data: st.DataObject
) -> None:
    """Coverage equals the set definition and lies in [0, 1]; both figures are unchanged when
    queries or document labels are permuted; a larger slice or k never covers less."""
    ids, n_docs = case
    n_queries, depth = ids.shape
    k = data.draw(st.integers(1, depth))
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n_queries, max_size=n_queries)))
    p = popularity(ids, mask, n_docs, k)
    if not mask.any():
        assert math.isnan(p.coverage) and math.isnan(p.gini)
        return
    rows = ids[mask].tolist()
    assert p.coverage == pytest.approx(brute_coverage(rows, n_docs, k))
    assert 0.0 <= p.coverage <= 1.0
    counts = retrieval_counts(ids, mask, n_docs, k).tolist()
    assert (p.gini == pytest.approx(brute_gini(counts))) if sum(counts) else math.isnan(p.gini)
    # permuting the queries (with their mask) and relabelling the corpus documents
    order = np.array(data.draw(st.permutations(range(n_queries))), dtype=np.int64)
    relabel = np.array(data.draw(st.permutations(range(n_docs))), dtype=np.int64)
    moved = np.where((ids >= 0) & (ids < n_docs), relabel[np.clip(ids, 0, n_docs - 1)], ids)
    q = popularity(moved[order], mask[order], n_docs, k)
    assert q.coverage == pytest.approx(p.coverage) and q.outside == p.outside
    assert q.gini == pytest.approx(p.gini, nan_ok=True)
    # monotone in the slice and in k
    assert popularity(ids, np.ones(n_queries, dtype=bool), n_docs, k).coverage >= p.coverage
    assert popularity(ids, mask, n_docs, depth).coverage >= p.coverage
