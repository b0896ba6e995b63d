"""Search: exact and HNSW through faiss, the tie rule, and fetch widening at tied cutoffs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evalret.core.ranking import apply_tie_rule, id_rank
from evalret.data.config import HnswIndexConfig
from evalret.engines.faiss_index import build_exact, build_hnsw, cached_hnsw, search


def test_id_rank_is_string_order() -> None:
    """The tie key orders ids as strings: 'd10' < 'd2' < 'd9'."""
    assert id_rank(["d9", "d10", "d2"]).tolist() == [2, 0, 1]


def test_tie_rule_score_desc_then_id_desc() -> None:
    """Equal scores go by document id descending; -1 padding goes last."""
    ids = np.array([[0, 1, 2, -1]])
    scores = np.array([[0.5, 0.9, 0.5, -np.inf]], dtype=np.float32)
    rank = id_rank(["a", "b", "c"])
    out_ids, out_scores = apply_tie_rule(ids, scores, rank)
    assert out_ids.tolist() == [[1, 2, 0, -1]]
    assert out_scores[0, :3].tolist() == [np.float32(0.9), np.float32(0.5), np.float32(0.5)]


def test_search_keeps_trec_eval_choice_when_a_tie_straddles_the_cut() -> None:
    """40 identical documents tie; top-3 must be the three largest ids, whatever faiss returned."""
    vectors = np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (40, 1))
    doc_ids = [f"doc{i:02d}" for i in range(40)]
    result = search(
        build_exact(vectors), np.array([[1.0, 0.0]], dtype=np.float32), 3, id_rank(doc_ids)
    )
    assert [doc_ids[i] for i in result.ids[0]] == ["doc39", "doc38", "doc37"]


def test_search_pads_when_corpus_is_smaller_than_depth() -> None:
    """Depth 5 over 2 documents: 2 results then -1."""
    vectors = np.eye(2, dtype=np.float32)
    result = search(build_exact(vectors), vectors, 5, id_rank(["a", "b"]))
    assert result.ids.tolist() == [[0, 1, -1, -1, -1], [1, 0, -1, -1, -1]]


def test_hnsw_is_deterministic_and_close_to_exact() -> None:
    """Two HNSW builds give identical results; recall@10 against exact is high on random data."""
    rng = np.random.default_rng(0)
    docs = rng.standard_normal((3000, 32)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = docs[:50] + 0.1 * rng.standard_normal((50, 32)).astype(np.float32)
    rank = id_rank([f"d{i}" for i in range(3000)])
    cfg = HnswIndexConfig(m=16, ef_construction=100, ef_search=64, threads=1)
    a = search(build_hnsw(docs, cfg), queries, 10, rank)
    b = search(build_hnsw(docs, cfg), queries, 10, rank)
    exact = search(build_exact(docs), queries, 10, rank)
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.scores, b.scores)
    overlap = np.mean([len(set(x) & set(y)) / 10 for x, y in zip(a.ids, exact.ids, strict=True)])
    assert overlap > 0.9


def test_hnsw_cache_reuses_the_graph_and_rebuilds_on_change(tmp_path: Path) -> None:
    """Same vectors and parameters read the stored graph (same results); other parameters or
    vectors build a new one; an unreadable file is rebuilt."""
    rng = np.random.default_rng(1)
    docs = rng.standard_normal((2000, 16)).astype(np.float32)
    rank = id_rank([f"d{i}" for i in range(2000)])
    cfg = HnswIndexConfig(m=8, ef_construction=40, ef_search=32)
    built, first = cached_hnsw(docs, cfg, tmp_path)
    again, second = cached_hnsw(docs, cfg, tmp_path)
    assert (first, second) == ("built", "hit")
    a = search(built, docs[:20], 10, rank)
    b = search(again, docs[:20], 10, rank)
    assert np.array_equal(a.ids, b.ids) and again.hnsw.efSearch == 32
    assert cached_hnsw(docs, HnswIndexConfig(m=12, ef_construction=40), tmp_path)[1] == "built"
    assert cached_hnsw(docs[:1500], cfg, tmp_path)[1] == "built"
    [stored] = [p for p in (tmp_path / "indexes").iterdir() if p.stat().st_size > 0][:1]
    for p in (tmp_path / "indexes").iterdir():
        p.write_bytes(b"garbage")
    assert cached_hnsw(docs, cfg, tmp_path)[1] == "rebuilt"
    assert stored.exists()
