"""core.beyond: corpus coverage@k and the Gini coefficient of retrieval counts, against a
textbook example, brute-force definitions, and Hypothesis invariants."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from evalret.core.beyond import gini, popularity, retrieval_counts
from evalret.core.ranking import SearchResult
from evalret.data.config import (
    BeyondAccuracyConfig,
    Config,
    GoldenSetConfig,
    HnswIndexConfig,
    IndexesConfig,
    parse_config,
)
from evalret.data.schema import RunReport
from evalret.errors import ConfigError
from evalret.pipeline.beyond import add_beyond, beyond_k
from evalret.pipeline.evaluate import run_evaluation
from evalret.report.beyond_view import beyond_table
from evalret.report.html.run_page import run_html
from evalret.report.markdown import render_markdown
from evalret.report.numbers import TYPOGRAPHIC
from evalret.report.terminal import render_run
from helpers import HashEmbedder, make_set
from strategies import top_k_rankings

REPO = Path(__file__).resolve().parents[1]


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


# --- in a run: the pipeline stage, report.json and the views ------------------------------------


@pytest.fixture
def config(tmp_path: Path) -> Config:
    """The 60-document plumbing set, every index on, metrics down to depth 20."""
    return Config(
        golden_set=GoldenSetConfig(path=make_set(tmp_path)),
        indexes=IndexesConfig(hnsw=HnswIndexConfig(m=8, ef_construction=40, ef_search=16)),
        metrics=["ndcg@10", "recall@20", "mrr@5"],
    )


def test_every_index_and_slice_reports_coverage_and_gini_from_its_top_ids(config: Config) -> None:
    """report.json's beyond figures equal the brute-force definitions over the top 10 document
    ids the report keeps per query, for every index and slice; nothing is outside the corpus."""
    ev = run_evaluation(config, embedder=HashEmbedder())
    r = ev.report
    n_docs = r.golden_set.n_documents
    doc_index = {d: i for i, d in enumerate(ev.golden_set.doc_ids)}
    assert list(r.indexes) == ["exact", "hnsw", "bm25", "hybrid"]
    for index in r.indexes.values():
        for name, info in r.slices.items():
            beyond = index.slices[name].beyond
            assert list(beyond) == ["coverage@10", "gini@10", "outside_corpus@10"]
            rows = [[doc_index[d] for d in index.top_ids[q]] for q in info.members]
            counts = np.bincount([d for row in rows for d in row], minlength=n_docs).tolist()
            assert beyond["coverage@10"] == pytest.approx(brute_coverage(rows, n_docs, 10))
            assert beyond["gini@10"] == pytest.approx(brute_gini(counts))
            assert beyond["outside_corpus@10"] == 0
    assert r.gate is not None and all("coverage" not in c.name for c in r.gate.checks)


def test_the_cutoff_is_configured_and_lowered_to_the_search_depth(config: Config) -> None:
    """beyond_accuracy.k picks the cutoff; a k deeper than the rankings falls to their depth,
    unless the rankings hold the whole corpus (then k stands: its top k is the whole ranking)."""

    def keys(cfg: Config) -> set[str]:
        report = run_evaluation(cfg, embedder=HashEmbedder()).report
        return {k for i in report.indexes.values() for s in i.slices.values() for k in s.beyond}

    three = config.model_copy(update={"beyond_accuracy": BeyondAccuracyConfig(k=3)})
    assert keys(three) == {"coverage@3", "gini@3", "outside_corpus@3"}
    deep = config.model_copy(update={"beyond_accuracy": BeyondAccuracyConfig(k=50)})
    assert keys(deep) == {"coverage@20", "gini@20", "outside_corpus@20"}
    whole = deep.model_copy(update={"metrics": ["recall@100"]})
    assert keys(whole) == {"coverage@50", "gini@50", "outside_corpus@50"}
    assert (beyond_k(50, 20, 60), beyond_k(50, 60, 60), beyond_k(10, 20, 60)) == (20, 50, 10)
    with pytest.raises(ConfigError, match="beyond_accuracy"):
        parse_config("beyond_accuracy: {k: 0}\n")


def test_documents_outside_the_corpus_are_counted_apart_and_shown(config: Config) -> None:
    """Ids past the corpus (unknown documents of a run file) leave coverage relative to the
    corpus, are counted as outside_corpus@k, and each view names the index that retrieved them;
    index and slice names are escaped in every medium."""
    ev = run_evaluation(config, embedder=HashEmbedder())
    n_docs = ev.report.golden_set.n_documents
    ids = ev.rankings["bm25"].ids.copy()
    ids[:, 0] = n_docs + np.arange(len(ids)) % 3  # three distinct unknown documents
    rankings = {**ev.rankings, "bm25": SearchResult(ids, ev.rankings["bm25"].scores)}
    indexes = {"<b>bm25": ev.report.indexes["bm25"]}
    indexes = add_beyond(indexes, {"<b>bm25": rankings["bm25"]}, ev.slices, n_docs=n_docs, k=10,
                         depth=20)  # fmt: skip
    beyond = indexes["<b>bm25"].slices["all"].beyond
    expected = popularity(ids, np.ones(len(ids), dtype=bool), n_docs, 10)
    assert beyond["outside_corpus@10"] == 3 and expected.outside == 3
    assert beyond["coverage@10"] == pytest.approx(expected.coverage) and expected.coverage < 1
    report = ev.report.model_copy(update={"indexes": indexes, "gate": None})
    view = beyond_table(report, TYPOGRAPHIC)
    assert view is not None and view.indexes == ["<b>bm25"] and len(view.rows) == len(ev.slices)
    line = "documents outside the corpus in the top 10"
    md = render_markdown(report)
    assert "### Beyond accuracy (top 10)" in md and f"3 {line}" in md
    table = md[md.index("### Beyond accuracy") :]
    assert "&lt;b&gt;bm25 cov@10" in table and "<b>" not in table
    html = run_html(report)
    assert 'id="beyond"' in html and "&lt;b&gt;bm25 coverage@10" in html and line in html
    assert "<b>bm25" not in html
    console = Console(record=True, width=200)
    console.print(render_run(report, []))
    text = console.export_text()
    assert "Beyond accuracy" in text and f"<b>bm25: 3 {line}" in text


def test_a_report_without_the_figures_reads_back_without_them() -> None:
    """baselines/demo.json (written before beyond existed) loads, draws no beyond table and
    dumps back without a beyond key."""
    text = (REPO / "baselines" / "demo.json").read_text()
    report = RunReport.model_validate_json(text)
    assert beyond_table(report, TYPOGRAPHIC) is None
    assert "Beyond accuracy" not in render_markdown(report)
    assert 'id="beyond"' not in run_html(report)
    assert '"beyond"' not in report.model_dump_json()
