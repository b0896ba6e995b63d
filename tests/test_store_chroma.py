"""The chroma store driver (engines/stores/chroma.py) with the real chromadb: an existing
collection made with chromadb's own API (chunks under a metadata id, folded; ids unknown to the
corpus counted; Chroma's own ids), scratch mode leaving nothing behind, the collection's space
checked against ``metric``, settings refused at their key, the missing package naming its
extra, and a lean HNSW graph run on the demo: recall against exact below 1 in report.ann and the
gate's ann_min_recall failing above it. Filter conformance and flat-equals-exact are
tests/test_stores.py's."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest

from conftest import DEMO
from evalret.core.filters import MetadataColumns, eligibility, parse_filter
from evalret.data.config import Config, StoreIndexConfig, parse_config
from evalret.data.schema import RunReport
from evalret.engines.retrievers.store import StoreRetriever
from evalret.engines.stores.chroma import where_of
from evalret.errors import ConfigError
from evalret.pipeline.evaluate import run_evaluation
from helpers import HASH_ENCODER, invoke
from test_stores import _random, filtered_run, job_of, scratch


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    """One persistent chroma store for the module (chromadb's client is slow to start)."""
    path = tmp_path_factory.mktemp("chroma")
    yield path, chromadb.PersistentClient(path=str(path))


def _existing(path: Path, collection: str, **more: Any) -> StoreRetriever:
    settings = StoreIndexConfig.model_validate(
        {
            "type": "store",
            "driver": "chroma",
            "connect": {"path": path},
            "collection": collection,
            "chunks": "fold",
        }
        | more
    )
    return StoreRetriever("c", settings, Config())


def _chunked(client: Any, name: str, docs: np.ndarray, space: str = "ip") -> np.ndarray:
    """A collection of two rows per document (its vector and a perturbed chunk; Chroma ids
    ``<doc>#0``, ``<doc>#1``, the document id under the metadata key ``doc_id``) and three rows
    of documents the corpus lacks; an exact-enough graph (ef_search over the row count)."""
    n, dim = docs.shape
    chunks = docs + 0.3 * _random(n, dim, 9)
    chunks /= np.linalg.norm(chunks, axis=1, keepdims=True)
    rows = np.vstack([docs, chunks, _random(3, dim, 10)]).astype(np.float32)
    doc_ids = [f"d{i:05d}" for i in range(n)] * 2 + [f"ghost{k}" for k in range(3)]
    collection = client.create_collection(
        name, configuration={"hnsw": {"space": space, "ef_search": 500}}, embedding_function=None
    )
    collection.add(
        ids=[f"{d}#{p // n}" for p, d in enumerate(doc_ids)],
        embeddings=rows,
        metadatas=[{"doc_id": d, "g": p % n % 3} for p, d in enumerate(doc_ids)],
    )
    return rows


def test_an_existing_collection_of_chunks_is_folded_and_its_unknown_ids_counted(
    store: tuple[Path, Any],
) -> None:
    """Each document ranks at its best row (the exact top 10 of the per-document maximum), the
    folded rows and the ids the corpus lacks counted; the description is chroma's."""
    path, client = store
    docs, queries = _random(40, 8, 1), _random(12, 8, 2)
    rows = _chunked(client, "chunks", docs)
    retriever = _existing(path, "chunks", id_field="doc_id")
    got = retriever.retrieve(job_of(docs, queries, 10))
    sims = queries @ rows[:80].T
    best = np.maximum(sims[:, :40], sims[:, 40:80])
    for qi in range(12):
        expected = sorted(range(40), key=lambda d: (-best[qi, d], -d))[:10]
        assert got.ids[qi].tolist() == expected
        np.testing.assert_allclose(got.scores[qi], best[qi, expected], atol=1e-5)
    params = retriever.params()
    assert params["rows_folded"] > 0 and params["ranks_unknown_id"] > 0
    assert retriever.counts.unknown_ids <= {"ghost0", "ghost1", "ghost2"}
    store_info = params["store"]
    assert store_info["rows"] == 83 and store_info["version"] == chromadb.__version__
    assert store_info["index"]["type"] == "hnsw" and store_info["index"]["space"] == "ip"


def test_chromas_own_ids_and_a_filter(store: tuple[Path, Any]) -> None:
    """With ``id_field: id`` the Chroma id is the document id; a filtered query keeps only
    what core/filters.py keeps."""
    path, client = store
    docs, queries = _random(30, 8, 3), _random(4, 8, 4)
    collection = client.create_collection(
        "own", configuration={"hnsw": {"space": "cosine", "ef_search": 500}}
    )
    ids = [f"d{i:05d}" for i in range(30)]
    metadata = [{"lang": "en"} if i % 2 else {"lang": "fr", "year": i} for i in range(30)]
    collection.add(ids=ids, embeddings=docs, metadatas=metadata)
    raw = [None, {"lang": {"$ne": "en"}}, {"year": {"$gte": 10}}, {"lang": "en"}]
    filters = [None if f is None else parse_filter(f) for f in raw]
    job = replace(
        job_of(docs, queries, 5),
        eligibility=eligibility(filters, MetadataColumns(metadata)),
        filters=filters,
        doc_metadata=metadata,
    )
    retriever = _existing(path, "own", metric="cosine")
    retriever.check_filters([f for f in job.filters if f is not None])
    got = retriever.retrieve(job)
    assert job.eligibility is not None
    for qi in range(4):
        mask = job.eligibility.mask(qi)
        score = queries[qi] @ docs.T / np.linalg.norm(docs, axis=1)
        score = score if mask is None else np.where(mask, score, -np.inf)
        assert got.ids[qi].tolist() == sorted(range(30), key=lambda d: (-score[d], -d))[:5]
    assert "documents_outside_filter" not in retriever.params()


def test_a_wrong_metric_is_refused_at_its_key(store: tuple[Path, Any]) -> None:
    """A collection built with space l2 searched as ``metric: ip``: a ConfigError naming
    indexes.c.metric; as l2 it runs. A missing collection is an error at its key."""
    path, client = store
    docs = _random(10, 8, 5)
    _chunked(client, "euclid", docs, "l2")
    job = job_of(docs, _random(3, 8, 6), 5)
    with pytest.raises(ConfigError, match=r"indexes\.c\.metric: .*space l2, not ip"):
        _existing(path, "euclid", id_field="doc_id").retrieve(job)
    assert _existing(path, "euclid", id_field="doc_id", metric="l2").retrieve(job).ids.shape == (
        3,
        5,
    )
    with pytest.raises(ConfigError, match=r"indexes\.c\.collection: no collection 'gone'"):
        _existing(path, "gone").retrieve(job)


def test_scratch_mode_leaves_nothing_behind(store: tuple[Path, Any]) -> None:
    """Scratch in the module's store: no collection left; without a path: in memory, and the
    same ranking. The build is recorded, the graph's settings in the description."""
    path, client = store
    before = {c.name for c in client.list_collections()}
    docs, queries = _random(60, 8, 7), _random(5, 8, 8)
    job = job_of(docs, queries, 5)
    settings = {"type": "store", "driver": "chroma", "mode": "scratch", "connect": {"path": path}}
    on_disk = StoreRetriever("s", StoreIndexConfig.model_validate(settings), Config())
    ranked = on_disk.retrieve(job).ids.tolist()
    assert {c.name for c in client.list_collections()} == before
    assert on_disk.params()["store"]["index"]["ef_search"] >= 60
    lean = scratch("chroma", path.parent, connect={}, build={"M": 4, "search_ef": 3})
    lean.retrieve(job)
    index = lean.params()["store"]["index"]
    assert index["max_neighbors"] == 4 and index["ef_search"] == 3
    assert lean.params()["build"] == {"M": 4, "search_ef": 3}
    memory = scratch("chroma", path.parent, connect={})
    assert memory.retrieve(job).ids.tolist() == ranked
    assert chromadb.EphemeralClient().list_collections() == []


@pytest.mark.parametrize(
    ("more", "key"),
    [
        ({"search": {"ef_search": 8}}, "indexes.s.search.ef_search: chroma takes no search"),
        ({"build": {"ef": 8}}, "indexes.s.build: 'ef'"),
        ({"build": {"M": 0}}, "indexes.s.build.M: a positive integer"),
        ({"build": {"M": 4, "max_neighbors": 8}}, "max_neighbors is set twice"),
        ({"metadata_field": "meta"}, "indexes.s.metadata_field"),
    ],
)
def test_a_setting_chroma_lacks_is_refused_at_its_key(more: dict[str, Any], key: str) -> None:
    settings = StoreIndexConfig.model_validate(
        {"type": "store", "driver": "chroma", "mode": "scratch"} | more
    )
    with pytest.raises(ConfigError) as e:
        StoreRetriever("s", settings, Config())
    assert key in str(e.value)


def test_a_key_chroma_cannot_store_is_refused_and_where_has_chromas_shape() -> None:
    """A filter on ``#x`` is a ConfigError naming the key; a single-part $and stands alone,
    several keys are a two-part $and of single-key objects."""
    settings = StoreIndexConfig.model_validate(
        {"type": "store", "driver": "chroma", "mode": "scratch"}
    )
    retriever = StoreRetriever("s", settings, Config())
    with pytest.raises(ConfigError, match="'#x'"):
        retriever.check_filters([parse_filter({"$or": [{"a": 1}, {"#x": 1}]})])
    assert where_of(parse_filter({"$and": [{"a": "x"}]})) == {"a": {"$eq": "x"}}
    assert where_of(parse_filter({"a": "x", "b": {"$gt": 1, "$lt": 3}})) == {
        "$and": [{"a": {"$eq": "x"}}, {"b": {"$gt": 1.0}}, {"b": {"$lt": 3.0}}]
    }


def test_the_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "chromadb", None)
    settings = StoreIndexConfig.model_validate(
        {"type": "store", "driver": "chroma", "mode": "scratch"}
    )
    with pytest.raises(ConfigError, match=r"pip install 'evalret\[chroma\]'"):
        StoreRetriever("s", settings, Config())


