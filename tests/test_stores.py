"""Vector databases through the store interface (``type: store``, engines/stores/): every driver
with the real package, in scratch mode on seeded random vectors.

- **Filter conformance**: on test_filters' documents (missing keys, ints against floats,
  booleans, strings, a key holding two types) and every filter below ($ne / $nin on absent keys,
  nested $and / $or), searched as deep as the corpus, each query gets back exactly the documents
  core/filters.py keeps: the store's translation keeps nothing more and nothing less.
- **A flat collection equals exact search** (same documents in the same order) and reports the
  store's own description.

A driver's approximate settings and its existing-collection mode are tested in its own file.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalret.core.filters import MetadataColumns, eligibility, parse_filter
from evalret.core.ranking import id_rank
from evalret.data.config import Config, StoreIndexConfig, parse_config
from evalret.engines.faiss_index import build_exact, search
from evalret.engines.retrievers.base import SearchJob
from evalret.engines.retrievers.store import StoreRetriever
from evalret.pipeline.evaluate import run_evaluation
from helpers import HashEmbedder
from test_filters import DOCS, FILTERS

# the local drivers (pgvector's conformance is in test_pgvector.py: it needs a server)
DRIVERS = ["lancedb", "qdrant", "chroma", "milvus"]

CONFORMANCE = [
    *FILTERS,
    {"year": 2021.0},  # a float operand: the int 2021 and the float 2021.0 both equal it
    {"year": {"$in": [2020.0, 2024]}},
    {"year": {"$ne": 2020}},  # keeps the string year and the documents without one
    {"year": "2022"},  # the string year alone
    {"open": False},
    {"open": {"$in": [True, False]}},
    {"open": {"$ne": True}},  # keeps open: 1 (a number) and the documents without open
    {"open": 1},
    {"lang": {"$nin": ["de"]}, "open": {"$ne": False}},
    {"$or": [{"$and": [{"lang": "en"}, {"open": True}]}, {"missing": {"$nin": ["x"]}}]},
    {"$and": [{"$or": [{"lang": "fr"}, {"lang": "de"}]}, {"year": {"$gte": 2021}}]},
    {"$or": [{"missing": "x"}, {"lang": {"$in": ["zz"]}}]},  # nothing
]


def _random(n: int, dim: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def job_of(
    docs: np.ndarray,
    queries: np.ndarray,
    depth: int,
    raw: list[Any] | None = None,
    cycle: list[dict[str, Any] | None] = DOCS,
) -> SearchJob:
    """A job over ``docs`` (ids d00000...); with ``raw``, the documents' metadata cycles through
    ``cycle`` (test_filters.DOCS) and query i has filter ``raw[i]`` (None: none)."""
    ids = [f"d{i:05d}" for i in range(len(docs))]
    job = SearchJob(
        doc_ids=ids,
        doc_texts=ids,
        query_texts=[f"q{i}" for i in range(len(queries))],
        doc_vectors=docs,
        query_vectors=queries,
        rank=id_rank(ids),
        depth=depth,
        earlier={},
        progress=lambda _label, _total: lambda _n: None,
        timed=lambda _label: contextlib.nullcontext(),
        query_ids=[f"q{i}" for i in range(len(queries))],
    )
    if raw is None:
        return job
    metadata = [cycle[i % len(cycle)] for i in range(len(docs))]
    filters = [None if f is None else parse_filter(f) for f in raw]
    return replace(
        job,
        eligibility=eligibility(filters, MetadataColumns(metadata)),
        filters=filters,
        doc_metadata=metadata,
    )


# where a server's driver connects (pgvector: the Postgres of test_pgvector.py's fixture, whose
# DSN it puts in this variable; its tests are in test_pgvector_store.py)
CONNECT: dict[str, dict[str, Any]] = {"pgvector": {"dsn_env": "EVALRET_TEST_PG_DSN"}}


def scratch(driver: str, tmp_path: Path, **more: Any) -> StoreRetriever:
    """A scratch-mode store index of ``driver`` in ``tmp_path`` (flat unless ``build``)."""
    connect = CONNECT.get(driver, {"path": tmp_path / "s"})
    settings = StoreIndexConfig.model_validate(
        {"type": "store", "driver": driver, "mode": "scratch", "connect": connect} | more
    )
    return StoreRetriever("store", settings, Config())


@pytest.mark.parametrize("driver", DRIVERS)
def test_filter_conformance(driver: str, tmp_path: Path) -> None:
    """Every filter keeps, in the store, exactly the documents core/filters.py keeps."""
    docs = _random(60, 8, 3)
    raw: list[Any] = [*CONFORMANCE, None]
    job = job_of(docs, _random(len(raw), 8, 4), 60, raw)
    retriever = scratch(driver, tmp_path)
    retriever.check_filters([f for f in job.filters if f is not None])
    got = retriever.retrieve(job)
    assert job.eligibility is not None
    for qi, f in enumerate(raw):
        mask = job.eligibility.mask(qi)
        expected = set(range(60)) if mask is None else set(np.flatnonzero(mask).tolist())
        assert {int(d) for d in got.ids[qi] if d >= 0} == expected, json.dumps(f)
    params = retriever.params()
    assert "documents_outside_filter" not in params and "queries_short" not in params


# metadata keys named like the fields a store keeps itself (ids, vectors, a metadata field, a
# distance column): scratch mode must keep them apart from its own
OWN_NAMES: list[dict[str, Any] | None] = [
    {"id": "x", "vector": 1, "metadata": "m", "_distance": 2.0, "doc_id": "q", "query_index": 1},
    {"id": "y", "vector": True},
    {"metadata": {"nested": 1}, "_distance": 0.5},
    None,
]
OWN_FILTERS = [
    {"id": "x"},
    {"id": {"$ne": "x"}},
    {"vector": 1},
    {"vector": True},
    {"metadata": "m"},
    {"_distance": {"$gt": 1}},
    {"doc_id": "q"},
    {"query_index": {"$in": [1, 2]}},
]


@pytest.mark.parametrize("driver", DRIVERS)
def test_metadata_named_like_a_stores_own_fields(driver: str, tmp_path: Path) -> None:
    """Metadata keys ``id``, ``vector``, ``metadata``, ``_distance``... are filtered as any
    other key, and the documents keep their own ids (a scratch column or payload key of the
    store's own is never overwritten by metadata)."""
    docs = _random(40, 8, 5)
    raw: list[Any] = [*OWN_FILTERS, None]
    job = job_of(docs, _random(len(raw), 8, 6), 40, raw, cycle=OWN_NAMES)
    retriever = scratch(driver, tmp_path)
    retriever.check_filters([f for f in job.filters if f is not None])
    got = retriever.retrieve(job)
    assert job.eligibility is not None
    for qi, f in enumerate(raw):
        mask = job.eligibility.mask(qi)
        expected = set(range(40)) if mask is None else set(np.flatnonzero(mask).tolist())
        assert {int(d) for d in got.ids[qi] if d >= 0} == expected, json.dumps(f)
    exact = search(build_exact(docs), job.query_vectors, 10, job.rank)
    assert got.ids[-1, :10].tolist() == exact.ids[-1].tolist()  # the unfiltered query


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_flat_collection_equals_exact_search(driver: str, tmp_path: Path) -> None:
    """Flat (no index built): the same top 10 as exact search, scores within float32's
    rounding; the store's description in the params."""
    docs, queries = _random(300, 16, 1), _random(20, 16, 2)
    job = job_of(docs, queries, 10)
    retriever = scratch(driver, tmp_path)
    got = retriever.retrieve(job)
    exact = search(build_exact(docs), queries, 10, job.rank)
    assert got.ids.tolist() == exact.ids.tolist()
    np.testing.assert_allclose(got.scores, exact.scores, atol=1e-5)
    params = retriever.params()
    assert params["type"] == f"store.{driver}" and params["store"]["rows"] == 300
    assert not (tmp_path / "s").exists() or not any(
        p.name.startswith("evalret_scratch_") for p in (tmp_path / "s").iterdir()
    )


def filtered_set(directory: Path) -> Path:
    """A golden set of 300 documents whose queries filter: every fourth query on ``g`` (a
    quarter of the corpus eligible), every fourth on ``r`` (a twentieth), the rest unfiltered."""
    directory.mkdir()
    docs = [
        {
            "id": f"d{i}",
            "text": f"w{i % 7} v{i % 5} u{i % 11} t{i % 13}",
            "metadata": {"g": i % 4} | ({"r": True} if i % 20 == 0 else {}),
        }
        for i in range(300)
    ]
    filters = {1: {"g": 1}, 3: {"r": True}}
    relevant = {1: lambda q: 4 * q + 1, 3: lambda q: 20 * (q % 15)}  # a document it keeps
    queries = [
        {
            "id": f"q{q}",
            "text": f"w{q % 7} u{q % 11}",
            "relevant": {f"d{relevant.get(q % 4, lambda q: q)(q)}": 1},
        }
        | ({"filter": filters[q % 4]} if q % 4 in filters else {})
        for q in range(40)
    ]
    for name, rows in (("corpus.jsonl", docs), ("queries.jsonl", queries)):
        (directory / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return directory


def filtered_run(directory: Path, index: str) -> Any:
    """The report of ``indexes.s: <index>`` (YAML) on filtered_set's golden set."""
    text = (
        f"golden_set: {{path: {filtered_set(directory / 'set')}}}\ncache: {{enabled: false}}\n"
        "indexes:\n  hnsw: {enabled: false}\n  bm25: {enabled: false}\n"
        f"  hybrid: {{enabled: false}}\n  s: {index}\nmetrics: [recall@10, ndcg@10]\n"
    )
    config = parse_config(text, "c.yaml").resolve_paths(directory)
    return run_evaluation(config, embedder=HashEmbedder()).report


def _make_store(driver: str, root: Path, ids: list[str], vectors: np.ndarray) -> Path:
    """A collection ``docs`` of ``driver`` made with the store's own API; its path."""
    rows = range(len(ids))
    if driver == "lancedb":
        import lancedb
        import pyarrow as pa

        flat = pa.array(vectors.ravel())
        table = pa.table(
            {"id": ids, "vector": pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])}
        )
        lancedb.connect(str(root / "lance")).create_table("docs", table)
        return root / "lance"
    if driver == "qdrant":
        from qdrant_client import QdrantClient, models

        client = QdrantClient(path=str(root / "qdrant"))
        params = models.VectorParams(size=vectors.shape[1], distance=models.Distance.DOT)
        client.create_collection("docs", vectors_config=params)
        points = [models.PointStruct(id=i, vector=vectors[i].tolist(), payload={"id": ids[i]})
                  for i in rows]  # fmt: skip
        client.upsert("docs", points)
        client.close()
        return root / "qdrant"
    if driver == "chroma":
        import chromadb

        client = chromadb.PersistentClient(path=str(root / "chroma"))
        docs = client.create_collection("docs", configuration={"hnsw": {"space": "ip"}})
        docs.add(ids=ids, embeddings=vectors.tolist())
        return root / "chroma"
    from pymilvus import MilvusClient

    milvus = MilvusClient(str(root / "milvus.db"))
    milvus.create_collection(
        "docs", dimension=vectors.shape[1], primary_field_name="id", id_type="string",
        max_length=64, vector_field_name="vector", metric_type="IP",
    )  # fmt: skip
    milvus.insert("docs", [{"id": ids[i], "vector": vectors[i].tolist()} for i in rows])
    milvus.close()
    return root / "milvus.db"


def _tree(path: Path) -> dict[str, tuple[bytes, int]]:
    files = [p for p in sorted(path.rglob("*")) if p.is_file()] if path.is_dir() else [path]
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_existing_store_is_only_read(driver: str, tmp_path: Path) -> None:
    """Existing mode searches the store as it stands and leaves every file of it as it was
    (bytes and modification times): the store is an input, never an output."""
    docs = _random(50, 8, 7)
    job = job_of(docs, _random(5, 8, 8), 10)
    path = _make_store(driver, tmp_path, list(job.doc_ids), docs)
    before = _tree(path)
    settings = StoreIndexConfig.model_validate(
        {"type": "store", "driver": driver, "connect": {"path": path}, "collection": "docs"}
    )
    got = StoreRetriever("s", settings, Config()).retrieve(job)
    exact = search(build_exact(docs), job.query_vectors, 10, job.rank)
    assert got.ids.tolist() == exact.ids.tolist()
    assert _tree(path) == before
