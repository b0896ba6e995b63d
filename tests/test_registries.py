"""The engines' registries: embedders by model.backend, retrievers by index name; the cache
wrapper applied in one place; a retriever added to the registry runs with no pipeline change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalret.core.ranking import SearchResult, top_candidates
from evalret.data.config import (
    CacheConfig,
    Config,
    GoldenSetConfig,
    HnswIndexConfig,
    HybridIndexConfig,
    IndexesConfig,
)
from evalret.data.config import (
    SentenceTransformersModelConfig as ModelConfig,
)
from evalret.engines.cache import CachedEmbedder
from evalret.engines.embedders import EMBEDDERS, make_embedder, open_embedder
from evalret.engines.retrievers import RETRIEVERS, SearchJob, make_retriever, make_retrievers
from evalret.engines.retrievers.base import BaseRetriever
from evalret.errors import ConfigError
from evalret.pipeline.evaluate import run_evaluation
from helpers import HashEmbedder, make_set


def test_unknown_backend_names_the_known_ones() -> None:
    """A backend the registry lacks is a ConfigError naming it and listing the known ones."""
    config = ModelConfig().model_copy(update={"backend": "http"})  # past the config's Literal
    with pytest.raises(ConfigError) as e:
        make_embedder(config)
    assert "'http'" in str(e.value) and "torch, onnx, openvino, python, openai" in str(e.value)
    assert list(EMBEDDERS) == ["torch", "onnx", "openvino", "python", "openai"]


def test_unknown_retriever_names_the_known_ones() -> None:
    """An index name the registry lacks is a ConfigError naming it and listing the known ones."""
    with pytest.raises(ConfigError) as e:
        make_retriever("pgvector", Config())
    assert "'pgvector'" in str(e.value) and "exact, hnsw, bm25, hybrid" in str(e.value)


def test_retrievers_describe_their_parameters() -> None:
    """Each retriever describes its own parameters for the fingerprint, and the hybrid its depth."""
    config = Config(
        indexes=IndexesConfig(
            hnsw=HnswIndexConfig(m=8, ef_construction=40, ef_search=16, threads=1),
            hybrid=HybridIndexConfig(dense="hnsw", rrf_k=30, candidates=50),
        )
    )
    params = {r.name: r.params() for r in make_retrievers(config)}
    assert list(params) == ["exact", "hnsw", "bm25", "hybrid"]
    assert params["exact"] == {"type": "faiss.IndexFlatIP"}
    assert params["hnsw"] == {
        "type": "faiss.IndexHNSWFlat",
        "metric": "inner_product",
        "m": 8,
        "ef_construction": 40,
        "ef_search": 16,
    }
    assert params["bm25"]["type"] == "bm25s" and params["bm25"]["k1"] == 1.5
    assert "enabled" not in params["bm25"]
    assert params["hybrid"] == {
        "type": "reciprocal rank fusion",
        "dense": "hnsw",
        "rrf_k": 30,
        "candidates": 50,
        "of": ["bm25", "hnsw"],
    }
    assert make_retriever("hybrid", config).input_depth() == 50
    assert make_retriever("exact", config).input_depth() == 0
    # a graph built on more than one thread says so (one thread keeps the settings of old reports)
    threaded = config.model_copy(
        update={"indexes": config.indexes.model_copy(update={"hnsw": HnswIndexConfig(threads=3)})}
    )
    assert make_retriever("hnsw", threaded).params()["threads"] == 3


def test_a_disabled_retriever_says_so() -> None:
    """A disabled HNSW retriever reports that its index was not built."""
    config = Config(indexes=IndexesConfig(hnsw=HnswIndexConfig(enabled=False)))
    hnsw = make_retriever("hnsw", config)
    assert not hnsw.enabled and hnsw.cache_notes() == {"hnsw_index": "not built"}


def test_the_cache_wraps_the_embedder_only_when_enabled(tmp_path: Path) -> None:
    """open_embedder wraps the embedder in the cache only when the cache is on."""
    backend = HashEmbedder()
    off = open_embedder(ModelConfig(), CacheConfig(enabled=False), backend)
    assert off.embedder is backend and off.cached is None and off.root is None
    on = open_embedder(ModelConfig(), CacheConfig(dir=tmp_path), backend)
    assert isinstance(on.embedder, CachedEmbedder) and on.cached is on.embedder
    assert on.backend is backend and on.root == tmp_path


class _FirstDocuments(BaseRetriever):
    """A stand-in retriever: every query gets the documents in file order, scores descending."""

    name = "first"

    def __init__(self, config: Config) -> None:
        self.size = 3

    def params(self) -> dict[str, Any]:
        return {"type": "first documents", "size": self.size}

    def retrieve(self, job: SearchJob) -> SearchResult:
        ids = np.full((len(job.query_texts), job.depth), -1, dtype=np.int64)
        scores = np.full(ids.shape, -np.inf)
        docs = np.arange(min(self.size, len(job.doc_ids)))
        for qi in range(len(ids)):
            ids[qi], scores[qi] = top_candidates(docs, -docs.astype(float), job.depth, job.rank)
        return SearchResult(ids=ids, scores=scores)


def test_a_registered_retriever_runs_through_the_pipeline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One registry line: the run searches with it, reports its parameters and fingerprints
    them."""
    monkeypatch.setitem(RETRIEVERS, "first", _FirstDocuments)
    config = Config(
        golden_set=GoldenSetConfig(path=make_set(tmp_path)),
        cache=CacheConfig(enabled=False),
        indexes=IndexesConfig(
            hnsw=HnswIndexConfig(enabled=False),
            bm25={"enabled": False},
            hybrid=HybridIndexConfig(enabled=False),
        ),
        metrics=["ndcg@10"],
        health={"enabled": False},
    )
    report = run_evaluation(config, embedder=HashEmbedder()).report
    assert list(report.indexes) == ["exact", "first"]
    assert report.indexes["first"].params == {"type": "first documents", "size": 3}
    assert report.fingerprint.indexes["first"] == {"type": "first documents", "size": 3}
    assert report.indexes["first"].top_ids[0] == ["d0", "d1", "d2"]