LEAN = (
    "{type: store, driver: chroma, mode: scratch, build: {M: 4, construction_ef: 4, search_ef: 1}}"
)


def _config(tmp_path: Path, name: str, gate: str) -> Path:
    path = tmp_path / name
    path.write_text(
        f"golden_set: {{path: {DEMO}}}\ncache: {{enabled: false}}\n"
        "model: {provider: python, callable: 'chroma_store_encoder:make'}\n"
        "metrics: [ndcg@10, recall@10]\n"
        "indexes:\n  hnsw: {enabled: false}\n  bm25: {enabled: false}\n"
        f"  hybrid: {{enabled: false}}\n  lean: {LEAN}\n" + gate
    )
    return path


def test_a_lean_graph_is_measured_against_exact_and_gated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lean HNSW graph over the demo (hashed vectors): report.ann[lean] holds recall@10
    against exact below 1; ann_min_recall above it fails the gate (exit 1, a failed check
    naming the index), far below it passes (exit 0)."""
    (tmp_path / "chroma_store_encoder.py").write_text(textwrap.dedent(HASH_ENCODER))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("chroma_store_encoder", None)
    run = run_evaluation(parse_config(_config(tmp_path, "a.yaml", "").read_text(), "a.yaml"))
    recall = run.report.ann["lean"].slices["all"].recall["recall@10"]
    assert recall is not None and 0 < recall < 1
    assert run.report.ann["lean"].reference == "exact"
    # Chroma's build is not reproducible (no seed): the floors sit far from any build's recall
    assert recall < 0.9
    strict = _config(tmp_path, "strict.yaml", "gate: {ann_min_recall: 0.99}\n")
    code, out = invoke("run", "-c", str(strict), "--out", str(tmp_path / "strict"))
    assert code == 1, out
    report = RunReport.model_validate_json((tmp_path / "strict" / "report.json").read_bytes())
    assert report.gate is not None and report.gate.verdict == "fail"
    failed = [c for c in report.gate.checks if not c.passed]
    assert [(c.kind, c.index) for c in failed] == [("ann_min_recall", "lean")]
    assert failed[0].current is not None and failed[0].current < 0.99
    assert json.loads((tmp_path / "strict" / "report.json").read_text())["ann"]["lean"]
    loose = _config(tmp_path, "loose.yaml", "gate: {ann_min_recall: 0.01}\n")
    code, out = invoke("run", "-c", str(loose), "--out", str(tmp_path / "loose"))
    assert code == 0, out


def test_an_existing_collection_needs_a_store_that_is_there(tmp_path: Path) -> None:
    """A path with nothing there: a ConfigError at connect.path before a search (and when a
    search starts), and no store created; `evalret embed` with the config (to make the export
    the store is loaded from) does not look."""
    with pytest.raises(ConfigError, match=r"indexes\.c\.connect\.path: no store at"):
        _existing(tmp_path / "nowhere", "docs").check_ready()
    assert not (tmp_path / "nowhere").exists()


def test_a_lean_graph_on_a_filtered_set_gets_selectivity_buckets(tmp_path: Path) -> None:
    """The lean graph on a golden set whose queries filter: recall@10 against exact below 1,
    the queries by selectivity, and what the filtered graph search could not fill counted, never
    a document outside its filter."""
    report = filtered_run(tmp_path, LEAN)
    section = report.ann["s"]
    recall = section.slices["all"].recall["recall@10"]
    assert recall is not None and recall < 1
    assert section.selectivity is not None
    buckets = {name: b.n_queries for name, b in section.selectivity.items()}
    assert (buckets["1-10%"], buckets["10-50%"], buckets[">=50%"]) == (10, 10, 20)
    assert "documents_outside_filter" not in report.indexes["s"].params
