"""The milvus store driver (engines/stores/milvus.py) with the real pymilvus and Milvus Lite:
existing collections made here with pymilvus' own API (whole documents, and chunks folded into
their documents with ids unknown to the corpus counted), scratch mode leaving nothing behind
(after an error too), a metric that is not the collection's refused, the missing package named,
the settings Milvus does not know refused, the filter translation on an existing collection,
IVF_FLAT at a small nprobe measured like every approximate index (recall against exact,
selectivity buckets, ``gate.ann_min_recall``), HNSW built and searched as configured, each metric
read higher-is-better, and the how-to's loading example run on ``embed --export``.

Milvus Lite serves each ``.db`` from a server thread in this process: the collections are made
once per module, in one database.
"""

from __future__ import annotations

import json
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import DEMO
from evalret.core.filters import parse_filter
from evalret.core.ranking import topk_overlap
from evalret.data.config import Config, StoreIndexConfig, parse_config
from evalret.engines.faiss_index import build_exact, search
from evalret.engines.retrievers.store import StoreRetriever
from evalret.engines.stores import ScratchRows
from evalret.engines.stores.milvus import DRIVER, condition_expr, where_expr
from evalret.errors import ConfigError
from evalret.pipeline.evaluate import run_evaluation
from helpers import HASH_ENCODER, HashEmbedder, invoke
from test_filters import DOCS, filtered_set
from test_stores import CONFORMANCE, _random, job_of

pymilvus = pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

N_DOCS, DIM = 300, 16
CHUNKS = 3  # rows per document in the chunks collection
STRANGERS = 4  # rows whose document id the corpus lacks, placed on the first queries


def _collection(client: Any, name: str, fields: list[tuple[str, Any, dict[str, Any]]]) -> None:
    schema = pymilvus.MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    for field, kind, more in fields:
        schema.add_field(field, kind, **more)
    client.create_collection(name, schema=schema)


