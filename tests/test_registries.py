"""The engines' registries: embedders by model.backend, retrievers by index name; the cache
wrapper applied in one place; a retriever added to the registry runs with no pipeline change."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

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
    ModelConfigBase,
    TypedIndexBase,
    parse_config,
)
from evalret.data.config import (
    SentenceTransformersModelConfig as ModelConfig,
)
from evalret.engines.cache import CachedEmbedder
from evalret.engines.embedders import (
    EMBEDDERS,
    Capabilities,
    make_embedder,
    open_embedder,
    register_provider,
    unregister_provider,
)
from evalret.engines.retrievers import (
    RETRIEVERS,
    SearchJob,
    make_retriever,
    make_retrievers,
    register_retriever_type,
    unregister_retriever_type,
)
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


# --- the extension cost: a new provider and a new index type, each one module and one call ---
# (the module is the settings model and the class; the registry call adds both; no file of
# evalret changes: `register_provider` and `register_retriever_type` add the config's union
# member and the registry line)


class LetterModelConfig(ModelConfigBase):
    """A provider's settings: the common keys and its own."""

    provider: Literal["letters"]
    name: str = "letter-counts"


class LetterEmbedder:
    """A provider's embedder: an ``Embedder`` only (engines/protocols.py), so the cache keys
    its texts by kind and text and the dry run takes them as fed after the prefix."""

    def __init__(self, config: LetterModelConfig, _model_cache: Path | None) -> None:
        self.config = config

    def identity(self) -> dict[str, Any]:
        return {"provider": "letters", "name": self.config.name}

    def embed(self, texts: Sequence[str], kind: str, progress: Any = None) -> np.ndarray:
        out = np.zeros((len(texts), 26), dtype=np.float32)
        for i, text in enumerate(texts):
            for c in text.lower():
                if "a" <= c <= "z":
                    out[i, ord(c) - ord("a")] += 1
        if progress:
            progress(len(texts))
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


class LastIndexConfig(TypedIndexBase):
    """An index type's settings."""

    type: Literal["last"]
    size: int = 2


class LastDocuments:
    """An index type's retriever: a ``Retriever`` only, no ``BaseRetriever`` (it tells no cost
    and is not timed): every query gets the last ``size`` documents, the last first."""

    needs_vectors = False
    corpus_bound = True
    approximate = False

    def __init__(self, name: str, settings: LastIndexConfig, config: Config) -> None:
        self.name, self.enabled, self.size = name, settings.enabled, settings.size

    def params(self) -> dict[str, Any]:
        return {"type": "last", "size": self.size}

    def input_depth(self) -> int:
        return 0

    def cache_notes(self) -> dict[str, str]:
        return {}

    def retrieve(self, job: SearchJob) -> SearchResult:
        n = len(job.doc_ids)
        docs = np.arange(max(n - self.size, 0), n)
        ids = np.full((len(job.query_texts), job.depth), -1, dtype=np.int64)
        scores = np.full(ids.shape, -np.inf)
        for qi in range(len(ids)):
            ids[qi], scores[qi] = top_candidates(docs, docs.astype(float), job.depth, job.rank)
        return SearchResult(ids=ids, scores=scores)


LETTERS = Capabilities(api=False, counts_tokens=False, runs_under_ray=False, hashes_weights=False)


def test_a_new_provider_and_index_type_are_one_module_and_one_call_each(tmp_path: Path) -> None:
    """Registered from here, both run through ``run_evaluation`` on a tiny set: the config
    takes their keys, the run embeds with the provider, searches with the index type beside
    the built-in exact index, and reports both; the index type, telling no cost and not
    timed, has neither."""
    provider = register_provider(LetterModelConfig, LetterEmbedder, LETTERS)
    index_type = register_retriever_type(LastIndexConfig, LastDocuments)
    try:
        config = parse_config(
            f"golden_set: {{path: {json.dumps(str(make_set(tmp_path)))}}}\n"
            "model: {provider: letters}\n"
            "indexes:\n  hnsw: {enabled: false}\n  bm25: {enabled: false}\n"
            "  hybrid: {enabled: false}\n  tail: {type: last, size: 3}\n"
            "metrics: [ndcg@10]\nhealth: {enabled: false}\ncache: {enabled: false}\n"
        )
        report = run_evaluation(config).report
    finally:
        unregister_retriever_type(index_type)
        unregister_provider(provider)
    assert report.fingerprint.model == {"provider": "letters", "name": "letter-counts"}
    assert report.embedding.dim == 26
    assert list(report.indexes) == ["exact", "tail"]
    assert report.indexes["tail"].params == {"type": "last", "size": 3}
    assert report.indexes["tail"].top_ids[0] == ["d59", "d58", "d57"]
    assert report.latency is None or "tail" not in report.latency.indexes
