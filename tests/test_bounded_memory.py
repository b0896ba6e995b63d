"""Bounded memory (#16): exact search over the document matrix in place gives the rankings of the
old IndexFlatIP copy; the cache's read path copies shards out in blocks into one matrix; HNSW
build threads are configurable, one thread keeping the deterministic graph and its cache key."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import faiss
import numpy as np
import pytest

from evalret.core.ranking import SearchResult, id_rank
from evalret.data.config import Config, HnswIndexConfig, parse_config
from evalret.data.config import SentenceTransformersModelConfig as ModelConfig
from evalret.data.goldenset import load_golden_set
from evalret.engines.cache import COPY_ROWS, CachedEmbedder, copy_rows
from evalret.engines.embedders import make_embedder
from evalret.engines.faiss_index import (
    ADD_BATCH,
    build_exact,
    build_hnsw,
    exact_search,
    hnsw_cache_key,
    search,
)
from evalret.engines.retrievers.hnsw import HnswRetriever
from evalret.errors import ConfigError
from helpers import HashEmbedder, marks_its_users

REPO = Path(__file__).resolve().parents[1]


def assert_same(a: SearchResult, b: SearchResult) -> None:
    assert np.array_equal(a.ids, b.ids)
    assert np.array_equal(a.scores, b.scores)


def old_exact(docs: np.ndarray, queries: np.ndarray, depth: int, rank: np.ndarray) -> SearchResult:
    """The path exact search took before: an IndexFlatIP holding a copy of the vectors."""
    return search(build_exact(docs), queries, depth, rank)


@pytest.fixture(scope="module")
@marks_its_users("model")
def demo_vectors() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The demo set embedded by the packaged default model: (documents, queries, id rank)."""
    config = Config()
    golden = load_golden_set(
        config.golden_set.model_copy(update={"path": REPO / "golden_sets" / "demo"})
    )
    embedder = make_embedder(ModelConfig())
    docs = embedder.embed(golden.doc_texts, "document")
    queries = embedder.embed(golden.query_texts, "query")
    return docs, queries, id_rank(golden.doc_ids)


@pytest.mark.parametrize("block_rows", [131_072, 1024, 64, 7])
@pytest.mark.parametrize("depth", [10, 100, 1000])
def test_exact_search_matches_the_old_path_on_the_demo(
    demo_vectors: tuple[np.ndarray, np.ndarray, np.ndarray], block_rows: int, depth: int
) -> None:
    """Every id and score equal to the IndexFlatIP path, one block or many."""
    docs, queries, rank = demo_vectors
    assert len(docs) == 338
    new = exact_search(docs, queries, depth, rank, block_rows=block_rows)
    assert_same(new, old_exact(docs, queries, depth, rank))


@pytest.mark.parametrize("block_rows", [1024, 100, 33])
@pytest.mark.parametrize("depth", [1, 10, 50])
def test_exact_search_matches_the_old_path_with_many_exact_ties(
    block_rows: int, depth: int
) -> None:
    """Vectors of -1/0/1 make thousands of exactly tied scores; document names are shuffled so
    the tie-break order is not the row order. Rankings and scores are the old path's."""
    rng = np.random.default_rng(7)
    docs = rng.integers(-1, 2, size=(3000, 6)).astype(np.float32)
    queries = rng.integers(-1, 2, size=(120, 6)).astype(np.float32)
    names = [f"d{int(i)}" for i in rng.permutation(3000)]
    rank = id_rank(names)
    new = exact_search(docs, queries, depth, rank, block_rows=block_rows)
    old = old_exact(docs, queries, depth, rank)
    assert_same(new, old)
    # the ties really straddle cuts: some query's last kept score is tied past the cut
    assert any(np.sum(docs @ q == old.scores[i, -1]) > 1 for i, q in enumerate(queries))