def _index(client: Any, name: str, metric: str) -> None:
    client.flush(name)
    params = client.prepare_index_params()
    params.add_index(field_name="emb", index_type="FLAT", metric_type=metric)
    client.create_index(name, params)
    client.load_collection(name)


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A Milvus Lite database holding ``docs`` (doc_id, emb, meta; IP), ``docs_l2`` (the same
    rows, L2) and ``chunks`` (row INT64, doc, emb: CHUNKS rows per document near it, and
    STRANGERS rows of unknown documents equal to the first queries); with the vectors."""
    dt = pymilvus.DataType
    path = tmp_path_factory.mktemp("milvus") / "existing.db"
    docs, queries = _random(N_DOCS, DIM, 1), _random(20, DIM, 2)
    client = pymilvus.MilvusClient(uri=str(path))
    whole = [
        ("doc_id", dt.VARCHAR, {"max_length": 16, "is_primary": True}),
        ("emb", dt.FLOAT_VECTOR, {"dim": DIM}),
        ("meta", dt.JSON, {}),
    ]
    ids = [f"d{i:05d}" for i in range(N_DOCS)]
    rows = [
        {"doc_id": d, "emb": v.tolist(), "meta": DOCS[i % len(DOCS)] or {}}
        for i, (d, v) in enumerate(zip(ids, docs, strict=True))
    ]
    for name, metric in (("docs", "IP"), ("docs_l2", "L2")):
        _collection(client, name, whole)
        client.insert(name, rows)
        _index(client, name, metric)
    _collection(
        client,
        "chunks",
        [
            ("row", dt.INT64, {"is_primary": True}),
            ("doc", dt.VARCHAR, {"max_length": 16}),
            ("emb", dt.FLOAT_VECTOR, {"dim": DIM}),
        ],
    )
    noise = np.random.default_rng(5).standard_normal((N_DOCS * CHUNKS, DIM)).astype(np.float32)
    chunk_vectors = np.repeat(docs, CHUNKS, axis=0) + 0.3 * noise
    chunk_rows = [
        {"row": n, "doc": ids[n // CHUNKS], "emb": v.tolist()} for n, v in enumerate(chunk_vectors)
    ]
    chunk_rows += [
        {"row": 10_000 + k, "doc": f"stranger{k}", "emb": (2 * queries[k]).tolist()}
        for k in range(STRANGERS)
    ]
    client.insert("chunks", chunk_rows)
    _index(client, "chunks", "IP")
    schema = pymilvus.MilvusClient.create_schema(auto_id=False, enable_dynamic_field=True)
    for field, kind, more in whole[:2]:
        schema.add_field(field, kind, **more)
    client.create_collection("dynamic", schema=schema)
    client.insert("dynamic", [{"doc_id": r["doc_id"], "emb": r["emb"], **r["meta"]} for r in rows])
    _index(client, "dynamic", "IP")
    yield {
        "path": path,
        "client": client,
        "docs": docs,
        "queries": queries,
        "chunks": chunk_vectors,
    }
    client.close()


def _existing(lite: Any, name: str, **more: Any) -> StoreRetriever:
    settings = {
        "type": "store",
        "driver": "milvus",
        "mode": "existing",
        "connect": {"path": lite["path"]},
        "collection": name,
        "id_field": "doc_id",
        "vector_field": "emb",
        "metadata_field": "meta",
    } | more
    return StoreRetriever("prod", StoreIndexConfig.model_validate(settings), Config())


def test_an_existing_collection_is_searched_as_it_was_built(lite: Any) -> None:
    """The FLAT collection made with pymilvus equals exact search; its description is Milvus'
    own (the index as describe_index reports it, the row count); it is left as it was."""
    retriever = _existing(lite, "docs")
    job = job_of(lite["docs"], lite["queries"], 10)
    got = retriever.retrieve(job)
    exact = search(build_exact(lite["docs"]), lite["queries"], 10, job.rank)
    assert got.ids.tolist() == exact.ids.tolist()
    np.testing.assert_allclose(got.scores, exact.scores, atol=1e-5)
    params = retriever.params()
    store = params["store"]
    assert store["rows"] == N_DOCS and store["version"] == pymilvus.__version__
    assert store["index"]["index_type"] == "FLAT" and store["index"]["metric_type"] == "IP"
    assert params["collection"] == "docs" and params["id_field"] == "doc_id"
    assert "ranks_unknown_id" not in params and "rows_folded" not in params
    assert lite["client"].get_collection_stats("docs")["row_count"] == N_DOCS


def test_chunks_fold_into_their_documents_and_unknown_ids_are_counted(lite: Any) -> None:
    """``chunks: fold`` on a collection of CHUNKS rows per document (id_field a non-unique
    VARCHAR beside the INT64 primary key): each document ranks at its best row, as exact search
    over the chunks computes it; the rows folded and the strangers' rows are counted."""
    retriever = _existing(lite, "chunks", id_field="doc", chunks="fold", metadata_field=None)
    job = job_of(lite["docs"], lite["queries"], 10)
    got = retriever.retrieve(job)
    sims = (lite["queries"] @ lite["chunks"].T).reshape(len(lite["queries"]), N_DOCS, CHUNKS)
    best = sims.max(axis=2)
    expected = np.argsort(-best, axis=1, kind="stable")[:, :10]
    assert got.ids.tolist() == expected.tolist()
    np.testing.assert_allclose(got.scores, np.take_along_axis(best, expected, 1), atol=1e-5)
    cut = best[np.arange(len(best)), expected[:, -1]][:, None]  # each query's 10th similarity
    strangers = lite["queries"] @ (2 * lite["queries"][:STRANGERS]).T
    params = retriever.params()
    assert params["ranks_unknown_id"] == int((strangers > cut).sum()) >= STRANGERS
    above = int((sims.reshape(len(best), -1) > cut).sum())  # rows better than the cut
    assert params["rows_folded"] == above - 9 * len(best) > 0  # less the 9 documents' best rows
    assert "ranks_null_id" not in params
    assert retriever.counts.unknown_ids == {f"stranger{k}" for k in range(STRANGERS)}
    assert params["store"]["rows"] == N_DOCS * CHUNKS + STRANGERS


