"""The qdrant store driver (engines/stores/qdrant.py) with the real qdrant-client in local mode:
an existing collection made with qdrant-client's own API (named vectors, document ids and
metadata in the payload, chunks folded, ids unknown to the corpus counted), scratch mode leaving
nothing behind, the collection's distance checked against ``metric``, settings refused at their
key, and the missing package naming its extra. Filter conformance and flat-equals-exact are
tests/test_stores.py's."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from evalret.core.filters import MetadataColumns, eligibility, parse_filter
from evalret.data.config import Config, StoreIndexConfig
from evalret.engines.retrievers.store import StoreRetriever
from evalret.engines.stores.qdrant import filter_of, key_path
from evalret.errors import ConfigError
from test_stores import _random, filtered_run, job_of, scratch


def _existing(path: Path, **more: Any) -> StoreRetriever:
    settings = StoreIndexConfig.model_validate(
        {
            "type": "store",
            "driver": "qdrant",
            "connect": {"path": path},
            "collection": "docs",
            "id_field": "doc_id",
            "vector_field": "dense",
            "metadata_field": "meta",
            "chunks": "fold",
        }
        | more
    )
    return StoreRetriever("q", settings, Config())


def _chunked(path: Path, docs: np.ndarray, distance: Any = models.Distance.DOT) -> np.ndarray:
    """A collection ``docs`` at ``path``: named vectors (``dense`` and ``other``), two rows per
    document (its own vector and a perturbed chunk), three rows of documents the corpus lacks;
    the document id under ``doc_id``, metadata under ``meta``. Returns every row's vector in
    point order (documents' rows first, then chunks, then the unknown ones)."""
    n, dim = docs.shape
    chunks = docs + 0.3 * _random(n, dim, 9)
    chunks /= np.linalg.norm(chunks, axis=1, keepdims=True)
    ghosts = _random(3, dim, 10)
    rows = np.vstack([docs, chunks, ghosts]).astype(np.float32)
    ids = [f"d{i:05d}" for i in range(n)] * 2 + [f"ghost{k}" for k in range(3)]
    client = QdrantClient(path=str(path))
    client.create_collection(
        "docs",
        vectors_config={
            "dense": models.VectorParams(size=dim, distance=distance),
            "other": models.VectorParams(size=2, distance=models.Distance.EUCLID),
        },
    )
    client.upsert(
        "docs",
        points=[
            models.PointStruct(
                id=p,
                vector={"dense": rows[p].tolist(), "other": [0.0, 1.0]},
                payload={"doc_id": ids[p], "meta": {"g": p % n % 3}},
            )
            for p in range(len(rows))
        ],
    )
    client.close()
    return rows


def test_an_existing_collection_of_chunks_is_folded_and_its_unknown_ids_counted(
    tmp_path: Path,
) -> None:
    """Each document ranks at its best row (the exact top 10 of the per-document maximum), a
    filter on the payload's ``meta`` keeps only its documents, the folded rows and the ids the
    corpus lacks are counted in the params; the store's description names local mode."""
    docs, queries = _random(40, 8, 1), _random(12, 8, 2)
    rows = _chunked(tmp_path / "q", docs)
    raw: list[Any] = [None] * 6 + [{"g": 1}] * 6
    job = job_of(docs, queries, 10)
    mask = np.array([i % 3 == 1 for i in range(40)])
    metadata = [{"g": i % 3} for i in range(40)]
    filters = [None if f is None else parse_filter(f) for f in raw]
    job = replace(
        job,
        eligibility=eligibility(filters, MetadataColumns(metadata)),
        filters=filters,
        doc_metadata=metadata,
    )
    retriever = _existing(tmp_path / "q")
    retriever.check_filters([f for f in filters if f is not None])
    got = retriever.retrieve(job)
    sims = queries @ rows[:80].T
    best = np.maximum(sims[:, :40], sims[:, 40:80])
    for qi in range(12):
        score = np.where(mask, best[qi], -np.inf) if raw[qi] else best[qi]
        expected = sorted(range(40), key=lambda d: (-score[d], -d))[:10]
        assert got.ids[qi].tolist() == expected
        np.testing.assert_allclose(got.scores[qi], score[expected], atol=1e-5)
    params = retriever.params()
    assert params["rows_folded"] > 0 and params["ranks_unknown_id"] > 0
    assert params["store"]["mode"] == "local" and params["store"]["rows"] == 83
    assert params["store"]["index"]["distance"] == "Dot"
    assert "exact" in params["store"]["index"]["search"]
    assert params["vector_field"] == "dense" and params["metadata_field"] == "meta"
    assert retriever.counts.unknown_ids <= {"ghost0", "ghost1", "ghost2"}


def test_a_wrong_metric_or_vector_name_is_refused_at_its_key(tmp_path: Path) -> None:
    """A collection measuring Euclid searched as ``metric: ip``: a ConfigError naming
    indexes.q.metric and the distance; an unknown vector name lists the collection's."""
    docs = _random(10, 8, 1)
    _chunked(tmp_path / "q", docs, models.Distance.EUCLID)
    job = job_of(docs, _random(3, 8, 2), 5)
    with pytest.raises(ConfigError, match=r"indexes\.q\.metric: .*Euclid \(metric l2\)"):
        _existing(tmp_path / "q").retrieve(job)
    assert _existing(tmp_path / "q", metric="l2").retrieve(job).ids.shape == (3, 5)
    with pytest.raises(ConfigError, match=r"indexes\.q\.vector_field: .*dense, other"):
        _existing(tmp_path / "q", vector_field="nope", metric="l2").retrieve(job)
    with pytest.raises(ConfigError, match=r"indexes\.q\.collection: no collection 'gone'"):
        _existing(tmp_path / "q", collection="gone").retrieve(job)


def test_scratch_mode_leaves_nothing_behind(tmp_path: Path) -> None:
    """Scratch in a directory that did not exist: removed after; in an existing directory: no
    collection left; without a path: in memory. No build is recorded (local mode has none)."""
    docs, queries = _random(50, 8, 1), _random(5, 8, 2)
    job = job_of(docs, queries, 5)
    scratch("qdrant", tmp_path).retrieve(job)
    assert not (tmp_path / "s").exists()
    kept = tmp_path / "kept"
    QdrantClient(path=str(kept)).close()
    settings = {"type": "store", "driver": "qdrant", "mode": "scratch", "connect": {"path": kept}}
    store = StoreRetriever("s", StoreIndexConfig.model_validate(settings), Config())
    store.retrieve(job)
    client = QdrantClient(path=str(kept))
    assert client.get_collections().collections == []
    client.close()
    memory = StoreRetriever(
        "m", StoreIndexConfig.model_validate(settings | {"connect": {}}), Config()
    )
    assert memory.retrieve(job).ids.tolist() == store.retrieve(job).ids.tolist()
    assert memory.params()["build"] == {}


@pytest.mark.parametrize(
    ("more", "key"),
    [
        ({"search": {"ef": 8}}, "indexes.s.search: 'ef'"),
        ({"search": {"hnsw_ef": 0}}, "indexes.s.search.hnsw_ef: a positive integer"),
        ({"search": {"exact": 1}}, "indexes.s.search.exact: true or false"),
        ({"build": {"ef_construction": 8}}, "indexes.s.build: 'ef_construction'"),
    ],
)
def test_a_setting_qdrant_lacks_is_refused_at_its_key(more: dict[str, Any], key: str) -> None:
    settings = StoreIndexConfig.model_validate(
        {"type": "store", "driver": "qdrant", "mode": "scratch"} | more
    )
    with pytest.raises(ConfigError) as e:
        StoreRetriever("s", settings, Config())
    assert key in str(e.value)


def test_the_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    settings = StoreIndexConfig.model_validate(
        {"type": "store", "driver": "qdrant", "mode": "scratch"}
    )
    with pytest.raises(ConfigError, match=r"pip install 'evalret\[qdrant\]'"):
        StoreRetriever("s", settings, Config())


def test_keys_are_quoted_and_numbers_are_ranges() -> None:
    """A key with a dot is quoted under the metadata path; a number's equality is a range (no
    MatchValue, which takes no float); $ne is a must_not."""
    assert key_path("meta", "a.b") == 'meta."a.b"' and key_path(None, "lang-2") == "lang-2"
    client = QdrantClient(location=":memory:")
    client.create_collection("k", vectors_config=models.VectorParams(size=2, distance="Dot"))
    payloads = [{"meta": {"a.b": 1, "a": {"b": 2}}}, {"meta": {"a": {"b": 1}}}]
    client.upsert("k", points=models.Batch(ids=[0, 1], vectors=[[1, 0], [0, 1]], payloads=payloads))
    kept = client.scroll("k", scroll_filter=filter_of(parse_filter({"a.b": 1}), "meta"))[0]
    assert [p.id for p in kept] == [0]
    f = filter_of(parse_filter({"year": {"$ne": 2021}}), None)
    (cond,) = f.must_not
    assert cond.key == "year" and cond.range == models.Range(gte=2021.0, lte=2021.0)


def test_an_existing_collection_needs_a_store_that_is_there(tmp_path: Path) -> None:
    """No path or URL, or a path with nothing there: a ConfigError at connect, before anything
    is embedded, and no store created."""
    with pytest.raises(ConfigError, match=r"indexes\.q\.connect: an existing collection"):
        StoreRetriever(
            "q",
            StoreIndexConfig.model_validate(
                {"type": "store", "driver": "qdrant", "collection": "docs"}
            ),
            Config(),
        )
    with pytest.raises(ConfigError, match=r"indexes\.q\.connect\.path: no store at"):
        _existing(tmp_path / "nowhere").check_ready()
    assert not (tmp_path / "nowhere").exists()


def test_a_filtered_run_gets_recall_and_selectivity_buckets(tmp_path: Path) -> None:
    """Scratch mode in local mode (an exact search) on a golden set whose queries filter: the
    index's section holds recall@10 1 against exact and the queries by selectivity; nothing
    came back outside a filter."""
    report = filtered_run(tmp_path, "{type: store, driver: qdrant, mode: scratch}")
    section = report.ann["s"]
    assert section.slices["all"].recall["recall@10"] == 1.0
    assert section.selectivity is not None
    buckets = {name: b.n_queries for name, b in section.selectivity.items()}
    assert (buckets["1-10%"], buckets["10-50%"], buckets[">=50%"]) == (10, 10, 20)
    params = report.indexes["s"].params
    assert params["type"] == "store.qdrant" and "documents_outside_filter" not in params
