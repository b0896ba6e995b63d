"""pgvector on the store interface (engines/stores/pgvector.py), against a real Postgres (the
server fixture of test_pgvector.py), no mocks.

- ``type: pgvector`` gives the figures it gave before it moved onto the store interface: the
  rankings, the params (the fingerprint of existing baselines) and the cache notes of a few
  deterministic configurations are pinned (``PINNED``, recorded with the earlier code). Each is
  deterministic: a table searched without an index (an exact scan), or an HNSW index searched with
  ``ef_search`` past the corpus (every node of the graph visited).
- ``type: store, driver: pgvector`` passes the filter conformance test of test_stores.py, and
  runs in scratch and existing modes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import test_stores
from evalret.core.filters import MetadataColumns, eligibility, parse_filter
from evalret.core.ranking import id_rank
from evalret.data.config import Config, PgvectorIndexConfig, StoreIndexConfig
from evalret.engines.retrievers.base import SearchJob
from evalret.engines.retrievers.pgvector import PgvectorRetriever
from evalret.engines.retrievers.store import StoreRetriever
from evalret.errors import ConfigError
from test_filters import DOCS, FILTERS
from test_pgvector import ENV, dsn, server  # noqa: F401  (the fixtures, one server per module)

psycopg = pytest.importorskip("psycopg")


def _random(n: int, dim: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _job(
    docs: np.ndarray, queries: np.ndarray, depth: int, raw: list[Any] | None = None
) -> SearchJob:
    """A job over ``docs`` (ids d00000...); with ``raw``, the documents' metadata cycles through
    test_filters.DOCS and query i has filter ``raw[i]``."""
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
    )
    if raw is None:
        return job
    metadata = [DOCS[i % len(DOCS)] for i in range(len(docs))]
    filters = [None if f is None else parse_filter(f) for f in raw]
    return replace(
        job,
        eligibility=eligibility(filters, MetadataColumns(metadata)),
        filters=filters,
        doc_metadata=metadata,
    )


def _table(conn: Any, name: str, rows: list[tuple[Any, Any, Any]], dim: int, index: bool) -> None:
    """A committed table ``name`` (key text, emb vector(dim), attrs jsonb) holding ``rows``,
    with an HNSW index (inner product) when ``index``."""
    from pgvector.psycopg import register_vector

    register_vector(conn)
    conn.execute(f"CREATE TABLE {name} (key text, emb vector({dim}), attrs jsonb)")
    with conn.cursor() as cur:
        for key, vector, meta in rows:
            cur.execute(
                f"INSERT INTO {name} VALUES (%s, %s, %s)",
                (key, vector, None if meta is None else json.dumps(meta)),
            )
    if index:
        conn.execute(f"CREATE INDEX {name}_hnsw ON {name} USING hnsw (emb vector_ip_ops)")


def _cases() -> dict[str, tuple[dict[str, Any], SearchJob, list[tuple[Any, Any, Any]] | None]]:
    """Name -> (PgvectorIndexConfig settings, job, the rows of table ``pinned`` or None)."""
    exhaustive = {"m": 16, "ef_construction": 200, "ef_search": 1000}
    tied = _random(80, 8, 21)
    tied[:12] = tied[0]  # twelve identical documents straddle the cut at 10
    tied_queries = np.concatenate([tied[:1], _random(5, 8, 22)])
    scaled = _random(80, 8, 23) * np.linspace(0.5, 2.0, 80, dtype=np.float32)[:, None]
    filtered = _job(_random(60, 8, 24), _random(len(FILTERS) + 1, 8, 25), 10, [*FILTERS, None])
    cases: dict[str, tuple[dict[str, Any], SearchJob, list[tuple[Any, Any, Any]] | None]] = {
        "scratch_ip_ties": (exhaustive, _job(tied, tied_queries, 10), None),
        "scratch_cosine": (
            {**exhaustive, "metric": "cosine"},
            _job(scaled, _random(6, 8, 26), 10),
            None,
        ),
        "scratch_filtered": (exhaustive, filtered, None),
        "scratch_filtered_deep": (exhaustive, replace(filtered, depth=60), None),
    }
    # a table of chunks without an index (an exact scan): three rows per document, ties, rows with
    # a NULL vector, a NULL id and ids the corpus lacks
    docs = np.abs(_random(40, 8, 27))
    docs[5:30] = docs[5]  # 25 identical documents: more ties than depth + margin
    queries = np.concatenate([docs[5:6], _random(5, 8, 28)])
    job = _job(docs, queries, 5)
    rows: list[tuple[Any, Any, Any]] = [
        (d, v * s, None) for d, v in zip(job.doc_ids, docs, strict=True) for s in (0.25, 1.0, 0.5)
    ]
    order = np.random.default_rng(29).permutation(len(rows))
    rows = [rows[i] for i in order]
    rows += [("d00003", None, None), (None, None, None), (None, queries[1], None)]
    rows += [("ghost", queries[2], None), ("ghost2", queries[2] * 0.9, None)]
    cases["table_chunks"] = (
        {"table": "pinned", "id_column": "key", "vector_column": "emb"},
        job,
        rows,
    )
    # an indexed table read with filters (jsonb metadata), some keeping fewer than depth
    job = _job(_random(60, 8, 30), _random(7, 8, 31), 10)
    raw: list[Any] = [{"lang": "fr"}, None, {"year": {"$lt": 2021}}, {"open": True}]
    raw += [{"lang": {"$ne": "en"}}, {"missing": 1}, {"year": 2021.0}]
    job = _job(job.doc_vectors, job.query_vectors, 10, raw)
    meta = [
        (k, v, m) for k, v, m in zip(job.doc_ids, job.doc_vectors, job.doc_metadata, strict=True)
    ]
    meta += [("ghost", job.query_vectors[1], {"lang": "fr"})]
    cases["table_hnsw_filtered"] = (
        {"table": "public.pinned", "id_column": "key", "vector_column": "emb"}
        | {"metadata_column": "attrs", "ef_search": 1000},
        job,
        meta,
    )
    return cases


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def figures(url: str) -> dict[str, Any]:
    """Per case: the params and cache notes before and after the search, the rankings' ids (the
    first two queries in full) and digests of the ids and scores."""
    out: dict[str, Any] = {}
    for name, (settings, job, rows) in _cases().items():
        if rows is not None:
            with psycopg.connect(url, autocommit=True) as conn:
                indexed = name == "table_hnsw_filtered"
                _table(conn, "pinned", rows, job.doc_vectors.shape[1], indexed)
        try:
            config = PgvectorIndexConfig(type="pgvector", dsn_env=ENV, **settings)
            retriever = PgvectorRetriever("pg", config, Config())
            before = (retriever.params(), retriever.cache_notes())
            got = retriever.retrieve(job)
        finally:
            if rows is not None:
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("DROP TABLE pinned")
        out[name] = {
            "params_before": before[0],
            "notes_before": before[1],
            "params": retriever.params(),
            "notes": retriever.cache_notes(),
            "top": got.ids[:2].tolist(),
            "ids": _digest(got.ids.astype(np.int64)),
            "scores": _digest(got.scores.astype(np.float64)),
        }
    return out


# recorded with the earlier code (engines/retrievers/pgvector.py on its own, before the move)
PINNED: dict[str, Any] = {
    "scratch_ip_ties": {
        "params_before": {
            "type": "pgvector.hnsw",
            "metric": "inner_product",
            "ef_search": 1000,
            "mode": "scratch",
            "m": 16,
            "ef_construction": 200,
        },
        "notes_before": {"pgvector.pg": "not run"},
        "params": {
            "type": "pgvector.hnsw",
            "metric": "inner_product",
            "ef_search": 1000,
            "mode": "scratch",
            "m": 16,
            "ef_construction": 200,
        },
        "notes": {"pgvector.pg": "scratch table loaded, indexed and dropped"},
        "top": [[11, 10, 9, 8, 7, 6, 5, 4, 3, 2], [35, 32, 15, 27, 40, 31, 19, 21, 36, 79]],
        "ids": "8f07e87c218c74d6",
        "scores": "d14c2c2d0766738e",
    },
    "scratch_cosine": {
        "params_before": {
            "type": "pgvector.hnsw",
            "metric": "cosine",
            "ef_search": 1000,
            "mode": "scratch",
            "m": 16,
            "ef_construction": 200,
        },
        "notes_before": {"pgvector.pg": "not run"},
        "params": {
            "type": "pgvector.hnsw",
            "metric": "cosine",
            "ef_search": 1000,
            "mode": "scratch",
            "m": 16,
            "ef_construction": 200,
        },
        "notes": {"pgvector.pg": "scratch table loaded, indexed and dropped"},
        "top": [[27, 26, 68, 2, 59, 62, 12, 61, 69, 54], [73, 5, 50, 58, 38, 56, 17, 36, 31, 14]],
        "ids": "26a554fbc4194e3a",
        "scores": "10fa662c85c08527",
    },
    "scratch_filtered": {
        "params_before": {
            "type": "pgvector.hnsw",
            "metric": "inner_product",
            "ef_search": 1000,
            "mode": "scratch",
            "m": 16,
            "ef_construction": 200,
        },
        "notes_before": {"pgvector.pg": "not run"},
        "params": {
            "type": "pgvector.hnsw",
            "metric": "inner_product",
            "ef_search": 1000,
            "mode": "scratch",
            "m": 16,
            "ef_construction": 200,
        },
        "notes": {"pgvector.pg": "scratch table loaded, indexed and dropped"},
        "top": [[26, 56, 0, 30, 42, 20, 8, 24, 44, 50], [55, 39, 13, 4, 49, 3, 57, 46, 45, 47]],
        "ids": "a3f8408f77ecf81f",
        "scores": "2b2dc94ee76a68ce",
    },
    "scratch_filtered_deep": {
        "params_before": {
            "type": "pgvector.hnsw",
            "metric": "inner_product",
            "ef_search": 1000,
            "mode": "scratch",
            "m": 16,
            "ef_construction": 200,
        },
        "notes_before": {"pgvector.pg": "not run"},
        "params": {
            "type": "pgvector.hnsw",
            "metric": "inner_product",
            "ef_search": 1000,
            "mode": "scratch",
            "m": 16,
            "ef_construction": 200,
        },
        "notes": {"pgvector.pg": "scratch table loaded, indexed and dropped"},
        "top": [
            [
                26,
                56,
                0,
                30,
                42,
                20,
                8,
                24,
                44,
                50,
                14,
                36,
                32,
                38,
                54,
                18,
                12,
                2,
                6,
                48,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
            ],
            [
                55,
                39,
                13,
                4,
                49,
                3,
                57,
                46,
                45,
                47,
                59,
                1,
                34,
                37,
                33,
                17,
                21,
                58,
                31,
                52,
                9,
                7,
                29,
                53,
                51,
                25,
                23,
                15,
                11,
                27,
                5,
                10,
                43,
                22,
                28,
                16,
                35,
                40,
                41,
                19,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
                -1,
            ],
        ],
        "ids": "94dcb67385825c22",
        "scores": "269c9f945a26a0c0",
    },
    "table_chunks": {
        "params_before": {
            "type": "pgvector.hnsw",
            "metric": "inner_product",
            "ef_search": 40,
            "mode": "table",
            "table": "pinned",
            "id_column": "key",
            "vector_column": "emb",
        },
        "notes_before": {"pgvector.pg": "not run"},
        "params": {
            "type": "pgvector.hnsw",
            "metric": "inner_product",
            "ef_search": 40,
            "mode": "table",
            "table": "pinned",
            "id_column": "key",
            "vector_column": "emb",
            "rows_null_vector": 2,
            "rows_null_id": 2,
            "ranks_unknown_id": 9,
            "rows_folded": 8,
        },
        "notes": {
            "pgvector.pg": "table read read-only through no index (exact "
            "scan); 9 ranks held 2 ids unknown to the corpus, "
            "skipped; 3 ranks held a NULL id, skipped; 8 rows "
            "folded into their document's best row; 2 rows with "
            "a NULL vector, 2 a NULL id"
        },
        "top": [[29, 28, 27, 26, 25], [36, 4, 29, 28, 27]],
        "ids": "652bbadccbcc61dc",
        "scores": "fbf828b672731a82",
    },
    "table_hnsw_filtered": {
        "params_before": {
            "type": "pgvector.hnsw",
            "metric": "inner_product",
            "ef_search": 1000,
            "mode": "table",
            "table": "public.pinned",
            "id_column": "key",
            "vector_column": "emb",
        },
        "notes_before": {"pgvector.pg": "not run"},
        "params": {
            "type": "pgvector.hnsw",
            "metric": "inner_product",
            "ef_search": 1000,
            "mode": "table",
            "table": "public.pinned",
            "id_column": "key",
            "vector_column": "emb",
            "metadata_column": "attrs",
            "ranks_unknown_id": 3,
            "queries_short": 1,
        },
        "notes": {
            "pgvector.pg": "table read read-only through pinned_hnsw; 3 "
            "ranks held 1 ids unknown to the corpus, "
            "skipped"
        },
        "top": [[25, 43, 55, 1, 19, 49, 37, 13, 7, 31], [22, 9, 20, 6, 59, 54, 37, 19, 41, 33]],
        "ids": "5152aa8c4fd4c112",
        "scores": "c558b087a844a4e3",
    },
}


def test_type_pgvector_keeps_its_figures(dsn: str) -> None:  # noqa: F811
    """The rankings, params and notes of ``type: pgvector`` are those the earlier, separate
    implementation gave (recorded on it, PINNED)."""
    assert json.loads(json.dumps(figures(dsn))) == PINNED


# --- type: store, driver: pgvector -------------------------------------------------------------


def _store(tmp_path: Path, **more: Any) -> StoreRetriever:
    return test_stores.scratch("pgvector", tmp_path, **more)


@pytest.mark.usefixtures("dsn")
@pytest.mark.parametrize("build", [{}, {"build": {"m": 16, "ef_construction": 200}}])
def test_filter_conformance(build: dict[str, Any], tmp_path: Path, monkeypatch: Any) -> None:
    """test_stores' conformance test with the pgvector driver: each filter, as a WHERE on the
    scratch table's jsonb column, keeps exactly the documents core/filters.py keeps; flat (an
    exact scan) and through an HNSW index searched with ef_search past the corpus."""
    if build:
        more = {**build, "search": {"ef_search": 1000}}
        original = test_stores.scratch
        monkeypatch.setattr(test_stores, "scratch", lambda d, p: original(d, p, **more))
    test_stores.test_filter_conformance("pgvector", tmp_path)


@pytest.mark.usefixtures("dsn")
def test_a_flat_table_equals_exact_search(tmp_path: Path) -> None:
    """test_stores' flat test with the pgvector driver (no index built: an exact scan); the
    description says so."""
    test_stores.test_a_flat_collection_equals_exact_search("pgvector", tmp_path)
    retriever = _store(tmp_path)
    retriever.retrieve(test_stores.job_of(_random(30, 8, 1), _random(3, 8, 2), 5))
    store = retriever.params()["store"]
    assert store["index"] == "flat" and store["rows"] == 30
    assert (store["rows_null_vector"], store["rows_null_id"]) == (0, 0)


def test_scratch_hnsw_is_described_and_dropped(server: str, dsn: str, tmp_path: Path) -> None:  # noqa: F811
    """Scratch mode with ``build``: the HNSW index's method, operator class and options as
    Postgres stores them go into the params (not its random name); with ef_search past the
    corpus it ranks as exact search; l2 and cosine too; no table is left and no DSN shown."""
    from evalret.engines.faiss_index import build_exact, search
    from test_pgvector import SECRET, _tables

    docs, queries = _random(200, 16, 3), _random(12, 16, 4)
    job = test_stores.job_of(docs, queries, 10)
    exact = search(build_exact(docs), queries, 10, job.rank)
    for metric, opclass in (
        ("ip", "vector_ip_ops"),
        ("l2", "vector_l2_ops"),
        ("cosine", "vector_cosine_ops"),
    ):
        build = {"m": 8, "ef_construction": 64}
        retriever = _store(tmp_path, build=build, search={"ef_search": 400}, metric=metric)
        got = retriever.retrieve(job)
        assert got.ids.tolist() == exact.ids.tolist(), metric
        params = retriever.params()
        assert params["store"]["index"] == {
            "method": "hnsw",
            "opclass": opclass,
            "options": {"m": "8", "ef_construction": "64"},
        }
        assert params["type"] == "store.pgvector" and params["build"] == build
        assert params["search"] == {"ef_search": 400} and params["store"]["rows"] == 200
        text = json.dumps(params) + json.dumps(retriever.cache_notes())
        assert SECRET not in text and dsn not in text
        assert retriever.latency() is not None
    assert _tables(server) == []


@pytest.fixture()
def docs_table(server: str) -> Iterator[tuple[SearchJob, str]]:  # noqa: F811
    """A committed table ``docs`` (id text, vector, metadata jsonb) with an HNSW index, of a
    filtered job's documents and one row whose id the corpus lacks; the job and the DSN of a
    role that may only read it."""
    raw: list[Any] = [{"lang": "fr"}, None, {"year": {"$lt": 2021}}, {"missing": 1}, None]
    job = test_stores.job_of(_random(60, 8, 5), _random(5, 8, 6), 10, raw)
    rows = list(zip(job.doc_ids, job.doc_vectors, job.doc_metadata, strict=True))
    rows.append(("ghost", job.query_vectors[1], {}))
    with psycopg.connect(server, autocommit=True) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        conn.execute("CREATE TABLE docs (id text, vector vector(8), metadata jsonb)")
        for key, vector, meta in rows:
            conn.execute(
                "INSERT INTO docs VALUES (%s, %s, %s)", (key, vector, json.dumps(meta or {}))
            )
        conn.execute(
            "CREATE INDEX docs_hnsw ON docs USING hnsw (vector vector_ip_ops) WITH (m = 8)"
        )
        conn.execute("CREATE ROLE docs_reader LOGIN")
        conn.execute("GRANT SELECT ON docs TO docs_reader")
    from test_pgvector import SECRET

    yield job, server.replace(f"postgres:{SECRET}@", f"docs_reader:{SECRET}@", 1)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute("DROP TABLE docs")
        conn.execute("DROP ROLE docs_reader")


def test_existing_table_is_searched_read_only(
    docs_table: tuple[SearchJob, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Existing mode on a table a read-only role searches: filtered queries read the jsonb
    ``metadata`` column (the default), rank as filtered exact search, and count as the store
    interface counts (a filter keeping no document is not short); the id the corpus lacks is
    counted; the description names the index the planner uses, with its options."""
    from evalret.engines.filtered import filtered_exact

    job, reader = docs_table
    monkeypatch.setenv(ENV, reader)
    settings = StoreIndexConfig.model_validate(
        {"type": "store", "driver": "pgvector", "connect": {"dsn_env": ENV}, "collection": "docs"}
        | {"search": {"ef_search": 1000}}
    )
    retriever = StoreRetriever("prod", settings, Config())
    got = retriever.retrieve(job)
    assert job.eligibility is not None
    exact = filtered_exact(job.doc_vectors, job.query_vectors, 10, job.rank, job.eligibility)
    assert got.ids.tolist() == exact.ids.tolist()
    params = retriever.params()
    assert params["store"]["index"] == {
        "name": "docs_hnsw",
        "method": "hnsw",
        "opclass": "vector_ip_ops",
        "options": {"m": "8"},
    }
    assert params["store"]["rows"] == 61 and params["collection"] == "docs"
    assert params["ranks_unknown_id"] == 1  # the ghost, first for query 1
    assert "queries_short" not in params and "documents_outside_filter" not in params
    assert "metadata_field" not in params  # the default column, metadata