def test_a_metric_that_is_not_the_collections_is_refused(lite: Any) -> None:
    """``docs_l2`` was built with L2, ``docs`` with IP: read with another metric (even IP as
    COSINE, whose scores keep their direction) it is refused, naming the key to fix."""
    for name, metric, built in (("docs_l2", "ip", "L2"), ("docs", "cosine", "IP")):
        retriever = _existing(lite, name, metric=metric)
        with pytest.raises(ConfigError) as e:
            retriever.retrieve(job_of(lite["docs"], lite["queries"], 10))
        shown = str(e.value)
        assert "indexes.prod.metric" in shown and f"indexed for {built}" in shown
    right = _existing(lite, "docs_l2", metric="l2")
    job = job_of(lite["docs"], lite["queries"], 10)
    distances = ((lite["queries"][:, None, :] - lite["docs"][None]) ** 2).sum(-1)
    expected = np.argsort(distances, axis=1, kind="stable")[:, :10]
    assert right.retrieve(job).ids.tolist() == expected.tolist()


@pytest.mark.parametrize(
    ("more", "key"),
    [
        ({"collection": "nope"}, "indexes.prod.collection"),
        ({"id_field": "missing"}, "indexes.prod.id_field"),
        ({"vector_field": "meta"}, "indexes.prod.vector_field"),
        ({"id_field": "meta"}, "indexes.prod.id_field"),
        ({"connect": {"path": "/nonexistent/evalret.db"}}, "indexes.prod.connect.path"),
    ],
)
def test_an_existing_collection_that_does_not_fit_is_a_config_error(
    lite: Any, more: dict[str, Any], key: str
) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        _existing(lite, "docs", **more).retrieve(job_of(lite["docs"], lite["queries"], 10))


def test_filters_on_an_existing_collection(lite: Any) -> None:
    """The conformance filters on the existing collection (metadata as written, ints and floats
    as they came): every filter keeps core/filters.py's documents, except those on ``open``,
    where the collection holds ``true`` and ``1``: Milvus Lite cannot tell them apart, and such
    a filter is a ConfigError naming the key, not a different answer."""
    plain: list[Any] = [f for f in CONFORMANCE if "open" not in json.dumps(f)]
    raw = [*plain, None]
    job = job_of(lite["docs"], _random(len(raw), DIM, 4), N_DOCS, raw)
    retriever = _existing(lite, "docs")
    retriever.check_filters([f for f in job.filters if f is not None])
    got = retriever.retrieve(job)
    assert job.eligibility is not None
    for qi, f in enumerate(raw):
        mask = job.eligibility.mask(qi)
        expected = set(range(N_DOCS)) if mask is None else set(np.flatnonzero(mask).tolist())
        assert {int(d) for d in got.ids[qi] if d >= 0} == expected, json.dumps(f)
    params = retriever.params()
    assert "documents_outside_filter" not in params and params["metadata_field"] == "meta"
    for f in CONFORMANCE:
        if "open" in json.dumps(f):
            job = job_of(lite["docs"], lite["queries"][:1], 10, [f])
            with pytest.raises(ConfigError, match=r"Milvus Lite cannot filter 'open' with"):
                _existing(lite, "docs").retrieve(job)
    dynamic = [{"lang": {"$ne": "en"}}, {"year": {"$gte": 2021}}, {"lang": {"$nin": ["fr"]}}]
    job = job_of(lite["docs"], lite["queries"][:3], N_DOCS, dynamic)
    got = _existing(lite, "dynamic", metadata_field="$meta").retrieve(job)
    assert job.eligibility is not None
    for qi in range(3):
        mask = job.eligibility.mask(qi)
        assert mask is not None
        assert {int(d) for d in got.ids[qi] if d >= 0} == set(np.flatnonzero(mask).tolist())
    no_dynamic = _existing(lite, "docs", metadata_field="$meta")
    with pytest.raises(ConfigError, match=r"indexes\.prod\.metadata_field: .* no dynamic fields"):
        no_dynamic.retrieve(job)
    no_json = _existing(lite, "docs", metadata_field="emb")
    with pytest.raises(ConfigError, match=r"indexes\.prod\.metadata_field: .* no JSON field"):
        no_json.retrieve(job_of(lite["docs"], lite["queries"][:1], 10, [{"lang": "en"}]))