def test_exact_search_matches_the_old_path_on_random_unit_vectors() -> None:
    """Float vectors over several 1024-row blocks, scored through faiss's BLAS path."""
    rng = np.random.default_rng(3)
    docs = rng.standard_normal((5000, 48)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = docs[rng.integers(0, 5000, 300)] + 0.05 * rng.standard_normal((300, 48)).astype(
        np.float32
    )
    rank = id_rank([f"doc-{i}" for i in range(5000)])
    for block_rows in (1024, 2048):
        assert_same(
            exact_search(docs, queries, 100, rank, block_rows=block_rows),
            old_exact(docs, queries, 100, rank),
        )


def test_exact_search_pads_past_a_small_corpus() -> None:
    docs = np.eye(3, dtype=np.float32)
    result = exact_search(docs, docs, 5, id_rank(["a", "b", "c"]), block_rows=2)
    assert result.ids.tolist() == [[0, 2, 1, -1, -1], [1, 2, 0, -1, -1], [2, 1, 0, -1, -1]]


def test_copy_rows_from_a_memory_map_equals_fancy_indexing(tmp_path: Path) -> None:
    """Rows copied out of a memory-mapped file in blocks, in any order, are the rows asked for."""
    rng = np.random.default_rng(5)
    source = rng.standard_normal((3 * COPY_ROWS + 17, 4)).astype(np.float32)
    np.save(tmp_path / "v.npy", source)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    src = rng.permutation(len(source))[: len(source) - 5]
    dst = rng.permutation(len(src))
    out = np.zeros((len(src), 4), dtype=np.float32)
    copy_rows(out, dst, mapped, src)
    expected = np.zeros_like(out)
    expected[dst] = source[src]
    assert np.array_equal(out, expected)
    assert np.array_equal(mapped, source)  # released pages read back from the file


def test_cache_read_path_returns_the_same_matrix_and_rankings(tmp_path: Path) -> None:
    """Texts stored in two shards (one out of order) read back as the embedder's own matrix,
    the matrix the old gather made, and exact search over it ranks as before."""
    texts = [f"document {i} about topic {i % 37} and {i % 11}" for i in range(2500)]
    inner = HashEmbedder()
    direct = inner.embed(texts, "document")
    first = CachedEmbedder(inner, tmp_path)
    first.embed(texts[::-1][:1200], "document")  # shard one, reversed order
    first.embed(texts, "document")  # shard two: the rest
    reader = CachedEmbedder(inner, tmp_path)
    read = reader.embed(texts, "document")
    assert reader.stats["document"].hits == 2500 and reader.stats["document"].misses == 0
    assert read.dtype == np.float32 and read.flags.c_contiguous
    assert np.array_equal(read, direct)
    rank = id_rank([f"d{i}" for i in range(2500)])
    queries = inner.embed(texts[:40], "query")
    assert_same(exact_search(read, queries, 20, rank, 1024), old_exact(direct, queries, 20, rank))


def test_hnsw_one_thread_builds_the_same_graph_twice_and_restores_faiss_threads() -> None:
    rng = np.random.default_rng(11)
    docs = rng.standard_normal((1500, 16)).astype(np.float32)
    cfg = HnswIndexConfig(m=8, ef_construction=40, ef_search=32, threads=1)
    before = faiss.omp_get_max_threads()
    a = faiss.serialize_index(build_hnsw(docs, cfg))
    assert faiss.omp_get_max_threads() == before
    b = faiss.serialize_index(build_hnsw(docs, cfg))
    assert np.array_equal(a, b)
    build_hnsw(docs, cfg.model_copy(update={"threads": 2}))
    assert faiss.omp_get_max_threads() == before


def test_hnsw_cache_key_keeps_the_single_thread_key_and_keys_threads() -> None:
    """threads 1 keeps the key every earlier single-threaded graph was stored under; more threads
    key a different graph."""
    rng = np.random.default_rng(12)
    docs = rng.standard_normal((300, 8)).astype(np.float32)
    cfg = HnswIndexConfig(m=8, ef_construction=40, threads=1)
    old = hashlib.sha256()
    old.update(
        json.dumps(
            {
                "m": 8,
                "ef_construction": 40,
                "shape": [300, 8],
                "faiss": faiss.__version__,
                "add_batch": ADD_BATCH,
                "threads": 1,
            }
        ).encode()
    )
    old.update(docs.tobytes())
    assert hnsw_cache_key(docs, cfg) == old.hexdigest()
    assert hnsw_cache_key(docs, cfg.model_copy(update={"threads": 2})) != old.hexdigest()


def test_hnsw_threads_config_and_report_key() -> None:
    """threads: null (all cores) by default, at least 1; the report's index settings name the
    threads of a multi-threaded build and keep the single-thread settings as they were."""
    assert HnswIndexConfig().threads is None
    with pytest.raises(ConfigError) as e:
        parse_config("indexes:\n  hnsw:\n    threads: 0\n", "cfg.yaml")
    assert "cfg.yaml:3: indexes.hnsw.threads" in "\n".join(str(p) for p in e.value.problems)
    one = HnswRetriever(parse_config("indexes:\n  hnsw:\n    threads: 1\n")).params()
    assert "threads" not in one and one["m"] == 32
    four = HnswRetriever(parse_config("indexes:\n  hnsw:\n    threads: 4\n")).params()
    assert four["threads"] == 4


def test_demo_config_and_init_template_build_hnsw_on_one_thread() -> None:
    """The CI gate's config and `evalret init`'s template keep the deterministic graph."""
    from evalret.data.config import load_config

    assert load_config(REPO / "configs" / "default.yaml").indexes.hnsw.threads == 1
    template = (REPO / "src" / "evalret" / "templates" / "evalret.yaml").read_text()
    assert parse_config(template).indexes.hnsw.threads == 1