@pytest.mark.usefixtures("docs_table", "dsn")
def test_existing_mode_names_the_collection_and_connect_keys(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A missing table is a config error naming ``collection``; an unset variable one naming
    ``connect.dsn_env``; a setting pgvector lacks one naming it."""
    job = test_stores.job_of(_random(20, 8, 7), _random(2, 8, 8), 5)

    def existing(**more: Any) -> StoreRetriever:
        base = {"type": "store", "driver": "pgvector", "connect": {"dsn_env": ENV}}
        settings = StoreIndexConfig.model_validate(base | {"collection": "missing"} | more)
        return StoreRetriever("prod", settings, Config())

    with pytest.raises(ConfigError, match=r"indexes\.prod\.collection 'missing'"):
        existing().retrieve(job)
    monkeypatch.delenv(ENV)
    with pytest.raises(ConfigError, match=rf"indexes\.prod\.connect\.dsn_env: .*{ENV} is not set"):
        existing().retrieve(job)
    with pytest.raises(ConfigError, match=r"indexes\.prod\.search: 'nprobes' is no pgvector"):
        existing(search={"nprobes": 3})
    with pytest.raises(ConfigError, match=r"indexes\.store\.build\.ef_construction: at least"):
        _store(tmp_path, build={"m": 32, "ef_construction": 40})


def test_a_run_with_both_types_ranks_alike_and_shows_no_dsn(dsn: str, tmp_path: Path) -> None:  # noqa: F811
    """A run holding ``type: pgvector`` and ``type: store, driver: pgvector`` with the same
    settings (ef_search past the corpus): the same rankings, each measured against exact search,
    and the DSN nowhere in the report."""
    from evalret.pipeline.evaluate import run_evaluation
    from helpers import HashEmbedder, make_set

    graph = {"m": 16, "ef_construction": 200}
    config = Config.model_validate(
        {
            "golden_set": {"path": make_set(tmp_path / "set")},
            "indexes": {
                "old": {"type": "pgvector", "dsn_env": ENV, "ef_search": 1000, **graph},
                "new": {
                    "type": "store",
                    "driver": "pgvector",
                    "mode": "scratch",
                    "connect": {"dsn_env": ENV},
                    "build": graph,
                    "search": {"ef_search": 1000},
                },
            },
        }
    )
    ev = run_evaluation(config, embedder=HashEmbedder())
    np.testing.assert_array_equal(ev.rankings["old"].ids, ev.rankings["new"].ids)
    np.testing.assert_array_equal(ev.rankings["old"].scores, ev.rankings["new"].scores)
    assert ev.report.indexes["new"].params["store"]["rows"] == 60
    assert set(ev.report.ann) >= {"old", "new"}
    text = ev.report.model_dump_json()
    assert dsn not in text and "s3cr3t" not in text