def test_the_translation_escapes_and_keeps_documents_without_the_key() -> None:
    """Strings and keys escaped; $ne / $nin kept two-valued (a document without the key is
    kept); $in an OR of equalities; a type a scratch key never holds is a constant."""
    f = parse_filter({'la"n\\g': {"$ne": 'a"b\nc'}})
    assert where_expr(f, "metadata", None) == (
        '(not (exists metadata["la\\"n\\\\g"] and (metadata["la\\"n\\\\g"] == "a\\"b\\nc")))'
    )
    f = parse_filter({"year": {"$in": [2020, 2021.5]}})
    assert where_expr(f, "m", None) == (
        '(exists m["year"] and (m["year"] == 2020 or m["year"] == 2021.5))'
    )
    types = {"open": {"boolean", "number"}, "lang": {"string"}}
    assert condition_expr(parse_filter({"open": 1}), "m", types) == (  # type: ignore[arg-type]
        '(exists m["__number__open"] and (m["__number__open"] == 1))'
    )
    assert where_expr(parse_filter({"lang": {"$nin": [3]}}), "m", types) == "true"
    assert where_expr(parse_filter({"lang": {"$gt": 3}}), "m", types) == "false"


# --- scratch mode ------------------------------------------------------------------------------


def _scratch(path: Any = None, **more: Any) -> StoreRetriever:
    settings = {"type": "store", "driver": "milvus", "mode": "scratch"} | more
    if path is not None:
        settings["connect"] = {"path": path}
    return StoreRetriever("s", StoreIndexConfig.model_validate(settings), Config())


def test_scratch_leaves_nothing_behind(
    lite: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scratch mode in a directory, in an existing .db and in a temporary directory: searched,
    then dropped with its files; after a build Milvus refuses too (a ConfigError at build)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    job = job_of(lite["docs"], lite["queries"], 10)
    exact = search(build_exact(lite["docs"]), lite["queries"], 10, job.rank)
    for retriever in (_scratch(tmp_path / "dir"), _scratch(lite["path"]), _scratch()):
        assert retriever.retrieve(job).ids.tolist() == exact.ids.tolist()
        assert retriever.params()["store"]["index"]["index_type"] == "FLAT"
    bad = _scratch(tmp_path / "dir", build={"index_type": "NO_SUCH_INDEX"})
    with pytest.raises(ConfigError, match=r"indexes\.s\.build: milvus cannot build NO_SUCH_INDEX"):
        bad.retrieve(job)
    assert list((tmp_path / "dir").iterdir()) == []
    assert list((tmp_path / "tmp").iterdir()) == []
    assert sorted(lite["client"].list_collections()) == ["chunks", "docs", "docs_l2", "dynamic"]


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
def test_each_metric_reads_higher_is_better(metric: str) -> None:
    """Vectors of unequal lengths in a scratch FLAT collection of each metric: the ranking and
    the similarities of exact search under that metric (L2: the negated squared distance)."""
    rng = np.random.default_rng(0)
    docs = rng.standard_normal((300, 8)) * rng.uniform(0.5, 3, (300, 1))
    queries = rng.standard_normal((10, 8))
    docs, queries = docs.astype(np.float32), queries.astype(np.float32)
    if metric == "cosine":
        unit = docs / np.linalg.norm(docs, axis=1, keepdims=True)
        sims = queries / np.linalg.norm(queries, axis=1, keepdims=True) @ unit.T
    elif metric == "l2":
        sims = -((queries[:, None] - docs[None]) ** 2).sum(-1)
    else:
        sims = queries @ docs.T
    expected = np.argsort(-sims, axis=1, kind="stable")[:, :10]
    got = _scratch(metric=metric).retrieve(job_of(docs, queries, 10))
    assert got.ids.tolist() == expected.tolist()
    np.testing.assert_allclose(got.scores, np.take_along_axis(sims, expected, 1), atol=1e-5)


def test_hnsw_is_built_as_configured_and_searched_with_ef(tmp_path: Path) -> None:
    """A lean HNSW graph (M 4, efConstruction 8) built twice (``stability.repeats``): searched
    at ef 10 it misses much of exact's top 10, at ef 500 almost nothing; Milvus reports the
    build parameters; both builds are dropped."""
    docs, queries = _random(2000, DIM, 1), _random(40, DIM, 2)
    job = job_of(docs, queries, 10)
    exact = search(build_exact(docs), queries, 10, job.rank)
    build = {"index_type": "HNSW", "M": 4, "efConstruction": 8}
    recall = {}
    for ef in (10, 500):
        retriever = _scratch(
            tmp_path / "dir", build=build, search={"ef": ef}, stability={"repeats": 2}
        )
        recall[ef] = topk_overlap(retriever.retrieve(job).ids, exact.ids, 10).mean()
        assert len(retriever.repeats) == 2
        assert retriever.params()["store"]["index"]["params"] == {"M": 4, "efConstruction": 8}
    assert recall[10] < 0.8 < 0.95 < recall[500]
    assert list((tmp_path / "dir").iterdir()) == []
    settings = _scratch(build=build, search={"ef": 10, "nprobe": 3}).settings
    rows = ScratchRows([f"d{i}" for i in range(50)], docs[:50])
    with DRIVER.open(settings, "s", rows, lambda _n: None) as session:
        got = session.search(queries[:2], 40, None)  # a server refuses ef below the limit
        assert [len(hits) for hits in got] == [40, 40]
        assert session._params(40) == {"ef": 40, "nprobe": 3}  # raised to the rows fetched
        assert session._params(5) == {"ef": 10, "nprobe": 3}


def test_settings_milvus_does_not_know_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"indexes\.s\.search: 'nprobes' is no milvus search"):
        _scratch(search={"nprobes": 4})
    with pytest.raises(ConfigError, match=r"indexes\.s\.build\.nlists: no milvus index setting"):
        _scratch(build={"index_type": "IVF_FLAT", "nlists": 4})
    with pytest.raises(ConfigError, match=r"indexes\.prod\.connect\.path: .*ends in \.db"):
        _existing({"path": tmp_path / "store"}, "docs")


