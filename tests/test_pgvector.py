"""The pgvector retriever against a real Postgres with the vector extension (pgserver), no mocks.

One server is started per module in a temporary directory, on a Unix socket. The recall claim uses
the packaged MiniLM on the demo golden set; plumbing tests use seeded random vectors.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import DEMO, REPO
from evalret.cli import app
from evalret.core.ranking import apply_tie_rule, id_rank, topk_overlap
from evalret.data.config import (
    CacheConfig,
    Config,
    GoldenSetConfig,
    PgvectorIndexConfig,
    load_config,
)
from evalret.data.config import (
    SentenceTransformersModelConfig as ModelConfig,
)
from evalret.data.goldenset import load_golden_set
from evalret.engines.embedders import open_embedder
from evalret.engines.faiss_index import build_exact, search
from evalret.engines.retrievers import SearchJob
from evalret.engines.retrievers import pgvector as pgv
from evalret.engines.retrievers.pgvector import (
    SCRATCH_PREFIX,
    PgvectorError,
    PgvectorRetriever,
    open_session,
    scratch_tables,
    sweep_scratch_tables,
)
from evalret.errors import ConfigError
from evalret.pipeline.evaluate import run_evaluation
from helpers import HashEmbedder, make_set, marks_its_users

psycopg = pytest.importorskip("psycopg")

ENV = "EVALRET_TEST_PG_DSN"
SECRET = "s3cr3t-Pa55word"


@pytest.fixture(scope="module")
@marks_its_users("postgres")
def server() -> Iterator[str]:
    """A Postgres with the vector extension, on a socket in a temporary directory; its DSN
    (with a password, which the server's trust authentication never asks for). The directory is
    not under pytest's tmp tree, which a concurrent pytest session may prune."""
    import pgserver  # here, not at the top: the fast lane collects this file without it

    pgdata = Path(tempfile.mkdtemp(prefix="evalret-pg-"))
    srv = pgserver.get_server(pgdata, cleanup_mode="stop")
    try:
        uri = srv.get_uri()
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield uri.replace("postgres:@", f"postgres:{SECRET}@", 1)
    finally:
        srv.cleanup()
        shutil.rmtree(pgdata, ignore_errors=True)


@pytest.fixture()
def dsn(server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The server's DSN in the environment variable the test configs name."""
    monkeypatch.setenv(ENV, server)
    return server


def _settings(**kw: Any) -> PgvectorIndexConfig:
    return PgvectorIndexConfig(type="pgvector", dsn_env=ENV, **kw)


def _retriever(**kw: Any) -> PgvectorRetriever:
    return PgvectorRetriever("pg", _settings(**kw), Config())


def _no_progress(_: str, __: int) -> Callable[[int], None]:
    return lambda _n: None


def _job(
    docs: np.ndarray,
    queries: np.ndarray,
    depth: int,
    doc_ids: list[str] | None = None,
    progress: Any = _no_progress,
) -> SearchJob:
    ids = doc_ids if doc_ids is not None else [f"d{i:05d}" for i in range(len(docs))]
    return SearchJob(
        doc_ids=ids,
        doc_texts=ids,
        query_texts=[f"q{i}" for i in range(len(queries))],
        doc_vectors=docs,
        query_vectors=queries,
        rank=id_rank(ids),
        depth=depth,
        earlier={},
        progress=progress,
        timed=lambda _label: contextlib.nullcontext(),
    )


def _random(n: int, dim: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _exact(job: SearchJob) -> Any:
    return search(build_exact(job.doc_vectors), job.query_vectors, job.depth, job.rank)


def _tables(server: str) -> list[str]:
    with psycopg.connect(server) as conn:
        return scratch_tables(conn)


@pytest.fixture(scope="module")
@marks_its_users("model")
def demo_job() -> SearchJob:
    """The demo golden set embedded by the packaged MiniLM (through the embedding cache)."""
    golden = load_golden_set(GoldenSetConfig(path=DEMO))
    embedder = open_embedder(ModelConfig(), CacheConfig()).embedder
    docs = embedder.embed(golden.doc_texts, "document")
    queries = embedder.embed(golden.query_texts, "query")
    job = _job(docs, queries, 100, list(golden.doc_ids))
    return job


# --- the config --------------------------------------------------------------------------------


def test_config_takes_pgvector_bounds_and_an_environment_variable_name() -> None:
    """m, ef_construction and ef_search have pgvector's bounds, and dsn_env must be a name."""
    ok = _settings(m=8, ef_construction=16, ef_search=1000, table="public.items")
    assert (ok.metric, ok.id_column, ok.vector_column) == ("inner_product", "id", "embedding")
    for bad in (
        {"m": 1},
        {"m": 101},
        {"ef_search": 1001},
        {"m": 16, "ef_construction": 31},
        {"table": "a.b.c"},
        {"id_column": ""},
        {"metric": "l2"},
    ):
        with pytest.raises(ValueError):
            _settings(**bad)
    with pytest.raises(ValueError) as caught:
        PgvectorIndexConfig(type="pgvector", dsn_env=f"postgresql://u:{SECRET}@h/db")
    assert "environment variable" in str(caught.value)


def test_config_error_never_echoes_a_dsn_written_into_dsn_env() -> None:
    """A DSN pasted where the variable's name belongs is refused without repeating it."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as caught:
        PgvectorIndexConfig(type="pgvector", dsn_env=f"postgresql://u:{SECRET}@h/db")
    problems = [(e["loc"], e["msg"]) for e in caught.value.errors()]
    assert SECRET not in json.dumps(problems, default=str)


# --- scratch mode: recall, ties, ef_search -------------------------------------------------------


@pytest.mark.usefixtures("dsn")
def test_demo_recall_against_exact_search_with_the_packaged_model(
    demo_job: SearchJob, server: str
) -> None:
    """On the demo with MiniLM vectors, pgvector's HNSW finds nearly all of exact's top 10."""
    exact = _exact(demo_job)
    got = _retriever().retrieve(demo_job)
    assert got.ids.shape == exact.ids.shape == (len(demo_job.query_vectors), 100)
    assert got.scores.dtype == np.float64 and got.ids.dtype == np.int64
    recall10 = float(topk_overlap(got.ids, exact.ids, 10).mean())
    recall100 = float(topk_overlap(got.ids, exact.ids, 100).mean())
    assert recall10 >= 0.97
    assert recall100 >= 0.9
    # the scores are pgvector's inner products: the same numbers as faiss's up to float32 sums
    same = got.ids[:, 0] == exact.ids[:, 0]
    np.testing.assert_allclose(got.scores[same, 0], exact.scores[same, 0], atol=1e-5)
    # already under the tie rule: re-sorting changes nothing
    again_ids, _ = apply_tie_rule(got.ids, got.scores, demo_job.rank)
    np.testing.assert_array_equal(again_ids, got.ids)
    assert _tables(server) == []


@pytest.mark.usefixtures("dsn")
def test_ties_at_the_cut_keep_the_documents_exact_search_keeps() -> None:
    """Thirty identical documents straddle a cut at 10: the ten kept are exact search's (the
    highest ids), though more than depth + margin rows tie."""
    docs = _random(60, 16, 1)
    docs[:30] = docs[0]
    rng = np.random.default_rng(2)
    order = rng.permutation(60)
    job = _job(docs[order], docs[:1], 10, [f"d{i:03d}" for i in order])
    got = _retriever(m=16, ef_construction=200, ef_search=200).retrieve(job)
    exact = _exact(job)
    np.testing.assert_array_equal(got.ids, exact.ids)
    kept = sorted(job.doc_ids[i] for i in got.ids[0])
    assert kept == [f"d{i:03d}" for i in range(20, 30)]


@pytest.mark.usefixtures("dsn")
def test_recall_rises_with_ef_search_on_a_hard_graph() -> None:
    """With m 4 and ef_construction 8 on random vectors, recall@10 against exact search never
    falls as ef_search grows, and ends well above where it starts."""
    job = _job(_random(4000, 64, 3), _random(200, 64, 4), 10)
    exact = _exact(job)
    recalls = []
    for ef in (10, 40, 160, 640):
        got = _retriever(m=4, ef_construction=8, ef_search=ef).retrieve(job)
        recalls.append(float(topk_overlap(got.ids, exact.ids, 10).mean()))
    assert recalls == sorted(recalls), recalls
    assert recalls[-1] > recalls[0] + 0.2, recalls
    assert recalls[0] < 0.9  # the setting is hard: the index, not a sequential scan, answers


# --- the scratch table is gone ------------------------------------------------------------------


@pytest.mark.usefixtures("dsn")
def test_scratch_table_exists_only_inside_its_transaction(server: str) -> None:
    """Inside the session the loaded table is there; another connection never sees it, and after
    the session it is gone."""
    settings = _settings()
    with open_session(settings, "pg", read_only=False) as conn:
        table = pgv._load_scratch(conn, _random(50, 8, 5), settings, lambda _n: None)
        inside = scratch_tables(conn)
        assert inside == [f"public.{table.as_string(conn).strip(chr(34))}"]
        assert inside[0].startswith(f"public.{SCRATCH_PREFIX}")
        assert conn.execute(
            psycopg.sql.SQL("SELECT count(*) FROM {}").format(table)
        ).fetchone() == (50,)
        assert _tables(server) == []
    assert _tables(server) == []


@pytest.mark.usefixtures("dsn")
@pytest.mark.parametrize("raised", [RuntimeError, KeyboardInterrupt])
def test_scratch_table_is_gone_after_an_error_or_ctrl_c(server: str, raised: type) -> None:
    """An exception (or Ctrl-C) while searching leaves no scratch table behind."""

    def progress(label: str, _total: int) -> Callable[[int], None]:
        def tick(_n: int) -> None:
            if label.startswith("Searching"):
                raise raised("stop")

        return tick

    job = _job(_random(300, 16, 7), _random(5, 16, 8), 10, progress=progress)
    with pytest.raises(raised):
        _retriever().retrieve(job)
    assert _tables(server) == []


CHILD = """
import os, sys, time
import numpy as np
from evalret.core.ranking import id_rank
from evalret.data.config import Config, PgvectorIndexConfig
from evalret.engines.retrievers.base import SearchJob
from evalret.engines.retrievers.pgvector import PgvectorRetriever
import contextlib

def progress(label, total):
    def tick(n):
        if label.startswith("Searching"):
            print("SEARCHING", flush=True)
            time.sleep(3600)
    return tick

docs = np.random.default_rng(0).standard_normal((500, 16)).astype(np.float32)
ids = [f"d{i}" for i in range(500)]
job = SearchJob(ids, ids, ["q"], docs, docs[:1], id_rank(ids), 10, {}, progress,
                lambda _l: contextlib.nullcontext())
settings = PgvectorIndexConfig(type="pgvector", dsn_env=sys.argv[1])
PgvectorRetriever("pg", settings, Config()).retrieve(job)
"""


def _evalret_backends(conn: Any, pid: int | None = None) -> list[tuple[int, int]]:
    """(backend pid, relation locks held) of the server sessions evalret opened."""
    return conn.execute(
        "SELECT a.pid, count(l.relation) FROM pg_stat_activity a"
        " LEFT JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'relation'"
        "  AND l.mode = 'AccessExclusiveLock'"
        " WHERE a.application_name = 'evalret' AND a.pid <> pg_backend_pid()"
        "  AND (%s::int IS NULL OR a.pid = %s::int) GROUP BY a.pid",
        (pid, pid),
    ).fetchall()


@pytest.mark.usefixtures("dsn")
def test_scratch_table_is_gone_after_the_process_is_killed(server: str) -> None:
    """SIGKILL mid-search (no finally runs): the server aborts the never-committed transaction
    as the connection drops, so no scratch table is left, and the sweep finds nothing."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, ENV], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "SEARCHING"
        with psycopg.connect(server, autocommit=True) as conn:
            live = _evalret_backends(conn)
            assert len(live) == 1 and live[0][1] >= 1  # the child holds its scratch table
            backend = live[0][0]
            os.kill(child.pid, signal.SIGKILL)
            assert child.wait() == -signal.SIGKILL
            for _ in range(600):  # the server notices the closed socket and ends the session
                if not _evalret_backends(conn, backend):
                    break
                time.sleep(0.05)
            assert _evalret_backends(conn, backend) == []
            assert scratch_tables(conn) == []
            assert sweep_scratch_tables(conn) == []
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_sweep_drops_committed_leftovers_with_the_prefix(server: str) -> None:
    """The cleanup step drops committed tables named with the scratch prefix, and only those."""
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {SCRATCH_PREFIX}old_1 (i int)")
        conn.execute("CREATE TABLE keep_me (i int)")
        assert sweep_scratch_tables(conn) == [f"public.{SCRATCH_PREFIX}old_1"]
        assert scratch_tables(conn) == []
        assert conn.execute("SELECT to_regclass('keep_me') IS NOT NULL").fetchone() == (True,)
        conn.execute("DROP TABLE keep_me")


# --- the DSN never shows ------------------------------------------------------------------------


def test_dsn_never_appears_in_the_report(
    dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run with a pgvector index in its config writes its params, notes and recall against
    exact search to report.json, without the DSN."""
    config = Config.model_validate(
        {
            "golden_set": {"path": make_set(tmp_path / "set")},
            "indexes": {"pg": {"type": "pgvector", "dsn_env": ENV}},
        }
    )
    ev = run_evaluation(config, embedder=HashEmbedder())
    text = ev.report.model_dump_json()
    assert dsn not in text and SECRET not in text
    pg = ev.report.indexes["pg"]
    assert pg.params["type"] == "pgvector.hnsw" and pg.params["mode"] == "scratch"
    assert "dsn" not in json.dumps(pg.params).lower()
    assert ev.report.embedding.cache is not None
    assert (ev.report.embedding.cache.model_extra or {})["pgvector.pg"].startswith("scratch table")
    assert _tables(dsn) == []
    ann = ev.report.ann["pg"]  # measured against exact search like hnsw
    assert ann.index == "pg" and ann.reference == "exact"
    overlap = topk_overlap(ev.rankings["pg"].ids, ev.rankings["exact"].ids, 10)
    assert ann.slices["all"].recall["recall@10"] == pytest.approx(float(overlap.mean()))


def test_dsn_never_appears_in_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unreachable server is an error (exit 3) that shows neither the DSN nor its password."""
    bad = f"postgresql://postgres:{SECRET}@/postgres?host=/nonexistent-dir"
    monkeypatch.setenv(ENV, bad)
    with pytest.raises(PgvectorError) as caught:
        _retriever().retrieve(_job(_random(20, 8, 9), _random(2, 8, 10), 5))
    message = str(caught.value)
    assert bad not in message and SECRET not in message
    assert f"${ENV}" in message
    assert caught.value.exit_code == 3


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (f"host=/nonexistent-dir password={SECRET} user", "libpq cannot parse it"),
        (f"postgresql://u:{SECRET}@localhost:99999/db", "out of range (1..65535)"),
        (f"host=localhost port=0 password={SECRET}", "out of range (1..65535)"),
        (f"postgresql://u:{SECRET}@localhost:54x2/db", "not a number"),
        (f"host=a,b port=5432,5433,5434 password={SECRET}", "3 ports for 2 hosts"),
    ],
)
def test_a_malformed_dsn_is_a_config_error_at_load(
    bad: str, said: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A DSN libpq would refuse (unparsable, a port out of range or not a number) is a config
    error (exit 2) when the config is loaded, at dsn_env's line, before anything is embedded;
    and when the index runs (a config made before the variable was set). Neither the DSN nor
    its password is shown. It was exit 3 after the embedding (a port out of range only when
    connecting)."""
    config = tmp_path / "pg.yaml"
    config.write_text(f"indexes:\n  pg:\n    type: pgvector\n    dsn_env: {ENV}\n")
    monkeypatch.setenv(ENV, bad)
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    message = str(caught.value)
    assert f"{config}:4: indexes.pg.dsn_env: the environment variable {ENV}" in message
    assert said in message and SECRET not in message and bad not in message
    assert caught.value.exit_code == 2
    result = CliRunner().invoke(app, ["run", "-c", str(config), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert "indexes.pg.dsn_env" in result.output and SECRET not in result.output
    monkeypatch.delenv(ENV)
    retriever = _retriever()  # valid while the variable is unset
    monkeypatch.setenv(ENV, bad)
    with pytest.raises(ConfigError) as caught:
        retriever.retrieve(_job(_random(20, 8, 9), _random(2, 8, 10), 5))
    assert said in str(caught.value) and SECRET not in str(caught.value)


def test_unset_variable_and_missing_library_are_clear_config_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No DSN in the environment, or no psycopg installed: exit 2, naming the variable or the
    extra to install."""
    job = _job(_random(20, 8, 11), _random(2, 8, 12), 5)
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(ConfigError, match=f"indexes.pg.dsn_env: the environment variable {ENV}"):
        _retriever().retrieve(job)
    monkeypatch.setenv(ENV, "host=/nowhere")
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ConfigError, match=r"pip install 'evalret\[pgvector\]'"):
        _retriever().retrieve(job)


def test_params_hold_settings_only() -> None:
    """params() describes the index without the DSN or its variable, and never connects."""
    scratch = _retriever(m=8, ef_construction=32, ef_search=64).params()
    assert scratch == {
        "type": "pgvector.hnsw",
        "metric": "inner_product",
        "ef_search": 64,
        "mode": "scratch",
        "m": 8,
        "ef_construction": 32,
    }
    table = _retriever(table="public.items", id_column="key", vector_column="emb").params()
    assert table["mode"] == "table" and table["table"] == "public.items"
    assert "m" not in table and ENV not in json.dumps(table)


# --- table mode ---------------------------------------------------------------------------------


@pytest.fixture()
def items_table(server: str, demo_job: SearchJob) -> Iterator[str]:
    """A committed table of the demo's document vectors under text keys, three extra rows whose
    ids the corpus does not know (copies of the first three query vectors), an HNSW index, and a
    role that may only read it; yields that role's DSN."""
    with psycopg.connect(server, autocommit=True) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        dim = demo_job.doc_vectors.shape[1]
        conn.execute(f"CREATE TABLE items (key text PRIMARY KEY, emb vector({dim}))")
        with (
            conn.cursor() as cur,
            cur.copy("COPY items (key, emb) FROM STDIN (FORMAT BINARY)") as cp,
        ):
            cp.set_types(["text", "vector"])
            for key, vector in zip(demo_job.doc_ids, demo_job.doc_vectors, strict=True):
                cp.write_row((key, vector))
            for i in range(3):
                cp.write_row((f"not-in-corpus-{i}", demo_job.query_vectors[i]))
        conn.execute("CREATE INDEX items_emb_hnsw ON items USING hnsw (emb vector_ip_ops)")
        conn.execute("CREATE ROLE reader LOGIN")
        conn.execute("GRANT SELECT ON items TO reader")
    yield server.replace(f"postgres:{SECRET}@", f"reader:{SECRET}@", 1)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute("DROP TABLE items")
        conn.execute("DROP ROLE reader")


def test_table_mode_reads_an_existing_table_read_only(
    items_table: str, demo_job: SearchJob, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A role that may only SELECT searches the table through its HNSW index; ids unknown to the
    corpus are skipped and counted, and the rest ranks like exact search."""
    monkeypatch.setenv(ENV, items_table)
    retriever = _retriever(table="public.items", id_column="key", vector_column="emb")
    job = replace(demo_job, depth=10)
    got = retriever.retrieve(job)
    exact = _exact(job)
    assert float(topk_overlap(got.ids, exact.ids, 10).mean()) >= 0.97
    assert retriever.notes["index"] == "items_emb_hnsw"
    # an unknown row holds a rank when it beats the 10th known document (exactly computed)
    extra = job.query_vectors @ job.query_vectors[:3].T
    held = extra.astype(np.float64) > exact.scores[:, 9:10]
    assert held[np.arange(3), np.arange(3)].all()  # each copy ranks for its own query
    assert retriever.notes["unknown_ranks"] == int(held.sum())
    assert retriever.notes["unknown_ids"] == 3
    line = retriever.cache_notes()["pgvector.pg"]
    assert f"{int(held.sum())} ranks held 3 ids unknown to the corpus, skipped" in line
    with psycopg.connect(server) as conn:
        assert conn.execute("SELECT count(*) FROM items").fetchone() == (len(demo_job.doc_ids) + 3,)
    with (
        open_session(retriever.settings, "pg", read_only=True) as conn,
        pytest.raises(psycopg.errors.ReadOnlySqlTransaction),
    ):
        conn.execute("CREATE TEMP TABLE t (i int)")


@pytest.mark.usefixtures("items_table", "dsn")
def test_table_mode_names_a_missing_table_or_column_as_config(demo_job: SearchJob) -> None:
    """A table or column that does not exist is a config error naming the table, without the DSN."""
    for kw in ({"table": "public.missing"}, {"table": "items", "id_column": "nope"}):
        with pytest.raises(ConfigError) as caught:
            _retriever(**kw).retrieve(demo_job)
        assert "indexes.pg.table" in str(caught.value)
        assert SECRET not in str(caught.value)


def _write_table(conn: Any, name: str, rows: list[tuple[str | None, Any]], dim: int) -> None:
    """A committed table ``name`` (key text, emb vector(dim)) holding ``rows``, with no index."""
    conn.execute(f"CREATE TABLE {name} (key text, emb vector({dim}))")
    with conn.cursor() as cur, cur.copy(f"COPY {name} (key, emb) FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types(["text", "vector"])
        for row in rows:
            cp.write_row(row)


def test_table_of_chunks_ranks_each_document_once_and_says_what_it_skipped(
    dsn: str, tmp_path: Path
) -> None:
    """A table with three rows per document (the vector, then half and a quarter of it: never
    better, the vectors being non-negative) ranks exactly as the same table with one row per
    document: each document once, at its best row, the folded rows counted. Rows with a NULL
    vector, a NULL id or an id the corpus lacks are counted in both, and every count is shown
    on the terminal and in report.md."""
    import io

    from rich.console import Console

    from evalret.report.markdown import render_markdown
    from evalret.report.terminal_brief import brief_run

    golden = make_set(tmp_path / "set")
    config = {
        "golden_set": {"path": golden},
        "metrics": ["recall@10", "ndcg@10"],
        "indexes": {"hnsw": {"enabled": False}},
    }
    loaded = load_golden_set(GoldenSetConfig(path=golden))
    doc_ids = list(loaded.doc_ids)
    docs = HashEmbedder().embed(loaded.doc_texts, "document")
    queries = HashEmbedder().embed(loaded.query_texts, "query")
    extra: list[tuple[str | None, Any]] = [
        ("d3", None),
        (None, None),
        (None, queries[0]),  # ranks first for query 0: a NULL id, skipped
        ("ghost", queries[1]),  # ranks first for query 1: unknown to the corpus, skipped
    ]
    single = [*zip(doc_ids, docs, strict=True), *extra]
    chunks = [(d, v * s) for d, v in zip(doc_ids, docs, strict=True) for s in (0.25, 1.0, 0.5)]
    chunks = [*np.random.default_rng(5).permutation(np.array(chunks, dtype=object)), *extra]
    with psycopg.connect(dsn, autocommit=True) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        _write_table(conn, "single", single, HashEmbedder.dim)
        _write_table(conn, "chunks", [tuple(r) for r in chunks], HashEmbedder.dim)
    try:
        table = {"type": "pgvector", "dsn_env": ENV, "id_column": "key", "vector_column": "emb"}
        config["indexes"] |= {n: {**table, "table": n} for n in ("single", "chunks")}
        ev = run_evaluation(Config.model_validate(config), embedder=HashEmbedder())
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DROP TABLE single, chunks")
    one, many = ev.report.indexes["single"], ev.report.indexes["chunks"]
    np.testing.assert_array_equal(ev.rankings["chunks"].ids, ev.rankings["single"].ids)
    assert all(len(set(row)) == len(row) for row in many.top_ids)
    assert many.per_query == one.per_query and many.top_ids == one.top_ids
    assert "rows_folded" not in one.params
    folded = many.params["rows_folded"]
    assert folded >= len(ev.report.query_ids)  # each query meets a copy before its 10th document
    for p in (one.params, many.params):
        assert (p["rows_null_vector"], p["rows_null_id"]) == (2, 2)
        assert p["ranks_unknown_id"] >= 2  # the NULL id and "ghost" beat every document
    assert many.params["ranks_unknown_id"] == one.params["ranks_unknown_id"]
    shown = [
        f"chunks: {folded} rows folded into a better row of the same document",
        "chunks: 2 table rows with a NULL vector (never searched)",
        "single: 2 table rows with a NULL id (skipped when retrieved)",
        f"single: {one.params['ranks_unknown_id']} ranks held by rows whose id is NULL or not in",
    ]
    console = Console(file=io.StringIO(), width=300)
    console.print(brief_run(ev.report, []))
    terminal = console.file.getvalue()  # type: ignore[attr-defined]
    markdown = render_markdown(ev.report).replace("\\", "")  # markdown escapes the brackets
    for line in shown:
        assert line in terminal and line in markdown, line


# --- filtered queries (#27) --------------------------------------------------------------------


def _filtered_job(docs: np.ndarray, queries: np.ndarray, depth: int, raw: list[Any]) -> SearchJob:
    """A job over ``docs`` whose metadata cycles through test_filters.DOCS, each query with the
    filter of ``raw`` at its position (None: none)."""
    from evalret.core.filters import MetadataColumns, eligibility, parse_filter
    from test_filters import DOCS

    metadata = [DOCS[i % len(DOCS)] for i in range(len(docs))]
    filters = [None if f is None else parse_filter(f) for f in raw]
    job = _job(docs, queries, depth)
    return replace(
        job,
        eligibility=eligibility(filters, MetadataColumns(metadata)),
        filters=filters,
        doc_metadata=metadata,
    )


@pytest.mark.usefixtures("dsn")
def test_filtered_scratch_search_keeps_to_core_semantics() -> None:
    """Each filter of test_filters, compiled to a WHERE on the scratch table's jsonb column,
    keeps exactly the documents core/filters.py keeps (ef_search past the corpus, depth the
    whole corpus: every eligible document comes back), and ranks them as filtered exact search."""
    from evalret.engines.filtered import filtered_exact
    from test_filters import FILTERS

    docs = _random(60, 8, 3)
    raw: list[Any] = [*FILTERS, None]
    queries = _random(len(raw), 8, 4)
    job = _filtered_job(docs, queries, 60, raw)
    retriever = _retriever(ef_search=1000, m=16, ef_construction=200)
    got = retriever.retrieve(job)
    assert job.eligibility is not None
    for qi in range(len(raw)):
        mask = job.eligibility.mask(qi)
        expected = set(range(60)) if mask is None else set(np.flatnonzero(mask).tolist())
        assert {int(d) for d in got.ids[qi] if d >= 0} == expected, raw[qi]
    exact = filtered_exact(docs, queries, 10, job.rank, job.eligibility)
    assert got.ids[:, :10].tolist() == exact.ids.tolist()


def test_filtered_table_search_reads_the_metadata_column(server: str, dsn: str) -> None:
    """Table mode: the filter becomes a WHERE on the table's ``metadata_column`` (jsonb); only
    rows whose metadata the filter keeps come back, ranked as filtered exact search, and the
    params name the column."""
    from pgvector.psycopg import register_vector

    from evalret.engines.filtered import filtered_exact

    docs, queries = _random(60, 8, 5), _random(4, 8, 6)
    job = _filtered_job(docs, queries, 10, [{"lang": "fr"}, None, {"year": {"$lt": 2021}}, None])
    with psycopg.connect(server, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("CREATE TABLE tagged (key text, emb vector(8), attrs jsonb)")
        with conn.cursor() as cur:
            for key, vector, meta in zip(job.doc_ids, docs, job.doc_metadata, strict=True):
                cur.execute(
                    "INSERT INTO tagged VALUES (%s, %s, %s)", (key, vector, json.dumps(meta or {}))
                )
        conn.execute("CREATE INDEX ON tagged USING hnsw (emb vector_ip_ops)")
    try:
        retriever = _retriever(
            table="public.tagged", id_column="key", vector_column="emb", metadata_column="attrs",
            ef_search=1000,
        )  # fmt: skip
        got = retriever.retrieve(job)
        exact = filtered_exact(docs, queries, 10, job.rank, job.eligibility)
        assert got.ids.tolist() == exact.ids.tolist()
        assert retriever.params()["metadata_column"] == "attrs"
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute("DROP TABLE tagged")