def test_a_server_s_secrets_come_from_variables_that_are_set(
    lite: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's URL or token named by a variable that is not set: a ConfigError naming the
    key, before any connection."""
    monkeypatch.delenv("EVALRET_TEST_MILVUS_TOKEN", raising=False)
    monkeypatch.delenv("EVALRET_TEST_MILVUS_URL", raising=False)
    job = job_of(lite["docs"], lite["queries"], 10)
    for connect, key in (
        ({"url": "http://127.0.0.1:9", "token_env": "EVALRET_TEST_MILVUS_TOKEN"}, "token_env"),
        ({"url_env": "EVALRET_TEST_MILVUS_URL"}, "url_env"),
    ):
        retriever = _existing(lite, "docs", connect=connect)
        with pytest.raises(ConfigError, match=rf"indexes\.prod\.connect\.{key}: .* not set"):
            retriever.retrieve(job)


@pytest.mark.parametrize("module", ["pymilvus", "milvus_lite"])
def test_a_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ConfigError, match=r"pip install 'evalret\[milvus\]'"):
        _scratch()


# --- an approximate configuration --------------------------------------------------------------

IVF = (
    "{type: store, driver: milvus, mode: scratch, build: {index_type: IVF_FLAT, nlist: 16}, "
    "search: {nprobe: 1}}"
)


def _yaml(golden: Path, index: str, more: str = "") -> str:
    return (
        f"golden_set: {{path: {golden}}}\ncache: {{enabled: false}}\n"
        "model: {provider: python, callable: 'milvus_store_encoder:make'}\n"
        "metrics: [ndcg@10, recall@10]\n"
        "indexes:\n  hnsw: {enabled: false}\n  bm25: {enabled: false}\n"
        f"  hybrid: {{enabled: false}}\n  ivf: {index}\n{more}"
    )


@pytest.fixture
def encoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hashed bag-of-words encoder as a module ``milvus_store_encoder``, importable."""
    (tmp_path / "milvus_store_encoder.py").write_text(textwrap.dedent(HASH_ENCODER))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("milvus_store_encoder", None)


def test_ivf_flat_at_a_small_nprobe_is_measured_and_gated(tmp_path: Path, encoder: None) -> None:
    """IVF_FLAT (16 lists, 1 probed) on the demo: recall@10 against exact below 1 in the
    report's ann section, with the store's description in the params; ann_min_recall above that
    recall fails the gate (exit 1), below it passes."""
    ev = run_evaluation(parse_config(_yaml(DEMO, IVF), "c.yaml"))
    section = ev.report.ann["ivf"]
    recall = section.slices["all"].recall["recall@10"]
    assert recall is not None and 0 < recall < 1
    params = ev.report.indexes["ivf"].params
    assert params["type"] == "store.milvus" and params["search"] == {"nprobe": 1}
    assert params["store"]["index"]["index_type"] == "IVF_FLAT"
    assert params["store"]["index"]["params"] == {"nlist": 16}
    strict = tmp_path / "strict.yaml"
    strict.write_text(_yaml(DEMO, IVF, f"gate: {{ann_min_recall: {recall + 0.01:.4f}}}\n"))
    code, out = invoke("run", "-c", str(strict), "--out", str(tmp_path / "out"), "--no-progress")
    assert code == 1, out
    assert "ann_min_recall" in (tmp_path / "out" / "report.json").read_text()
    loose = tmp_path / "loose.yaml"
    loose.write_text(_yaml(DEMO, IVF, f"gate: {{ann_min_recall: {recall - 0.01:.4f}}}\n"))
    code, out = invoke("run", "-c", str(loose), "--out", str(tmp_path / "out2"), "--no-progress")
    assert code == 0, out


def test_ivf_flat_on_a_filtered_set_reports_selectivity_buckets(tmp_path: Path) -> None:
    """The filtered set (tenants of 0.5%, 5%, 30% and the rest): every bucket reported, and
    every document returned inside its query's filter."""
    filtered_set(tmp_path / "set", 1500, 10)
    config = parse_config(
        f"golden_set: {{path: {tmp_path / 'set'}}}\ncache: {{enabled: false}}\n"
        "metrics: [ndcg@10, recall@10]\n"
        "indexes:\n  hnsw: {enabled: false}\n  bm25: {enabled: false}\n"
        f"  hybrid: {{enabled: false}}\n  ivf: {IVF}\n",
        "c.yaml",
    )
    ev = run_evaluation(config, embedder=HashEmbedder())
    buckets = ev.report.ann["ivf"].selectivity
    assert buckets is not None
    assert [b.n_queries for b in buckets.values()] == [10, 10, 10, 10]
    assert all(b.recall["recall@10"] is not None for b in buckets.values())
    assert ev.report.ann["ivf"].slices["all"].recall["recall@10"] < 1
    assert "documents_outside_filter" not in ev.report.indexes["ivf"].params


def test_the_how_to_loads_an_export_into_milvus(
    tmp_path: Path, encoder: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/how-to/store-milvus.md's loading example, run on an export of the demo's vectors;
    then the page's existing-mode config searches the collection through its IVF_FLAT index
    (16 lists, as built: the nested parameters reached Milvus Lite), measured against exact."""
    store = (
        f"{{type: store, driver: milvus, connect: {{path: {tmp_path / 'stores' / 'milvus.db'}}}, "
        "collection: docs, id_field: id, vector_field: vector, search: {nprobe: 8}}"
    )
    config = tmp_path / "c.yaml"
    text = _yaml(DEMO, store, "gate: {ann_min_recall: 0.0}\n")
    config.write_text(text.replace("{enabled: false}", f"{{dir: {tmp_path / 'cache'}}}", 1))
    monkeypatch.chdir(tmp_path)
    code, out = invoke("embed", "-c", str(config), "--no-progress", "--export", "vectors.parquet")
    assert code == 0, out
    page = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "store-milvus.md").read_text()
    example = page.split("## Your own collection", 1)[1].split("```python\n", 1)[1]
    exec(compile(example.split("```", 1)[0], "store-milvus.md", "exec"), {})
    ev = run_evaluation(parse_config(config.read_text(), str(config)))
    recall = ev.report.ann["ivf"].slices["all"].recall["recall@10"]
    assert recall is not None and 0 < recall <= 1
    index = ev.report.indexes["ivf"].params["store"]["index"]
    assert index["index_type"] == "IVF_FLAT" and index["params"] == {"nlist": 16}
    assert ev.report.indexes["ivf"].params["store"]["rows"] == 338
